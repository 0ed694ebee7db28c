#include "nn/config.h"

#include <cmath>

#include "tensor/error.h"

namespace nc {
namespace nn {

TransformerConfig gpt2_config() { return TransformerConfig(); }

TransformerConfig llama_config() {
    TransformerConfig c;
    c.family = Family::Llama;
    c.norm = NormKind::RMSNorm;
    c.mlp = MlpKind::SwiGlu;
    c.positions = Positions::Rope;
    c.bias = false;
    c.tie_embeddings = false;
    return c;
}

TransformerConfig vit_config() {
    TransformerConfig c;
    c.family = Family::ViT;
    c.causal = false;
    c.norm_eps = 1e-6;
    c.n_embd = 64;
    c.n_head = 4;
    c.n_layer = 4;
    return c;
}

TransformerConfig default_config(Family family) {
    switch (family) {
        case Family::GPT2: return gpt2_config();
        case Family::Llama: return llama_config();
        case Family::ViT: return vit_config();
    }
    return gpt2_config();
}

double TransformerConfig::stream_rms_at_init() const {
    double tables = positions == Positions::Learned ? 2 : 1;  // token (+ position) embeddings
    return init_std * std::sqrt(tables) * (embed_scale0 > 0 ? embed_scale0 : 1);
}

double TransformerConfig::dyt_final_gamma_matching_layernorm() const {
    return 1 / (dyt_alpha0 * stream_rms_at_init());
}

double TransformerConfig::dyt_alpha0_at(bool before_attention) const {
    return before_attention && dyt_alpha0_attn > 0 ? dyt_alpha0_attn : dyt_alpha0;
}

void TransformerConfig::validate() const {
    auto bad = [](const std::string& msg) { fail("model config", msg); };
    if (n_layer <= 0 || n_embd <= 0 || n_head <= 0) bad("layers, width and heads must be positive");
    if (n_embd % n_head != 0)
        bad("--heads " + std::to_string(n_head) + " does not divide --width " + std::to_string(n_embd));
    if (n_head % kv_heads() != 0)
        bad("--kv-heads " + std::to_string(kv_heads()) + " does not divide --heads " + std::to_string(n_head));
    if (positions == Positions::Rope && head_dim() % 2 != 0)
        bad("RoPE needs an even head size, got " + std::to_string(head_dim()));
    if (attention == AttentionKind::DifferentialRegime) {
        if (kv_heads() != n_head) bad("differential attention does not support grouped-query attention");
    }
    if (attention == AttentionKind::Differential) {
        if (head_dim() % 2 != 0) bad("differential attention needs an even head size, got " + std::to_string(head_dim()));
        if (positions == Positions::Rope && head_dim() % 4 != 0)
            bad("differential attention with RoPE needs a head size divisible by 4, got " + std::to_string(head_dim()));
        if (kv_heads() != n_head) bad("differential attention does not support grouped-query attention");
    }
    if (family != Family::ViT && vocab_size <= 0) bad("the vocabulary must not be empty");
    if (block_size <= 0) bad("the block size (longest sequence) must be positive");
    if (family == Family::ViT) {
        if (patch_size <= 0 || image_size <= 0 || channels <= 0 || num_classes <= 0)
            bad("image size, patch size, channels and classes must be positive");
        if (image_size % patch_size != 0)
            bad("image size " + std::to_string(image_size) + " is not divisible by the patch size " +
                std::to_string(patch_size));
    }
    if (!(dropout >= 0 && dropout < 1)) bad("dropout must be in [0, 1)");
    if (!(std::isfinite(dyt_final_gamma0) && dyt_final_gamma0 != 0))
        bad("the final DyT's initial gain must be finite and non-zero, got " + std::to_string(dyt_final_gamma0));
    if (!(std::isfinite(dyt_gamma0) && dyt_gamma0 != 0))
        bad("the DyT layers' initial gain must be finite and non-zero, got " + std::to_string(dyt_gamma0));
    if (!(std::isfinite(dyt_alpha0_attn) && dyt_alpha0_attn >= 0))
        bad("the attention DyT layers' alpha0 must be 0 (the same as the others) or positive, got " +
            std::to_string(dyt_alpha0_attn));
    if (!(std::isfinite(embed_scale0) && embed_scale0 >= 0))
        bad("the embedding scale must be 0 (none) or positive, got " + std::to_string(embed_scale0));
    if (embed_scale0 > 0 && family == Family::ViT) bad("the embedding scale is for language models (gpt2, llama), not vit");
    if (!(geo_max_angle >= 0)) bad("--geo-max-angle must be 0 (unbounded) or a positive angle in radians");
}

template <typename E>
struct Spelling {
    E value;
    const char* name;
};

template <typename E, size_t N>
static E parse(const std::string& s, const Spelling<E> (&table)[N], const char* what) {
    std::string choices;
    for (const auto& entry : table) {
        if (s == entry.name) return entry.value;
        choices += std::string(choices.empty() ? "" : ", ") + entry.name;
    }
    fail("model config", "unknown " + std::string(what) + " '" + s + "' (choose " + choices + ")");
}

template <typename E, size_t N>
static std::string spell(E v, const Spelling<E> (&table)[N]) {
    for (const auto& entry : table)
        if (entry.value == v) return entry.name;
    return "?";
}

static const Spelling<Family> kFamilies[] = {{Family::GPT2, "gpt2"}, {Family::Llama, "llama"}, {Family::ViT, "vit"}};
static const Spelling<NormKind> kNorms[] = {
    {NormKind::LayerNorm, "layernorm"}, {NormKind::RMSNorm, "rmsnorm"}, {NormKind::DyT, "dyt"}, {NormKind::None, "none"}};
static const Spelling<Placement> kPlacements[] = {{Placement::Pre, "pre"},
                                                  {Placement::Post, "post"},
                                                  {Placement::Sandwich, "sandwich"},
                                                  {Placement::DeepNorm, "deepnorm"},
                                                  {Placement::GeoNorm, "geonorm"}};
static const Spelling<Decay> kDecays[] = {
    {Decay::None, "none"}, {Decay::Harmonic, "harmonic"}, {Decay::Sqrt, "sqrt"}, {Decay::Linear, "linear"}};
static const Spelling<AttentionKind> kAttentions[] = {{AttentionKind::Standard, "standard"},
                                                      {AttentionKind::Differential, "differential"},
                                                      {AttentionKind::DifferentialRegime, "differential-regime"}};
static const Spelling<MlpKind> kMlps[] = {{MlpKind::Gelu, "gelu"}, {MlpKind::SwiGlu, "swiglu"}};
static const Spelling<Positions> kPositions[] = {
    {Positions::Learned, "learned"}, {Positions::Rope, "rope"}, {Positions::None, "none"}};

Family parse_family(const std::string& s) { return parse(s, kFamilies, "model"); }
NormKind parse_norm(const std::string& s) { return parse(s, kNorms, "norm"); }
Placement parse_placement(const std::string& s) { return parse(s, kPlacements, "placement"); }
Decay parse_decay(const std::string& s) { return parse(s, kDecays, "decay"); }
AttentionKind parse_attention(const std::string& s) { return parse(s, kAttentions, "attention"); }
MlpKind parse_mlp(const std::string& s) { return parse(s, kMlps, "mlp"); }
Positions parse_positions(const std::string& s) { return parse(s, kPositions, "positions"); }
std::string to_string(Family v) { return spell(v, kFamilies); }
std::string to_string(NormKind v) { return spell(v, kNorms); }
std::string to_string(Placement v) { return spell(v, kPlacements); }
std::string to_string(Decay v) { return spell(v, kDecays); }
std::string to_string(AttentionKind v) { return spell(v, kAttentions); }
std::string to_string(MlpKind v) { return spell(v, kMlps); }
std::string to_string(Positions v) { return spell(v, kPositions); }

double diff_lambda_init(int64_t depth) { return 0.8 - 0.6 * std::exp(-0.3 * (double)depth); }

int64_t swiglu_hidden(int64_t n_embd, int64_t multiple_of) {
    int64_t hidden = (int64_t)(2 * 4 * n_embd / 3);
    return (hidden + multiple_of - 1) / multiple_of * multiple_of;
}

}  // namespace nn
}  // namespace nc
