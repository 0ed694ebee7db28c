// 16-bit matrix products (tensor/cpu/gemm_16bit.h): bfloat16 or float16
// operands, a float32 result. The reference is the float64 product of the
// 16-bit inputs themselves (their exact values), so the only difference
// allowed is the float32 summation's rounding: per element at most
// (K + 2) u sum_p |a_ip b_pj| with u = 2^-24, the textbook bound for a sum
// of K terms (Higham, Accuracy and Stability, eq. 3.5), plus the last
// rounding. Every product is exact in float32, so a kernel that drops or
// mis-pairs a step, or rounds a product to 16 bits, is far outside it.
#include "helpers.h"
#include "tensor/cpu/gemm_16bit.h"
#include "tensor/cpu/gemv.h"

#include <cmath>
#include <cstring>

#include <omp.h>

using namespace nc;
using nc_test::check_error;

namespace {

// Runs gemm_16bit on 2-D 16-bit operands of any strides, C = A B (+ C0).
Tensor gemm16_with(cpu::Gemm16Path path, const Tensor& a, const Tensor& b, const Tensor& c0 = Tensor(),
                   cpu::SimdIsa isa = cpu::best_simd_isa()) {
    int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    Tensor c = c0.defined() ? raw::clone(c0) : raw::zeros({M, N}, kFloat32);
    cpu::MatrixOperand<uint16_t> A{static_cast<const uint16_t*>(a.raw_data()), {0}, a.strides()[0], a.strides()[1]};
    cpu::MatrixOperand<uint16_t> B{static_cast<const uint16_t*>(b.raw_data()), {0}, b.strides()[0], b.strides()[1]};
    cpu::gemm_16bit(M, N, K, a.dtype(), A, B, static_cast<float*>(c.raw_data()), {0}, N, path, c0.defined(), isa);
    return c;
}

// Checks c against the float64 product of the 16-bit values (+ c0), element
// by element within the float32 summation bound.
void check_product(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& c0 = Tensor()) {
    REQUIRE(c.dtype() == kFloat32);
    std::vector<double> av = raw::contiguous(raw::to_dtype(a, kFloat64)).to_vector();
    std::vector<double> bv = raw::contiguous(raw::to_dtype(b, kFloat64)).to_vector();
    std::vector<double> cv = c.to_vector(), start = c0.defined() ? c0.to_vector() : std::vector<double>(cv.size());
    int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    const double u = std::ldexp(1.0, -24);
    double worst_ratio = 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double exact = start[i * N + j], size = std::fabs(start[i * N + j]);
            for (int64_t p = 0; p < K; ++p) {
                exact += av[i * K + p] * bv[p * N + j];
                size += std::fabs(av[i * K + p] * bv[p * N + j]);
            }
            double bound = (K + 2) * u * size + 1e-30, error = std::fabs(cv[i * N + j] - exact);
            // Written so that a NaN fails: every comparison with NaN is false.
            if (!(error <= bound)) {
                INFO("C(" << i << ", " << j << ") = " << cv[i * N + j] << ", exact " << exact << ", bound " << bound);
                REQUIRE(error <= bound);
            }
            worst_ratio = nc_test::worst_of(worst_ratio, error / bound);
        }
    INFO("worst error / bound " << worst_ratio);
    CHECK(worst_ratio <= 1.0);
}

Tensor random16(Shape shape, DType dtype, Generator& gen) { return raw::to_dtype(raw::randn(shape, gen), dtype); }

// The same values laid out column-major (a transposed view of a contiguous copy).
Tensor column_major(const Tensor& t) { return raw::transpose(raw::contiguous(raw::transpose(t, 0, 1)), 0, 1); }

}  // namespace

TEST_CASE("16-bit GEMM: every path this CPU has equals the exact product within float32's sum", "[matmul][half]") {
    Generator gen(31);
    int tested = 0;
    for (DType dtype : {kBFloat16, kFloat16})
        for (cpu::Gemm16Path path : {cpu::Gemm16Path::Widen, cpu::Gemm16Path::Bf16Dot, cpu::Gemm16Path::Amx}) {
            if (!cpu::cpu_supports(path, dtype)) {
                if (dtype == kBFloat16)  // float16 never has the pair paths: nothing to report
                    WARN("skipping the " << cpu::gemm16_path_name(path)
                                         << " path: this CPU (or operating system) does not offer it");
                continue;
            }
            ++tested;
            // Each float32 micro-kernel this CPU runs: the widening path
            // multiplies with it, and both paths pack with its in-register
            // transpose (the portable kernel has none: the plain loops).
            for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
                if (!cpu::cpu_supports(isa)) continue;
                // Odd K (a last pair with one step), K past one slice (256) and odd
                // there too (291: a last slice of 35, 17 whole pairs, past the 16
                // the word transpose takes at once; 287: a last slice of 31, whose
                // 16th pair has one step), edge rows and columns, one row, one
                // column. Two products long enough in K to be split along it
                // (k_split_parts), into 4 parts of 513 or 514 steps and into 2 of
                // 515: parts of odd length, and parts starting at an odd step, off
                // a whole 32-bit word.
                for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                                           {3, 5, 7},
                                                                           {13, 2, 33},
                                                                           {1, 600, 40},
                                                                           {40, 517, 1},
                                                                           {97, 257, 65},
                                                                           {150, 300, 70},
                                                                           {70, 40, 100},
                                                                           {20, 291, 37},
                                                                           {20, 287, 37},
                                                                           {30, 2053, 20},
                                                                           {40, 1030, 37}}) {
                    INFO(dtype_name(dtype) << " on the " << cpu::gemm16_path_name(path) << " path, packed with the "
                                           << cpu::simd_isa_name(isa) << " kernel's loops, M=" << M << " K=" << K
                                           << " N=" << N);
                    if (K > 1000) REQUIRE(cpu::k_split_parts(M, N, K, sizeof(float)) == (K > 2048 ? 4 : 2));
                    Tensor a = random16({M, K}, dtype, gen), b = random16({K, N}, dtype, gen);
                    check_product(gemm16_with(path, a, b, Tensor(), isa), a, b);
                    // Transposed operands (a Linear's x W^T reads W this way), and a slice.
                    check_product(gemm16_with(path, column_major(a), column_major(b), Tensor(), isa), a, b);
                    // The numbers around each slice are infinite: a product that read
                    // any of them (a pair packed past K, say, even against a zero)
                    // would come out NaN or infinite.
                    Tensor wide = random16({M, K + 3}, dtype, gen), slice = raw::narrow(wide, 1, 2, K);
                    raw::fill_(raw::narrow(wide, 1, 0, 2), INFINITY);
                    raw::fill_(raw::narrow(wide, 1, K + 2, 1), INFINITY);
                    check_product(gemm16_with(path, slice, column_major(b), Tensor(), isa), slice, b);
                    // B = W^T from a slice of a wider W (its rows K + 3 apart), and
                    // rows that start one element in, off a whole 32-bit word, which
                    // the pair path's word transpose must leave to its plain loops.
                    Tensor w_wide = column_major(random16({K + 3, N}, dtype, gen));
                    Tensor w_slice = raw::narrow(w_wide, 0, 2, K);
                    raw::fill_(raw::narrow(w_wide, 0, 0, 2), INFINITY);
                    raw::fill_(raw::narrow(w_wide, 0, K + 2, 1), INFINITY);
                    check_product(gemm16_with(path, slice, w_slice, Tensor(), isa), slice, w_slice);
                    Tensor a_off = random16({M, K + 2}, dtype, gen), w_off = column_major(random16({K + 2, N}, dtype, gen));
                    raw::fill_(raw::narrow(a_off, 1, 0, 1), INFINITY);
                    raw::fill_(raw::narrow(a_off, 1, K + 1, 1), INFINITY);
                    raw::fill_(raw::narrow(w_off, 0, 0, 1), INFINITY);
                    raw::fill_(raw::narrow(w_off, 0, K + 1, 1), INFINITY);
                    a_off = raw::narrow(a_off, 1, 1, K), w_off = raw::narrow(w_off, 0, 1, K);
                    check_product(gemm16_with(path, a_off, w_off, Tensor(), isa), a_off, w_off);
                    // A transposed A (a weight gradient's G^T) cut from a larger
                    // stored matrix with infinities all around it: a step packed
                    // past K (a pair's odd half, say) would read one, and make
                    // the product NaN even against a zero.
                    Tensor g_wide = random16({K + 2, M + 3}, dtype, gen);
                    raw::fill_(raw::narrow(g_wide, 0, 0, 1), INFINITY);
                    raw::fill_(raw::narrow(g_wide, 0, K + 1, 1), INFINITY);
                    raw::fill_(raw::narrow(g_wide, 1, 0, 2), INFINITY);
                    raw::fill_(raw::narrow(g_wide, 1, M + 2, 1), INFINITY);
                    Tensor g_t = raw::transpose(raw::narrow(raw::narrow(g_wide, 0, 1, K), 1, 2, M), 0, 1);
                    check_product(gemm16_with(path, g_t, b, Tensor(), isa), g_t, b);
                    // C += A B.
                    Tensor c0 = raw::randn({M, N}, gen);
                    check_product(gemm16_with(path, a, b, c0, isa), a, b, c0);
                }
            }
        }
    CHECK(tested >= 2);  // both formats widen on every CPU
    CHECK(cpu::cpu_supports(cpu::best_gemm16_path(kBFloat16), kBFloat16));
    // AMX first, then vdpbf16ps where it beats the FMA, then widening.
    cpu::Gemm16Path expected = cpu::cpu_supports(cpu::Gemm16Path::Amx, kBFloat16) ? cpu::Gemm16Path::Amx
                               : cpu::bf16_dot_pays()                              ? cpu::Gemm16Path::Bf16Dot
                                                                                   : cpu::Gemm16Path::Widen;
    CHECK(cpu::best_gemm16_path(kBFloat16) == expected);
    CHECK((!cpu::bf16_dot_pays() || cpu::cpu_supports(cpu::Gemm16Path::Bf16Dot, kBFloat16)));
    CHECK(cpu::best_gemm16_path(kFloat16) == cpu::Gemm16Path::Widen);
}

// A product long enough in K is computed as parts along K (split_k.h), each
// a product of its own, added ((part 0 + part 1) + part 2) + part 3 in
// float32. Each element is then summed in the same order as the parts
// computed one by one and added in that order, so the two must agree to the
// bit; and the parts depend on the shape alone, so the bits must not change
// with the number of threads. Both shapes also pass the bound above; this
// test fails where the split is skipped, reordered, or cut elsewhere.
TEST_CASE("16-bit GEMM: a long-K product is its parts along K added in order, for 1 2 and 3 threads", "[matmul][half][threads]") {
    Generator gen(47);
    const int saved_threads = omp_get_max_threads();
    for (DType dtype : {kBFloat16, kFloat16})
        for (cpu::Gemm16Path path : {cpu::Gemm16Path::Widen, cpu::Gemm16Path::Bf16Dot, cpu::Gemm16Path::Amx}) {
            if (!cpu::cpu_supports(path, dtype)) continue;
            for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{{30, 2053, 20}, {40, 1030, 37}}) {
                const int64_t parts = cpu::k_split_parts(M, N, K, sizeof(float));
                REQUIRE(parts == (K > 2048 ? 4 : 2));
                Tensor a = random16({M, K}, dtype, gen), b = random16({K, N}, dtype, gen), c0 = raw::randn({M, N}, gen);
                std::vector<float> sum(M * N, 0.0f);
                for (int64_t p = 0; p < parts; ++p) {
                    const int64_t k0 = p * K / parts, k1 = (p + 1) * K / parts;
                    REQUIRE(cpu::k_split_parts(M, N, k1 - k0, sizeof(float)) == 1);  // a part is not split again
                    Tensor part = gemm16_with(path, raw::narrow(a, 1, k0, k1 - k0), raw::narrow(b, 0, k0, k1 - k0));
                    const float* values = static_cast<const float*>(part.raw_data());
                    for (int64_t i = 0; i < M * N; ++i) sum[i] = p == 0 ? values[i] : sum[i] + values[i];
                }
                const float* start = static_cast<const float*>(c0.raw_data());
                for (int threads : {1, 2, 3}) {
                    omp_set_num_threads(threads);
                    INFO(dtype_name(dtype) << " on the " << cpu::gemm16_path_name(path) << " path, M=" << M << " K=" << K
                                           << " N=" << N << ", " << threads << " threads");
                    Tensor c = gemm16_with(path, a, b), accumulated = gemm16_with(path, a, b, c0);
                    const float* got = static_cast<const float*>(c.raw_data());
                    const float* got_acc = static_cast<const float*>(accumulated.raw_data());
                    int64_t differ = 0, differ_acc = 0;
                    for (int64_t i = 0; i < M * N; ++i) {
                        differ += std::memcmp(&got[i], &sum[i], sizeof(float)) != 0;
                        const float with_start = start[i] + sum[i];
                        differ_acc += std::memcmp(&got_acc[i], &with_start, sizeof(float)) != 0;
                    }
                    CHECK(differ == 0);
                    CHECK(differ_acc == 0);
                }
            }
        }
    omp_set_num_threads(saved_threads);
}

TEST_CASE("16-bit GEMM: a float32 result holds what float16 cannot", "[matmul][half]") {
    // 60000 is a float16 (the largest is 65504); 60000 x 60000 x 3 is 1.08e10,
    // far past float16's range, exact in float32's.
    Tensor a = raw::to_dtype(raw::full({1, 3}, 60000.0), kFloat16), b = raw::to_dtype(raw::full({3, 1}, 60000.0), kFloat16);
    Tensor c = raw::matmul(a, b);
    CHECK(c.dtype() == kFloat32);
    CHECK(c.to_vector()[0] == 1.08e10);
    // A bfloat16 value's 8 significant bits: 1 + 2^-8 rounds to 1 (a tie to
    // even), 1 + 2^-7 stays; their product with 1 is exact either way.
    Tensor x = raw::to_dtype(raw::from_vector(std::vector<double>{1 + 1.0 / 256, 1 + 1.0 / 128}, {1, 2}), kBFloat16);
    CHECK(raw::matmul(x, raw::to_dtype(raw::ones({2, 1}), kBFloat16)).to_vector()[0] == 2 + 1.0 / 128);
}

TEST_CASE("matmul and linear on 16-bit tensors: float32 out, batched, with a float32 bias", "[matmul][half]") {
    Generator gen(32);
    for (DType dtype : {kBFloat16, kFloat16}) {
        INFO(dtype_name(dtype));
        // Batched with a broadcast batch dim.
        Tensor a = random16({3, 20, 70}, dtype, gen), b = random16({70, 9}, dtype, gen);
        Tensor c = raw::matmul(a, b);
        REQUIRE(c.shape() == Shape{3, 20, 9});
        for (int64_t i = 0; i < 3; ++i)
            check_product(raw::reshape(raw::narrow(c, 0, i, 1), {20, 9}), raw::reshape(raw::narrow(a, 0, i, 1), {20, 70}),
                          b);
        // linear: x w^T + bias, bias float32.
        Tensor x = random16({2, 5, 70}, dtype, gen), w = random16({11, 70}, dtype, gen), bias = raw::randn({11}, gen);
        Tensor y = raw::linear(x, w, bias);
        REQUIRE(y.dtype() == kFloat32);
        check_product(raw::reshape(y, {10, 11}), raw::reshape(x, {10, 70}), raw::transpose(w, 0, 1),
                      raw::contiguous(raw::expand(raw::view(bias, {1, 11}), {10, 11})));
        check_error([&] { raw::linear(x, w, raw::to_dtype(bias, dtype)); },
                    {"linear", "the bias must be the output's", std::string("bias ") + dtype_name(dtype)});
        check_error([&] { raw::linear(x, raw::to_dtype(w, kFloat32), Tensor()); },
                    {"linear", std::string("x ") + dtype_name(dtype) + ", w float32"});
    }
}

TEST_CASE("the vdpbf16ps peak is measured where the CPU has the instruction, and 0 elsewhere", "[matmul][half]") {
    double rate = cpu::measure_bf16_dot_peak_gflops(1, 100000);
    if (cpu::cpu_supports(cpu::Gemm16Path::Bf16Dot, kBFloat16)) CHECK(rate > 0);
    else CHECK(rate == 0);
}

// Random 16-bit numbers of every size a weight or activation has, and the
// float16 edge: most normal, some float16 subnormals (below 2^-14, which
// F16C must widen exactly too), some near float16's largest finite 65504.
static Tensor weights16(int64_t n, DType dtype, Generator& gen) {
    Tensor x = raw::randn({n}, gen);
    std::vector<double> v = x.to_vector();
    for (int64_t i = 0; i < n; ++i) {
        if (i % 7 == 3) v[i] *= 1e-6;           // float16: subnormal (bfloat16: normal)
        if (i % 11 == 5) v[i] = 6e4 * (v[i] < 0 ? -1 : 1) + v[i];  // near float16's largest
    }
    return raw::to_dtype(raw::from_vector(v, {n}), dtype);
}

// A 16-bit dot_columns kernel (gemm_kernels.h) must give, to the bit, the
// float32 order on the widened numbers: a product of two 16-bit numbers is
// exact in float32, so only the sums round, and (unlike float32's kernels)
// whether it fuses its multiply-adds cannot change a bit.
TEST_CASE("every 16-bit dot_columns kernel adds in the float32 order, to the bit", "[matmul][gemv][half][simd]") {
    Generator gen(41);
    int kernels = 0;
    for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
        if (!cpu::cpu_supports(isa)) continue;
        cpu::DotColumns16Fn dot = cpu::micro_kernel_for(isa).dot_columns_16bit;
        if (!dot) continue;  // gemv_16bit uses another kernel's
        ++kernels;
        for (DType dtype : {kBFloat16, kFloat16})
            // K: tails of 1 to 15 after whole 16s and within the first 8 lanes
            // or past them; columns: 4 at a time (AVX2, and the portable
            // kernel from the cache) and the rest one by one.
            for (int64_t K : {1, 5, 8, 9, 16, 17, 31, 50, 200, 768})
                for (int64_t columns : {1, 3, 4, 9, 16, 37}) {
                    // Columns apart by more than their length, infinities in
                    // between and past a's K numbers: a kernel that read a
                    // number past K, even against a zero, would give NaN.
                    const int64_t b_cs = K + 3;
                    Tensor a16 = weights16(K, dtype, gen), b16 = weights16(columns * b_cs, dtype, gen);
                    Tensor b_padded = raw::to_dtype(b16, kFloat32);
                    for (int64_t j = 0; j < columns; ++j) raw::fill_(raw::narrow(b_padded, 0, j * b_cs + K, 3), INFINITY);
                    b16 = raw::to_dtype(b_padded, dtype);
                    Tensor a = raw::cat({raw::to_dtype(a16, kFloat32), raw::full({16}, INFINITY)}, 0);
                    Tensor b = raw::to_dtype(b16, kFloat32);
                    const float* av = static_cast<const float*>(a.raw_data());
                    const float* bv = static_cast<const float*>(b.raw_data());
                    for (bool streaming : {false, true})
                        for (bool accumulate : {false, true}) {
                            std::vector<float> c(columns, 0.25f);
                            dot(K, av, static_cast<const uint16_t*>(b16.raw_data()), b_cs, columns,
                                dtype == kBFloat16, c.data(), accumulate, streaming);
                            for (int64_t j = 0; j < columns; ++j) {
                                float expected = nc_test::dot_in_kernel_order(K, av, bv + j * b_cs);
                                if (accumulate) expected = 0.25f + expected;
                                INFO(cpu::simd_isa_name(isa) << " " << dtype_name(dtype) << " K=" << K << " columns="
                                                             << columns << " j=" << j << " streaming=" << streaming
                                                             << " accumulate=" << accumulate);
                                REQUIRE(c[j] == expected);
                            }
                        }
                }
    }
    CHECK(kernels >= 1);  // the portable kernel always has one
#if defined(__x86_64__)
    // gemv_16bit runs the AVX2 kernel on every AVX2 (and AVX-512) CPU.
    CHECK(cpu::micro_kernel_for(cpu::SimdIsa::Avx2).dot_columns_16bit != nullptr);
    if (cpu::cpu_supports(cpu::SimdIsa::Avx2)) CHECK(kernels >= 2);
#endif
}

// One row of 16-bit A (a generated token's rounded activations) against a
// 16-bit W^T read in place: the bits of float32's gemv on the widened
// numbers, on 1, 2 and 3 threads (the columns split in runs), with a
// strided a, and from the cache or from memory (768 x 2304: 3.4 MiB); and
// the same through matmul, which takes this path for one row.
TEST_CASE("one-row 16-bit products: float32 gemv's bits on the widened numbers", "[matmul][gemv][half][threads]") {
    Generator gen(42);
    const int saved_threads = omp_get_max_threads();
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (DType dtype : {kBFloat16, kFloat16})
            for (auto [K, N] : std::vector<std::array<int64_t, 2>>{{1, 1}, {5, 7}, {17, 33}, {128, 45}, {768, 2304}}) {
                Tensor a_wide16 = raw::to_dtype(raw::randn({3, K}, gen), dtype);
                Tensor a16 = raw::narrow(a_wide16, 0, 1, 1);                         // [1, K], contiguous
                Tensor a16_strided = raw::narrow(column_major(a_wide16), 0, 1, 1);  // a_cs = 3
                Tensor w_t16 = column_major(raw::to_dtype(raw::randn({K, N}, gen), dtype));  // W^T: b_rs = 1
                Tensor w_t = column_major(raw::to_dtype(w_t16, kFloat32));  // the widened numbers, the same layout
                for (const Tensor& left16 : {a16, a16_strided}) {
                    INFO(dtype_name(dtype) << " threads=" << threads << " K=" << K << " N=" << N
                                           << " a_cs=" << left16.strides()[1]);
                    const Tensor left = raw::to_dtype(left16, kFloat32);
                    std::vector<float> expected(N, 0.5f), c(N, 0.5f);
                    REQUIRE(cpu::gemv(N, K, static_cast<const float*>(left.raw_data()), left.strides()[1],
                                      static_cast<const float*>(w_t.raw_data()), 1, K, expected.data(), true, true));
                    REQUIRE(cpu::gemv_16bit(N, K, dtype, static_cast<const uint16_t*>(left16.raw_data()),
                                            left16.strides()[1], static_cast<const uint16_t*>(w_t16.raw_data()), 1, K,
                                            c.data(), true, true));
                    REQUIRE(c == expected);
                    // matmul: one row goes to gemv_16bit, C overwritten.
                    CHECK(raw::matmul(left16, w_t16).to_vector() == raw::matmul(left, w_t).to_vector());
                }
            }
    }
    omp_set_num_threads(saved_threads);
    // A B whose columns are not contiguous: refused (matmul packs it), c untouched.
    Tensor b = raw::to_dtype(raw::randn({6, 9}, gen), kBFloat16), a = raw::to_dtype(raw::randn({1, 6}, gen), kBFloat16);
    std::vector<float> c(9, 0.0f);
    CHECK_FALSE(cpu::gemv_16bit(9, 6, kBFloat16, static_cast<const uint16_t*>(a.raw_data()), 1,
                                static_cast<const uint16_t*>(b.raw_data()), 9, 1, c.data(), false, true));
    CHECK(c == std::vector<float>(9, 0.0f));
    check_product(raw::matmul(a, b), a, b);
    // Which products take the one-row route, and so never ask for a path
    // (matmul then skips bf16_dot_pays): one row of A and B's columns
    // contiguous, nothing else.
    const std::vector<int64_t> one_batch{0};
    CHECK(cpu::takes_gemv_16bit(1, cpu::MatrixOperand<uint16_t>{nullptr, one_batch, 1, 6}));    // W^T in place
    CHECK_FALSE(cpu::takes_gemv_16bit(1, cpu::MatrixOperand<uint16_t>{nullptr, one_batch, 9, 1}));  // b above
    CHECK_FALSE(cpu::takes_gemv_16bit(2, cpu::MatrixOperand<uint16_t>{nullptr, one_batch, 1, 6}));  // two rows
    // One row, batched (each batch's own A and B), and linear() on one row
    // with a bias: against the exact product.
    for (DType dtype : {kBFloat16, kFloat16}) {
        INFO(dtype_name(dtype));
        Tensor rows = random16({3, 1, 40}, dtype, gen), w = random16({3, 40, 9}, dtype, gen);
        Tensor w_t = raw::transpose(raw::contiguous(raw::transpose(w, 1, 2)), 1, 2);  // each [40, 9] column-major
        Tensor out = raw::matmul(rows, w_t);
        for (int64_t i = 0; i < 3; ++i)
            check_product(raw::reshape(raw::narrow(out, 0, i, 1), {1, 9}), raw::reshape(raw::narrow(rows, 0, i, 1), {1, 40}),
                          raw::reshape(raw::narrow(w, 0, i, 1), {40, 9}));
        Tensor x = random16({1, 70}, dtype, gen), weight = random16({11, 70}, dtype, gen), bias = raw::randn({11}, gen);
        check_product(raw::linear(x, weight, bias), x, raw::transpose(weight, 0, 1), raw::view(bias, {1, 11}));
    }
}
