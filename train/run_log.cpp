#include "train/run_log.h"

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
static int terminal_columns(std::FILE* out) {
    struct winsize w;
    if (ioctl(fileno(out), TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col;
    return 80;
}

static std::string format_duration(double seconds) {
    int s = (int)std::lround(std::max(0.0, seconds));
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, s / 60 % 60);
    else std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
    return buf;
}

Progress::Progress(std::FILE* out, int64_t first_step, int64_t stop, int64_t steps, double tokens_per_step,
                   double flops_per_token, std::function<double(int)> sample_peak)
    : out_(out), first_step_(first_step), stop_(stop), steps_(steps), report_every_(std::max<int64_t>(1, steps / 20)),
      tokens_per_step_(tokens_per_step), flops_per_token_(flops_per_token), sample_peak_(std::move(sample_peak)),
      tty_(isatty(fileno(out))) {
    if (sample_peak_) peak_gflops_ = sample_peak_(3);
}

// The peak is sampled again at the report lines, at most once per this many
// seconds of training, and the best sample so far is used. A sample comes out
// too low when another program holds a core while it runs, and on a shared
// machine the three samples of the start can fall in one slow stretch: a run
// on a 2-core virtual machine then showed "MFU 104%" on every line
// (bench/results/train-mfu-peak-2026-12-07.txt). (A sample can also catch a
// short burst of a higher, boost clock after the cores were idle; keeping the
// best then lowers the MFU a little.) Each call runs a short probe (about 5
// ms) and then 10 ms per sample: about 35 ms at the start, 15 ms at each later
// sample, under 1% of 2 s. The final throughput line uses the best of the
// whole run.
constexpr double kPeakResampleSeconds = 2.0;

// Model FLOPs utilization: the step's FLOPs (nn/models.h) per second over
// the best peak of the CPU sampled so far.
double Progress::mfu(double tok_per_s) const {
    return peak_gflops_ > 0 ? 100.0 * tok_per_s * flops_per_token_ / (peak_gflops_ * 1e9) : NAN;
}

void Progress::interrupt() {
    if (line_open_) std::fputc('\n', out_);
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
    const bool report = !std::isnan(val) || done % report_every_ == 0 || done == stop_;
    if (sample_peak_ && report && train_seconds - peak_sampled_at_ >= kPeakResampleSeconds) {
        peak_gflops_ = std::max(peak_gflops_, sample_peak_(1));
        peak_sampled_at_ = train_seconds;
    }
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
        int columns = terminal_columns(out_);
        if ((int)shown.size() >= columns) shown = text;
        if ((int)shown.size() >= columns) shown.resize(columns - 1);
        // \033[K clears what a longer previous line left at the end; a line
        // with a validation loss stays on the screen.
        std::fprintf(out_, "\r%s\033[K%s", shown.c_str(), std::isnan(val) ? "" : "\n");
        line_open_ = std::isnan(val);
        std::fflush(out_);
    } else if (report) {
        std::fprintf(out_, "%s\n", line);
        std::fflush(out_);
    }
}

}  // namespace app
}  // namespace nc
