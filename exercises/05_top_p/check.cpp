// The check of exercise 5: top-p against its definition, evaluated the slow
// way (a token is kept exactly when the tokens strictly more likely than it
// hold less than top_p of the mass), with long double sums, on random
// logits, tied logits and logits of +-1000.
#include <cmath>
#include <random>
#include <string>

#include "exercises/05_top_p/top_p.h"
#include "exercises/exercise.h"

static std::vector<double> by_definition(const std::vector<double>& logits, double temperature, double top_p) {
    size_t V = logits.size();
    long double largest = logits[0], total = 0;
    for (double l : logits) largest = std::max<long double>(largest, l);
    std::vector<long double> p(V);
    for (size_t v = 0; v < V; ++v) total += p[v] = std::exp(((long double)logits[v] - largest) / temperature);
    std::vector<bool> kept(V);
    long double kept_mass = 0;
    for (size_t v = 0; v < V; ++v) {
        long double above = 0;
        for (size_t w = 0; w < V; ++w)
            if (p[w] > p[v]) above += p[w] / total;
        kept[v] = above < top_p;
        if (kept[v]) kept_mass += p[v];
    }
    std::vector<double> out(V);
    for (size_t v = 0; v < V; ++v) out[v] = kept[v] ? (double)(p[v] / kept_mass) : 0.0;
    return out;
}

static void compare(const std::vector<double>& logits, double temperature, double top_p, const std::string& what) {
    std::vector<double> got = exercise::top_p_distribution(logits, temperature, top_p);
    std::vector<double> want = by_definition(logits, temperature, top_p);
    exercise::expect(got.size() == want.size(), what + ": the distribution must have one entry per logit");
    for (size_t v = 0; v < want.size(); ++v) {
        std::string where = what + " (temperature " + exercise::number(temperature) + ", top_p " +
                            exercise::number(top_p) + "), token " + std::to_string(v);
        exercise::expect(std::isfinite(got[v]), where + ": got " + exercise::number(got[v]));
        exercise::expect((got[v] == 0) == (want[v] == 0),
                         where + (want[v] == 0 ? " must be cut off" : " must be kept") + ", got " + exercise::number(got[v]));
        exercise::expect_close(got[v], want[v], 1e-12, where);
    }
}

int main() {
    return exercise::run("5 (top-p sampling)", [] {
        std::mt19937 rng(5);
        std::normal_distribution<double> normal(0.0, 3.0);
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<double> logits(50);
            for (double& l : logits) l = normal(rng);
            for (double temperature : {0.5, 1.0, 2.0})
                for (double top_p : {0.05, 0.3, 0.9, 1.0}) compare(logits, temperature, top_p, "random logits");
        }
        // Ties: four equally likely tokens and a fifth far behind.
        compare({2, 2, 2, 2, -5}, 1.0, 0.3, "tied logits");
        compare({2, 2, 2, 2, -5}, 1.0, 0.999999, "tied logits");
        // Logits whose exponentials overflow a double.
        compare({1000, 999, -1000, 998.5}, 1.0, 0.8, "logits near 1000");
        compare({-1000, -1001, -1003}, 0.7, 0.5, "logits near -1000");
    });
}
