// generate.h — sampling text from a language model (GPT2 or Llama), with or
// without the key/value cache (kv_cache.h; chapter 5).
//
// The context window. A model sees at most block_size tokens. Once the
// text is longer, the context keeps a suffix of it: the start jumps forward
// by half a block whenever the window would overflow, so the context holds
// between block/2 and block tokens. Cached or not, every step conditions on
// exactly the same window (context_start), and the cache is rebuilt from
// the window's tokens once per half block instead of at every token.
#pragma once

#include <functional>

#include "nn/models.h"

namespace nc {
namespace nn {

struct SampleOptions {
    double temperature = 0.8;  // <= 0: always the most likely token (greedy)
    int64_t top_k = 0;         // > 0: sample among the k most likely tokens
    bool use_cache = true;     // false: recompute the whole context at every step
};

// The first token of the context when the text holds n tokens.
int64_t context_start(int64_t n, int64_t block_size);

// One token from the logits of the last position: greedy, or a draw from
// softmax(logits / temperature) over the top k. One uniform number from `gen`
// per call when sampling.
int64_t pick_token(const std::vector<double>& logits, double temperature, int64_t top_k, Generator& gen);

// `count` tokens after `prompt` (at least one token). `on_token` sees each
// as it is produced. Runs without recording a graph.
std::vector<int64_t> generate_tokens(const TransformerModel& model, std::vector<int64_t> prompt, int64_t count,
                                     const SampleOptions& options, Generator& gen,
                                     const std::function<void(int64_t)>& on_token = nullptr);

}  // namespace nn
}  // namespace nc
