// A reference solution of exercise 6b: the transpose of a rotation by a is
// the rotation by -a, so dx is dy rotated back: cos stays, sin flips sign.
#include "exercises/06_rope_backward/rope_backward.h"

#include <cmath>

namespace exercise {

std::vector<double> rope_backward(const std::vector<double>& dy, int64_t T, int64_t D, double theta) {
    std::vector<double> dx(dy.size());
    const int64_t half = D / 2;
    for (int64_t m = 0; m < T; ++m)
        for (int64_t i = 0; i < half; ++i) {
            double angle = m * std::pow(theta, -2.0 * i / D), c = std::cos(angle), s = std::sin(angle);
            double a = dy[m * D + i], b = dy[m * D + i + half];
            dx[m * D + i] = a * c + b * s;
            dx[m * D + i + half] = -a * s + b * c;
        }
    return dx;
}

}  // namespace exercise
