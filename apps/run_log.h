// run_log.h — what `normcore train` writes while it runs, so that the loop
// in train.cpp reads as the loop it is:
//
//   TrainLog     RUN_DIR/train_log.csv, one flushed row per step (a killed
//                run keeps its log up to there; a resumed one continues it)
//   Progress     the progress bar on a terminal, or a line every 5% in a log
//   Diagnostics  with --diagnostics: per-step block gradient norms, updates,
//                residual ratios, spikes and DyT saturation (diagnostics.csv),
//                held-out saturation (saturation_heldout.csv), and at the end
//                the residual stream (stream.csv) and the weights' spectra
//                (weights.csv); the measurements are analysis/diagnostics.h.
#pragma once

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
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
    // peak_gflops > 0: show the model FLOPs utilization of the tokens/s.
    Progress(int64_t first_step, int64_t stop, int64_t steps, double tokens_per_step, double flops_per_token,
             double peak_gflops);
    // After step `done` (1-based) took `seconds`, train_seconds since the
    // run (or its resumption) started: draw the line.
    void step(int64_t done, double seconds, double train_seconds, double loss, double val, double lr);
    // Leave the progress line before printing something else.
    void interrupt();
    double peak_gflops() const { return peak_gflops_; }
    double flops_per_token() const { return flops_per_token_; }
    // MFU in percent of a tokens/s rate (NaN without a peak).
    double mfu(double tok_per_s) const;

private:
    int64_t first_step_, stop_, steps_, report_every_;
    double tokens_per_step_, flops_per_token_, peak_gflops_;
    bool tty_, line_open_ = false;
    std::vector<double> recent_seconds_;  // the last 10 steps, for the rate now
};

struct DiagnosticsSettings {
    int64_t spike_window = 50;
    double spike_factor = 1.5, saturation_threshold = nn::kDytSaturationThreshold;
    int64_t calibration_step = 1;  // held-out saturation after this step and at the end
};

class Diagnostics {
public:
    // Off: every call below does nothing (no --diagnostics).
    Diagnostics() = default;
    // held_out_forward: runs held-out batch i forward (the DyT layers'
    // held-out saturation); empty for none.
    Diagnostics(nn::TransformerModel& model, const std::string& run_dir, int64_t first_step, DiagnosticsSettings settings,
                int64_t held_out_batches, std::function<void(int64_t)> held_out_forward);
    bool on() const { return model_ != nullptr; }
    void before_clip();    // the blocks' gradient norms and residual ratios of this step
    void before_update();  // the weights before the update
    // After the update of step `done` (1-based): its row.
    void after_update(int64_t done, double loss);
    // After the calibration step and the last one (`last`): the held-out
    // saturation of the DyT layers (outside the step's time).
    void held_out(int64_t done, bool last);
    // At the end: the residual stream of a fixed batch after every block,
    // the weights' spectra, and a line of what was written.
    void finish(const std::vector<Tensor>& stream);

private:
    nn::TransformerModel* model_ = nullptr;
    std::string run_dir_;
    DiagnosticsSettings settings_;
    std::vector<std::pair<std::string, nn::DyT*>> dyt_;
    std::vector<nn::Block*> blocks_;
    diag::SpikeDetector spikes_;
    std::unique_ptr<diag::BlockUpdates> updates_;
    std::ofstream csv_, held_out_csv_;
    int64_t held_out_batches_ = 0;
    std::function<void(int64_t)> held_out_forward_;
    std::vector<double> block_grads_, residuals_;
};

}  // namespace app
}  // namespace nc
