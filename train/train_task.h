// train_task.h — what differs between training a language model and an
// image classifier: where batches come from, how a batch becomes a loss,
// what validation and the end of the run report. The loop in train.cpp is
// the same for both.
#pragma once

#include <cstdio>
#include <memory>

#include "train/distributed.h"
#include "cli/flags.h"
#include "nn/models.h"

namespace nc {
namespace app {

// Where the training batches' stream stands, for checkpoints.
struct BatchPosition {
    int64_t batches_taken = 0;
    uint64_t seed = 0, offset = 0;  // its generator
};

class Task {
public:
    virtual ~Task() = default;
    virtual nn::TransformerModel& model() = 0;
    virtual int64_t tokens_per_batch() const = 0;  // this rank's transformer positions per batch (for tok/s)
    // Draws the next training batch; this rank's rows' mean loss.
    virtual Tensor train_loss() = 0;
    // Mean validation loss, in eval mode without gradients (NaN: no validation data).
    virtual double validate() = 0;
    // At the end: a text sample, or the validation accuracy.
    virtual void finish() = 0;
    // A short text sample during training at this step (text only).
    virtual void sample_during(int64_t step) {}
    virtual BatchPosition batch_position() = 0;
    virtual void set_batch_position(const BatchPosition& position) = 0;
    // The residual stream of a fixed training batch (--diagnostics).
    virtual std::vector<Tensor> residual_stream() = 0;
    // Held-out batch i of held_out_batches(), run forward without gradients
    // in eval mode, for the DyT layers' held-out saturation: evenly spread
    // windows of the evaluation split, or its first images.
    virtual int64_t held_out_batches() const = 0;
    virtual void held_out_forward(int64_t i) = 0;
};

// The task of `train`'s flags: text for GPT-2 and Llama, images for ViT.
// It prints what data it loaded (and samples, the accuracy) to `out`. With data-parallel ranks every rank draws
// the same global batch of world x B examples from one seeded stream and
// trains on rows rank*B .. rank*B+B-1 of it (chapter 14).
std::unique_ptr<Task> make_task(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist,
                                std::FILE* out);

}  // namespace app
}  // namespace nc
