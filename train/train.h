// train.h — the training runtime: one run, from its flags to its result.
//
// `normcore train` (cli/train.cpp) calls train_run and prints what it says;
// the studies (studies/cells.cpp) call it for every cell of their grids, in
// the same process, and read the TrainResult it returns. Both get exactly
// the same run from the same flags, so a cell's line of commands.txt
// reproduces its numbers from a shell.
//
// What a run writes into its run directory (rank 0 only):
//   train_log.csv            one row per step (train/run_log.h)
//   checkpoint.safetensors   weights, optimizer state, batch position (train/checkpoint.h)
//   result.json              the TrainResult below, at the end
//   diagnostics files        with --diagnostics (analysis/run_diagnostics.h)
#pragma once

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "nn/config.h"
#include "train/distributed.h"

namespace nc {
namespace nn {
class Module;
}
namespace optim {
class Optimizer;
}
namespace app {

// Every flag `normcore train` takes (the model's, then the run's).
std::vector<FlagSpec> train_flags();

// The optimizer of --optimizer and its flags, over the model's parameters
// (weight decay on matrices only, optim::decay_groups).
std::unique_ptr<optim::Optimizer> make_optimizer(const Flags& flags, nn::Module& model);

// Throws if the run's shape flags cannot work: --seq longer than a learned
// position table, --steps or --accum not positive.
void check_run_shape(const Flags& flags, const nn::TransformerConfig& cfg);

// Why a run ended. (A run that cannot start or fails on the way, such as on
// a missing file or a bad flag, throws an Error instead.)
enum class StopReason {
    Finished,   // every step up to --steps (or --stop-after) ran
    NonFinite,  // a loss or gradient was NaN or Inf: the run stopped and saved nothing of its later steps
};
const char* to_string(StopReason reason);        // "finished" | "non-finite"
StopReason parse_stop_reason(const std::string& name);

struct TrainResult {
    StopReason stop = StopReason::Finished;
    std::string message;        // NonFinite: which value at which step, and what to try
    int64_t steps = 0;          // the last step that ran (1-based)
    double train_loss = NAN;    // of the last step
    double val_loss = NAN;      // of the last validation (NaN: none)
    double ms_per_step = NAN, tok_per_s = NAN;
    double mfu = NAN;           // % of the CPU's FMA peak (NaN on a GPU)
    int64_t skipped_steps = 0;  // --skip-nonfinite
    // --precision fp16: steps the loss scaler skipped (a gradient overflowed
    // float16) over the whole run, and its scale at the end (NaN: no scaler).
    int64_t overflow_skipped_steps = 0;
    double loss_scale = NAN;
    double peak_mib = NAN;      // tensor memory at its peak on the training device
    // What that peak held (train/memory_plan.h): the parameters, their
    // gradients (one per parameter, kept from backward to the update) and
    // the optimizer's state are exact sizes; the activations are what the
    // forward pass kept for backward (measured); the rest of the peak is
    // what backward holds besides: the gradients made so far, the gradient
    // flowing back, temporaries (and a ViT's images on the CPU).
    double parameters_mib = NAN, gradients_mib = NAN, optimizer_mib = NAN, activations_mib = NAN;
    double gradients_and_workspace_mib = NAN;
    std::vector<double> losses;       // the training loss of every step this run ran
    std::string run_dir;
    std::vector<std::string> files;   // what the run wrote besides train_log.csv and the checkpoint (diagnostics)
};

// Where a run's words go.
struct TrainOutput {
    std::FILE* text = stdout;  // what `normcore train` prints: data, model, progress, samples, summary
    // Runs sharing this process at once (a study's cells): their tensors
    // share one allocator, so the memory line can only say the process's
    // peak, and says so.
    int runs_in_process = 1;
};

// Trains as `normcore train` with these flags would (Flags("train",
// train_flags()), parsed). With data-parallel ranks every rank calls it.
TrainResult train_run(const Flags& flags, const Distributed& dist, const TrainOutput& output);

// RUN_DIR/result.json, written by train_run at the end of a run (NaN as
// null); read_result throws, naming the file, if it is missing or malformed.
void write_result(const TrainResult& result, const std::string& path);
TrainResult read_result(const std::string& path);

}  // namespace app
}  // namespace nc
