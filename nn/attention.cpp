#include "nn/attention.h"

#include "nn/init.h"

namespace nc {
namespace nn {

Attention::Attention(const TransformerConfig& cfg, int64_t layer_index, Generator& gen, Options opt)
    : cfg_(cfg), layer_index_(layer_index) {
    int64_t C = cfg.n_embd, kv = cfg.kv_heads() * cfg.head_dim(), qw = cfg.query_width(), kw = cfg.key_width();
    switch (cfg.family) {
        case Family::GPT2:
            qkv_ = register_module("c_attn", std::make_shared<Linear>(C, qw + kw + kv, cfg.bias, gen, opt));
            out_ = register_module("c_proj", std::make_shared<Linear>(C, C, cfg.bias, gen, opt));
            break;
        case Family::Llama:
            q_ = register_module("q_proj", std::make_shared<Linear>(C, qw, cfg.bias, gen, opt));
            k_ = register_module("k_proj", std::make_shared<Linear>(C, kw, cfg.bias, gen, opt));
            v_ = register_module("v_proj", std::make_shared<Linear>(C, kv, cfg.bias, gen, opt));
            out_ = register_module("o_proj", std::make_shared<Linear>(C, C, cfg.bias, gen, opt));
            break;
        case Family::ViT: {
            auto self = register_module("attention", std::make_shared<Group>());
            q_ = self->add("query", std::make_shared<Linear>(C, qw, cfg.bias, gen, opt));
            k_ = self->add("key", std::make_shared<Linear>(C, kw, cfg.bias, gen, opt));
            v_ = self->add("value", std::make_shared<Linear>(C, kv, cfg.bias, gen, opt));
            auto output = register_module("output", std::make_shared<Group>());
            out_ = output->add("dense", std::make_shared<Linear>(C, C, cfg.bias, gen, opt));
            break;
        }
    }
    if (cfg.differential()) {
        // Sub-heads of size D_sub (C / H / 2 official, C / H regime); lambda's
        // vectors live in R^D_sub, init N(0, 0.1^2).
        bool regime = cfg.attention == AttentionKind::DifferentialRegime;
        int64_t D_sub = regime ? cfg.head_dim() : cfg.head_dim() / 2;
        auto lambda_vector = [&](const char* name) {
            Tensor t = raw::zeros({D_sub}, opt.dtype, opt.device);
            if (opt.random_init) normal_(t, 0.1, gen);
            return register_parameter(name, t);
        };
        lambda_q1_ = lambda_vector("lambda_q1");
        lambda_k1_ = lambda_vector("lambda_k1");
        lambda_q2_ = lambda_vector("lambda_q2");
        lambda_k2_ = lambda_vector("lambda_k2");
        if (regime) {
            head_norm_ = std::make_shared<LayerNorm>(D_sub, 1e-5, /*affine=*/false, /*has_bias=*/false, opt);
            lambda_init = diff_lambda_init(layer_index + 1);
        } else {
            subln_ = register_module("subln", std::make_shared<RMSNorm>(2 * D_sub, 1e-5, true, opt));
            lambda_init = diff_lambda_init(layer_index);
        }
    }
}

std::vector<std::shared_ptr<Linear>> Attention::linears() const {
    std::vector<std::shared_ptr<Linear>> all;
    for (const auto& l : {qkv_, q_, k_, v_, out_})
        if (l) all.push_back(l);
    return all;
}

std::vector<Tensor> Attention::output_weights() const { return {out_->weight}; }

std::vector<Tensor> Attention::value_weights() const {
    if (v_) return {v_->weight};
    // The fused projection's rows are [q; k; v]: the value rows are the last kv.
    int64_t kv = cfg_.kv_heads() * cfg_.head_dim();
    return {raw::narrow(qkv_->weight, 0, cfg_.query_width() + cfg_.key_width(), kv)};
}

std::vector<Tensor> Attention::query_key_weights() const {
    if (q_) return {q_->weight, k_->weight};
    int64_t qw = cfg_.query_width();
    return {raw::narrow(qkv_->weight, 0, 0, qw), raw::narrow(qkv_->weight, 0, qw, cfg_.key_width())};
}

Tensor Attention::split_heads(const Tensor& t, int64_t heads, int64_t size) const {
    return transpose(view(t, {t.size(0), t.size(1), heads, size}), 1, 2);
}

// Repeats each key/value head `groups` times: [B, Hkv, T, D] -> [B, Hkv*groups, T, D].
// expand + reshape are differentiable, so the backward sums the repeated heads.
static Tensor repeat_kv(const Tensor& t, int64_t groups) {
    if (groups == 1) return t;
    Shape shape = t.shape();
    Tensor expanded = expand(unsqueeze(t, 2), {shape[0], shape[1], groups, shape[2], shape[3]});
    return reshape(expanded, {shape[0], shape[1] * groups, shape[2], shape[3]});
}

bool Attention::use_cache(Tensor& k, Tensor& v, KVCache* cache) const {
    if (!cache) return cfg_.causal;
    if (is_grad_enabled()) fail("attention", "the key/value cache is for inference: run it under NoGradGuard");
    if (!cfg_.causal) fail("attention", "a key/value cache needs a causal model (later tokens would change earlier keys)");
    int64_t past = cache->length, T = k.size(2);
    if (past > 0 && T != 1)
        fail("attention", "a non-empty key/value cache takes one token at a time, got " + std::to_string(T) +
                              " after " + std::to_string(past) + " cached (reset() it to start over)");
    // Mixed precision rounds k and v to 16 bits for the attention op; the
    // cache keeps them rounded (in float32), so that a one-token step
    // (decode.h) reads them as they are. The op rounds them again, which
    // changes nothing: a rounded number is its own rounding.
    if (is_16bit_float(operand_dtype)) {
        k = raw::to_dtype(raw::to_dtype(k, operand_dtype), k.dtype());
        v = raw::to_dtype(raw::to_dtype(v, operand_dtype), v.dtype());
    }
    CachedKV all = append_to_cache(cache->layers.at(layer_index_), k, v, past, cache->capacity);
    k = all.k;
    v = all.v;
    // The prompt (past = 0) is causal as usual; one new token sees every
    // cached key, all of which are in its past.
    return past == 0;
}

Tensor Attention::forward(const Tensor& x, const RopeTables* rope, KVCache* cache) const {
    if (x.dim() != 3 || x.size(2) != cfg_.n_embd)
        fail("attention", "expects [B, T, " + std::to_string(cfg_.n_embd) + "], got " + shape_str(x.shape()));
    Tensor q, k, v;
    if (qkv_) {
        int64_t qw = cfg_.query_width(), kw = cfg_.key_width(), kv = cfg_.kv_heads() * cfg_.head_dim();
        Tensor fused = qkv_->forward(x);
        // GPT-2's usual case: q, k and v used as the projection made them, so
        // one op can take `fused` whole and give its gradient in one piece.
        // Not when RoPE rotates q and k first, a cache appends k and v,
        // grouped-query heads repeat k and v, or the differential variant
        // splits the heads.
        bool plain = !cfg_.differential() && !rope && !cache && cfg_.kv_heads() == cfg_.n_head;
        if (plain) return out_->forward(packed_qkv_attention(fused, cfg_.n_head, cfg_.causal, operand_dtype));
        q = narrow(fused, 2, 0, qw);
        k = narrow(fused, 2, qw, kw);
        v = narrow(fused, 2, qw + kw, kv);
    } else {
        q = q_->forward(x);
        k = k_->forward(x);
        v = v_->forward(x);
    }
    Tensor y = cfg_.differential() ? differential(q, k, v, rope, cache) : standard(q, k, v, rope, cache);
    return out_->forward(y);
}

Tensor Attention::standard(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const RopeTables* rope,
                           KVCache* cache) const {
    int64_t B = q_in.size(0), T = q_in.size(1), H = cfg_.n_head, Hkv = cfg_.kv_heads(), D = cfg_.head_dim();
    Tensor q = split_heads(q_in, H, D), k = split_heads(k_in, Hkv, D), v = split_heads(v_in, Hkv, D);
    if (rope) {
        q = apply_rope(q, *rope);
        k = apply_rope(k, *rope);
    }
    bool causal = use_cache(k, v, cache);  // the cache holds the Hkv heads, repeated after
    Tensor y = scaled_dot_product_attention(q, repeat_kv(k, H / Hkv), repeat_kv(v, H / Hkv), causal, 0, operand_dtype);
    return reshape(transpose(y, 1, 2), {B, T, H * D});  // [B, H, T, D] -> [B, T, C]
}

Tensor Attention::differential(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const RopeTables* rope,
                               KVCache* cache) const {
    // q, k: 2H sub-heads of size D_sub; v: H heads of size C / H (2 D_sub official,
    // D_sub regime). Sub-heads 2h and 2h+1 form the two softmax maps of head h.
    bool regime = cfg_.attention == AttentionKind::DifferentialRegime;
    int64_t B = q_in.size(0), T = q_in.size(1), H = cfg_.n_head, D = cfg_.head_dim(), D_sub = regime ? D : D / 2;
    Tensor q = split_heads(q_in, 2 * H, D_sub), k = split_heads(k_in, 2 * H, D_sub), v = split_heads(v_in, H, D);
    if (rope) {
        q = apply_rope(q, *rope);
        k = apply_rope(k, *rope);
    }
    bool causal = use_cache(k, v, cache);
    auto pair = [&](const Tensor& t, int64_t which) {  // [B, 2H, S, D_sub] -> sub-head `which` of each pair
        return squeeze(narrow(reshape(t, {B, H, 2, t.size(2), D_sub}), 2, which, 1), 2);
    };
    Tensor a1 = scaled_dot_product_attention(pair(q, 0), pair(k, 0), v, causal, 0, operand_dtype);
    Tensor a2 = scaled_dot_product_attention(pair(q, 1), pair(k, 1), v, causal, 0, operand_dtype);
    // lambda = exp(<lq1, lk1>) - exp(<lq2, lk2>) + lambda_init, one scalar per layer.
    Tensor lambda = exp(sum(lambda_q1_ * lambda_k1_)) - exp(sum(lambda_q2_ * lambda_k2_)) + lambda_init;
    // Per head and position: RMSNorm over 2 D_sub (official), or (o - mean) / std over D_sub (regime).
    Tensor o = (regime ? head_norm_->forward(a1 - lambda * a2) : subln_->forward(a1 - lambda * a2)) * (1.0 - lambda_init);
    return reshape(transpose(o, 1, 2), {B, T, H * D});
}

void set_attention_operand_dtype(Module& root, DType dtype) {
    if (auto* attention = dynamic_cast<Attention*>(&root)) attention->operand_dtype = dtype;
    for (const auto& child : root.children()) set_attention_operand_dtype(*child.second, dtype);
}

}  // namespace nn
}  // namespace nc
