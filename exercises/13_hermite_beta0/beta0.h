// Exercise 13 (chapter 13): the number that predicts how fast an
// activation makes a LayerNorm network isometric.
//
// For x ~ N(0, 1) and an activation s, let
//
//     c0 = E[s(x)],   c1 = E[x s(x)],   v = E[s(x)^2] - c0^2,
//     beta0 = c1^2 / v.
//
// c1 is the linear part of s in the Hermite expansion (the best straight
// line through s, measured with Gaussian weight), v its whole variance, so
// beta0 in [0, 1] is the share of s that is linear: 1 for s(x) = x, 0 for
// an even s. The chapter's prediction is a decay of the isometry gap by
// 1 / (2 - beta0) per layer.
//
// Write beta0 for any s by computing the three expectations numerically:
// E[f(x)] is the integral of f(x) exp(-x^2 / 2) / sqrt(2 pi) over the real
// line. Choose a rule (the trapezoid rule on [-12, 12] with a fine step
// works; why can you stop at 12?) and make it accurate to 1e-6.
//
// The check compares your beta0 with values derived in closed form: s(x) =
// x (1), ReLU (c0 = 1/sqrt(2 pi), c1 = 1/2, E[s^2] = 1/2), sin (c1 =
// exp(-1/2), E[sin^2] = (1 - exp(-2)) / 2), x^2 (0), and tanh with and
// without a constant added (the same beta0: c0 must come out).
#pragma once

#include <functional>

namespace exercise {

double beta0(const std::function<double(double)>& activation);

}  // namespace exercise
