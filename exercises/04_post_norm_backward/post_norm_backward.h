// Exercise 4b (chapter 4): the backward of a Post-Norm step, derived by
// hand, and what it does to the gradient.
//
// One row x of C numbers, a sublayer that is one linear map W [C, C]
// (F(x)_i = sum_j W_ij x_j), a residual scale a (1 for Post-Norm, DeepNorm's
// alpha otherwise), and a LayerNorm without gain or bias:
//
//     s = a x + F(x),   y = LN(s) = (s - mean(s)) / sqrt(var(s) + eps)
//
// Backward gets dy and must return dx and dW. Go in two steps: first ds
// from dy, the backward of a LayerNorm (exercise 3b, with gamma = 1), then
// dx and dW from ds through the sum (a x plus a matrix product). Note what
// the first step does to any part of dy that is a constant or a multiple
// of y: that is the gradient a Post-Norm block cannot pass down.
//
// Plain loops in double. The check compares dx and dW with float64 finite
// differences of the forward above, at a = 1 and at a DeepNorm-like a = 2.6.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct PostNormGrads {
    std::vector<double> dx;  // C
    std::vector<double> dW;  // C x C, row-major
};

PostNormGrads post_norm_backward(const std::vector<double>& x, const std::vector<double>& W, int64_t C, double a,
                                 double eps, const std::vector<double>& dy);

}  // namespace exercise
