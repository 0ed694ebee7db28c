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

// A scalar node as a first autograd often has it (micrograd's Value), to show
// what the topological order prevents: each node knows its inputs and the
// local derivative d(out)/d(input).
struct Scalar {
    double grad = 0;
    std::vector<std::pair<Scalar*, double>> inputs;
};

// Backward by plain recursion: push this node's gradient *as it is now* to
// each input and recurse at once, before the node has heard from all of its
// consumers.
static void recursive_backward(Scalar& node) {
    for (auto& [input, local] : node.inputs) {
        input->grad += local * node.grad;
        recursive_backward(*input);
    }
}

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 2: expected %s\n", what);
        std::exit(1);
    }
}

int main(int argc, char** argv) {
    const char* dot_path = argc > 1 ? argv[1] : "02-graph.dot";  // make docs renders it: images/02-graph.png

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
    // --- 7. Questions learners ask ----------------------------------------------
    // (a) Why the topological order: c = b + b with b = a + a is 4a, dc/da = 4.
    {
        Tensor a = raw::full({}, 1.5).set_requires_grad(true);
        Tensor bb = a + a;
        backward(bb + bb);
        Scalar sa, sb, sc;
        sb.inputs = {{&sa, 1.0}, {&sa, 1.0}};
        sc.inputs = {{&sb, 1.0}, {&sb, 1.0}};
        sc.grad = 1;
        recursive_backward(sc);
        std::printf("c = b + b, b = a + a: dc/da = %g by backward(), %g by recursion without the order\n", a.grad().item(),
                    sa.grad);
        expect(a.grad().item() == 4 && sa.grad == 6, "4 from backward() and 6 from the naive recursion");
    }
    // (b) A gradient of a gradient: backward computes with raw ops under
    //     no-grad, so the gradient it leaves is a constant, not a graph.
    {
        Tensor a = raw::full({}, 3.0).set_requires_grad(true);
        backward(a * a * a);
        std::printf("d(a^3)/da at 3 = %g; does that gradient record a graph? %s\n", a.grad().item(),
                    a.grad().requires_grad() ? "yes" : "no");
        expect(!a.grad().requires_grad() && a.grad().grad_fn() == nullptr, "a gradient without a graph");
    }
    // (c) The gradient with respect to an exponent: d(a^p)/dp = a^p ln a.
    {
        Tensor a = raw::full({}, 2.0, kFloat64).set_requires_grad(true);
        Tensor p = raw::full({}, 3.0, kFloat64).set_requires_grad(true);
        backward(pow(a, p));
        std::printf("d(2^p)/dp at p = 3: %.6f (8 ln 2 = %.6f); d(a^3)/da at 2: %g\n", p.grad().item(), 8 * std::log(2.0),
                    a.grad().item());
        expect(std::fabs(p.grad().item() - 8 * std::log(2.0)) < 1e-12, "d(2^p)/dp = 8 ln 2");
    }
    // (d) Why we subtract the gradient: to first order a step w -= lr g
    //     changes the loss by -lr |g|^2, which is never positive.
    {
        Tensor step_w = raw::clone(w).set_requires_grad(true), step_b = raw::clone(b).set_requires_grad(true);
        auto loss_at = [&](const Tensor& ww, const Tensor& bbias) { return mean(tanh(matmul(x, ww) + bbias) * tanh(matmul(x, ww) + bbias)); };
        Tensor before = loss_at(step_w, step_b);
        backward(before);
        double lr = 0.1, squared = 0;
        for (const Tensor& g : {step_w.grad(), step_b.grad()})
            for (double v : g.to_vector()) squared += v * v;
        Tensor after;
        {
            NoGradGuard no_grad;
            after = loss_at(raw::sub(step_w, raw::mul(step_w.grad(), lr)), raw::sub(step_b, raw::mul(step_b.grad(), lr)));
        }
        std::printf("one step of (w, b) -= 0.1 gradient: loss %.6f -> %.6f, a change of %.6f; first order: -0.1 |g|^2 = %.6f\n",
                    before.item(), after.item(), after.item() - before.item(), -lr * squared);
        expect(after.item() < before.item(), "a small step against the gradient to lower the loss");
    }
    // (e) Why softmax subtracts the maximum: exp(1000) overflows to inf, and inf / inf is NaN.
    {
        double z0 = 1000, z1 = 1001;
        double naive = std::exp(z1) / (std::exp(z0) + std::exp(z1));
        double shifted = std::exp(z1 - z1) / (std::exp(z0 - z1) + std::exp(z1 - z1));
        Tensor s = softmax(raw::from_vector(std::vector<double>{z0, z1}, {2}), 0);
        std::printf("softmax([1000, 1001])[1]: naive %s, shifted by the max %.6f, normcore's softmax %.6f\n",
                    std::isnan(naive) ? "NaN (inf / inf)" : "finite", shifted, s.to_vector()[1]);
        expect(std::isnan(naive) && std::fabs(s.to_vector()[1] - shifted) < 1e-12, "the naive softmax to overflow");
    }
    {
        // A saved tensor written in place: tanh's backward reads its saved
        // output, 1 - tanh(a)^2. Zeroing that output after the forward pass
        // changes the gradient, and nothing says so.
        auto tanh_grad = [](bool overwrite) {
            Tensor a = raw::from_vector(std::vector<double>{0.5}, {1}).set_requires_grad(true);
            Tensor y = tanh(a);
            if (overwrite) raw::fill_(y, 0.0);  // y's storage is what TanhBackward saved
            backward(sum(y));
            return a.grad().item();
        };
        double right = tanh_grad(false), wrong = tanh_grad(true);
        std::printf("d tanh(a)/da at 0.5: %.6f; after writing 0 into tanh(a) before backward: %.6f, and no error\n", right,
                    wrong);
        expect(std::fabs(right - (1 - std::tanh(0.5) * std::tanh(0.5))) < 1e-12 && wrong == 1,
               "an in-place write into a saved tensor to change the gradient silently");
    }
    std::cout << "chapter 2: all checks passed\n";
    return 0;
}
