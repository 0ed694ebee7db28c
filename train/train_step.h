// train_step.h — one optimizer step, the same for `train`, `bench` and the
// isometry study:
//
//   zero the gradients; for each of `accum` micro-batches: forward, loss,
//   backward of loss / accum (the gradient of the mean); average the
//   gradients over the data-parallel ranks; clip the global norm; step.
//
// With a loss scaler (float16), a step whose gradients overflow is skipped:
// no update, and the next step tries again with a smaller scale.
// A step whose loss or gradient norm is not finite is refused: no update,
// gradients zeroed, and the caller decides (train stops, or skips it with
// --skip-nonfinite; the isometry study records a diverged network). Only
// what is asked for is measured: bench's step neither clips nor checks.
#pragma once

#include <functional>

#include "train/distributed.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer.h"

namespace nc {
namespace app {

struct TrainStep {
    std::function<Tensor()> loss;      // draws the next micro-batch, runs forward; the mean loss (a scalar)
    std::vector<Tensor> params;        // what the optimizer updates
    optim::Optimizer* optimizer = nullptr;
    int64_t accum = 1;                 // micro-batches per step
    double grad_clip = 0;              // clip the global gradient norm to this (0: no clipping)
    bool measure_grad_norm = true;     // false: no norm (and no clipping), as bench's step
    // Refuse a step whose loss is not finite. Reading the loss waits for the
    // device's queue, so it is read once: before the update when refusing,
    // else after it (bench: the step's time then covers all of its work).
    bool refuse_non_finite = true;
    // Data-parallel ranks (train/distributed.h); nullptr: one process.
    GradientAverager* averager = nullptr;
    const Distributed* dist = nullptr;
    bool overlap = true;               // all-reduce buckets during the last backward (else after it)
    // float16 training's dynamic loss scaling (optim/loss_scaler.h): backward
    // runs on loss x scale; a step whose gradients overflow is skipped (no
    // update, StepResult::skipped) and the scale backs off. nullptr: none.
    optim::LossScaler* scaler = nullptr;
    // Optional hooks for the diagnostics: after the gradients are final
    // (averaged, not yet clipped), and right before the optimizer's update.
    std::function<void()> before_clip, before_update;
};

// Why train_step refused a step: which of the two numbers was not finite.
enum class Refusal { None, Loss, GradNorm };
const char* refusal_name(Refusal r);  // "training loss", "gradient norm" ("" for None)

struct StepResult {
    double loss = 0;                   // mean over micro-batches (and ranks)
    double grad_norm = NAN;            // global norm before clipping (NaN when not measured)
    Refusal refused = Refusal::None;   // what was not finite, when the step was refused
    bool skipped = false;              // the loss scaler found an overflow: no update, training goes on

    // The number that made it refuse (the loss or the gradient norm).
    double refused_value() const { return refused == Refusal::Loss ? loss : grad_norm; }
};

StepResult train_step(const TrainStep& step);

}  // namespace app
}  // namespace nc
