// The check of exercise 13: beta0 against closed forms. For x ~ N(0, 1):
//   s(x) = x:      c0 = 0, c1 = 1, v = 1                        -> beta0 = 1
//   ReLU:          c0 = 1/sqrt(2 pi), c1 = 1/2, E[s^2] = 1/2     -> (1/4) / (1/2 - 1/(2 pi))
//   sin:           c0 = 0, c1 = exp(-1/2), E[s^2] = (1 - e^-2)/2 -> 2 / (e - 1/e)
//   x^2:           c1 = E[x^3] = 0                               -> 0
//   tanh + 3 and tanh: the same (the constant only moves c0).
#include <cmath>
#include <string>

#include "exercises/13_hermite_beta0/beta0.h"
#include "exercises/exercise.h"

int main() {
    return exercise::run("13 (Hermite beta0)", [] {
        const double pi = std::acos(-1.0), e = std::exp(1.0);
        exercise::expect_close(exercise::beta0([](double x) { return x; }), 1.0, 1e-6, "beta0 of s(x) = x");
        exercise::expect_close(exercise::beta0([](double x) { return x > 0 ? x : 0.0; }), 0.25 / (0.5 - 1 / (2 * pi)), 1e-6,
                               "beta0 of ReLU");
        exercise::expect_close(exercise::beta0([](double x) { return std::sin(x); }), 2 / (e - 1 / e), 1e-6, "beta0 of sin");
        exercise::expect_close(exercise::beta0([](double x) { return x * x; }), 0.0, 1e-6, "beta0 of s(x) = x^2");
        double tanh0 = exercise::beta0([](double x) { return std::tanh(x); });
        exercise::expect(tanh0 > 0.9 && tanh0 < 0.95, "beta0 of tanh should lie between 0.9 and 0.95, got " + exercise::number(tanh0));
        exercise::expect_close(exercise::beta0([](double x) { return std::tanh(x) + 3; }), tanh0, 1e-6,
                               "beta0 of tanh + 3 (a constant changes c0 only)");
        exercise::expect_close(exercise::beta0([](double x) { return 5 * std::tanh(x); }), tanh0, 1e-6,
                               "beta0 of 5 tanh (a scale cancels)");
    });
}
