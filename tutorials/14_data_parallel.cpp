// Chapter 14 — data parallelism. Built and run by `make test`: the fact that
// data-parallel training rests on, checked in one process. The gradient of
// a batch's mean loss is the mean of the gradients of its equal parts, so N
// ranks that each take B of N x B examples and average their gradients take
// exactly the step of one process with the whole batch. With unequal parts
// the plain mean is wrong and only the size-weighted one is right.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nn/models.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 14: expected %s\n", what);
        std::exit(1);
    }
}

// Every parameter's gradient after backward of the mean loss over rows
// [from, from + count) of the batch, flattened into one vector.
static std::vector<double> gradient(GPT2& model, const Tensor& ids, const Tensor& targets, int64_t from, int64_t count) {
    for (Tensor& p : model.parameters()) p.zero_grad();
    Tensor logits = model.forward(raw::narrow(ids, 0, from, count));
    backward(cross_entropy(logits, raw::narrow(targets, 0, from, count)));
    std::vector<double> all;
    for (const Tensor& p : model.parameters()) {
        std::vector<double> g = p.grad().to_vector();
        all.insert(all.end(), g.begin(), g.end());
    }
    return all;
}

static double largest(const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
}

static double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

int main() {
    TransformerConfig cfg = gpt2_config();
    cfg.n_layer = 2;
    cfg.n_embd = 32;
    cfg.n_head = 2;
    cfg.vocab_size = 256;
    cfg.block_size = 16;
    Generator gen(0);
    GPT2 model(cfg, gen, Options{kFloat64, kCPU});  // float64: the differences below are rounding only

    // A batch of 8 sequences of 16 bytes, and its next-byte targets.
    const std::string text = "Data parallelism: every rank trains on its own rows of one batch, then they agree.";
    int64_t B = 8, T = 16;
    std::vector<int64_t> in, out;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            in.push_back((unsigned char)text[b * 8 + t]);
            out.push_back((unsigned char)text[b * 8 + t + 1]);
        }
    Tensor ids = raw::from_indices(in, {B, T}), targets = raw::from_indices(out, {B, T});

    std::vector<double> full = gradient(model, ids, targets, 0, 8);
    std::printf("%zu gradient entries; the largest, of the batch of 8: %.6f\n", full.size(), largest(full));

    // Two "ranks" with 4 rows each: the mean of their gradients.
    std::vector<double> a = gradient(model, ids, targets, 0, 4), b = gradient(model, ids, targets, 4, 4), mean(full.size());
    for (size_t i = 0; i < full.size(); ++i) mean[i] = (a[i] + b[i]) / 2;
    double equal = largest_difference(mean, full);
    std::printf("2 ranks x 4 rows, the mean of their gradients: largest difference from the batch's %.1e\n", equal);
    expect(equal < 1e-12, "the mean of two equal halves' gradients to be the batch's gradient");

    // Unequal parts, 3 and 5 rows: each rank's loss is a mean over its own
    // rows, so the plain mean over-weights the rows of the smaller part.
    std::vector<double> c = gradient(model, ids, targets, 0, 3), d = gradient(model, ids, targets, 3, 5);
    std::vector<double> plain(full.size()), weighted(full.size());
    for (size_t i = 0; i < full.size(); ++i) {
        plain[i] = (c[i] + d[i]) / 2;
        weighted[i] = (3 * c[i] + 5 * d[i]) / 8;
    }
    double wrong = largest_difference(plain, full), right = largest_difference(weighted, full);
    std::printf("3 + 5 rows: plain mean off by %.1e, weighted by 3/8 and 5/8 off by %.1e\n", wrong, right);
    expect(wrong > 1e-4 && right < 1e-12, "unequal parts to need the weighted mean");
    std::printf("chapter 14: all checks passed\n");
    return 0;
}
