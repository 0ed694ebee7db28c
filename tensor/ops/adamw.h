// adamw.h — the AdamW update as a fused op: the kernel every backend
// supplies (tensor/backend.h's Backend::adamw), and the raw op
// optim/optimizer.h's AdamW calls. Both defined in adamw.cpp (the CUDA
// kernel: cuda/adamw.cu). Not differentiable: it is the step itself.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace nc {

// The scalars of one AdamW step (optim/optimizer.h has the formula).
struct AdamWStep {
    double lr, beta1, beta2, eps;
    double correction1, correction2;  // 1 - beta^t, the bias corrections
};

// One step over all parameters at once: params[i], m[i], v[i] are updated
// in place (contiguous, same shape as grads[i]); weight_decay[i] is
// parameter i's decoupled decay.
struct AdamWKernels {
    void (*update)(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                   const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step);
};

namespace raw {

// Checks (params, m, v contiguous floating tensors of one dtype and device;
// grads[i] of params[i]'s shape), then one backend call.
void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step);

}  // namespace raw
}  // namespace nc
