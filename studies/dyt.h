// dyt.h — `normcore experiment dyt`: when does removing the norm help?
//
// The DyT regime study (Verma, arXiv:2604.23434) replaces every LayerNorm
// (RMSNorm in Llama) by Dynamic Tanh, DyT(x) = gamma * tanh(alpha x) with
// alpha0 = 2, and finds the effect depends on the data regime: with little
// data (a model that can memorize its training set) DyT's bounded
// activations regularize and the validation loss drops; with much data they
// cost capacity and it rises. Differential attention is its contrast (it
// helps more with more data). Its mechanism is saturation, the fraction of
// alpha x beyond +-2 where tanh is flat; its screening rule says: measure the
// saturation after a short calibration run; DyT helps iff it is >= 0.43.
//
// How this study asks that (chapter 12):
//   - The regime axis: training sets of 6 sizes (text) spanning 2.5 orders
//     of magnitude, the first N tokens of the corpus's training split, whose
//     documents `normcore corpus build` shuffled with a fixed seed (so the
//     sets are nested random documents); ViT on the first N Fashion-MNIST
//     training images. Every run sees the same number of tokens (steps x
//     batch: a fixed token budget), so the smallest sets are seen for dozens
//     of epochs and the largest for a fraction of one.
//   - The protocol (studies/protocol.h): the learning rate is tuned per model,
//     variant and size band (small: several epochs; large: about one or
//     fewer), on the tuning split, at one size inside the band; every size of
//     the band is then reported with 3 seeds on the validation split.
//     Differences are paired by seed, with 95% intervals and verdicts.
//   - Variants: the model as it is ("vanilla"), DyT (alpha0 = 2), and the
//     regime study's differential attention (--diffattn official for the
//     Diff-Transformer's own). Llama also runs with a GELU MLP instead of
//     SwiGLU, with and without DyT: the component ablation behind the
//     paper's r = 0.94 between saturation and validation loss.
//   - Saturation on held-out data (train's saturation_heldout.csv) after a
//     tenth of the steps (the calibration point: the paper's step 500 of
//     5,000) and at the end; the screening rule scored as stated, fitted in
//     sample, and leaving one size out, against predicting the majority.
//   - Weight spectra: effective rank and HTSR alpha of every block matrix
//     whose smaller side has at least kMinMatrixSide rows or columns.
//
// The study in three files: this header (its scale and what it knows once
// its runs are done), dyt.cpp (the flags, the variants, running them under
// the protocol, reading the runs back) and dyt_report.cpp (the tables, the
// screening rule's scores and the plots).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "studies/protocol.h"
#include "studies/screening.h"
#include "studies/study.h"

namespace nc {
namespace app {
namespace dyt {

struct ModelScale {
    int64_t layers, width, heads, batch, steps;
    std::vector<int64_t> sizes;  // training tokens (text) or images (ViT), increasing
    size_t first_large;          // sizes[first_large..] are the large band
    int64_t tune_small, tune_large;  // the size each band is tuned at
};

struct DytScale {
    ModelScale text, vit;
    int64_t seq, seeds;
    std::vector<double> lrs;
    int64_t eval_tokens, eval_batches;  // per evaluation: text tokens spread over the split; ViT batches
};

// The scale of --smoke, --quick or --full.
DytScale dyt_scale(const std::string& scale);

// HTSR alpha is fitted to a matrix's eigenvalue tail: a small matrix has too
// few eigenvalues for the fit to mean much. Block matrices at least this
// many rows and columns (the quick scale's are 64 x 64 and up).
const int64_t kMinMatrixSide = 32;

struct RunResult {
    double val = NAN, train = NAN;  // validation loss; training loss over the last tenth of the steps
    double saturation_calib = NAN, saturation_final = NAN;  // held-out, mean over DyT layers
    std::vector<std::string> dyt_layers;
    std::vector<double> layer_saturation_final;
    double activation_erank = NAN;  // residual stream after the last block
    double weight_erank = NAN, weight_alpha = NAN;  // means over block matrices (kMinMatrixSide)
};

// 200, "600", "2K", "3.2M": a training-set size as the tables print it.
std::string size_label(int64_t n);

// One number per seed, from every run of a configuration.
std::vector<double> field(const std::vector<RunResult>& runs, double RunResult::*member);

// The study's design (from its flags) and, once its runs are done, what
// they gave: the reports below read only this. (They take it by reference:
// runs[...] with operator[] reads an absent configuration as no runs.)
struct DytStudy {
    DytScale s;
    std::string data, diffattn, device, out_dir;
    std::string dyt_final_gamma = "1";  // train --dyt-final-gamma for the dyt variants
    // train --embed-scale and --dyt-alpha-attn for the dyt variants: 0, the
    // regime study's setting (train's own defaults are chapter 12's recipe).
    std::string embed_scale = "0", dyt_alpha_attn = "0";
    std::string tokenizer = "byte";  // --tokenizer: byte, or a BPE file
    std::vector<std::string> dyt_alphas = {"2"};  // alpha0: one is fixed, several are tuned with the lr
    std::vector<std::string> models;   // --models
    std::vector<std::string> trained;  // models, and "llama-gelu" (Llama with a GELU MLP) with llama
    bool ablation = false;             // llama is among them: the component ablation runs
    std::vector<ProtocolVariant> variants;
    std::vector<VariantOutcome> outcomes;  // one per variant
    // runs[model][size][variant]: one result per seed; chosen_lr likewise.
    std::map<std::string, std::map<int64_t, std::map<std::string, std::vector<RunResult>>>> runs;
    std::map<std::string, std::map<int64_t, std::map<std::string, double>>> chosen_lr;

    const ModelScale& scale_of(const std::string& model) const { return model == "vit" ? s.vit : s.text; }
    std::vector<std::string> variants_of(const std::string& model) const;
    std::string report_name(const std::string& model, const std::string& variant, int64_t size) const;
    // Passes over the training set: every run sees the same tokens (or images).
    double epochs(const std::string& model, int64_t size) const;
    int64_t tokens_per_run() const { return s.text.steps * s.text.batch * s.seq; }
    int64_t images_per_run() const { return s.vit.steps * s.vit.batch; }
};

// ---- the report (dyt_report.cpp) ----

// OUT/results.csv (one row per run) and OUT/saturation.csv (per DyT layer).
void write_run_csvs(DytStudy& study);
// Each tuned variant's learning rate.
std::string tuning_table(const DytStudy& study);
// The regime table, per model and size (and OUT/delta.csv, which the
// screening and the plots read), with the cells the screening rule is
// scored on.
struct RegimeTable {
    std::string text;
    std::vector<ScreeningCase> calibration_cases, final_cases;
    int alpha_cells = 0, dyt_alpha_higher = 0;  // cells with both HTSR alphas, and where DyT's is higher
};
RegimeTable regime_table(DytStudy& study);
std::string claims_table(DytStudy& study);
std::string screening_text(const DytStudy& study, const RegimeTable& regime);
std::string ablation_table(DytStudy& study);  // "" without llama
// The plots' scripts, rendered; what to tell the reader.
std::string draw_plots(const DytStudy& study);

}  // namespace dyt
}  // namespace app
}  // namespace nc
