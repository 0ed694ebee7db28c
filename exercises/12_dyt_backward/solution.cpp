// A reference solution of exercise 12. With t = tanh(alpha x_ij), each y_ij
// depends on x_ij, alpha, gamma_j and beta_j only:
//   dy_ij/dx_ij    = gamma_j alpha (1 - t^2)
//   dy_ij/dalpha   = gamma_j x_ij (1 - t^2)     (alpha reaches every y: sum them all)
//   dy_ij/dgamma_j = t                           (gamma_j reaches column j: sum over rows)
//   dy_ij/dbeta_j  = 1
// and each gradient is the sum over the y's it reaches of dy times that
// derivative (the vector-Jacobian product of chapter 2).
#include "exercises/12_dyt_backward/dyt_backward.h"

#include <cmath>

namespace exercise {

DyTGrads dyt_backward(const std::vector<double>& x, int64_t rows, int64_t C, double alpha,
                      const std::vector<double>& gamma, const std::vector<double>& dy) {
    DyTGrads g;
    g.dx.assign(rows * C, 0.0);
    g.dgamma.assign(C, 0.0);
    g.dbeta.assign(C, 0.0);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < C; ++j) {
            double t = std::tanh(alpha * x[i * C + j]);
            double dz = dy[i * C + j] * gamma[j] * (1 - t * t);  // dL/d(alpha x_ij)
            g.dx[i * C + j] = alpha * dz;
            g.dalpha += x[i * C + j] * dz;
            g.dgamma[j] += dy[i * C + j] * t;
            g.dbeta[j] += dy[i * C + j];
        }
    return g;
}

}  // namespace exercise
