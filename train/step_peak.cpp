// step_peak.cpp — which peak a step's MFU divides by, and its samplers (step_peak.h).
#include "train/step_peak.h"

#include <omp.h>

#include "tensor/cpu/gemm_kernels.h"

namespace nc {
namespace app {

StepPeak step_peak_kind(DType precision, cpu::Gemm16Path path) {
    // Only bfloat16 has pair paths (gemm_16bit.h); everything else widens.
    if (precision != kBFloat16 || path == cpu::Gemm16Path::Widen) return StepPeak::Fma;
    if (path == cpu::Gemm16Path::Bf16Dot) return StepPeak::Bf16Dot;
    return StepPeak::Unmeasured;
}

const char* step_peak_name(StepPeak peak) {
    switch (peak) {
    case StepPeak::Fma: return "float32 FMA peak";
    case StepPeak::Bf16Dot: return "vdpbf16ps peak (the instruction of the bfloat16 products)";
    case StepPeak::Unmeasured: break;
    }
    return "no measured peak (AMX tiles)";
}

const char* step_peak_id(StepPeak peak) {
    switch (peak) {
    case StepPeak::Fma: return "fma";
    case StepPeak::Bf16Dot: return "bf16_dot";
    case StepPeak::Unmeasured: break;
    }
    return "none";
}

std::function<double(int)> step_peak_sampler(StepPeak peak, double seconds) {
    int threads = omp_get_max_threads();
    if (peak == StepPeak::Bf16Dot)
        return [threads, seconds](int samples) {
            return cpu::best_peak_gflops([&](int64_t n) { return cpu::measure_bf16_dot_peak_gflops(threads, n); },
                                         samples, seconds);
        };
    if (peak == StepPeak::Unmeasured) return nullptr;
    cpu::SimdIsa isa = cpu::best_simd_isa();
    return [isa, threads, seconds](int samples) {
        return cpu::best_peak_gflops([&](int64_t n) { return cpu::measure_fma_peak_gflops(isa, threads, n); }, samples,
                                     seconds);
    };
}

StepPeak step_peak_of(DType precision) {
    return step_peak_kind(precision, precision == kFloat32 ? cpu::Gemm16Path::Widen : cpu::best_gemm16_path(precision));
}

}  // namespace app
}  // namespace nc
