// checkpoint.h — weights and training checkpoints on disk.
//
//   weights      a safetensors file with Hugging Face names and layouts, or a
//                directory (config.json + model.safetensors) like the ones
//                transformers writes and reads;
//   training     one safetensors file with the weights under "model.",
//                the optimizer state under "optimizer.", and in its metadata
//                the step, the batch stream's and dropout's generator
//                positions and the model config: enough to continue a run
//                exactly where it stopped.
#pragma once

#include <memory>
#include <string>

#include "train/lm.h"
#include "optim/optimizer.h"

namespace nc {
namespace app {

// A path ending in '/' or naming an existing directory means "directory".
bool is_directory_target(const std::string& path);
// Refuses (nc::Error naming the parameter) to write weights holding NaN or
// Inf: a diverged run must never replace a good file. save_weights and
// save_training_checkpoint call it first.
void check_finite_weights(const nn::TransformerModel& model, const std::string& path);
void save_weights(const nn::TransformerModel& model, const std::string& path);
// Loads weights into `model` (from a file, or a directory's model.safetensors).
void load_weights(nn::TransformerModel& model, const std::string& path);
// The config a directory's config.json describes.
nn::TransformerConfig read_directory_config(const std::string& dir);

struct TrainingState {
    int64_t step = 0;            // optimizer steps done
    int64_t batches_taken = 0;   // batches drawn from the training stream
    uint64_t batch_seed = 0, batch_offset = 0;      // the batch generator
    uint64_t dropout_seed = 0, dropout_offset = 0;  // the model's dropout generator
    int64_t schedule_steps = 0;  // the run's --steps, which the learning-rate schedule spans (0: not recorded)
    int64_t ranks = 1;           // data-parallel ranks that trained it (chapter 14); 1 in older checkpoints
    // float16 training's loss scaler (optim/loss_scaler.h): its scale, the
    // good steps since it last changed and the steps it skipped; a scale of
    // 0 means the run had none.
    double loss_scale = 0;
    int64_t loss_scale_good_steps = 0, loss_scale_skipped = 0;
};

// Refuses, as save_weights does, weights or optimizer state holding NaN or Inf.
void save_training_checkpoint(const std::string& path, const nn::TransformerModel& model, const optim::Optimizer& opt,
                              const TrainingState& state);
// Reads the config stored in a training checkpoint.
nn::TransformerConfig read_checkpoint_config(const std::string& path);
// Restores weights and optimizer state; returns the run's position.
TrainingState load_training_checkpoint(const std::string& path, nn::TransformerModel& model, optim::Optimizer& opt);

}  // namespace app
}  // namespace nc
