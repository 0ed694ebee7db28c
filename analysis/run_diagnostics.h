// run_diagnostics.h — what `normcore train --diagnostics` records while a
// run trains, with the measurements of analysis/diagnostics.h:
//
//   diagnostics.csv         per step: the loss and whether it spiked, each
//                           block's gradient norm and relative update, its
//                           residual contribution ||F(x)|| / ||x||, the size
//                           of the stream entering it (rms, common share:
//                           stream_size), and each DyT layer's saturation,
//                           alpha and mean |gain|
//   saturation_heldout.csv  the DyT layers' saturation on held-out data
//                           (after the calibration step and at the end)
//   stream.csv              at the end: the residual stream of a fixed batch
//                           after every block (effective rank, turning)
//   weights.csv             at the end: each weight matrix's effective rank
//                           and HTSR alpha
//
// The training loop (train/train.cpp) calls it at the points of a step
// named below; off, every call does nothing.
#pragma once

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "nn/models.h"

namespace nc {
namespace diag {

struct DiagnosticsSettings {
    int64_t spike_window = 50;
    double spike_factor = 1.5, saturation_threshold = nn::kDytSaturationThreshold;
    int64_t calibration_step = 1;  // held-out saturation after this step and at the end
};

class RunDiagnostics {
public:
    // Off: every call below does nothing (no --diagnostics).
    RunDiagnostics() = default;
    // held_out_forward: runs held-out batch i forward (the DyT layers'
    // held-out saturation); empty for none.
    RunDiagnostics(nn::TransformerModel& model, const std::string& run_dir, int64_t first_step, DiagnosticsSettings settings,
                   int64_t held_out_batches, std::function<void(int64_t)> held_out_forward);
    bool on() const { return model_ != nullptr; }
    void before_clip();    // the blocks' gradient norms and residual ratios of this step
    void before_update();  // the weights before the update
    // After the update of step `done` (1-based): its row.
    void after_update(int64_t done, double loss);
    // After the calibration step and the last one (`last`): the held-out
    // saturation of the DyT layers (outside the step's time).
    void held_out(int64_t done, bool last);
    // At the end: the residual stream of a fixed batch after every block
    // (stream.csv) and the weights' spectra (weights.csv).
    void finish(const std::vector<Tensor>& stream);
    int64_t spikes() const { return spikes_.spikes(); }
    const DiagnosticsSettings& settings() const { return settings_; }
    // The files written into the run directory so far.
    std::vector<std::string> files() const;

private:
    nn::TransformerModel* model_ = nullptr;
    std::string run_dir_;
    DiagnosticsSettings settings_;
    std::vector<std::pair<std::string, nn::DyT*>> dyt_;
    std::vector<nn::Block*> blocks_;
    SpikeDetector spikes_;
    std::unique_ptr<BlockUpdates> updates_;
    std::ofstream csv_, held_out_csv_;
    int64_t held_out_batches_ = 0;
    std::function<void(int64_t)> held_out_forward_;
    std::vector<double> block_grads_, residuals_;
    std::vector<StreamSize> streams_;
    bool finished_ = false;
};

}  // namespace diag
}  // namespace nc
