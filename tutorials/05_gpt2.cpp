// Chapter 5 — GPT-2. Built and run by `make test`: builds a small GPT-2,
// lists its parameters, runs forward + backward, and overfits one batch with
// plain gradient descent to show the whole pipeline learns.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "nn/decode.h"
#include "nn/generate.h"
#include "nn/models.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 5: expected %s\n", what);
        std::exit(1);
    }
}

int main() {
    // The `tiny` configuration of the benchmarks, with a byte vocabulary.
    TransformerConfig cfg = gpt2_config();
    cfg.n_layer = 2;
    cfg.n_embd = 64;
    cfg.n_head = 4;
    cfg.vocab_size = 256;
    cfg.block_size = 32;
    Generator gen(0);
    GPT2 model(cfg, gen);

    std::printf("GPT-2: L=%lld C=%lld H=%lld V=%lld T<=%lld\n", (long long)cfg.n_layer, (long long)cfg.n_embd,
                (long long)cfg.n_head, (long long)cfg.vocab_size, (long long)cfg.block_size);
    for (auto& [name, p] : model.named_parameters())
        if (name.rfind("h.1.", 0) != 0) std::printf("  %-24s %s\n", name.c_str(), shape_str(p.shape()).c_str());
    std::printf("  (h.1.* as h.0.*)\nparameters: %lld (closed form %lld)\n", (long long)model.num_parameters(),
                (long long)count_parameters(cfg));
    expect(model.num_parameters() == count_parameters(cfg), "the closed-form parameter count");

    // One batch: predict each next byte of a short text.
    std::string text = "the quick brown fox jumps over the lazy dog, then naps";
    int64_t B = 2, T = 24;
    std::vector<int64_t> in, out;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            in.push_back((unsigned char)text[b * 10 + t]);
            out.push_back((unsigned char)text[b * 10 + t + 1]);
        }
    Tensor ids = raw::from_indices(in, {B, T}), targets = raw::from_indices(out, {B, T});

    Tensor logits = model.forward(ids);  // [B, T, V]
    Tensor loss = cross_entropy(logits, targets);
    std::printf("logits %s, initial loss %.4f (log V = %.4f)\n", shape_str(logits.shape()).c_str(), loss.item(),
                std::log(256.0));
    expect(logits.shape() == Shape({B, T, 256}), "logits [B, T, V]");
    expect(std::fabs(loss.item() - std::log(256.0)) < 0.3, "an untrained model to guess uniformly");
    backward(loss);
    // The head is tied to wte: wte's gradient has a part from the lookup and a part from the output.
    std::printf("|dL/d wte| = %.4f, |dL/d h.0.attn.c_attn.weight| = %.4f\n",
                std::sqrt(raw::sum(raw::mul(model.wte->weight.grad(), model.wte->weight.grad())).item()),
                std::sqrt(raw::sum(raw::mul(model.blocks()[0]->attn->linears()[0]->weight.grad(),
                                            model.blocks()[0]->attn->linears()[0]->weight.grad())).item()));

    // Overfit the batch: 60 steps of gradient descent.
    double first = loss.item(), last = first;
    for (int step = 1; step <= 60; ++step) {
        model.zero_grad();
        Tensor l = cross_entropy(model.forward(ids), targets);
        backward(l);
        NoGradGuard no_grad;
        for (const Tensor& p : model.parameters()) raw::copy_(p, raw::sub(p, raw::mul(p.grad(), 0.3)));
        last = l.item();
        if (step % 20 == 0) std::printf("step %2d  loss %.4f\n", step, last);
    }
    expect(last < first / 2, "the model to memorize the batch (loss halved)");

    // Generating: the key/value cache gives the logits of the full forward
    // pass, one new position at a time.
    model.eval();
    NoGradGuard no_grad;
    std::vector<int64_t> sentence(in.begin(), in.begin() + T);
    Tensor full = model.forward(raw::from_indices(sentence, {1, T}));
    KVCache cache = model.make_cache(1);
    model.forward(raw::from_indices(std::vector<int64_t>(sentence.begin(), sentence.begin() + 4), {1, 4}), cache);
    double worst = 0;
    for (int64_t t = 4; t < T; ++t) {
        Tensor step = model.forward(raw::from_indices({sentence[t]}, {1, 1}), cache);
        worst = std::max(worst, raw::max(raw::abs(raw::sub(step, raw::narrow(full, 1, t, 1)))).item());
    }
    std::printf("cached logits vs the full forward pass, positions 4..%lld: largest difference %.1e\n",
                (long long)T - 1, worst);
    expect(worst < 1e-5, "the cache to give the full forward pass's logits");

    // The same tokens with and without the cache, and how many positions
    // each path runs through the model: 60 tokens after a 10-byte prompt,
    // with a block of 32 (the window moves by 16 when it is full).
    std::vector<int64_t> prompt(in.begin(), in.begin() + 10);
    Generator g1(5), g2(5);
    std::vector<int64_t> with = generate_tokens(model, prompt, 60, SampleOptions{0.8, 0, true}, g1);
    std::vector<int64_t> without = generate_tokens(model, prompt, 60, SampleOptions{0.8, 0, false}, g2);
    int64_t uncached = 0, cached = 0, moves = 0, previous_start = 0;
    for (int64_t n = 10; n < 70; ++n) {  // n tokens known, the next one to predict
        int64_t start = context_start(n, cfg.block_size);
        uncached += n - start;  // the whole window, every step
        bool refill = n == 10 || start != previous_start;
        cached += refill ? n - start : 1;
        moves += refill && n > 10;
        previous_start = start;
    }
    std::printf("60 tokens: the same with and without the cache: %s; positions run: %lld without, %lld with "
                "(%lld window moves)\n",
                with == without ? "yes" : "no", (long long)uncached, (long long)cached, (long long)moves);
    expect(with == without, "the cached and uncached paths to sample the same tokens");

    // The one-token decoder (nn/decode.h) runs the same kernels on buffers
    // it made once: the same logits as the model's cached forward, bit for bit.
    KVCache theirs = model.make_cache(1), ours = model.make_cache(1);
    std::vector<int64_t> first_four(sentence.begin(), sentence.begin() + 4);
    model.forward(raw::from_indices(first_four, {1, 4}), theirs);
    model.forward(raw::from_indices(first_four, {1, 4}), ours);
    TokenDecoder decoder(model, ours);
    int64_t identical = 0;
    for (int64_t t = 4; t < T; ++t)
        identical += decoder.step(sentence[t]) == model.forward(raw::from_indices({sentence[t]}, {1, 1}), theirs).to_vector();
    std::printf("one-token decoder vs the model's cached forward, positions 4..%lld: %lld of %lld the same to the last bit\n",
                (long long)T - 1, (long long)identical, (long long)T - 4);
    expect(identical == T - 4, "the decoder to give the model's own logits");
    std::cout << "chapter 5: all checks passed\n";
    return 0;
}
