#include "nn/generate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "nn/decode.h"

namespace nc {
namespace nn {

int64_t context_start(int64_t n, int64_t block_size) {
    if (n <= block_size) return 0;
    int64_t shift = std::max<int64_t>(1, block_size / 2);
    return (n - block_size + shift - 1) / shift * shift;  // the smallest multiple of shift leaving <= block tokens
}

int64_t pick_token(const std::vector<double>& logits, double temperature, int64_t top_k, Generator& gen) {
    if (temperature <= 0) return std::max_element(logits.begin(), logits.end()) - logits.begin();
    // Keep the top k logits (all if k <= 0), then softmax(logits / temperature).
    // The cutoff is the k-th largest logit: nth_element puts it in place
    // without sorting the rest (sorting the whole vocabulary took about 6%
    // of a sampled token's time with the default model).
    double cutoff = -INFINITY;
    if (top_k > 0 && top_k < (int64_t)logits.size()) {
        std::vector<double> largest_first = logits;
        std::nth_element(largest_first.begin(), largest_first.begin() + (top_k - 1), largest_first.end(),
                         std::greater<double>());
        cutoff = largest_first[top_k - 1];
    }
    double m = *std::max_element(logits.begin(), logits.end()), total = 0;
    std::vector<double> p(logits.size());
    for (size_t v = 0; v < logits.size(); ++v) {
        p[v] = logits[v] < cutoff ? 0 : std::exp((logits[v] - m) / temperature);
        total += p[v];
    }
    double u = raw::rand({1}, gen, kFloat64).item() * total, acc = 0;
    for (size_t v = 0; v < p.size(); ++v) {
        acc += p[v];
        if (u < acc) return (int64_t)v;
    }
    return (int64_t)logits.size() - 1;
}

// ids [1, T] -> logits [1, T, V], through the cache when one is given.
static Tensor forward(const TransformerModel& model, Device device, const Tensor& ids, KVCache* cache) {
    Tensor on_device = raw::to_device(ids, device);
    return cache ? model.forward(on_device, *cache) : model.forward(on_device);
}

std::vector<int64_t> generate_tokens(const TransformerModel& model, std::vector<int64_t> tokens, int64_t count,
                                     const SampleOptions& options, Generator& gen,
                                     const std::function<void(int64_t)>& on_token) {
    NoGradGuard no_grad;
    // A byte '\n' is not token 10 in every vocabulary: callers encode their own default prompt.
    if (tokens.empty()) fail("generate", "the prompt must hold at least one token");
    int64_t vocab = model.config().vocab_size;
    for (int64_t t : tokens)
        if (t < 0 || t >= vocab)
            fail("generate", "prompt token " + std::to_string(t) + " is outside the model's vocabulary of " +
                                 std::to_string(vocab));
    if (model.config().family == Family::ViT) fail("generate", "only language models (gpt2, llama) generate text");
    const Device device = model.device();  // once: asking walks every parameter
    int64_t block = model.config().block_size;
    KVCache cache = model.make_cache(1);
    int64_t cache_start = 0;  // the text position of the cache's first token
    // One new token at a time goes through the decoder's buffers (decode.h)
    // where the model has that path; the prompt and each refill of the
    // window, many tokens at once, through the model's forward.
    std::unique_ptr<TokenDecoder> decoder;
    if (options.use_cache && TokenDecoder::unsupported(model).empty())
        decoder = std::make_unique<TokenDecoder>(model, cache);
    std::vector<int64_t> produced;
    for (int64_t i = 0; i < count; ++i) {
        int64_t n = (int64_t)tokens.size(), start = context_start(n, block);
        Tensor logits;
        std::vector<double> last;  // the logits of the last position
        if (!options.use_cache) {
            std::vector<int64_t> context(tokens.begin() + start, tokens.end());
            logits = forward(model, device, raw::from_indices(context, {1, n - start}), nullptr);
        } else if (start == cache_start && cache.length == n - start - 1 && cache.length > 0) {
            if (decoder) last = decoder->step(tokens.back());  // one new token
            else logits = forward(model, device, raw::from_indices({tokens.back()}, {1, 1}), &cache);
        } else {
            // The first step, or the window moved: fill the cache from the window.
            cache.reset();
            cache_start = start;
            std::vector<int64_t> context(tokens.begin() + start, tokens.end());
            logits = forward(model, device, raw::from_indices(context, {1, n - start}), &cache);
        }
        if (logits.defined()) last = raw::narrow(logits, 1, logits.size(1) - 1, 1).to_vector();
        int64_t next = pick_token(last, options.temperature, options.top_k, gen);
        tokens.push_back(next);
        produced.push_back(next);
        if (on_token) on_token(next);
    }
    return produced;
}

}  // namespace nn
}  // namespace nc
