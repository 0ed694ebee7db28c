// lm.h — what the `normcore` commands share: building a model from flags,
// running a language model, and sampling text from it.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "cli/flags.h"
#include "data/tokens.h"
#include "nn/generate.h"
#include "nn/models.h"

namespace nc {
namespace app {

// What train's error says when a NaN or Inf loss or gradient stops a run;
// the studies' protocol reads it in train.log to tell a diverged run from a
// failed one (studies/protocol.cpp).
inline constexpr const char* kStoppedOnNonFinite = "Stopping with nothing saved from this run's later steps";

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
    bool ids_are_bytes = false;  // the byte tokenizer: id = byte, a text is its own ids
};
// A whole text's ids, as training keeps them: the byte tokenizer's are the
// text itself (data::byte_ids), any other tokenizer's are encoded.
data::TokenIds encode_text(const TextCodec& codec, std::string text);
// --tokenizer: "byte"; a normcore BPE file (trained on `training_text` and
// saved there first if it does not exist yet, with --vocab-size tokens, which
// it says on `out`); or a directory holding GPT-2's vocab.json and merges.txt.
TextCodec make_codec(const Flags& flags, const std::string& training_text, std::FILE* out = stdout);
// `text` encoded piece by piece: pieces of about `piece_bytes`, cut where the
// encoding does not change (data::BPETokenizer::safe_cut_after), so the ids
// of all pieces together are exactly codec.encode(text). `on_piece` gets each
// piece's ids and the bytes encoded so far; it returns false to stop early.
void encode_pieces(const TextCodec& codec, const std::string& text,
                   const std::function<bool(const std::vector<int64_t>& ids, size_t bytes_done)>& on_piece,
                   size_t piece_bytes = 1 << 20);
// At least the first `count` tokens of `text` (all of them if it has fewer),
// by encode_pieces: a run that trains on the first 10,000 tokens of a 47 MB
// corpus encodes a few pieces, not the whole corpus.
std::vector<int64_t> encode_prefix(const TextCodec& codec, const std::string& text, int64_t count,
                                   size_t piece_bytes = 1 << 20);

// "cpu", "cuda" or "cuda:0" as a Device; throws a clear error for anything
// else and for a CUDA device this build or machine cannot use.
Device parse_device(const std::string& name);
// The same by name only, whether or not the device can be used here
// (`normcore memory` predicts for a GPU it does not need).
Device device_from_name(const std::string& name);

// --precision, as train, generate and eval take it: fp32 | bf16 | fp16, the
// dtype every linear layer rounds its operands to (nn::TransformerModel::
// set_precision); the flag's spec and its value as a DType.
FlagSpec precision_flag();
DType parse_precision(const std::string& name);
const char* precision_name(DType operand_dtype);  // "fp32", "bf16", "fp16"

// A language model (GPT-2 or Llama family) as the commands use it.
struct LanguageModel {
    std::shared_ptr<nn::TransformerModel> module;
    // ids [B, T] (moved to the model's device first) -> logits [B, T, V];
    // `stream` as nn::TransformerModel::forward's.
    Tensor forward(const Tensor& ids, std::vector<Tensor>* stream = nullptr) const;
};
// nn::make_model, for a language model's config only (opt.random_init =
// false when weights are loaded right after: nn/layers.h).
LanguageModel build_language_model(const nn::TransformerConfig& cfg, Generator& gen, nn::Options opt = {});

// The tokens of --data: a token file written by `normcore tokenize`
// (mapped into memory; it must have been written with a vocabulary of the
// codec's size), or a text file or directory, encoded with the codec.
data::TokenIds load_corpus_tokens(const std::string& path, const TextCodec& codec);
// The text of --data when it is text (a BPE vocabulary may be trained on
// it), or nothing for a token file.
std::string corpus_text_if_any(const std::string& path);

// The tokenizer must fit the model: "the tokenizer has 1024 tokens, the
// model's vocabulary is 256" otherwise.
void check_vocabulary(const TextCodec& codec, const nn::TransformerConfig& cfg);

// Samples `count` tokens after `prompt` (nn/generate.h) and prints the prompt
// and each token to `out` as it comes, in the terminal-safe form
// (data/unicode.h: invalid UTF-8 as U+FFFD, control bytes escaped). `exact`,
// if given, receives the exact bytes. An empty prompt starts from a newline.
std::vector<int64_t> print_sample(const LanguageModel& lm, const TextCodec& codec, const std::string& prompt,
                                  int64_t count, const nn::SampleOptions& options, Generator& gen, std::FILE* out,
                                  std::ostream* exact = nullptr);

}  // namespace app
}  // namespace nc
