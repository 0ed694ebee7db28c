// The reference solution of exercise 8 (make test checks it with check.cpp).
#include <cmath>

#include "exercises/08_geodesic/geodesic.h"

namespace exercise {

static double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double total = 0;
    for (size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
    return total;
}

std::vector<double> geodesic_step(const std::vector<double>& x, const std::vector<double>& u, double a) {
    double c = dot(u, x) / dot(x, x);
    std::vector<double> v(x.size());
    for (size_t i = 0; i < x.size(); ++i) v[i] = u[i] - c * x[i];
    double v_norm = std::sqrt(dot(v, v)), x_norm = std::sqrt(dot(x, x));
    if (v_norm == 0 || a == 0) return x;
    double theta = a * v_norm / x_norm;
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = std::cos(theta) * x[i] + x_norm * std::sin(theta) * v[i] / v_norm;
    return y;
}

}  // namespace exercise
