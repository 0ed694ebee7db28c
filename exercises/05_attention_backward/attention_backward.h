// Exercise 5b (chapter 5): causal attention's backward, derived by hand.
//
// One head: queries q [T, D], keys k [T, D], values v [T, Dv], row-major
// (q[i * D + d]). With s = scale,
//
//     z_ij = s <q_i, k_j>            for j <= i (causal: later keys masked)
//     p_ij = exp(z_ij) / sum_{l <= i} exp(z_il)
//     out_i = sum_{j <= i} p_ij v_j
//
// Backward gets dout [T, Dv] and must return dq, dk and dv. Take it in
// three steps, each a rule you have met: out = P V is a matrix product
// (chapter 2: dP = dout V^T, dV = P^T dout); softmax's backward along a row
// (dz_ij = p_ij (dp_ij - sum_l p_il dp_il)); and z = s Q K^T is a product
// again. Masked entries have p = 0 and pass nothing back.
//
// Plain loops in double. The check compares your gradients with float64
// finite differences of the forward above and with the library's fused
// attention kernel (tensor/ops/attention.h), whose backward never stores P.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct AttentionGrads {
    std::vector<double> dq, dk, dv;  // shaped as q, k, v
};

AttentionGrads attention_backward(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int64_t T, int64_t D, int64_t Dv, double scale,
                                  const std::vector<double>& dout);

}  // namespace exercise
