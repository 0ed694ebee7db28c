// Chapter 9 — making it fast: from the triple loop to the packed micro-kernel,
// tiled attention, and a caching allocator. Built and run by `make test`;
// the walk-through is in 09-making-it-fast.md.
//
// Every fast version is checked against the naive result; the GFLOP/s it
// prints are for reading, never asserted (a shared machine is noisy).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "tensor/cpu/allocator.h"
#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/gemm.h"
#include "tensor/raw_nn.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 9: expected %s\n", what);
        std::exit(1);
    }
}

// Best of `runs` timings of `body`, as GFLOP/s for a product of n^3 terms.
static double gflops(int64_t n, int runs, const std::function<void()>& body) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        auto start = std::chrono::steady_clock::now();
        body();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return 2.0 * (double)n * (double)n * (double)n / best / 1e9;
}

static double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (double)std::fabs(a[i] - b[i]));
    return worst;
}

int main() {
    const int64_t n = 512;
    const int threads = omp_get_max_threads();
    Generator gen(9);
    Tensor a_t = raw::randn({n, n}, gen), b_t = raw::randn({n, n}, gen);
    std::vector<float> A(a_t.data<float>(), a_t.data<float>() + n * n);
    std::vector<float> B(b_t.data<float>(), b_t.data<float>() + n * n);
    std::vector<float> C_naive(n * n), C(n * n);

    // What the hardware can do: independent FMAs, no memory traffic at all.
    cpu::SimdIsa best = cpu::best_simd_isa();
    double peak1 = cpu::measure_fma_peak_gflops(best, 1, 20000000);
    double peak_all = cpu::measure_fma_peak_gflops(best, threads, 20000000);
    std::printf("FMA peak (%s): %.1f GFLOP/s on 1 thread, %.1f on %d\n\n", cpu::simd_isa_name(best), peak1, peak_all,
                threads);
    std::printf("%-44s %10s\n", "C = A B, 512 x 512 x 512, float32", "GFLOP/s");

    // Step 1: the textbook loop. The inner loop walks down a column of B:
    // a stride of n floats, a new cache line for every multiply-add.
    double g = gflops(n, 1, [&] {
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) {
                float total = 0;
                for (int64_t p = 0; p < n; ++p) total += A[i * n + p] * B[p * n + j];
                C_naive[i * n + j] = total;
            }
    });
    std::printf("%-44s %10.2f\n", "1. naive i-j-p (dot products)", g);

    // Step 2: swap the two inner loops. Now the inner loop runs along a row
    // of B and a row of C, both contiguous: the compiler vectorizes it.
    g = gflops(n, 3, [&] {
        std::fill(C.begin(), C.end(), 0.0f);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t p = 0; p < n; ++p) {
                float a = A[i * n + p];
                for (int64_t j = 0; j < n; ++j) C[i * n + j] += a * B[p * n + j];
            }
    });
    std::printf("%-44s %10.2f\n", "2. loop order i-p-j (vectorized rows)", g);
    expect(max_difference(C, C_naive) < 1e-3, "the reordered loop to agree with the naive one");

    // Steps 3-5: packing + cache blocking + a register-blocked micro-kernel
    // (tensor/cpu/gemm.cpp), one thread, with each micro-kernel this CPU has.
    cpu::MatrixOperand<float> a_op{A.data(), {0}, n, 1}, b_op{B.data(), {0}, n, 1};
    omp_set_num_threads(1);
    int step = 3;
    for (cpu::SimdIsa isa : {cpu::SimdIsa::Portable, cpu::SimdIsa::Avx2, cpu::SimdIsa::Avx512}) {
        char label[80];
        std::snprintf(label, sizeof label, "%d. packed, %s micro-kernel, 1 thread", step++, cpu::simd_isa_name(isa));
        if (!cpu::cpu_supports(isa)) {
            std::printf("%-44s %10s\n", label, "(no CPU support)");
            continue;
        }
        g = gflops(n, 5, [&] { cpu::gemm(n, n, n, a_op, b_op, C.data(), {0}, n, isa); });
        // Compared with the peak of the instructions it uses (the portable
        // kernel gets whatever the compiler's -march allows, so: the best).
        double isa_peak = isa == cpu::SimdIsa::Avx2 ? cpu::measure_fma_peak_gflops(isa, 1, 20000000) : peak1;
        std::printf("%-44s %10.2f  (%.0f%% of the %s 1-thread peak, %.0f)\n", label, g, 100 * g / isa_peak,
                    isa == cpu::SimdIsa::Avx2 ? "avx2" : cpu::simd_isa_name(best), isa_peak);
        expect(max_difference(C, C_naive) < 1e-3, "the packed GEMM to agree with the naive loop");
    }

    // Step 6: OpenMP over the strips of C, every thread with its own packing.
    omp_set_num_threads(threads);
    g = gflops(n, 5, [&] { cpu::gemm(n, n, n, a_op, b_op, C.data(), {0}, n, best); });
    std::printf("6. packed, %s, %d threads %*s %10.2f  (%.0f%% of peak)\n\n", cpu::simd_isa_name(best), threads,
                threads > 9 ? 16 : 17, "", g, 100 * g / peak_all);
    expect(max_difference(C, C_naive) < 1e-3, "the threaded GEMM to agree with the naive loop");

    // Tiled attention: the same outputs as the T x S-materializing reference,
    // but only one number per query is kept for backward.
    const int64_t heads = 4, T = 1024, D = 64;
    Tensor q = raw::randn({heads, T, D}, gen), k = raw::randn({heads, T, D}, gen), v = raw::randn({heads, T, D}, gen);
    double scale = 1.0 / std::sqrt((double)D);
    cpu::reset_peak_bytes();
    size_t before = cpu::allocator_stats().bytes_in_use;
    raw::AttentionForward tiled = raw::attention(q, k, v, /*causal=*/true, scale);
    size_t tiled_peak = cpu::allocator_stats().peak_bytes_in_use - before;
    cpu::reset_peak_bytes();
    before = cpu::allocator_stats().bytes_in_use;
    Tensor reference = raw::zeros({heads, T, D}), probs = raw::zeros({heads, T, T});
    cpu::attention_reference(q, k, v, true, scale, reference, probs);
    size_t reference_peak = cpu::allocator_stats().peak_bytes_in_use - before;
    double diff = raw::max(raw::abs(raw::sub(tiled.out, reference))).item();
    std::printf("attention, %lld heads x T=%lld x D=%lld, causal:\n", (long long)heads, (long long)T, (long long)D);
    std::printf("  tiled:     out + logsumexp %6.2f MiB (saved for backward: logsumexp [%lld, %lld])\n",
                (double)tiled_peak / 1048576.0, (long long)heads, (long long)T);
    std::printf("  reference: out + probs     %6.2f MiB (probs [%lld, %lld, %lld])\n",
                (double)reference_peak / 1048576.0, (long long)heads, (long long)T, (long long)T);
    std::printf("  largest difference of the outputs: %.2e\n\n", diff);
    expect(diff < 1e-5, "tiled attention to equal the reference");
    expect(reference_peak > 4 * tiled_peak, "the reference to need far more memory");

    // The caching allocator: the second identical computation is served
    // entirely from blocks the first one freed.
    auto work = [&] { raw::matmul(raw::add(raw::randn({256, 256}, gen), 1.0), raw::randn({256, 256}, gen)); };
    work();
    AllocatorStats s1 = cpu::allocator_stats();
    work();
    AllocatorStats s2 = cpu::allocator_stats();
    std::printf("caching allocator: the repeated computation made %lld system allocations and reused %lld blocks\n",
                (long long)(s2.system_allocations - s1.system_allocations), (long long)(s2.cache_hits - s1.cache_hits));
    expect(s2.system_allocations == s1.system_allocations, "no new system allocation the second time");
    return 0;
}
