// node.h — one recorded operation in the autograd graph.
//
// When a differentiable op runs with grad mode on and an input that requires
// grad, it creates a Node and hangs it on its output as `grad_fn`. The node
// holds:
//   name      "MulBackward", "MatMulBackward": what you see in gdb, in the
//             trace and in graph dumps;
//   inputs    the input tensors that need a gradient (undefined for those
//             that don't, so input i is always inputs[i]); following their
//             grad_fn pointers is how backward() walks the graph. A leaf
//             is the tensor itself; any other input is a description of it
//             (shape, dtype, device, grad_fn) without its memory, so that
//             the graph keeps no activation a gradient formula does not need;
//   backward  a function from the gradient of the output to one gradient per
//             input. It is a lambda written next to the forward code (see
//             autograd/ops_*.cpp) and captures what it needs (the "saved
//             tensors"); backward() frees it afterwards unless retain_graph.
//
// The graph points from outputs to inputs only, so it has no cycles and
// shared_ptr ownership frees it as soon as the last output is dropped.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/mode.h"
#include "tensor/tensor.h"

namespace nc {

using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct Node {
    std::string name;
    std::vector<Tensor> inputs;
    BackwardFn backward;
    Shape output_shape;
    DType output_dtype = kFloat32;
    std::vector<GradHook> hooks;  // hooks registered on this node's output tensor
    bool released = false;        // backward ran and freed the saved tensors

    Node() = default;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    // Frees the chain of nodes behind this one iteratively: a 10,000-op chain
    // freed recursively would overflow the stack.
    ~Node();
};

// Every differentiable op ends with `return record(...)`:
//   op        the op's name ("Mul"); the node is called op + "Backward"
//   out       the forward result, computed with raw ops
//   inputs    the op's tensor inputs, in the order backward returns gradients
//   backward  the gradient formula (captures what it needs from the forward)
// It checks for anomalies, and if grad mode is on and some input requires
// grad, makes `out` a non-leaf whose grad_fn is a new Node. Returns `out`.
Tensor record_node(const char* op, Tensor out, const std::vector<Tensor>& inputs, BackwardFn backward);
// record() itself only decides whether there is anything to record: under
// NoGradGuard (generating text, evaluating) it returns `out` before the
// backward closure is wrapped in a std::function, which would cost a heap
// allocation per op for a graph nobody keeps.
template <typename Backward>
Tensor record(const char* op, Tensor out, const std::vector<Tensor>& inputs, Backward&& backward) {
    if (!is_grad_enabled() && !is_anomaly_enabled()) return out;
    return record_node(op, std::move(out), inputs, BackwardFn(std::forward<Backward>(backward)));
}

// "[2, 3], [3]": the shapes of a list of tensors, for error messages.
std::string shapes_str(const std::vector<Tensor>& tensors);

}  // namespace nc
