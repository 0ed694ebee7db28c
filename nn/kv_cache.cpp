#include "nn/kv_cache.h"

#include "tensor/raw_ops.h"

namespace nc {
namespace nn {

CachedKV append_to_cache(KVCache::Layer& layer, const Tensor& k_new, const Tensor& v_new, int64_t past,
                         int64_t capacity) {
    int64_t T = k_new.size(2);
    if (past + T > capacity)
        fail("kv cache", "positions " + std::to_string(past) + ".." + std::to_string(past + T - 1) +
                             " do not fit a cache of " + std::to_string(capacity) + " positions (the block size)");
    if (!layer.k.defined() || layer.k.size(0) != k_new.size(0)) {
        Shape ks = k_new.shape(), vs = v_new.shape();
        ks[2] = capacity;
        vs[2] = capacity;
        // Not zeroed: only positions below the length are ever read, each
        // written first. Zeroing GPT-2 124M's cache (12 layers x 2 x 3 MiB)
        // took its first token about 0.1 s on a virtual machine where
        // touching a fresh page costs ~10 us; unzeroed, a page is touched
        // when the text reaches it.
        layer.k = empty(ks, k_new.dtype(), k_new.device());
        layer.v = empty(vs, v_new.dtype(), v_new.device());
    }
    // The cache's buffers are outputs the model owns; copy_ is the one write.
    raw::copy_(raw::narrow(layer.k, 2, past, T), k_new);
    raw::copy_(raw::narrow(layer.v, 2, past, T), v_new);
    return {raw::narrow(layer.k, 2, 0, past + T), raw::narrow(layer.v, 2, 0, past + T)};
}

const RopeTables& cache_rope_tables(KVCache& cache, int64_t dim, double theta, DType dtype, Device device) {
    if (!cache.rope.cos.defined()) cache.rope = rope_tables(cache.capacity, dim, theta, dtype, device);
    return cache.rope;
}

}  // namespace nn
}  // namespace nc
