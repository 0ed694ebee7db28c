// checkpoint.cpp — forward once without a graph, again during backward
// (checkpoint.h).
#include "autograd/checkpoint.h"

#include <unordered_set>

#include "autograd/engine.h"
#include "autograd/mode.h"
#include "autograd/node.h"

namespace nc {

// Puts the generator's offset back when it goes out of scope, even if the
// recomputation throws: later draws must not reuse counters.
struct RestoreOffset {
    Generator* rng;
    uint64_t offset;
    ~RestoreOffset() {
        if (rng) rng->set_offset(offset);
    }
};

// Every leaf that requires grad and that the recomputed graph reaches must
// be x or one of params: any other would silently get no gradient (and a
// tensor of the outer graph captured by f would be walked twice).
static void check_leaves(const Tensor& y_again, const std::vector<Tensor>& wrt) {
    std::unordered_set<const TensorImpl*> known;
    for (const Tensor& t : wrt) known.insert(t.impl());
    for (Node* node : topological_order(y_again))
        for (const Tensor& input : node->inputs)
            if (input.defined() && !input.grad_fn() && input.requires_grad() && !known.count(input.impl()))
                fail("checkpoint", "the function reads a tensor " + shape_str(input.shape()) +
                                       " that requires grad but is neither its input nor one of its parameters: "
                                       "pass every parameter it uses in `params`");
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const std::vector<Tensor>& params,
                  Generator* rng) {
    std::unordered_set<const TensorImpl*> distinct{x.impl()};
    for (const Tensor& p : params)
        if (!distinct.insert(p.impl()).second)
            fail("checkpoint", "a parameter " + shape_str(p.shape()) +
                                   " is listed twice (or is also the input): its gradient would be counted twice");
    bool needs_graph = is_grad_enabled() && x.requires_grad();
    for (const Tensor& p : params) needs_graph |= is_grad_enabled() && p.requires_grad();
    if (!needs_graph) return f(x);
    uint64_t rng_start = rng ? rng->offset() : 0;
    Tensor y;
    {
        NoGradGuard no_graph;  // nothing inside f is saved
        y = f(x);
    }
    std::vector<Tensor> inputs{x};
    inputs.insert(inputs.end(), params.begin(), params.end());
    return record("Checkpoint", y, inputs, [f, x, params, rng, rng_start](const Tensor& grad_y) {
        // Run f again from the same input (a fresh leaf, so the graph stops
        // there) and the same random numbers, this time with its graph.
        Tensor x_again = x.detach();
        if (x.requires_grad()) x_again.set_requires_grad(true);
        Tensor y_again;
        {
            RestoreOffset restore{rng, rng ? rng->offset() : 0};
            if (rng) rng->set_offset(rng_start);
            GradModeGuard record_graph(true);
            y_again = f(x_again);
        }
        // Back through it: the gradients of x and of every parameter that
        // requires grad, in `inputs` order (undefined for the others, and
        // for those no gradient reaches, as backward() leaves them).
        std::vector<Tensor> wrt;
        if (x.requires_grad()) wrt.push_back(x_again);
        for (const Tensor& p : params)
            if (p.requires_grad()) wrt.push_back(p);
        std::vector<Tensor> found;
        if (y_again.requires_grad()) {
            check_leaves(y_again, wrt);
            found = gradients(y_again, wrt, grad_y);
        }
        std::vector<Tensor> out;
        size_t next = 0;
        auto take = [&](bool wanted) {
            if (!wanted) return Tensor();
            Tensor g = next < found.size() ? found[next] : Tensor();
            ++next;
            return g;
        };
        out.push_back(take(x.requires_grad()));
        for (const Tensor& p : params) out.push_back(take(p.requires_grad()));
        return out;
    });
}

}  // namespace nc
