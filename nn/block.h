// block.h — one transformer block: an attention and an MLP, each wrapped by
// the configured placement (nn/placement.h has the wiring of all five and
// their constants; tutorial 4).
//
// Parameter names by family (extra norms of sandwich in brackets):
//   GPT-2  ln_1, attn, ln_2, mlp.{c_fc, [c_fc2], c_proj}        [ln_attn_out, ln_mlp_out]
//   Llama  input_layernorm, self_attn, post_attention_layernorm,
//          mlp.{gate_proj, up_proj, down_proj} (gelu: up_proj, down_proj)
//                                                  [attn_output_layernorm, mlp_output_layernorm]
//   ViT    layernorm_before, attention, layernorm_after, intermediate.{dense, [up]}, output.dense
//                                                  [layernorm_attention_output, layernorm_mlp_output]
// GeoNorm with a learnable step adds attn_step and mlp_step (shape [1]).
#pragma once

#include "nn/attention.h"
#include "nn/placement.h"

namespace nc {
namespace nn {

// The feed-forward part: gelu (fc -> GELU -> proj) or swiglu
// (proj(silu(fc x) * up x)).
struct MlpLayers {
    std::shared_ptr<Linear> fc, up, proj;  // up only for swiglu
    bool swiglu = false, gelu_tanh = true;
    Tensor forward(const Tensor& x) const;
};

// Where a norm layer sits, which sets a DyT's alpha0 and gain (config.h).
enum class NormSite { BeforeAttention, Other, Final };

// A norm layer of the configured kind, or nullptr for "none". A DyT starts
// at cfg.dyt_alpha0_at(site is BeforeAttention) and at the gain
// cfg.dyt_final_gamma0 before the head, cfg.dyt_gamma0 elsewhere.
std::shared_ptr<NormLayer> make_norm(const TransformerConfig& cfg, Options opt, NormSite site);

class Block : public Module {
public:
    // dropout_gen: the model's dropout generator (used in training mode when cfg.dropout > 0).
    Block(const TransformerConfig& cfg, int64_t layer_index, Generator& gen, Options opt = {},
          Generator* dropout_gen = nullptr);
    // cache: generation's key/value cache (kv_cache.h), handed to the attention.
    Tensor forward(const Tensor& x, const RopeTables* rope, KVCache* cache = nullptr) const;

    std::shared_ptr<Attention> attn;
    MlpLayers mlp;
    std::shared_ptr<NormLayer> norm_1, norm_2;          // before (pre/sandwich) or after (post/deepnorm) the sublayers
    std::shared_ptr<NormLayer> norm_1_out, norm_2_out;  // sandwich only
    Tensor attn_step, mlp_step;                         // geonorm steps (learnable or constant), shape [1]
    double residual_alpha = 1;                          // deepnorm's alpha (placement.h)

    // Residual tracking (train --diagnostics; analysis/diagnostics.h,
    // residual_ratios): while on, each forward keeps each sublayer's
    // ResidualTerm (nn/placement.h).
    void track_residuals(bool on) { track_residuals_ = on; }
    const ResidualTerm& attn_residual() const { return attn_residual_; }  // empty tensors until a tracked forward ran
    const ResidualTerm& mlp_residual() const { return mlp_residual_; }

private:
    // Residual dropout on a sublayer's output (GPT-2's resid_pdrop), training only.
    Tensor drop(const Tensor& x) const;
    // The placement's view of one sublayer: F, its norms and scalars.
    Sublayer sublayer(std::function<Tensor(const Tensor&)> apply, const std::shared_ptr<NormLayer>& n,
                      const std::shared_ptr<NormLayer>& n_out, const Tensor& step) const;
    TransformerConfig cfg_;
    Generator* dropout_gen_;
    bool track_residuals_ = false;
    mutable ResidualTerm attn_residual_, mlp_residual_;
};

}  // namespace nn
}  // namespace nc
