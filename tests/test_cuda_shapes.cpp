// The CUDA backend against the CPU on large and awkward shapes, element by
// element (a scale-relative tolerance would let small values pass with large
// relative errors). Without a usable GPU every case returns at once.
#include <cstdlib>

#include "cuda_helpers.h"
#include "autograd/ops_nn.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "tensor/raw_nn.h"
#include "tensor/ops/adamw.h"

using namespace nc;
using nc_test::gpu_or_skip;
using nc_test::on_gpu;
using nc_test::randn;

namespace {
// Element by element, relative: |gpu - cpu| <= tol * (|cpu| + floor). A
// global max(1, max|v|) scale lets small values (gradients near 1e-3) pass
// with large relative errors; this does not.
void same_each(const Tensor& cpu, const Tensor& gpu, double tol, double floor = 1e-6) {
    REQUIRE(cpu.shape() == gpu.shape());
    std::vector<double> a = cpu.to_vector(), b = gpu.to_vector();
    double worst = 0;
    size_t where = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        double r = std::abs(a[i] - b[i]) / (std::abs(a[i]) + floor);
        if (r > worst) worst = r, where = i;
    }
    INFO("largest relative difference " << worst << " at element " << where);
    CHECK(worst <= tol);
}
}  // namespace

// Shapes beyond the common ones: rows longer than a 256-thread
// block, more than 65,535 rows, more elements than one grid-stride pass,
// float64 on the GPU, indexing on a middle dim, an uneven batch of matmuls,
// and the geodesic update at tiny angles and at x = 0.
TEST_CASE("cuda: large and awkward shapes equal the CPU, element by element", "[cuda][shapes]") {
    if (!gpu_or_skip()) return;
    // 70,000 rows of 1,000: reductions, softmax and the norms.
    Tensor x = randn({70000, 1000}, 40), gx = on_gpu(x);
    same_each(raw::sum(x, {1}), raw::sum(gx, {1}), 1e-4, 1e-2);
    same_each(raw::max(x, {1}), raw::max(gx, {1}), 0);
    CHECK(raw::argmax(gx, 1).to_int_vector() == raw::argmax(x, 1).to_int_vector());
    same_each(raw::softmax(x, -1), raw::softmax(gx, -1), 1e-4, 1e-7);
    Tensor gamma = randn({1000}, 41), beta = randn({1000}, 42);
    same_each(raw::layer_norm(x, gamma, beta, 1e-5).out, raw::layer_norm(gx, on_gpu(gamma), on_gpu(beta), 1e-5).out, 1e-4, 1e-2);
    same_each(raw::rms_norm(x, gamma, 1e-5).out, raw::rms_norm(gx, on_gpu(gamma), 1e-5).out, 1e-4, 1e-2);
    same_each(raw::sum(x, {0}), raw::sum(gx, {0}), 1e-4, 1e-1);
    // float64 on the GPU: GEMM, attention, a norm.
    Generator g(43);
    Tensor a = raw::randn({3, 70, 50}, g, kFloat64), b = raw::randn({3, 50, 40}, g, kFloat64);
    same_each(raw::matmul(a, b), raw::matmul(on_gpu(a), on_gpu(b)), 1e-10, 1e-6);
    Tensor q = raw::randn({2, 3, 33, 16}, g, kFloat64), k = raw::randn({2, 3, 33, 16}, g, kFloat64),
           v = raw::randn({2, 3, 33, 24}, g, kFloat64);
    same_each(raw::attention(q, k, v, true, 0.25).out, raw::attention(on_gpu(q), on_gpu(k), on_gpu(v), true, 0.25).out, 1e-10, 1e-6);
    Tensor x64 = raw::randn({300, 700}, g, kFloat64), gamma64 = raw::randn({700}, g, kFloat64);
    same_each(raw::rms_norm(x64, gamma64, 1e-6).out, raw::rms_norm(on_gpu(x64), on_gpu(gamma64), 1e-6).out, 1e-10, 1e-6);
    // Indexing on a middle dim, gather and scatter_add.
    Tensor t = randn({4, 9, 5}, 44);
    Tensor idx = raw::from_indices({8, 0, 3, 3}, {4});
    same_each(raw::index_select(t, 1, idx), raw::index_select(on_gpu(t), 1, on_gpu(idx)), 0);
    Tensor gidx = raw::from_indices(std::vector<int64_t>(4 * 2 * 5, 7), {4, 2, 5});
    same_each(raw::gather(t, 1, gidx), raw::gather(on_gpu(t), 1, on_gpu(gidx)), 0);
    Tensor src = randn({4, 2, 5}, 45);
    same_each(raw::scatter_add({4, 9, 5}, 1, gidx, src), raw::scatter_add({4, 9, 5}, 1, on_gpu(gidx), on_gpu(src)), 1e-5, 1e-2);
    // A batch of matmuls whose operands are not evenly spaced (a gathered view).
    Tensor big = randn({5, 12, 7}, 46), right = randn({7, 6}, 47);
    Tensor uneven = raw::index_select(big, 0, raw::from_indices({4, 0, 2}, {3}));
    same_each(raw::matmul(uneven, right), raw::matmul(on_gpu(uneven), on_gpu(right)), 1e-5, 1e-1);
    // The geodesic update at tiny angles (its series branch) and with u = 0.
    Tensor xs = randn({6, 32}, 48), us = raw::mul(randn({6, 32}, 49), 1e-9), alpha = raw::full({1}, 0.5);
    same_each(raw::geodesic_update(xs, us, alpha), raw::geodesic_update(on_gpu(xs), on_gpu(us), on_gpu(alpha)), 1e-5, 1e-2);
    Tensor zero_u = raw::zeros({6, 32});
    same_each(raw::geodesic_update(xs, zero_u, alpha), raw::geodesic_update(on_gpu(xs), on_gpu(zero_u), on_gpu(alpha)), 1e-5, 1e-2);
}

TEST_CASE("cuda: the split reductions, column sums, block-per-row argmax and merged indexing", "[cuda][shapes]") {
    if (!gpu_or_skip()) return;
    // A full sum (one row of 3M: split into chunks) and a few long rows.
    Tensor flat = randn({3000000}, 50), rows = randn({5, 200000}, 51);
    same_each(raw::sum(flat), raw::sum(on_gpu(flat)), 1e-5, 1e-1);
    same_each(raw::sum(rows, {1}), raw::sum(on_gpu(rows), {1}), 1e-5, 1e-1);
    same_each(raw::sum(raw::mul(flat, flat)), raw::sum(on_gpu(raw::mul(flat, flat))), 1e-6);  // clip_grad_norm's sum
    // Column sums of every kind of shape: wide, narrow and tall, one row, no rows.
    for (const Shape& s : std::vector<Shape>{{8192, 768}, {3, 33}, {100000, 5}, {1, 1000}, {65, 31}, {0, 7}}) {
        INFO("shape " << shape_str(s));
        Tensor m = randn(s, 52);
        same_each(raw::sum(m, {0}), raw::sum(on_gpu(m), {0}), 1e-5, 1e-1);
    }
    // The norms' parameter gradients (two-pass column sums) at a GPT-2 shape.
    Tensor x = randn({8192, 768}, 53), dy = randn({8192, 768}, 54), gamma = randn({768}, 55), beta = randn({768}, 56);
    raw::NormForward f = raw::layer_norm(x, gamma, beta, 1e-5);
    raw::NormForward gf = raw::layer_norm(on_gpu(x), on_gpu(gamma), on_gpu(beta), 1e-5);
    raw::NormBackward b = raw::layer_norm_backward(dy, x, gamma, beta, f);
    raw::NormBackward gb = raw::layer_norm_backward(on_gpu(dy), on_gpu(x), on_gpu(gamma), on_gpu(beta), gf);
    same_each(b.dgamma, gb.dgamma, 1e-4, 1e-1);
    same_each(b.dbeta, gb.dbeta, 1e-4, 1e-1);
    raw::NormForward rf = raw::rms_norm(x, gamma, 1e-5), grf = raw::rms_norm(on_gpu(x), on_gpu(gamma), 1e-5);
    same_each(raw::rms_norm_backward(dy, x, gamma, rf).dgamma,
              raw::rms_norm_backward(on_gpu(dy), on_gpu(x), on_gpu(gamma), grf).dgamma, 1e-4, 1e-1);
    // Argmax over long rows keeps the CPU's rules: the first of equal
    // maxima, the first NaN, and a row of -inf answers 0.
    std::vector<double> drawn = randn({4, 50257}, 57).to_vector();
    std::vector<float> vals(drawn.begin(), drawn.end());
    vals[300] = vals[40000] = 9.0f;                                      // row 0: a tie
    vals[50257 + 2000] = vals[50257 + 4500] = NAN;                      // row 1: two NaNs
    vals[50257 + 100] = 9.0f;
    for (int64_t i = 0; i < 50257; ++i) vals[2 * 50257 + i] = -INFINITY;  // row 2
    Tensor logits = raw::from_vector(vals, {4, 50257});
    std::vector<int64_t> arg = raw::argmax(on_gpu(logits), 1).to_int_vector();
    CHECK(arg == raw::argmax(logits, 1).to_int_vector());
    CHECK(arg[0] == 300);
    CHECK(arg[1] == 2000);
    CHECK(arg[2] == 0);
    // Elementwise ops on views whose dims merge (contiguous, a size-1 dim,
    // broadcast) and on ones that do not (a permutation, a middle slice).
    Tensor t = randn({6, 1, 40, 50}, 58), row = randn({50}, 59);
    same_each(raw::add(t, row), raw::add(on_gpu(t), on_gpu(row)), 0);
    Tensor p = raw::permute(t, {3, 1, 0, 2}), gp = raw::permute(on_gpu(t), {3, 1, 0, 2});
    same_each(raw::contiguous(p), raw::contiguous(gp), 0);
    Tensor n = raw::narrow(t, 2, 5, 30), gn = raw::narrow(on_gpu(t), 2, 5, 30);
    same_each(raw::mul(n, n), raw::mul(gn, gn), 0);
    same_each(raw::exp(raw::expand(raw::reshape(row, {1, 50}), {70, 50})),
              raw::exp(raw::expand(raw::reshape(on_gpu(row), {1, 50}), {70, 50})), 1e-6);
}
