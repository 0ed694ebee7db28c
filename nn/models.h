// models.h — GPT-2, Llama-style and ViT, all built from the configurable
// Block (block.h), so each accepts every norm/placement/attention/MLP/position
// combination of TransformerConfig.
//
//   GPT2  ids [B, T] -> logits [B, T, V]; names wte, wpe, h.N.*, ln_f
//         (lm_head.weight only when the head is untied; tied: logits = h wte^T)
//   Llama ids [B, T] -> logits [B, T, V]; names model.embed_tokens,
//         model.layers.N.*, model.norm, lm_head (model.embed_positions with
//         learned positions)
//   ViT   images [B, channels, H, W] -> logits [B, classes]; names
//         vit.embeddings.{cls_token, position_embeddings,
//         patch_embeddings.projection}, vit.encoder.layer.N.*, vit.layernorm,
//         classifier
//
// The final norm exists for the placements that leave the stream
// unnormalized (pre, sandwich, geonorm); post and deepnorm end with a norm
// already. GeoNorm first projects each embedded token onto the sphere of
// radius sqrt(C) (or cfg.geo_radius).
#pragma once

#include "nn/block.h"

namespace nc {
namespace nn {

class TransformerModel : public Module {
public:
    explicit TransformerModel(const TransformerConfig& cfg);
    TransformerModel(const TransformerModel&) = delete;  // blocks point at this model's dropout generator
    TransformerModel& operator=(const TransformerModel&) = delete;
    const TransformerConfig& config() const { return cfg_; }
    // The forward pass: GPT-2 and Llama ids [B, T] (int64) -> logits
    // [B, T, V]; ViT images [B, ch, H, W] -> logits [B, classes]. `stream`,
    // if given, receives the residual stream entering block 0 and after
    // every block (L + 1 tensors), for diagnostics and chapter 4.
    virtual Tensor forward(const Tensor& input, std::vector<Tensor>* stream = nullptr) const = 0;
    // Language models: ids [B, T] following the cache's tokens -> their
    // logits [B, T, V]; the cache grows by T (generation; kv_cache.h). A ViT
    // generates nothing: it throws.
    virtual Tensor forward(const Tensor& ids, KVCache& cache) const;
    const std::vector<std::shared_ptr<Block>>& blocks() const { return blocks_; }
    // The norm after the last block (nullptr where the placement has none).
    const std::shared_ptr<NormLayer>& final_norm() const { return final_norm_; }
    // Dropout's random stream (seeded from the init generator); a training
    // checkpoint saves its position so a resumed run drops the same units.
    Generator& dropout_generator() { return dropout_gen_; }
    // An empty key/value cache for generating B sequences (kv_cache.h).
    KVCache make_cache(int64_t B = 1) const;
    // Activation recomputation (train --recompute; autograd/checkpoint.h):
    // while on, each block keeps only its input between the forward and the
    // backward pass and runs its forward again during backward. The
    // gradients are the same, bit for bit; a step costs one more forward of
    // the blocks. The model must outlive the backward pass of a loss it
    // computed, and stay in the same (training or eval) mode until then.
    void set_recompute(bool on) { recompute_ = on; }
    bool recompute() const { return recompute_; }
    // Mixed precision (train --precision; tensor/cpu/gemm_16bit.h): every
    // linear layer, the tied head included, rounds its operands to
    // `operand_dtype` (kBFloat16 or kFloat16) and sums in float32, and every
    // attention rounds q, k and v (kept so for backward); kFloat32 turns it
    // off. Everything else (norms, softmax, the loss, the optimizer and the
    // weights themselves) stays float32.
    void set_precision(DType operand_dtype);
    DType precision() const { return precision_; }

protected:
    // Builds the blocks and the final norm; the subclass registers them.
    void build(Generator& gen, Options opt);
    // Embedded tokens x [B, T, C] -> the final (normalized) stream [B, T, C].
    // `stream`, if given, receives the residual stream entering block 0 and
    // after every block (L + 1 tensors), for diagnostics and chapter 4.
    // With a cache, x holds the tokens after the cached ones (kv_cache.h).
    Tensor run_blocks(Tensor x, std::vector<Tensor>* stream, KVCache* cache = nullptr) const;
    // Family-specific initialization, then DeepNet's beta when placement = deepnorm.
    void init_weights(Generator& gen);
    // The language models' shared parts: N(0, init_std) for the tables and
    // head, and ids -> embeddings (+ positions) -> blocks -> logits.
    void init_language_tables(Generator& gen, const Embedding& tokens, const Embedding* positions, const Linear* head);
    Tensor language_forward(const Tensor& ids, const Embedding& tokens, const Embedding* positions, const Linear* head,
                            std::vector<Tensor>* stream, const char* model, KVCache* cache = nullptr) const;

    // The learnable scalar on the embeddings (cfg.embed_scale0 > 0), else
    // undefined; the subclass registers it under its family's name.
    Tensor make_embed_scale(Options opt);

    TransformerConfig cfg_;
    Tensor embed_scale_;
    std::shared_ptr<ModuleList> block_list_;
    std::vector<std::shared_ptr<Block>> blocks_;
    std::shared_ptr<NormLayer> final_norm_;
    mutable Generator dropout_gen_;  // forward (const) draws from it through the blocks
    bool recompute_ = false;
    DType precision_ = kFloat32;
};

class GPT2 : public TransformerModel {
public:
    GPT2(const TransformerConfig& cfg, Generator& gen, Options opt = {});
    Tensor forward(const Tensor& ids, std::vector<Tensor>* stream = nullptr) const override;
    Tensor forward(const Tensor& ids, KVCache& cache) const override;
    std::shared_ptr<Embedding> wte, wpe;
    std::shared_ptr<Linear> lm_head;  // only when !tie_embeddings
};

class Llama : public TransformerModel {
public:
    Llama(const TransformerConfig& cfg, Generator& gen, Options opt = {});
    Tensor forward(const Tensor& ids, std::vector<Tensor>* stream = nullptr) const override;
    Tensor forward(const Tensor& ids, KVCache& cache) const override;
    std::shared_ptr<Embedding> embed_tokens, embed_positions;
    std::shared_ptr<Linear> lm_head;  // only when !tie_embeddings
};

class ViT : public TransformerModel {
public:
    ViT(const TransformerConfig& cfg, Generator& gen, Options opt = {});
    Tensor forward(const Tensor& images, std::vector<Tensor>* stream = nullptr) const override;
    using TransformerModel::forward;  // the cache overload, which throws
    // [B, ch, H, W] -> [B, N, ch * p * p]: patches in row-major order, each
    // flattened as (channel, row, column), like a Conv2d kernel.
    Tensor patchify(const Tensor& images) const;
    std::shared_ptr<Linear> projection, classifier;
    Tensor cls_token, position_embeddings;
};

// The model of the config's family (GPT2, Llama or ViT), initialized from gen.
std::shared_ptr<TransformerModel> make_model(const TransformerConfig& cfg, Generator& gen, Options opt = {});

// The closed-form parameter count of a configuration (what num_parameters()
// of the built model must equal).
int64_t count_parameters(const TransformerConfig& cfg);

// The FLOPs of one training step per token at sequence length T, by the
// standard estimate (Kaplan et al. 2020; PaLM, appendix B): 6 N for the
// matrix products of forward (2 N) and backward (4 N), N the parameters
// without the tables that are only looked up (a lookup costs no FLOPs): the
// position table, and the token table when the head has its own matrix
// (untied; a tied table is the head's matrix too), plus 12 L T C for
// attention's two T x T products (2 x 2 T C per token and layer forward,
// times 3 with backward; the causal half is not subtracted). The basis of
// model FLOPs utilization (MFU): achieved FLOP/s over the machine's peak.
double training_flops_per_token(const TransformerConfig& cfg, int64_t T);

}  // namespace nn
}  // namespace nc
