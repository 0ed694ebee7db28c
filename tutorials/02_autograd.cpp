// Chapter 2 — autograd: recording a graph, walking it backwards, checking it.
// Built and run by `make test`. Under gdb: see tutorials/02-autograd.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "autograd/gradcheck.h"
#include "autograd/graph_dump.h"
#include "autograd/ops.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 2: expected %s\n", what);
        std::exit(1);
    }
}

int main(int argc, char** argv) {
    const char* dot_path = argc > 1 ? argv[1] : "autograd_graph.dot";

    // --- 1. A tiny model: one tanh neuron layer and a squared loss -----------
    Generator gen(0);
    Tensor x = randn({4, 3}, gen);                         // inputs: no gradient wanted
    Tensor w = randn({3, 2}, gen).set_requires_grad(true);  // parameters: leaves
    Tensor b = zeros({2}).set_requires_grad(true);
    w.set_name("w");
    b.set_name("b");

    Tensor h = tanh(matmul(x, w) + b);  // [4, 2]
    Tensor loss = mean(h * h);          // a scalar

    // --- 2. The graph that was recorded ----------------------------------------
    std::cout << "loss = " << loss << "\n";
    std::cout << "loss.grad_fn = " << loss.grad_fn()->name << "\n";
    std::cout << "nodes in the order backward() will visit them:\n";
    for (Node* node : topological_order(loss))
        std::cout << "  " << node->name << " -> output " << shape_str(node->output_shape) << "\n";
    write_dot(loss, dot_path);
    std::cout << "graph written to " << dot_path << " (render: dot -Tpng " << dot_path << " -o graph.png)\n";

    // --- 3. backward() ------------------------------------------------------------
    backward(loss);
    std::cout << "dloss/dw =\n" << w.grad() << "\ndloss/db =\n" << b.grad() << "\n";
    expect(w.grad().shape() == w.shape(), "w.grad to have w's shape");

    // Check one entry by hand: dL/db_j = mean over rows of 2 h (1 - h^2), / 2 columns.
    std::vector<double> hv = h.to_vector();
    double expected_db0 = 0;
    for (int i = 0; i < 4; ++i) expected_db0 += 2 * hv[i * 2] * (1 - hv[i * 2] * hv[i * 2]) / 8;
    std::printf("db[0] by hand: %.6f, by backward(): %.6f\n", expected_db0, b.grad().to_vector()[0]);
    expect(std::fabs(expected_db0 - b.grad().to_vector()[0]) < 1e-5, "the hand-computed db[0]");

    // --- 4. Gradients accumulate -------------------------------------------------
    Tensor first = raw::clone(w.grad());
    backward(mean(tanh(matmul(x, w) + b) * tanh(matmul(x, w) + b)));
    expect(std::fabs(w.grad().to_vector()[0] - 2 * first.to_vector()[0]) < 1e-6, "a second backward to double the gradient");
    w.zero_grad();
    b.zero_grad();
    std::cout << "after two backward() calls w.grad doubled; zero_grad() clears it\n";

    // --- 5. No-grad mode ------------------------------------------------------------
    {
        NoGradGuard no_grad;
        Tensor evaluated = tanh(matmul(x, w) + b);
        expect(!evaluated.requires_grad(), "no graph under NoGradGuard");
    }

    // --- 6. gradcheck: the analytic gradient against finite differences --------
    Generator gen64(1);
    Tensor w64 = randn({3, 2}, gen64, kFloat64).set_requires_grad(true);
    Tensor b64 = randn({2}, gen64, kFloat64).set_requires_grad(true);
    Tensor x64 = raw::to_dtype(x, kFloat64);
    GradcheckResult result = gradcheck(
        [&](const std::vector<Tensor>& p) {
            Tensor hh = tanh(matmul(x64, p[0]) + p[1]);
            return mean(hh * hh);
        },
        {w64, b64});
    std::cout << result.report() << "\n";
    expect(result.passed, "gradcheck to pass");
    std::cout << "chapter 2: all checks passed\n";
    return 0;
}
