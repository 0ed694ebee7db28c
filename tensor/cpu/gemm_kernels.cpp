// gemm_kernels.cpp — choosing a micro-kernel from the CPU's features, and the
// FMA-peak microbenchmark GEMM's efficiency is measured against.
#include "tensor/cpu/gemm_kernels.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace nc {
namespace cpu {

const char* simd_isa_name(SimdIsa isa) {
    switch (isa) {
        case SimdIsa::Portable: return "portable";
        case SimdIsa::Avx2: return "avx2";
        case SimdIsa::Avx512: return "avx512";
    }
    return "?";
}

// __builtin_cpu_supports asks CPUID (and whether the OS saves the wide
// registers), so a binary built on one machine runs correctly on another.
bool cpu_supports(SimdIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
    switch (isa) {
        case SimdIsa::Portable: return true;
        case SimdIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case SimdIsa::Avx512: return __builtin_cpu_supports("avx512f");
    }
    return false;
#else
    return isa == SimdIsa::Portable;
#endif
}

SimdIsa best_simd_isa() {
    static const SimdIsa best = cpu_supports(SimdIsa::Avx512) ? SimdIsa::Avx512
                                : cpu_supports(SimdIsa::Avx2) ? SimdIsa::Avx2
                                                              : SimdIsa::Portable;
    return best;
}

const MicroKernel& micro_kernel_for(SimdIsa isa) {
    switch (isa) {
        case SimdIsa::Avx512: return kAvx512Kernel;
        case SimdIsa::Avx2: return kAvx2Kernel;
        case SimdIsa::Portable: break;
    }
    return kPortableKernel;
}

double measure_fma_peak_gflops(SimdIsa isa, int threads, int64_t iterations) {
    int lanes = isa == SimdIsa::Avx512 ? 16 : 8;
    float (*loop)(int64_t) = isa == SimdIsa::Avx512 ? fma_loop_avx512
                             : isa == SimdIsa::Avx2 ? fma_loop_avx2
                                                    : fma_loop_portable;
    float sink = 0;
    auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += loop(iterations);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // 12 chains x lanes x 2 FLOPs (multiply + add) per iteration per thread.
    double flops = 2.0 * 12 * lanes * (double)iterations * threads;
    return sink == 12345.678f ? 0 : flops / seconds / 1e9;  // (the comparison only keeps `sink` alive)
}

}  // namespace cpu
}  // namespace nc
