// The check of exercise 3: the naive LayerNorm against the fused kernel
// (values and all three gradients, float64), against finite differences,
// and the number of nodes each records.
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/ops_nn.h"
#include "exercises/03_layer_norm/layer_norm.h"
#include "exercises/exercise.h"

using namespace nc;

static double largest_difference(const Tensor& a, const Tensor& b) {
    return exercise::largest_difference(a.to_vector(), b.to_vector());
}

int main() {
    return exercise::run("3 (naive LayerNorm)", [] {
        Generator gen(3);
        auto leaf = [&](Shape shape, double scale, double shift) {
            Tensor t = raw::add(raw::mul(raw::randn(shape, gen, kFloat64), scale), shift);
            t.set_requires_grad(true);
            return t;
        };
        // Rows with a large mean and a small spread: a formula that loses
        // precision there (E[x^2] - E[x]^2) fails the 1e-10 below.
        Tensor x = leaf({4, 3, 16}, 0.01, 100.0), gamma = leaf({16}, 1.0, 1.0), beta = leaf({16}, 1.0, 0.0);
        Tensor dy = raw::randn({4, 3, 16}, gen, kFloat64);
        const double eps = 1e-5;

        Tensor naive = exercise::naive_layer_norm(x, gamma, beta, eps);
        exercise::expect(naive.defined() && naive.shape() == x.shape(), "naive_layer_norm must return x's shape");
        exercise::expect(naive.requires_grad(), "naive_layer_norm must be built from autograd ops (autograd/ops.h)");
        size_t naive_nodes = topological_order(naive).size();
        backward(naive, dy);
        Tensor dx = x.grad(), dgamma = gamma.grad(), dbeta = beta.grad();
        x.zero_grad(), gamma.zero_grad(), beta.zero_grad();

        Tensor fused = layer_norm(x, gamma, beta, eps);
        size_t fused_nodes = topological_order(fused).size();
        backward(fused, dy);

        double dy_x = largest_difference(dx, x.grad());
        exercise::expect(largest_difference(naive, fused) < 1e-10, "values differ from the fused kernel's by " +
                                                                         exercise::number(largest_difference(naive, fused)));
        exercise::expect(dy_x < 1e-8, "dx differs from the fused kernel's by " + exercise::number(dy_x));
        exercise::expect(largest_difference(dgamma, gamma.grad()) < 1e-10, "dgamma differs from the fused kernel's by " + exercise::number(largest_difference(dgamma, gamma.grad())));
        exercise::expect(largest_difference(dbeta, beta.grad()) < 1e-10, "dbeta differs from the fused kernel's by " + exercise::number(largest_difference(dbeta, beta.grad())));

        Tensor small = leaf({2, 5}, 1.0, 0.0), g = leaf({5}, 1.0, 1.0), b = leaf({5}, 1.0, 0.0);
        GradcheckResult check = gradcheck(
            [eps](const std::vector<Tensor>& in) { return sum(mul(exercise::naive_layer_norm(in[0], in[1], in[2], eps), in[0])); },
            {small, g, b});
        exercise::expect(check.passed, "the naive LayerNorm's gradients: " + check.report());
        std::printf("nodes recorded: naive %zu, fused %zu; largest dx difference %.1e\n", naive_nodes, fused_nodes, dy_x);
    });
}
