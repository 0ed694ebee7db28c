// attention_reference.cpp — scaled dot-product attention the simple way:
// materialize the T x S probabilities (memory grows with T^2) and use GEMMs.
// It is not in the backend table; it is the reference the tiled kernel
// (attention.cpp) is tested against, and the easier one to read first.
//
//   forward:   P = softmax(scale Q K^T + mask),   O = P V
//   backward:  dV = P^T dO,   dP = dO V^T,
//              dZ = P * (dP - rowsum(dP * P))      (softmax backward, Z = scale Q K^T)
//              dQ = scale dZ K,   dK = scale dZ^T Q
// The products are batched GEMMs (gemm.cpp) over the N = batch x heads matrices.
//
// Shapes: q [N, T, D], k [N, S, D], v [N, S, Dv], out [N, T, Dv], probs [N, T, S].
#include <cmath>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/parallel.h"

namespace nc {
namespace cpu {

// [N, R, C] -> the transposed view [N, C, R] (no copy; gemm reads strides).
static Tensor transposed(const Tensor& t) {
    return make_view(t, {t.size(0), t.size(2), t.size(1)}, {t.strides()[0], t.strides()[2], t.strides()[1]},
                     t.offset());
}

template <typename T>
static void softmax_rows_masked(const Tensor& scores, bool causal, double scale) {
    int64_t N = scores.size(0), rows = scores.size(1), S = scores.size(2);
    T* z = static_cast<T*>(scores.raw_data());
    parallel_for(N * rows, N * rows * S >= kParallelMin, [&](int64_t r) {
        int64_t i = r % rows;                 // query position
        int64_t allowed = causal ? i + 1 : S;  // keys 0..allowed-1 are visible
        T* row = z + r * S;
        double m = -INFINITY, total = 0;
        for (int64_t j = 0; j < allowed; ++j) m = std::max(m, scale * row[j]);
        for (int64_t j = 0; j < allowed; ++j) {
            double e = std::exp(scale * row[j] - m);
            row[j] = (T)e;
            total += e;
        }
        for (int64_t j = 0; j < allowed; ++j) row[j] = (T)(row[j] / total);
        for (int64_t j = allowed; j < S; ++j) row[j] = T(0);  // masked: probability exactly 0
    });
}

void attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                         const Tensor& out, const Tensor& probs) {
    cpu_backend().matmul(q, transposed(k), probs, false, Tensor());  // raw scores Q K^T
    if (q.dtype() == kFloat32) softmax_rows_masked<float>(probs, causal, scale);
    else softmax_rows_masked<double>(probs, causal, scale);
    cpu_backend().matmul(probs, v, out, /*accumulate=*/false, Tensor());
}

// dZ = P * (dP - rowsum(dP * P)) * scale, in place over dP.
template <typename T>
static void softmax_backward_rows(const Tensor& probs, const Tensor& dprobs, double scale) {
    int64_t rows = probs.size(0) * probs.size(1), S = probs.size(2);
    const T* p = static_cast<const T*>(probs.raw_data());
    T* d = static_cast<T*>(dprobs.raw_data());
    parallel_for(rows, rows * S >= kParallelMin, [&](int64_t r) {
        const T* pr = p + r * S;
        T* dr = d + r * S;
        double dot = 0;
        for (int64_t j = 0; j < S; ++j) dot += (double)dr[j] * pr[j];
        for (int64_t j = 0; j < S; ++j) dr[j] = (T)(scale * pr[j] * (dr[j] - dot));
    });
}

void attention_reference_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& probs, double scale, const Tensor& dq, const Tensor& dk,
                                  const Tensor& dv) {
    cpu_backend().matmul(transposed(probs), dout, dv, false, Tensor());  // dV = P^T dO
    Tensor dscores = empty(probs.shape(), probs.dtype(), probs.device());
    cpu_backend().matmul(dout, transposed(v), dscores, false, Tensor());  // dP = dO V^T
    if (q.dtype() == kFloat32) softmax_backward_rows<float>(probs, dscores, scale);
    else softmax_backward_rows<double>(probs, dscores, scale);
    cpu_backend().matmul(dscores, k, dq, false, Tensor());              // dQ = dZ K
    cpu_backend().matmul(transposed(dscores), q, dk, false, Tensor());  // dK = dZ^T Q
}

}  // namespace cpu
}  // namespace nc
