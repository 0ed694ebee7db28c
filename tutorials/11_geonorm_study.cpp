// Chapter 11 — the GeoNorm study. Built and run by `make test`; the text is
// in 11-geonorm-study.md. A pocket version of `normcore experiment norms`:
// three placements of the norm (post, pre, GeoNorm with harmonic decay)
// train the same tiny GPT-2 on the same batches, and we watch what the study
// watches — the loss, each block's gradient norm, and where the residual
// stream lives (on the sphere, for GeoNorm).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "autograd/ops.h"
#include "analysis/diagnostics.h"
#include "nn/models.h"
#include "optim/optimizer.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 11: expected %s\n", what);
        std::exit(1);
    }
}

static const char* kText =
    "A journey of a thousand miles begins with a single step. Whatever you are, be a good one. "
    "The best way out is always through. What we think, we become. Well begun is half done. ";

struct Outcome {
    double first_loss = 0, last_loss = 0;
    std::vector<double> block_grad;  // mean over steps
    std::vector<double> stream_norm;  // mean token norm entering block 0 and after each block
};

static Outcome train(Placement placement, Decay decay) {
    TransformerConfig cfg = gpt2_config();
    cfg.n_layer = 4;
    cfg.n_embd = 32;
    cfg.n_head = 2;
    cfg.vocab_size = 256;
    cfg.block_size = 16;
    cfg.placement = placement;
    cfg.decay = decay;
    Generator gen(11);
    GPT2 model(cfg, gen);
    optim::AdamW opt(optim::decay_groups(model, 0.0), 3e-3);

    // Batches: 8 windows of 16 bytes at fixed offsets that move each step.
    const std::string text = kText;
    const int64_t B = 8, T = 16, steps = 60;
    auto batch = [&](int64_t step, Tensor& ids, Tensor& targets) {
        std::vector<int64_t> in, out;
        for (int64_t b = 0; b < B; ++b) {
            size_t start = (size_t)((step * 37 + b * 23) % (int64_t)(text.size() - T - 1));
            for (int64_t t = 0; t < T; ++t) {
                in.push_back((unsigned char)text[start + t]);
                out.push_back((unsigned char)text[start + t + 1]);
            }
        }
        ids = raw::from_indices(in, {B, T});
        targets = raw::from_indices(out, {B, T});
    };

    Outcome o;
    o.block_grad.assign(cfg.n_layer, 0.0);
    for (int64_t step = 0; step < steps; ++step) {
        Tensor ids, targets;
        batch(step, ids, targets);
        opt.zero_grad();
        Tensor loss = cross_entropy(model.forward(ids), targets);
        backward(loss);
        // Each block's gradient norm (parameters named h.<block>.*), before the optimizer step.
        std::vector<double> g = diag::block_grad_norms(model, cfg.n_layer);
        for (int64_t b = 0; b < cfg.n_layer; ++b) o.block_grad[b] += g[b] / (double)steps;
        opt.step();
        if (step == 0) o.first_loss = loss.item();
        o.last_loss = loss.item();
    }
    // The residual stream of one batch: the mean length of its token vectors at each depth.
    Tensor ids, targets;
    batch(0, ids, targets);
    std::vector<Tensor> stream;
    NoGradGuard no_grad;
    model.forward(ids, &stream);
    for (const Tensor& x : stream) o.stream_norm.push_back(raw::mean(raw::sqrt(raw::sum(raw::mul(x, x), {-1}))).item());
    return o;
}

int main() {
    struct Run {
        const char* name;
        Placement placement;
        Decay decay;
    };
    const Run runs[] = {{"post", Placement::Post, Decay::None},
                        {"pre", Placement::Pre, Decay::None},
                        {"geonorm-harmonic", Placement::GeoNorm, Decay::Harmonic}};
    std::printf("%-18s %8s %8s   %-36s %s\n", "variant", "loss 0", "loss 60", "grad norm, blocks 0..3", "|x| entering block 0, after blocks 0..3");
    for (const Run& r : runs) {
        Outcome o = train(r.placement, r.decay);
        std::printf("%-18s %8.4f %8.4f  ", r.name, o.first_loss, o.last_loss);
        for (double g : o.block_grad) std::printf(" %8.4f", g);
        std::printf("   ");
        for (double n : o.stream_norm) std::printf(" %6.2f", n);
        std::printf("\n");
        expect(o.last_loss < 0.75 * o.first_loss, "every placement to learn (loss down by a quarter in 60 steps)");
        for (double g : o.block_grad) expect(g > 0 && std::isfinite(g), "a finite, non-zero gradient in every block");
        if (r.placement == Placement::GeoNorm) {
            // GeoNorm moves the stream along great circles of the sphere of
            // radius sqrt(C) = sqrt(32): every token stays at that length.
            for (double n : o.stream_norm)
                expect(std::fabs(n - std::sqrt(32.0)) < 1e-3, "GeoNorm's stream to stay on the sphere of radius sqrt(C)");
        }
    }
    std::printf("\nchapter 11: all checks passed\n");
    return 0;
}
