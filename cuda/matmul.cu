// matmul.cu — matrix products through cuBLAS.
//
// cuBLAS is column-major (Fortran's convention): a matrix with leading
// dimension ld has element (i, j) at i + j * ld. Our matrices are row-major
// views with any strides. The trick every row-major caller uses: memory
// holding a row-major X is, read column-major, X^T. So instead of C = A B we
// ask cuBLAS for C^T = B^T A^T, which it writes column-major — and that is
// exactly C row-major:
//
//   row-major B (col stride 1, row stride ldb) read column-major = B^T  -> op N, ld = ldb
//   transposed B (row stride 1, col stride ldb) read column-major = B   -> op T, ld = ldb
//
// (the same for A). Operands with neither stride 1 are copied contiguous
// first. Batches whose matrices are evenly spaced (the usual case, also
// broadcast with stride 0) go to one strided-batched call; others loop.
//
// bfloat16/float16 operands give a float32 out (cublasGemmEx, float32 sums).
//
// Shapes: a [batch..., M, K], b [batch..., K, N], out [batch..., M, N].
#include <climits>
#include <vector>

#include "cuda/cublas_library.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace cuda {

namespace {

// How cuBLAS should read one operand: op and leading dimension, for the
// column-major matrix of `rows_cm` rows that the memory holds.
struct OperandLayout {
    cublasOperation_t op;
    int64_t ld;
    bool ok;  // false: neither stride is 1 (or ld too small): copy first
};

// `t` is [batch..., R, C] row-major-ish; we need it as the column-major
// (C x R) matrix X^T, i.e. op N when the column stride is 1.
OperandLayout layout_of(const Tensor& t) {
    int64_t R = t.size(-2), C = t.size(-1);
    int64_t rs = t.strides()[t.dim() - 2], cs = t.strides()[t.dim() - 1];
    if (cs == 1 && rs >= std::max<int64_t>(1, C)) return {CUBLAS_OP_N, std::max<int64_t>(rs, 1), true};
    if (rs == 1 && cs >= std::max<int64_t>(1, R)) return {CUBLAS_OP_T, std::max<int64_t>(cs, 1), true};
    if (R == 1 && cs == 1) return {CUBLAS_OP_N, std::max<int64_t>(C, 1), true};  // one row: any row stride works
    if (C == 1 && rs == 1) return {CUBLAS_OP_T, std::max<int64_t>(R, 1), true};  // one column
    return {CUBLAS_OP_N, 0, false};
}

// The offsets as (first, step) when they are evenly spaced.
bool evenly_spaced(const std::vector<int64_t>& offsets, int64_t& step) {
    step = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
    for (size_t i = 1; i < offsets.size(); ++i)
        if (offsets[i] - offsets[i - 1] != step) return false;
    return true;
}

// 16-bit operands: cuBLAS's mixed-precision GEMM, A and B in bfloat16 or
// float16, C in float32, products summed in float32 (CUBLAS_COMPUTE_32F:
// tensor cores on Turing and later, float32 sums as on the CPU).
cudaDataType_t cuda_type_16bit(DType dtype) { return dtype == kBFloat16 ? CUDA_R_16BF : CUDA_R_16F; }

void gemm_call_16bit(DType dtype, cublasOperation_t op_b, cublasOperation_t op_a, int64_t N, int64_t M, int64_t K,
                     const void* b, int64_t ldb, const void* a, int64_t lda, float* c, int64_t ldc, bool accumulate) {
    const float one = 1, beta = accumulate ? 1.0f : 0.0f;
    check_cublas(cublas_library().gemm_ex(cublas(), op_b, op_a, (int)N, (int)M, (int)K, &one, b,
                                          cuda_type_16bit(dtype), (int)ldb, a, cuda_type_16bit(dtype), (int)lda,
                                          &beta, c, CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
}

// beta = 0 overwrites C; beta = 1 adds to it (matmul's `accumulate`).
void gemm_call(bool f32, cublasOperation_t op_b, cublasOperation_t op_a, int64_t N, int64_t M, int64_t K,
               const void* b, int64_t ldb, const void* a, int64_t lda, void* c, int64_t ldc, bool accumulate) {
    if (f32) {
        const float one = 1, beta = accumulate ? 1.0f : 0.0f;
        check_cublas(cublas_library().sgemm(cublas(), op_b, op_a, (int)N, (int)M, (int)K, &one, (const float*)b,
                                            (int)ldb, (const float*)a, (int)lda, &beta, (float*)c, (int)ldc),
                     "cublasSgemm");
    } else {
        const double one = 1, beta = accumulate ? 1.0 : 0.0;
        check_cublas(cublas_library().dgemm(cublas(), op_b, op_a, (int)N, (int)M, (int)K, &one, (const double*)b,
                                            (int)ldb, (const double*)a, (int)lda, &beta, (double*)c, (int)ldc),
                     "cublasDgemm");
    }
}

}  // namespace

// cuBLAS takes its sizes, leading dimensions and batch count as int: a
// larger value would be cut to 32 bits and multiply the wrong memory.
static void check_fits_int(int64_t value, const char* what) {
    if (value > INT_MAX)
        throw Error(std::string("matmul (CUDA): ") + what + " " + std::to_string(value) +
                    " exceeds cuBLAS's 32-bit int (split the product)");
}

static void matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out, bool accumulate, const Tensor& bias) {
    if (out.numel() == 0) return;
    int64_t M = a_in.size(-2), K = a_in.size(-1), N = b_in.size(-1);
    if (bias.defined()) {
        // A linear layer's bias: copied into every row of out (the broadcast
        // copy kernel, through a stride-0 view), and the product added to it
        // (beta = 1), as the CPU's GEMM does block by block.
        if (accumulate || bias.dim() != 1 || bias.size(0) != N || bias.dtype() != out.dtype())
            throw Error("matmul (CUDA): a bias must be [" + std::to_string(N) +
                        "] of the output's dtype, and not given with accumulate");
        backend_for(out.device()).unary(UnaryOp::Copy, raw::expand(bias, out.shape()), out);
        accumulate = true;
    }
    check_fits_int(M, "M");
    check_fits_int(N, "N");
    check_fits_int(K, "K");
    if (K == 0) {  // an empty sum
        if (!accumulate) fill(out, 0.0);
        return;
    }
    OperandLayout la = layout_of(a_in), lb = layout_of(b_in);
    Tensor a = la.ok ? a_in : raw::contiguous(a_in);
    Tensor b = lb.ok ? b_in : raw::contiguous(b_in);
    if (!la.ok) la = layout_of(a);
    if (!lb.ok) lb = layout_of(b);
    bool f32 = out.dtype() == kFloat32, half = is_16bit_float(a.dtype());
    size_t elem = f32 ? 4 : 8, elem_ab = dtype_size(a.dtype());  // A and B: 2 bytes when 16-bit
    std::vector<int64_t> oa = matrix_batch_offsets(a), ob = matrix_batch_offsets(b), oc = matrix_batch_offsets(out);
    check_fits_int(la.ld, "the leading dimension of A");
    check_fits_int(lb.ld, "the leading dimension of B");
    check_fits_int((int64_t)oc.size(), "the batch count");
    const char* pa = static_cast<const char*>(a.raw_data());
    const char* pb = static_cast<const char*>(b.raw_data());
    char* pc = static_cast<char*>(out.raw_data());
    int64_t step_a, step_b, step_c;
    if (oc.size() > 1 && evenly_spaced(oa, step_a) && evenly_spaced(ob, step_b) && evenly_spaced(oc, step_c)) {
        int count = (int)oc.size();
        if (half) {
            const float one = 1, beta = accumulate ? 1.0f : 0.0f;
            check_cublas(cublas_library().gemm_strided_batched_ex(
                             cublas(), lb.op, la.op, (int)N, (int)M, (int)K, &one, pb + ob[0] * elem_ab,
                             cuda_type_16bit(a.dtype()), (int)lb.ld, step_b, pa + oa[0] * elem_ab,
                             cuda_type_16bit(a.dtype()), (int)la.ld, step_a, &beta, pc + oc[0] * elem, CUDA_R_32F,
                             (int)N, step_c, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         "cublasGemmStridedBatchedEx");
        } else if (f32) {
            const float one = 1, beta = accumulate ? 1.0f : 0.0f;
            check_cublas(cublas_library().sgemm_strided_batched(
                             cublas(), lb.op, la.op, (int)N, (int)M, (int)K, &one, (const float*)(pb + ob[0] * elem),
                             (int)lb.ld, step_b, (const float*)(pa + oa[0] * elem), (int)la.ld, step_a, &beta,
                             (float*)(pc + oc[0] * elem), (int)N, step_c, count),
                         "cublasSgemmStridedBatched");
        } else {
            const double one = 1, beta = accumulate ? 1.0 : 0.0;
            check_cublas(cublas_library().dgemm_strided_batched(
                             cublas(), lb.op, la.op, (int)N, (int)M, (int)K, &one, (const double*)(pb + ob[0] * elem),
                             (int)lb.ld, step_b, (const double*)(pa + oa[0] * elem), (int)la.ld, step_a, &beta,
                             (double*)(pc + oc[0] * elem), (int)N, step_c, count),
                         "cublasDgemmStridedBatched");
        }
        check_launch("the cuBLAS batched GEMM");
        return;
    }
    for (size_t i = 0; i < oc.size(); ++i)
        if (half)
            gemm_call_16bit(a.dtype(), lb.op, la.op, N, M, K, pb + ob[i] * elem_ab, lb.ld, pa + oa[i] * elem_ab, la.ld,
                            (float*)(pc + oc[i] * elem), N, accumulate);
        else
            gemm_call(f32, lb.op, la.op, N, M, K, pb + ob[i] * elem, lb.ld, pa + oa[i] * elem, la.ld,
                      pc + oc[i] * elem, N, accumulate);
    check_launch("the cuBLAS GEMM");
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_matmul(Backend& table) {
    table.matmul = matmul;
}

}  // namespace cuda
}  // namespace nc
