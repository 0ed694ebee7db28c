// matmul: the blocked GEMM against the textbook triple loop, for shapes that
// hit every edge (sizes not multiples of the register/cache blocks), every
// transpose combination, batched with broadcasting, and vectors.
#include "helpers.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/gemv.h"
#include "tensor/cpu/row_share.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "tensor/backend.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;
using nc_test::dot_in_kernel_order;

// Reference product of two 2-D tensors (any strides), computed in float64.
static std::vector<double> reference_matmul(const Tensor& a, const Tensor& b) {
    Tensor a64 = raw::contiguous(raw::to_dtype(a, kFloat64));
    Tensor b64 = raw::contiguous(raw::to_dtype(b, kFloat64));
    int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    std::vector<double> c(M * N);
    cpu::gemm_reference<double>(M, N, K, a64.data<double>(), K, 1, b64.data<double>(), N, 1, c.data(), N);
    return c;
}

TEST_CASE("gemm matches the reference on awkward sizes", "[matmul]") {
    Generator gen(11);
    for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {3, 5, 7}, {8, 32, 32}, {17, 300, 33}, {129, 257, 65}, {64, 1, 100}, {200, 513, 150}}) {
        Tensor a = raw::randn({M, K}, gen), b = raw::randn({K, N}, gen);
        INFO("M=" << M << " K=" << K << " N=" << N);
        // float32 with K up to 513: a few ulps per term, relative to sqrt(K).
        check_values(raw::matmul(a, b), reference_matmul(a, b), 2e-4 * std::sqrt((double)K));
        Tensor a64 = raw::to_dtype(a, kFloat64), b64 = raw::to_dtype(b, kFloat64);
        check_values(raw::matmul(a64, b64), reference_matmul(a, b), 1e-10);
    }
}

// Runs cpu::gemm with one micro-kernel on 2-D operands (any strides).
static Tensor gemm_with(cpu::SimdIsa isa, const Tensor& a, const Tensor& b) {
    int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    Tensor c = raw::zeros({M, N}, kFloat32);
    cpu::MatrixOperand<float> A{static_cast<const float*>(a.raw_data()), {0}, a.strides()[0], a.strides()[1]};
    cpu::MatrixOperand<float> B{static_cast<const float*>(b.raw_data()), {0}, b.strides()[0], b.strides()[1]};
    cpu::gemm(M, N, K, A, B, static_cast<float*>(c.raw_data()), {0}, N, isa);
    return c;
}

TEST_CASE("every micro-kernel this CPU supports matches the reference", "[matmul][simd]") {
    // The portable kernel always runs, so it is tested on AVX-512 machines too.
    Generator gen(14);
    int tested = 0;
    for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
        if (!cpu::cpu_supports(isa)) {
            WARN("skipping the " << cpu::simd_isa_name(isa) << " micro-kernel: this CPU does not support it");
            continue;
        }
        ++tested;
        for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{
                 {1, 1, 1}, {7, 7, 7}, {33, 33, 33}, {1, 1000, 7}, {1000, 7, 33}, {13, 1000, 1}, {300, 600, 530}}) {
            INFO(cpu::simd_isa_name(isa) << " M=" << M << " K=" << K << " N=" << N);
            Tensor a = raw::randn({M, K}, gen), b = raw::randn({K, N}, gen);
            std::vector<double> expected = reference_matmul(a, b);
            double tol = 2e-4 * std::sqrt((double)K);
            check_values(gemm_with(isa, a, b), expected, tol);
            // Transposed (column-major) and sliced (row stride > width) operands.
            Tensor at = raw::transpose(raw::contiguous(raw::transpose(a, 0, 1)), 0, 1);
            Tensor bt = raw::transpose(raw::contiguous(raw::transpose(b, 0, 1)), 0, 1);
            check_values(gemm_with(isa, at, bt), expected, tol);
            check_values(gemm_with(isa, a, bt), expected, tol);
            Tensor wide = raw::randn({M, K + 5}, gen);
            Tensor slice = raw::narrow(wide, 1, 3, K);
            check_values(gemm_with(isa, slice, b), reference_matmul(slice, b), tol);
        }
    }
    CHECK(tested >= 1);
    CHECK(cpu::cpu_supports(cpu::best_simd_isa()));
    // The widest kernel of the CPU family is the one matmul uses: NEON on
    // every 64-bit ARM CPU; on x86 the widest AVX the CPU has.
#if defined(__aarch64__)
    CHECK(cpu::best_simd_isa() == cpu::SimdIsa::Neon);
    CHECK(!cpu::cpu_supports(cpu::SimdIsa::Avx2));
#elif defined(__x86_64__)
    CHECK(cpu::best_simd_isa() == (cpu::cpu_supports(cpu::SimdIsa::Avx512) ? cpu::SimdIsa::Avx512
                                   : cpu::cpu_supports(cpu::SimdIsa::Avx2) ? cpu::SimdIsa::Avx2
                                                                             : cpu::SimdIsa::Portable));
    CHECK(!cpu::cpu_supports(cpu::SimdIsa::Neon));
#endif
}

TEST_CASE("gemm refuses a micro-kernel the CPU lacks", "[matmul][simd][errors]") {
    if (cpu::cpu_supports(cpu::SimdIsa::Avx512)) {
        SUCCEED("this CPU has AVX-512, so there is no unsupported kernel to ask for");
        return;
    }
    Tensor a = raw::ones({2, 2});
    check_error([&] { gemm_with(cpu::SimdIsa::Avx512, a, a); }, {"gemm", "avx512"});
}

// A stand-in measurement that takes 20 ms per million iterations: the count
// that lasts 10 ms is then half a million. Sleeping can only overshoot,
// which makes the count smaller, so the bounds are wide below (down to the
// floor of 250,000); a count scaled the wrong way (2 million) or not at all
// (1 million) fails.
TEST_CASE("peak samples are sized by time: iterations_lasting scales a timed probe", "[matmul][simd]") {
    auto measure = [](int64_t n) {
        std::this_thread::sleep_for(std::chrono::microseconds(n / 50));
        return 1.0;
    };
    int64_t n = cpu::iterations_lasting(0.010, measure);
    CHECK(n >= 250000);
    CHECK(n <= 500000);
    CHECK(cpu::iterations_lasting(0.05, measure) > 1500000);  // 2.5 million: five times as long, five times as many
    CHECK(cpu::iterations_lasting(0.0, measure) == 250000);   // never fewer than 250,000
}

// The highest of the samples, each of the sized count: a stand-in whose
// rate rises by one each call (the probes of the sizing take three calls).
TEST_CASE("best_peak_gflops keeps the highest sample", "[matmul][simd]") {
    int calls = 0;
    std::vector<int64_t> counts;
    auto measure = [&](int64_t n) {
        counts.push_back(n);
        return (double)++calls;
    };
    CHECK(cpu::best_peak_gflops(measure, 4, 0.0) == 7.0);  // 3 probe calls, then 4 samples: the last is 7
    REQUIRE(counts.size() == 7);
    for (size_t i = 3; i < counts.size(); ++i) CHECK(counts[i] == 250000);  // the floor: 0 s asked
}

TEST_CASE("gemm reads transposed operands without copying them first", "[matmul]") {
    Generator gen(12);
    Tensor a = raw::randn({70, 45}, gen), b = raw::randn({45, 38}, gen);
    Tensor at = raw::transpose(raw::contiguous(raw::transpose(a, 0, 1)), 0, 1);  // same values, column-major
    Tensor bt = raw::transpose(raw::contiguous(raw::transpose(b, 0, 1)), 0, 1);
    std::vector<double> expected = reference_matmul(a, b);
    check_values(raw::matmul(a, b), expected, 1e-4);
    check_values(raw::matmul(at, b), expected, 1e-4);
    check_values(raw::matmul(a, bt), expected, 1e-4);
    check_values(raw::matmul(at, bt), expected, 1e-4);
    // A sliced operand (offset and row stride larger than its width).
    Tensor wide = raw::randn({70, 100}, gen);
    Tensor slice = raw::narrow(wide, 1, 10, 45);
    check_values(raw::matmul(slice, b), reference_matmul(slice, b), 1e-4);
}

// gemm shares a product among threads in one of two ways (gemm.cpp): few
// tasks (column strips x batch) -> all threads on one task, B packed once into
// shared double buffers, rows split; many tasks -> whole tasks per thread.
// Each thread count below sends some of these products down each way, with
// several K slices (the shared buffers' turns), several column strips, rows
// that are not a multiple of the micro-kernel's, every transpose, and
// accumulate on (C's old values kept).
static Tensor matrix(const Tensor& batch, int64_t i) { return raw::squeeze(raw::narrow(batch, 0, i, 1), 0); }

// Each kernel that can read A in place (a row-major A for outputs at most
// 128 columns wide, a transposed A for at most 4 panels: gemm.cpp) against
// the same kernel on a strided A, which is always packed: the same bits, for
// the widest outputs read in place (128 columns, 4 panels) and ones that end
// in part of a panel, K longer than one slice of 256, and last panels of
// every length from 1 to MR - 1. The widest ones have more than 22
// micro-panels of rows (264 rows for AVX-512): with 2 or more threads, a
// product with fewer can be cut into narrower column strips (two per
// thread, gemm.cpp), which would miss the widest case.
TEST_CASE("gemm reads A in place with the same bits as packed", "[matmul]") {
    Generator gen(17);
    int tested = 0;
    for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
        const cpu::MicroKernel& kernel = cpu::micro_kernel_for(isa);
        if (!kernel.run_unpacked_a || !cpu::cpu_supports(isa)) continue;
        ++tested;
        const int64_t widest = 4 * kernel.nr, ragged = 3 * kernel.nr - 3;
        std::vector<std::array<int64_t, 3>> shapes{{50, 300, widest}, {300, 300, widest}, {37, 70, ragged},
                                                    {300, 300, 128}, {263, 70, 125}};
        for (int64_t last_panel = 1; last_panel < kernel.mr; ++last_panel)
            shapes.push_back({2 * kernel.mr + last_panel, 40, ragged});
        for (auto [M, K, N] : shapes) {
            INFO(cpu::simd_isa_name(isa) << ": " << M << " x " << K << " x " << N);
            Tensor spread = raw::randn({M, K, 2}, gen);
            Tensor a_strided = raw::squeeze(raw::narrow(spread, 2, 0, 1), 2);  // strides (2K, 2): packed
            Tensor a_rows = raw::contiguous(a_strided);                          // row-major: read in place
            Tensor a_cols = raw::transpose(raw::contiguous(raw::transpose(a_strided, 0, 1)), 0, 1);  // transposed
            REQUIRE(a_strided.strides()[1] == 2);
            REQUIRE(a_cols.strides()[0] == 1);
            Tensor b = raw::randn({K, N}, gen);
            // Every output starts as zeros, which a row or column the kernel
            // never wrote would keep.
            Tensor packed = gemm_with(isa, a_strided, b), rows = gemm_with(isa, a_rows, b),
                   cols = gemm_with(isa, a_cols, b);
            CHECK(rows.to_vector() == packed.to_vector());
            CHECK(cols.to_vector() == packed.to_vector());
            check_values(packed, reference_matmul(a_strided, b), 2e-4 * std::sqrt((double)K));
        }
    }
#if defined(__x86_64__)
    // Both x86 kernels read A in place; AVX2 runs on every AVX-512 CPU too.
    CHECK(cpu::micro_kernel_for(cpu::SimdIsa::Avx2).run_unpacked_a != nullptr);
    CHECK(cpu::micro_kernel_for(cpu::SimdIsa::Avx512).run_unpacked_a != nullptr);
    if (cpu::cpu_supports(cpu::SimdIsa::Avx2)) CHECK(tested >= 1);
#endif
}

// Attention's tile products pass their thread's own packing buffers
// (gemm.h): the products must come out the same to the bit as with buffers
// from the allocator, whether the buffers grow (a larger product after a
// smaller one) or are reused for smaller ones, and once grown they must
// take nothing more from the allocator.
TEST_CASE("gemm_single_thread with its own packing buffers: same bits, no allocation", "[matmul]") {
    Generator gen(23);
    cpu::PackingBuffers<float> buffers;
    // {M, K, N}: growing, then smaller, then a K past one cache slice (256).
    const std::vector<std::array<int64_t, 3>> shapes{{8, 16, 8}, {128, 32, 128}, {40, 100, 70}, {96, 300, 64}};
    auto product = [&](const Tensor& a, const Tensor& bt, cpu::PackingBuffers<float>* own) {
        const int64_t M = a.size(0), K = a.size(1), N = bt.size(0);
        std::vector<float> c(M * N);
        cpu::gemm_single_thread(M, N, K, a.data<float>(), K, 1, bt.data<float>(), 1, K, c.data(), N,
                                /*accumulate=*/false, own);
        return c;
    };
    for (int round = 0; round < 2; ++round)
        for (auto [M, K, N] : shapes) {
            INFO("round " << round << ": " << M << " x " << K << " x " << N);
            Tensor a = raw::randn({M, K}, gen), bt = raw::randn({N, K}, gen);  // B = bt^T, as attention's K^T
            std::vector<float> allocated = product(a, bt, nullptr);
            const AllocatorStats before = cpu::allocator_stats();
            std::vector<float> own = product(a, bt, &buffers);
            const AllocatorStats after = cpu::allocator_stats();
            CHECK(own == allocated);
            std::vector<double> expected = reference_matmul(a, raw::transpose(bt, 0, 1));
            for (size_t i = 0; i < own.size(); ++i) REQUIRE(std::abs(own[i] - expected[i]) < 1e-4 * std::sqrt(K));
            // The second round's buffers are as large as any product needs.
            if (round == 1) CHECK(after.system_allocations + after.cache_hits == before.system_allocations + before.cache_hits);
        }
}

// A B operand packed once (pack_b_once) and multiplied in parts, as
// attention's bands read a tile: C = A B(rows [k0, k0 + K), columns [0, N)).
// Each part must give gemm_single_thread's bits on the same part of B, and
// the reference's values, for B row-major and transposed (keys as K^T),
// parts that start at row 0 and inside, widths not a multiple of the
// kernel's panels, A transposed, one-row products (gemv), accumulation, a B
// deeper than one cache slice and a B for one-row products only (neither
// packed: gemm_single_thread's path).
template <typename T>
static void check_packed_b_parts(double tol) {
    Generator gen(29);
    const DType dtype = std::is_same_v<T, float> ? kFloat32 : kFloat64;
    cpu::PackingBuffers<T> buffers;
    struct Part {
        int64_t M, N, k0, K;
    };
    for (int64_t depth : {40, 128, 300})
        for (bool b_transposed : {false, true})
            for (bool a_transposed : {false, true}) {
                const int64_t width = 70;  // columns of B packed
                Tensor b = raw::to_dtype(raw::randn({depth, width}, gen), dtype);
                Tensor bt = raw::contiguous(raw::transpose(b, 0, 1));
                const T* b_data = b_transposed ? bt.data<T>() : b.data<T>();
                const int64_t b_rs = b_transposed ? 1 : width, b_cs = b_transposed ? depth : 1;
                // Packed once for products of up to 33 rows, which all the parts
                // below then read; for one-row products only, not packed.
                for (int64_t max_rows : {33, 1}) {
                    const cpu::PackedB<T> packed = cpu::pack_b_once(max_rows, depth, width, b_data, b_rs, b_cs, buffers);
                    CHECK((packed.panels != nullptr) == (max_rows > 1 && depth <= 256));
                    for (Part part : {Part{33, width, 0, depth}, Part{12, 37, 0, depth / 2}, Part{20, width, depth / 3,
                                      depth - depth / 3}, Part{1, 50, 5, depth - 5}, Part{24, 64, depth - 8, 8}}) {
                        if (part.M > max_rows) continue;
                        INFO("depth " << depth << (b_transposed ? ", B transposed" : "") << (a_transposed ? ", A transposed" : "")
                                      << ", packed for " << max_rows << " rows: M " << part.M << " N " << part.N << " rows "
                                      << part.k0 << " + " << part.K);
                        Tensor a = raw::to_dtype(raw::randn({part.M, part.K}, gen), dtype);
                        Tensor at = raw::contiguous(raw::transpose(a, 0, 1));
                        const T* a_data = a_transposed ? at.data<T>() : a.data<T>();
                        const int64_t a_rs = a_transposed ? 1 : part.K, a_cs = a_transposed ? part.M : 1;
                        const T* b_part = b_data + part.k0 * b_rs;
                        for (bool accumulate : {false, true}) {
                            std::vector<T> start(part.M * part.N);
                            for (size_t i = 0; i < start.size(); ++i) start[i] = T(0.25) * T(i % 7);
                            std::vector<T> got = start, expected = start;
                            cpu::gemm_packed_b(part.M, part.N, part.k0, part.K, a_data, a_rs, a_cs, packed, got.data(),
                                               part.N, accumulate, buffers);
                            cpu::gemm_single_thread(part.M, part.N, part.K, a_data, a_rs, a_cs, b_part, b_rs, b_cs,
                                                    expected.data(), part.N, accumulate);
                            CHECK(got == expected);
                            std::vector<double> reference = reference_matmul(
                                a, raw::narrow(raw::narrow(b, 0, part.k0, part.K), 1, 0, part.N));
                            double worst = 0;
                            for (size_t i = 0; i < got.size(); ++i) {
                                const double error =
                                    std::abs((double)got[i] - (accumulate ? (double)start[i] : 0.0) - reference[i]);
                                worst = nc_test::worst_of(worst, error);
                            }
                            CHECK(worst < tol * std::sqrt((double)part.K));
                        }
                    }
                }
            }
}

TEST_CASE("gemm_packed_b: parts of a B packed once, the bits of gemm_single_thread", "[matmul]") {
    check_packed_b_parts<float>(1e-4);
    check_packed_b_parts<double>(1e-12);
}

// A linear layer's bias handed to matmul (Backend::matmul's `bias`): every
// block of C starts as the bias just before its first product. It must give
// the bits of the way it replaced, C filled with the bias and the product
// accumulated into it, on every path of the GEMM, with 1, 2 and 3 threads:
// one row (gemv, also over a batch; a B with neither stride 1 goes to the
// blocked loops), few rows (column strips), many rows shared by the
// threads over several K slices, a batch of matrices, a product split along
// K, an empty K, transposed operands, float64 and bfloat16 operands; and
// the reference's values. Every output starts as NaN, so a block the bias
// never reached cannot pass.
TEST_CASE("matmul with a bias: the bits of the bias filled in first, on every path", "[matmul][threads]") {
    Generator gen(31);
    const int saved_threads = omp_get_max_threads();
    struct Case {
        int64_t batch, M, K, N;
        DType dtype;
        bool a_transposed, b_transposed, b_strided;
    };
    const std::vector<Case> cases{
        {1, 1, 64, 96, kFloat32, false, true, false},   {3, 1, 40, 70, kFloat32, false, false, false},
        {1, 1, 30, 50, kFloat32, false, false, true},   {1, 37, 70, 100, kFloat32, false, true, false},
        {1, 300, 300, 200, kFloat32, false, true, false}, {1, 300, 96, 1100, kFloat32, false, false, false},
        {4, 70, 90, 60, kFloat32, true, false, false},  {1, 64, 2048, 96, kFloat32, true, false, false},
        {1, 50, 0, 30, kFloat32, false, false, false},  {1, 29, 70, 45, kFloat64, true, true, false},
        {1, 1, 33, 20, kFloat64, false, false, false},  {1, 40, 64, 72, kBFloat16, false, true, false}};
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (const Case& c : cases) {
            INFO(threads << " threads: " << c.batch << " x " << c.M << " x " << c.K << " x " << c.N << " "
                         << dtype_name(c.dtype) << (c.a_transposed ? " A^T" : "") << (c.b_transposed ? " B^T" : "")
                         << (c.b_strided ? " B strided" : ""));
            const DType out_dtype = c.dtype == kFloat64 ? kFloat64 : kFloat32;
            Tensor a = raw::to_dtype(raw::randn({c.batch, c.M, c.K}, gen), c.dtype);
            Tensor b = raw::to_dtype(raw::randn({c.batch, c.K, c.N}, gen), c.dtype);
            if (c.a_transposed) a = raw::transpose(raw::contiguous(raw::transpose(a, 1, 2)), 1, 2);
            if (c.b_transposed) b = raw::transpose(raw::contiguous(raw::transpose(b, 1, 2)), 1, 2);
            if (c.b_strided)  // strides (2N, 2): neither is 1
                b = raw::squeeze(raw::narrow(raw::randn({c.batch, c.K, c.N, 2}, gen), 3, 0, 1), 3);
            Tensor bias = raw::to_dtype(raw::randn({c.N}, gen), out_dtype);
            const std::vector<double> b_values = bias.to_vector();
            Tensor with_bias = raw::full({c.batch, c.M, c.N}, NAN, out_dtype);
            Tensor filled_first = raw::clone(raw::expand(bias, {c.batch, c.M, c.N}));  // clone: never the bias itself
            backend_for(kCPU).matmul(a, b, with_bias, /*accumulate=*/false, bias);
            backend_for(kCPU).matmul(a, b, filled_first, /*accumulate=*/true, Tensor());
            CHECK(with_bias.to_vector() == filled_first.to_vector());
            CHECK(bias.to_vector() == b_values);  // read, never written
            if (threads > 1) continue;  // the same bits as one thread's, checked against the reference below
            double worst = 0;  // the largest error against the reference (NaN for an unwritten block)
            for (int64_t bi = 0; bi < c.batch; ++bi) {
                std::vector<double> product = reference_matmul(matrix(a, bi), matrix(b, bi));
                std::vector<double> got = matrix(with_bias, bi).to_vector();
                for (int64_t i = 0; i < c.M; ++i)
                    for (int64_t j = 0; j < c.N; ++j) {
                        const double error = std::abs(got[i * c.N + j] - (product[i * c.N + j] + b_values[j]));
                        worst = nc_test::worst_of(worst, error);
                    }
            }
            CHECK(worst < 2e-4 * std::sqrt((double)c.K + 1));
        }
    }
    omp_set_num_threads(saved_threads);
    // A bias that does not fit is refused by name.
    Tensor a = raw::randn({4, 8}, gen), b = raw::randn({8, 6}, gen), out = raw::zeros({4, 6});
    check_error([&] { backend_for(kCPU).matmul(a, b, out, false, raw::zeros({5})); }, {"matmul: a bias must be", "[6]"});
    check_error([&] { backend_for(kCPU).matmul(a, b, out, true, raw::zeros({6})); }, {"not given with accumulate"});
}

TEST_CASE("gemm agrees with the reference whether 1 2 or 3 threads share it", "[matmul][threads]") {
    Generator gen(15);
    const int saved_threads = omp_get_max_threads();
    struct Case {
        int64_t batch, M, K, N;
    };
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (Case c : {Case{1, 150, 600, 1100}, Case{3, 37, 300, 45}, Case{8, 29, 70, 41}}) {
            Tensor a = raw::randn({c.batch, c.M, c.K}, gen), b = raw::randn({c.batch, c.K, c.N}, gen);
            Tensor at = raw::transpose(raw::contiguous(raw::transpose(a, 1, 2)), 1, 2);  // column-major copies
            Tensor bt = raw::transpose(raw::contiguous(raw::transpose(b, 1, 2)), 1, 2);
            Tensor start = raw::randn({c.batch, c.M, c.N}, gen);
            std::vector<Tensor> products = {raw::matmul(a, b), raw::matmul(at, b), raw::matmul(a, bt),
                                            raw::matmul(at, bt)};
            Tensor accumulated = raw::clone(start);  // C = start + A B
            backend_for(kCPU).matmul(at, b, accumulated, /*accumulate=*/true, Tensor());
            double tol = 2e-4 * std::sqrt((double)c.K);
            for (int64_t bi = 0; bi < c.batch; ++bi) {
                INFO("threads=" << threads << " matrix " << bi << " of " << c.batch << ", M=" << c.M << " K=" << c.K
                                << " N=" << c.N);
                std::vector<double> expected = reference_matmul(matrix(a, bi), matrix(b, bi));
                for (const Tensor& product : products) check_values(matrix(product, bi), expected, tol);
                std::vector<double> start_i = matrix(start, bi).to_vector();
                for (size_t k = 0; k < expected.size(); ++k) expected[k] += start_i[k];
                check_values(matrix(accumulated, bi), expected, tol);
            }
        }
    }
    omp_set_num_threads(saved_threads);
}

// With few rows (gemm.cpp's kFewRowPanels) the threads share a product's
// columns, in strips that depend on the thread count. Each element is
// still the same sum in the same order, so every thread count must give
// the same bits, and the reference's values. Shapes: a 64-token prompt's
// projection with two K slices, columns not a multiple of the kernel's
// width, a wide output (128 rows: few for every kernel; 200 rows: few
// only for AVX-512's 12-row kernel, shared rows for the others), an output
// of 33 columns, too narrow for a strip per thread wherever the strips are
// 32 wide or more (the rows then stay shared: with 3 threads for AVX2 at 128
// rows, with 2 or 3 for AVX-512), and a batch.
TEST_CASE("gemm with few rows shares its columns: the same bits for 1 2 and 3 threads", "[matmul][threads]") {
    Generator gen(29);
    const int saved_threads = omp_get_max_threads();
    struct Case {
        int64_t batch, M, K, N;
    };
    for (Case c : {Case{1, 64, 300, 384}, Case{1, 64, 128, 100}, Case{1, 128, 70, 2304}, Case{1, 200, 70, 2304},
                   Case{1, 128, 40, 33}, Case{1, 256, 40, 33}, Case{3, 50, 60, 200}}) {
        Tensor a = raw::randn({c.batch, c.M, c.K}, gen), b = raw::randn({c.batch, c.K, c.N}, gen);
        Tensor bt = raw::transpose(raw::contiguous(raw::transpose(b, 1, 2)), 1, 2);  // x W^T's layout
        std::vector<double> first, first_t;
        for (int threads : {1, 2, 3}) {
            omp_set_num_threads(threads);
            INFO("M=" << c.M << " K=" << c.K << " N=" << c.N << " batch " << c.batch << ", threads=" << threads);
            // Outputs start as NaN: a column no strip covers cannot pass for
            // a value an earlier product left in a reused block.
            Tensor plain = raw::full({c.batch, c.M, c.N}, NAN), transposed = raw::full({c.batch, c.M, c.N}, NAN);
            backend_for(kCPU).matmul(a, b, plain, /*accumulate=*/false, Tensor());
            backend_for(kCPU).matmul(a, bt, transposed, /*accumulate=*/false, Tensor());
            if (threads == 1) {
                first = plain.to_vector();
                first_t = transposed.to_vector();
                for (int64_t bi = 0; bi < c.batch; ++bi) {
                    std::vector<double> expected = reference_matmul(matrix(a, bi), matrix(b, bi));
                    check_values(matrix(plain, bi), expected, 2e-4 * std::sqrt((double)c.K));
                    check_values(matrix(transposed, bi), expected, 2e-4 * std::sqrt((double)c.K));
                }
            }
            CHECK(plain.to_vector() == first);
            CHECK(transposed.to_vector() == first_t);
        }
    }
    omp_set_num_threads(saved_threads);
}

// A weight gradient dW = dy^T x has a long K (every token) and a small
// output, and gemm.cpp splits its K into parts whose outputs are added at
// the end. The parts depend on the shape only, so the result must be the
// same to the bit for any number of threads, and equal the reference.
// Shapes: 4 parts with K not a multiple of 4, 4 parts of 512, 2 parts, 4
// parts of an output wider than K / 4 (few rows, long K), and one K too
// short for its output. The products too big for a unit test only have
// their parts checked.
TEST_CASE("gemm split along K gives the same bits for 1 2 and 3 threads", "[matmul][threads]") {
    Generator gen(17);
    const int saved_threads = omp_get_max_threads();
    // {M, K, N, the parts gemm.cpp must choose}: 4 parts would need 9 MiB, 2
    // fit in 8; 2 would need 8.2 MiB; many rows; 4 parts of 4 MiB.
    for (auto [M, K, N, parts] : std::vector<std::array<int64_t, 4>>{
             {384, 2048, 1536, 2}, {256, 2048, 4200, 1}, {1024, 2048, 384, 1}, {512, 2048, 512, 4}})
        CHECK(cpu::k_split_parts(M, N, K, sizeof(float)) == parts);
    for (auto [M, K, N, parts] : std::vector<std::array<int64_t, 4>>{
             {37, 2051, 50, 4}, {128, 2048, 128, 4}, {64, 1100, 200, 2}, {64, 2048, 640, 4}, {256, 1024, 1024, 1}}) {
        REQUIRE(cpu::k_split_parts(M, N, K, sizeof(float)) == parts);
        Tensor a = raw::randn({M, K}, gen), b = raw::randn({K, N}, gen), start = raw::randn({M, N}, gen);
        Tensor at = raw::transpose(raw::randn({K, M}, gen), 0, 1);  // dy^T: a transposed view, as in backward
        std::vector<double> expected = reference_matmul(a, b), expected_t = reference_matmul(at, b);
        std::vector<double> start_v = start.to_vector();
        std::vector<double> first_plain, first_t, first_acc;  // float32 values, widened exactly
        for (int threads : {1, 2, 3}) {
            omp_set_num_threads(threads);
            INFO("M=" << M << " K=" << K << " N=" << N << ", threads=" << threads);
            Tensor plain = raw::matmul(a, b), transposed = raw::matmul(at, b), accumulated = raw::clone(start);
            backend_for(kCPU).matmul(at, b, accumulated, /*accumulate=*/true, Tensor());
            double tol = 2e-4 * std::sqrt((double)K);
            check_values(plain, expected, tol);
            check_values(transposed, expected_t, tol);
            std::vector<double> with_start(expected_t);
            for (size_t i = 0; i < with_start.size(); ++i) with_start[i] += start_v[i];
            check_values(accumulated, with_start, tol);
            std::vector<double> p = plain.to_vector(), t = transposed.to_vector(), acc = accumulated.to_vector();
            if (threads == 1) {
                first_plain = p, first_t = t, first_acc = acc;
            } else {
                CHECK(p == first_plain);
                CHECK(t == first_t);
                CHECK(acc == first_acc);
            }
        }
    }
    omp_set_num_threads(saved_threads);
}

// One row of A (a generated token's activations) skips the packing: gemv.h
// reads B in place when its columns (x W^T, q K^T) or its rows (p V) are
// contiguous. Both layouts, with a strided a, column counts that are not
// multiples of the 16 columns or 16-float pieces the loops take, the widths
// of a head's values (32 and 64, summed in registers), products big enough
// to be split between threads (when there are threads), and accumulate on.
static void check_one_row_products(int threads, Generator& gen) {
    const int saved_threads = omp_get_max_threads();
    omp_set_num_threads(threads);
    const std::vector<std::array<int64_t, 2>> sizes{{1, 1},   {5, 7},      {128, 45},  {40, 32},
                                                    {9, 64}, {300, 1100}, {768, 2304}};
    for (auto [K, N] : sizes) {
        Tensor a_wide = raw::randn({3, K}, gen), b = raw::randn({K, N}, gen);
        Tensor a = raw::narrow(a_wide, 0, 1, 1);                                                   // [1, K], contiguous row
        Tensor a_strided = raw::transpose(raw::contiguous(raw::transpose(a_wide, 0, 1)), 0, 1);  // column-major
        a_strided = raw::narrow(a_strided, 0, 1, 1);                                               // a_cs = 3
        Tensor b_columns = raw::transpose(raw::contiguous(raw::transpose(b, 0, 1)), 0, 1);        // b_rs = 1, W^T
        std::vector<double> expected = reference_matmul(a, b);
        double tol = 2e-4 * std::sqrt((double)K);
        for (const Tensor& left : {a, a_strided})
            for (const Tensor& right : {b, b_columns}) {
                INFO("threads=" << threads << " K=" << K << " N=" << N << " a_cs=" << left.strides()[1] << " b strides "
                                << right.strides()[0] << "," << right.strides()[1]);
                std::vector<float> c(N, 0.5f);
                bool done = cpu::gemv(N, K, static_cast<const float*>(left.raw_data()), left.strides()[1],
                                      static_cast<const float*>(right.raw_data()), right.strides()[0],
                                      right.strides()[1], c.data(), /*accumulate=*/true, /*allow_threads=*/true);
                REQUIRE(done);
                std::vector<double> with_start(expected);
                for (double& e : with_start) e += 0.5;
                check_values(raw::from_vector(std::vector<double>(c.begin(), c.end()), {N}), with_start, tol);
                check_values(raw::matmul(left, right), expected, tol);  // through gemm(), C overwritten
            }
    }
    omp_set_num_threads(saved_threads);
}

TEST_CASE("one-row products read B in place in both layouts", "[matmul][gemv]") {
    Generator gen(16);
    check_one_row_products(1, gen);
    // Neither B's rows nor its columns contiguous (every other number of a
    // [K, N, 2] array: strides 2N and 2): gemv refuses, matmul packs it.
    Tensor pairs = raw::randn({6, 9, 2}, gen);
    Tensor b_every_other = raw::squeeze(raw::narrow(pairs, 2, 0, 1), 2);  // [6, 9], strides (18, 2)
    Tensor a = raw::randn({1, 6}, gen);
    std::vector<float> c(9, 0.0f);
    CHECK_FALSE(cpu::gemv(9, 6, static_cast<const float*>(a.raw_data()), 1,
                          static_cast<const float*>(b_every_other.raw_data()), b_every_other.strides()[0],
                          b_every_other.strides()[1], c.data(), false, true));
    CHECK(c == std::vector<float>(9, 0.0f));
    check_values(raw::matmul(a, b_every_other), reference_matmul(a, b_every_other), 1e-4);
}

// The columns split between 2 and 3 threads (more threads than this
// machine's cores included), each taking a run cut at a multiple of 16.
TEST_CASE("one-row products split between threads", "[matmul][gemv][threads]") {
    Generator gen(17);
    for (int threads : {2, 3}) check_one_row_products(threads, gen);
}

// The threads of one GEMM split the rows through RowShare (row_share.h):
// owners take from the front, helpers from the back, and no panel may be
// done twice or skipped, however the takes interleave.
TEST_CASE("row shares hand out every panel once to owner or helper", "[matmul][threads]") {
    cpu::RowShare share;
    share.reset(10, 40);  // 30 panels
    cpu::PanelRange r = share.take_front(12, 4);
    CHECK(r.first == 10);
    CHECK(r.last == 22);  // a whole block
    r = share.take_back(4);
    CHECK(r.first == 36);
    CHECK(r.last == 40);
    r = share.take_front(12, 4);  // 14 left: half of them
    CHECK(r.first == 22);
    CHECK(r.last == 29);
    r = share.take_front(12, 4);  // 7 left: half is 3, but at least 4
    CHECK(r.first == 29);
    CHECK(r.last == 33);
    r = share.take_back(4);  // only 3 left
    CHECK(r.first == 33);
    CHECK(r.last == 36);
    CHECK(share.take_front(12, 4).empty());
    CHECK(share.take_back(4).empty());

    // Four threads, each owning 50 panels; owner 0 is slow, so the others
    // take part of its share. Every panel is done exactly once.
    const int64_t per_thread = 50, team = 4;
    std::vector<cpu::RowShare> shares(team);
    std::vector<std::atomic<int>> taken(per_thread * team);
    for (auto& t : taken) t = 0;
    std::atomic<int64_t> helped{0};
    std::vector<std::thread> threads;
    for (int me = 0; me < team; ++me) shares[me].reset(me * per_thread, (me + 1) * per_thread);
    for (int me = 0; me < team; ++me)
        threads.emplace_back([&, me] {
            for (cpu::PanelRange p = shares[me].take_front(12, 4); !p.empty(); p = shares[me].take_front(12, 4))
                for (int64_t i = p.first; i < p.last; ++i) {
                    if (me == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
                    ++taken[i];
                }
            for (int k = 1; k < team; ++k) {
                cpu::RowShare& other = shares[(me + k) % team];
                for (cpu::PanelRange p = other.take_back(4); !p.empty(); p = other.take_back(4))
                    for (int64_t i = p.first; i < p.last; ++i) {
                        ++taken[i];
                        ++helped;
                    }
            }
        });
    for (auto& t : threads) t.join();
    for (int64_t i = 0; i < per_thread * team; ++i) {
        INFO("panel " << i);
        CHECK(taken[i] == 1);
    }
    CHECK(helped > 0);  // the slow owner's share was shared
}

TEST_CASE("batched matmul broadcasts batch dims", "[matmul][broadcast]") {
    Generator gen(13);
    Tensor a = raw::randn({2, 3, 5, 4}, gen);
    Tensor b = raw::randn({3, 4, 6}, gen);  // broadcast over the leading 2
    Tensor c = raw::matmul(a, b);
    CHECK(c.shape() == Shape{2, 3, 5, 6});
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j) {
            Tensor ai = raw::squeeze(raw::narrow(raw::squeeze(raw::narrow(a, 0, i, 1), 0), 0, j, 1), 0);
            Tensor bj = raw::squeeze(raw::narrow(b, 0, j, 1), 0);
            Tensor cij = raw::squeeze(raw::narrow(raw::squeeze(raw::narrow(c, 0, i, 1), 0), 0, j, 1), 0);
            check_values(cij, reference_matmul(ai, bj), 1e-5);
        }
    // [B, T, C] @ [C, N]: the common "activations times weights" case.
    Tensor x = raw::randn({4, 7, 8}, gen), w = raw::randn({8, 3}, gen);
    Tensor y = raw::matmul(x, w);
    CHECK(y.shape() == Shape{4, 7, 3});
    check_values(raw::reshape(y, {28, 3}), reference_matmul(raw::reshape(x, {28, 8}), w), 1e-5);
}

TEST_CASE("matmul with vectors follows NumPy", "[matmul]") {
    Tensor m = raw::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor v = raw::from_vector(std::vector<double>{1, 0, -1}, {3});
    Tensor w = raw::from_vector(std::vector<double>{1, 1}, {2});
    Tensor mv = raw::matmul(m, v);
    CHECK(mv.shape() == Shape{2});
    check_values(mv, {-2, -2});
    Tensor wm = raw::matmul(w, m);
    CHECK(wm.shape() == Shape{3});
    check_values(wm, {5, 7, 9});
    Tensor dot = raw::matmul(v, v);
    CHECK(dot.dim() == 0);
    CHECK(dot.item() == 2);
}

TEST_CASE("matmul reports mismatched shapes", "[matmul][errors]") {
    check_error([] { raw::matmul(raw::zeros({2, 3}), raw::zeros({4, 5})); }, {"matmul", "[2, 3]", "[4, 5]", "inner"});
    check_error([] { raw::matmul(raw::zeros({2, 2, 3}), raw::zeros({3, 3, 4})); }, {"matmul", "batch", "[2]", "[3]"});
    check_error([] { raw::matmul(raw::zeros({2, 3}), raw::zeros({3, 2}, kFloat64)); }, {"matmul", "float32", "float64"});
    check_error([] { raw::matmul(raw::scalar(1), raw::zeros({3})); }, {"matmul", "at least 1 dim"});
}

TEST_CASE("linear equals x w^T + bias, in one GEMM over all leading dims", "[matmul][linear]") {
    Generator gen(15);
    for (auto [rows, K, N] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {7, 33, 13}, {10, 300, 129}}) {
        for (DType dtype : {kFloat32, kFloat64}) {
            Tensor x = raw::randn({2, rows, K}, gen, dtype), w = raw::randn({N, K}, gen, dtype);
            Tensor bias = raw::randn({N}, gen, dtype);
            INFO("rows=" << rows << " K=" << K << " N=" << N << " " << dtype_name(dtype));
            double tol = dtype == kFloat32 ? 2e-4 * std::sqrt((double)K) : 1e-10;
            // The reference: the batched matmul, then the bias added by broadcasting.
            Tensor expected = raw::add(raw::matmul(x, raw::transpose(w, 0, 1)), bias);
            check_values(raw::linear(x, w, bias), expected.to_vector(), tol);
            check_values(raw::linear(x, w, Tensor()), raw::matmul(x, raw::transpose(w, 0, 1)).to_vector(), tol);
            // A non-contiguous x (a transposed view) gives the same numbers.
            Tensor xt = raw::transpose(raw::contiguous(raw::transpose(x, 0, 1)), 0, 1);
            check_values(raw::linear(xt, w, bias), expected.to_vector(), tol);
        }
    }
    CHECK(raw::linear(raw::randn({3, 4}, gen), raw::randn({5, 4}, gen), Tensor()).shape() == Shape({3, 5}));
    check_error([&] { raw::linear(raw::randn({3, 4}, gen), raw::randn({5, 3}, gen), Tensor()); }, {"linear", "[3, 4]", "[5, 3]"});
    check_error([&] { raw::linear(raw::randn({3, 4}, gen), raw::randn({5, 4}, gen), raw::randn({4}, gen)); },
                {"linear", "bias must be [5]"});
}

TEST_CASE("linear's backward: gradcheck with and without bias", "[matmul][linear][gradcheck]") {
    using V = std::vector<Tensor>;
    Generator gen(16);
    Tensor x = raw::randn({2, 3, 5}, gen, kFloat64).set_requires_grad(true);
    Tensor w = raw::randn({4, 5}, gen, kFloat64).set_requires_grad(true);
    Tensor b = raw::randn({4}, gen, kFloat64).set_requires_grad(true);
    nc_test::check_gradcheck([](const V& v) { return linear(v[0], v[1], v[2]); }, {x, w, b});
    nc_test::check_gradcheck([](const V& v) { return linear(v[0], v[1]); }, {x, w});
    // A bias that needs no gradient gets none, and x's and w's are unchanged.
    Tensor frozen = raw::randn({4}, gen, kFloat64);
    Tensor x2 = raw::clone(x).set_requires_grad(true);
    backward(sum(linear(x2, w, frozen)));
    CHECK_FALSE(frozen.grad().defined());
    CHECK(x2.grad().defined());
}

// Whether `dot` fuses its multiply-adds: with a = (-r, 0, ..., 0, x),
// w = (1, 0, ..., 0, y) and r = x y rounded, partial 0 is fma(x, y, -r),
// the rounding error of x y (2^-24), where a multiply and an add give 0.
static bool fuses(cpu::DotColumnsFn dot) {
    const float x = 1.0f + 0x1p-12f, r = x * x;
    std::vector<float> a(17, 0.0f), w(17, 0.0f);
    a[0] = -r, w[0] = 1, a[16] = x, w[16] = x;
    float c = 0;
    dot(17, a.data(), w.data(), 17, 1, &c, false, false);
    return c != 0;
}

TEST_CASE("every dot_columns kernel adds in the one order", "[matmul][gemv][simd]") {
    Generator gen(18);
    int exact = 0;
    for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
        if (!cpu::cpu_supports(isa)) continue;
        cpu::DotColumnsFn dot = cpu::micro_kernel_for(isa).dot_columns;
        if (!dot) continue;  // gemv uses the portable kernel's
        const bool bitwise = fuses(dot);
        if (!bitwise)
            WARN(cpu::simd_isa_name(isa) << "'s dot_columns does not fuse multiply-adds (a build without FMA): "
                                            "checked to rounding only");
        exact += bitwise;
        // K: a multiple of 16, short ones, tails of 1 to 15; columns: 16
        // (AVX-512) or 4 (AVX2) at a time and the rest one by one, streamed or
        // not; accumulate on and off.
        for (int64_t K : {1, 5, 16, 17, 32, 50, 128, 200, 344, 768})
            for (int64_t columns : {1, 15, 16, 37}) {
                const int64_t b_cs = K + 3;  // columns apart by more than their length
                Tensor a = raw::randn({K}, gen), b = raw::randn({columns * b_cs}, gen);
                const float* av = static_cast<const float*>(a.raw_data());
                const float* bv = static_cast<const float*>(b.raw_data());
                for (bool streaming : {false, true})
                    for (bool accumulate : {false, true}) {
                        std::vector<float> c(columns, 0.25f);
                        dot(K, av, bv, b_cs, columns, c.data(), accumulate, streaming);
                        for (int64_t j = 0; j < columns; ++j) {
                            float expected = dot_in_kernel_order(K, av, bv + j * b_cs);
                            if (accumulate) expected = 0.25f + expected;
                            INFO(cpu::simd_isa_name(isa) << " K=" << K << " columns=" << columns << " j=" << j
                                                         << " streaming=" << streaming << " accumulate=" << accumulate);
                            if (bitwise)
                                REQUIRE(c[j] == expected);
                            else
                                REQUIRE(std::abs(c[j] - expected) <=
                                        1e-5 * std::sqrt((double)K) * (1 + std::abs(expected)));
                        }
                    }
            }
    }
#if defined(__x86_64__)
    // Both x86 kernels use FMA instructions; AVX2 runs on every AVX-512 CPU too.
    CHECK(cpu::micro_kernel_for(cpu::SimdIsa::Avx2).dot_columns != nullptr);
    if (cpu::cpu_supports(cpu::SimdIsa::Avx2)) CHECK(exact >= 1);
    if (cpu::cpu_supports(cpu::SimdIsa::Avx512)) CHECK(exact >= 2);
#endif
}

// Packing's 16 x 16 transpose (gemm_kernels.h) of every kernel that has
// one and runs here: AVX-512's in one register per row, AVX2's as four
// 8 x 8 blocks. Rows past `rows` read as zero; nothing past `width` is
// written (the destination keeps its -7 there).
TEST_CASE("each packing transpose equals the plain loop", "[matmul][simd]") {
    std::vector<float> src(16 * 21);
    for (size_t i = 0; i < src.size(); ++i) src[i] = (float)i + 0.5f;
    int tested = 0;
    for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
        const cpu::MicroKernel& k = cpu::micro_kernel_for(isa);
        if (!k.transpose16) continue;
        if (!cpu::cpu_supports(isa)) {
            WARN("skipping the " << cpu::simd_isa_name(isa) << " transpose: this CPU does not support it");
            continue;
        }
        ++tested;
        for (int rows : {0, 1, 5, 6, 9, 12, 16})
            for (int width : {1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 16}) {
                std::vector<float> dst(16 * 17, -7.0f);
                k.transpose16(src.data(), 21, rows, dst.data(), 17, width);
                int wrong = 0;
                for (int p = 0; p < 16; ++p)
                    for (int i = 0; i < 17; ++i) {
                        float expected = i >= width ? -7.0f : (i < rows ? src[i * 21 + p] : 0.0f);
                        wrong += dst[p * 17 + i] != expected;
                    }
                INFO(cpu::simd_isa_name(isa) << ": rows " << rows << " width " << width);
                CHECK(wrong == 0);
            }
    }
#if defined(__x86_64__)
    CHECK(cpu::micro_kernel_for(cpu::SimdIsa::Avx2).transpose16 != nullptr);
    CHECK(cpu::micro_kernel_for(cpu::SimdIsa::Avx512).transpose16 != nullptr);
    if (cpu::cpu_supports(cpu::SimdIsa::Avx2)) CHECK(tested >= 1);
#endif
}
