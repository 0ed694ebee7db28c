// kv_cache.h — the keys and values a language model has already computed,
// kept so that generation feeds one new token per step instead of the whole
// context (chapter 5, "Generating faster").
//
// In a causal model the key and value of position j depend only on tokens
// 0..j, so once computed they never change while the context grows. Each
// block's attention writes its new keys and values (after RoPE, at their
// absolute positions; only the key/value heads under grouped-query
// attention) into its layer's buffers, and attends over everything cached.
// A step then costs O(T) instead of O(T^2) attention and one row instead of
// T rows through every linear layer.
//
// Use, under NoGradGuard:
//   KVCache cache = model.make_cache(B);
//   model.forward(prompt_ids, cache);   // [B, T0]: fills positions 0..T0-1
//   model.forward(next_ids, cache);     // [B, 1]: position T0, and so on
// A call appends either to an empty cache (any length up to the block size)
// or one token at a time. reset() empties it (the buffers are kept).
#pragma once

#include <vector>

#include "nn/rope.h"

namespace nc {
namespace nn {

struct KVCache {
    struct Layer {
        Tensor k, v;  // [B, heads, capacity, head size], allocated at the first append
    };
    std::vector<Layer> layers;  // one per block
    int64_t length = 0;         // tokens cached: the position of the next one
    int64_t capacity = 0;       // the model's block size
    int64_t batch = 0;
    RopeTables rope;            // positions 0..capacity-1, built at the first use (RoPE models)

    void reset() { length = 0; }
};

// The attention's side of the cache: stores k_new, v_new [B, heads, T, d] at
// positions past..past+T-1 of `layer` and returns the keys and values of
// positions 0..past+T-1 (views into the buffers).
struct CachedKV {
    Tensor k, v;
};
// The buffers are allocated at the first append and not zeroed: only the
// positions below the cache's length are ever read, each written first.
CachedKV append_to_cache(KVCache::Layer& layer, const Tensor& k_new, const Tensor& v_new, int64_t past,
                         int64_t capacity);

// The cache's RoPE tables (rope_tables of `dim` and `theta` for every
// position it can hold), built at the first call and kept.
const RopeTables& cache_rope_tables(KVCache& cache, int64_t dim, double theta, DType dtype, Device device);

}  // namespace nn
}  // namespace nc
