// memory_plan.h — how much tensor memory a training run needs, measured
// (`train`) and predicted without allocating it (`normcore memory`).
//
// A step's memory has five parts:
//   parameters       the weights, for the whole run
//   gradients        one per parameter: made during backward, kept to the update
//   optimizer state  AdamW's two moments per parameter (SGD: one or none)
//   activations      what the forward pass keeps for backward: its saved
//                    tensors, measured as the memory in use right after the
//                    forward pass minus right before it (with --recompute,
//                    only each block's input)
//   workspace        everything else in use at the peak: the gradient
//                    flowing back through the graph, temporaries, a
//                    recomputed block's activations during its backward
// The peak comes during backward, where part of the activations are already
// freed and part of the gradients not yet made; the prediction knows exactly
// which, so it splits the peak itself: parameters + optimizer state +
// activations still held + gradients made so far + workspace.
//
// The prediction runs the real training step (the same model, optimizer,
// precision and recomputation) on the meta device (tensor/meta_backend.cpp),
// whose kernels do nothing and whose allocator only counts: every op's
// allocations and frees in the same order, so the same peak, but for the
// scratch some kernels take from the allocator for themselves (on the CPU
// the GEMM's packing buffers and partial sums and attention's tiles, for which it states a
// bound; on a GPU, cuBLAS's workspace and a few kernels' partial sums).
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "tensor/tensor.h"

namespace nc {
namespace app {

// What the forward pass keeps: the memory in use on `device` right after
// `forward` minus right before it, the largest over the calls (one per
// micro-batch).
struct ForwardMemoryProbe {
    Device device;
    size_t largest_bytes = 0;
    Tensor measure(const std::function<Tensor()>& forward);
};

// The peak's parts, in MiB (of the allocator's size classes, as the peak is).
struct PeakSplit {
    double parameters = 0, optimizer_state = 0, activations = 0, gradients = 0, workspace = 0;
    double total() const { return parameters + optimizer_state + activations + gradients + workspace; }
};

struct MemoryPrediction {
    double peak_mib = 0;
    double parameters_mib = 0, gradients_mib = 0, optimizer_mib = 0, activations_mib = 0;
    // A ViT's training and validation images: on the CPU they sit in the
    // same tensor memory for the whole run (the text models' tokens do
    // not: they are a plain array or a mapped file). 0 on a GPU.
    double data_mib = 0;
    PeakSplit at_peak;   // what the step's peak holds (its total is peak_mib - data_mib)
    // On the CPU: the most the GEMM's packing buffers and partial sums, which come from the
    // same allocator but from no op, can add to the peak (0 for a GPU,
    // whose cuBLAS keeps its own workspace).
    double packing_bound_mib = 0;
    double worst_mib() const { return peak_mib + packing_bound_mib; }  // what a budget must hold
    std::string model;   // describe(config), for the report
    std::string run;     // batch, sequence, precision, recomputation, accumulation
    std::string device;  // the device the run would train on
};

// Predicts the tensor memory of `normcore train` with these flags, run in
// one process (every train flag is accepted; those about logging or the
// schedule change nothing; --data and --eval-batches count for a ViT's
// images; evaluation and data-parallel gradient buckets are not modelled).
// Runs two training steps on the meta device, so no tensor's memory is
// allocated, only the bookkeeping. Throws on a bad flag as train would.
MemoryPrediction predict_memory(const Flags& flags);

// The allocator's bytes (size classes) of these tensors' blocks, in MiB:
// how train and the prediction count parameters and optimizer state.
double mib_of_tensors(const std::vector<Tensor>& tensors);

// "6GB", "6 GB", "6GiB", "512MiB", "1.5G", "800M", or a plain number of
// bytes, as bytes. GB and MB are powers of 10 (a "6 GB" laptop GPU has
// 6 GiB, so the SI reading errs on the safe side); GiB, MiB, G and M are
// powers of 2. Throws an Error naming the flag for anything else.
double parse_memory_size(const std::string& text, const std::string& flag);

// The command's report: the prediction, the split at the peak and, when a
// budget is given (bytes, > 0), whether the run fits it and what would.
void print_memory_prediction(const MemoryPrediction& p, double budget_bytes, const std::string& budget_text,
                             std::FILE* out);

}  // namespace app
}  // namespace nc
