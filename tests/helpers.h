// helpers.h — small tools shared by the tests.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/config.h"
#include "nn/models.h"
#include "tensor/cpu/gemm_kernels.h"

namespace nc_test {

using nc::Tensor;

// The worst error so far, updated with a new one, where a NaN is the worst
// of all and stays: std::max(worst, NaN) returns worst (every comparison
// with NaN is false), so a kernel that writes NaN would pass a check of
// the largest error unseen.
inline double worst_of(double worst, double error) {
    return std::isnan(worst) || std::isnan(error) ? NAN : std::max(worst, error);
}

// A small version of a model configuration: 2 layers, width 32, 2 heads,
// vocabulary 16, sequences up to 8 (for training and memory tests).
inline nc::nn::TransformerConfig tiny_config(nc::nn::TransformerConfig c) {
    c.n_layer = 2;
    c.n_embd = 32;
    c.n_head = 2;
    c.vocab_size = 16;
    c.block_size = 8;
    c.swiglu_multiple = 8;
    return c;
}

// Every element of `t` within tol of `expected`; on failure prints the
// largest difference and where it is.
inline void check_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
    std::vector<double> got = t.to_vector();
    REQUIRE(got.size() == expected.size());
    if (got.empty()) return;  // nothing to compare (and no element to name below)
    double worst = 0;
    size_t where = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        double diff = std::fabs(got[i] - expected[i]);
        if (std::isnan(got[i]) != std::isnan(expected[i])) diff = INFINITY;
        if (std::isnan(got[i]) && std::isnan(expected[i])) diff = 0;
        if (diff > worst) { worst = diff; where = i; }
    }
    INFO("largest difference " << worst << " at element " << where << " (got " << got[where] << ", expected "
                               << expected[where] << ")");
    CHECK(worst <= tol);
}

// A float64 vector of these values, a leaf requiring grad.
inline Tensor leaf(const std::vector<double>& values) {
    Tensor t = nc::raw::from_vector(values, {(int64_t)values.size()});
    t.set_requires_grad(true);
    return t;
}

// A float64 leaf with reproducible random values, requiring grad.
inline Tensor leaf(const nc::Shape& shape, uint64_t seed, double scale = 1.0, double shift = 0.0) {
    nc::Generator gen(seed);
    Tensor t = nc::raw::add(nc::raw::mul(nc::raw::randn(shape, gen, nc::kFloat64), scale), shift);
    t.set_requires_grad(true);
    return t;
}

// A fresh, empty directory under the system's temporary directory.
inline std::filesystem::path temp_dir(const std::string& name) {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

inline void check_gradcheck(const nc::GradcheckFn& fn, const std::vector<Tensor>& inputs) {
    nc::GradcheckResult r = nc::gradcheck(fn, inputs);
    INFO(r.report());
    CHECK(r.passed);
}

// Asserts that `body` throws nc::Error whose message contains every fragment.
template <typename Body>
void check_error(Body body, const std::vector<std::string>& fragments) {
    try {
        body();
        FAIL("expected nc::Error");
    } catch (const nc::Error& e) {
        std::string msg = e.what();
        INFO("message: " << msg);
        for (const std::string& f : fragments) CHECK(msg.find(f) != std::string::npos);
    }
}

// The order every dot_columns kernel adds in (gemm_kernels.h), written with
// std::fma so that it is exact here whatever the compiler does: 16 partial
// sums, partial i taking k = i, i + 16, ..., then added left to right.
inline float dot_in_kernel_order(int64_t K, const float* a, const float* w) {
    float partial[nc::cpu::kDotLanes] = {};
    for (int64_t k = 0; k < K; ++k)
        partial[k % nc::cpu::kDotLanes] = std::fma(a[k], w[k], partial[k % nc::cpu::kDotLanes]);
    float sum = 0;
    for (float p : partial) sum += p;
    return sum;
}

}  // namespace nc_test
