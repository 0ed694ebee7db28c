// The reference solution of exercise 6 (make test checks it with check.cpp).
#include <cmath>

#include "exercises/06_rope/rope.h"

namespace exercise {

std::vector<double> rope_interleaved(const std::vector<double>& x, int64_t T, int64_t D, double theta) {
    std::vector<double> y(x.size());
    for (int64_t m = 0; m < T; ++m)
        for (int64_t i = 0; i < D / 2; ++i) {
            double angle = (double)m * std::pow(theta, -2.0 * (double)i / (double)D);
            double c = std::cos(angle), s = std::sin(angle);
            double a = x[m * D + 2 * i], b = x[m * D + 2 * i + 1];
            y[m * D + 2 * i] = a * c - b * s;
            y[m * D + 2 * i + 1] = a * s + b * c;
        }
    return y;
}

}  // namespace exercise
