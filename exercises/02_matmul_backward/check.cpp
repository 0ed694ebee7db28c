// The check of exercise 2b: dX, dW and db of Y = X W + b against central
// finite differences of L = sum(dY * Y) in float64, and against autograd's
// backward of matmul and the broadcast add.
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "exercises/02_matmul_backward/matmul_backward.h"
#include "exercises/exercise.h"
#include "tensor/raw_ops.h"

using namespace nc;

int main() {
    return exercise::run("2b (matmul backward)", [] {
        std::mt19937 rng(2);
        std::normal_distribution<double> normal(0.0, 1.0);
        const int64_t N = 4, K = 3, M = 5;
        std::vector<double> X(N * K), W(K * M), b(M), dY(N * M);
        for (auto* v : {&X, &W, &b, &dY})
            for (double& x : *v) x = normal(rng);
        exercise::MatmulGrads g = exercise::matmul_backward(X, W, N, K, M, dY);
        exercise::expect(g.dX.size() == X.size() && g.dW.size() == W.size() && g.db.size() == b.size(),
                         "dX, dW and db must be shaped as X, W and b");
        auto loss = [&] {
            double total = 0;
            for (int64_t n = 0; n < N; ++n)
                for (int64_t m = 0; m < M; ++m) {
                    double y = b[m];
                    for (int64_t k = 0; k < K; ++k) y += X[n * K + k] * W[k * M + m];
                    total += dY[n * M + m] * y;
                }
            return total;
        };
        auto check = [&](const std::string& name, const std::vector<double>& got, std::vector<double>& values) {
            for (size_t i = 0; i < values.size(); ++i)
                exercise::expect_close(got[i], exercise::central_difference(values[i], 1e-5, loss), 1e-8,
                                       name + "[" + std::to_string(i) + "]");
        };
        check("dX", g.dX, X);
        check("dW", g.dW, W);
        check("db", g.db, b);
        Tensor xt = raw::from_vector(X, {N, K}), wt = raw::from_vector(W, {K, M}), bt = raw::from_vector(b, {M});
        for (Tensor* t : {&xt, &wt, &bt}) t->set_requires_grad(true);
        backward(sum(mul(add(matmul(xt, wt), bt), raw::from_vector(dY, {N, M}))));
        exercise::expect(exercise::largest_difference(g.dX, xt.grad().to_vector()) < 1e-12, "dX differs from autograd's");
        exercise::expect(exercise::largest_difference(g.dW, wt.grad().to_vector()) < 1e-12, "dW differs from autograd's");
        exercise::expect(exercise::largest_difference(g.db, bt.grad().to_vector()) < 1e-12, "db differs from autograd's");
    });
}
