// Optimizers, clipping and schedules against values worked out by hand.
#include "helpers.h"
#include "nn/layers.h"
#include "optim/optimizer.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;

static Tensor param(double value) {
    Tensor p = raw::full({1}, value, kFloat64);
    p.set_requires_grad(true);
    return p;
}

static void set_grad(const Tensor& p, double g) { p.set_grad(raw::full({1}, g, kFloat64)); }

TEST_CASE("SGD with momentum and weight decay", "[optim]") {
    Tensor p = param(1.0);
    optim::SGD sgd({{{p}, 0.01}}, 0.1, 0.9);
    set_grad(p, 0.5);
    sgd.step();
    // g = 0.5 + 0.01 * 1 = 0.51; b = 0.51; p = 1 - 0.1 * 0.51
    CHECK(p.item() == Approx(0.949).epsilon(1e-12));
    set_grad(p, 0.5);
    sgd.step();
    // g = 0.5 + 0.01 * 0.949 = 0.50949; b = 0.9 * 0.51 + 0.50949 = 0.96849; p = 0.949 - 0.096849
    CHECK(p.item() == Approx(0.852151).epsilon(1e-12));
    Tensor q = param(1.0);
    optim::SGD nesterov({{{q}, 0.01}}, 0.1, 0.9, true);
    set_grad(q, 0.5);
    nesterov.step();
    // update = g + mu b = 0.51 + 0.9 * 0.51 = 0.969
    CHECK(q.item() == Approx(1 - 0.0969).epsilon(1e-12));
    // Step 2, where b is no longer g (b + mu g would pass step 1):
    // g = 0.5 + 0.01 * 0.9031; b = 0.9 * 0.51 + g; update = g + 0.9 b.
    set_grad(q, 0.5);
    nesterov.step();
    double g2 = 0.5 + 0.01 * 0.9031, b2 = 0.9 * 0.51 + g2;
    CHECK(q.item() == Approx(0.9031 - 0.1 * (g2 + 0.9 * b2)).epsilon(1e-12));
    Tensor r = param(2.0);
    optim::SGD plain({{{r}, 0}}, 0.5);
    set_grad(r, 1.0);
    plain.step();
    CHECK(r.item() == Approx(1.5));
    check_error([&] { optim::SGD bad({{{r}, 0}}, 0.1, 0, true); }, {"Nesterov"});
}

TEST_CASE("AdamW with bias correction and decoupled weight decay", "[optim]") {
    Tensor p = param(1.0);
    double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
    optim::AdamW adam({{{p}, wd}}, lr, b1, b2, eps);
    double x = 1.0, m = 0, v = 0;
    double grads[] = {0.5, -0.25, 0.125};
    for (int t = 1; t <= 3; ++t) {
        set_grad(p, grads[t - 1]);
        adam.step();
        // By hand: decay, then the moments, then the bias-corrected step.
        x *= 1 - lr * wd;
        m = b1 * m + (1 - b1) * grads[t - 1];
        v = b2 * v + (1 - b2) * grads[t - 1] * grads[t - 1];
        double m_hat = m / (1 - std::pow(b1, t)), v_hat = v / (1 - std::pow(b2, t));
        x -= lr * m_hat / (std::sqrt(v_hat) + eps);
        INFO("step " << t);
        CHECK(p.item() == Approx(x).epsilon(1e-12));
    }
    // The first step moves by almost exactly lr (m_hat / sqrt(v_hat) = sign(g)).
    Tensor q = param(0.0);
    optim::AdamW first({{{q}, 0}}, 0.1);
    set_grad(q, 123.0);
    first.step();
    CHECK(q.item() == Approx(-0.1).epsilon(1e-6));
    // State round trip.
    std::map<std::string, Tensor> state = adam.state();
    CHECK(state.count("exp_avg.0.0") == 1);
    CHECK(state.at("step").item() == 3);
    optim::AdamW other({{{p}, wd}}, lr, b1, b2, eps);
    other.load_state(state);
    CHECK(other.steps_taken() == 3);
}

TEST_CASE("decay groups: Linear weights decayed; embeddings, norms and biases not", "[optim]") {
    Generator gen(0);
    struct Tiny : nn::Module {
        explicit Tiny(Generator& gen) {
            register_module("proj", std::make_shared<nn::Linear>(2, 3, true, gen));
            register_module("wte", std::make_shared<nn::Embedding>(5, 2, gen));
            register_parameter("table", raw::zeros({4, 2}));  // a bare matrix that multiplies nothing
        }
    } tiny(gen);
    std::vector<optim::ParamGroup> groups = optim::decay_groups(tiny, 0.1);
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].weight_decay == 0.1);
    REQUIRE(groups[0].params.size() == 1);
    CHECK(groups[0].params[0].shape() == Shape{3, 2});  // proj.weight
    CHECK(groups[1].weight_decay == 0);
    CHECK(groups[1].params.size() == 3);  // proj.bias, wte.weight, table
}

TEST_CASE("gradient clipping by global norm returns the norm", "[optim]") {
    Tensor a = param(0), b = param(0);
    set_grad(a, 3);
    set_grad(b, 4);
    CHECK(optim::clip_grad_norm({a, b}, 0) == Approx(5));  // measure only
    CHECK(a.grad().item() == 3);
    CHECK(optim::clip_grad_norm({a, b}, 1.0) == Approx(5));
    CHECK(a.grad().item() == Approx(0.6).epsilon(1e-6));
    CHECK(b.grad().item() == Approx(0.8).epsilon(1e-6));
    CHECK(optim::clip_grad_norm({a, b}, 10.0) == Approx(1).epsilon(1e-6));  // below the limit: unchanged
    CHECK(b.grad().item() == Approx(0.8).epsilon(1e-6));
}

// The definition (PyTorch's clip_grad_norm_): with n = sqrt(sum of every
// gradient element squared), each gradient is multiplied by
// min(1, max_norm / (n + 1e-6)), and n (before clipping) is returned. Limits
// other than 1 tell max_norm from max_norm^2 and sqrt(max_norm), and norms on
// both sides of each limit (1.5 against 2, where n^2 > max_norm > n) tell a
// comparison of n from one of n^2.
TEST_CASE("gradient clipping against its definition at several limits and norms", "[optim]") {
    for (double max_norm : {0.3, 2.0, 7.5}) {
        for (double target : {0.1, 1.5, 2.5, 7.0, 40.0}) {
            INFO("max_norm " << max_norm << ", gradient norm " << target);
            // Three parameters with random gradients scaled to the target norm,
            // and one without a gradient (skipped).
            std::vector<std::vector<double>> grads;
            double sum_squares = 0;
            Generator gen(17);
            for (int64_t size : {3, 5, 2}) {
                std::vector<double> g = raw::randn({size}, gen, kFloat64).to_vector();
                for (double v : g) sum_squares += v * v;
                grads.push_back(g);
            }
            double scale = target / std::sqrt(sum_squares);
            std::vector<Tensor> params;
            for (std::vector<double>& g : grads) {
                for (double& v : g) v *= scale;
                Tensor p = raw::zeros({(int64_t)g.size()}, kFloat64);
                p.set_requires_grad(true);
                p.set_grad(raw::from_vector(g, {(int64_t)g.size()}));
                params.push_back(p);
            }
            Tensor without = raw::zeros({4}, kFloat64);
            without.set_requires_grad(true);
            params.push_back(without);
            CHECK(optim::clip_grad_norm(params, max_norm) == Approx(target).epsilon(1e-12));
            double factor = std::min(1.0, max_norm / (target + 1e-6));
            double clipped_squares = 0;
            for (size_t i = 0; i < grads.size(); ++i) {
                std::vector<double> expected = grads[i];
                for (double& v : expected) v *= factor;
                check_values(params[i].grad(), expected, 1e-14);
                for (double v : params[i].grad().to_vector()) clipped_squares += v * v;
            }
            CHECK(!without.grad().defined());
            // Clipped: the new norm is the limit (to the 1e-6 guard).
            CHECK(std::sqrt(clipped_squares) == Approx(std::min(target, max_norm)).epsilon(1e-6));
        }
    }
    // float32 gradients: the norm is summed in float64, the scale applied in float32.
    Tensor a = raw::zeros({2}, kFloat32);
    a.set_requires_grad(true);
    a.set_grad(raw::from_vector(std::vector<float>{30, 40}, {2}));
    CHECK(optim::clip_grad_norm({a}, 5.0) == Approx(50));
    check_values(a.grad(), {3, 4}, 1e-5);
}

TEST_CASE("learning-rate schedules at chosen steps", "[optim]") {
    using optim::Schedule;
    // Warm-up: linear from lr/warmup to lr.
    CHECK(optim::learning_rate(Schedule::Constant, 1.0, 0, 100, 4) == Approx(0.25));
    CHECK(optim::learning_rate(Schedule::Constant, 1.0, 3, 100, 4) == Approx(1.0));
    CHECK(optim::learning_rate(Schedule::Constant, 1.0, 50, 100, 4) == Approx(1.0));
    // Cosine over 11 steps without warm-up, down to 0.1: halfway 0.55, end 0.1.
    CHECK(optim::learning_rate(Schedule::Cosine, 1.0, 0, 11, 0) == Approx(1.0));
    CHECK(optim::learning_rate(Schedule::Cosine, 1.0, 5, 11, 0) == Approx(0.55));
    CHECK(optim::learning_rate(Schedule::Cosine, 1.0, 10, 11, 0) == Approx(0.1));
    CHECK(optim::learning_rate(Schedule::Linear, 1.0, 5, 11, 0) == Approx(0.55));
    CHECK(optim::learning_rate(Schedule::Linear, 2.0, 10, 11, 0, 0.0) == Approx(0.0));
    // With warm-up 1, cosine starts after it: step 1 is the peak.
    CHECK(optim::learning_rate(Schedule::Cosine, 1.0, 1, 12, 1) == Approx(1.0));
    // The decay spans the steps after the warm-up: with 2 warm-up steps of
    // 12, steps 2..11 go from the peak to the floor (a span that forgot the
    // warm-up would stop above the floor), halfway at step 6.5.
    CHECK(optim::learning_rate(Schedule::Cosine, 1.0, 2, 12, 2) == Approx(1.0));
    CHECK(optim::learning_rate(Schedule::Cosine, 1.0, 11, 12, 2) == Approx(0.1));
    CHECK(optim::learning_rate(Schedule::Linear, 1.0, 11, 12, 2) == Approx(0.1));
    CHECK(optim::learning_rate(Schedule::Linear, 1.0, 5, 12, 2) == Approx(1.0 - 0.9 * 3.0 / 9.0));
    CHECK(optim::learning_rate(Schedule::Cosine, 2.0, 5, 12, 2) ==
          Approx(0.2 + 0.5 * 1.8 * (1 + std::cos(M_PI * 3.0 / 9.0))));
    check_error([] { optim::parse_schedule("step"); }, {"unknown schedule 'step'"});
}
