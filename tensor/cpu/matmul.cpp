// matmul.cpp — the backend's matmul entry: turns tensors into GEMM operands.
//
// a: [batch..., M, K] and b: [batch..., K, N] arrive expanded to the same batch
// dims (possibly with stride 0 where a batch dim was broadcast), and out is
// contiguous [batch..., M, N]. We list each batch's element offset and let
// gemm() read the matrices through their strides. 16-bit operands go to
// gemm_16bit() and give a float32 result.
//
// Shapes: a [batch..., M, K], b [batch..., K, N], out [batch..., M, N].
#include <algorithm>
#include <string>
#include <type_traits>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/gemm_16bit.h"
#include "tensor/error.h"

namespace nc {
namespace cpu {

template <typename T>
static void matmul_typed(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate, const Tensor& bias) {
    int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    MatrixOperand<T> A{static_cast<const T*>(a.raw_data()), matrix_batch_offsets(a), a.strides()[a.dim() - 2],
                       a.strides()[a.dim() - 1]};
    MatrixOperand<T> B{static_cast<const T*>(b.raw_data()), matrix_batch_offsets(b), b.strides()[b.dim() - 2],
                       b.strides()[b.dim() - 1]};
    const T* bias_data = bias.defined() ? static_cast<const T*>(bias.raw_data()) : nullptr;
    if constexpr (std::is_same_v<T, float>)
        gemm(M, N, K, A, B, static_cast<T*>(out.raw_data()), matrix_batch_offsets(out), N, best_simd_isa(), accumulate,
             bias_data);
    else
        gemm(M, N, K, A, B, static_cast<T*>(out.raw_data()), matrix_batch_offsets(out), N, accumulate, bias_data);
}

// bfloat16 or float16 operands, a float32 result (gemm_16bit.h). A bias is
// written into every row first and the product added to it.
static void matmul_16bit(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate, const Tensor& bias) {
    int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    if (bias.defined()) {
        float* rows = static_cast<float*>(out.raw_data());
        const float* values = static_cast<const float*>(bias.raw_data());
        for (int64_t r = 0; r < out.numel() / N; ++r) std::copy_n(values, N, rows + r * N);
        accumulate = true;
    }
    MatrixOperand<uint16_t> A{static_cast<const uint16_t*>(a.raw_data()), matrix_batch_offsets(a),
                              a.strides()[a.dim() - 2], a.strides()[a.dim() - 1]};
    MatrixOperand<uint16_t> B{static_cast<const uint16_t*>(b.raw_data()), matrix_batch_offsets(b),
                              b.strides()[b.dim() - 2], b.strides()[b.dim() - 1]};
    // A one-row product ignores the path: asking would run the bfloat16 probe for nothing.
    Gemm16Path path = takes_gemv_16bit(M, B) ? Gemm16Path::Widen : best_gemm16_path(a.dtype());
    gemm_16bit(M, N, K, a.dtype(), A, B, static_cast<float*>(out.raw_data()), matrix_batch_offsets(out), N, path,
               accumulate);
}

static void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate, const Tensor& bias) {
    if (out.numel() == 0) return;
    if (bias.defined() && (accumulate || bias.dim() != 1 || bias.size(0) != out.size(-1) || !bias.is_contiguous() ||
                           bias.dtype() != out.dtype()))
        throw Error("matmul: a bias must be contiguous [" + std::to_string(out.size(-1)) +
                    "] of the output's dtype, and not given with accumulate");
    if (is_16bit_float(a.dtype())) matmul_16bit(a, b, out, accumulate, bias);
    else if (a.dtype() == kFloat32) matmul_typed<float>(a, b, out, accumulate, bias);
    else matmul_typed<double>(a, b, out, accumulate, bias);
}

// The table entry of this file (tensor/cpu/cpu_backend.cpp).
void add_matmul(Backend& table) {
    table.matmul = matmul;
}

}  // namespace cpu
}  // namespace nc
