#include "autograd/node.h"

#include "autograd/mode.h"
#include "tensor/raw_ops.h"

namespace nc {

// Moves the grad_fn of every input that nobody else holds into `pending`, and
// drops the node's closure and inputs. The caller then destroys the pending
// nodes one by one, so destruction never recurses down the chain.
static void detach_inputs(Node& node, std::vector<std::shared_ptr<Node>>& pending) {
    node.backward = nullptr;  // first: the closure holds extra references to inputs
    for (Tensor& t : node.inputs) {
        if (!t.defined() || !t.impl()->grad_fn) continue;
        // x * x lists x twice: count this node's own references.
        long own = 0;
        for (const Tensor& u : node.inputs) own += u.same(t);
        if (t.impl_ptr().use_count() == own) pending.push_back(std::move(t.impl()->grad_fn));
    }
    node.inputs.clear();
}

Node::~Node() {
    std::vector<std::shared_ptr<Node>> pending;
    detach_inputs(*this, pending);
    while (!pending.empty()) {
        std::shared_ptr<Node> node = std::move(pending.back());
        pending.pop_back();
        if (node.use_count() == 1) detach_inputs(*node, pending);
    }  // `node` is destroyed here with no inputs left, so no recursion
}

std::string shapes_str(const std::vector<Tensor>& tensors) {
    std::string s;
    for (size_t i = 0; i < tensors.size(); ++i)
        s += (i ? ", " : "") + (tensors[i].defined() ? shape_str(tensors[i].shape()) : std::string("none"));
    return s;
}

// What a node keeps of one input. A leaf is kept as it is: backward adds to
// its .grad. Of any other tensor the node needs only what the backward pass
// reads: its shape, dtype and device, and its grad_fn, where the pass goes
// next. So it keeps a copy of that description without the memory behind it.
// An activation then lives exactly as long as some op's backward saved it
// (captured in its lambda) or the forward code still holds it; keeping the
// tensor itself here would keep every intermediate result of the forward
// pass alive until backward, whether a gradient formula needs it or not.
static Tensor edge_to(const Tensor& t) {
    if (t.is_leaf()) return t;
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = t.shape();
    impl->strides = t.strides();
    impl->offset = t.offset();
    impl->dtype = t.dtype();
    impl->device = t.device();
    impl->requires_grad = true;
    impl->grad_fn = t.grad_fn();  // (no storage: the description only)
    return Tensor(impl);
}

Tensor record_node(const char* op, Tensor out, const std::vector<Tensor>& inputs, BackwardFn backward) {
    if (is_anomaly_enabled() && !raw::all_finite(out))
        throw Error(std::string("anomaly mode: the forward pass of ") + op + " produced NaN or Inf (inputs " +
                    shapes_str(inputs) + ", output " + shape_str(out.shape()) + ")");
    if (!is_grad_enabled()) return out;
    bool needs_grad = false;
    for (const Tensor& t : inputs) needs_grad = needs_grad || (t.defined() && t.requires_grad());
    if (!needs_grad) return out;

    // Some raw ops return their input unchanged (contiguous() of a contiguous
    // tensor); the output must still be its own tensor to carry a grad_fn.
    for (const Tensor& t : inputs)
        if (out.same(t)) out = out.detach();

    auto node = std::make_shared<Node>();
    node->name = std::string(op) + "Backward";
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& t = inputs[i];
        Tensor edge = t.defined() && t.requires_grad() ? edge_to(t) : Tensor();
        for (size_t j = 0; j < i; ++j)  // x * x: both inputs are one tensor, so one edge
            if (inputs[j].same(t)) edge = node->inputs[j];
        node->inputs.push_back(edge);
    }
    node->backward = std::move(backward);
    node->output_shape = out.shape();
    node->output_dtype = out.dtype();
    out.impl()->grad_fn = node;
    out.impl()->requires_grad = true;
    return out;
}

}  // namespace nc
