// The check of exercise 8b: S'(q) against a long-double reference, the
// power series summed to 40 terms for q <= 4 (its terms fall like
// q^k / (2k+1)!, so 40 leave nothing) and the closed form in long double
// above, where C - S no longer cancels. Tolerance: 1e-13 relative, or
// 1e-15 absolute near S's turning points, where S' crosses zero.
#include <cmath>
#include <string>
#include <vector>

#include "exercises/08_geodesic_derivative/s_prime.h"
#include "exercises/exercise.h"

namespace {

long double reference(long double q) {
    if (q > 4) {
        long double r = std::sqrt(q);
        return (std::cos(r) - std::sin(r) / r) / (2 * q);
    }
    long double sum = 0, term_factorial = 6;  // (2k+1)! for k = 1
    long double power = 1;                    // q^(k-1)
    for (int k = 1; k <= 40; ++k) {
        sum += (k % 2 ? -1.0L : 1.0L) * k * power / term_factorial;
        power *= q;
        term_factorial *= (long double)(2 * k + 2) * (2 * k + 3);
    }
    return sum;
}

}  // namespace

int main() {
    return exercise::run("8b (S'(q), all angles)", [] {
        std::vector<double> qs = {0, 1e-300, 1e-12, 1e-8, 1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.0999999999, 0.1, 0.1000000001,
                                  0.2, 0.5, 1, 2, 4, 4.0000001, 9, 25, 100};
        for (int i = 0; i <= 2000; ++i) qs.push_back(30.0 * i / 2000);
        for (int i = -40; i <= 40; ++i) qs.push_back(std::pow(10.0, i / 10.0) * 1e-3);  // dense around small q
        for (double q : qs) {
            double got = exercise::s_prime(q);
            double want = (double)reference(q);
            double error = std::fabs(got - want);
            if (!(error <= 1e-13 * std::fabs(want) || error <= 1e-15))
                throw std::runtime_error("S'(" + exercise::number(q) + "): got " + exercise::number(got) + ", expected " +
                                         exercise::number(want) + " (relative error " +
                                         exercise::number(error / std::fabs(want)) + ")");
        }
        exercise::expect_close(exercise::s_prime(0), -1.0 / 6, 1e-15, "S'(0), which is -1/6");
    });
}
