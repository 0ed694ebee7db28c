// The check of exercise 12: DyT's four gradients against central finite
// differences of L = sum(dy * y) in float64 (y from std::tanh, not from the
// library), and against the library's fused DyT kernel (tensor/ops/dyt.h),
// at ordinary inputs and where tanh saturates.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "exercises/12_dyt_backward/dyt_backward.h"
#include "exercises/exercise.h"
#include "tensor/ops/dyt.h"
#include "tensor/random.h"
#include "tensor/raw_ops.h"

using namespace nc;

namespace {

// L = sum dy * (gamma tanh(alpha x) + beta), in float64.
double loss(const std::vector<double>& x, int64_t C, double alpha, const std::vector<double>& gamma,
            const std::vector<double>& beta, const std::vector<double>& dy) {
    double total = 0;
    for (size_t k = 0; k < x.size(); ++k) {
        size_t j = k % C;
        total += dy[k] * (gamma[j] * std::tanh(alpha * x[k]) + beta[j]);
    }
    return total;
}

void check_case(const std::string& name, const std::vector<double>& x_in, int64_t rows, int64_t C, double alpha_in,
                const std::vector<double>& gamma_in, const std::vector<double>& beta_in, const std::vector<double>& dy) {
    std::vector<double> x = x_in, gamma = gamma_in, beta = beta_in;
    double alpha = alpha_in;
    exercise::DyTGrads g = exercise::dyt_backward(x, rows, C, alpha, gamma, dy);
    exercise::expect(g.dx.size() == x.size() && g.dgamma.size() == (size_t)C && g.dbeta.size() == (size_t)C,
                     name + ": dx must have rows x C numbers, dgamma and dbeta C each");
    auto f = [&] { return loss(x, C, alpha, gamma, beta, dy); };
    // Finite differences: accurate to about 1e-9 here; a wrong formula is off by far more.
    const double tol = 1e-7;
    for (size_t k = 0; k < x.size(); ++k)
        exercise::expect_close(g.dx[k], exercise::central_difference(x[k], 1e-6, f), tol, name + ": dL/dx[" + std::to_string(k) + "]");
    exercise::expect_close(g.dalpha, exercise::central_difference(alpha, 1e-6, f), tol, name + ": dL/dalpha");
    for (int64_t j = 0; j < C; ++j) {
        exercise::expect_close(g.dgamma[j], exercise::central_difference(gamma[j], 1e-6, f), tol, name + ": dL/dgamma[" + std::to_string(j) + "]");
        exercise::expect_close(g.dbeta[j], exercise::central_difference(beta[j], 1e-6, f), tol, name + ": dL/dbeta[" + std::to_string(j) + "]");
    }
    // The library's fused kernel, in float64, on the same numbers.
    raw::DyTBackward lib = raw::dyt_backward(raw::from_vector(dy, {rows, C}), raw::from_vector(x, {rows, C}),
                                             raw::full({1}, alpha, kFloat64), raw::from_vector(gamma, {C}), true);
    exercise::expect(exercise::largest_difference(g.dx, lib.dx.to_vector()) < 1e-12, name + ": dx differs from the fused kernel's");
    exercise::expect_close(g.dalpha, lib.dalpha.item(), 1e-12, name + ": dalpha against the fused kernel's");
    exercise::expect(exercise::largest_difference(g.dgamma, lib.dweight.to_vector()) < 1e-12,
                     name + ": dgamma differs from the fused kernel's");
    exercise::expect(exercise::largest_difference(g.dbeta, lib.dbias.to_vector()) < 1e-12,
                     name + ": dbeta differs from the fused kernel's");
}

}  // namespace

int main() {
    return exercise::run("12 (DyT backward)", [] {
        Generator gen(12);
        const int64_t rows = 5, C = 4;
        std::vector<double> x = raw::randn({rows, C}, gen, kFloat64).to_vector();
        std::vector<double> dy = raw::randn({rows, C}, gen, kFloat64).to_vector();
        std::vector<double> gamma = {1.0, -0.5, 2.0, 0.25}, beta = {0.1, 0.0, -0.3, 0.7};
        check_case("ordinary inputs", x, rows, C, 0.8, gamma, beta, dy);
        // Saturated: alpha x = +-40, where tanh is 1 to double precision and
        // every gradient through it is 0; only dgamma and dbeta remain.
        std::vector<double> big(rows * C);
        for (size_t k = 0; k < big.size(); ++k) big[k] = (k % 2 ? 1 : -1) * 20.0;
        check_case("saturated inputs", big, rows, C, 2.0, gamma, beta, dy);
    });
}
