// Exercise 2b (chapter 2): the backward of a matrix product with a
// broadcast bias, derived by hand.
//
//     Y = X W + b,   X [N, K], W [K, M], b [M] added to every row of X W
//
// (row-major: X[n * K + k]). Backward gets dY [N, M] and must return dX,
// dW and db. Work them out from the vector-Jacobian product of chapter 2:
// dL/dX_nk = sum over every Y_ij that X_nk touches of dY_ij dY_ij/dX_nk,
// and the same for W and b. Then see the matrix products in your sums, and
// what happens to b's gradient because b was used once per row: the
// backward of a broadcast is a sum over the broadcast dimension (what
// sum_to does in autograd/).
//
// Plain loops in double. The check compares your gradients with float64
// finite differences and with autograd's backward of matmul and add.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct MatmulGrads {
    std::vector<double> dX, dW, db;
};

MatmulGrads matmul_backward(const std::vector<double>& X, const std::vector<double>& W, int64_t N, int64_t K,
                            int64_t M, const std::vector<double>& dY);

}  // namespace exercise
