// Mixed precision: linear() and attention with 16-bit operands, a model's
// precision policy (TransformerModel::set_precision), and float16's dynamic
// loss scaling (optim/loss_scaler.h) inside train_step.
//
// The references are independent of the code under test: products of the
// rounded values computed in float64, and float16's range limits written
// out as numbers.
#include "helpers.h"
#include "nn/models.h"
#include "optim/loss_scaler.h"
#include "train/train_step.h"

#include <cmath>

using namespace nc;
using namespace nc::nn;
using nc_test::check_error;
using nc_test::check_values;

namespace {

// The float64 values of `t` rounded to `dtype` (exactly what a 16-bit tensor holds).
std::vector<double> rounded(const Tensor& t, DType dtype) {
    return raw::to_dtype(raw::to_dtype(t, dtype), kFloat64).to_vector();
}

// C [M, N] = A [M, K] B [K, N], with B given as element (p, j) at b[p * b_rs + j * b_cs], in float64.
std::vector<double> product(const std::vector<double>& a, const std::vector<double>& b, int64_t M, int64_t K,
                            int64_t N, int64_t b_rs, int64_t b_cs) {
    std::vector<double> c(M * N);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
            for (int64_t p = 0; p < K; ++p) c[i * N + j] += a[i * K + p] * b[p * b_rs + j * b_cs];
    return c;
}

std::vector<double> transposed(const std::vector<double>& a, int64_t rows, int64_t cols) {
    std::vector<double> t(a.size());
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
    return t;
}

TransformerConfig small(TransformerConfig c) {
    c.n_layer = 2;
    c.n_embd = 32;
    c.n_head = 4;
    c.vocab_size = 64;
    c.block_size = 12;
    c.swiglu_multiple = 8;
    c.image_size = 8;
    c.patch_size = 4;
    c.num_classes = 5;
    return c;
}

// A float32 model of `c` from `seed` (nn::make_model picks the family).
std::shared_ptr<TransformerModel> make(const TransformerConfig& c, uint64_t seed) {
    Generator gen(seed);
    return make_model(c, gen);
}

// A fixed language-model batch: ids [2, 12] and their next tokens.
std::pair<Tensor, Tensor> batch() {
    std::vector<int64_t> ids, next;
    for (int64_t i = 0; i < 24; ++i) {
        ids.push_back((i * 7 + 3) % 64);
        next.push_back((i * 7 + 10) % 64);
    }
    return {raw::from_indices(ids, {2, 12}), raw::from_indices(next, {2, 12})};
}

// Every Linear below `m`, with its name.
void linears(const Module& m, const std::string& name, std::vector<std::pair<std::string, const Linear*>>& out) {
    if (auto* layer = dynamic_cast<const Linear*>(&m)) out.push_back({name, layer});
    for (const auto& [child, module] : m.children()) linears(*module, name + "." + child, out);
}

}  // namespace

TEST_CASE("linear with 16-bit operands: forward and backward are the products of the rounded values",
          "[half][mixed]") {
    Generator gen(41);
    const int64_t M = 6, K = 37, N = 5;  // K odd: the bfloat16 pairs end with a half pair
    for (DType dtype : {kBFloat16, kFloat16}) {
        INFO(dtype_name(dtype));
        Tensor x = raw::randn({2, 3, K}, gen), w = raw::randn({N, K}, gen), b = raw::randn({N}, gen);
        Tensor r = raw::randn({2, 3, N}, gen);  // the upstream gradient G of loss = sum(y * R)
        x.set_requires_grad(true);
        w.set_requires_grad(true);
        b.set_requires_grad(true);
        Tensor y = linear(x, w, b, dtype);
        REQUIRE(y.dtype() == kFloat32);
        backward(sum(y * r));

        std::vector<double> xr = rounded(x, dtype), wr = rounded(w, dtype), gr = rounded(r, dtype);
        std::vector<double> bias = b.to_vector(), rv = r.to_vector();
        // y = round(x) round(w)^T + b; w^T (p, j) = w[j][p]: row stride 1, column stride K.
        std::vector<double> expected_y = product(xr, wr, M, K, N, 1, K);
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) expected_y[i * N + j] += bias[j];
        // A float32 sum of 37 products of size ~1: a few 1e-6.
        check_values(y, expected_y, 2e-5);
        // dX = round(G) round(w) [M, K]; dw = round(G)^T round(X) [N, K]; db = column sums of G (not rounded).
        check_values(x.grad(), product(gr, wr, M, N, K, K, 1), 2e-5);
        check_values(w.grad(), product(transposed(gr, M, N), xr, N, M, K, K, 1), 2e-5);
        std::vector<double> db(N);
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) db[j] += rv[i * N + j];
        check_values(b.grad(), db, 1e-5);
        // The rounding is really there: the float32 products differ by far more than the tolerance.
        std::vector<double> x32 = x.to_vector(), w32 = w.to_vector(), y32 = product(x32, w32, M, K, N, 1, K);
        double largest = 0;
        for (int64_t i = 0; i < M * N; ++i) largest = std::max(largest, std::fabs(y32[i] + bias[i % N] - expected_y[i]));
        CHECK(largest > 1e-3);
    }
    // float32 operands: exactly the plain linear.
    Tensor x = raw::randn({4, 8}, gen), w = raw::randn({3, 8}, gen);
    check_values(linear(x, w, Tensor(), kFloat32), linear(x, w).to_vector(), 0);
    check_error([&] { linear(raw::to_dtype(x, kFloat64), raw::to_dtype(w, kFloat64), Tensor(), kBFloat16); },
                {"linear", "float64 operands and bfloat16"});
}

namespace {

// Attention in float64, written out: P = softmax(scale q k^T, keys j > i
// masked when causal), out = P v, one head n at a time; q [N, T, D],
// k [N, S, D], v [N, S, Dv] as flat float64 vectors.
struct AttentionReference {
    int64_t N, T, S, D, Dv;
    bool causal;
    double scale;
    std::vector<double> q, k, v;

    std::vector<double> probs(int64_t n) const {  // [T, S]
        std::vector<double> p(T * S, 0.0);
        for (int64_t i = 0; i < T; ++i) {
            int64_t visible = causal ? i + 1 : S;
            double m = -INFINITY, total = 0;
            for (int64_t j = 0; j < visible; ++j) {
                double s = 0;
                for (int64_t d = 0; d < D; ++d) s += q[(n * T + i) * D + d] * k[(n * S + j) * D + d];
                p[i * S + j] = scale * s;
                m = std::max(m, scale * s);
            }
            for (int64_t j = 0; j < visible; ++j) total += (p[i * S + j] = std::exp(p[i * S + j] - m));
            for (int64_t j = 0; j < visible; ++j) p[i * S + j] /= total;
        }
        return p;
    }
    std::vector<double> out() const {
        std::vector<double> o(N * T * Dv, 0.0);
        for (int64_t n = 0; n < N; ++n) {
            std::vector<double> p = probs(n);
            for (int64_t i = 0; i < T; ++i)
                for (int64_t j = 0; j < S; ++j)
                    for (int64_t e = 0; e < Dv; ++e) o[(n * T + i) * Dv + e] += p[i * S + j] * v[(n * S + j) * Dv + e];
        }
        return o;
    }
    // The gradients for dout, with D_i = <dout_i, kept_out_i> (the softmax
    // backward's row sum, from the output backward was given):
    //   dv = P^T dout,  ds_ij = p_ij (<dout_i, v_j> - D_i),  dq = scale ds k,  dk = scale ds^T q.
    std::vector<std::vector<double>> grads(const std::vector<double>& dout, const std::vector<double>& kept_out) const {
        std::vector<double> dq(N * T * D, 0.0), dk(N * S * D, 0.0), dv(N * S * Dv, 0.0);
        for (int64_t n = 0; n < N; ++n) {
            std::vector<double> p = probs(n);
            for (int64_t i = 0; i < T; ++i) {
                const double* g = &dout[(n * T + i) * Dv];
                double row_dot = 0;
                for (int64_t e = 0; e < Dv; ++e) row_dot += g[e] * kept_out[(n * T + i) * Dv + e];
                for (int64_t j = 0; j < S; ++j) {
                    double pij = p[i * S + j], dp = 0;
                    for (int64_t e = 0; e < Dv; ++e) {
                        dp += g[e] * v[(n * S + j) * Dv + e];
                        dv[(n * S + j) * Dv + e] += pij * g[e];
                    }
                    double ds = scale * pij * (dp - row_dot);
                    for (int64_t d = 0; d < D; ++d) {
                        dq[(n * T + i) * D + d] += ds * k[(n * S + j) * D + d];
                        dk[(n * S + j) * D + d] += ds * q[(n * T + i) * D + d];
                    }
                }
            }
        }
        return {dq, dk, dv};
    }
};

double largest(const std::vector<double>& a) {
    double m = 0;
    for (double x : a) m = std::max(m, std::fabs(x));
    return m;
}

// Every Attention below `m`.
void attentions(const Module& m, std::vector<const Attention*>& out) {
    if (auto* a = dynamic_cast<const Attention*>(&m)) out.push_back(a);
    for (const auto& [child, module] : m.children()) attentions(*module, out);
}

}  // namespace

TEST_CASE("attention with 16-bit operands: float32 attention of the rounded q, k, v; backward from a 16-bit output",
          "[half][mixed][attention]") {
    Generator gen(21);
    // 150 queries and 170 keys: two query tiles and two key tiles of the CPU kernel.
    for (DType dtype : {kBFloat16, kFloat16})
        for (bool causal : {true, false}) {
            const int64_t N = 3, T = 150, S = causal ? 150 : 170, D = 16, Dv = 16;
            const double scale = 0.3;
            INFO(dtype_name(dtype) << (causal ? " causal" : " full"));
            Tensor q = raw::randn({N, T, D}, gen), k = raw::randn({N, S, D}, gen), v = raw::randn({N, S, Dv}, gen);
            Tensor q16 = raw::to_dtype(q, dtype), k16 = raw::to_dtype(k, dtype), v16 = raw::to_dtype(v, dtype);
            AttentionReference ref{N, T, S, D, Dv, causal, scale, rounded(q, dtype), rounded(k, dtype), rounded(v, dtype)};

            raw::AttentionForward f = raw::attention(q16, k16, v16, causal, scale);
            REQUIRE(f.out.dtype() == kFloat32);
            REQUIRE(f.logsumexp.dtype() == kFloat32);
            std::vector<double> out = ref.out();
            check_values(f.out, out, 1e-5 * largest(out));

            // Backward from the output rounded to 16 bits, as the op keeps it.
            Tensor dout = raw::randn({N, T, Dv}, gen), out16 = raw::to_dtype(f.out, dtype);
            raw::AttentionBackward d = raw::attention_backward(dout, q16, k16, v16, {out16, f.logsumexp}, causal, scale);
            REQUIRE(d.dq.dtype() == kFloat32);
            auto want = ref.grads(dout.to_vector(), rounded(f.out, dtype));
            check_values(d.dq, want[0], 1e-5 * largest(want[0]));
            check_values(d.dk, want[1], 1e-5 * largest(want[1]));
            check_values(d.dv, want[2], 1e-5 * largest(want[2]));
            // The 16-bit output costs about the operands' own rounding: the
            // exact softmax row sums move dq by a few units of 2^-9, no more.
            auto exact = ref.grads(dout.to_vector(), out);
            std::vector<double> dq = d.dq.to_vector();
            double moved = 0;
            for (size_t i = 0; i < dq.size(); ++i) moved = nc_test::worst_of(moved, std::fabs(dq[i] - exact[0][i]));
            CHECK(moved > 1e-4 * largest(exact[0]));
            CHECK(moved < 0.02 * largest(exact[0]));

            // The differentiable op: rounds float32 q, k, v itself, returns
            // float32, and its gradients are the raw backward's, bit for bit.
            Tensor qg = raw::to_dtype(q, kFloat32).set_requires_grad(true), kg = k.detach().set_requires_grad(true),
                   vg = v.detach().set_requires_grad(true);
            Tensor y = scaled_dot_product_attention(qg, kg, vg, causal, scale, dtype);
            check_values(y, f.out.to_vector(), 0);
            backward(sum(y * dout));
            check_values(qg.grad(), d.dq.to_vector(), 0);
            check_values(kg.grad(), d.dk.to_vector(), 0);
            check_values(vg.grad(), d.dv.to_vector(), 0);
        }
    Tensor x = raw::randn({1, 4, 8}, gen);
    check_error([&] { scaled_dot_product_attention(raw::to_dtype(x, kFloat64), x, x, true, 0, kBFloat16); },
                {"attention", "float64 operands and bfloat16"});
    check_error([&] { raw::attention(raw::to_dtype(x, kBFloat16), x, x, true, 0.3); },
                {"attention: q, k, v must share a floating dtype, got bfloat16, float32, float32"});
    raw::AttentionForward f = raw::attention(raw::to_dtype(x, kBFloat16), raw::to_dtype(x, kBFloat16),
                                             raw::to_dtype(x, kBFloat16), true, 0.3);
    check_error([&] { raw::attention_backward(raw::to_dtype(f.out, kBFloat16), raw::to_dtype(x, kBFloat16),
                                              raw::to_dtype(x, kBFloat16), raw::to_dtype(x, kBFloat16), f, true, 0.3); },
                {"attention_backward: the gradient is bfloat16 on cpu, the inputs bfloat16 on cpu"});
}

TEST_CASE("a model's precision reaches every linear layer and the tied head; logits stay close", "[half][mixed][models]") {
    for (TransformerConfig c : {small(gpt2_config()), small(llama_config())}) {
        INFO(to_string(c.family));
        auto model = make(c, 3);
        auto [ids, next] = batch();
        Tensor full = model->forward(ids);
        model->set_precision(kBFloat16);
        CHECK(model->precision() == kBFloat16);
        std::vector<std::pair<std::string, const Linear*>> found;
        linears(*model, "model", found);
        REQUIRE((int64_t)found.size() >= 2 * c.n_layer);
        for (const auto& [name, layer] : found) {
            INFO(name);
            CHECK(layer->operand_dtype == kBFloat16);
        }
        std::vector<const Attention*> attention_layers;
        attentions(*model, attention_layers);
        REQUIRE((int64_t)attention_layers.size() == c.n_layer);
        for (const Attention* a : attention_layers) CHECK(a->operand_dtype == kBFloat16);
        Tensor mixed = model->forward(ids);
        // bfloat16 keeps 8 significant bits: the logits move by about 2^-8 of their size, not more.
        std::vector<double> a = full.to_vector(), b = mixed.to_vector();
        double worst = 0, size = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            worst = nc_test::worst_of(worst, std::fabs(a[i] - b[i]));
            size = std::max(size, std::fabs(a[i]));
        }
        CHECK(worst > 0);
        CHECK(worst < 0.05 * size);
        model->set_precision(kFloat32);
        check_values(model->forward(ids), a, 0);
        check_error([&] { model->set_precision(kFloat64); }, {"set_precision", "float64"});
    }
    // The tied head (logits = h E^T, not a Linear module) follows the policy
    // too: with every Linear back to float32 and only the model's precision
    // left at bfloat16, the logits still change.
    auto model = make(small(gpt2_config()), 4);
    auto [ids, next] = batch();
    Tensor plain = model->forward(ids);
    model->set_precision(kBFloat16);
    set_linear_operand_dtype(*model, kFloat32);
    set_attention_operand_dtype(*model, kFloat32);
    std::vector<double> a = plain.to_vector(), b = model->forward(ids).to_vector();
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = nc_test::worst_of(worst, std::fabs(a[i] - b[i]));
    CHECK(worst > 0);
    CHECK(worst < 0.05);
}

TEST_CASE("loss scaler: unscales exactly, skips and backs off on inf or NaN, grows after its interval",
          "[half][mixed][optim]") {
    Tensor p = raw::zeros({3});
    p.set_requires_grad(true);
    optim::LossScaler scaler(1024, 3);
    auto set_grad = [&](std::vector<double> g) { p.set_grad(raw::from_vector(g, {3})); };
    set_grad({1024, -512, 3});
    CHECK(scaler.unscale_and_update({p}));
    check_values(p.grad(), {1, -0.5, 3.0 / 1024}, 0);  // a power of 2: exact
    CHECK(scaler.scale() == 1024);
    set_grad({1, INFINITY, 0});
    CHECK_FALSE(scaler.unscale_and_update({p}));
    CHECK(scaler.scale() == 512);
    CHECK(scaler.skipped_steps() == 1);
    set_grad({NAN, 0, 0});
    CHECK_FALSE(scaler.unscale_and_update({p}));
    CHECK(scaler.scale() == 256);
    // Three good steps in a row: the scale doubles, and the count starts again.
    for (int i = 0; i < 3; ++i) {
        set_grad({1, 2, 3});
        CHECK(scaler.unscale_and_update({p}));
    }
    CHECK(scaler.scale() == 512);
    CHECK(scaler.good_steps_in_a_row() == 0);
    // Large but finite gradients are finite: the check cannot overflow.
    set_grad({3e38, 3e38, 3e38});
    CHECK(optim::all_gradients_finite({p}));
    set_grad({-INFINITY, 0, 0});
    CHECK_FALSE(optim::all_gradients_finite({p}));
    check_error([] { optim::LossScaler bad(0); }, {"LossScaler", "scale > 0"});
    check_error([&] { scaler.restore(-1, 0, 0); }, {"LossScaler", "cannot restore"});
}

TEST_CASE("float16: a small gradient vanishes without loss scaling and survives with it", "[half][mixed]") {
    // float16's smallest subnormal is 2^-24 (about 6e-8): an upstream gradient
    // of 1e-8 rounds to 0 in the linear layer's backward, so w gets no
    // gradient; scaled by 2^16 it is 6.6e-4, well inside the range.
    Tensor x = raw::ones({1, 4}), w = raw::ones({2, 4});
    w.set_requires_grad(true);
    backward(sum(linear(x, w, Tensor(), kFloat16)) * 1e-8);
    check_values(w.grad(), std::vector<double>(8, 0.0), 0);
    w.set_grad(Tensor());
    optim::LossScaler scaler;  // 65536
    backward(sum(linear(x, w, Tensor(), kFloat16)) * (1e-8 * scaler.scale()));
    REQUIRE(scaler.unscale_and_update({w}));
    // 1e-8 * 65536 rounds to float16 (11 significant bits), then comes back /65536: 1e-8 within 2^-11.
    for (double g : w.grad().to_vector()) CHECK(std::fabs(g - 1e-8) < 1e-8 * std::ldexp(1.0, -10));
    // bfloat16 has float32's exponent range: no scaling needed.
    w.set_grad(Tensor());
    backward(sum(linear(x, w, Tensor(), kBFloat16)) * 1e-8);
    for (double g : w.grad().to_vector()) CHECK(std::fabs(g - 1e-8) < 1e-8 * std::ldexp(1.0, -7));
}

TEST_CASE("train_step with a loss scaler: overflowing steps are skipped, weights untouched, then training goes on",
          "[half][mixed][training]") {
    TransformerConfig c = small(gpt2_config());
    auto model = make(c, 6);
    model->set_precision(kFloat16);
    auto [ids, next] = batch();
    optim::AdamW opt({{model->parameters(), 0.0}}, 1e-3);
    // 2^40: every gradient overflows float16 (65504) until the scale has come down.
    optim::LossScaler scaler(std::ldexp(1.0, 40), 1000);
    app::TrainStep s;
    s.loss = [&] { return cross_entropy(model->forward(ids), next); };
    s.params = model->parameters();
    s.optimizer = &opt;
    s.scaler = &scaler;
    std::map<std::string, std::vector<double>> before;
    for (const auto& [name, p] : model->named_parameters()) before[name] = p.to_vector();
    app::StepResult first = app::train_step(s);
    CHECK(first.skipped);
    CHECK(first.refused == app::Refusal::None);
    CHECK(std::isfinite(first.loss));
    for (const auto& [name, p] : model->named_parameters()) {
        INFO(name);
        CHECK(p.to_vector() == before[name]);  // no update
    }
    int skipped = 1, taken = 0;
    double first_loss = first.loss, last_loss = first.loss;
    for (int i = 0; i < 60; ++i) {
        app::StepResult r = app::train_step(s);
        REQUIRE(r.refused == app::Refusal::None);
        (r.skipped ? skipped : taken) += 1;
        last_loss = r.loss;
    }
    // The scale halves per skipped step until the gradients fit: from 2^40 to
    // at most 2^16 or so takes a couple of dozen steps, then every step counts.
    CHECK(skipped == scaler.skipped_steps());
    CHECK(skipped >= 10);
    CHECK(skipped <= 40);
    CHECK(scaler.scale() < std::ldexp(1.0, 40));
    CHECK(taken >= 20);
    CHECK(last_loss < first_loss - 0.1);
    for (const auto& [name, p] : model->named_parameters()) CHECK(raw::all_finite(p));
}
