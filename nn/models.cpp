#include "nn/models.h"

#include <cmath>

#include "autograd/checkpoint.h"
#include "nn/init.h"

namespace nc {
namespace nn {

TransformerModel::TransformerModel(const TransformerConfig& cfg) : cfg_(cfg) { cfg_.validate(); }

void TransformerModel::build(Generator& gen, Options opt) {
    dropout_gen_ = Generator(gen.seed() ^ 0x9E3779B97F4A7C15ull);
    block_list_ = std::make_shared<ModuleList>();
    for (int64_t k = 0; k < cfg_.n_layer; ++k)
        blocks_.push_back(block_list_->push_back(std::make_shared<Block>(cfg_, k, gen, opt, &dropout_gen_)));
    if (has_final_norm(cfg_.placement)) final_norm_ = make_norm(cfg_, opt, NormSite::Final);
}

Tensor TransformerModel::forward(const Tensor&, KVCache&) const {
    fail("forward", "a key/value cache is for generating text, and a vit generates none (only gpt2 and llama do)");
    return Tensor();
}

void TransformerModel::set_precision(DType operand_dtype) {
    if (operand_dtype != kFloat32 && !is_16bit_float(operand_dtype))
        fail("set_precision", std::string("products run in float32, bfloat16 or float16, not ") +
                                  dtype_name(operand_dtype));
    set_linear_operand_dtype(*this, operand_dtype);
    set_attention_operand_dtype(*this, operand_dtype);
    precision_ = operand_dtype;
}

KVCache TransformerModel::make_cache(int64_t B) const {
    KVCache cache;
    cache.layers.resize(blocks_.size());
    cache.capacity = cfg_.block_size;
    cache.batch = B;
    return cache;
}

Tensor TransformerModel::run_blocks(Tensor x, std::vector<Tensor>* stream, KVCache* cache) const {
    int64_t T = x.size(1);
    if (cfg_.placement == Placement::GeoNorm) x = project_to_sphere(x, geonorm_radius(cfg_));  // placement.h
    RopeTables tables;
    if (cfg_.positions == Positions::Rope) {
        int64_t rope_dim = cfg_.rope_dim();
        if (cache) {
            // The new tokens sit at absolute positions length..length+T-1:
            // rows of tables built once for the whole cache.
            const RopeTables& all = cache_rope_tables(*cache, rope_dim, cfg_.rope_theta, x.dtype(), x.device());
            tables = {narrow(all.cos, 0, cache->length, T), narrow(all.sin, 0, cache->length, T)};
        } else {
            tables = rope_tables(T, rope_dim, cfg_.rope_theta, x.dtype(), x.device());
        }
    }
    if (stream) stream->push_back(x);
    const RopeTables* rope = cfg_.positions == Positions::Rope ? &tables : nullptr;
    for (const auto& block : blocks_) {
        if (recompute_ && !cache) {
            // The node keeps x, the block and (by value: cheap handles) the tables.
            RopeTables kept = tables;
            bool training = block->is_training();  // dropout on or off must be the same both times
            std::function<Tensor(const Tensor&)> f = [block, kept, rope, training](const Tensor& in) {
                if (block->is_training() != training)
                    fail("recompute", std::string("the model was switched to ") + (training ? "eval" : "training") +
                                          " mode between the forward pass and backward; the recomputed blocks would differ");
                return block->forward(in, rope ? &kept : nullptr, nullptr);
            };
            // Only dropout draws random numbers; the model must outlive the backward pass.
            x = checkpoint(f, x, block->parameters(), cfg_.dropout > 0 ? &dropout_gen_ : nullptr);
        } else {
            x = block->forward(x, rope, cache);
        }
        if (stream) stream->push_back(x);
    }
    return final_norm_ ? final_norm_->forward(x) : x;
}

void TransformerModel::init_weights(Generator& gen) {
    NoGradGuard no_grad;
    double std = cfg_.init_std;
    for (const auto& block : blocks_) {
        std::vector<std::shared_ptr<Linear>> linears = block->attn->linears();
        for (const auto& l : {block->mlp.fc, block->mlp.up, block->mlp.proj})
            if (l) linears.push_back(l);
        for (const auto& l : linears) {
            if (l->bias.defined()) raw::fill_(l->bias, 0);
            if (cfg_.placement == Placement::DeepNorm) continue;  // DeepNet's own scheme, below
            if (cfg_.family == Family::ViT) xavier_uniform_(l->weight, gen);
            else normal_(l->weight, std, gen);
        }
        if (cfg_.family == Family::GPT2 && cfg_.placement != Placement::DeepNorm) {
            // GPT-2: the projections back into the residual stream get std
            // 0.02/sqrt(2 L), so that the stream's variance after L blocks
            // of two residual additions each stays near its initial value.
            // Every placement but DeepNorm keeps this (GeoNorm and Post-Norm
            // too: it is part of the GPT-2 model, not of a placement).
            double residual_std = std / std::sqrt(2.0 * (double)cfg_.n_layer);
            normal_(block->attn->output_weights()[0], residual_std, gen);
            normal_(block->mlp.proj->weight, residual_std, gen);
        }
        if (cfg_.family == Family::ViT)
            for (const auto& l : {block->mlp.fc, block->mlp.up, block->mlp.proj})
                if (l && l->bias.defined()) normal_(l->bias, 1e-6, gen);  // ViT: MLP biases N(0, 1e-6)
        if (cfg_.placement == Placement::DeepNorm) {  // DeepNet's rule (placement.h)
            std::vector<Tensor> scaled = block->attn->value_weights();
            for (const Tensor& w : block->attn->output_weights()) scaled.push_back(w);
            for (const auto& l : {block->mlp.fc, block->mlp.up, block->mlp.proj})
                if (l) scaled.push_back(l->weight);
            deepnorm_init_(block->attn->query_key_weights(), scaled, cfg_.n_layer, gen);
        }
    }
}

Tensor TransformerModel::make_embed_scale(Options opt) {
    if (cfg_.embed_scale0 <= 0) return Tensor();
    return raw::full({1}, cfg_.embed_scale0, opt.dtype, opt.device);
}

void TransformerModel::init_language_tables(Generator& gen, const Embedding& tokens, const Embedding* positions,
                                            const Linear* head) {
    NoGradGuard no_grad;
    normal_(tokens.weight, cfg_.init_std, gen);
    if (positions) normal_(positions->weight, cfg_.init_std, gen);
    if (head) normal_(head->weight, cfg_.init_std, gen);
}

Tensor TransformerModel::language_forward(const Tensor& ids, const Embedding& tokens, const Embedding* positions,
                                          const Linear* head, std::vector<Tensor>* stream, const char* model,
                                          KVCache* cache) const {
    if (ids.dim() != 2 || ids.dtype() != kInt64)
        fail(model, "expects int64 token ids of shape [B, T], got " + std::string(dtype_name(ids.dtype())) + " " +
                        shape_str(ids.shape()));
    int64_t T = ids.size(1), past = cache ? cache->length : 0;
    if (cache && (cache->layers.size() != blocks_.size() || cache->batch != ids.size(0)))
        fail(model, "the key/value cache was made for another model or batch size (make it with make_cache(" +
                        std::to_string(ids.size(0)) + "))");
    if ((positions || cache) && past + T > cfg_.block_size)
        fail(model, "sequence length " + std::to_string(past + T) + " exceeds the block size " +
                        std::to_string(cfg_.block_size));
    Tensor x = tokens.forward(ids);                                 // [B, T, C]
    if (positions) x = x + narrow(positions->weight, 0, past, T);  // learned positions past..past+T-1
    if (embed_scale_.defined()) x = x * embed_scale_;              // s x, s learnable (config.h)
    Tensor h = run_blocks(x, stream, cache);
    if (cache) cache->length += T;
    // Untied: a separate head. Tied (GPT-2): logits against the token table
    // itself, h E^T, as a linear layer without bias: one GEMM over all B T
    // tokens, and one for E's gradient (a matmul with E^T broadcast over the
    // batch ran B small products, and summed B gradients afterwards).
    return head ? head->forward(h) : linear(h, tokens.weight, Tensor(), precision_);  // [B, T, V]
}

// ---- GPT-2 -------------------------------------------------------------------------

GPT2::GPT2(const TransformerConfig& cfg, Generator& gen, Options opt) : TransformerModel(cfg) {
    wte = register_module("wte", std::make_shared<Embedding>(cfg.vocab_size, cfg.n_embd, gen, opt));
    if (cfg.positions == Positions::Learned)
        wpe = register_module("wpe", std::make_shared<Embedding>(cfg.block_size, cfg.n_embd, gen, opt));
    embed_scale_ = make_embed_scale(opt);
    if (embed_scale_.defined()) register_parameter("embed_scale", embed_scale_);
    build(gen, opt);
    register_module("h", block_list_);
    if (final_norm_) register_module("ln_f", final_norm_);
    if (!cfg.tie_embeddings) lm_head = register_module("lm_head", std::make_shared<Linear>(cfg.n_embd, cfg.vocab_size, false, gen, opt));
    if (opt.random_init) {
        init_weights(gen);
        init_language_tables(gen, *wte, wpe.get(), lm_head.get());
    }
}

Tensor GPT2::forward(const Tensor& ids, std::vector<Tensor>* stream) const {
    return language_forward(ids, *wte, wpe.get(), lm_head.get(), stream, "GPT2");
}

Tensor GPT2::forward(const Tensor& ids, KVCache& cache) const {
    return language_forward(ids, *wte, wpe.get(), lm_head.get(), nullptr, "GPT2", &cache);
}

// ---- Llama -------------------------------------------------------------------------

Llama::Llama(const TransformerConfig& cfg, Generator& gen, Options opt) : TransformerModel(cfg) {
    auto model = register_module("model", std::make_shared<Group>());
    embed_tokens = model->add("embed_tokens", std::make_shared<Embedding>(cfg.vocab_size, cfg.n_embd, gen, opt));
    if (cfg.positions == Positions::Learned)
        embed_positions = model->add("embed_positions", std::make_shared<Embedding>(cfg.block_size, cfg.n_embd, gen, opt));
    embed_scale_ = make_embed_scale(opt);
    if (embed_scale_.defined()) model->add_parameter("embed_scale", embed_scale_);
    build(gen, opt);
    model->add("layers", block_list_);
    if (final_norm_) model->add("norm", final_norm_);
    if (!cfg.tie_embeddings) lm_head = register_module("lm_head", std::make_shared<Linear>(cfg.n_embd, cfg.vocab_size, false, gen, opt));
    if (opt.random_init) {
        init_weights(gen);
        init_language_tables(gen, *embed_tokens, embed_positions.get(), lm_head.get());
    }
}

Tensor Llama::forward(const Tensor& ids, std::vector<Tensor>* stream) const {
    return language_forward(ids, *embed_tokens, embed_positions.get(), lm_head.get(), stream, "Llama");
}

Tensor Llama::forward(const Tensor& ids, KVCache& cache) const {
    return language_forward(ids, *embed_tokens, embed_positions.get(), lm_head.get(), nullptr, "Llama", &cache);
}

// ---- ViT ---------------------------------------------------------------------------

ViT::ViT(const TransformerConfig& cfg, Generator& gen, Options opt) : TransformerModel(cfg) {
    int64_t p = cfg.patch_size, n_patches = (cfg.image_size / p) * (cfg.image_size / p);
    auto vit = register_module("vit", std::make_shared<Group>());
    auto embeddings = vit->add("embeddings", std::make_shared<Group>());
    auto patches = embeddings->add("patch_embeddings", std::make_shared<Group>());
    projection = patches->add("projection", std::make_shared<Linear>(cfg.channels * p * p, cfg.n_embd, true, gen, opt));
    build(gen, opt);
    auto encoder = vit->add("encoder", std::make_shared<Group>());
    encoder->add("layer", block_list_);
    if (final_norm_) vit->add("layernorm", final_norm_);
    classifier = register_module("classifier", std::make_shared<Linear>(cfg.n_embd, cfg.num_classes, true, gen, opt));
    if (opt.random_init) init_weights(gen);
    NoGradGuard no_grad;
    // Class token and head start at zero; positions N(0, 0.02); patches xavier.
    cls_token = raw::zeros({1, 1, cfg.n_embd}, opt.dtype, opt.device);
    // cls_token and position_embeddings are parameters of "vit.embeddings".
    embeddings->add_parameter("cls_token", cls_token);
    if (cfg.positions == Positions::Learned) {
        position_embeddings = raw::zeros({1, n_patches + 1, cfg.n_embd}, opt.dtype, opt.device);
        if (opt.random_init) normal_(position_embeddings, 0.02, gen);
        embeddings->add_parameter("position_embeddings", position_embeddings);
    }
    if (opt.random_init) xavier_uniform_(projection->weight, gen);
    raw::fill_(projection->bias, 0);
    raw::fill_(classifier->weight, 0);
    raw::fill_(classifier->bias, 0);
}

Tensor ViT::patchify(const Tensor& images) const {
    int64_t B = images.size(0), ch = images.size(1), p = cfg_.patch_size, g = cfg_.image_size / p;
    // [B, ch, g, p, g, p] -> [B, g, g, ch, p, p] -> [B, g*g, ch*p*p]
    Tensor t = reshape(images, {B, ch, g, p, g, p});
    return reshape(permute(t, {0, 2, 4, 1, 3, 5}), {B, g * g, ch * p * p});
}

Tensor ViT::forward(const Tensor& images, std::vector<Tensor>* stream) const {
    int64_t size = cfg_.image_size;
    if (images.dim() != 4 || images.size(1) != cfg_.channels || images.size(2) != size || images.size(3) != size)
        fail("ViT", "expects images [B, " + std::to_string(cfg_.channels) + ", " + std::to_string(size) + ", " +
                        std::to_string(size) + "], got " + shape_str(images.shape()));
    int64_t B = images.size(0);
    Tensor x = projection->forward(patchify(images));                         // [B, N, C]
    x = cat({expand(cls_token, {B, 1, cfg_.n_embd}), x}, 1);                 // [B, N + 1, C]
    if (position_embeddings.defined()) x = x + position_embeddings;
    Tensor h = run_blocks(x, stream);
    return classifier->forward(squeeze(narrow(h, 1, 0, 1), 1));  // the class token's output -> [B, classes]
}

// ---- parameter counts -----------------------------------------------------------------

double training_flops_per_token(const TransformerConfig& c, int64_t T) {
    double N = (double)count_parameters(c);
    if (c.positions == Positions::Learned)
        N -= c.family == Family::ViT ? (double)(((c.image_size / c.patch_size) * (c.image_size / c.patch_size) + 1) * c.n_embd)
                                     : (double)(c.block_size * c.n_embd);
    // An untied token table is only looked up; tied, it is also the head's
    // matrix, whose product is counted through it.
    if (c.family != Family::ViT && !c.tie_embeddings) N -= (double)(c.vocab_size * c.n_embd);
    return 6.0 * N + 12.0 * (double)c.n_layer * (double)T * (double)c.n_embd;
}

std::shared_ptr<TransformerModel> make_model(const TransformerConfig& cfg, Generator& gen, Options opt) {
    switch (cfg.family) {
        case Family::GPT2: return std::make_shared<GPT2>(cfg, gen, opt);
        case Family::Llama: return std::make_shared<Llama>(cfg, gen, opt);
        case Family::ViT: return std::make_shared<ViT>(cfg, gen, opt);
    }
    return nullptr;
}

int64_t count_parameters(const TransformerConfig& c) {
    int64_t C = c.n_embd, kv = c.kv_heads() * c.head_dim(), b = c.bias ? 1 : 0;
    auto linear = [&](int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); };
    int64_t norm = c.norm == NormKind::None ? 0
                   : c.norm == NormKind::RMSNorm ? C
                   : c.norm == NormKind::DyT ? 1 + C + b * C
                   : C + b * C;
    int64_t attention = linear(C, c.query_width(), b) + linear(C, c.key_width(), b) + linear(C, kv, b) + linear(C, C, b);
    // lambda's four vectors; the official kind also has its per-head RMSNorm gain (2 dh).
    if (c.attention == AttentionKind::Differential) attention += 4 * (c.head_dim() / 2) + c.head_dim();
    if (c.attention == AttentionKind::DifferentialRegime) attention += 4 * c.head_dim();
    bool swiglu = c.mlp == MlpKind::SwiGlu;
    int64_t hidden = c.mlp_hidden > 0 ? c.mlp_hidden : swiglu ? swiglu_hidden(C, c.swiglu_multiple) : 4 * C;
    int64_t mlp = linear(C, hidden, b) * (swiglu ? 2 : 1) + linear(hidden, C, b);
    int64_t norms_per_block = c.placement == Placement::Sandwich ? 4
                              : c.placement == Placement::GeoNorm ? (c.geo_sublayer_norm ? 2 : 0)
                                                                  : 2;
    int64_t steps = c.placement == Placement::GeoNorm && c.geo_learnable_step ? 2 : 0;
    int64_t total = c.n_layer * (attention + mlp + norms_per_block * norm + steps);
    if (has_final_norm(c.placement)) total += norm;
    if (c.family == Family::ViT) {
        int64_t n_patches = (c.image_size / c.patch_size) * (c.image_size / c.patch_size);
        total += linear(c.channels * c.patch_size * c.patch_size, C, true) + C;  // projection + class token
        if (c.positions == Positions::Learned) total += (n_patches + 1) * C;
        total += linear(C, c.num_classes, true);
    } else {
        total += c.vocab_size * C;
        if (c.positions == Positions::Learned) total += c.block_size * C;
        if (!c.tie_embeddings) total += C * c.vocab_size;
        if (c.embed_scale0 > 0) total += 1;
    }
    return total;
}

}  // namespace nn
}  // namespace nc
