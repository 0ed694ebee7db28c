// raw_optim.h — the optimizer's fused update as a raw op (not a layer, so
// not in raw_nn.h). The scalars of one step, AdamWStep, are backend.h's,
// because the kernel table receives them too.
#pragma once

#include <vector>

#include "tensor/backend.h"  // AdamWStep
#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

// ---- the AdamW update (tensor/ops/adamw.cpp) -------------------------------------------
// One fused step over all parameters (optim/optimizer.h's AdamW calls it):
// params, m, v are updated in place and must be contiguous floating tensors
// of one dtype and device; grads[i] has params[i]'s shape.
void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step);

}  // namespace raw
}  // namespace nc
