// Chapter 6 — Llama-style: RMSNorm, RoPE, SwiGLU, grouped-query attention.
// Built and run by `make test`.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "nn/models.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 6: expected %s\n", what);
        std::exit(1);
    }
}

int main() {
    TransformerConfig cfg = llama_config();
    cfg.n_layer = 2;
    cfg.n_embd = 64;
    cfg.n_head = 4;
    cfg.n_kv_head = 2;  // grouped-query: each key/value head serves 2 query heads
    cfg.vocab_size = 256;
    cfg.block_size = 32;
    cfg.swiglu_multiple = 32;
    Generator gen(0);
    Llama model(cfg, gen);
    for (auto& [name, p] : model.named_parameters())
        if (name.find("layers.1.") == std::string::npos) std::printf("  %-44s %s\n", name.c_str(), shape_str(p.shape()).c_str());
    int64_t hidden = swiglu_hidden(64, 32);
    std::printf("SwiGLU hidden size for C=64: int(2*4*64/3) = 170, rounded up to a multiple of 32 = %lld\n", (long long)hidden);
    expect(hidden == 192, "Llama's hidden-size rule");
    expect(model.blocks()[0]->attn->linears()[1]->weight.shape() == Shape({32, 64}), "k_proj: 2 kv heads of 16 -> [32, 64]");
    std::printf("parameters: %lld (closed form %lld)\n", (long long)model.num_parameters(), (long long)count_parameters(cfg));
    expect(model.num_parameters() == count_parameters(cfg), "the closed-form count");

    // RoPE: a query and a key rotated by their positions give a score that
    // depends only on the distance between them.
    RopeTables tables = rope_tables(8, 16, cfg.rope_theta, kFloat64);
    Generator g(1);
    Tensor q = raw::expand(raw::randn({1, 16}, g, kFloat64), {8, 16}), k = raw::expand(raw::randn({1, 16}, g, kFloat64), {8, 16});
    Tensor scores = raw::matmul(apply_rope(q, tables), raw::transpose(apply_rope(k, tables), 0, 1));
    std::vector<double> s = scores.to_vector();
    std::printf("q at 5 . k at 3 = %.6f, q at 7 . k at 5 = %.6f (both distance 2)\n", s[5 * 8 + 3], s[7 * 8 + 5]);
    expect(std::fabs(s[5 * 8 + 3] - s[7 * 8 + 5]) < 1e-12, "RoPE scores to depend on the distance only");

    // Forward, backward, and a causal check.
    Tensor ids = raw::from_indices({104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33}, {1, 12});
    Tensor targets = raw::from_indices({101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}, {1, 12});
    Tensor logits = model.forward(ids);
    Tensor loss = cross_entropy(logits, targets);
    backward(loss);
    std::printf("loss %.4f; |dL/d q_proj(0)| = %.5f\n", loss.item(),
                std::sqrt(raw::sum(raw::mul(model.blocks()[0]->attn->linears()[0]->weight.grad(),
                                            model.blocks()[0]->attn->linears()[0]->weight.grad())).item()));
    Tensor changed = raw::clone(ids);
    raw::fill_(raw::narrow(changed, 1, 8, 4), 65);  // change the last four tokens
    Tensor logits2 = model.forward(changed);
    double diff = raw::max(raw::abs(raw::sub(raw::narrow(logits2, 1, 0, 8), raw::narrow(logits, 1, 0, 8)))).item();
    std::printf("changing tokens 8..11 changes logits 0..7 by at most %.1e\n", diff);
    expect(diff == 0, "causal attention: earlier positions never see later tokens");

    // The key/value cache keeps the 2 key/value heads only, rotated by RoPE
    // at their absolute positions; the logits equal the full forward pass's.
    NoGradGuard no_grad;
    KVCache cache = model.make_cache(1);
    model.forward(raw::narrow(ids, 1, 0, 5), cache);
    double worst = 0;
    for (int64_t t = 5; t < 12; ++t) {
        Tensor step = model.forward(raw::narrow(ids, 1, t, 1), cache);
        worst = std::max(worst, raw::max(raw::abs(raw::sub(step, raw::narrow(logits, 1, t, 1)))).item());
    }
    std::printf("key/value cache of a layer: k %s (H_kv = 2 of 4 heads, %lld positions); cached logits 5..11 differ "
                "from the full forward pass by at most %.1e\n",
                shape_str(cache.layers[0].k.shape()).c_str(), (long long)cache.capacity, worst);
    expect(cache.layers[0].k.shape() == Shape({1, 2, 32, 16}), "the cache to hold the kv heads only");
    expect(worst < 1e-5, "cached logits to equal the full forward pass");
    std::cout << "chapter 6: all checks passed\n";
    return 0;
}
