// The check of exercise 6b: RoPE's dx against central finite differences
// of L = sum(dy * y) in float64 (y from the rotation written here), and
// against the library's backward of apply_rope (the fused op of tensor/ops/rope.h, run by autograd).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "exercises/06_rope_backward/rope_backward.h"
#include "exercises/exercise.h"
#include "nn/rope.h"
#include "tensor/random.h"
#include "tensor/raw_ops.h"

using namespace nc;

int main() {
    return exercise::run("6b (RoPE backward)", [] {
        Generator gen(6);
        const int64_t T = 5, D = 8;
        const double theta = 100.0;  // a small base: every pair turns by a visible angle
        std::vector<double> x = raw::randn({T, D}, gen, kFloat64).to_vector(), dy = raw::randn({T, D}, gen, kFloat64).to_vector();
        std::vector<double> dx = exercise::rope_backward(dy, T, D, theta);
        exercise::expect(dx.size() == dy.size(), "dx must be shaped as dy");
        auto loss = [&] {
            double total = 0;
            for (int64_t m = 0; m < T; ++m)
                for (int64_t i = 0; i < D / 2; ++i) {
                    double a = m * std::pow(theta, -2.0 * i / D), x1 = x[m * D + i], x2 = x[m * D + i + D / 2];
                    total += dy[m * D + i] * (x1 * std::cos(a) - x2 * std::sin(a)) +
                             dy[m * D + i + D / 2] * (x1 * std::sin(a) + x2 * std::cos(a));
                }
            return total;
        };
        for (size_t k = 0; k < x.size(); ++k)
            exercise::expect_close(dx[k], exercise::central_difference(x[k], 1e-6, loss), 1e-7, "dx[" + std::to_string(k) + "]");
        Tensor xt = raw::from_vector(x, {T, D});
        xt.set_requires_grad(true);
        nn::RopeTables tables = nn::rope_tables(T, D, theta, kFloat64);
        backward(sum(mul(nn::apply_rope(xt, tables), raw::from_vector(dy, {T, D}))));
        exercise::expect(exercise::largest_difference(dx, xt.grad().to_vector()) < 1e-12,
                         "dx differs from the library's backward of apply_rope");
    });
}
