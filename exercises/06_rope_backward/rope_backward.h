// Exercise 6b (chapter 6): RoPE's backward, derived by hand.
//
// RoPE (Hugging Face's pairing, nn/rope.h) rotates, at position m, the
// pair (x_i, x_{i + D/2}) of a head vector x of size D by the angle m f_i,
// f_i = theta^(-2i/D), i < D/2:
//
//     y_i         = x_i cos(m f_i) - x_{i+D/2} sin(m f_i)
//     y_{i + D/2} = x_i sin(m f_i) + x_{i+D/2} cos(m f_i)
//
// Backward gets dy [T, D] (row m is position m) and must return dx. Each
// pair is a 2 x 2 rotation R; the backward of y = R x is dx = R^T dy.
// What is the transpose of a rotation by an angle, as a rotation? Write it
// without building any matrix.
//
// The check compares your dx with float64 finite differences of the
// forward above and with the library's backward of apply_rope (tensor/ops/rope.h).
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

std::vector<double> rope_backward(const std::vector<double>& dy, int64_t T, int64_t D, double theta);

}  // namespace exercise
