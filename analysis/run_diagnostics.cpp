// run_diagnostics.cpp — the files of `train --diagnostics` (analysis/run_diagnostics.h).
#include "analysis/run_diagnostics.h"

#include <algorithm>

#include "tensor/error.h"

namespace nc {
namespace diag {

RunDiagnostics::RunDiagnostics(nn::TransformerModel& model, const std::string& run_dir, int64_t first_step,
                         DiagnosticsSettings settings, int64_t held_out_batches,
                         std::function<void(int64_t)> held_out_forward)
    : model_(&model), run_dir_(run_dir), settings_(settings), spikes_(settings.spike_window, settings.spike_factor),
      held_out_batches_(held_out_batches), held_out_forward_(std::move(held_out_forward)) {
    int64_t n_layer = model.config().n_layer;
    // DyT layers (norm dyt) also report their saturation each step.
    dyt_ = dyt_layers(model);
    updates_ = std::make_unique<BlockUpdates>(model, n_layer);
    // Each block's residual contribution ||F(x)|| / ||x|| in this step's forward.
    blocks_ = track_block_residuals(model, true);
    csv_.open(run_dir + "/diagnostics.csv", first_step > 0 ? std::ios::app : std::ios::trunc);
    if (!csv_) throw Error("--run-dir: cannot write '" + run_dir + "/diagnostics.csv'");
    for (auto& [name, layer] : dyt_) layer->track_saturation(true, settings.saturation_threshold);
    if (first_step == 0) {
        csv_ << "step,loss,spike";
        for (int64_t b = 0; b < n_layer; ++b) csv_ << ",grad_norm_block_" << b;
        for (int64_t b = 0; b < n_layer; ++b) csv_ << ",update_block_" << b;
        for (size_t b = 0; b < blocks_.size(); ++b) csv_ << ",residual_block_" << b;
        for (size_t b = 0; b < blocks_.size(); ++b) csv_ << ",stream_rms_block_" << b << ",stream_common_block_" << b;
        for (auto& [name, layer] : dyt_) csv_ << ",saturation_" << name << ",alpha_" << name << ",gain_" << name;
        csv_ << "\n";
    }
    // Held-out saturation (the DyT study's screening measurement).
    if (!dyt_.empty() && held_out_forward_) {
        held_out_csv_.open(run_dir + "/saturation_heldout.csv", first_step > 0 ? std::ios::app : std::ios::trunc);
        if (!held_out_csv_) throw Error("--run-dir: cannot write '" + run_dir + "/saturation_heldout.csv'");
        if (first_step == 0) {
            held_out_csv_ << "step,mean";
            for (auto& [name, layer] : dyt_) held_out_csv_ << ",saturation_" << name;
            held_out_csv_ << "\n";
        }
    }
}

void RunDiagnostics::before_clip() {
    if (!on()) return;
    block_grads_ = block_grad_norms(*model_, model_->config().n_layer);  // before clipping
    residuals_ = residual_ratios(blocks_);  // of the last micro-batch's forward
    streams_.clear();
    for (const nn::Block* b : blocks_)  // the stream entering each block
        streams_.push_back(b->attn_residual().stream.defined() ? stream_size(b->attn_residual().stream)
                                                               : StreamSize{NAN, NAN});
}

void RunDiagnostics::before_update() {
    if (on()) updates_->before_step();
}

void RunDiagnostics::after_update(int64_t done, double loss) {
    if (!on()) return;
    std::vector<double> updates = updates_->after_step();
    csv_ << done << "," << loss << "," << (spikes_.observe(loss) ? 1 : 0);
    for (double n : block_grads_) csv_ << "," << n;
    for (double u : updates) csv_ << "," << u;
    for (double r : residuals_) csv_ << "," << r;
    for (const StreamSize& s : streams_) csv_ << "," << s.rms << "," << s.common_share;
    for (auto& [name, layer] : dyt_)
        csv_ << "," << layer->last_saturation() << "," << layer->alpha.item() << "," << raw::mean(raw::abs(layer->weight)).item();
    csv_ << "\n";
}

void RunDiagnostics::held_out(int64_t done, bool last) {
    if (held_out_csv_.is_open() && (done == settings_.calibration_step || last)) {
        std::vector<double> sat =
            held_out_saturation(dyt_, held_out_batches_, held_out_forward_, settings_.saturation_threshold);
        double mean = 0;
        for (double v : sat) mean += v / (double)sat.size();
        held_out_csv_ << done << "," << mean;
        for (double v : sat) held_out_csv_ << "," << v;
        held_out_csv_ << "\n" << std::flush;
    }
}

void RunDiagnostics::finish(const std::vector<Tensor>& stream) {
    if (!on()) return;
    // The residual stream of a fixed batch after every block: its tokens'
    // effective rank (the DyT study's activation rank) and normalization bias.
    std::ofstream stream_csv(run_dir_ + "/stream.csv");
    // And what each block did to it: the tokens' turning angle and relative change.
    stream_csv << "position,effective_rank,normalization_bias,turn_angle,relative_change\n";
    Tensor previous;
    for (size_t i = 0; i < stream.size(); ++i) {
        int64_t C = stream[i].size(-1);
        Tensor tokens = raw::reshape(stream[i], {stream[i].numel() / C, C});
        stream_csv << (i == 0 ? std::string("embeddings") : "block_" + std::to_string(i - 1)) << ","
                   << effective_rank(tokens) << "," << normalization_bias(tokens) << ",";
        if (i == 0) {
            stream_csv << ",\n";
        } else {
            StreamStep step = stream_step(previous, tokens);
            stream_csv << step.angle << "," << step.relative_change << "\n";
        }
        previous = tokens;
    }
    // The trained weight matrices' spectra: effective rank and HTSR alpha.
    std::ofstream weights_csv(run_dir_ + "/weights.csv");
    weights_csv << "name,rows,cols,effective_rank,htsr_alpha,alpha_sigma,ks_distance\n";
    for (const auto& [name, p] : model_->named_parameters()) {
        if (p.dim() != 2 || std::min(p.size(0), p.size(1)) < 2) continue;
        PowerLawFit fit;
        try {
            fit = htsr_alpha(p);
        } catch (const Error&) {
            fit.alpha = NAN;  // too few eigenvalues above 1e-5 to fit
        }
        weights_csv << name << "," << p.size(0) << "," << p.size(1) << "," << effective_rank(p) << ","
                    << fit.alpha << "," << fit.sigma << "," << fit.ks_distance << "\n";
    }
    finished_ = true;
}

std::vector<std::string> RunDiagnostics::files() const {
    std::vector<std::string> out;
    if (!on()) return out;
    out.push_back(run_dir_ + "/diagnostics.csv");
    if (held_out_csv_.is_open()) out.push_back(run_dir_ + "/saturation_heldout.csv");
    if (finished_) out.insert(out.end(), {run_dir_ + "/stream.csv", run_dir_ + "/weights.csv"});
    return out;
}

}  // namespace diag
}  // namespace nc
