// A reference solution of exercise 11. The seed-to-seed luck is shared by
// both numbers of a seed, so it cancels in the differences d_i = variant[i]
// - baseline[i]; the d_i are n independent draws of the quantity we want.
// Their mean is the center, and the interval is mean +- t_975(n - 1) s / sqrt(n)
// with s their sample standard deviation.
#include "exercises/11_paired_interval/paired_interval.h"

#include <cmath>

namespace exercise {

Interval paired_interval(const std::vector<double>& variant, const std::vector<double>& baseline) {
    const size_t n = variant.size();
    if (n != baseline.size() || n < 2) throw std::runtime_error("paired_interval: needs two lists of the same length >= 2");
    std::vector<double> d(n);
    double mean = 0;
    for (size_t i = 0; i < n; ++i) mean += (d[i] = variant[i] - baseline[i]) / n;
    double squares = 0;
    for (double x : d) squares += (x - mean) * (x - mean);
    double half = t_975((int)n - 1) * std::sqrt(squares / (n - 1)) / std::sqrt((double)n);
    return {mean, mean - half, mean + half};
}

}  // namespace exercise
