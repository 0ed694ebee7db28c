#include "nn/block.h"

#include <cmath>

namespace nc {
namespace nn {

Tensor MlpLayers::forward(const Tensor& x) const {
    if (swiglu) return proj->forward(nc::swiglu(fc->forward(x), up->forward(x)));
    return proj->forward(gelu(fc->forward(x), gelu_tanh));
}

std::shared_ptr<NormLayer> make_norm(const TransformerConfig& cfg, Options opt) {
    switch (cfg.norm) {
        case NormKind::LayerNorm: return std::make_shared<LayerNorm>(cfg.n_embd, cfg.norm_eps, true, cfg.bias, opt);
        case NormKind::RMSNorm: return std::make_shared<RMSNorm>(cfg.n_embd, cfg.norm_eps, true, opt);
        case NormKind::DyT: return std::make_shared<DyT>(cfg.n_embd, cfg.dyt_alpha0, cfg.bias, opt);
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
    Placement place = cfg.placement;
    // Norms exist only where the placement puts them (geonorm has none in the block).
    if (place != Placement::GeoNorm) {
        norm_1 = make_norm(cfg, opt);
        if (norm_1) register_module(names.norm_1, norm_1);
    }
    attn = register_module(names.attn, std::make_shared<Attention>(cfg, k, gen, opt));
    if (place == Placement::Sandwich) {
        norm_1_out = make_norm(cfg, opt);
        if (norm_1_out) register_module(names.norm_1_out, norm_1_out);
    }
    if (place != Placement::GeoNorm) {
        norm_2 = make_norm(cfg, opt);
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
    if (place == Placement::Sandwich) {
        norm_2_out = make_norm(cfg, opt);
        if (norm_2_out) register_module(names.norm_2_out, norm_2_out);
    }
    if (place == Placement::DeepNorm) residual_alpha = deepnorm_alpha(cfg.n_layer);
    if (place == Placement::GeoNorm) {
        double a_k = geonorm_step(cfg.decay, cfg.geo_step, k, cfg.n_layer);
        attn_step = raw::full({1}, a_k, opt.dtype, opt.device);
        mlp_step = raw::full({1}, a_k, opt.dtype, opt.device);
        if (cfg.geo_learnable_step) {
            register_parameter("attn_step", attn_step);
            register_parameter("mlp_step", mlp_step);
        }
        if (cfg.geo_sublayer_norm) {  // optional: normalize what the sublayers read
            norm_1 = make_norm(cfg, opt);
            norm_2 = make_norm(cfg, opt);
            if (norm_1) register_module(names.norm_1, norm_1);
            if (norm_2) register_module(names.norm_2, norm_2);
        }
    }
}

// The geodesic update turns x by the angle theta = a |P_x(u)| / |x|, and
// nothing stops theta from reaching pi/2, where cos(theta) = 0 and the
// update forgets x (and its gradient stops flowing back through x), or
// from wrapping around the sphere. With geo_max_angle = m > 0 the update
// direction u is rescaled per token so that the angle becomes
// m tanh(theta / m): unchanged for small angles, never more than m, and
// smooth (a hard clamp would zero the gradient wherever it bites). P_x is
// linear, so scaling u by r scales theta by r: r = tanh(t) / t, t = theta/m.
Tensor Block::bound_angle(const Tensor& x, const Tensor& u, const Tensor& step) const {
    double m = cfg_.geo_max_angle;
    if (m <= 0) return u;
    Tensor s = sum(x * x, {-1}, true);                    // |x|^2
    Tensor v = u - x * (sum(u * x, {-1}, true) / s);     // P_x(u), the tangent part
    // t = theta / m; the 1e-12 keeps sqrt's derivative finite when v = 0.
    Tensor t = sqrt(sum(v * v, {-1}, true) / s + 1e-12) * abs(step) * (1.0 / m);
    // tanh(t)/t -> 1 as t -> 0; shifting t by 1e-6 avoids 0/0 and changes r by < 1e-12.
    Tensor shifted = t + 1e-6;
    return u * (tanh(shifted) / shifted);
}

Tensor Block::drop(const Tensor& x) const {
    if (cfg_.dropout <= 0 || !is_training() || !dropout_gen_) return x;
    return dropout(x, cfg_.dropout, true, *dropout_gen_);
}

const Tensor& Block::keep(ResidualTerm& term, const Tensor& branch, const Tensor& stream, double branch_scale,
                          double stream_scale) const {
    if (track_residuals_) term = {branch.detach(), stream.detach(), branch_scale, stream_scale};
    return branch;
}

Tensor Block::forward(const Tensor& x, const RopeTables* rope, KVCache* cache) const {
    ResidualTerm& ta = attn_residual_;
    ResidualTerm& tm = mlp_residual_;
    switch (cfg_.placement) {
        case Placement::Pre: {
            Tensor h = x + keep(ta, drop(attn->forward(norm(norm_1, x), rope, cache)), x, 1, 1);
            return h + keep(tm, drop(mlp.forward(norm(norm_2, h))), h, 1, 1);
        }
        case Placement::Post: {
            Tensor h = norm(norm_1, x + keep(ta, drop(attn->forward(x, rope, cache)), x, 1, 1));
            return norm(norm_2, h + keep(tm, drop(mlp.forward(h)), h, 1, 1));
        }
        case Placement::Sandwich: {
            Tensor h = x + keep(ta, drop(norm(norm_1_out, attn->forward(norm(norm_1, x), rope, cache))), x, 1, 1);
            return h + keep(tm, drop(norm(norm_2_out, mlp.forward(norm(norm_2, h)))), h, 1, 1);
        }
        case Placement::DeepNorm: {
            double alpha = residual_alpha;
            Tensor h = norm(norm_1, x * alpha + keep(ta, drop(attn->forward(x, rope, cache)), x, 1, alpha));
            return norm(norm_2, h * alpha + keep(tm, drop(mlp.forward(h)), h, 1, alpha));
        }
        case Placement::GeoNorm: {
            // The geodesic update replaces "add, then normalize": x stays on its sphere.
            Tensor a1 = reshape(attn_step, {}), a2 = reshape(mlp_step, {});
            double s1 = track_residuals_ ? attn_step.item() : 1, s2 = track_residuals_ ? mlp_step.item() : 1;
            Tensor u1 = keep(ta, bound_angle(x, drop(attn->forward(norm(norm_1, x), rope, cache)), a1), x, s1, 1);
            Tensor h = geodesic_update(x, u1, a1);
            Tensor u2 = keep(tm, bound_angle(h, drop(mlp.forward(norm(norm_2, h))), a2), h, s2, 1);
            return geodesic_update(h, u2, a2);
        }
    }
    return x;
}

}  // namespace nn
}  // namespace nc
