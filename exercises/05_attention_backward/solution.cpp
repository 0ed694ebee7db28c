// A reference solution of exercise 5b: the forward's probabilities P, then
//   dV = P^T dout,   dP = dout V^T,
//   dZ_ij = p_ij (dP_ij - sum_l p_il dP_il)      (softmax, row by row),
//   dQ = s dZ K,     dK = s dZ^T Q.
#include "exercises/05_attention_backward/attention_backward.h"

#include <algorithm>
#include <cmath>

namespace exercise {

AttentionGrads attention_backward(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int64_t T, int64_t D, int64_t Dv, double scale,
                                  const std::vector<double>& dout) {
    AttentionGrads g{std::vector<double>(T * D, 0.0), std::vector<double>(T * D, 0.0), std::vector<double>(T * Dv, 0.0)};
    std::vector<double> p(T), dp(T);
    for (int64_t i = 0; i < T; ++i) {
        // Row i of P (keys 0..i), max-subtracted for safety.
        double largest = -INFINITY, total = 0;
        for (int64_t j = 0; j <= i; ++j) {
            double z = 0;
            for (int64_t d = 0; d < D; ++d) z += q[i * D + d] * k[j * D + d];
            p[j] = scale * z;
            largest = std::max(largest, p[j]);
        }
        for (int64_t j = 0; j <= i; ++j) total += (p[j] = std::exp(p[j] - largest));
        for (int64_t j = 0; j <= i; ++j) p[j] /= total;
        // dP_ij = <dout_i, v_j>, and the row's sum of p dP.
        double row = 0;
        for (int64_t j = 0; j <= i; ++j) {
            dp[j] = 0;
            for (int64_t e = 0; e < Dv; ++e) dp[j] += dout[i * Dv + e] * v[j * Dv + e];
            row += p[j] * dp[j];
        }
        for (int64_t j = 0; j <= i; ++j) {
            for (int64_t e = 0; e < Dv; ++e) g.dv[j * Dv + e] += p[j] * dout[i * Dv + e];
            double dz = p[j] * (dp[j] - row);
            for (int64_t d = 0; d < D; ++d) {
                g.dq[i * D + d] += scale * dz * k[j * D + d];
                g.dk[j * D + d] += scale * dz * q[i * D + d];
            }
        }
    }
    return g;
}

}  // namespace exercise
