// model_helpers.h — the tiny models the model tests build (test_models.cpp,
// test_model_invariants.cpp): every family at width 8, in float64; and the
// language models the generation tests build (test_generate.cpp,
// test_decode.cpp).
#pragma once

#include "helpers.h"
#include "nn/models.h"

namespace nc_test {

inline const nc::nn::Options f64{nc::kFloat64, nc::kCPU};

inline nc::nn::TransformerConfig tiny(nc::nn::Family family) {
    using namespace nc::nn;
    TransformerConfig c = family == Family::GPT2 ? gpt2_config() : family == Family::Llama ? llama_config() : vit_config();
    c.n_layer = 2;
    c.n_embd = 8;
    c.n_head = 2;
    c.vocab_size = 11;
    c.block_size = 6;
    c.swiglu_multiple = 4;
    c.image_size = 8;
    c.patch_size = 4;
    c.channels = 2;
    c.num_classes = 3;
    return c;
}

inline std::shared_ptr<nc::nn::TransformerModel> build(const nc::nn::TransformerConfig& c, nc::Generator& gen,
                                                       nc::nn::Options opt = f64) {
    return nc::nn::make_model(c, gen, opt);
}

inline nc::Tensor run(const nc::nn::TransformerModel& m, const nc::Tensor& input) { return m.forward(input); }

inline nc::Tensor tiny_input(const nc::nn::TransformerConfig& c, nc::Generator& gen) {
    if (c.family == nc::nn::Family::ViT) return nc::raw::randn({2, c.channels, c.image_size, c.image_size}, gen, nc::kFloat64);
    return nc::raw::from_indices({1, 5, 10, 3, 0, 7, 2, 2}, {2, 4});
}

// Width 16 with 4 heads, so that grouped-query attention can give 2 or 1
// key/value heads; a block of 12, which generating 40 tokens outgrows.
inline nc::nn::TransformerConfig generation_config(nc::nn::Family family) {
    using namespace nc::nn;
    TransformerConfig c = family == Family::GPT2 ? gpt2_config() : llama_config();
    c.n_layer = 2;
    c.n_embd = 16;
    c.n_head = 4;
    c.vocab_size = 23;
    c.block_size = 12;
    c.swiglu_multiple = 8;
    return c;
}

// n token ids below `vocab`, a fixed mix of the seed and the position.
inline std::vector<int64_t> token_ids(int64_t n, int64_t vocab, uint64_t seed) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < n; ++i)
        ids.push_back((int64_t)((seed * 7 + (uint64_t)i * 13 + (uint64_t)(i * i)) % (uint64_t)vocab));
    return ids;
}

}  // namespace nc_test
