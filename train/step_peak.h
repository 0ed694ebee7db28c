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
// In float32, and in 16 bits wherever packing widens to float32 (float16
// on every CPU; bfloat16 where matmul does not use vdpbf16ps), the float32
// FMA. Where matmul multiplies bfloat16 pairs with vdpbf16ps, two
// multiply-adds per lane, that instruction's peak: 1.8-2.1x the FMA's on a
// Zen 4, where a bfloat16 step over the FMA's peak read 65% while the
// float32 step read 58.5% (bench/results/train-mfu-16bit-2026-12-08.txt),
// as if the products were as far from their limit as float32's. AMX tiles
// have no measured peak, so a run on them shows no MFU rather than one over
// the wrong peak. Every FLOP of the step counts against the one peak,
// attention's (which runs in float32) included, as MFU is usually defined.
enum class StepPeak { Fma, Bf16Dot, Unmeasured };
StepPeak step_peak_kind(DType precision, cpu::Gemm16Path path);
// As the lines print it: "float32 FMA peak", "vdpbf16ps peak (...)";
// "no measured peak (AMX tiles)" for Unmeasured.
const char* step_peak_name(StepPeak peak);
// As bench's JSON files name it (a stable id for scripts): "fma",
// "bf16_dot", "none".
const char* step_peak_id(StepPeak peak);
// Samples the peak: sampler(n) is the best of n samples of about
// `seconds` each after a warm-up, in GFLOP/s on all threads (train's
// progress lines take samples of 10 ms, `normcore bench` of 50). Empty for
// Unmeasured.
std::function<double(int)> step_peak_sampler(StepPeak peak, double seconds = 0.010);
// The kind for a step in `precision` on this CPU (matmul's path for 16 bits).
StepPeak step_peak_of(DType precision);

}  // namespace app
}  // namespace nc
