// nn::Module (names, state dict, train/eval) and the layers: values,
// gradchecks in float64, BatchNorm's running statistics, DyT.
#include "helpers.h"
#include "nn/init.h"
#include "nn/norms.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_gradcheck;
using nc_test::check_values;
using nc_test::leaf;
using V = std::vector<Tensor>;

static const nn::Options f64{kFloat64, kCPU};

// A two-level module to check dotted names: "fc.weight", "blocks.0.norm.weight", ...
struct Block : nn::Module {
    std::shared_ptr<nn::LayerNorm> norm;
    explicit Block(int64_t C) { norm = register_module("norm", std::make_shared<nn::LayerNorm>(C)); }
};
struct Net : nn::Module {
    std::shared_ptr<nn::Linear> fc;
    std::shared_ptr<nn::ModuleList> blocks;
    std::shared_ptr<nn::BatchNorm1d> bn;
    Net(Generator& gen) {
        fc = register_module("fc", std::make_shared<nn::Linear>(4, 3, true, gen));
        blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
        blocks->push_back(std::make_shared<Block>(3));
        blocks->push_back(std::make_shared<Block>(3));
        bn = register_module("bn", std::make_shared<nn::BatchNorm1d>(3));
    }
};

TEST_CASE("modules name their parameters with dotted paths", "[nn][module]") {
    Generator gen(50);
    Net net(gen);
    std::vector<std::string> names;
    for (auto& [name, t] : net.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"fc.weight", "fc.bias", "blocks.0.norm.weight", "blocks.0.norm.bias",
                                            "blocks.1.norm.weight", "blocks.1.norm.bias", "bn.weight", "bn.bias"});
    CHECK(net.num_parameters() == 4 * 3 + 3 + 4 * 3 + 3 + 3);
    std::vector<std::string> buffers;
    for (auto& [name, t] : net.named_buffers()) buffers.push_back(name);
    CHECK(buffers == std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"});
    CHECK(net.state_dict().size() == 11);
    for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
    net.eval();
    CHECK(!net.is_training());
    CHECK(!net.blocks->children()[0].second->is_training());
    net.train();
    CHECK(net.bn->is_training());
}

TEST_CASE("state dicts round-trip and mismatches are listed", "[nn][module]") {
    Generator g1(51), g2(52);
    Net a(g1), b(g2);
    CHECK(a.fc->weight.to_vector() != b.fc->weight.to_vector());
    b.load_state_dict(a.state_dict());
    CHECK(a.fc->weight.to_vector() == b.fc->weight.to_vector());
    CHECK(!b.fc->weight.same(a.fc->weight));  // values copied, tensors still b's own
    std::map<std::string, Tensor> bad = a.state_dict();
    bad["fc.weight"] = raw::zeros({2, 2});
    bad.erase("fc.bias");
    bad["extra.weight"] = raw::zeros({1});
    check_error([&] { b.load_state_dict(bad); },
                {"load_state_dict", "mismatch: fc.weight expects [3, 4]", "missing: fc.bias", "unexpected: extra.weight"});
    // Nothing was copied by the refused load.
    CHECK(a.fc->weight.to_vector() == b.fc->weight.to_vector());
}

TEST_CASE("zero_grad clears every parameter's gradient", "[nn][module]") {
    Generator gen(53);
    nn::Linear fc(3, 2, true, gen);
    backward(sum(fc.forward(raw::ones({1, 3}))));
    CHECK(fc.weight.grad().defined());
    fc.zero_grad();
    CHECK(!fc.weight.grad().defined());
    CHECK(!fc.bias.grad().defined());
}

TEST_CASE("Linear computes x W^T + b and passes gradcheck", "[nn][layers]") {
    Generator gen(54);
    nn::Linear fc(3, 2, true, gen, f64);
    raw::copy_(fc.weight, raw::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}));
    raw::copy_(fc.bias, raw::from_vector(std::vector<double>{0.5, -0.5}, {2}));
    check_values(fc.forward(raw::from_vector(std::vector<double>{1, 0, -1}, {1, 3})), {-1.5, -2.5});
    Tensor x = leaf({2, 5, 3}, 55);
    check_gradcheck([&fc](const V& v) { return fc.forward(v[0]); }, {x, fc.weight, fc.bias});
    nn::Linear no_bias(3, 4, false, gen, f64);
    CHECK(!no_bias.bias.defined());
    CHECK(no_bias.num_parameters() == 12);
    check_gradcheck([&no_bias](const V& v) { return no_bias.forward(v[0]); }, {x, no_bias.weight});
    check_error([&] { fc.forward(raw::zeros({2, 4}, kFloat64)); }, {"Linear", "[..., 3]", "[2, 4]"});
}

TEST_CASE("Embedding looks up rows and passes gradcheck", "[nn][layers]") {
    Generator gen(56);
    nn::Embedding emb(5, 3, gen, f64);
    Tensor ids = raw::from_indices({4, 0, 4}, {3});
    Tensor out = emb.forward(ids);
    CHECK(out.shape() == Shape{3, 3});
    std::vector<double> w = emb.weight.to_vector();
    check_values(out, {w[12], w[13], w[14], w[0], w[1], w[2], w[12], w[13], w[14]});
    check_gradcheck([&](const V&) { return emb.forward(ids); }, {emb.weight});
}

TEST_CASE("activation layers and Identity", "[nn][layers]") {
    Tensor x = leaf({2, 3}, 57);
    for (const char* name : {"gelu", "gelu_tanh", "relu", "silu", "tanh", "identity"}) {
        INFO(name);
        nn::Activation act(nn::parse_activation(name));
        check_gradcheck([&act](const V& v) { return act.forward(v[0]) * 1.0; }, {x});
    }
    nn::Identity id;
    CHECK(id.forward(x).same(x));
    check_error([] { nn::parse_activation("swish"); }, {"unknown activation 'swish'"});
}

TEST_CASE("LayerNorm, RMSNorm and DyT layers pass gradcheck", "[nn][norms]") {
    Tensor x = leaf({2, 3, 4}, 58, 2.0);
    nn::LayerNorm ln(4, 1e-5, true, true, f64);
    nn::normal_(ln.weight, 1.0, default_generator());
    check_gradcheck([&ln](const V& v) { return ln.forward(v[0]); }, {x, ln.weight, ln.bias});
    nn::RMSNorm rms(4, 1e-6, true, f64);
    check_gradcheck([&rms](const V& v) { return rms.forward(v[0]); }, {x, rms.weight});
    nn::DyT dyt(4, 0.5, true, f64);
    check_gradcheck([&dyt](const V& v) { return dyt.forward(v[0]); }, {x, dyt.alpha, dyt.weight, dyt.bias});
    // DyT's value: weight * tanh(alpha x) + bias with the initial weight 1, bias 0.
    check_values(dyt.forward(x), raw::tanh(raw::mul(x, 0.5)).to_vector(), 1e-15);
    nn::DyT no_bias(4, 2.0, false, f64);
    CHECK(no_bias.named_parameters().size() == 2);
    check_error([&] { ln.forward(raw::zeros({2, 5}, kFloat64)); }, {"LayerNorm", "[..., 4]", "[2, 5]"});
}

TEST_CASE("BatchNorm1d: batch statistics in training, running statistics in eval", "[nn][norms]") {
    nn::BatchNorm1d bn(2, 1e-5, 0.1, f64);
    Tensor x = raw::from_vector(std::vector<double>{1, 10, 3, 20, 5, 30}, {3, 2});  // feature 0: 1,3,5; feature 1: 10,20,30
    Tensor y = bn.forward(x);
    double r0 = 1 / std::sqrt(8.0 / 3 + 1e-5), r1 = 1 / std::sqrt(200.0 / 3 + 1e-5);
    check_values(y, {-2 * r0, -10 * r1, 0, 0, 2 * r0, 10 * r1}, 1e-12);
    // running_mean = 0.9 * 0 + 0.1 * mean; running_var = 0.9 * 1 + 0.1 * unbiased var (4 and 100).
    check_values(bn.running_mean, {0.3, 2.0}, 1e-12);
    check_values(bn.running_var, {0.9 + 0.4, 0.9 + 10}, 1e-12);
    CHECK(bn.num_batches_tracked.to_int_vector()[0] == 1);
    bn.eval();
    Tensor z = bn.forward(x);
    check_values(z, {(1 - 0.3) / std::sqrt(1.3 + 1e-5), (10 - 2) / std::sqrt(10.9 + 1e-5), (3 - 0.3) / std::sqrt(1.3 + 1e-5),
                     (20 - 2) / std::sqrt(10.9 + 1e-5), (5 - 0.3) / std::sqrt(1.3 + 1e-5), (30 - 2) / std::sqrt(10.9 + 1e-5)},
                 1e-12);
    bn.train();
    Tensor x3 = leaf({4, 2, 3}, 59);
    check_gradcheck([&bn](const V& v) { return bn.forward(v[0]); }, {x3, bn.weight, bn.bias});
    bn.eval();
    check_gradcheck([&bn](const V& v) { return bn.forward(v[0]); }, {x3, bn.weight, bn.bias});
    check_error([&] { bn.forward(raw::zeros({4, 3}, kFloat64)); }, {"BatchNorm1d", "[N, 2]", "[4, 3]"});
    // [N, C, L]: the statistics run over N and L, N L = 6 values per feature,
    // so the running variance takes the biased variance times 6/5 (with
    // only N in the count, 2 and 3-D inputs would look alike in the 2-D case).
    nn::BatchNorm1d bn3(2, 1e-5, 0.1, f64);
    Tensor x3d = raw::from_vector(std::vector<double>{1, 2, 3, 10, 10, 40, 4, 5, 6, 20, 30, 30}, {2, 2, 3});
    bn3.forward(x3d);
    std::vector<std::vector<double>> values = {{1, 2, 3, 4, 5, 6}, {10, 10, 40, 20, 30, 30}};
    std::vector<double> running_mean, running_var;
    for (const std::vector<double>& f : values) {
        double mean = 0, var = 0;
        for (double v : f) mean += v / 6;
        for (double v : f) var += (v - mean) * (v - mean) / 5;  // unbiased, n - 1 = 5
        running_mean.push_back(0.1 * mean);
        running_var.push_back(0.9 + 0.1 * var);
    }
    check_values(bn3.running_mean, running_mean, 1e-12);
    check_values(bn3.running_var, running_var, 1e-12);
}

TEST_CASE("Dropout layer follows train/eval mode", "[nn][layers]") {
    nn::Dropout drop(0.5, 7);
    Tensor x = raw::ones({1000});
    CHECK(raw::sum(raw::eq(drop.forward(x), raw::zeros({1}))).item() > 400);
    drop.eval();
    CHECK(drop.forward(x).same(x));
}
