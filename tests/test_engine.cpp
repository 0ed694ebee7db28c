// The backward engine: accumulation, retain_graph, no-grad, hooks, graph
// shapes (diamond, deep chain), anomaly mode, trace and graph dumps.
#include <iostream>
#include <sstream>

#include "autograd/graph_dump.h"
#include "helpers.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;

// A float64 vector leaf requiring grad (tests/helpers.h).
static Tensor param(const std::vector<double>& values) { return nc_test::leaf(values); }

TEST_CASE("backward computes gradients of a small expression", "[engine]") {
    Tensor x = param({2, 3});
    Tensor y = sum(x * x * x);  // dy/dx = 3 x^2
    CHECK(y.requires_grad());
    CHECK(!y.is_leaf());
    CHECK(y.grad_fn()->name == "SumBackward");
    backward(y);
    check_values(x.grad(), {12, 27});
}

TEST_CASE("gradients accumulate across backward calls until zero_grad", "[engine]") {
    Tensor x = param({1, 2});
    backward(sum(x * 3.0));
    backward(sum(x * 3.0));
    check_values(x.grad(), {6, 6});
    x.zero_grad();
    CHECK(!x.grad().defined());
    backward(sum(x * x));
    check_values(x.grad(), {2, 4});
}

TEST_CASE("retain_graph allows a second backward; without it the error says why", "[engine]") {
    Tensor x = param({1, 2});
    Tensor y = sum(exp(x));
    backward(y, Tensor(), /*retain_graph=*/true);
    backward(y);
    check_values(x.grad(), {2 * std::exp(1), 2 * std::exp(2)}, 1e-12);
    check_error([&] { backward(y); }, {"second time", "retain_graph"});
}

TEST_CASE("no-grad mode records nothing and restores the previous mode", "[engine]") {
    Tensor x = param({1, 2});
    {
        NoGradGuard guard;
        Tensor y = x * 2.0;
        CHECK(!y.requires_grad());
        CHECK(!y.grad_fn());
        CHECK(!is_grad_enabled());
    }
    CHECK(is_grad_enabled());
    CHECK((x * 2.0).requires_grad());
}

TEST_CASE("detach cuts the graph but shares the data", "[engine]") {
    Tensor x = param({1, 2});
    Tensor d = (x * 2.0).detach();
    CHECK(!d.requires_grad());
    Tensor y = sum(x * d);  // d is a constant here: dy/dx = d = 2x
    backward(y);
    check_values(x.grad(), {2, 4});
    Tensor shared = x.detach();
    CHECK(shared.storage() == x.storage());
}

TEST_CASE("a diamond graph sums the gradients of both paths", "[engine]") {
    // y = a * b with a = 2x and b = x^2 -> y = 2 x^3, dy/dx = 6 x^2
    Tensor x = param({1, -2});
    Tensor a = x * 2.0, b = x * x;
    backward(sum(a * b));
    check_values(x.grad(), {6, 24});
    // The same tensor on both sides of one op.
    Tensor z = param({3});
    backward(sum(z * z));
    check_values(z.grad(), {6});
}

TEST_CASE("a 10,000-op chain runs backward and is freed without recursion", "[engine]") {
    Tensor x = param({0.5});
    Tensor y = x;
    for (int i = 0; i < 10000; ++i) y = y * 1.0001 + 0.0;
    backward(sum(y));
    CHECK(x.grad().item() == Approx(std::pow(1.0001, 10000)).epsilon(1e-9));
    y = Tensor();  // drops 20,000 nodes; recursive destruction would overflow the stack
    // A chain of x * x nodes shares each input twice; it must also free iteratively.
    Tensor z = param({1.0});
    Tensor w = z;
    for (int i = 0; i < 10000; ++i) w = w * w;
    w = Tensor();
    SUCCEED("freed");
}

TEST_CASE("backward with an explicit upstream gradient; errors for misuse", "[engine]") {
    Tensor x = param({1, 2, 3});
    Tensor y = x * 2.0;
    backward(y, raw::from_vector(std::vector<double>{1, 0, -1}, {3}));
    check_values(x.grad(), {2, 0, -2});
    Tensor z = x * 3.0;
    check_error([&] { backward(z); }, {"backward", "[3]", "scalar"});
    check_error([&] { backward(z, raw::ones({2}, kFloat64)); }, {"backward", "[2]", "[3]"});
    check_error([&] { backward(raw::ones({1})); }, {"backward", "does not require grad"});
}

TEST_CASE("gradient hooks see and can replace gradients", "[engine][hooks]") {
    Tensor x = param({1, 2});
    Tensor h = x * 3.0;
    std::vector<double> seen;
    register_hook(h, [&seen](const Tensor& g) {
        seen = g.to_vector();
        return raw::mul(g, 10.0);  // replaces the gradient flowing on
    });
    int leaf_calls = 0;
    register_hook(x, [&leaf_calls](const Tensor& g) {
        ++leaf_calls;
        return Tensor();  // keep it
    });
    backward(sum(h * h));  // dL/dh = 2h = [6, 12]
    CHECK(seen == std::vector<double>{6, 12});
    check_values(x.grad(), {180, 360});  // 10 * 3 * 2h
    CHECK(leaf_calls == 1);
    check_error([] { register_hook(raw::ones({1}), [](const Tensor&) { return Tensor(); }); }, {"register_hook"});
}

// A "network" of three layers, w2 last, with w0 also used by the head (a
// tied weight): backward reaches w2's only use first and w0's last use last.
// Each leaf must be reported once, with its final gradient already stored,
// and before the nodes below its last use have run.
TEST_CASE("backward reports each leaf as soon as its gradient is final", "[engine][hooks]") {
    Tensor w0 = param({2}), w1 = param({3}), w2 = param({5}), x = param({7});
    std::vector<std::string> events;
    Tensor h0 = x * w0;  // the embedding: w0's last use in backward
    register_hook(h0, [&events](const Tensor& g) {
        events.push_back("h0");
        return Tensor();
    });
    Tensor h1 = h0 * w1;
    register_hook(h1, [&events](const Tensor& g) {
        events.push_back("h1");
        return Tensor();
    });
    Tensor h2 = h1 * w2;
    Tensor loss = sum(h2 * w0);  // the tied head: w0 again
    std::vector<double> grad_when_ready;
    backward(loss, Tensor(), false, [&](const Tensor& leaf) {
        std::string name = leaf.impl() == w0.impl() ? "w0" : leaf.impl() == w1.impl() ? "w1"
                         : leaf.impl() == w2.impl() ? "w2" : "x";
        events.push_back(name);
        if (name == "w0") grad_when_ready = leaf.grad().to_vector();
    });
    // loss = x w0^2 w1 w2: dw0 = 2 x w0 w1 w2 = 420, dw1 = x w0^2 w2 = 140,
    // dw2 = x w0^2 w1 = 84, dx = w0^2 w1 w2 = 60.
    check_values(w0.grad(), {420});
    check_values(w1.grad(), {140});
    check_values(w2.grad(), {84});
    check_values(x.grad(), {60});
    CHECK(grad_when_ready == std::vector<double>{420});
    // w2 is final before h1's gradient is used, w1 before h0's; x and w0
    // (in the order the embedding's node names them) only once that node
    // has run.
    CHECK(events == std::vector<std::string>{"w2", "h1", "w1", "h0", "x", "w0"});

    // A leaf as the root is reported too; gradients still accumulate.
    std::vector<std::string> root_events;
    backward(x, raw::ones({1}, kFloat64), false, [&](const Tensor&) { root_events.push_back("x"); });
    CHECK(root_events.size() == 1);
    check_values(x.grad(), {61});
}

TEST_CASE("retain_grad keeps a non-leaf's gradient", "[engine][hooks]") {
    Tensor x = param({1, 2});
    Tensor h = x * 2.0;
    retain_grad(h);
    backward(sum(h * h));
    check_values(h.grad(), {4, 8});
}

TEST_CASE("anomaly mode names the op that produced NaN or Inf", "[engine][anomaly]") {
    set_anomaly_enabled(true);
    Tensor x = param({-1, 4});
    check_error([&] { sqrt(x); }, {"anomaly", "Sqrt", "[2]"});
    // Forward finite, backward infinite: d sqrt(x)/dx at x = 0 is 1/(2*0).
    Tensor z = param({0, 4});
    Tensor y = sum(sqrt(z));
    check_error([&] { backward(y); }, {"anomaly", "SqrtBackward", "input 0"});
    set_anomaly_enabled(false);
    Tensor quiet = sqrt(x);  // off again: NaN passes silently
    CHECK(std::isnan(quiet.to_vector()[0]));
}

TEST_CASE("the graph dumps to DOT with op names and shapes", "[engine][dot]") {
    Tensor w = raw::randn({3, 2}, default_generator(), kFloat64);
    w.set_requires_grad(true).set_name("w");
    Tensor x = raw::randn({4, 3}, default_generator(), kFloat64);
    Tensor loss = mean(tanh(matmul(x, w)));
    std::string dot = to_dot(loss);
    CHECK(dot.find("digraph") != std::string::npos);
    CHECK(dot.find("MeanBackward\\n[]") != std::string::npos);
    CHECK(dot.find("TanhBackward\\n[4, 2]") != std::string::npos);
    CHECK(dot.find("MatMulBackward\\n[4, 2]") != std::string::npos);
    CHECK(dot.find("w\\n[3, 2]") != std::string::npos);
    std::vector<Node*> order = topological_order(loss);
    REQUIRE(order.size() == 3);
    CHECK(order[0]->name == "MeanBackward");
    CHECK(order[2]->name == "MatMulBackward");

    // As a cluster inside a larger graph: the same statements, every id prefixed.
    std::string cluster = to_dot_cluster(loss, "a", "the loss");
    CHECK(cluster.find("subgraph cluster_a {") != std::string::npos);
    CHECK(cluster.find("label=\"the loss\"") != std::string::npos);
    CHECK(cluster.find("an0 [label=\"MeanBackward\\n[]\"]") != std::string::npos);
    CHECK(cluster.find("an1 -> an0;") != std::string::npos);
    CHECK(cluster.find(" n0") == std::string::npos);  // no id left without its prefix
    CHECK(cluster.find("digraph") == std::string::npos);
}

TEST_CASE("trace mode prints each node as backward visits it", "[engine][trace]") {
    Tensor x = param({1, 2});
    Tensor y = sum(exp(x));
    std::stringstream captured;
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    set_trace_enabled(true);
    backward(y);
    set_trace_enabled(false);
    std::cerr.rdbuf(old);
    std::string out = captured.str();
    CHECK(out.find("[backward 0] SumBackward") != std::string::npos);
    CHECK(out.find("[backward 1] ExpBackward") != std::string::npos);
}

TEST_CASE("ops on tensors that do not require grad record nothing", "[engine]") {
    Tensor a = raw::ones({2}), b = raw::ones({2});
    Tensor c = a + b;
    CHECK(!c.requires_grad());
    CHECK(!c.grad_fn());
    Tensor p = param({1});
    Tensor q = p * 2.0;
    check_error([&] { q.set_requires_grad(false); }, {"non-leaf", "detach"});
}

TEST_CASE("no op keeps its own output alive: graphs are freed when dropped", "[engine][memory]") {
    // A backward lambda that captured its op's output would form a cycle
    // output -> grad_fn -> lambda -> output, and the graph would never be freed.
    Tensor x = param({0.5, -1, 2, 0.25});
    Tensor x2 = reshape(x, {2, 2});
    std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
        {"exp", [&] { return exp(x); }},           {"sqrt", [&] { return sqrt(abs(x)); }},
        {"tanh", [&] { return tanh(x); }},         {"pow", [&] { return pow(abs(x), x); }},
        {"max", [&] { return max(x2, {1}); }},     {"softmax", [&] { return softmax(x2, 1); }},
        {"log_softmax", [&] { return log_softmax(x2, 1); }},
        {"matmul", [&] { return matmul(x2, x2); }}, {"sum", [&] { return sum(x2, {0}); }},
    };
    for (auto& [name, op] : ops) {
        INFO(name);
        Tensor out = op();
        std::weak_ptr<TensorImpl> alive = out.impl_ptr();
        std::weak_ptr<Node> node = out.grad_fn();
        out = Tensor();
        CHECK(alive.expired());
        CHECK(node.expired());
    }
}

TEST_CASE("backward frees each activation once no later step needs it", "[engine][memory]") {
    // y = sum(tanh(x) * 2): the intermediate tanh(x) is held only by the graph.
    // After backward (without retain_graph) nothing holds it any more, even
    // while the output y (and so the graph's first node) is still alive.
    Tensor x = param({0.5, -1, 2});
    Tensor hidden = tanh(x);
    std::weak_ptr<TensorImpl> hidden_alive = hidden.impl_ptr();
    Tensor y = sum(hidden * 2.0);
    hidden = Tensor();
    CHECK_FALSE(hidden_alive.expired());  // the graph keeps it for backward
    backward(y);
    CHECK(hidden_alive.expired());
    check_values(x.grad(), {2 * (1 - std::tanh(0.5) * std::tanh(0.5)), 2 * (1 - std::tanh(-1.0) * std::tanh(-1.0)),
                            2 * (1 - std::tanh(2.0) * std::tanh(2.0))},
                 1e-12);
    check_error([&] { backward(y); }, {"second time", "retain_graph"});
}

TEST_CASE("the graph keeps no activation that no backward saved", "[engine][memory]") {
    // h = 3 x feeds tanh. Scaling's backward needs only the 3, and tanh's
    // saves its output, not h: so once the forward code drops h, nothing
    // holds its memory, though the graph still passes through it.
    Tensor x = nc_test::leaf({0.5, -1, 2});
    std::weak_ptr<Storage> h_memory;
    Tensor loss;
    {
        Tensor h = x * 3.0;
        h_memory = h.storage();
        loss = sum(tanh(h));
        CHECK(loss.grad_fn()->name == "SumBackward");
    }
    CHECK(h_memory.expired());
    backward(loss);
    // d/dx sum tanh(3x) = 3 (1 - tanh(3x)^2)
    std::vector<double> expected;
    for (double v : {0.5, -1.0, 2.0}) expected.push_back(3 * (1 - std::tanh(3 * v) * std::tanh(3 * v)));
    check_values(x.grad(), expected, 1e-12);
    // x * x: one tensor twice, one edge (and the gradient 2x through both).
    Tensor y = nc_test::leaf({1.5, -2});
    Tensor square = y * y;
    CHECK(square.grad_fn()->inputs[0].same(square.grad_fn()->inputs[1]));
    backward(sum(square));
    check_values(y.grad(), {3, -4}, 0);
}
