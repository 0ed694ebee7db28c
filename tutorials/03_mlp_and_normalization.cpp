// Chapter 3 — an MLP and the normalization layers.
// Built and run by `make test`. Part 1 looks at activations at initialization
// through a deep MLP with each norm; part 2 trains a small MLP by hand.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>

#include "nn/init.h"
#include "nn/norms.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 3: expected %s\n", what);
        std::exit(1);
    }
}

// Root mean square of all entries: the "size" of an activation.
static double rms(const Tensor& t) { return std::sqrt(raw::mean(raw::mul(t, t)).item()); }

int main() {
    // --- Part 1: 12 layers of h <- norm(tanh(W h)), width 64, W ~ N(0, 1.5^2/64) ---
    // A gain of 1.5 is a slightly too large init: without a norm the signal
    // saturates tanh; the norms each put it back on a fixed scale.
    const int64_t width = 64, depth = 12, batch = 32;
    Generator gen(0);
    std::vector<Tensor> weights;
    for (int l = 0; l < depth; ++l) weights.push_back(raw::mul(raw::randn({width, width}, gen), 1.5 / std::sqrt(width)));
    Tensor input = raw::mul(raw::randn({batch, width}, gen), 0.1);  // a small input signal

    nn::LayerNorm ln(width);
    nn::RMSNorm rmsn(width);
    nn::BatchNorm1d bn(width);
    nn::DyT dyt(width, 0.5);
    struct Variant {
        const char* name;
        std::function<Tensor(const Tensor&)> norm;
    };
    std::vector<Variant> variants = {
        {"none", [](const Tensor& h) { return h; }},
        {"layernorm", [&](const Tensor& h) { return ln.forward(h); }},
        {"rmsnorm", [&](const Tensor& h) { return rmsn.forward(h); }},
        {"batchnorm", [&](const Tensor& h) { return bn.forward(h); }},
        {"dyt", [&](const Tensor& h) { return dyt.forward(h); }},
    };
    {
        NoGradGuard no_grad;  // part 1 only looks: no graph needed
        std::printf("RMS of the activations after layers 1, 4, 8, 12 (input RMS %.3f):\n", rms(input));
        std::printf("%-10s %8s %8s %8s %8s   row mean / row RMS at layer 12\n", "norm", "l=1", "l=4", "l=8", "l=12");
        for (const Variant& v : variants) {
            Tensor h = input;
            std::vector<double> at;
            for (int l = 0; l < depth; ++l) {
                h = v.norm(tanh(matmul(h, weights[l])));
                if (l == 0 || l == 3 || l == 7 || l == 11) at.push_back(rms(h));
            }
            double row_mean = raw::max(raw::abs(raw::mean(h, {1}))).item();
            double row_rms = raw::mean(raw::sqrt(raw::mean(raw::mul(h, h), {1}))).item();
            std::printf("%-10s %8.3f %8.3f %8.3f %8.3f   %.2e / %.3f\n", v.name, at[0], at[1], at[2], at[3], row_mean, row_rms);
            std::string name = v.name;
            if (name == "layernorm") expect(row_mean < 1e-5 && std::fabs(row_rms - 1) < 1e-3, "LayerNorm rows: mean 0, RMS 1");
            if (name == "rmsnorm") expect(std::fabs(row_rms - 1) < 1e-3, "RMSNorm rows: RMS 1");
            if (name == "batchnorm") {
                double col_mean = raw::max(raw::abs(raw::mean(h, {0}))).item();
                expect(col_mean < 1e-5, "BatchNorm features: mean 0 over the batch");
            }
            if (name == "dyt") expect(raw::max(raw::abs(h)).item() <= 1.0, "DyT outputs bounded by |weight| + |bias| = 1");
            if (name == "dyt") expect(at[3] < at[0] / 5, "DyT (alpha 0.5) not to restore the scale: the signal shrinks");
        }
    }

    // --- Part 2: fit y = sin(3x) with a 2-hidden-layer MLP and LayerNorm ----------
    Generator init(1);
    nn::Linear fc1(1, 32, true, init), fc2(32, 32, true, init), fc3(32, 1, true, init);
    nn::LayerNorm norm(32);
    auto model = [&](const Tensor& x) { return fc3.forward(gelu(norm.forward(fc2.forward(gelu(fc1.forward(x)))))); };
    std::vector<Tensor> params;
    for (nn::Module* m : std::vector<nn::Module*>{&fc1, &fc2, &fc3, &norm})
        for (const Tensor& p : m->parameters()) params.push_back(p);

    Tensor x = raw::reshape(raw::arange(-1, 1, 1.0 / 64), {128, 1});
    Tensor y = raw::sin(raw::mul(x, 3.0));
    double first = 0, last = 0;
    const double lr = 0.05;
    for (int step = 0; step < 300; ++step) {
        Tensor loss = mean(pow(model(x) - y, 2.0));
        for (const Tensor& p : params) p.zero_grad();
        backward(loss);
        {
            NoGradGuard no_grad_update;  // plain gradient descent: p <- p - lr * dL/dp
            for (const Tensor& p : params) raw::copy_(p, raw::sub(p, raw::mul(p.grad(), lr)));
        }
        if (step == 0) first = loss.item();
        last = loss.item();
        if (step % 100 == 0 || step == 299) std::printf("step %3d  mse %.5f\n", step, loss.item());
    }
    expect(last < first / 10, "the MLP to fit sin(3x): loss down by 10x");
    // --- The first rung of the ladder: LayerNorm from eight ops, then fused -------
    // The same function two ways, in float64: as a composition of autograd
    // ops (each records a node and keeps its inputs for backward) and as the
    // fused kernel pair. Same values, same gradients; 9 graph nodes or 1
    // (and the loss's two, mul and sum).
    {
        Generator g64(5);
        Tensor x = randn({4, 16}, g64, kFloat64).set_requires_grad(true);
        Tensor gamma = randn({16}, g64, kFloat64).set_requires_grad(true);
        Tensor beta = randn({16}, g64, kFloat64).set_requires_grad(true);
        Tensor R = randn({4, 16}, g64, kFloat64);  // a fixed upstream gradient
        auto run = [&](bool fused, std::vector<std::vector<double>>& out) {
            for (Tensor* t : {&x, &gamma, &beta}) t->zero_grad();
            Tensor y;
            if (fused) {
                y = layer_norm(x, gamma, beta, 1e-5);
            } else {
                Tensor mu = mean(x, {-1}, true);
                Tensor centered = x - mu;
                Tensor var = mean(centered * centered, {-1}, true);
                y = centered * rsqrt(var + 1e-5) * gamma + beta;
            }
            Tensor loss = sum(y * R);
            size_t nodes = topological_order(loss).size();
            backward(loss);
            out = {y.detach().to_vector(), x.grad().to_vector(), gamma.grad().to_vector(), beta.grad().to_vector()};
            return nodes;
        };
        std::vector<std::vector<double>> naive, fused;
        size_t naive_nodes = run(false, naive), fused_nodes = run(true, fused);
        double worst = 0;
        for (size_t k = 0; k < naive.size(); ++k)
            for (size_t i = 0; i < naive[k].size(); ++i) worst = std::max(worst, std::abs(naive[k][i] - fused[k][i]));
        std::printf("LayerNorm from ops: %zu graph nodes; fused: %zu; largest difference in y, dx, dgamma, dbeta: %.1e\n",
                    naive_nodes, fused_nodes, worst);
        expect(worst < 1e-12, "the composed and the fused LayerNorm to agree");
    }
    std::cout << "chapter 3: all checks passed\n";
    return 0;
}
