// A reference solution of exercise 3b. With g = gamma dy and xh = (x - mu) rstd:
//   dxh_j/dx_k = rstd (delta_jk - 1/C) - (x_j - mu) rstd^3 (x_k - mu) / C
//              = rstd (delta_jk - 1/C - xh_j xh_k / C),
// so  dx_k = sum_j g_j dxh_j/dx_k = rstd (g_k - mean(g) - xh_k mean(g xh)),
//     dgamma_j = sum over rows of dy_j xh_j,  dbeta_j = sum over rows of dy_j.
#include "exercises/03_layer_norm_backward/layer_norm_backward.h"

#include <cmath>

namespace exercise {

LayerNormGrads layer_norm_backward(const std::vector<double>& x, int64_t rows, int64_t C,
                                   const std::vector<double>& gamma, double eps, const std::vector<double>& dy) {
    LayerNormGrads out{std::vector<double>(rows * C), std::vector<double>(C, 0.0), std::vector<double>(C, 0.0)};
    for (int64_t i = 0; i < rows; ++i) {
        const double* xr = &x[i * C];
        const double* dyr = &dy[i * C];
        double mu = 0, var = 0;
        for (int64_t j = 0; j < C; ++j) mu += xr[j] / C;
        for (int64_t j = 0; j < C; ++j) var += (xr[j] - mu) * (xr[j] - mu) / C;
        double rstd = 1 / std::sqrt(var + eps), mean_g = 0, mean_g_xh = 0;
        for (int64_t j = 0; j < C; ++j) {
            double xh = (xr[j] - mu) * rstd, g = gamma[j] * dyr[j];
            mean_g += g / C;
            mean_g_xh += g * xh / C;
            out.dgamma[j] += dyr[j] * xh;
            out.dbeta[j] += dyr[j];
        }
        for (int64_t j = 0; j < C; ++j) {
            double xh = (xr[j] - mu) * rstd;
            out.dx[i * C + j] = rstd * (gamma[j] * dyr[j] - mean_g - xh * mean_g_xh);
        }
    }
    return out;
}

}  // namespace exercise
