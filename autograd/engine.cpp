// engine.cpp — the backward loop.
//
// backward() is deliberately a plain loop you can step through:
//   1. order the nodes so each comes after every node that uses its output
//      (a topological sort, done with an explicit stack: no recursion);
//   2. seed the root's gradient with 1 (dL/dL);
//   3. visit the nodes in that order; each one's gradient is complete by the
//      time we reach it, because all its consumers came earlier. Call its
//      backward function and add the results to its inputs' gradients;
//   4. hand each leaf its accumulated gradient (x.grad += ...) right after
//      the last node that feeds it, so a caller can use it while backward
//      goes on with the layers below (data parallelism, chapter 14).
// gradients() runs the same pass but returns the leaves' gradients instead
// of adding them to .grad (activation recomputation needs that).
// In gdb, `break nc::call_node_backward` stops at every node (tutorial 2).
#include "autograd/engine.h"

#include <iostream>
#include <unordered_map>
#include <unordered_set>

#include "autograd/mode.h"
#include "tensor/raw_ops.h"

namespace nc {

std::vector<Node*> topological_order(const Tensor& root) {
    std::vector<Node*> post_order;
    if (!root.grad_fn()) return post_order;
    std::unordered_set<Node*> seen{root.grad_fn().get()};
    // Depth-first search with an explicit stack of (node, next input to look at).
    std::vector<std::pair<Node*, size_t>> stack{{root.grad_fn().get(), 0}};
    while (!stack.empty()) {
        Node* node = stack.back().first;
        size_t& next = stack.back().second;
        if (next < node->inputs.size()) {
            const Tensor& input = node->inputs[next++];
            Node* child = input.defined() ? input.grad_fn().get() : nullptr;
            if (child && seen.insert(child).second) stack.push_back({child, 0});
        } else {
            post_order.push_back(node);  // all of node's inputs are already listed
            stack.pop_back();
        }
    }
    // Post-order lists inputs before their consumers; backward needs the reverse.
    return std::vector<Node*>(post_order.rbegin(), post_order.rend());
}

// a + b, where an undefined `a` means "no gradient yet".
static Tensor accumulate(const Tensor& a, const Tensor& b) { return a.defined() ? raw::add(a, b) : b; }

static void check_finite(const Node& node, size_t input, const Tensor& grad, const Tensor& grad_output) {
    if (raw::all_finite(grad)) return;
    throw Error("anomaly mode: the backward pass of " + node.name + " produced NaN or Inf in the gradient of input " +
                std::to_string(input) + " (shape " + shape_str(grad.shape()) + "; node inputs " +
                shapes_str(node.inputs) + ", output " + shape_str(node.output_shape) + ", incoming gradient " +
                (raw::all_finite(grad_output) ? "finite" : "not finite") + ")");
}

static void trace_node(size_t step, const Node& node, const Tensor& grad) {
    std::cerr << "[backward " << step << "] " << node.name << "  grad " << shape_str(grad.shape()) << " -> inputs "
              << shapes_str(node.inputs) << "\n";
}

// One step of the loop: the node's own gradient formula, g_out -> g_inputs.
// It is a separate function so that `break nc::call_node_backward` in gdb
// stops once per node with `node` and `grad_output` in view.
static std::vector<Tensor> call_node_backward(Node& node, const Tensor& grad_output) {
    if (node.released)
        fail("backward", "trying to run " + node.name +
                             " a second time, but its saved tensors were freed after the first backward(); "
                             "pass retain_graph=true to the first call");
    std::vector<Tensor> input_grads = node.backward(grad_output);  // step in here to see the formula
    if (input_grads.size() != node.inputs.size())
        fail(node.name, "internal error: returned " + std::to_string(input_grads.size()) + " gradients for " +
                            std::to_string(node.inputs.size()) + " inputs");
    return input_grads;
}

// The steps after which no node adds to a leaf's gradient any more: a leaf
// is finished after its last consumer in the order. Listed per step, leaves
// in the order the nodes name them (the same on every run).
static std::vector<std::vector<TensorImpl*>> leaves_finished_after(const std::vector<Node*>& order) {
    std::unordered_map<TensorImpl*, size_t> last_use;
    for (size_t step = 0; step < order.size(); ++step)
        for (const Tensor& input : order[step]->inputs)
            if (input.defined() && !input.grad_fn()) last_use[input.impl()] = step;
    std::vector<std::vector<TensorImpl*>> finished(order.size());
    for (size_t step = 0; step < order.size(); ++step)
        for (const Tensor& input : order[step]->inputs) {
            if (!input.defined() || input.grad_fn()) continue;
            auto it = last_use.find(input.impl());
            if (it == last_use.end() || it->second != step) continue;
            finished[step].push_back(input.impl());
            last_use.erase(it);  // listed once, however often the node names it
        }
    return finished;
}

// The upstream gradient the pass starts from: `grad`, or 1 for a scalar root.
static Tensor seed_gradient(const Tensor& root, const Tensor& grad, const char* caller) {
    if (!root.requires_grad())
        fail(caller, "the tensor " + shape_str(root.shape()) +
                         " does not require grad (no input of its graph has requires_grad set)");
    if (!grad.defined()) {
        if (root.numel() != 1)
            fail(caller, "called on a tensor of shape " + shape_str(root.shape()) +
                             "; without a gradient argument it needs a scalar (reduce it with sum or mean, "
                             "or pass the upstream gradient)");
        return raw::ones(root.shape(), root.dtype(), root.device());
    }
    if (grad.shape() != root.shape() || grad.dtype() != root.dtype())
        fail(caller, "gradient of shape " + shape_str(grad.shape()) + " (" + dtype_name(grad.dtype()) +
                         ") does not match the tensor's " + shape_str(root.shape()) + " (" + dtype_name(root.dtype()) +
                         ")");
    return grad;
}

// What the pass does with a leaf's gradient once it is complete (its total
// over the pass): backward() adds it to leaf.grad(), gradients() returns it.
using LeafFinished = std::function<void(const Tensor& leaf, const Tensor& total)>;

// The pass both share: steps 1-4 above, with step 4 handed to `finished`.
static void run_pass(const Tensor& root, const Tensor& seed, bool retain_graph, const LeafFinished& finished) {
    // Gradient formulas use raw ops, but no op in here should ever be recorded.
    NoGradGuard no_grad;

    // Leaves' gradients are summed over the pass and handed out once each is
    // complete, so each leaf hook sees the total gradient once.
    std::unordered_map<TensorImpl*, std::pair<Tensor, Tensor>> leaf_grads;  // leaf -> (leaf, gradient so far)
    auto add_to_leaf = [&](const Tensor& leaf, const Tensor& g) {
        auto it = leaf_grads.find(leaf.impl());
        if (it == leaf_grads.end()) leaf_grads.emplace(leaf.impl(), std::make_pair(leaf, g));
        else it->second.second = accumulate(it->second.second, g);
    };
    auto finish_leaf = [&](TensorImpl* impl) {
        auto it = leaf_grads.find(impl);
        if (it == leaf_grads.end()) return;  // no gradient reached it in this pass
        Tensor leaf = it->second.first, total = it->second.second;
        leaf_grads.erase(it);
        finished(leaf, total);
    };

    if (root.is_leaf()) {
        add_to_leaf(root, seed);
        finish_leaf(root.impl());
        return;
    }

    std::vector<Node*> order = topological_order(root);
    std::vector<std::vector<TensorImpl*>> finished_after = leaves_finished_after(order);
    // Own every node for the length of the pass: once a node's step is done
    // we drop its links to its inputs (below), and those links are what
    // otherwise keeps the nodes further down the order alive.
    std::vector<std::shared_ptr<Node>> keep_alive;
    if (!retain_graph) {
        keep_alive.push_back(root.grad_fn());
        for (Node* node : order)
            for (const Tensor& input : node->inputs)
                if (input.defined() && input.grad_fn()) keep_alive.push_back(input.grad_fn());
    }
    std::unordered_map<Node*, Tensor> grads;  // gradient of each node's output
    grads[order.front()] = seed;

    for (size_t step = 0; step < order.size(); ++step) {
        Node* node = order[step];
        Tensor grad_output = grads[node];
        grads.erase(node);  // free it as soon as it is used
        if (grad_output.defined()) {  // else no gradient reached this node
            for (const GradHook& hook : node->hooks) {
                Tensor replaced = hook(grad_output);
                if (replaced.defined()) grad_output = replaced;
            }
            if (is_trace_enabled()) trace_node(step, *node, grad_output);
            std::vector<Tensor> input_grads = call_node_backward(*node, grad_output);
            for (size_t i = 0; i < input_grads.size(); ++i) {
                const Tensor& input = node->inputs[i];
                const Tensor& g = input_grads[i];
                if (!input.defined() || !g.defined()) continue;
                if (g.shape() != input.shape())
                    fail(node->name, "internal error: gradient for input " + std::to_string(i) + " has shape " +
                                         shape_str(g.shape()) + ", the input has " + shape_str(input.shape()));
                if (is_anomaly_enabled()) check_finite(*node, i, g, grad_output);
                if (input.grad_fn()) grads[input.grad_fn().get()] = accumulate(grads[input.grad_fn().get()], g);
                else add_to_leaf(input, g);
            }
        }
        // The leaves no later node feeds are complete now.
        for (TensorImpl* leaf : finished_after[step]) finish_leaf(leaf);
        if (!retain_graph) {
            // Free what this node held as soon as backward is done with it:
            // the tensors its backward function saved, and its references to
            // its inputs (activations of the forward pass). Peak memory then
            // falls during backward instead of staying at its forward maximum.
            node->backward = nullptr;
            node->inputs.clear();
            node->released = true;
        }
    }
}

void backward(const Tensor& root, const Tensor& grad, bool retain_graph, const LeafReady& on_leaf_ready) {
    Tensor seed = seed_gradient(root, grad, "backward");
    LeafFinished add_to_grad = [&](const Tensor& leaf, const Tensor& complete) {
        Tensor total = complete;
        for (const GradHook& hook : leaf.impl()->hooks) {
            Tensor replaced = hook(total);
            if (replaced.defined()) total = replaced;
        }
        // Store a fresh contiguous copy: `total` may be a view of another
        // tensor's memory (e.g. the gradient of a reshape), and the optimizer
        // will update .grad in place.
        leaf.set_grad(leaf.grad().defined() ? raw::add(leaf.grad(), total) : raw::clone(total));
        if (on_leaf_ready) on_leaf_ready(leaf);
    };
    run_pass(root, seed, retain_graph, add_to_grad);  // the loop: steps 1-4 above
}

std::vector<Tensor> gradients(const Tensor& root, const std::vector<Tensor>& inputs, const Tensor& grad,
                              bool retain_graph) {
    for (size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i].defined() || !inputs[i].requires_grad() || !inputs[i].is_leaf())
            fail("gradients", "input " + std::to_string(i) +
                                  " must be a leaf that requires grad (a parameter, or x.detach() with requires_grad set)");
    Tensor seed = seed_gradient(root, grad, "gradients");
    std::unordered_map<TensorImpl*, Tensor> totals;
    run_pass(root, seed, retain_graph, [&](const Tensor& leaf, const Tensor& total) { totals[leaf.impl()] = total; });
    std::vector<Tensor> out;
    for (const Tensor& x : inputs) {
        auto it = totals.find(x.impl());
        // A copy: the total may be the caller's own `grad` (a leaf root) or a view.
        out.push_back(it != totals.end() ? raw::clone(it->second) : Tensor());
    }
    return out;
}

void register_hook(const Tensor& t, GradHook hook) {
    if (!t.requires_grad())
        fail("register_hook", "the tensor " + shape_str(t.shape()) + " does not require grad, so no gradient "
                                                                     "will ever reach the hook");
    if (t.grad_fn()) t.grad_fn()->hooks.push_back(std::move(hook));
    else t.impl()->hooks.push_back(std::move(hook));
}

void retain_grad(const Tensor& t) {
    if (t.is_leaf()) return;  // leaves keep their gradient anyway
    // A weak pointer: the hook lives on the node, which the tensor owns; a
    // strong one would form a cycle and leak both.
    std::weak_ptr<TensorImpl> weak = t.impl_ptr();
    register_hook(t, [weak](const Tensor& g) {
        if (auto impl = weak.lock()) {
            Tensor self(impl);
            self.set_grad(self.grad().defined() ? raw::add(self.grad(), g) : raw::clone(g));
        }
        return Tensor();
    });
}

}  // namespace nc
