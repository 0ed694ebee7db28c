// checkpoint.cpp — forward once without a graph, again during backward
// (checkpoint.h).
#include "autograd/checkpoint.h"

#include "autograd/engine.h"
#include "autograd/mode.h"
#include "autograd/node.h"

namespace nc {

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const std::vector<Tensor>& params,
                  Generator* rng) {
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
        uint64_t rng_now = rng ? rng->offset() : 0;
        if (rng) rng->set_offset(rng_start);
        Tensor x_again = x.detach();
        if (x.requires_grad()) x_again.set_requires_grad(true);
        Tensor y_again;
        {
            GradModeGuard record_graph(true);
            y_again = f(x_again);
        }
        if (rng) rng->set_offset(rng_now);
        // Back through it: the gradients of x and of every parameter that
        // requires grad, in `inputs` order (undefined for the others).
        std::vector<Tensor> wrt;
        if (x.requires_grad()) wrt.push_back(x_again);
        for (const Tensor& p : params)
            if (p.requires_grad()) wrt.push_back(p);
        std::vector<Tensor> found = y_again.requires_grad() ? gradients(y_again, wrt, grad_y) : std::vector<Tensor>();
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
