// engine.h — backward(): reverse-mode differentiation over the recorded graph.
#pragma once

#include "autograd/node.h"
#include "tensor/tensor.h"

namespace nc {

// Computes d(root)/d(leaf) for every leaf that requires grad and *adds* it to
// leaf.grad() (gradients accumulate across calls until zero_grad()).
//   root          a scalar (one element), or any shape if `grad` is given
//   grad          the upstream gradient dL/d(root); defaults to 1 for a scalar
//   retain_graph  keep the saved tensors so backward can run through this
//                 graph again; by default they are freed as each node finishes
//   on_leaf_ready called once for each leaf that received a gradient, as
//                 soon as it is final and stored in leaf.grad(): right after
//                 the last node that feeds it, while backward goes on with
//                 the nodes below (data-parallel training starts averaging
//                 the last layers' gradients there, chapter 14)
using LeafReady = std::function<void(const Tensor& leaf)>;
void backward(const Tensor& root, const Tensor& grad = Tensor(), bool retain_graph = false,
              const LeafReady& on_leaf_ready = nullptr);

// d(root)/d(x) for each x of `inputs`, returned instead of added to x.grad()
// (PyTorch's torch.autograd.grad): no .grad changes, no leaf hook runs, no
// LeafReady fires. Each input must be a leaf that requires grad; one that no
// gradient reaches gets an undefined tensor (as backward() leaves its .grad
// undefined). root and grad as for backward().
std::vector<Tensor> gradients(const Tensor& root, const std::vector<Tensor>& inputs, const Tensor& grad = Tensor(),
                              bool retain_graph = false);

// Calls `hook(grad)` when the gradient for `t` has been computed; a returned
// defined tensor replaces the gradient. Works for leaves and non-leaves.
void register_hook(const Tensor& t, GradHook hook);

// Makes backward() also store the gradient of a non-leaf tensor in t.grad().
void retain_grad(const Tensor& t);

// Nodes reachable from root in the order backward() visits them (root first).
std::vector<Node*> topological_order(const Tensor& root);

}  // namespace nc
