// Exercise 12 (chapter 12): Dynamic Tanh's backward, derived by hand.
//
// DyT replaces a norm by an elementwise squashing with learned scales. For
// x with `rows` rows of C numbers (row-major: x[i * C + j]),
//
//     y_ij = gamma_j tanh(alpha x_ij) + beta_j
//
// with one scalar alpha and two vectors gamma, beta of length C. Backward
// gets dy = dL/dy (same layout as x) and must return dL/dx, dL/dalpha,
// dL/dgamma and dL/dbeta. Derive them on paper first: which inputs does
// each y_ij depend on, and which y's does each parameter reach? (alpha
// reaches every y; gamma_j and beta_j a whole column.) You need one fact
// about tanh: tanh'(z) = 1 - tanh(z)^2.
//
// Write plain loops over the numbers, in double; no tensors needed. The
// check compares every gradient with float64 finite differences of the
// forward above and with the library's fused DyT kernel, at ordinary
// inputs and at saturated ones (alpha x = +-40, where tanh is flat).
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct DyTGrads {
    std::vector<double> dx;      // rows x C, like x
    double dalpha = 0;
    std::vector<double> dgamma;  // C
    std::vector<double> dbeta;   // C
};

DyTGrads dyt_backward(const std::vector<double>& x, int64_t rows, int64_t C, double alpha,
                      const std::vector<double>& gamma, const std::vector<double>& dy);

}  // namespace exercise
