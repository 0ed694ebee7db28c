// emulated_helpers.h — what the emulated kernel tests share: reproducible
// inputs, a long double derivative, and one comparison that names the
// worst element. (emulated_column_sums.h has the two-pass column sums.)
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace nc_test {

// count values drawn from N(mean, 1), as T.
template <typename T>
std::vector<T> normal(size_t count, unsigned seed, double mean = 0.0) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> dist(mean, 1.0);
    std::vector<T> x(count);
    for (T& v : x) v = (T)dist(gen);
    return x;
}

// d/dz of f at z by central differences in long double: with h = 1e-6 the
// truncation error is ~1e-12 f''' and the rounding error ~1e-19 |f| / h.
inline long double derivative(const std::function<long double(long double)>& f, long double z) {
    const long double h = 1e-6L;
    return (f(z + h) - f(z - h)) / (2 * h);
}

// |got[e] - want[e]| <= tol[e] for every element; on failure, the worst one
// (a NaN counts as the worst, and stays the worst).
template <typename T>
void check_within(const char* what, const std::vector<T>& got, const std::vector<long double>& want,
                  const std::vector<double>& tol) {
    REQUIRE(got.size() == want.size());
    REQUIRE(tol.size() == want.size());
    double worst = 0;
    size_t where = 0;
    for (size_t e = 0; e < got.size(); ++e) {
        double excess = std::fabs((double)got[e] - (double)want[e]) / tol[e];
        if (std::isnan(excess)) excess = INFINITY;  // a NaN where a number belongs, or the other way
        if (excess > worst) worst = excess, where = e;
    }
    if (got.empty()) return;
    INFO(what << ": element " << where << " is " << (double)got[where] << ", the reference " << (double)want[where]
              << ": " << worst << " x the tolerance " << tol[where]);
    CHECK(worst <= 1.0);
}

// The tolerance of a T result computed in double from T inputs, against a
// long double reference: `ulps` units in the last place of T, of the
// largest reference value (a row's scale) or 1.
inline std::vector<double> scale_tolerance(const std::vector<long double>& want, bool is_float, double float_ulps,
                                           double double_tol) {
    double largest = 1;
    for (long double w : want) largest = std::max(largest, (double)std::fabs(w));
    double tol = is_float ? float_ulps * 0x1p-24 * largest : double_tol * largest;
    return std::vector<double>(want.size(), tol);
}

}  // namespace nc_test
