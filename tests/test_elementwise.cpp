// Elementwise ops: values against the C++ standard library, broadcasting,
// non-contiguous inputs, comparisons and where.
#include <functional>

#include "helpers.h"
#include "tensor/merged_dims.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;

static std::vector<double> map_values(const std::vector<double>& xs, const std::function<double(double)>& f) {
    std::vector<double> out;
    for (double x : xs) out.push_back(f(x));
    return out;
}

TEST_CASE("unary math matches std:: functions in float32 and float64", "[elementwise]") {
    std::vector<double> xs = {0.1, 0.5, 1.0, 2.0, 3.7};
    for (DType dtype : {kFloat32, kFloat64}) {
        double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
        Tensor x = raw::to_dtype(raw::from_vector(xs, {5}), dtype);
        check_values(raw::neg(x), map_values(xs, [](double v) { return -v; }), tol);
        check_values(raw::exp(x), map_values(xs, [](double v) { return std::exp(v); }), tol * 50);
        check_values(raw::log(x), map_values(xs, [](double v) { return std::log(v); }), tol);
        check_values(raw::sqrt(x), map_values(xs, [](double v) { return std::sqrt(v); }), tol);
        check_values(raw::rsqrt(x), map_values(xs, [](double v) { return 1 / std::sqrt(v); }), tol * 4);
        check_values(raw::tanh(x), map_values(xs, [](double v) { return std::tanh(v); }), tol);
        check_values(raw::sin(x), map_values(xs, [](double v) { return std::sin(v); }), tol);
        check_values(raw::cos(x), map_values(xs, [](double v) { return std::cos(v); }), tol);
        check_values(raw::pow(x, 1.5), map_values(xs, [](double v) { return std::pow(v, 1.5); }), tol * 10);
    }
    Tensor m = raw::from_vector(std::vector<double>{-2, 0, 3}, {3});
    check_values(raw::abs(m), {2, 0, 3});
    check_values(raw::sign(m), {-1, 0, 1});
}

TEST_CASE("binary ops broadcast and handle non-contiguous operands", "[elementwise][broadcast]") {
    Tensor a = raw::reshape(raw::arange(1, 7, 1, kFloat64), {2, 3});  // [[1,2,3],[4,5,6]]
    Tensor b = raw::from_vector(std::vector<double>{10, 20, 30}, {3});
    check_values(raw::add(a, b), {11, 22, 33, 14, 25, 36});
    check_values(raw::sub(a, b), {-9, -18, -27, -6, -15, -24});
    check_values(raw::mul(a, b), {10, 40, 90, 40, 100, 180});
    check_values(raw::div(b, a), {10, 10, 10, 2.5, 4, 5});
    check_values(raw::pow(a, raw::scalar(2.0, kFloat64)), {1, 4, 9, 16, 25, 36});
    Tensor col = raw::from_vector(std::vector<double>{1, -1}, {2, 1});
    check_values(raw::mul(a, col), {1, 2, 3, -4, -5, -6});

    // a^T is [3, 2] with strides [1, 3]; result must follow logical order.
    Tensor at = raw::transpose(a, 0, 1);
    Tensor two_col = raw::from_vector(std::vector<double>{100, 200}, {2});
    check_values(raw::add(at, two_col), {101, 204, 102, 205, 103, 206});
    check_values(raw::mul(at, at), {1, 16, 4, 25, 9, 36});

    // Both operands broadcast at once: [3,1] with [1,4].
    Tensor r = raw::reshape(raw::arange(0, 3, 1, kFloat64), {3, 1});
    Tensor c = raw::reshape(raw::arange(0, 4, 1, kFloat64), {1, 4});
    check_values(raw::sub(r, c), {0, -1, -2, -3, 1, 0, -1, -2, 2, 1, 0, -1});

    // A large non-contiguous case crosses the parallel threshold: compare to scalar loop.
    Generator gen(1);
    Tensor big = raw::randn({300, 400}, gen);
    Tensor bt = raw::transpose(big, 0, 1);
    Tensor sum = raw::add(bt, raw::narrow(raw::randn({400, 301}, gen), 1, 1, 300));
    std::vector<double> bv = big.to_vector();
    std::vector<double> sv = sum.to_vector();
    std::vector<double> bt_expected(bv.size());
    for (int i = 0; i < 400; ++i)
        for (int j = 0; j < 300; ++j) bt_expected[i * 300 + j] = bv[j * 400 + i];
    std::vector<double> diff = raw::sub(sum, bt).to_vector();
    for (size_t i = 0; i < diff.size(); ++i) diff[i] = sv[i] - diff[i];  // = bt values
    double worst = 0;
    for (size_t i = 0; i < diff.size(); ++i) worst = nc_test::worst_of(worst, std::fabs(diff[i] - bt_expected[i]));
    CHECK(worst < 1e-5);
}

TEST_CASE("maximum, minimum, comparisons and where", "[elementwise]") {
    Tensor a = raw::from_vector(std::vector<double>{1, 5, 3, NAN}, {4});
    Tensor b = raw::from_vector(std::vector<double>{2, 4, 3, 0}, {4});
    check_values(raw::maximum(a, b), {2, 5, 3, NAN});
    check_values(raw::minimum(a, b), {1, 4, 3, NAN});
    check_values(raw::eq(a, b), {0, 0, 1, 0});
    check_values(raw::ne(a, b), {1, 1, 0, 1});
    check_values(raw::lt(a, b), {1, 0, 0, 0});
    check_values(raw::le(a, b), {1, 0, 1, 0});
    check_values(raw::gt(a, b), {0, 1, 0, 0});
    check_values(raw::ge(a, b), {0, 1, 1, 0});
    Tensor cond = raw::from_vector(std::vector<double>{1, 0}, {2, 1});
    Tensor x = raw::from_vector(std::vector<double>{1, 2, 3}, {3});
    check_values(raw::where(cond, x, raw::scalar(-1.0, kFloat64)), {1, 2, 3, -1, -1, -1});
    CHECK(raw::all_finite(b));
    CHECK(!raw::all_finite(a));
    CHECK(!raw::all_finite(raw::from_vector(std::vector<float>{1, INFINITY}, {2})));
}

TEST_CASE("elementwise ops reject mismatched inputs with clear messages", "[elementwise][errors]") {
    check_error([] { raw::add(raw::zeros({2, 3}), raw::zeros({3, 2})); }, {"add", "[2, 3]", "[3, 2]", "broadcast"});
    check_error([] { raw::mul(raw::zeros({2}), raw::zeros({2}, kFloat64)); }, {"mul", "float32", "float64"});
    check_error([] { raw::exp(raw::from_indices({1}, {1})); }, {"exp", "floating", "int64"});
    check_error([] { raw::bernoulli({2}, 1.5); }, {"bernoulli", "not in [0, 1]"});
}

// for_each_run (tensor/cpu/strided_loop.h) hands out short runs in groups,
// stepping from one run to the next like an odometer, and cuts long runs
// into chunks. Copies of permuted views check every element against index
// arithmetic: runs of 3 values in groups that end in the middle of a dim
// (the carry), runs of 32 as in attention's head copies, and runs of 40000,
// cut into chunks.
TEST_CASE("for_each_run walks grouped short runs and chunked long runs", "[elementwise]") {
    struct Case {
        Shape shape;
        std::vector<int64_t> order;
    };
    for (const Case& c : {Case{{40, 50, 7, 3}, {0, 2, 1, 3}}, Case{{16, 128, 4, 32}, {0, 2, 1, 3}},
                          Case{{3, 2, 40000}, {1, 0, 2}}}) {
        int64_t n = 1;
        for (int64_t size : c.shape) n *= size;
        Tensor values = raw::reshape(raw::arange(0, (double)n, 1, kFloat64), c.shape);
        Tensor copied = raw::contiguous(raw::permute(values, c.order));  // out[i] = values[permuted index]
        std::vector<double> got = copied.to_vector();
        Shape out_shape = copied.shape();
        Shape in_strides = values.strides();
        int64_t wrong = 0;
        for (int64_t flat = 0; flat < n; ++flat) {
            int64_t rest = flat, source = 0;
            for (int d = (int)out_shape.size() - 1; d >= 0; --d) {
                source += rest % out_shape[d] * in_strides[c.order[d]];
                rest /= out_shape[d];
            }
            wrong += got[flat] != (double)source;
        }
        INFO("shape " << shape_str(c.shape));
        CHECK(wrong == 0);
    }
}

TEST_CASE("merge_dims: the fewest dims that walk every operand", "[elementwise]") {
    // A contiguous [2, 3, 4] tensor is one dim of 24 with stride 1.
    Shape shape{2, 3, 4}, contiguous{12, 4, 1};
    MergedDims<1> one = merge_dims<1>(shape, {&contiguous});
    REQUIRE(one.ndim == 1);
    CHECK(one.sizes[0] == 24);
    CHECK(one.strides[0][0] == 1);
    // Against its transpose of the last two dims nothing merges but the
    // leading dim with nothing: [2, 3, 4] stays 3 dims.
    Shape transposed{12, 1, 3};  // a [2, 4, 3] tensor viewed as [2, 3, 4]
    MergedDims<2> two = merge_dims<2>(shape, {&contiguous, &transposed});
    CHECK(two.ndim == 3);
    // Size-1 dims vanish; a broadcast row (stride 0 over the leading dims)
    // keeps the other two apart: [5, 1, 6] + a [6] row is 2 dims, [5, 6].
    Shape wide{5, 1, 6}, wide_strides{6, 6, 1}, row{0, 0, 1};
    MergedDims<2> b = merge_dims<2>(wide, {&wide_strides, &row});
    REQUIRE(b.ndim == 2);
    CHECK(b.sizes[0] == 5);
    CHECK(b.sizes[1] == 6);
    CHECK(b.strides[1][0] == 0);
    CHECK(b.strides[1][1] == 1);
    // A middle slice (2 of the 4 rows of each [4, 5] block): its rows are
    // contiguous with each other, so the inner two dims merge; the slice
    // skips rows between blocks, so the outer one does not.
    Shape sliced{3, 2, 5}, slice_strides{20, 5, 1};
    MergedDims<1> s = merge_dims<1>(sliced, {&slice_strides});
    REQUIRE(s.ndim == 2);
    CHECK(s.sizes[0] == 3);
    CHECK(s.sizes[1] == 10);
    CHECK(s.strides[0][0] == 20);
    // Every dim of size 1: a single element, no dims; a dim of 0: nothing to walk.
    Shape ones{1, 1}, ones_strides{1, 1}, empty{3, 0}, empty_strides{0, 1};
    CHECK(merge_dims<1>(ones, {&ones_strides}).ndim == 0);
    CHECK(merge_dims<1>(empty, {&empty_strides}).empty);
}
