// lm.h — what the `normcore` commands share: building a model from flags,
// running a language model, and sampling text from it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "apps/flags.h"
#include "nn/models.h"

namespace nc {
namespace app {

// The model flags every command accepts (--model, --norm, --layers, ...).
std::vector<FlagSpec> model_flags();
// Reads them into a config (the preset of --model, then every flag given).
nn::TransformerConfig config_from_flags(const Flags& flags);
std::string describe(const nn::TransformerConfig& cfg);

// The config a command runs with: from --resume's checkpoint, from --init's
// config.json when --init is a model directory, else from the model flags.
nn::TransformerConfig resolve_config(const Flags& flags);

// Text <-> tokens: bytes (vocabulary 256, the default) or a BPE vocabulary.
struct TextCodec {
    std::function<std::vector<int64_t>(const std::string&)> encode;
    std::function<std::string(int64_t)> token_text;  // the bytes of one token
    int64_t vocab_size = 256;
    std::string name = "bytes";
};
// --tokenizer: "byte"; a normcore BPE file (trained on `training_text` and
// saved there first if it does not exist yet, with --vocab-size tokens); or a
// directory holding GPT-2's vocab.json and merges.txt.
TextCodec make_codec(const Flags& flags, const std::string& training_text);

// "cpu", "cuda" or "cuda:0" as a Device; throws a clear error for anything
// else and for a CUDA device this build or machine cannot use.
Device parse_device(const std::string& name);

// A language model (GPT-2 or Llama family) behind one call: ids -> logits
// (the ids are moved to the model's device first).
struct LanguageModel {
    std::shared_ptr<nn::TransformerModel> module;
    std::function<Tensor(const Tensor&)> forward;  // [B, T] -> [B, T, V]
    // The same, also collecting the residual stream entering block 0 and
    // after every block (nn/models.h), for diagnostics.
    std::function<Tensor(const Tensor&, std::vector<Tensor>*)> forward_with_stream;
};
LanguageModel build_language_model(const nn::TransformerConfig& cfg, Generator& gen);

// Samples `count` tokens after `prompt` (at least one token), feeding at most block_size tokens of
// context. temperature <= 0 picks the most likely token; top_k > 0 samples
// among the k most likely. `on_token` sees each token as it is produced.
std::vector<int64_t> sample_tokens(const LanguageModel& lm, std::vector<int64_t> prompt, int64_t count,
                                   double temperature, int64_t top_k, Generator& gen,
                                   const std::function<void(int64_t)>& on_token = nullptr);

}  // namespace app
}  // namespace nc
