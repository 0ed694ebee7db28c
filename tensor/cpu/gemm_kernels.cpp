// gemm_kernels.cpp — choosing a micro-kernel from the CPU's features, and the
// FMA-peak microbenchmark GEMM's efficiency is measured against.
#include "tensor/cpu/gemm_kernels.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace nc {
namespace cpu {

#if defined(__x86_64__) || defined(__i386__)
// F16C (float16 <-> float32 conversions), which the AVX2 kernel's 16-bit
// dot products use: bit 29 of ECX in CPUID leaf 1. Asked directly, because
// __builtin_cpu_supports does not know "f16c" in every compiler (clang 14).
// Asked once: cpu_supports runs at every product, and CPUID is slow (in a
// virtual machine the hypervisor answers it).
static bool cpu_has_f16c() {
    static const bool has = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
    }();
    return has;
}
#endif

const char* simd_isa_name(SimdIsa isa) {
    switch (isa) {
        case SimdIsa::Portable: return "portable";
        case SimdIsa::Avx2: return "avx2";
        case SimdIsa::Avx512: return "avx512";
        case SimdIsa::Neon: return "neon";
    }
    return "?";
}

// x86: __builtin_cpu_supports asks CPUID (and whether the OS saves the wide
// registers), so a binary built on one machine runs correctly on another.
// AArch64: NEON is part of the architecture, so every such CPU has it.
bool cpu_supports(SimdIsa isa) {
    switch (isa) {
        case SimdIsa::Portable: return true;
#if defined(__x86_64__) || defined(__i386__)
        case SimdIsa::Avx2:  // F16C too (the float16 dot products); every AVX2 CPU has it
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
        case SimdIsa::Avx512: return __builtin_cpu_supports("avx512f");
#endif
#if defined(__aarch64__)
        case SimdIsa::Neon: return true;
#endif
        default: return false;  // another architecture's instruction set
    }
}

std::vector<SimdIsa> compiled_simd_isas() {
#if defined(__x86_64__) || defined(__i386__)
    return {SimdIsa::Portable, SimdIsa::Avx2, SimdIsa::Avx512};
#elif defined(__aarch64__)
    return {SimdIsa::Portable, SimdIsa::Neon};
#else
    return {SimdIsa::Portable};
#endif
}

SimdIsa best_simd_isa() {
    static const SimdIsa best = [] {
        SimdIsa widest = SimdIsa::Portable;
        for (SimdIsa isa : compiled_simd_isas())
            if (cpu_supports(isa)) widest = isa;
        return widest;
    }();
    return best;
}

// Only asked for after cpu_supports(isa): the others fall back to portable.
const MicroKernel& micro_kernel_for(SimdIsa isa) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case SimdIsa::Avx512: return kAvx512Kernel;
        case SimdIsa::Avx2: return kAvx2Kernel;
#endif
#if defined(__aarch64__)
        case SimdIsa::Neon: return kNeonKernel;
#endif
        default: return kPortableKernel;
    }
}

// The FMA loop for `isa` (gemm_kernel_*.cpp).
static float (*fma_loop_for(SimdIsa isa))(int64_t) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case SimdIsa::Avx512: return fma_loop_avx512;
        case SimdIsa::Avx2: return fma_loop_avx2;
#endif
#if defined(__aarch64__)
        case SimdIsa::Neon: return fma_loop_neon;
#endif
        default: return fma_loop_portable;
    }
}

double time_register_loop_gflops(float (*loop)(int64_t), int threads, int64_t iterations,
                                 double flops_per_iteration) {
    float sink = 0;
    auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += loop(iterations);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double flops = flops_per_iteration * (double)iterations * threads;
    return sink == 12345.678f ? 0 : flops / seconds / 1e9;  // (the comparison only keeps `sink` alive)
}

double measure_fma_peak_gflops(SimdIsa isa, int threads, int64_t iterations) {
    // Floats per chain: one AVX-512 register, one AVX2 register, two NEON
    // registers, or 8 plain floats (gemm_kernel_portable.cpp).
    int lanes = isa == SimdIsa::Avx512 ? 16 : 8;
    // 12 chains x lanes x 2 FLOPs (multiply + add) per iteration per thread.
    return time_register_loop_gflops(fma_loop_for(isa), threads, iterations, 2.0 * 12 * lanes);
}

int64_t iterations_lasting(double seconds, const std::function<double(int64_t)>& measure) {
    constexpr int64_t kProbe = 1000000;
    measure(kProbe / 10);  // untimed: starts the threads and wakes the clocks
    double took = 1e30;
    for (int r = 0; r < 2; ++r) {  // the faster of two: a probe the scheduler interrupted reads too slow
        auto start = std::chrono::steady_clock::now();
        measure(kProbe);
        took = std::min(took, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return std::max<int64_t>(kProbe / 4, (int64_t)((double)kProbe * seconds / std::max(took, 1e-9)));
}

double best_peak_gflops(const std::function<double(int64_t)>& measure, int samples, double seconds) {
    int64_t iterations = iterations_lasting(seconds, measure);
    double best = 0;
    for (int r = 0; r < samples; ++r) best = std::max(best, measure(iterations));
    return best;
}

}  // namespace cpu
}  // namespace nc
