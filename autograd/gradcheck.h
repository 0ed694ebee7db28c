// gradcheck.h — checking analytic gradients against finite differences.
//
// For inputs x (float64, requires_grad) and a function f, gradcheck compares
// the gradient that backward() computes with the central difference
//     dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps),
// where L = sum(f(x) * R) for a fixed random tensor R. Projecting onto a
// random R turns any output shape into a scalar, and any wrong entry of the
// Jacobian shows up in L's gradient (except with probability zero).
// Central differences are accurate to O(eps^2); float64 keeps round-off
// (about 1e-16 / eps) far below the tolerance.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nc {

struct GradcheckOptions {
    double eps = 1e-6;
    double atol = 1e-5;
    double rtol = 1e-3;
    uint64_t seed = 1234;  // for the projection R and the sampled elements
    // 0: check every element. Otherwise check this many elements per input,
    // spread over the tensor at random (for whole models with thousands of
    // parameters: every parameter tensor is still checked).
    int64_t max_elements_per_input = 0;
};

struct GradcheckResult {
    bool passed = true;
    double max_error = 0;  // worst |analytic - numeric| over all checked elements
    // The worst element relative to its tolerance: input, index, both values.
    std::string worst;
    std::string report() const { return (passed ? "gradcheck passed; worst element: " : "gradcheck FAILED; worst element: ") + worst; }
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// Inputs that require grad must be float64 CPU tensors; others are passed
// through unchanged. The inputs' .grad is restored after the check.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = GradcheckOptions());

}  // namespace nc
