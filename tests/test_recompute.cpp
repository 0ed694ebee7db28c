// Activation recomputation: gradients() (the pass that returns leaves'
// gradients), checkpoint() on a small function, and whole models whose
// gradients with recomputation equal those without, bit for bit.
#include "autograd/checkpoint.h"
#include "helpers.h"
#include "nn/models.h"

using namespace nc;
using namespace nc::nn;
using nc_test::check_error;
using nc_test::check_values;

// A float64 vector leaf requiring grad (tests/helpers.h).
static Tensor param(const std::vector<double>& values) { return nc_test::leaf(values); }

TEST_CASE("gradients() returns d(root)/d(inputs) and leaves .grad alone", "[engine][recompute]") {
    Tensor x = param({2, 3}), w = param({5, 7}), unused = param({1});
    Tensor y = sum(x * x * w);  // dy/dx = 2 x w, dy/dw = x^2
    std::vector<Tensor> g = gradients(y, {x, w, unused});
    check_values(g[0], {20, 42});
    check_values(g[1], {4, 9});
    CHECK_FALSE(g[2].defined());  // no gradient reaches it, as backward() would leave it
    CHECK_FALSE(x.grad().defined());
    CHECK_FALSE(w.grad().defined());
    Tensor hidden = x * w;
    check_error([&] { gradients(sum(hidden), {hidden}); }, {"gradients", "input 0", "leaf"});
    check_error([&] { gradients(sum(x * w), {raw::ones({2}, kFloat64)}); }, {"gradients", "requires grad"});
}

TEST_CASE("checkpoint: the same value and gradients, nothing inside kept, each leaf reported once",
          "[engine][recompute]") {
    Tensor x = param({0.5, -1, 2}), w = param({3, -2, 0.25});
    std::weak_ptr<TensorImpl> inside;
    int calls = 0;
    std::vector<bool> grad_mode;  // at each call of f
    auto f = [&](const Tensor& in) {
        ++calls;
        grad_mode.push_back(is_grad_enabled());
        Tensor hidden = tanh(in * w);
        inside = hidden.impl_ptr();
        return hidden * in;
    };
    Tensor y = checkpoint(f, x, {w});
    CHECK(calls == 1);
    CHECK(inside.expired());  // the forward ran without a graph: nothing saved
    CHECK(y.grad_fn()->name == "CheckpointBackward");
    Tensor direct = f(x);
    check_values(y, direct.to_vector(), 0);
    std::vector<std::string> ready;
    backward(sum(y), Tensor(), false, [&](const Tensor& leaf) { ready.push_back(leaf.impl() == x.impl() ? "x" : "w"); });
    CHECK(calls == 3);  // once more during backward
    // Forward without a graph, the recomputation with one (the direct call between them had one too).
    CHECK(grad_mode == std::vector<bool>{false, true, true});
    CHECK(ready.size() == 2);
    std::vector<Tensor> expected = gradients(sum(direct), {x, w});
    check_values(x.grad(), expected[0].to_vector(), 0);
    check_values(w.grad(), expected[1].to_vector(), 0);

    // With grad mode off it is just f(x), recorded nowhere.
    NoGradGuard no_grad;
    CHECK_FALSE(checkpoint(f, x, {w}).requires_grad());
}

TEST_CASE("checkpoint: unused, frozen and missing parameters, an input without grad, backward twice",
          "[engine][recompute]") {
    Tensor x = param({0.5, -1}), w = param({3, -2}), unused = param({7}), frozen = raw::from_vector(std::vector<double>{2, 2}, {2});
    auto f = [&](const Tensor& in) { return tanh(in * w) * frozen; };
    // A parameter f never reads keeps an undefined gradient (so optimizers skip it, as without recomputation).
    backward(sum(checkpoint(f, x, {w, unused, frozen})));
    CHECK_FALSE(unused.grad().defined());
    CHECK_FALSE(frozen.grad().defined());
    std::vector<Tensor> expected = gradients(sum(f(x)), {x, w});
    check_values(w.grad(), expected[1].to_vector(), 0);
    // retain_graph: the node recomputes each time, and the gradients add up.
    Tensor x2 = param({0.5, -1}), w2 = param({3, -2});
    auto f2 = [&](const Tensor& in) { return tanh(in * w2); };
    Tensor y = sum(checkpoint(f2, x2, {w2}));
    backward(y, Tensor(), /*retain_graph=*/true);
    backward(y);
    std::vector<Tensor> once = gradients(sum(f2(x2)), {x2, w2});
    check_values(w2.grad(), raw::mul(once[1], 2.0).to_vector(), 0);
    check_values(x2.grad(), raw::mul(once[0], 2.0).to_vector(), 0);
    // An input that does not require grad: only the parameter's gradient.
    Tensor constant = raw::from_vector(std::vector<double>{1, 2}, {2});
    Tensor w3 = param({0.5, 0.25});
    backward(sum(checkpoint([&](const Tensor& in) { return in * w3; }, constant, {w3})));
    check_values(w3.grad(), {1, 2});
    // A parameter f reads but nobody listed would silently get no gradient: an error.
    Tensor w4 = param({1, 2});
    Tensor missing = checkpoint([&](const Tensor& in) { return in * w4; }, x, {});
    check_error([&] { backward(sum(missing)); }, {"checkpoint", "neither its input nor one of its parameters"});
    // A parameter listed twice would be counted twice.
    check_error([&] { checkpoint(f, x, {w, w}); }, {"checkpoint", "listed twice"});
}

namespace {

TransformerConfig small(TransformerConfig c, Placement placement) {
    c.n_layer = 3;
    c.n_embd = 32;
    c.n_head = 4;
    c.vocab_size = 64;
    c.block_size = 12;
    c.swiglu_multiple = 8;
    c.placement = placement;
    c.dropout = 0.1;  // the recomputation must drop the same units
    c.image_size = 8;
    c.patch_size = 4;
    c.num_classes = 5;
    return c;
}

std::unique_ptr<TransformerModel> make(const TransformerConfig& c, uint64_t seed) {
    Generator gen(seed);
    if (c.family == Family::GPT2) return std::make_unique<GPT2>(c, gen);
    if (c.family == Family::Llama) return std::make_unique<Llama>(c, gen);
    return std::make_unique<ViT>(c, gen);
}

// One forward and backward of a fixed batch; the loss, every parameter's
// gradient, and how many nodes the graph had.
struct Step {
    double loss;
    std::map<std::string, std::vector<double>> grads;
    size_t nodes;
};

Step step(TransformerModel& model, bool recompute) {
    model.set_recompute(recompute);
    model.train();
    const TransformerConfig& c = model.config();
    Generator data(99);
    Tensor input, target;
    if (c.family == Family::ViT) {
        input = raw::randn({4, 1, 8, 8}, data);
        target = raw::from_indices({0, 4, 2, 1}, {4});
    } else {
        std::vector<int64_t> ids, next;
        for (int64_t i = 0; i < 2 * 12; ++i) {
            ids.push_back((i * 7 + 3) % 64);
            next.push_back((i * 7 + 10) % 64);
        }
        input = raw::from_indices(ids, {2, 12});
        target = raw::from_indices(next, {2, 12});
    }
    Tensor loss = cross_entropy(model.forward(input), target);
    Step s{loss.item(), {}, topological_order(loss).size()};
    backward(loss);
    for (const auto& [name, p] : model.named_parameters()) s.grads[name] = p.grad().to_vector();
    return s;
}

}  // namespace

TEST_CASE("recomputing every block gives the same gradients, bit for bit, for every placement", "[models][recompute]") {
    std::vector<std::pair<std::string, TransformerConfig>> configs;
    for (Placement p : {Placement::Pre, Placement::Post, Placement::Sandwich, Placement::DeepNorm, Placement::GeoNorm})
        configs.push_back({"gpt2 " + to_string(p), small(gpt2_config(), p)});
    configs.push_back({"llama pre", small(llama_config(), Placement::Pre)});
    configs.push_back({"vit pre", small(vit_config(), Placement::Pre)});
    TransformerConfig dyt = small(gpt2_config(), Placement::Pre);
    dyt.norm = NormKind::DyT;
    configs.push_back({"gpt2 dyt", dyt});
    TransformerConfig geo = small(gpt2_config(), Placement::GeoNorm);
    geo.geo_learnable_step = true;
    configs.push_back({"gpt2 geonorm, learnable steps", geo});
    TransformerConfig diff = small(llama_config(), Placement::Sandwich);
    diff.attention = AttentionKind::Differential;
    configs.push_back({"llama sandwich, differential attention", diff});
    configs.push_back({"vit post", small(vit_config(), Placement::Post)});
    for (const auto& [name, c] : configs) {
        INFO(name);
        auto plain = make(c, 5), recomputed = make(c, 5);
        Step a = step(*plain, false), b = step(*recomputed, true);
        CHECK(a.loss == b.loss);
        REQUIRE(a.grads.size() == b.grads.size());
        for (const auto& [param, g] : a.grads) {
            INFO(param);
            CHECK(g == b.grads[param]);
        }
        // Each of the 3 blocks' nodes (ten or more; GeoNorm's plain block,
        // with GPT-2's packed attention, has ten) became one Checkpoint
        // node: at least 9 fewer per block; 8 leaves a node of margin.
        CHECK(b.nodes + 3 * 8 < a.nodes);
        // The dropout generator ends where it would have without recomputation.
        CHECK(plain->dropout_generator().offset() == recomputed->dropout_generator().offset());
    }
}

TEST_CASE("recomputing: switching the model to eval between forward and backward is refused", "[models][recompute]") {
    TransformerConfig c = small(gpt2_config(), Placement::Pre);
    auto model = make(c, 5);
    model->set_recompute(true);
    Tensor ids = raw::from_indices(std::vector<int64_t>(12, 3), {1, 12});
    Tensor loss = cross_entropy(model->forward(ids), ids);
    model->eval();
    check_error([&] { backward(loss); }, {"recompute", "switched to eval"});
}
