// The check of exercise 3b: LayerNorm's three gradients against central
// finite differences of L = sum(dy * y) in float64 (y computed here from
// the definition, not by the library), and against the library's fused
// kernel (tensor/ops/norms.h), on ordinary rows and on rows of mean 10 and
// spread 0.01 (dx a hundred times larger, eps a tenth of the variance).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "exercises/03_layer_norm_backward/layer_norm_backward.h"
#include "exercises/exercise.h"
#include "tensor/ops/norms.h"
#include "tensor/random.h"
#include "tensor/raw_ops.h"

using namespace nc;

namespace {

double loss(const std::vector<double>& x, int64_t rows, int64_t C, const std::vector<double>& gamma,
            const std::vector<double>& beta, double eps, const std::vector<double>& dy) {
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < C; ++j) mu += x[i * C + j] / C;
        for (int64_t j = 0; j < C; ++j) var += (x[i * C + j] - mu) * (x[i * C + j] - mu) / C;
        for (int64_t j = 0; j < C; ++j)
            total += dy[i * C + j] * (gamma[j] * (x[i * C + j] - mu) / std::sqrt(var + eps) + beta[j]);
    }
    return total;
}

void check_case(const std::string& name, std::vector<double> x, int64_t rows, int64_t C, double spread) {
    Generator gen(3);
    std::vector<double> dy = raw::randn({rows, C}, gen, kFloat64).to_vector();
    std::vector<double> gamma = {1.0, -0.5, 2.0, 0.25, 1.5}, beta = {0.1, 0.0, -0.3, 0.7, 0.2};
    const double eps = 1e-5;
    exercise::LayerNormGrads g = exercise::layer_norm_backward(x, rows, C, gamma, eps, dy);
    exercise::expect(g.dx.size() == x.size() && g.dgamma.size() == (size_t)C && g.dbeta.size() == (size_t)C,
                     name + ": dx must have rows x C numbers, dgamma and dbeta C each");
    auto f = [&] { return loss(x, rows, C, gamma, beta, eps, dy); };
    // dx is of size 1 / spread; the step and the tolerance scale with it.
    for (size_t k = 0; k < x.size(); ++k)
        exercise::expect_close(g.dx[k] * spread, exercise::central_difference(x[k], 1e-6 * spread, f) * spread, 1e-6,
                               name + ": dL/dx[" + std::to_string(k) + "] (times the spread)");
    for (int64_t j = 0; j < C; ++j) {
        exercise::expect_close(g.dgamma[j], exercise::central_difference(gamma[j], 1e-6, f), 1e-6, name + ": dL/dgamma[" + std::to_string(j) + "]");
        exercise::expect_close(g.dbeta[j], exercise::central_difference(beta[j], 1e-6, f), 1e-6, name + ": dL/dbeta[" + std::to_string(j) + "]");
    }
    Tensor xt = raw::from_vector(x, {rows, C}), gt = raw::from_vector(gamma, {C}), bt = raw::from_vector(beta, {C});
    raw::NormForward saved = raw::layer_norm(xt, gt, bt, eps);
    raw::NormBackward lib = raw::layer_norm_backward(raw::from_vector(dy, {rows, C}), xt, gt, bt, saved);
    std::vector<double> lib_dx = lib.dx.to_vector();
    for (double& v : lib_dx) v *= spread;
    std::vector<double> dx = g.dx;
    for (double& v : dx) v *= spread;
    exercise::expect(exercise::largest_difference(dx, lib_dx) < 1e-9, name + ": dx differs from the fused kernel's");
    exercise::expect(exercise::largest_difference(g.dgamma, lib.dgamma.to_vector()) < 1e-9, name + ": dgamma differs from the fused kernel's");
    exercise::expect(exercise::largest_difference(g.dbeta, lib.dbeta.to_vector()) < 1e-9, name + ": dbeta differs from the fused kernel's");
}

}  // namespace

int main() {
    return exercise::run("3b (LayerNorm backward)", [] {
        Generator gen(30);
        const int64_t rows = 4, C = 5;
        check_case("ordinary rows", raw::randn({rows, C}, gen, kFloat64).to_vector(), rows, C, 1.0);
        // Rows of mean 10 and spread 0.01: dx is a hundred times larger, and
        // eps = 1e-5 is a tenth of the variance, so leaving it out shows.
        std::vector<double> shifted = raw::randn({rows, C}, gen, kFloat64).to_vector();
        for (double& v : shifted) v = 10 + 0.01 * v;
        check_case("rows of mean 10 and spread 0.01", shifted, rows, C, 0.01);
    });
}
