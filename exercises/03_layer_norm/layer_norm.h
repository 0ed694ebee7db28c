// Exercise 3 (chapter 3): LayerNorm from autograd ops, the naive way.
//
//     mu = mean(x),  var = mean((x - mu)^2),  y = (x - mu) / sqrt(var + eps) * gamma + beta
//
// over the last dim of x [..., C], with gamma and beta of shape [C]. Use
// the differentiable ops of autograd/ops.h only (mean, sub, mul, sqrt, ...,
// with keepdim where a statistic must broadcast back): autograd then
// derives the backward for you, one node per op. The check compares your
// values and gradients with the fused kernel (nc::layer_norm, one node,
// backward derived by hand in tensor/ops/norms.cpp) and counts the
// nodes each records.
#pragma once

#include "tensor/tensor.h"

namespace exercise {

nc::Tensor naive_layer_norm(const nc::Tensor& x, const nc::Tensor& gamma, const nc::Tensor& beta, double eps);

}  // namespace exercise
