// step_peak.h — the peak a training step's model FLOPs utilization (MFU)
// divides by: `normcore train`'s progress lines (train/run_log.h) and
// `normcore bench`'s training table ask the same question here.
#pragma once

#include <functional>

#include "tensor/cpu/gemm_16bit.h"
#include "tensor/dtype.h"

namespace nc {
namespace app {

// The peak a step's model FLOPs utilization divides by: that of the
// arithmetic its matrix products run on (tensor/cpu/gemm_16bit.h's paths).
// In float32, and in 16 bits where packing widens to float32 (float16
// always on x86, bfloat16 without AVX512-BF16), the float32 FMA. Where
// bfloat16 products run on vdpbf16ps, two multiply-adds per lane, that
// instruction's peak: 1.8-2.1x the FMA's on a Zen 4, where a bfloat16 run
// measured against the FMA read "MFU 94-98%" with half the machine idle.
// AMX tiles have no measured peak, so a run on them shows no MFU rather
// than one over the wrong peak. Every FLOP of the step counts against it,
// attention's (which runs in float32) included, as MFU is usually defined.
enum class StepPeak { Fma, Bf16Dot, Unmeasured };
StepPeak step_peak_kind(DType precision, cpu::Gemm16Path path);
// "float32 FMA peak", "vdpbf16ps peak (...)"; "AMX" for Unmeasured.
const char* step_peak_name(StepPeak peak);
// Samples the peak: sampler(n) is the best of n samples of about
// `seconds` each after a warm-up, in GFLOP/s on all threads (train's
// progress lines take samples of 10 ms, `normcore bench` of 50). Empty for
// Unmeasured.
std::function<double(int)> step_peak_sampler(StepPeak peak, double seconds = 0.010);
// The kind for a step in `precision` on this CPU (matmul's path for 16 bits).
StepPeak step_peak_of(DType precision);

}  // namespace app
}  // namespace nc
