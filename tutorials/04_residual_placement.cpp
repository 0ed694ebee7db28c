// Chapter 4 — where the norm goes: post, pre, sandwich, deepnorm, geonorm.
// Built and run by `make test`. For each placement it builds the same
// 12-layer GPT-2-style model, runs one forward + backward on random tokens,
// and prints the size of the residual stream and of the gradients per layer.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "autograd/graph_dump.h"
#include "autograd/node.h"
#include "nn/models.h"
#include "nn/placement.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 4: expected %s\n", what);
        std::exit(1);
    }
}

static double rms(const Tensor& t) { return std::sqrt(raw::mean(raw::mul(t, t)).item()); }
static double norm(const Tensor& t) { return std::sqrt(raw::sum(raw::mul(t, t)).item()); }

// The picture tutorials/images/04-placements.png (make docs renders it with
// Graphviz): for each placement, the graph that nn::residual_step records
// for one sublayer, so the wiring drawn is the wiring the code runs. F is a
// stand-in op named "F" (the identity), the norms are LayerNorms without
// parameters, the stream x a leaf of 4 features.
static void write_placement_picture(const char* path) {
    std::ofstream dot(path);
    dot << "digraph placements {\n  rankdir=BT;\n  fontname=\"monospace\";\n  node [fontname=\"monospace\"];\n";
    LayerNorm N(4, 1e-5, /*affine=*/false), N_out(4, 1e-5, /*affine=*/false);
    Sublayer s;
    s.apply = [](const Tensor& h) {
        return record("F", raw::mul(h, 1.0), {h}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
    };
    s.drop = [](const Tensor& h) { return h; };
    s.norm = &N;
    s.norm_out = &N_out;
    s.alpha = deepnorm_alpha(12);
    s.step = raw::full({1}, 0.5);
    const char* wirings[] = {"post: N(x + F(x))", "pre: x + F(N(x))", "sandwich: x + N_out(F(N(x)))",
                             "deepnorm: N(alpha x + F(x))", "geonorm: exp_x(a P_x(F(x)))"};
    Generator gen(4);
    int index = 0;
    for (Placement p : {Placement::Post, Placement::Pre, Placement::Sandwich, Placement::DeepNorm, Placement::GeoNorm}) {
        Tensor x = raw::randn({1, 4}, gen).set_requires_grad(true);
        x.set_name("x");
        Sublayer wiring = s;
        if (p == Placement::GeoNorm) wiring.norm = nullptr;  // its sublayers read the stream as it is, by default
        dot << to_dot_cluster(residual_step(p, x, wiring), "p" + std::to_string(index), wirings[index]);
        ++index;
    }
    dot << "}\n";
}

int main() {
    TransformerConfig cfg = gpt2_config();
    cfg.n_layer = 12;
    cfg.n_embd = 32;
    cfg.n_head = 4;
    cfg.vocab_size = 64;
    cfg.block_size = 16;
    Generator data(1);
    Tensor ids = raw::from_indices(std::vector<int64_t>(4 * 16, 0), {4, 16});
    raw::copy_(ids, raw::to_dtype(raw::mul(raw::rand({4, 16}, data, kFloat64), 63.999), kInt64));
    Tensor inputs = raw::narrow(ids, 1, 0, 15), targets = raw::contiguous(raw::narrow(ids, 1, 1, 15));

    std::printf("%-9s %-34s %-40s\n", "", "stream RMS after block 0, 3, 7, 11", "|dL/dW_fc| of block 0, 3, 7, 11 (x1000)");
    for (Placement p : {Placement::Post, Placement::Pre, Placement::Sandwich, Placement::DeepNorm, Placement::GeoNorm}) {
        cfg.placement = p;
        Generator gen(0);  // the same draws for every placement (DeepNorm scales its own: DeepNet's init)
        GPT2 model(cfg, gen);
        std::vector<Tensor> stream;
        Tensor loss = cross_entropy(model.forward(inputs, &stream), targets);
        backward(loss);
        double s[4], g[4];
        int at[4] = {0, 3, 7, 11};
        for (int i = 0; i < 4; ++i) {
            s[i] = rms(stream[at[i] + 1]);
            g[i] = 1000 * norm(model.blocks()[at[i]]->mlp.fc->weight.grad());
        }
        std::printf("%-9s %7.4f %7.4f %7.4f %7.4f   %8.3f %8.3f %8.3f %8.3f   loss %.4f\n", to_string(p).c_str(), s[0],
                    s[1], s[2], s[3], g[0], g[1], g[2], g[3], loss.item());
        expect(std::fabs(loss.item() - std::log(64.0)) < 0.5, "an untrained model's loss near log(vocab) = 4.16");
        if (p == Placement::Post || p == Placement::DeepNorm)
            expect(std::fabs(s[3] - 1) < 1e-3, "post/deepnorm: the stream leaves every block normalized (RMS 1)");
        if (p == Placement::GeoNorm)
            expect(std::fabs(s[0] - 1) < 1e-6 && std::fabs(s[3] - 1) < 1e-6, "geonorm: the stream stays on the sphere (RMS 1)");
        if (p == Placement::Pre) expect(s[3] > s[0], "pre: the stream grows with depth");
        if (p == Placement::Sandwich) expect(s[3] > 3 * s[0], "sandwich: each block adds two unit-RMS outputs");
        if (p == Placement::Post) expect(g[3] > g[0], "post: gradients grow towards the output");
        if (p == Placement::Pre) expect(g[0] > g[3] && g[3] > 0.8 * g[0], "pre: gradients nearly equal across depth");
    }
    std::cout << "chapter 4: all checks passed\n";
    write_placement_picture("04-placements.dot");
    return 0;
}
