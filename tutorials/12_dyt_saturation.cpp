// Chapter 12 — Dynamic Tanh and saturation. Built and run by `make test`;
// the text is in 12-dyt-and-saturation.md. What `normcore experiment dyt`
// measures, in small: how much of a DyT layer's input lands in the flat part
// of tanh, first for Gaussian inputs where the answer has a closed form, then
// inside a tiny GPT-2 while it trains.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "autograd/ops.h"
#include "analysis/diagnostics.h"
#include "nn/models.h"
#include "optim/optimizer.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 12: expected %s\n", what);
        std::exit(1);
    }
}

// The text the tiny GPT-2 learns: four 16-byte windows and the byte after each.
static const std::string kText = "to be or not to be, that is the question; whether tis nobler in the mind to suffer";

// The loss of a model that predicts every target byte by its frequency
// among the 64 targets: their entropy, -sum p log p (nats).
static double target_unigram_entropy() {
    std::map<char, double> count;
    for (int64_t b = 0; b < 4; ++b)
        for (int64_t t = 0; t < 16; ++t) count[kText[b * 16 + t + 1]] += 1;
    double h = 0;
    for (const auto& [byte, n] : count) h -= n / 64 * std::log(n / 64);
    return h;
}

// Trains a 2-block GPT-2 with `norm` on four 16-byte windows of one text
// (AdamW, lr 1e-2, 100 steps) and returns the last loss. Every 25 steps it
// prints the loss, the residual stream entering the final norm (its RMS and
// the share of it all tokens have in common), the gradient norm that reaches
// block 0, and for DyT each layer's saturation. final_gamma0: the initial
// gain of the last DyT.
static double train_tiny_gpt2(NormKind norm, double final_gamma0, Generator& gen) {
    TransformerConfig cfg = gpt2_config();
    cfg.n_layer = 2;
    cfg.n_embd = 32;
    cfg.n_head = 2;
    cfg.vocab_size = 256;
    cfg.block_size = 16;
    cfg.norm = norm;
    cfg.dyt_alpha0 = 2.0;
    cfg.dyt_final_gamma0 = final_gamma0;
    GPT2 model(cfg, gen);
    std::vector<std::pair<std::string, DyT*>> dyt = diag::dyt_layers(model);
    for (auto& [name, l] : dyt) l->track_saturation(true);
    if (norm == NormKind::DyT)
        expect(dyt.size() == 5, "five DyT layers in a 2-block GPT-2 (ln_1, ln_2 per block, and ln_f)");

    const std::string& text = kText;
    std::vector<int64_t> in, out;
    for (int64_t b = 0; b < 4; ++b)
        for (int64_t t = 0; t < 16; ++t) {
            in.push_back((unsigned char)text[b * 16 + t]);
            out.push_back((unsigned char)text[b * 16 + t + 1]);
        }
    Tensor ids = raw::from_indices(in, {4, 16}), targets = raw::from_indices(out, {4, 16});
    optim::AdamW opt(optim::decay_groups(model, 0.0), 1e-2);
    if (norm == NormKind::DyT)
        std::printf("\nGPT-2 with DyT, final gain %.2f: the stream into ln_f, the gradient reaching block 0, and the saturation of each layer:\n",
                    final_gamma0);
    else
        std::printf("\nGPT-2 with LayerNorm:\n");
    std::printf("%5s %8s %8s %8s %10s", "step", "loss", "rms", "common", "grad h.0");
    for (auto& [name, l] : dyt) std::printf(" %10s", name.c_str());
    std::printf("\n");
    double first = 0, last = 0;
    for (int step = 0; step <= 100; ++step) {
        opt.zero_grad();
        std::vector<Tensor> stream;
        Tensor loss = cross_entropy(model.forward(ids, &stream), targets);
        backward(loss);
        double block_0_gradient = diag::block_grad_norms(model, cfg.n_layer)[0];
        opt.step();
        if (step == 0) first = loss.item();
        last = loss.item();
        if (step % 25 == 0) {
            diag::StreamSize top = diag::stream_size(stream.back());
            std::printf("%5d %8.4f %8.3f %8.3f %10.2e", step, loss.item(), top.rms, top.common_share, block_0_gradient);
            for (auto& [name, l] : dyt) {
                std::printf(" %10.4f", l->last_saturation());
                expect(l->last_saturation() >= 0 && l->last_saturation() <= 1, "a saturation between 0 and 1");
            }
            std::printf("\n");
        }
    }
    expect(last < first * 0.6, "the model to learn (loss down by 40%)");
    // The embeddings start at std 0.02, far inside tanh's linear part: nothing
    // saturates at step 0. Whatever saturates later, training put it there.
    return last;
}

int main() {
    // 1. One DyT layer, alpha = 2, inputs x ~ N(0, s^2). It saturates where
    // |alpha x| > 2, i.e. |x| > 1, with probability P(|x| > 1) = erfc(1 / (s sqrt 2)).
    DyT layer(64, /*alpha0=*/2.0, /*has_bias=*/false);
    layer.track_saturation(true, 2.0);
    Generator gen(12);
    std::printf("%8s %12s %12s\n", "tau", "saturation", "erfc(1/tau/sqrt2)");
    for (double s : {0.1, 0.5, 1.0, 2.0}) {
        NoGradGuard no_grad;
        layer.forward(raw::mul(raw::randn({512, 64}, gen), s));
        double expected = std::erfc(1.0 / (s * std::sqrt(2.0)));
        std::printf("%8.1f %12.4f %12.4f\n", s, layer.last_saturation(), expected);
        expect(std::fabs(layer.last_saturation() - expected) < 0.01, "the measured saturation to match the Gaussian tail");
    }

    // 2. A tiny GPT-2 with every norm replaced by DyT (alpha0 = 2, as in the
    // DyT regime study, every gain starting at 1 as in the DyT paper), trained
    // on one short text: the saturation of each DyT layer, read after the
    // step's forward pass. Then LayerNorm, and DyT again with the last DyT's
    // gain starting where its output is as large as a LayerNorm's.
    double dyt_loss = train_tiny_gpt2(NormKind::DyT, 1.0, gen);
    double ln_loss = train_tiny_gpt2(NormKind::LayerNorm, 1.0, gen);
    TransformerConfig gpt2 = gpt2_config();
    gpt2.dyt_alpha0 = 2.0;
    double matched_gain = gpt2.dyt_final_gamma_matching_layernorm();  // 1 / (alpha0 0.02 sqrt 2)
    double matched_loss = train_tiny_gpt2(NormKind::DyT, matched_gain, gen);
    std::printf("\nloss after 100 steps: DyT %.4f, LayerNorm %.4f, DyT with final gain %.2f: %.4f\n", dyt_loss, ln_loss,
                matched_gain, matched_loss);
    // Saturated layers pass almost no gradient (tanh' = 1 - tanh^2 is ~0 on the
    // flat parts), so this DyT model stalls where the LayerNorm one goes on.
    expect(ln_loss < dyt_loss, "the LayerNorm model to get further than the saturated DyT model");
    expect(matched_loss < dyt_loss / 2, "the DyT model with the matched final gain to get much further than with gain 1");
    // Where the DyT model at gain 1 stopped: predicting each byte by its frequency.
    double unigram = target_unigram_entropy();
    std::printf("entropy of the 64 target bytes' frequencies: %.4f nats\n", unigram);
    expect(std::fabs(dyt_loss - unigram) < 0.01, "the collapsed DyT model to sit at the byte-frequency entropy");
    std::printf("\nchapter 12: all checks passed\n");
    return 0;
}

