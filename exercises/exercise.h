// exercise.h — what every exercise's check shares (exercises/README.md).
//
// The file you fill in starts as a stub that throws NotYet. The check
// program catches it and says "not yet", so `make test` stays green while
// you work; once your code runs, the check compares it with an independent
// reference and fails loudly if it is wrong. `make test` also builds the
// same check against the reference solution (solution.cpp), which must
// pass: the exercise itself cannot rot.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace exercise {

struct NotYet : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Thrown by a check that cannot run on this machine (a CUDA exercise
// without a GPU): it says why instead of passing or failing.
struct Skipped : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Runs the checks; prints one verdict line and returns the exit status.
inline int run(const char* name, const std::function<void()>& checks) {
    try {
        checks();
    } catch (const NotYet& e) {
        std::printf("exercise %s: not yet (%s)\n", name, e.what());
        return 0;
    } catch (const Skipped& e) {
        std::printf("exercise %s: skipped: %s\n", name, e.what());
        return 0;
    } catch (const std::exception& e) {
        std::printf("exercise %s: FAILED: %s\n", name, e.what());
        return 1;
    }
    std::printf("exercise %s: passed\n", name);
    return 0;
}

// A number as a message shows it: 1000, 2.5e-07, inf.
inline std::string number(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", x);
    return text;
}

// Throws with `what` unless |got - want| <= tol (1 + |want|).
inline void expect_close(double got, double want, double tol, const std::string& what) {
    if (!(std::fabs(got - want) <= tol * (1 + std::fabs(want))))
        throw std::runtime_error(what + ": got " + number(got) + ", expected " + number(want));
}

// The central difference (f(value + h) - f(value - h)) / 2h of a loss f that
// reads `value` (a number of an input, which is restored afterwards): what
// the backward exercises compare each gradient with, in float64.
inline double central_difference(double& value, double h, const std::function<double()>& f) {
    const double kept = value;
    value = kept + h;
    double up = f();
    value = kept - h;
    double down = f();
    value = kept;
    return (up - down) / (2 * h);
}

// The largest |a_i - b_i| (tensors' values: Tensor::to_vector()).
inline double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) throw std::runtime_error("compared " + std::to_string(a.size()) + " values with " + std::to_string(b.size()));
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

// The best of `runs` timings of `body`, in seconds: what a check prints
// beside its verdict, never what it asserts (a shared machine is noisy).
inline double best_seconds(const std::function<void()>& body, int runs) {
    double best = 1e30;
    for (int run = 0; run < runs; ++run) {
        auto start = std::chrono::steady_clock::now();
        body();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

inline void expect(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what);
}

}  // namespace exercise
