// The check of exercise 2: softplus against a float64 loop over the C
// library's log1p and exp, at ordinary and at huge inputs, and its backward
// against finite differences.
#include <cmath>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "exercises/02_softplus/softplus.h"
#include "exercises/exercise.h"

using namespace nc;

int main() {
    return exercise::run("2 (softplus)", [] {
        std::vector<double> xs = {-1000, -30, -2.5, -1, -1e-3, 0, 1e-3, 0.5, 1, 3, 30, 1000};
        Tensor x = raw::from_vector(xs, {(int64_t)xs.size()});
        x.set_requires_grad(true);
        Tensor y = exercise::softplus(x);
        exercise::expect(y.defined() && y.shape() == x.shape(), "softplus must return a tensor of x's shape");
        std::vector<double> got = y.to_vector();
        for (size_t i = 0; i < xs.size(); ++i) {
            // The reference: for x > 30, log1p(e^x) = x to double precision.
            double want = xs[i] > 30 ? xs[i] : std::log1p(std::exp(xs[i]));
            exercise::expect_close(got[i], want, 1e-12, "softplus(" + exercise::number(xs[i]) + ")");
        }
        exercise::expect(y.requires_grad(), "softplus must record a node (use record(), autograd/node.h)");
        backward(sum(y));
        std::vector<double> dx = x.grad().to_vector();
        for (size_t i = 0; i < xs.size(); ++i)
            exercise::expect_close(dx[i], 1 / (1 + std::exp(-xs[i])), 1e-12, "d softplus / dx at " + exercise::number(xs[i]));
        Generator gen(2);
        Tensor small = raw::mul(raw::randn({3, 4}, gen, kFloat64), 3.0);
        small.set_requires_grad(true);
        GradcheckResult check = gradcheck([](const std::vector<Tensor>& in) { return sum(mul(exercise::softplus(in[0]), in[0])); }, {small});
        exercise::expect(check.passed, "softplus's backward: " + check.report());
    });
}
