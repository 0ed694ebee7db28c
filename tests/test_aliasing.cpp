// The aliasing rule (tensor/raw_ops.h): an op writes only into tensors the
// caller handed it as outputs, and a non-view op's result has storage of its
// own. A bias-carrying linear with one row once added x W^T into its bias
// (contiguous() of the expanded bias returned the parameter itself), so every
// layer and model here runs forward passes of several shapes, in training and
// eval mode, and must leave every parameter and buffer bit-identical, and
// give the same logits for a sequence before and after other shapes ran.
#include <functional>

#include "helpers.h"
#include "nn/models.h"

using namespace nc;
using namespace nc::nn;

namespace {

// A bit-exact copy of every parameter and buffer.
std::map<std::string, std::vector<double>> snapshot(const Module& m) {
    std::map<std::string, std::vector<double>> out;
    for (auto& [name, t] : m.state_dict()) out[name] = t.to_vector();
    return out;
}

// Every tensor of `m` equal, element for element, to the snapshot (names
// containing any of `except` are skipped: BatchNorm's running statistics).
void check_unchanged(const Module& m, const std::map<std::string, std::vector<double>>& before,
                     const std::string& what, const std::vector<std::string>& except = {}) {
    for (auto& [name, t] : m.state_dict()) {
        bool skipped = false;
        for (const std::string& e : except) skipped = skipped || name.find(e) != std::string::npos;
        if (skipped) continue;
        std::vector<double> now = t.to_vector();
        const std::vector<double>& was = before.at(name);
        size_t changed = 0;
        for (size_t i = 0; i < now.size(); ++i) changed += now[i] != was[i];
        INFO(what << ": " << name << " " << shape_str(t.shape()) << " has " << changed << " changed elements");
        CHECK(changed == 0);
    }
}

// Storage sharing: true when the two tensors' storages are the same object.
bool shares_storage(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

using nc::nn::make_model;
Tensor forward(const TransformerModel& m, const Tensor& input) { return m.forward(input); }

TransformerConfig small(Family family) {
    TransformerConfig c = family == Family::GPT2 ? gpt2_config() : family == Family::Llama ? llama_config() : vit_config();
    c.n_layer = 2;
    c.n_embd = 16;
    c.n_head = 2;
    c.vocab_size = 13;
    c.block_size = 9;
    c.swiglu_multiple = 8;
    c.image_size = 8;
    c.patch_size = 4;
    c.channels = 2;
    c.num_classes = 3;
    c.dropout = 0.1;  // dropout's training path runs too
    return c;
}

// Ids [B, T] (or images [B, ch, H, W] for a ViT) drawn from a fixed generator.
Tensor input_for(const TransformerConfig& c, int64_t B, int64_t T, uint64_t seed) {
    Generator gen(seed);
    if (c.family == Family::ViT) return raw::randn({B, c.channels, c.image_size, c.image_size}, gen);
    std::vector<int64_t> ids;
    Tensor u = raw::rand({B * T}, gen, kFloat64);
    for (double x : u.to_vector()) ids.push_back(std::min<int64_t>(c.vocab_size - 1, (int64_t)(x * c.vocab_size)));
    return raw::from_indices(ids, {B, T});
}

// Every configuration the rule is checked on: each family, each placement,
// each norm, the differential attention, grouped-query attention and biases on Llama.
std::vector<std::pair<std::string, TransformerConfig>> variants() {
    std::vector<std::pair<std::string, TransformerConfig>> out;
    for (Family f : {Family::GPT2, Family::Llama, Family::ViT}) {
        std::string fname = to_string(f);
        for (Placement p : {Placement::Pre, Placement::Post, Placement::Sandwich, Placement::DeepNorm,
                            Placement::GeoNorm}) {
            TransformerConfig c = small(f);
            c.placement = p;
            out.push_back({std::string(fname) + " " + to_string(p), c});
        }
        for (NormKind n : {NormKind::LayerNorm, NormKind::RMSNorm, NormKind::DyT}) {
            TransformerConfig c = small(f);
            c.norm = n;
            out.push_back({std::string(fname) + " " + to_string(n), c});
        }
        TransformerConfig d = small(f);
        d.attention = AttentionKind::Differential;
        out.push_back({std::string(fname) + " differential", d});
    }
    TransformerConfig gqa = small(Family::Llama);
    gqa.n_head = 4;
    gqa.n_kv_head = 2;
    gqa.bias = true;
    out.push_back({"llama gqa + bias", gqa});
    return out;
}

}  // namespace

TEST_CASE("linear with a bias and one row leaves the bias alone", "[aliasing]") {
    // The reproduction of the original bug: x [1, 3], W [4, 3], b [4].
    for (DType dtype : {kFloat32, kFloat64}) {
        Generator gen(3);
        Tensor x = raw::randn({1, 3}, gen, dtype), w = raw::randn({4, 3}, gen, dtype), b = raw::randn({4}, gen, dtype);
        std::vector<double> b_before = b.to_vector(), w_before = w.to_vector(), x_before = x.to_vector();
        for (int repeat = 0; repeat < 3; ++repeat) {
            Tensor y = raw::linear(x, w, b);
            CHECK(!shares_storage(y, b));
            // y = x W^T + b, by hand.
            std::vector<double> xv = x.to_vector(), wv = w.to_vector(), yv = y.to_vector();
            for (int n = 0; n < 4; ++n) {
                double expect = b_before[n];
                for (int k = 0; k < 3; ++k) expect += xv[k] * wv[n * 3 + k];
                CHECK(yv[n] == Approx(expect).epsilon(1e-6));
            }
        }
        CHECK(b.to_vector() == b_before);
        CHECK(w.to_vector() == w_before);
        CHECK(x.to_vector() == x_before);
        // Leading dims that multiply to one row: [1, 1, 3].
        Tensor y3 = raw::linear(raw::view(x, {1, 1, 3}), w, b);
        CHECK(y3.shape() == Shape{1, 1, 4});
        CHECK(b.to_vector() == b_before);
    }
}

TEST_CASE("non-view raw ops return storage of their own and never write their inputs", "[aliasing]") {
    Generator gen(5);
    Tensor a = raw::randn({1, 4}, gen), b = raw::randn({1, 4}, gen), w = raw::randn({4, 4}, gen);
    Tensor row = raw::randn({4}, gen);
    std::vector<double> a0 = a.to_vector(), b0 = b.to_vector(), w0 = w.to_vector(), r0 = row.to_vector();
    std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
        {"clone", [&] { return raw::clone(a); }},
        {"add", [&] { return raw::add(a, b); }},
        {"add (broadcast row)", [&] { return raw::add(a, row); }},
        {"mul scalar", [&] { return raw::mul(a, 1.0); }},
        {"exp", [&] { return raw::exp(a); }},
        {"matmul", [&] { return raw::matmul(a, w); }},
        {"linear", [&] { return raw::linear(a, w, row); }},
        {"softmax", [&] { return raw::softmax(a, -1); }},
        {"log_softmax", [&] { return raw::log_softmax(a, -1); }},
        {"sum", [&] { return raw::sum(a, {0}); }},
        {"sum_to", [&] { return raw::sum_to(raw::add(a, b), {4}); }},
        {"to_dtype", [&] { return raw::to_dtype(a, kFloat64); }},
        {"cat of one", [&] { return raw::cat({a}, 0); }},
        {"index_select", [&] { return raw::index_select(a, 0, raw::from_indices({0}, {1})); }},
        {"where", [&] { return raw::where(raw::gt(a, b), a, b); }},
    };
    for (auto& [name, op] : ops) {
        Tensor out = op();
        INFO(name);
        for (const Tensor* input : {&a, &b, &w, &row}) CHECK(!shares_storage(out, *input));
        // Writing into the result must not reach any input.
        raw::fill_(out, 7.0);
        CHECK(a.to_vector() == a0);
        CHECK(b.to_vector() == b0);
        CHECK(w.to_vector() == w0);
        CHECK(row.to_vector() == r0);
    }
    // The documented exceptions (raw_ops.h) return their input, or a view of
    // it, when there is nothing to do: they share on purpose.
    CHECK(shares_storage(raw::contiguous(a), a));
    CHECK(shares_storage(raw::reshape(a, {4}), a));
    CHECK(shares_storage(raw::expand(row, {3, 4}), row));
    CHECK(shares_storage(raw::to_dtype(a, kFloat32), a));
    CHECK(shares_storage(raw::to_device(a, kCPU), a));
    CHECK(shares_storage(raw::sum_to(a, a.shape()), a));
    // ... and copy when there is something to do.
    CHECK(!shares_storage(raw::contiguous(raw::expand(row, {3, 4})), row));
    CHECK(!shares_storage(raw::reshape(raw::transpose(w, 0, 1), {16}), w));
}

TEST_CASE("copy_ from an overlapping view of the destination copies the old values", "[aliasing]") {
    Tensor x = raw::from_vector(std::vector<double>{0, 1, 2, 3, 4}, {5});
    raw::copy_(raw::narrow(x, 0, 1, 4), raw::narrow(x, 0, 0, 4));  // x[1:] = x[:-1]
    CHECK(x.to_vector() == std::vector<double>{0, 0, 1, 2, 3});
    Tensor y = raw::from_vector(std::vector<double>{0, 1, 2, 3, 4}, {5});
    raw::copy_(raw::narrow(y, 0, 0, 4), raw::narrow(y, 0, 1, 4));  // y[:-1] = y[1:]
    CHECK(y.to_vector() == std::vector<double>{1, 2, 3, 4, 4});
    Tensor m = raw::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
    raw::copy_(m, raw::transpose(m, 0, 1));  // m = m^T, in place
    CHECK(m.to_vector() == std::vector<double>{1, 3, 2, 4});
    raw::copy_(m, m);  // the same view: nothing to do
    CHECK(m.to_vector() == std::vector<double>{1, 3, 2, 4});
}

TEST_CASE("layers' forward passes leave their parameters and buffers bit-identical", "[aliasing]") {
    Generator gen(7);
    auto run_both_modes = [&](Module& m, const std::function<void(int64_t)>& fwd, const char* what,
                              std::vector<std::string> except = {}) {
        auto before = snapshot(m);
        for (bool training : {true, false}) {
            m.train(training);
            for (int64_t rows : {1, 2, 5}) fwd(rows);
        }
        check_unchanged(m, before, what, except);
    };
    Linear with_bias(3, 4, true, gen), no_bias(3, 4, false, gen);
    run_both_modes(with_bias, [&](int64_t r) { with_bias.forward(raw::randn({r, 3}, gen)); }, "Linear (bias)");
    run_both_modes(no_bias, [&](int64_t r) { no_bias.forward(raw::randn({r, 3}, gen)); }, "Linear (no bias)");
    Embedding emb(5, 3, gen);
    run_both_modes(emb, [&](int64_t r) { emb.forward(raw::from_indices(std::vector<int64_t>(r, 2), {r})); },
                   "Embedding");
    LayerNorm ln(4);
    run_both_modes(ln, [&](int64_t r) { ln.forward(raw::randn({r, 4}, gen)); }, "LayerNorm");
    RMSNorm rms(4);
    run_both_modes(rms, [&](int64_t r) { rms.forward(raw::randn({r, 4}, gen)); }, "RMSNorm");
    DyT dyt(4);
    run_both_modes(dyt, [&](int64_t r) { dyt.forward(raw::randn({r, 4}, gen)); }, "DyT");
    BatchNorm1d bn(4);
    // Its running statistics change in training mode by design; weight and bias must not.
    run_both_modes(bn, [&](int64_t r) { bn.forward(raw::randn({r + 1, 4}, gen)); }, "BatchNorm1d",
                   {"running_mean", "running_var", "num_batches_tracked"});
}

TEST_CASE("every model's forward passes leave its weights bit-identical", "[aliasing][models]") {
    for (auto& [name, c] : variants()) {
        Generator gen(11);
        auto model = make_model(c, gen);
        auto before = snapshot(*model);
        for (bool training : {true, false}) {
            model->train(training);
            // B*T = 1 (one token, or one image) and more than one.
            for (auto [B, T] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {2, 3}, {1, c.block_size}})
                forward(*model, input_for(c, B, T, 100 + B * 10 + T));
        }
        check_unchanged(*model, before, name);
    }
}

TEST_CASE("a model's logits for a sequence do not depend on what ran before", "[aliasing][models]") {
    for (auto& [name, c] : variants()) {
        Generator gen(13);
        auto model = make_model(c, gen);
        model->eval();
        Tensor probe = input_for(c, 1, 3, 99);
        std::vector<double> first = forward(*model, probe).to_vector();
        for (int64_t T : {int64_t(1), int64_t(2), int64_t(7), c.block_size}) {
            forward(*model, input_for(c, 1, T, 200 + T));
            forward(*model, input_for(c, 2, T, 300 + T));
            std::vector<double> again = forward(*model, probe).to_vector();
            INFO(name << ": after forward passes with T = " << T);
            CHECK(again == first);
        }
    }
}
