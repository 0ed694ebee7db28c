// run_log.h — what `normcore train` writes while it runs, so that the loop
// in train.cpp reads as the loop it is:
//
//   TrainLog     RUN_DIR/train_log.csv, one flushed row per step (a killed
//                run keeps its log up to there; a resumed one continues it)
//   Progress     the progress bar on a terminal, or a line every 5% in a log
//
// (--diagnostics writes its files through analysis/run_diagnostics.h.)
#pragma once

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <cstdio>
#include "nn/models.h"
#include "tensor/cpu/gemm_16bit.h"
#include "tensor/dtype.h"

namespace nc {
namespace app {

class TrainLog {
public:
    TrainLog() = default;  // writes nothing (the ranks other than 0)
    // A new run starts the file with its header; a resumed run keeps the
    // rows up to its checkpoint's step (later rows will run again).
    TrainLog(const std::string& path, int64_t first_step);
    // val: NaN when this step did not validate (an empty field).
    void row(int64_t step, double loss, double val, double lr, double grad_norm, double train_seconds);

private:
    std::string path_;
    std::ofstream csv_;
};

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
// Samples the peak as Progress wants it: sampler(n) is the best of n
// samples of about 10 ms after a warm-up (`normcore bench` takes longer and
// more samples), in GFLOP/s on all threads. Empty for Unmeasured.
std::function<double(int)> step_peak_sampler(StepPeak peak);

// The progress of the run, by step: on a terminal one line redrawn in place
// with a bar (a line with a validation loss stays), else a plain line every
// 5% of the steps, at each validation and at the end.
class Progress {
public:
    // sample_peak(n): the peak in GFLOP/s of the arithmetic the step's
    // products use (the float32 FMA, or vdpbf16ps in bfloat16 where packing
    // keeps the pairs: train.cpp), the best of n short samples.
    // When set, the lines show the model FLOPs utilization of the tokens/s;
    // left empty (on a GPU, and on the ranks other than the root), they
    // show none. The lines go to `out` (a bar only when it is a terminal).
    Progress(std::FILE* out, int64_t first_step, int64_t stop, int64_t steps, double tokens_per_step, double flops_per_token,
             std::function<double(int)> sample_peak);
    // After step `done` (1-based) took `seconds`, train_seconds since the
    // run (or its resumption) started: draw the line.
    void step(int64_t done, double seconds, double train_seconds, double loss, double val, double lr);
    // Leave the progress line before printing something else.
    void interrupt();
    // The best peak sampled so far (0 without a sampler).
    double peak_gflops() const { return peak_gflops_; }
    double flops_per_token() const { return flops_per_token_; }
    // MFU in percent of a tokens/s rate (NaN without a peak).
    double mfu(double tok_per_s) const;

private:
    std::FILE* out_;
    int64_t first_step_, stop_, steps_, report_every_;
    double tokens_per_step_, flops_per_token_;
    std::function<double(int)> sample_peak_;
    double peak_gflops_ = 0, peak_sampled_at_ = 0;  // the best sample; the train_seconds of the last one
    bool tty_, line_open_ = false;
    std::vector<double> recent_seconds_;  // the last 10 steps, for the rate now
};

}  // namespace app
}  // namespace nc
