// block.h — one transformer block whose residual/normalization placement is
// a configuration (reference section 2; tutorial 4):
//
//   pre        x = x + Attn(N1(x));            x = x + MLP(N2(x))         (+ final norm)
//   post       x = N1(x + Attn(x));            x = N2(x + MLP(x))
//   sandwich   x = x + N1o(Attn(N1(x)));       x = x + N2o(MLP(N2(x)))    (+ final norm)
//   deepnorm   x = N1(alpha x + Attn(x));      x = N2(alpha x + MLP(x)),  alpha = (2L)^(1/4)
//   geonorm    x = geo(x, Attn(x), a_k);       x = geo(x, MLP(x), a_k)    (+ final norm)
//
// N is the configured norm (layernorm, rmsnorm, dyt, or none = identity with
// no parameters). geo is the geodesic update (autograd/ops_nn.h) with the
// step a_k of the decay schedule for block k.
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

namespace nc {
namespace nn {

// The feed-forward part: gelu (fc -> GELU -> proj) or swiglu
// (proj(silu(fc x) * up x)).
struct MlpLayers {
    std::shared_ptr<Linear> fc, up, proj;  // up only for swiglu
    bool swiglu = false, gelu_tanh = true;
    Tensor forward(const Tensor& x) const;
};

// A norm layer of the configured kind, or nullptr for "none".
std::shared_ptr<NormLayer> make_norm(const TransformerConfig& cfg, Options opt);

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
    double residual_alpha = 1;                          // deepnorm's alpha

    // Residual tracking (train --diagnostics; analysis/diagnostics.h,
    // residual_ratios): while on, each forward keeps, detached, what each
    // sublayer adds to the stream and the stream term it is added to, with
    // the scalars the placement multiplies them by (DeepNorm's alpha on the
    // stream, GeoNorm's step a_k on the update before the exponential map).
    struct ResidualTerm {
        Tensor branch, stream;
        double branch_scale = 1, stream_scale = 1;
    };
    void track_residuals(bool on) { track_residuals_ = on; }
    const ResidualTerm& attn_residual() const { return attn_residual_; }  // empty tensors until a tracked forward ran
    const ResidualTerm& mlp_residual() const { return mlp_residual_; }

private:
    Tensor norm(const std::shared_ptr<NormLayer>& n, const Tensor& x) const { return n ? n->forward(x) : x; }
    // Residual dropout on a sublayer's output (GPT-2's resid_pdrop), training only.
    Tensor drop(const Tensor& x) const;
    Tensor bound_angle(const Tensor& x, const Tensor& u, const Tensor& step) const;  // geo_max_angle
    // Keeps one sublayer's terms when tracking is on; returns branch.
    const Tensor& keep(ResidualTerm& term, const Tensor& branch, const Tensor& stream, double branch_scale,
                       double stream_scale) const;
    TransformerConfig cfg_;
    Generator* dropout_gen_;
    bool track_residuals_ = false;
    mutable ResidualTerm attn_residual_, mlp_residual_;
};

}  // namespace nn
}  // namespace nc
