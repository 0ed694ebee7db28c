// norms.h — `normcore experiment norms`: where the norm goes.
//
// The GeoNorm paper (Zheng et al., arXiv:2601.22095) compares Post-, Pre-,
// Sandwich-Norm and DeepNorm with GeoNorm (the residual stream moves along
// the sphere's geodesics, with a step that decays with depth: none,
// harmonic a/k, sqrt a/sqrt(k), linear a(T-k)/T). The study has three parts
// (--part), each a set of variants under the shared protocol
// (studies/protocol.h: every variant's own learning rate and warm-up chosen on
// the tuning split, then 3 seeds on the validation split, verdicts from
// paired differences with 95% intervals):
//
//   placement  the paper's claims at T = 64:
//              1. GeoNorm (with its best decay, harmonic) reaches a lower
//                 validation loss than every other placement;
//              2. harmonic is the best of the decays;
//              3. Pre-Norm's lower blocks receive larger updates than its
//                 upper ones;
//              and its unifying claim (Pre-Norm turns the stream like GeoNorm
//              with a depth-decaying step), by fitting the schedules.
//   ablations  GeoNorm's choices the paper leaves open: the sphere's radius,
//              a norm on the sublayer input, a learnable step, an angle bound
//              (each against harmonic GeoNorm; the paper makes no claim).
//   long       claim 4 at T = 1024: Post-Norm spikes and is unstable on long
//              sequences, GeoNorm is not.
//
// Every reported run logs each block's gradient norm, relative update,
// residual contribution and loss spikes (train --diagnostics).
//
// The study in three files: this header (its scale, its variants and what it
// knows once its runs are done), norms.cpp (the flags, the variants, running
// them under the protocol, reading the runs back) and norms_report.cpp (the
// CSVs, the tables of each part and the plots).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "studies/protocol.h"
#include "studies/study.h"

namespace nc {
namespace app {
namespace norms {

struct NormsScale {
    int64_t layers, width, heads, seq, batch, steps, seeds, eval_tokens;
    std::vector<double> lrs;
    std::vector<double> warmup_fractions;  // of the steps
};

// The scale of --smoke, --quick or --full, for a part.
NormsScale norms_scale(const std::string& scale, const std::string& part);

struct Variant {
    std::string name, placement, decay;
    std::string max_angle = "0";     // --geo-max-angle
    std::vector<std::string> extra;  // more `train` flags (the ablations')
};

// What one run contributes (its diagnostics.csv, averaged over steps).
struct RunResult {
    double val = NAN, train = NAN;  // NaN: the run failed or diverged
    bool diverged = false;          // it stopped on a non-finite loss or gradient
    int64_t spikes = 0, steps_logged = 0;
    std::vector<double> block_grad, block_update, residual;  // per block, mean over steps
    std::vector<double> turn_angle, relative_change;  // per block, of the trained model's stream (stream.csv)
    std::vector<double> loss;                      // training loss per step
};

// The study's design (from its flags) and, once its runs are done, what
// they gave: the report reads only this.
struct NormsStudy {
    NormsScale s;
    std::string part, model, data, device, out_dir;
    std::vector<Variant> variants;  // the part's
    std::string baseline;           // of the variants' table: Pre-Norm, or GeoNorm for its ablations
    std::vector<VariantOutcome> outcomes;
    std::map<std::string, std::vector<RunResult>> base;      // variant -> its reported runs, one per seed
    std::map<std::string, const VariantOutcome*> outcome;   // variant -> its outcome
    // Per seed, of a variant's reported runs.
    std::vector<double> validation(const std::string& variant) const;
    std::vector<double> spike_counts(const std::string& variant) const;
};

// ---- the report (norms_report.cpp) ----

// results.csv (one row per reported run) and curves.csv (training loss per step).
void write_run_csvs(const NormsStudy& study);
// The per-block profiles (grad_profile.csv, update_profile.csv,
// residual_profile.csv, turning.csv, change.csv); returns the turning
// angles per variant, which the placement part's schedule fit reads.
std::map<std::string, std::vector<double>> write_profiles(const NormsStudy& study);
// The variants' table, and the variant with the lowest mean validation loss.
struct VariantsTable {
    std::string text, best;
    double best_val = INFINITY;
};
VariantsTable variants_table(const NormsStudy& study);
// The part's verdicts (one row per claim or choice) and its second table:
// the schedule fits (placement) or the spikes over the tuning grid (long).
struct Verdicts {
    std::string verdicts, fits;
};
Verdicts placement_verdicts(const NormsStudy& study, const std::map<std::string, std::vector<double>>& turning);
Verdicts ablation_verdicts(const NormsStudy& study);
Verdicts long_verdicts(const NormsStudy& study, const StudyOptions& options);  // and grid_spikes.csv
// The plots' scripts (and tuning_curves.csv), rendered; what to tell the reader.
std::vector<std::string> draw_plots(const NormsStudy& study);

// A run's result and what it logged in its folder.
RunResult read_run(const std::string& dir, const CellResult& run);

}  // namespace norms
}  // namespace app
}  // namespace nc
