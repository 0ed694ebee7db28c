// Reductions over one or several dims, keepdim, against explicit loops.
#include <omp.h>

#include "helpers.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;

// x[i][j][k] = i*100 + j*10 + k for shape [2, 3, 4]
static Tensor cube() {
    std::vector<double> v;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k) v.push_back(i * 100 + j * 10 + k);
    return raw::from_vector(v, {2, 3, 4});
}

TEST_CASE("sum and mean over one dim, several dims and all dims", "[reduce]") {
    Tensor x = cube();
    Tensor s1 = raw::sum(x, {1});
    CHECK(s1.shape() == Shape{2, 4});
    check_values(s1, {30, 33, 36, 39, 330, 333, 336, 339});
    Tensor s02 = raw::sum(x, {0, 2}, /*keepdim=*/true);
    CHECK(s02.shape() == Shape{1, 3, 1});
    // sum over i,k of (100 i + 10 j + k) = 4*100 + 8*10*j + 2*6
    check_values(s02, {412, 492, 572});
    check_values(raw::sum(x, {-1}), {6, 46, 86, 406, 446, 486});
    check_values(raw::sum(x), {2 * 3 * 4 * 0 + (100 * 12) + (10 * 3 * 8) + (6 * 6)});
    check_values(raw::mean(x, {0, 1}), {60, 61, 62, 63});
    CHECK(raw::mean(x).item() == Approx(61.5));
    // The same on a transposed view.
    Tensor t = raw::transpose(x, 0, 2);  // [4, 3, 2]
    check_values(raw::sum(t, {2}), {100, 120, 140, 102, 122, 142, 104, 124, 144, 106, 126, 146});
}

TEST_CASE("max, argmax and var", "[reduce]") {
    Tensor x = raw::from_vector(std::vector<double>{3, 9, 1, 9, -2, 4}, {2, 3});
    check_values(raw::max(x, {1}), {9, 9});
    check_values(raw::max(x, {0}), {9, 9, 4});
    CHECK(raw::max(x).item() == 9);
    Tensor am = raw::argmax(x, 1);
    CHECK(am.dtype() == kInt64);
    CHECK(am.to_int_vector() == std::vector<int64_t>{1, 0});  // the first of equal maxima
    CHECK(raw::argmax(x, 0, true).shape() == Shape{1, 3});
    // var: unbiased by default. Row 0: mean 13/3.
    double m0 = 13.0 / 3, v0 = ((3 - m0) * (3 - m0) + (9 - m0) * (9 - m0) + (1 - m0) * (1 - m0)) / 2;
    double m1 = 11.0 / 3, v1 = ((9 - m1) * (9 - m1) + (-2 - m1) * (-2 - m1) + (4 - m1) * (4 - m1)) / 2;
    check_values(raw::var(x, {1}), {v0, v1}, 1e-12);
    check_values(raw::var(x, {1}, /*correction=*/0), {v0 * 2 / 3, v1 * 2 / 3}, 1e-12);
    Tensor nan_row = raw::from_vector(std::vector<double>{1, NAN, 3}, {3});
    CHECK(std::isnan(raw::max(nan_row).item()));
}

TEST_CASE("sum_to undoes broadcasting", "[reduce][broadcast]") {
    Tensor g = raw::ones({2, 3, 4}, kFloat64);
    check_values(raw::sum_to(g, {3, 1}), {8, 8, 8});
    check_values(raw::sum_to(g, {4}), {6, 6, 6, 6});
    check_values(raw::sum_to(g, {}), {24});
}

TEST_CASE("float32 sums of many elements stay accurate", "[reduce]") {
    // 1e6 copies of 0.1: a naive float32 running sum drifts by about 1%.
    Tensor x = raw::full({1000000}, 0.1);
    CHECK(raw::sum(x).item() == Approx(100000.0).epsilon(1e-6));
}

// A sum along a row is cut into pieces of 32,768 numbers (tensor/cpu/
// reduce.cpp), shared among the threads when the row is a whole tensor.
// 100,003 numbers: three whole pieces and a short one, spanning 2^-20 to
// 2^20 so that the order of the additions shows in the float64 bits.
static Tensor long_row(DType dtype, uint64_t seed) {
    const int64_t n = 100003;
    Generator gen(seed);
    std::vector<double> normal = raw::randn({n}, gen, kFloat64).to_vector();
    std::vector<double> exponent = raw::rand({n}, gen, kFloat64).to_vector();
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = std::ldexp(normal[i], (int)(40 * exponent[i]) - 20) + 0.25;
    return raw::to_dtype(raw::from_vector(v, {n}), dtype);
}

// Accurate, and the same for the numbers one place further on in memory
// and for a row of a [2, n] tensor (summed on one thread) as for the row alone.
TEST_CASE("a long sum is accurate and the same at another address or beside another row", "[reduce]") {
    for (DType dtype : {kFloat32, kFloat64}) {
        INFO(dtype_name(dtype));
        Tensor x = long_row(dtype, 41);
        const int64_t n = x.numel();
        long double exact = 0, magnitude = 0;
        for (double e : x.to_vector()) {
            exact += e;
            magnitude += std::abs(e);
        }
        const double sum = raw::sum(x).item();
        // float32: the double sum rounded once; float64: the double sum itself.
        CHECK(std::abs(sum - (double)exact) <=
              (dtype == kFloat32 ? 1e-7 * std::abs((double)exact) : 1e-13 * (double)magnitude));
        // One place further on: the numbers at 4 (float32) or 8 bytes past where they were.
        Tensor shifted = raw::zeros({n + 1}, dtype);
        raw::copy_(raw::narrow(shifted, 0, 1, n), x);
        CHECK(raw::sum(raw::narrow(shifted, 0, 1, n)).item() == sum);
        // A row of [2, n]: the same pieces, summed on one thread.
        Tensor two = raw::zeros({2, n}, dtype);
        raw::copy_(raw::narrow(two, 0, 1, 1), raw::view(x, {1, n}));
        CHECK(raw::sum(two, {1}).to_vector()[1] == sum);
    }
}

// [threads]: it runs 2 and 3 OpenMP threads, which qemu-aarch64 (make
// test-arm64) does not finish (tools/arm64_check.sh).
TEST_CASE("a long sum has the same bits with 1, 2 or 3 threads", "[reduce][threads]") {
    for (DType dtype : {kFloat32, kFloat64}) {
        INFO(dtype_name(dtype));
        Tensor x = long_row(dtype, 42);
        const int saved_threads = omp_get_max_threads();
        std::vector<double> sums;
        for (int threads : {1, 2, 3}) {
            omp_set_num_threads(threads);
            sums.push_back(raw::sum(x).item());
        }
        omp_set_num_threads(saved_threads);
        CHECK(sums[0] == sums[1]);
        CHECK(sums[0] == sums[2]);
    }
}

TEST_CASE("reductions report bad dims", "[reduce][errors]") {
    check_error([] { raw::sum(raw::zeros({2, 3}), {2}); }, {"sum", "dim 2", "2 dims"});
    check_error([] { raw::sum(raw::zeros({2, 3}), {1, -1}); }, {"sum", "twice"});
    check_error([] { raw::var(raw::zeros({1})); }, {"var"});
}

TEST_CASE("sums over leading dims (the column-sum path) equal an explicit loop", "[reduce]") {
    // Shapes around the 32-column block (reduce.cpp): fewer, exactly, one
    // more, several, not a multiple; the last one large enough for the
    // threads to share the blocks (kParallelMin).
    Generator gen(31);
    for (auto [a, b, c] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {3, 5, 7}, {2, 40, 32}, {3, 9, 33}, {4, 33, 128}, {2, 50, 300}, {2, 64, 300}}) {
        Tensor x = raw::randn({a, b, c}, gen);
        std::vector<float> v(x.data<float>(), x.data<float>() + x.numel());
        std::vector<double> over_ab(c, 0.0), over_a(b * c, 0.0);
        for (int64_t i = 0; i < a; ++i)
            for (int64_t j = 0; j < b; ++j)
                for (int64_t k = 0; k < c; ++k) {
                    over_ab[k] += v[(i * b + j) * c + k];
                    over_a[j * c + k] += v[(i * b + j) * c + k];
                }
        INFO(a << " x " << b << " x " << c);
        check_values(raw::sum(x, {0, 1}), over_ab, 1e-4);
        check_values(raw::sum(x, {0}), over_a, 1e-4);
        CHECK(raw::sum(x, {0, 1}, true).shape() == Shape{1, 1, c});
        // Not contiguous: the general path must give the same numbers.
        Tensor xt = raw::transpose(raw::contiguous(raw::transpose(x, 0, 1)), 0, 1);
        check_values(raw::sum(xt, {0, 1}), over_ab, 1e-4);
    }
}
