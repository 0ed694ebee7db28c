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

// The progress of the run, by step: on a terminal one line redrawn in place
// with a bar (a line with a validation loss stays), else a plain line every
// 5% of the steps, at each validation and at the end.
class Progress {
public:
    // sample_peak(n): the peak in GFLOP/s of the arithmetic the step's
    // products use (the float32 FMA, or vdpbf16ps where bfloat16 products
    // run on it: train/step_peak.h), the best of n short samples.
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
