// The reference solution of exercise 5 (make test checks it with check.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "exercises/05_top_p/top_p.h"

namespace exercise {

std::vector<double> top_p_distribution(const std::vector<double>& logits, double temperature, double top_p) {
    // softmax(logits / T) with the largest logit subtracted: every exponent
    // is <= 0, so nothing overflows, and the largest term is exactly 1.
    double largest = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double total = 0;
    for (size_t v = 0; v < logits.size(); ++v) total += p[v] = std::exp((logits[v] - largest) / temperature);
    for (double& x : p) x /= total;

    // The tokens from most to least likely; keep a prefix whose mass
    // reaches top_p, then the ties of its last token.
    std::vector<size_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    size_t kept = 0;
    double mass = 0;
    while (kept < order.size() && (kept == 0 || mass < top_p || p[order[kept]] == p[order[kept - 1]])) mass += p[order[kept++]];

    std::vector<double> out(p.size(), 0.0);
    for (size_t r = 0; r < kept; ++r) out[order[r]] = p[order[r]] / mass;
    return out;
}

}  // namespace exercise
