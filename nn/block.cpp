#include "nn/block.h"

namespace nc {
namespace nn {

Tensor MlpLayers::forward(const Tensor& x) const {
    if (swiglu) return proj->forward(nc::swiglu(fc->forward(x), up->forward(x)));
    return proj->forward(gelu(fc->forward(x), gelu_tanh));
}

std::shared_ptr<NormLayer> make_norm(const TransformerConfig& cfg, Options opt, NormSite site) {
    switch (cfg.norm) {
        case NormKind::LayerNorm: return std::make_shared<LayerNorm>(cfg.n_embd, cfg.norm_eps, true, cfg.bias, opt);
        case NormKind::RMSNorm: return std::make_shared<RMSNorm>(cfg.n_embd, cfg.norm_eps, true, opt);
        case NormKind::DyT:
            return std::make_shared<DyT>(cfg.n_embd, cfg.dyt_alpha0_at(site == NormSite::BeforeAttention), cfg.bias,
                                         opt, site == NormSite::Final ? cfg.dyt_final_gamma0 : cfg.dyt_gamma0);
        case NormKind::None: return nullptr;
    }
    return nullptr;
}

// The names of a block's parts in each family.
struct BlockNames {
    const char *norm_1, *attn, *norm_2, *norm_1_out, *norm_2_out;
};
static BlockNames names_for(Family family) {
    switch (family) {
        case Family::GPT2: return {"ln_1", "attn", "ln_2", "ln_attn_out", "ln_mlp_out"};
        case Family::Llama:
            return {"input_layernorm", "self_attn", "post_attention_layernorm", "attn_output_layernorm",
                    "mlp_output_layernorm"};
        case Family::ViT:
            return {"layernorm_before", "attention", "layernorm_after", "layernorm_attention_output",
                    "layernorm_mlp_output"};
    }
    return {};
}

Block::Block(const TransformerConfig& cfg, int64_t k, Generator& gen, Options opt, Generator* dropout_gen)
    : cfg_(cfg), dropout_gen_(dropout_gen) {
    BlockNames names = names_for(cfg.family);
    // Norms exist only where the placement puts them (placement.h).
    // GeoNorm's optional sublayer norms are registered last, below, which
    // keeps its parameters' order (and state dicts) as they always were.
    bool sublayer_norms = has_sublayer_norms(cfg) && cfg.placement != Placement::GeoNorm;
    bool output_norms = has_output_norms(cfg.placement);
    if (sublayer_norms) {
        norm_1 = make_norm(cfg, opt, NormSite::BeforeAttention);
        if (norm_1) register_module(names.norm_1, norm_1);
    }
    attn = register_module(names.attn, std::make_shared<Attention>(cfg, k, gen, opt));
    if (output_norms) {
        norm_1_out = make_norm(cfg, opt, NormSite::Other);
        if (norm_1_out) register_module(names.norm_1_out, norm_1_out);
    }
    if (sublayer_norms) {
        norm_2 = make_norm(cfg, opt, NormSite::Other);
        if (norm_2) register_module(names.norm_2, norm_2);
    }

    // The MLP's linear layers, registered under the family's names.
    int64_t C = cfg.n_embd;
    mlp.swiglu = cfg.mlp == MlpKind::SwiGlu;
    mlp.gelu_tanh = cfg.gelu_tanh;
    int64_t hidden = cfg.mlp_hidden > 0 ? cfg.mlp_hidden : mlp.swiglu ? swiglu_hidden(C, cfg.swiglu_multiple) : 4 * C;
    auto linear = [&](int64_t in, int64_t out) { return std::make_shared<Linear>(in, out, cfg.bias, gen, opt); };
    switch (cfg.family) {
        case Family::GPT2: {
            auto group = register_module("mlp", std::make_shared<Group>());
            mlp.fc = group->add("c_fc", linear(C, hidden));
            if (mlp.swiglu) mlp.up = group->add("c_fc2", linear(C, hidden));
            mlp.proj = group->add("c_proj", linear(hidden, C));
            break;
        }
        case Family::Llama: {
            auto group = register_module("mlp", std::make_shared<Group>());
            if (mlp.swiglu) {
                mlp.fc = group->add("gate_proj", linear(C, hidden));
                mlp.up = group->add("up_proj", linear(C, hidden));
            } else {
                mlp.fc = group->add("up_proj", linear(C, hidden));
            }
            mlp.proj = group->add("down_proj", linear(hidden, C));
            break;
        }
        case Family::ViT: {
            auto intermediate = register_module("intermediate", std::make_shared<Group>());
            mlp.fc = intermediate->add("dense", linear(C, hidden));
            if (mlp.swiglu) mlp.up = intermediate->add("up", linear(C, hidden));
            auto output = register_module("output", std::make_shared<Group>());
            mlp.proj = output->add("dense", linear(hidden, C));
            break;
        }
    }
    if (output_norms) {
        norm_2_out = make_norm(cfg, opt, NormSite::Other);
        if (norm_2_out) register_module(names.norm_2_out, norm_2_out);
    }
    if (cfg.placement == Placement::DeepNorm) residual_alpha = deepnorm_alpha(cfg.n_layer);
    if (cfg.placement == Placement::GeoNorm) {
        double a_k = geonorm_step(cfg.decay, cfg.geo_step, k, cfg.n_layer);
        attn_step = raw::full({1}, a_k, opt.dtype, opt.device);
        mlp_step = raw::full({1}, a_k, opt.dtype, opt.device);
        if (cfg.geo_learnable_step) {
            register_parameter("attn_step", attn_step);
            register_parameter("mlp_step", mlp_step);
        }
        if (has_sublayer_norms(cfg)) {
            norm_1 = make_norm(cfg, opt, NormSite::BeforeAttention);
            norm_2 = make_norm(cfg, opt, NormSite::Other);
            if (norm_1) register_module(names.norm_1, norm_1);
            if (norm_2) register_module(names.norm_2, norm_2);
        }
    }
}

Tensor Block::drop(const Tensor& x) const {
    if (cfg_.dropout <= 0 || !is_training() || !dropout_gen_) return x;
    return dropout(x, cfg_.dropout, true, *dropout_gen_);
}

Sublayer Block::sublayer(std::function<Tensor(const Tensor&)> apply, const std::shared_ptr<NormLayer>& n,
                         const std::shared_ptr<NormLayer>& n_out, const Tensor& step) const {
    Sublayer s;
    s.apply = std::move(apply);
    s.drop = [this](const Tensor& x) { return drop(x); };
    s.norm = n.get();
    s.norm_out = n_out.get();
    s.alpha = residual_alpha;
    s.step = step;
    s.max_angle = cfg_.geo_max_angle;
    return s;
}

Tensor Block::forward(const Tensor& x, const RopeTables* rope, KVCache* cache) const {
    Sublayer attention = sublayer([&](const Tensor& in) { return attn->forward(in, rope, cache); }, norm_1, norm_1_out,
                                  attn_step);
    Sublayer feed_forward = sublayer([&](const Tensor& in) { return mlp.forward(in); }, norm_2, norm_2_out, mlp_step);
    Tensor h = residual_step(cfg_.placement, x, attention, track_residuals_ ? &attn_residual_ : nullptr);
    return residual_step(cfg_.placement, h, feed_forward, track_residuals_ ? &mlp_residual_ : nullptr);
}

}  // namespace nn
}  // namespace nc
