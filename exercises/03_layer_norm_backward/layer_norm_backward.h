// Exercise 3b (chapter 3): LayerNorm's backward, derived by hand.
//
// For each row x of C numbers (row-major: x[i * C + j]),
//
//     mu = mean(x),  var = mean((x - mu)^2),  rstd = 1 / sqrt(var + eps),
//     xh = (x - mu) rstd,                     y = gamma xh + beta.
//
// Backward gets dy = dL/dy and must return dL/dx, dL/dgamma and dL/dbeta.
// dgamma and dbeta are the easy ones (which y's does gamma_j reach?). For
// dx, every output of a row depends on every input of that row, through mu
// and var: write g = gamma dy (the gradient arriving at xh) and work out
// dL/dx_k = sum_j g_j dxh_j/dx_k. You will need d mu/dx_k = 1/C and
// d var/dx_k = 2 (x_k - mu) / C. The answer fits in one line per row, in
// terms of g, xh, rstd and two row means. (Chapter 3 shows the result;
// derive it before you look.)
//
// Plain loops in double, no tensors. The check compares all three
// gradients with float64 finite differences of the forward above and with
// the library's fused kernel, on ordinary rows and on rows of mean 10 and
// spread 0.01.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct LayerNormGrads {
    std::vector<double> dx;      // rows x C
    std::vector<double> dgamma;  // C
    std::vector<double> dbeta;   // C
};

LayerNormGrads layer_norm_backward(const std::vector<double>& x, int64_t rows, int64_t C,
                                   const std::vector<double>& gamma, double eps, const std::vector<double>& dy);

}  // namespace exercise
