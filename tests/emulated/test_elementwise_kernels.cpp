// test_elementwise_kernels.cpp — the GPU's elementwise kernels
// (cuda/elementwise_kernels.cuh: every unary and binary op, where, casts,
// fill, random numbers) and its strided indexer, run on the CPU by the
// CUDA emulator (tests/cuda_emulator) on non-contiguous and broadcast
// views, against the CPU backend's entries for the same views: the two
// share the activations' formulas (tensor/activations.h) but not their
// loops, indexing or math libraries. The shared formulas themselves are
// checked here against definitions written out in long double, derivatives
// by central differences, so an error in them cannot hide behind the
// agreement of two backends that call them.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "cuda/device_common.cuh"
#include "cuda/elementwise_kernels.cuh"
#include "tensor/raw_ops.h"

namespace {

// The worst error so far, updated with a new one, a NaN the worst of all
// (tests/helpers.h's nc_test::worst_of; this test builds without it).
double worst_of(double worst, double error) {
    return std::isnan(worst) || std::isnan(error) ? NAN : std::max(worst, error);
}

using cuda_emulator::Schedule;
using namespace nc;
using namespace nc::cuda;

template <typename T>
T* data(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

// Both launches the tests use: the one cuda/elementwise.cu makes (enough
// blocks of kThreads), and one block of 32 threads, so that every thread
// walks several elements of the grid-stride loop.
struct Launch {
    dim3 grid, block;
};
std::vector<Launch> launches(int64_t n) { return {{dim3(blocks_for(n)), dim3(kThreads)}, {dim3(1), dim3(32)}}; }

// got within a few units in the last place of want, element by element
// (the GPU's math functions and glibc's may differ in the last bit).
void check_same(const char* what, const Tensor& got, const Tensor& want, double ulps) {
    std::vector<double> a = got.to_vector(), b = want.to_vector();
    REQUIRE(a.size() == b.size());
    double unit = got.dtype() == kFloat32 ? 0x1p-24 : got.dtype() == kFloat64 ? 0x1p-53 : 0.0;
    double worst = 0;
    size_t where = 0;
    for (size_t e = 0; e < a.size(); ++e) {
        // Equal (infinities too) or both NaN: nothing to measure.
        if (a[e] == b[e] || (std::isnan(a[e]) && std::isnan(b[e]))) continue;
        double excess = std::fabs(a[e] - b[e]) / (ulps * unit * (1 + std::fabs(b[e])) + 1e-300);
        if (std::isnan(excess)) excess = INFINITY;  // a NaN where a number belongs, or the other way
        if (excess > worst) worst = excess, where = e;
    }
    INFO(what << ": element " << where << " is " << a[where] << ", the CPU's " << b[where] << ": " << worst
              << " x the tolerance");
    CHECK(worst <= 1.0);
}

// A [3, 7, 5] view that is not contiguous (x [5, 7, 3] transposed), of
// values away from 0 when `positive`.
Tensor strided_input(uint64_t seed, DType dtype, bool positive) {
    Generator gen(seed);
    Tensor x = raw::randn({5, 7, 3}, gen, dtype);
    if (positive) x = raw::add(raw::abs(x), 0.1);
    // One NaN and one infinity: the ops' rules for them must agree too
    // (maximum and minimum propagate a NaN, sign(NaN) is 0).
    if (dtype == kFloat32) data<float>(x)[17] = NAN, data<float>(x)[40] = INFINITY;
    if (dtype == kFloat64) data<double>(x)[17] = NAN, data<double>(x)[40] = -INFINITY;
    return raw::transpose(x, 0, 2);
}

template <typename T>
void check_unary(UnaryOp op, DType dtype, Schedule schedule) {
    bool positive = op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt;
    Tensor in = strided_input(1, dtype, positive);
    int64_t n = in.numel();
    Tensor want = raw::zeros(in.shape(), dtype);
    cpu_backend().unary(op, in, want);
    for (const Launch& l : launches(n)) {
        Tensor out = raw::transpose(raw::zeros({5, 7, 3}, dtype), 0, 2);  // a strided output too
        StridedIndexer<2> ix = make_indexer<2>(out.shape(), {&in, &out});
        cuda_emulator::launch(l.grid, l.block, schedule, unary_kernel<T>, op, (const T*)data<T>(in), data<T>(out), ix, n);
        check_same(unary_op_name(op), out, want, 8);
    }
}

template <typename T>
void check_binary(BinaryOp op, DType dtype, Schedule schedule) {
    Tensor a = dtype == kInt64 ? raw::transpose(raw::from_indices(std::vector<int64_t>(105, 0), {5, 7, 3}), 0, 2)
                               : strided_input(2, dtype, op == BinaryOp::Pow);
    if (dtype == kInt64)
        for (int64_t e = 0; e < 105; ++e) data<int64_t>(a)[e] = e * 37 % 11 - 5;  // the storage, in any order
    Generator gen(3);
    Tensor small = dtype == kInt64 ? raw::from_indices({-2, 0, 3, 1, -4, 2, 0}, {1, 7, 1}) : raw::randn({1, 7, 1}, gen, dtype);
    Tensor b = raw::expand(small, a.shape());  // broadcast: strides 0, s, 0
    int64_t n = a.numel();
    Tensor want = raw::zeros(a.shape(), dtype);
    cpu_backend().binary(op, a, b, want);
    for (const Launch& l : launches(n)) {
        Tensor out = raw::zeros(a.shape(), dtype);
        StridedIndexer<3> ix = make_indexer<3>(out.shape(), {&a, &b, &out});
        cuda_emulator::launch(l.grid, l.block, schedule, binary_kernel<T>, op, (const T*)data<T>(a), (const T*)data<T>(b),
                              data<T>(out), ix, n);
        check_same(binary_op_name(op), out, want, dtype == kInt64 ? 0 : 8);
    }
}

}  // namespace

TEST_CASE("emulated GPU: every unary and binary op equals the CPU backend's on strided views",
          "[cuda-emulated][elementwise]") {
    const UnaryOp unary_ops[] = {UnaryOp::Neg,  UnaryOp::Exp,     UnaryOp::Log,  UnaryOp::Sqrt, UnaryOp::Rsqrt,
                                 UnaryOp::Tanh, UnaryOp::Sin,     UnaryOp::Cos,  UnaryOp::Abs,  UnaryOp::Sign,
                                 UnaryOp::Relu, UnaryOp::Sigmoid, UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh};
    const BinaryOp binary_ops[] = {BinaryOp::Add,          BinaryOp::Sub,          BinaryOp::Mul,
                                   BinaryOp::Div,          BinaryOp::Pow,          BinaryOp::Maximum,
                                   BinaryOp::Minimum,      BinaryOp::Eq,           BinaryOp::Ne,
                                   BinaryOp::Lt,           BinaryOp::Le,           BinaryOp::Gt,
                                   BinaryOp::Ge,           BinaryOp::ReluBackward, BinaryOp::SiluBackward,
                                   BinaryOp::GeluBackward, BinaryOp::GeluTanhBackward, BinaryOp::SwiGLU};
    const BinaryOp integer_ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum,
                                    BinaryOp::Eq,  BinaryOp::Ne,  BinaryOp::Lt,  BinaryOp::Le,      BinaryOp::Gt,
                                    BinaryOp::Ge};
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        for (UnaryOp op : unary_ops) {
            check_unary<float>(op, kFloat32, s);
            check_unary<double>(op, kFloat64, s);
        }
        for (BinaryOp op : binary_ops) {
            check_binary<float>(op, kFloat32, s);
            check_binary<double>(op, kFloat64, s);
        }
        for (BinaryOp op : integer_ops) check_binary<int64_t>(op, kInt64, s);
    }
}

TEST_CASE("emulated GPU: where, casts, fill and random numbers equal the CPU backend's", "[cuda-emulated][elementwise]") {
    const Schedule s = Schedule::LastThreadFirst;
    Tensor a = strided_input(4, kFloat32, false), b = strided_input(5, kFloat32, false);
    Tensor cond = raw::to_dtype(raw::gt(strided_input(6, kFloat32, false), raw::scalar(0.0)), kFloat32);
    int64_t n = a.numel();
    SECTION("where") {
        Tensor want = raw::zeros(a.shape()), got = raw::zeros(a.shape());
        cpu_backend().where(cond, a, b, want);
        StridedIndexer<4> ix = make_indexer<4>(got.shape(), {&cond, &a, &b, &got});
        cuda_emulator::launch(dim3(1), dim3(32), s, where_kernel<float>, (const float*)data<float>(cond),
                              (const float*)data<float>(a), (const float*)data<float>(b), data<float>(got), ix, n);
        check_same("where", got, want, 0);
    }
    SECTION("casts") {
        Tensor scaled = raw::mul(a, 7.0);  // values of several units, some negative: truncation toward 0
        Tensor to_int = raw::zeros(a.shape(), kInt64), want_int = raw::zeros(a.shape(), kInt64);
        cpu_backend().unary(UnaryOp::Copy, scaled, want_int);
        StridedIndexer<2> ix = make_indexer<2>(to_int.shape(), {&scaled, &to_int});
        cuda_emulator::launch(dim3(1), dim3(32), s, cast_kernel<float, int64_t>, (const float*)data<float>(scaled),
                              data<int64_t>(to_int), ix, n);
        check_same("float to int64", to_int, want_int, 0);
        Tensor to_double = raw::zeros(a.shape(), kFloat64), want_double = raw::zeros(a.shape(), kFloat64);
        cpu_backend().unary(UnaryOp::Copy, want_int, want_double);
        StridedIndexer<2> ix2 = make_indexer<2>(to_double.shape(), {&want_int, &to_double});
        cuda_emulator::launch(dim3(1), dim3(32), s, cast_kernel<int64_t, double>, (const int64_t*)data<int64_t>(want_int),
                              data<double>(to_double), ix2, n);
        check_same("int64 to double", to_double, want_double, 0);
    }
    SECTION("casts to and from bfloat16 and float16, bit for bit") {
        // Values across float16's range and beyond it, and tiny ones (its subnormals), from a strided view.
        Tensor x = raw::mul(a, 30000.0), tiny = raw::mul(a, 1e-6);
        for (const Tensor& in : {a, x, tiny})
            for (DType half : {kBFloat16, kFloat16}) {
                INFO(dtype_name(half));
                Tensor want = raw::zeros(in.shape(), half), got = raw::zeros(in.shape(), half);
                cpu_backend().unary(UnaryOp::Copy, in, want);
                StridedIndexer<2> ix = make_indexer<2>(got.shape(), {&in, &got});
                if (half == kBFloat16)
                    cuda_emulator::launch(dim3(2), dim3(32), s, cast_kernel<float, BFloat16>, (const float*)data<float>(in),
                                          data<BFloat16>(got), ix, n);
                else
                    cuda_emulator::launch(dim3(2), dim3(32), s, cast_kernel<float, Float16>, (const float*)data<float>(in),
                                          data<Float16>(got), ix, n);
                CHECK(std::memcmp(got.raw_data(), want.raw_data(), (size_t)n * 2) == 0);
                // And back to float32, exactly.
                Tensor back = raw::zeros(in.shape()), want_back = raw::zeros(in.shape());
                cpu_backend().unary(UnaryOp::Copy, want, want_back);
                StridedIndexer<2> ix2 = make_indexer<2>(back.shape(), {&want, &back});
                if (half == kBFloat16)
                    cuda_emulator::launch(dim3(2), dim3(32), s, cast_kernel<BFloat16, float>,
                                          (const BFloat16*)data<BFloat16>(want), data<float>(back), ix2, n);
                else
                    cuda_emulator::launch(dim3(2), dim3(32), s, cast_kernel<Float16, float>,
                                          (const Float16*)data<Float16>(want), data<float>(back), ix2, n);
                check_same("16-bit to float", back, want_back, 0);
            }
        Tensor filled = raw::zeros({5}, kBFloat16), want_filled = raw::zeros({5}, kBFloat16);
        cpu_backend().fill(want_filled, 0.1);
        StridedIndexer<1> ix = make_indexer<1>(filled.shape(), {&filled});
        cuda_emulator::launch(dim3(1), dim3(32), s, fill_kernel<BFloat16>, data<BFloat16>(filled), ix, (int64_t)5,
                              to_bfloat16(0.1f));
        CHECK(std::memcmp(filled.raw_data(), want_filled.raw_data(), 10) == 0);
    }
    SECTION("fill of a narrowed view leaves the rest alone") {
        Tensor base = raw::zeros({6, 8}), want_base = raw::zeros({6, 8});
        Tensor view = raw::narrow(base, 1, 2, 4), want_view = raw::narrow(want_base, 1, 2, 4);
        cpu_backend().fill(want_view, 2.5);
        StridedIndexer<1> ix = make_indexer<1>(view.shape(), {&view});
        cuda_emulator::launch(dim3(1), dim3(32), s, fill_kernel<float>, data<float>(view), ix, view.numel(), 2.5f);
        check_same("fill", base, want_base, 0);
    }
    SECTION("random numbers: the same Philox stream as the CPU") {
        for (RandomKind kind : {RandomKind::Uniform, RandomKind::Normal, RandomKind::Bernoulli}) {
            INFO("kind " << (int)kind);
            Tensor want = raw::zeros({1000}, kFloat64), got = raw::zeros({1000}, kFloat64);
            cpu_backend().random(kind, 1234, 77, 0.3, want);
            cuda_emulator::launch(dim3(2), dim3(kThreads), s, random_kernel<double>, kind, (uint64_t)1234, (uint64_t)77, 0.3,
                                  data<double>(got), (int64_t)1000);
            check_same("random", got, want, 4);
        }
    }
    SECTION("the indexer's 64-bit path gives the same offsets as its 32-bit one") {
        Tensor want = raw::zeros(a.shape()), got = raw::zeros(a.shape());
        cpu_backend().binary(BinaryOp::Sub, a, b, want);
        StridedIndexer<3> ix = make_indexer<3>(got.shape(), {&a, &b, &got});
        REQUIRE(ix.narrow);
        ix.narrow = false;  // as for a tensor of 2^31 elements or more
        cuda_emulator::launch(dim3(1), dim3(32), s, binary_kernel<float>, BinaryOp::Sub, (const float*)data<float>(a),
                              (const float*)data<float>(b), data<float>(got), ix, n);
        check_same("sub (64-bit indexing)", got, want, 0);
    }
}

TEST_CASE("emulated GPU: the activations and their backward ops equal their definitions in long double",
          "[cuda-emulated][elementwise]") {
    using L = long double;
    const L k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
    auto sigmoid = [](L x) { return 1 / (1 + std::exp(-x)); };
    struct Activation {
        UnaryOp forward;
        BinaryOp backward;
        std::function<L(L)> f;
    };
    const Activation activations[] = {
        {UnaryOp::Sigmoid, BinaryOp::SiluBackward /* unused */, sigmoid},
        {UnaryOp::Silu, BinaryOp::SiluBackward, [&](L x) { return x * sigmoid(x); }},
        {UnaryOp::Gelu, BinaryOp::GeluBackward, [](L x) { return x / 2 * (1 + std::erf(x / std::sqrt(2.0L))); }},
        {UnaryOp::GeluTanh, BinaryOp::GeluTanhBackward,
         [&](L x) { return x / 2 * (1 + std::tanh(k * (x + 0.044715L * x * x * x))); }},
        {UnaryOp::Relu, BinaryOp::ReluBackward, [](L x) { return x > 0 ? x : 0; }},
    };
    // x from -6 to 6 (0 excluded, where relu has no derivative); g = 1.5 everywhere.
    std::vector<double> xs;
    for (int i = -60; i <= 60; ++i)
        if (i != 0) xs.push_back(i / 10.0 + 0.013);
    const int64_t n = (int64_t)xs.size();
    Tensor x = raw::from_vector(xs, {n}), g = raw::full({n}, 1.5, kFloat64);
    for (const Activation& a : activations) {
        Tensor y = raw::zeros({n}, kFloat64), dx = raw::zeros({n}, kFloat64);
        StridedIndexer<2> ix2 = make_indexer<2>(x.shape(), {&x, &y});
        StridedIndexer<3> ix3 = make_indexer<3>(x.shape(), {&x, &g, &dx});
        cuda_emulator::launch(dim3(1), dim3(32), Schedule::FirstThreadFirst, unary_kernel<double>, a.forward,
                              (const double*)data<double>(x), data<double>(y), ix2, n);
        cuda_emulator::launch(dim3(1), dim3(32), Schedule::FirstThreadFirst, binary_kernel<double>, a.backward,
                              (const double*)data<double>(x), (const double*)data<double>(g), data<double>(dx), ix3, n);
        std::vector<double> got = y.to_vector(), got_dx = dx.to_vector();
        double worst = 0, worst_dx = 0;
        for (int64_t e = 0; e < n; ++e) {
            L xe = xs[e], h = 1e-6L;
            worst = worst_of(worst, (double)std::fabs(got[e] - a.f(xe)));
            L derivative = (a.f(xe + h) - a.f(xe - h)) / (2 * h);
            worst_dx = worst_of(worst_dx, (double)std::fabs(got_dx[e] - 1.5L * derivative));
        }
        INFO(unary_op_name(a.forward) << ": worst error " << worst << ", of its backward " << worst_dx);
        CHECK(worst < 1e-13);
        if (a.forward != UnaryOp::Sigmoid) CHECK(worst_dx < 1e-8);
    }
    // SwiGLU(a, b) = silu(a) b.
    Tensor up = raw::full({n}, -0.75, kFloat64), out = raw::zeros({n}, kFloat64);
    StridedIndexer<3> ix_up = make_indexer<3>(x.shape(), {&x, &up, &out});
    cuda_emulator::launch(dim3(1), dim3(32), Schedule::FirstThreadFirst, binary_kernel<double>, BinaryOp::SwiGLU,
                          (const double*)data<double>(x), (const double*)data<double>(up), data<double>(out), ix_up, n);
    std::vector<double> got = out.to_vector();
    double worst = 0;
    for (int64_t e = 0; e < n; ++e) worst = worst_of(worst, std::fabs(got[e] - (double)(-0.75L * xs[e] * sigmoid(xs[e]))));
    CHECK(worst < 1e-13);
}
