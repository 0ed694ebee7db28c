#include "analysis/eigen.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "tensor/error.h"

namespace nc {
namespace diag {

SymmetricEigen symmetric_eigen(const std::vector<double>& input, int64_t n, bool with_vectors) {
    if (n < 0 || (int64_t)input.size() != n * n)
        throw Error("symmetric_eigen: expected " + std::to_string(n) + " x " + std::to_string(n) + " values, got " +
                    std::to_string(input.size()));
    // Work on the symmetrized matrix (A + A^T) / 2.
    std::vector<double> a(n * n);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) a[i * n + j] = 0.5 * (input[i * n + j] + input[j * n + i]);
    std::vector<double> v;
    if (with_vectors) {
        v.assign(n * n, 0.0);
        for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
    }
    double total = 0;
    for (double x : a) total += x * x;
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0;
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
        if (off <= 1e-30 * total || off == 0) break;
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) {
                double apq = a[p * n + q];
                if (apq == 0) continue;
                // The rotation angle that zeroes a_pq: t = tan(angle), the smaller root of
                // t^2 + 2 theta t - 1 = 0 with theta = (a_qq - a_pp) / (2 a_pq).
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
                double c = 1 / std::sqrt(t * t + 1), s = t * c;
                for (int64_t k = 0; k < n; ++k) {  // columns p and q: A J
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int64_t k = 0; k < n; ++k) {  // rows p and q: J^T (A J)
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                if (with_vectors)
                    for (int64_t k = 0; k < n; ++k) {
                        double vkp = v[k * n + p], vkq = v[k * n + q];
                        v[k * n + p] = c * vkp - s * vkq;
                        v[k * n + q] = s * vkp + c * vkq;
                    }
            }
    }
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return a[i * n + i] < a[j * n + j]; });
    SymmetricEigen result;
    for (int64_t i : order) result.values.push_back(a[i * n + i]);
    if (with_vectors) {
        result.vectors.resize(n * n);
        for (int64_t j = 0; j < n; ++j)
            for (int64_t k = 0; k < n; ++k) result.vectors[k * n + j] = v[k * n + order[j]];
    }
    return result;
}

}  // namespace diag
}  // namespace nc
