// The check of exercise 4b: the Post-Norm step's dx and dW against central
// finite differences of L = sum(dy * y) in float64, y computed here from
// the definition, at a = 1 (Post-Norm) and a = 2.6 (DeepNorm-like).
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "exercises/04_post_norm_backward/post_norm_backward.h"
#include "exercises/exercise.h"

int main() {
    return exercise::run("4b (Post-Norm backward)", [] {
        std::mt19937 rng(4);
        std::normal_distribution<double> normal(0.0, 1.0);
        const int64_t C = 6;
        const double eps = 1e-5;
        for (double a : {1.0, 2.6}) {
            std::vector<double> x(C), W(C * C), dy(C);
            for (double& v : x) v = normal(rng);
            for (double& v : W) v = 0.3 * normal(rng);
            for (double& v : dy) v = normal(rng);
            exercise::PostNormGrads g = exercise::post_norm_backward(x, W, C, a, eps, dy);
            std::string where = "a = " + exercise::number(a) + ": ";
            exercise::expect(g.dx.size() == (size_t)C && g.dW.size() == (size_t)(C * C),
                             where + "dx must have C numbers and dW C x C");
            auto loss = [&] {
                std::vector<double> s(C, 0.0);
                double mean = 0, var = 0, total = 0;
                for (int64_t i = 0; i < C; ++i) {
                    s[i] = a * x[i];
                    for (int64_t j = 0; j < C; ++j) s[i] += W[i * C + j] * x[j];
                    mean += s[i] / C;
                }
                for (double v : s) var += (v - mean) * (v - mean) / C;
                for (int64_t i = 0; i < C; ++i) total += dy[i] * (s[i] - mean) / std::sqrt(var + eps);
                return total;
            };
            auto numeric = [&](double& value) { return exercise::central_difference(value, 1e-6, loss); };
            for (int64_t j = 0; j < C; ++j) exercise::expect_close(g.dx[j], numeric(x[j]), 1e-7, where + "dx[" + std::to_string(j) + "]");
            for (int64_t k = 0; k < C * C; ++k) exercise::expect_close(g.dW[k], numeric(W[k]), 1e-7, where + "dW[" + std::to_string(k) + "]");
        }
    });
}
