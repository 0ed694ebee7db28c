// Exercise 2 (chapter 2): a new differentiable op, softplus.
//
//     softplus(x) = log(1 + e^x),     d softplus / dx = 1 / (1 + e^-x) = sigmoid(x)
//
// Write it the way autograd/ops_elementwise.cpp writes tanh: compute the
// output with raw ops (tensor/raw_ops.h), then `return record(...)` with a
// lambda that turns the output's gradient into the input's. It must not
// overflow: softplus(1000) is 1000, softplus(-1000) is 0 (about e^-1000), and
// their gradients 1 and 0. Hint: log(1 + e^x) = max(x, 0) + log(1 + e^-|x|).
#pragma once

#include "tensor/tensor.h"

namespace exercise {

nc::Tensor softplus(const nc::Tensor& x);

}  // namespace exercise
