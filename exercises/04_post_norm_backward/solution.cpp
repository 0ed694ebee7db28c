// A reference solution of exercise 4b.
//   LayerNorm (gamma = 1):  ds = rstd (dy - mean(dy) - y mean(dy y))
// removes from dy its mean and its component along y: a LayerNorm's output
// does not change when s is shifted or scaled, so those parts of dy have
// no effect on the loss.
//   s = a x + W x:          dx = a ds + W^T ds,   dW_ij = ds_i x_j.
#include "exercises/04_post_norm_backward/post_norm_backward.h"

#include <cmath>

namespace exercise {

PostNormGrads post_norm_backward(const std::vector<double>& x, const std::vector<double>& W, int64_t C, double a,
                                 double eps, const std::vector<double>& dy) {
    std::vector<double> s(C, 0.0), y(C), ds(C);
    for (int64_t i = 0; i < C; ++i) {
        s[i] = a * x[i];
        for (int64_t j = 0; j < C; ++j) s[i] += W[i * C + j] * x[j];
    }
    double mean = 0, var = 0;
    for (double v : s) mean += v / C;
    for (double v : s) var += (v - mean) * (v - mean) / C;
    double rstd = 1 / std::sqrt(var + eps), mean_dy = 0, mean_dy_y = 0;
    for (int64_t i = 0; i < C; ++i) {
        y[i] = (s[i] - mean) * rstd;
        mean_dy += dy[i] / C;
        mean_dy_y += dy[i] * y[i] / C;
    }
    for (int64_t i = 0; i < C; ++i) ds[i] = rstd * (dy[i] - mean_dy - y[i] * mean_dy_y);
    PostNormGrads g{std::vector<double>(C, 0.0), std::vector<double>(C * C)};
    for (int64_t j = 0; j < C; ++j) {
        g.dx[j] = a * ds[j];
        for (int64_t i = 0; i < C; ++i) g.dx[j] += W[i * C + j] * ds[i];
    }
    for (int64_t i = 0; i < C; ++i)
        for (int64_t j = 0; j < C; ++j) g.dW[i * C + j] = ds[i] * x[j];
    return g;
}

}  // namespace exercise
