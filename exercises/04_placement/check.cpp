// The check of exercise 4: sandwich and deepnorm against the library's
// nn::residual_step (values and the gradients of x and of every parameter),
// ReZero against what it must be (the identity at alpha = 0, alpha's
// gradient sum(F(x) dy) computed here with raw ops) and against finite
// differences.
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/ops_nn.h"
#include "exercises/04_placement/placement.h"
#include "exercises/exercise.h"
#include "nn/layers.h"
#include "nn/placement.h"

using namespace nc;

static double largest_difference(const Tensor& a, const Tensor& b) {
    return exercise::largest_difference(a.to_vector(), b.to_vector());
}

// Runs `step` forward and backward with the gradient dy; returns the output
// and the gradients of x and every parameter, then clears them.
static std::vector<Tensor> run(const std::function<Tensor()>& step, const Tensor& dy, const std::vector<Tensor>& leaves) {
    Tensor y = step();
    exercise::expect(y.defined() && y.shape() == dy.shape(), "the step must return x's shape");
    exercise::expect(y.requires_grad(), "the step must be built from autograd ops (autograd/ops.h)");
    backward(y, dy);
    std::vector<Tensor> results{y.detach()};
    for (const Tensor& leaf : leaves) {
        results.push_back(leaf.grad().defined() ? leaf.grad() : raw::zeros_like(leaf));
        leaf.zero_grad();
    }
    return results;
}

static void expect_same(const std::vector<Tensor>& yours, const std::vector<Tensor>& library, const char* placement) {
    const char* names[] = {"output", "dx", "F's weight gradient", "F's bias gradient", "N's weight gradient",
                           "N's bias gradient", "N_out's weight gradient", "N_out's bias gradient"};
    for (size_t i = 0; i < yours.size(); ++i) {
        double d = largest_difference(yours[i], library[i]);
        exercise::expect(d < 1e-12, std::string(placement) + ": the " + names[i] + " differs from nn::residual_step's by " +
                                        exercise::number(d));
    }
}

int main() {
    return exercise::run("4 (placements)", [] {
        Generator gen(4);
        const nn::Options f64{kFloat64, kCPU};
        const int64_t C = 8;
        nn::Linear linear(C, C, /*bias=*/true, gen, f64);
        nn::LayerNorm N(C, 1e-5, true, true, f64), N_out(C, 1e-5, true, true, f64);
        {
            NoGradGuard no_grad;  // norms whose parameters are not 1 and 0, so a swapped N and N_out shows
            for (const Tensor& p : {N.weight, N.bias, N_out.weight, N_out.bias})
                raw::copy_(p, raw::add(raw::mul(raw::randn(p.shape(), gen, kFloat64), 0.5), 1.0));
        }
        exercise::Sublayer F = [&](const Tensor& h) { return gelu(linear.forward(h)); };
        Tensor x = raw::randn({2, 3, C}, gen, kFloat64), dy = raw::randn({2, 3, C}, gen, kFloat64);
        x.set_requires_grad(true);
        std::vector<Tensor> leaves{x, linear.weight, linear.bias, N.weight, N.bias, N_out.weight, N_out.bias};

        nn::Sublayer s;
        s.apply = F;
        s.drop = [](const Tensor& t) { return t; };
        s.norm = &N;
        s.norm_out = &N_out;
        s.alpha = nn::deepnorm_alpha(6);
        expect_same(run([&] { return exercise::sandwich_step(x, F, N, N_out); }, dy, leaves),
                    run([&] { return nn::residual_step(nn::Placement::Sandwich, x, s); }, dy, leaves), "sandwich");
        expect_same(run([&] { return exercise::deepnorm_step(x, F, N, s.alpha); }, dy, leaves),
                    run([&] { return nn::residual_step(nn::Placement::DeepNorm, x, s); }, dy, leaves), "deepnorm");

        // ReZero at initialization: the identity, exactly, in both directions.
        Tensor alpha = raw::zeros({1}, kFloat64);
        alpha.set_requires_grad(true);
        std::vector<Tensor> at_zero = run([&] { return exercise::rezero_step(x, F, alpha); }, dy, {x, alpha});
        exercise::expect(largest_difference(at_zero[0], x) == 0, "rezero at alpha = 0 must return x exactly, it differs by " +
                                                                     exercise::number(largest_difference(at_zero[0], x)));
        exercise::expect(largest_difference(at_zero[1], dy) == 0, "rezero at alpha = 0 must pass dy through to x unchanged");
        Tensor want = raw::sum(raw::mul(F(x).detach(), dy));
        exercise::expect_close(at_zero[2].item(), want.item(), 1e-12, "rezero's gradient of alpha at 0 (sum(F(x) dy))");

        Tensor small = raw::randn({2, C}, gen, kFloat64), a = raw::full({1}, 0.3, kFloat64);
        small.set_requires_grad(true), a.set_requires_grad(true);
        GradcheckResult check = gradcheck(
            [&](const std::vector<Tensor>& in) { return sum(mul(exercise::rezero_step(in[0], F, in[1]), in[0])); }, {small, a});
        exercise::expect(check.passed, "rezero's gradients: " + check.report());
    });
}
