// A reference solution of exercise 2b. Y_nm = sum_k X_nk W_km + b_m, so
//   dX_nk = sum_m dY_nm W_km    (dX = dY W^T)
//   dW_km = sum_n X_nk dY_nm    (dW = X^T dY)
//   db_m  = sum_n dY_nm         (b reached every row: sum over rows)
#include "exercises/02_matmul_backward/matmul_backward.h"

namespace exercise {

MatmulGrads matmul_backward(const std::vector<double>& X, const std::vector<double>& W, int64_t N, int64_t K,
                            int64_t M, const std::vector<double>& dY) {
    MatmulGrads g{std::vector<double>(N * K, 0.0), std::vector<double>(K * M, 0.0), std::vector<double>(M, 0.0)};
    for (int64_t n = 0; n < N; ++n)
        for (int64_t m = 0; m < M; ++m) {
            double d = dY[n * M + m];
            g.db[m] += d;
            for (int64_t k = 0; k < K; ++k) {
                g.dX[n * K + k] += d * W[k * M + m];
                g.dW[k * M + m] += X[n * K + k] * d;
            }
        }
    return g;
}

}  // namespace exercise
