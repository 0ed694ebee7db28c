// config.h — one configuration for every transformer normcore builds.
//
// The axes of the model/norm matrix (README, "Models and their parameter names"): norm layer,
// residual placement, GeoNorm step decay, attention kind, MLP kind, position
// encoding. GPT-2, Llama and ViT are presets of it; every other combination
// builds too. Strings are the command-line spellings ("rmsnorm", "sandwich").
#pragma once

#include <cstdint>
#include <string>

namespace nc {
namespace nn {

enum class NormKind { LayerNorm, RMSNorm, DyT, None };

// train's DyT recipe when its options are auto (tutorials/12, "A recipe for
// DyT language models"): a ViT gets the DyT paper's alpha0 0.5 and nothing
// else; a language model gets alpha0 0.5 in every DyT layer (the DyT paper's
// larger alpha0 before attention is an option, --dyt-alpha-attn, measured no
// better), a learnable scalar sqrt(C) on its embeddings, and the last gain
// that matches a LayerNorm (dyt_final_gamma_matching_layernorm).
constexpr double kDytAlpha0Vit = 0.5, kDytAlpha0LanguageModel = 0.5;
enum class Placement { Pre, Post, Sandwich, DeepNorm, GeoNorm };
enum class Decay { None, Harmonic, Sqrt, Linear };
// Differential: the official Diff-Transformer (Ye et al. 2024, reference in
// nn/attention.h); DifferentialRegime: the variant the DyT regime study ran
// (nn/attention.h says how the two differ).
enum class AttentionKind { Standard, Differential, DifferentialRegime };
enum class MlpKind { Gelu, SwiGlu };
enum class Positions { Learned, Rope, None };
// Whose parameter names (and projection layout) the model uses.
enum class Family { GPT2, Llama, ViT };

struct TransformerConfig {
    Family family = Family::GPT2;
    int64_t n_layer = 4;
    int64_t n_embd = 256;     // C
    int64_t n_head = 4;       // H
    int64_t n_kv_head = 0;    // key/value heads for grouped-query attention; 0 = n_head
    int64_t vocab_size = 256;
    int64_t block_size = 128;  // longest sequence (size of learned position tables)
    NormKind norm = NormKind::LayerNorm;
    Placement placement = Placement::Pre;
    Decay decay = Decay::None;
    AttentionKind attention = AttentionKind::Standard;
    MlpKind mlp = MlpKind::Gelu;
    Positions positions = Positions::Learned;
    bool bias = true;          // biases in linear layers (and LayerNorm)
    bool causal = true;
    bool gelu_tanh = true;     // GELU's tanh approximation (GPT-2, ViT) or exact erf
    bool tie_embeddings = true;
    double norm_eps = 1e-5;
    double dyt_alpha0 = 0.5;
    // > 0: the alpha0 of the DyT layers before attention, which the DyT
    // paper's LLaMA recipe starts larger than the others; 0: dyt_alpha0.
    double dyt_alpha0_attn = 0;
    // The initial gain (weight) of every DyT but the last, and of the DyT
    // before the head. A language model needs the last one large
    // (dyt_final_gamma_matching_layernorm below).
    double dyt_gamma0 = 1;
    double dyt_final_gamma0 = 1;
    // > 0: a learnable scalar, starting here, multiplies the embeddings
    // (token plus position) before the first block: the DyT paper's LLaMA
    // recipe, with sqrt(C). 0: none. Language models only.
    double embed_scale0 = 0;
    double rope_theta = 10000;
    double dropout = 0;
    int64_t mlp_hidden = 0;      // 0: 4C for gelu, Llama's rule for swiglu
    int64_t swiglu_multiple = 256;
    double init_std = 0.02;
    // GeoNorm (tutorials/reference.md, section 3; the paper's exact choices are unknown):
    double geo_step = 1.0;          // a, the base step size
    // > 0: bound each update's angle smoothly, theta -> m tanh(theta / m)
    // (nn/placement.cpp, bound_angle). 0: the plain exp map, any angle.
    double geo_max_angle = 0;
    bool geo_learnable_step = false;  // a learnable scalar per update (attn_step, mlp_step)
    double geo_radius = 0;          // 0: sqrt(C)
    bool geo_sublayer_norm = false;  // normalize the sublayer input (else x goes in directly)
    // ViT:
    int64_t image_size = 28, patch_size = 7, channels = 1, num_classes = 10;

    int64_t kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
    int64_t head_dim() const { return n_embd / n_head; }
    bool differential() const { return attention != AttentionKind::Standard; }
    // The width of the query (and of the key) projection: the regime study's
    // differential attention gives each head two full-size sub-heads (2C);
    // every other kind fits the queries into C.
    int64_t query_width() const { return attention == AttentionKind::DifferentialRegime ? 2 * n_embd : n_embd; }
    int64_t key_width() const { return attention == AttentionKind::DifferentialRegime ? 2 * n_embd : kv_heads() * head_dim(); }
    // RoPE rotates each (sub-)head: the official differential sub-heads are half a head.
    int64_t rope_dim() const { return attention == AttentionKind::Differential ? head_dim() / 2 : head_dim(); }
    // The final DyT gain at which a language model's last DyT starts as large
    // as a LayerNorm's output (RMS 1): at initialization the stream x is the
    // sum of the token (and learned position) embeddings, each N(0, init_std^2),
    // and tanh is linear there, so DyT(x) ~ gamma alpha0 x has RMS
    // gamma alpha0 sigma_x; gamma = 1 / (alpha0 sigma_x). With gamma = 1 the
    // tied head's logits are too small for the byte frequencies, and training
    // grows the stream until the final DyT saturates and passes no gradient
    // (tutorials/12-dyt-and-saturation.md).
    double dyt_final_gamma_matching_layernorm() const;
    // The stream's RMS at initialization, sigma_x above: init_std times
    // sqrt(number of embedding tables summed), times embed_scale0 if set.
    double stream_rms_at_init() const;
    // The DyT alpha0 of a norm layer: dyt_alpha0_attn (if set) for the ones
    // before attention, dyt_alpha0 for the rest.
    double dyt_alpha0_at(bool before_attention) const;
    // Throws nc::Error naming the first setting that cannot work.
    void validate() const;
};

// The standard configurations: GPT-2 (learned positions, GELU, LayerNorm,
// pre), Llama (RoPE, SwiGLU, RMSNorm, pre, no biases, untied head) and ViT
// (patches, class token, bidirectional, LayerNorm eps 1e-6).
TransformerConfig gpt2_config();
TransformerConfig llama_config();
TransformerConfig vit_config();
TransformerConfig default_config(Family family);  // one of the three above

Family parse_family(const std::string& s);  // "gpt2", "llama", "vit"
NormKind parse_norm(const std::string& s);
Placement parse_placement(const std::string& s);
Decay parse_decay(const std::string& s);
AttentionKind parse_attention(const std::string& s);
MlpKind parse_mlp(const std::string& s);
Positions parse_positions(const std::string& s);
std::string to_string(Family v);
std::string to_string(NormKind v);
std::string to_string(Placement v);
std::string to_string(Decay v);
std::string to_string(AttentionKind v);
std::string to_string(MlpKind v);
std::string to_string(Positions v);

// Differential attention's lambda_init = 0.8 - 0.6 exp(-0.3 depth), depth 0-based
// (the regime study's code passes depth + 1: nn/attention.h).
double diff_lambda_init(int64_t depth);
// Llama's SwiGLU hidden size: int(2 * 4C / 3) rounded up to a multiple.
int64_t swiglu_hidden(int64_t n_embd, int64_t multiple_of);

}  // namespace nn
}  // namespace nc
