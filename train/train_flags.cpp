// train_flags.cpp — the flags of `normcore train`, with their defaults and help.
#include "data/text.h"  // kDefaultCorpus
#include "nn/norms.h"   // kDytSaturationThreshold
#include "train/lm.h"
#include "train/train.h"

namespace nc {
namespace app {

std::vector<FlagSpec> train_flags() {
    std::vector<FlagSpec> specs = model_flags();
    std::vector<FlagSpec> more = {
        {"device", "cpu", "cpu | cuda"},
        {"data", data::kDefaultCorpus, "a text file or directory (vit: Fashion-MNIST's directory, the default, or root/<class>/<image>)"},
        {"val-fraction", "0.1", "the last fraction of the tokens used for validation (not for a split corpus)"},
        {"eval-split", "validation",
         "with a corpus directory of `normcore corpus build`: validation | tuning; with Fashion-MNIST (vit): validation = "
         "test images from the first, tuning = from the 5,001st"},
        {"eval-tokens", "0", "validate on at least this many tokens, in windows spread over the whole split (0: --eval-batches batches from its start)"},
        {"tokenizer", "byte", "byte, a BPE file (trained on the data and saved there if missing), or a GPT-2 vocab.json + merges.txt directory"},
        {"vocab-size", "512", "size of a newly trained BPE vocabulary"},
        {"no-shuffle", "false", "deterministic batches: window j of batch i starts at token (i*B + j)*T", true},
        {"steps", "1500", "optimizer steps"},
        {"batch", "16", "sequences per batch B"},
        {"accum", "1", "micro-batches accumulated per optimizer step"},
        {"optimizer", "adamw", "sgd | adamw"},
        {"lr", "2e-3", "peak learning rate"},
        {"momentum", "0.9", "SGD momentum"},
        {"nesterov", "false", "SGD: Nesterov momentum", true},
        {"weight-decay", "0.1", "weight decay (matrices only; norms, biases and embeddings are not decayed)"},
        {"beta1", "0.9", "AdamW beta1"},
        {"beta2", "0.99", "AdamW beta2"},
        {"eps", "1e-8", "AdamW epsilon"},
        {"grad-clip", "1.0", "clip the global gradient norm to this (0 = off)"},
        {"diagnostics", "false",
         "log per-block gradient norms, relative updates and residual contributions ||F(x)||/||x||, loss spikes (and DyT saturation) to RUN_DIR/diagnostics.csv; at the end the "
         "weights' effective rank and HTSR alpha (weights.csv) and the residual stream's effective rank (stream.csv)",
         true},
        // At B=8, T=64 on the studies' corpus, batch-to-batch noise reaches 1.23x the running median.
        {"spike-factor", "1.5", "a loss above this times the running median is a spike (with --diagnostics)"},
        {"spike-window", "50", "steps in the running median for spike detection"},
        {"saturation-threshold", flag_number(nn::kDytSaturationThreshold), "DyT saturation: the fraction of |alpha x| above this (with --diagnostics)"},
        {"calibration-step", "0",
         "with --diagnostics and DyT: also measure the saturation on held-out data after this step (0: a tenth of --steps) and "
         "at the end, into RUN_DIR/saturation_heldout.csv"},
        {"schedule", "cosine", "constant | cosine | linear"},
        {"warmup", "100", "linear warm-up steps"},
        {"min-lr-ratio", "0.1", "cosine/linear decay ends at this fraction of --lr"},
        {"seed", "1337", "seed for initialization, batches and sampling"},
        {"eval-every", "250", "validation loss every N steps (0: only at the end)"},
        {"eval-batches", "16", "batches per validation"},
        {"train-images", "0", "vit: use only the first N training images (0: all)"},
        {"train-tokens", "0", "text: use only the first N tokens of the training split (0: all); validation is unchanged"},
        {"sample-tokens", "300", "tokens of text sampled at the end (0: none)"},
        {"temperature", "0.8", "sampling temperature"},
        {"top-k", "0", "sample among the k most likely tokens (0: all)"},
        {"sample-every", "0", "also print a short sample (--sample-every-tokens tokens) every N steps (0: only at the end)"},
        {"sample-every-tokens", "80", "tokens of each sample printed during training"},
        {"prompt", "", "text the sample continues (default: a newline)"},
        {"run-dir", "", "where the CSV log goes (default: runs/<model>-<date>-<time>)"},
        {"init", "", "initial weights: a safetensors file (architecture from the flags) or a model directory"},
        {"save", "", "write the final weights here: FILE.safetensors, or DIR/ for config.json + model.safetensors"},
        {"resume", "", "continue from a training checkpoint (<run-dir>/checkpoint.safetensors)"},
        {"stop-after", "0", "stop after this many steps as if interrupted (the schedule still spans --steps)"},
        {"checkpoint-every", "0", "also write <run-dir>/checkpoint.safetensors every N steps (it is always written at the end)"},
        {"no-overlap", "false", "data parallel: average the gradients after backward instead of during it (the baseline for the overlap)", true},
        {"recompute", "false",
         "keep only each block's input between forward and backward and run the block again during backward: less "
         "activation memory for one more forward of the blocks; the same gradients (autograd/checkpoint.h)",
         true},
        precision_flag(),
        {"skip-nonfinite", "false", "skip a step whose loss or gradient is NaN or Inf instead of stopping (at most 100 in a row)", true},
    };
    specs.insert(specs.end(), more.begin(), more.end());
    return specs;
}

}  // namespace app
}  // namespace nc
