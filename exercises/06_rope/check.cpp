// The check of exercise 6: the interleaved RoPE against the library's
// rotate_half RoPE (nn/rope.h) on permuted features, and against what a
// rotation must do: keep each row's length, and make the score of a query
// at m and a key at n depend on m - n only.
#include <random>
#include <string>

#include "exercises/06_rope/rope.h"
#include "exercises/exercise.h"
#include "nn/rope.h"

using namespace nc;

static double dot(const std::vector<double>& a, int64_t row_a, const std::vector<double>& b, int64_t row_b, int64_t D) {
    double total = 0;
    for (int64_t i = 0; i < D; ++i) total += a[row_a * D + i] * b[row_b * D + i];
    return total;
}

int main() {
    return exercise::run("6 (RoPE by hand)", [] {
        const int64_t T = 12, D = 16;
        const double theta = 10000;
        std::mt19937 rng(6);
        std::normal_distribution<double> normal(0.0, 1.0);
        std::vector<double> x(T * D);
        for (double& v : x) v = normal(rng);

        std::vector<double> y = exercise::rope_interleaved(x, T, D, theta);
        exercise::expect(y.size() == x.size(), "rope_interleaved must return T * D = " + std::to_string(T * D) +
                                                   " values, it returned " + std::to_string(y.size()));

        // The library's RoPE on the permuted features: even features first.
        std::vector<double> halves(T * D);
        for (int64_t m = 0; m < T; ++m)
            for (int64_t i = 0; i < D / 2; ++i) {
                halves[m * D + i] = x[m * D + 2 * i];
                halves[m * D + i + D / 2] = x[m * D + 2 * i + 1];
            }
        nn::RopeTables tables = nn::rope_tables(T, D, theta, kFloat64);
        std::vector<double> library = nn::apply_rope(raw::from_vector(halves, {T, D}), tables).to_vector();
        for (int64_t m = 0; m < T; ++m)
            for (int64_t i = 0; i < D; ++i) {
                int64_t from = i % 2 == 0 ? i / 2 : i / 2 + D / 2;  // where feature i sits in the library's layout
                exercise::expect_close(y[m * D + i], library[m * D + from], 1e-12,
                                       "y[" + std::to_string(m) + "][" + std::to_string(i) +
                                           "] (the library's RoPE on the permuted features)");
            }

        // A rotation keeps lengths, and at position 0 it is the identity.
        for (int64_t m = 0; m < T; ++m)
            exercise::expect_close(dot(y, m, y, m, D), dot(x, m, x, m, D), 1e-12,
                                   "the squared length of row " + std::to_string(m));
        for (int64_t i = 0; i < D; ++i) exercise::expect_close(y[i], x[i], 1e-15, "row 0 (position 0 rotates by 0)");

        // The same query and key vectors at every position: the score
        // depends on m - n only.
        std::vector<double> q(D), k(D), qs(T * D), ks(T * D);
        for (double& v : q) v = normal(rng);
        for (double& v : k) v = normal(rng);
        for (int64_t m = 0; m < T; ++m)
            for (int64_t i = 0; i < D; ++i) qs[m * D + i] = q[i], ks[m * D + i] = k[i];
        std::vector<double> rq = exercise::rope_interleaved(qs, T, D, theta), rk = exercise::rope_interleaved(ks, T, D, theta);
        for (int64_t m = 3; m < T; ++m)
            exercise::expect_close(dot(rq, m, rk, m - 3, D), dot(rq, 3, rk, 0, D), 1e-12,
                                   "the score of query " + std::to_string(m) + " and key " + std::to_string(m - 3) +
                                       " (it must equal that of query 3 and key 0)");
    });
}
