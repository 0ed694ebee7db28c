// checkpoint.h — activation recomputation ("gradient checkpointing").
//
// Backward needs what the forward pass computed: every op saves its inputs
// or outputs in its node (node.h), so a transformer block keeps a dozen
// tensors of the stream's size alive from its forward until backward reaches
// it. checkpoint() trades that memory for time: it runs f(x) with grad mode
// off, so nothing inside f is saved, and records one node that keeps only x.
// When backward reaches that node it runs f(x) again, this time recording
// its graph, goes back through it with the incoming gradient, and hands on
// the gradients of x and of f's parameters. Between the forward and the
// backward a checkpointed block holds its input only; during its backward,
// one block's graph at a time exists. The price is one more forward of f.
//
// Chen, Xu, Zhang, Guestrin, "Training Deep Nets with Sublinear Memory Cost"
// (2016). The gradients are the same numbers as without it, bit for bit:
// the recomputation runs the same kernels on the same inputs (tested for
// every placement in tests/test_recompute.cpp).
#pragma once

#include <functional>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace nc {

// y = f(x), recomputed during backward.
//   params  every leaf f reads that may require grad (the block's parameters),
//           each once: their gradients leave through this node, so the
//           engine adds them to .grad and reports them ready (data
//           parallelism) as usual. A listed parameter twice, or a tensor
//           that requires grad which f reads but which is neither x nor in
//           params, is an error (its gradient would be wrong).
//   rng     the generator f draws from (dropout), or nullptr: it is rewound
//           for the recomputation, so the same units are dropped, and put
//           back afterwards (also if f throws). It, and whatever f uses,
//           must outlive the backward pass.
// With grad mode off, or when neither x nor a parameter requires grad, it is
// just f(x).
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const std::vector<Tensor>& params,
                  Generator* rng = nullptr);

}  // namespace nc
