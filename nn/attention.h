// attention.h — multi-head self-attention: standard or differential, with
// learned/RoPE/no positions, causal or bidirectional, and grouped-query
// attention (fewer key/value heads).
//
// Parameter names follow the model family (config.h):
//   GPT-2  c_attn (fused q,k,v: C -> C + 2 Hkv hd), c_proj
//   Llama  q_proj, k_proj, v_proj, o_proj
//   ViT    attention.query, attention.key, attention.value, output.dense
// Differential attention adds lambda_q1, lambda_k1, lambda_q2, lambda_k2 and
// subln.weight (Ye et al. 2025; tutorials/reference.md, section 4).
//
// Two kinds of differential attention, each O_h = (A1 - lambda A2) V_h with
// A_j = softmax(Q_j K_j^T / sqrt(d) + causal mask) and
// lambda = exp(<lq1, lk1>) - exp(<lq2, lk2>) + lambda_init:
//
//   differential         the official one: H heads of C/H split into two
//                        sub-heads of d = C/H/2 for Q and K; V keeps C/H per
//                        head; lambda's vectors in R^d; a per-head RMSNorm
//                        with a gain; lambda_init at 0-based depth l.
//   differential-regime  the DyT regime study's (Verma 2026, its model.py):
//                        Q and K projected to 2C, so each head has two
//                        sub-heads of the full d = C/H; V of C; lambda's
//                        vectors in R^(C/H); a per-head normalization without
//                        gain, (o - mean) / sqrt(var + 1e-5) over the head's
//                        d values; lambda_init at depth l + 1. Its code
//                        normalizes with nn.GroupNorm on a [B, C, T] tensor,
//                        which pools each head's mean and variance over all
//                        T positions, the later ones too: a causal model must
//                        not see those, so here each position is normalized
//                        on its own (GroupNorm applied to one position).
// Both multiply the heads by (1 - lambda_init) before the output projection.
#pragma once

#include "nn/config.h"
#include "nn/kv_cache.h"
#include "nn/norms.h"
#include "nn/rope.h"

namespace nc {
namespace nn {

class Attention : public Module {
public:
    Attention(const TransformerConfig& cfg, int64_t layer_index, Generator& gen, Options opt = {});
    // x: [B, T, C] -> [B, T, C]. rope: tables for these T positions when
    // positions = rope. With a cache (generation, kv_cache.h), x holds the T
    // tokens after the cache->length cached ones, and their keys and values
    // are appended to this layer's part of the cache.
    Tensor forward(const Tensor& x, const RopeTables* rope, KVCache* cache = nullptr) const;

    // The weights init schemes treat specially.
    std::vector<Tensor> output_weights() const;  // the projection back into the residual stream
    std::vector<Tensor> value_weights() const;   // the value rows of the fused or separate projection
    std::vector<Tensor> query_key_weights() const;  // the query and key rows (two matrices), likewise
    std::vector<std::shared_ptr<Linear>> linears() const;

    double lambda_init = 0;  // differential attention only
    // Mixed precision (TransformerModel::set_precision): q, k and v rounded
    // to this dtype for the attention op, kept in it for backward.
    DType operand_dtype = kFloat32;

private:
    Tensor split_heads(const Tensor& t, int64_t heads, int64_t size) const;  // [B,T,h*s] -> [B,h,T,s]
    Tensor standard(const Tensor& q, const Tensor& k, const Tensor& v, const RopeTables* rope, KVCache* cache) const;
    Tensor differential(const Tensor& q, const Tensor& k, const Tensor& v, const RopeTables* rope,
                        KVCache* cache) const;
    // With a cache: stores the new keys and values, replaces k and v by all
    // the cached ones, and returns whether the queries need the causal mask.
    bool use_cache(Tensor& k, Tensor& v, KVCache* cache) const;

    TransformerConfig cfg_;
    int64_t layer_index_;
    std::shared_ptr<Linear> qkv_, q_, k_, v_, out_;
    Tensor lambda_q1_, lambda_k1_, lambda_q2_, lambda_k2_;
    std::shared_ptr<RMSNorm> subln_;       // official differential: learned per-head gain
    std::shared_ptr<LayerNorm> head_norm_;  // regime differential: no parameters
};

// Sets operand_dtype on every Attention in `root` and below it.
void set_attention_operand_dtype(Module& root, DType dtype);

}  // namespace nn
}  // namespace nc
