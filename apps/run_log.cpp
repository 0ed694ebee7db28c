#include "apps/run_log.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "tensor/error.h"

namespace nc {
namespace app {

// ---- train_log.csv ----

TrainLog::TrainLog(const std::string& path, int64_t first_step) : path_(path) {
    const std::string header = "step,loss,val_loss,lr,grad_norm,time_s";
    std::vector<std::string> kept;
    if (first_step > 0) {
        std::ifstream in(path);
        std::string line;
        while (std::getline(in, line)) {
            if (line == header || line.empty()) continue;
            char* end = nullptr;
            long long step = std::strtoll(line.c_str(), &end, 10);
            if (end != line.c_str() && *end == ',' && step >= 1 && step <= first_step) kept.push_back(line);
        }
    }
    {
        std::ofstream out(path + ".tmp", std::ios::trunc);
        out << header << "\n";
        for (const std::string& row : kept) out << row << "\n";
        out.close();
        if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
            std::remove((path + ".tmp").c_str());
            throw Error("--run-dir: cannot write '" + path + "' (disk full, or the directory is not writable)");
        }
    }
    csv_.open(path, std::ios::app);
    if (!csv_) throw Error("--run-dir: cannot write '" + path + "'");
}

void TrainLog::row(int64_t step, double loss, double val, double lr, double grad_norm, double train_seconds) {
    if (path_.empty()) return;
    // Flushed: a killed run keeps its log up to here.
    csv_ << step << "," << loss << "," << (std::isnan(val) ? "" : std::to_string(val)) << "," << lr << "," << grad_norm
         << "," << train_seconds << "\n" << std::flush;
    if (!csv_) throw Error("step " + std::to_string(step) + ": cannot write '" + path_ + "' (disk full?)");
}

// ---- the progress line ----

// The terminal's width (80 when it cannot be asked).
static int terminal_columns() {
    struct winsize w;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col;
    return 80;
}

static std::string format_duration(double seconds) {
    int s = (int)std::lround(std::max(0.0, seconds));
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, s / 60 % 60);
    else std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
    return buf;
}

Progress::Progress(int64_t first_step, int64_t stop, int64_t steps, double tokens_per_step, double flops_per_token,
                   double peak_gflops)
    : first_step_(first_step), stop_(stop), steps_(steps), report_every_(std::max<int64_t>(1, steps / 20)),
      tokens_per_step_(tokens_per_step), flops_per_token_(flops_per_token), peak_gflops_(peak_gflops),
      tty_(isatty(STDOUT_FILENO)) {}

// Model FLOPs utilization: the step's FLOPs (nn/models.h) per second over
// the FMA peak of the CPU.
double Progress::mfu(double tok_per_s) const {
    return peak_gflops_ > 0 ? 100.0 * tok_per_s * flops_per_token_ / (peak_gflops_ * 1e9) : NAN;
}

void Progress::interrupt() {
    if (line_open_) std::printf("\n");
    line_open_ = false;
}

void Progress::step(int64_t done, double seconds, double train_seconds, double loss, double val, double lr) {
    int64_t done_here = done - first_step_;
    double tok_per_s = tokens_per_step_ * (double)done_here / train_seconds;
    recent_seconds_.push_back(seconds);
    if (recent_seconds_.size() > 10) recent_seconds_.erase(recent_seconds_.begin());
    double recent = 0;
    for (double s : recent_seconds_) recent += s;
    double tok_per_s_now = tokens_per_step_ * (double)recent_seconds_.size() / recent;
    double eta = train_seconds / (double)done_here * (double)(stop_ - done);
    char line[320], mfu_text[32] = "", val_text[32] = "";
    if (peak_gflops_ > 0) std::snprintf(mfu_text, sizeof mfu_text, " | MFU %.1f%%", mfu(tok_per_s_now));
    if (!std::isnan(val)) std::snprintf(val_text, sizeof val_text, " | val %.4f", val);
    // tok/s: the last 10 steps (now), then the average since the start.
    // What matters most comes first: a narrow terminal cuts the end.
    std::snprintf(line, sizeof line, "step %5lld/%lld | loss %.4f%s | %6.0f tok/s (avg %.0f)%s | lr %.2e | ETA %s",
                  (long long)done, (long long)stop_, loss, val_text, tok_per_s_now, tok_per_s, mfu_text, lr,
                  format_duration(eta).c_str());
    if (tty_) {
        int width = 24, filled = (int)(done * width / steps_);
        std::string text = line;
        std::string shown = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " + text;
        // A line wider than the terminal wraps, and \r then returns to its
        // last row only: drop the bar, then cut, to stay on one row.
        int columns = terminal_columns();
        if ((int)shown.size() >= columns) shown = text;
        if ((int)shown.size() >= columns) shown.resize(columns - 1);
        // \033[K clears what a longer previous line left at the end; a line
        // with a validation loss stays on the screen.
        std::printf("\r%s\033[K%s", shown.c_str(), std::isnan(val) ? "" : "\n");
        line_open_ = std::isnan(val);
        std::fflush(stdout);
    } else if (!std::isnan(val) || done % report_every_ == 0 || done == stop_) {
        std::printf("%s\n", line);
        std::fflush(stdout);
    }
}

// ---- --diagnostics ----

Diagnostics::Diagnostics(nn::TransformerModel& model, const std::string& run_dir, int64_t first_step,
                         DiagnosticsSettings settings, int64_t held_out_batches,
                         std::function<void(int64_t)> held_out_forward)
    : model_(&model), run_dir_(run_dir), settings_(settings), spikes_(settings.spike_window, settings.spike_factor),
      held_out_batches_(held_out_batches), held_out_forward_(std::move(held_out_forward)) {
    int64_t n_layer = model.config().n_layer;
    // DyT layers (norm dyt) also report their saturation each step.
    dyt_ = diag::dyt_layers(model);
    updates_ = std::make_unique<diag::BlockUpdates>(model, n_layer);
    // Each block's residual contribution ||F(x)|| / ||x|| in this step's forward.
    blocks_ = diag::track_block_residuals(model, true);
    csv_.open(run_dir + "/diagnostics.csv", first_step > 0 ? std::ios::app : std::ios::trunc);
    if (!csv_) throw Error("--run-dir: cannot write '" + run_dir + "/diagnostics.csv'");
    for (auto& [name, layer] : dyt_) layer->track_saturation(true, settings.saturation_threshold);
    if (first_step == 0) {
        csv_ << "step,loss,spike";
        for (int64_t b = 0; b < n_layer; ++b) csv_ << ",grad_norm_block_" << b;
        for (int64_t b = 0; b < n_layer; ++b) csv_ << ",update_block_" << b;
        for (size_t b = 0; b < blocks_.size(); ++b) csv_ << ",residual_block_" << b;
        for (auto& [name, layer] : dyt_) csv_ << ",saturation_" << name;
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

void Diagnostics::before_clip() {
    if (!on()) return;
    block_grads_ = diag::block_grad_norms(*model_, model_->config().n_layer);  // before clipping
    residuals_ = diag::residual_ratios(blocks_);  // of the last micro-batch's forward
}

void Diagnostics::before_update() {
    if (on()) updates_->before_step();
}

void Diagnostics::after_update(int64_t done, double loss) {
    if (!on()) return;
    std::vector<double> updates = updates_->after_step();
    csv_ << done << "," << loss << "," << (spikes_.observe(loss) ? 1 : 0);
    for (double n : block_grads_) csv_ << "," << n;
    for (double u : updates) csv_ << "," << u;
    for (double r : residuals_) csv_ << "," << r;
    for (auto& [name, layer] : dyt_) csv_ << "," << layer->last_saturation();
    csv_ << "\n";
}

void Diagnostics::held_out(int64_t done, bool last) {
    if (held_out_csv_.is_open() && (done == settings_.calibration_step || last)) {
        std::vector<double> sat =
            diag::held_out_saturation(dyt_, held_out_batches_, held_out_forward_, settings_.saturation_threshold);
        double mean = 0;
        for (double v : sat) mean += v / (double)sat.size();
        held_out_csv_ << done << "," << mean;
        for (double v : sat) held_out_csv_ << "," << v;
        held_out_csv_ << "\n" << std::flush;
    }
}

void Diagnostics::finish(const std::vector<Tensor>& stream) {
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
                   << diag::effective_rank(tokens) << "," << diag::normalization_bias(tokens) << ",";
        if (i == 0) {
            stream_csv << ",\n";
        } else {
            diag::StreamStep step = diag::stream_step(previous, tokens);
            stream_csv << step.angle << "," << step.relative_change << "\n";
        }
        previous = tokens;
    }
    // The trained weight matrices' spectra: effective rank and HTSR alpha.
    std::ofstream weights_csv(run_dir_ + "/weights.csv");
    weights_csv << "name,rows,cols,effective_rank,htsr_alpha,alpha_sigma,ks_distance\n";
    for (const auto& [name, p] : model_->named_parameters()) {
        if (p.dim() != 2 || std::min(p.size(0), p.size(1)) < 2) continue;
        diag::PowerLawFit fit;
        try {
            fit = diag::htsr_alpha(p);
        } catch (const Error&) {
            fit.alpha = NAN;  // too few eigenvalues above 1e-5 to fit
        }
        weights_csv << name << "," << p.size(0) << "," << p.size(1) << "," << diag::effective_rank(p) << ","
                    << fit.alpha << "," << fit.sigma << "," << fit.ks_distance << "\n";
    }
    std::printf("diagnostics: %lld loss spikes (factor %.2f, window %lld), per-block gradient norms in %s/diagnostics.csv\n",
                (long long)spikes_.spikes(), settings_.spike_factor, (long long)settings_.spike_window, run_dir_.c_str());
}

}  // namespace app
}  // namespace nc
