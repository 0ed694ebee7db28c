// protocol.h — the protocol every study of `normcore experiment` follows
// (chapter 11, "The protocol").
//
// A comparison of variants is only fair if each variant trains at a setting
// that suits it. So, for every variant:
//
//   1. tune: train once (seed 1) at every learning rate x warm-up of a grid
//      and score each run on the TUNING split (never the validation split);
//      the lowest tuning loss wins. If it sits at the smallest or largest
//      learning rate or warm-up, the grid is extended past that edge, up to
//      a fixed number of extensions; a variant still at an edge is flagged.
//   2. report: train `seeds` runs at the chosen setting and score them on
//      the VALIDATION split.
//   3. compare: per variant a mean with a 95% confidence interval (Student
//      t); per claim a paired difference over seeds against the claim's
//      baseline (seed s of both runs sees the same batches and, where the
//      shapes match, the same initial weights). A claim is "reproduced" when
//      the interval excludes zero in the paper's direction, "contradicted"
//      when it excludes zero the other way, and "inconclusive" otherwise.
#pragma once

#include <string>
#include <vector>

#include "studies/study.h"

namespace nc {
namespace app {

// ---- tuning ----------------------------------------------------------------------

struct Setting {
    Setting() = default;
    Setting(double lr, int64_t warmup, std::vector<std::string> option = {})
        : lr(lr), warmup(warmup), option(std::move(option)) {}
    double lr = 0;
    int64_t warmup = 0;
    // A variant's own tuned option (ProtocolVariant::tuned_options), e.g.
    // {"--dyt-alpha", "2"}; empty for none.
    std::vector<std::string> option;
};
// "lr0.0003-wu50" (+ "-dyt-alpha2" with an option), a cell's folder name
// part (%g: distinct lrs, distinct names).
std::string setting_name(const Setting& s);
std::string option_text(const Setting& s);  // "--dyt-alpha 2", or "" for none
bool same_setting(const Setting& a, const Setting& b);

struct TuningGrid {
    std::vector<double> lrs;       // increasing
    std::vector<int64_t> warmups;  // increasing
    int64_t max_warmup = 0;        // an extension never warms up longer than this (0: no limit)
};
// lr-major, then warm-up, then each of `options` (none: one setting per lr x warm-up).
std::vector<Setting> grid_settings(const TuningGrid& grid, const std::vector<std::vector<std::string>>& options = {});

struct TuningChoice {
    Setting best;
    double loss = 0;                   // its tuning loss
    bool at_low_edge = false;          // best lr is the smallest tried
    bool at_high_edge = false;         // best lr is the largest tried
    bool at_short_warmup_edge = false;  // best warm-up is the shortest tried
    bool at_long_warmup_edge = false;   // best warm-up is the longest tried
    bool trained = false;              // some setting gave a finite loss
};
// The setting with the lowest loss; NaN or Inf (a diverged run) never wins.
// Ties go to the first in `tried`.
TuningChoice choose_setting(const std::vector<Setting>& tried, const std::vector<double>& losses);
// The learning rate one step past the edge the choice sits at (factor 2), or
// 0 if it sits at neither edge (or at both: one learning rate was tried).
double extension_lr(const TuningChoice& choice);
// Likewise the warm-up (factor 2, at least 1 step, at most grid.max_warmup),
// or 0 if there is none to try.
int64_t extension_warmup(const TuningChoice& choice, const TuningGrid& grid);

// ---- statistics ------------------------------------------------------------------

// The 0.975 quantile of Student's t with df degrees of freedom (df >= 1):
// the half-width of a 95% interval is t * standard error.
double t_quantile_975(int64_t df);

struct Interval {
    int64_t n = 0;
    double mean = 0, se = 0, low = 0, high = 0;  // se = s / sqrt(n); [low, high] the 95% interval
};
// NaN values are dropped first; one value has se = 0 and an unbounded interval.
Interval mean_interval(const std::vector<double>& xs);
// The interval of variant[i] - baseline[i] over the pairs where both are finite.
Interval paired_difference(const std::vector<double>& variant, const std::vector<double>& baseline);
// Pearson's r over the pairs where both are finite, with Fisher's 95%
// interval: tanh(atanh(r) +- 1.96 / sqrt(n - 3)) (approximate; needs n >= 4,
// else unbounded). mean holds r; se is the z-scale standard error.
Interval correlation_interval(const std::vector<double>& xs, const std::vector<double>& ys);

enum class Direction { Lower, Higher };  // what the paper says of variant - baseline
std::string verdict(const Interval& difference, Direction paper);  // "reproduced" | "contradicted" | "inconclusive"
std::string interval_text(const Interval& i, const char* format);   // "-0.012 [-0.020, -0.004]"

// ---- running it ------------------------------------------------------------------

// A configuration reported at the variant's chosen setting (seeds 1..seeds).
struct ProtocolReport {
    std::string name;               // its runs are <name>-seed<s>
    std::vector<std::string> args;  // flags added to the variant's
};

struct ProtocolVariant {
    std::string name;
    std::vector<std::string> args;  // `normcore train` flags, without --lr, --warmup, --seed, --eval-split (and the plan's --data, --eval-tokens)
    // Flags for the tuning runs only, and the reported configurations (empty:
    // one, named `name`, with no extra flags). The DyT study tunes each size
    // band at one training-set size and reports every size of the band.
    std::vector<std::string> tuning_args;
    std::vector<ProtocolReport> reports;
    // Alternatives tuned together with the learning rate and warm-up, each a
    // list of flags (the DyT study's alpha0: {{"--dyt-alpha", "0.5"}, ...}).
    // Every one is tried at every grid point; extensions keep the best one.
    std::vector<std::vector<std::string>> tuned_options;
};

struct ProtocolPlan {
    TuningGrid grid;
    int64_t seeds = 3;
    int64_t eval_tokens = 200000;  // per evaluation, spread over the split (0: no --eval-tokens, e.g. images)
    int max_extensions = 2;        // grid extensions past an edge, per variant
    std::string data;              // a corpus directory of `normcore corpus build` ("": the variants' args say --data)
    std::vector<std::string> report_args;  // flags for the reported runs only (e.g. --diagnostics)
};

struct VariantOutcome {
    std::string name;
    std::vector<Setting> tried;          // the grid, then any extensions
    size_t extensions = 0;               // how many of `tried` are extensions
    std::vector<double> tuning_losses;   // one per tried setting
    std::vector<CellResult> tuning_runs; // one per tried setting
    TuningChoice choice;
    bool edge_flagged = false;           // the final choice still sits at an edge (edge_text says which)
    std::vector<double> validation;      // one per seed 1..seeds (of the first report)
    std::vector<std::string> seed_dirs;  // their run directories
    std::vector<CellResult> seed_runs;   // and their results
    // Every report's: names, validation losses, run directories and results per seed.
    std::vector<std::string> report_names;
    std::vector<std::vector<double>> report_validation;
    std::vector<std::vector<std::string>> report_dirs;
    std::vector<std::vector<CellResult>> report_runs;
};

// Whether the best sits at an end of a dimension of the grid that had more
// than one value, and "" or which: "lr at the grid's edge", "warm-up at the
// grid's edge", or both.
bool at_an_edge(const TuningChoice& c);
std::string edge_text(const TuningChoice& c);

// The directory of a reported run and of a tuning run.
std::string seed_cell_name(const std::string& variant, int64_t seed);
std::string tuning_cell_name(const std::string& variant, const Setting& s);

// Tunes every variant, then runs its seeds; writes OUT/tuning.csv (every
// tuning run), OUT/chosen.csv (each report's variant, setting, edge flag and
// validation losses) and appends every command to OUT/commands.txt.
std::vector<VariantOutcome> run_protocol(const std::vector<ProtocolVariant>& variants, const ProtocolPlan& plan,
                                         const StudyOptions& options);

}  // namespace app
}  // namespace nc
