#include "nn/hf.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace nc {
namespace nn {

using json = nlohmann::json;

static bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// GPT-2's Conv1D weights: every 2-D ".weight" except the embedding tables and an untied head.
static bool is_conv1d(const std::string& name, const Tensor& t) {
    return t.dim() == 2 && ends_with(name, ".weight") && name != "wte.weight" && name != "wpe.weight" &&
           name != "lm_head.weight";
}

static const char* kPatchProjection = "vit.embeddings.patch_embeddings.projection.weight";

std::map<std::string, Tensor> to_hf_layout(const TransformerModel& model) {
    const TransformerConfig& cfg = model.config();
    std::map<std::string, Tensor> out;
    for (auto& [name, t] : model.state_dict()) {
        if (cfg.family == Family::GPT2 && is_conv1d(name, t)) out[name] = raw::contiguous(raw::transpose(t, 0, 1));
        else if (cfg.family == Family::ViT && name == kPatchProjection)
            out[name] = raw::reshape(t, {cfg.n_embd, cfg.channels, cfg.patch_size, cfg.patch_size});
        else out[name] = t;
    }
    return out;
}

void load_hf_layout(TransformerModel& model, std::map<std::string, Tensor> tensors) {
    const TransformerConfig& cfg = model.config();
    std::map<std::string, Tensor> ours;
    for (auto& [raw_name, t] : tensors) {
        std::string name = raw_name.rfind("transformer.", 0) == 0 ? raw_name.substr(12) : raw_name;
        if (cfg.family == Family::GPT2 && (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) && t.dim() == 4)
            continue;  // the causal mask buffer, not a parameter
        if (name == "lm_head.weight" && cfg.tie_embeddings) continue;  // the same numbers as the token table
        if (cfg.family == Family::GPT2 && is_conv1d(name, t)) t = raw::contiguous(raw::transpose(t, 0, 1));
        if (cfg.family == Family::ViT && name == kPatchProjection && t.dim() == 4) t = raw::reshape(t, {t.size(0), -1});
        ours[name] = t;
    }
    // Match the model's dtype: a file may hold float64, or bfloat16 and
    // float16 (as Hugging Face often saves them), for a float32 model.
    std::map<std::string, Tensor> state = model.state_dict();
    auto floating = [](DType d) { return is_floating(d) || is_16bit_float(d); };
    for (auto& [name, t] : ours) {
        auto it = state.find(name);
        if (it != state.end() && it->second.dtype() != t.dtype() && floating(t.dtype()) && floating(it->second.dtype()))
            t = raw::to_dtype(t, it->second.dtype());
        if (it != state.end() && it->second.dtype() == kInt64 && t.dtype() != kInt64) t = raw::to_dtype(t, kInt64);
    }
    model.load_state_dict(ours);
}

std::string hf_config_json(const TransformerConfig& c) {
    json j;
    if (c.family == Family::GPT2) {
        j = {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"n_layer", c.n_layer}, {"n_embd", c.n_embd},
             {"n_head", c.n_head}, {"vocab_size", c.vocab_size}, {"n_positions", c.block_size}, {"n_ctx", c.block_size},
             {"layer_norm_epsilon", c.norm_eps}, {"activation_function", c.gelu_tanh ? "gelu_new" : "gelu"},
             {"tie_word_embeddings", c.tie_embeddings}};
    } else if (c.family == Family::Llama) {
        j = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"num_hidden_layers", c.n_layer},
             {"hidden_size", c.n_embd}, {"num_attention_heads", c.n_head}, {"num_key_value_heads", c.kv_heads()},
             {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.block_size}, {"rms_norm_eps", c.norm_eps},
             {"rope_theta", c.rope_theta}, {"tie_word_embeddings", c.tie_embeddings}, {"hidden_act", "silu"},
             {"attention_bias", c.bias}, {"mlp_bias", c.bias}};
        if (c.mlp == MlpKind::SwiGlu) j["intermediate_size"] = c.mlp_hidden > 0 ? c.mlp_hidden : swiglu_hidden(c.n_embd, c.swiglu_multiple);
    } else {
        j = {{"architectures", {"ViTForImageClassification"}}, {"model_type", "vit"}, {"num_hidden_layers", c.n_layer},
             {"hidden_size", c.n_embd}, {"num_attention_heads", c.n_head}, {"intermediate_size", c.mlp_hidden > 0 ? c.mlp_hidden : 4 * c.n_embd},
             {"image_size", c.image_size}, {"patch_size", c.patch_size}, {"num_channels", c.channels},
             {"layer_norm_eps", c.norm_eps}, {"hidden_act", c.gelu_tanh ? "gelu_new" : "gelu"}, {"qkv_bias", c.bias}};
        json labels = json::object();
        for (int64_t i = 0; i < c.num_classes; ++i) labels[std::to_string(i)] = "LABEL_" + std::to_string(i);
        j["id2label"] = labels;
    }
    // normcore's variant axes, so a directory written here rebuilds the same model.
    j["normcore"] = {{"norm", to_string(c.norm)},           {"placement", to_string(c.placement)},
                     {"decay", to_string(c.decay)},         {"attention", to_string(c.attention)},
                     {"mlp", to_string(c.mlp)},             {"positions", to_string(c.positions)},
                     {"bias", c.bias},                      {"dyt_alpha0", c.dyt_alpha0}, {"dyt_final_gamma0", c.dyt_final_gamma0},
                     {"dyt_alpha0_attn", c.dyt_alpha0_attn}, {"dyt_gamma0", c.dyt_gamma0}, {"embed_scale0", c.embed_scale0},
                     {"geo_step", c.geo_step},              {"geo_learnable_step", c.geo_learnable_step},
                     {"swiglu_multiple", c.swiglu_multiple}, {"mlp_hidden", c.mlp_hidden},
                     {"dropout", c.dropout},                {"geo_radius", c.geo_radius}, {"geo_max_angle", c.geo_max_angle},
                     {"geo_sublayer_norm", c.geo_sublayer_norm}, {"rope_theta", c.rope_theta},
                     {"tie_embeddings", c.tie_embeddings}};
    return j.dump(2);
}

// Checked reads of config.json: each field, when present and not null,
// must have the expected JSON type and lie in its range, or the error names
// the file, the field, what was expected and what was there. (nlohmann's
// get<int64_t>() on 6.6e22 is undefined behaviour, and its exceptions name
// no file.)
namespace {
struct ConfigReader {
    const json& j;
    std::string source;

    Error bad(const std::string& key, const std::string& expected) const {
        return Error("config '" + source + "': field " + key + " must be " + expected + ", got " + j[key].dump());
    }
    bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }
    int64_t integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
        if (!has(key)) return fallback;
        const json& v = j[key];
        std::string range = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
        // 12.0 is accepted as 12; 1.5 and 6.6e22 are not.
        if (v.is_number_float()) {
            double d = v.get<double>();
            if (!(d >= (double)lo && d <= (double)hi) || d != std::floor(d)) throw bad(key, range);
            return (int64_t)d;
        }
        if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t)hi) throw bad(key, range);
        if (!v.is_number_integer()) throw bad(key, range);
        int64_t x = v.get<int64_t>();
        if (x < lo || x > hi) throw bad(key, range);
        return x;
    }
    double number(const std::string& key, double fallback, double lo, double hi) const {
        if (!has(key)) return fallback;
        const json& v = j[key];
        char range[96];
        std::snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
        if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) throw bad(key, range);
        return v.get<double>();
    }
    std::string text(const std::string& key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        if (!j[key].is_string()) throw bad(key, "a string");
        return j[key].get<std::string>();
    }
    // A field that would change the model's function in a way normcore does
    // not implement: refused rather than silently ignored.
    void unsupported(const std::string& key, bool supported, const std::string& why) const {
        if (has(key) && !supported)
            throw Error("config '" + source + "': field " + key + " = " + j[key].dump() + " is not supported: " + why);
    }
    bool flag(const std::string& key, bool fallback) const {
        if (!has(key)) return fallback;
        if (!j[key].is_boolean()) throw bad(key, "true or false");
        return j[key].get<bool>();
    }
};
}  // namespace

TransformerConfig config_from_hf_json(const std::string& text, const std::string& source) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error("config '" + source + "': not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw Error("config '" + source + "': must be a JSON object");
    ConfigReader r{j, source};
    // Generous bounds: far above any model this program can train, far below
    // what would overflow a size or exhaust memory before a clear error.
    const int64_t kLayers = 1024, kWidth = 1 << 16, kHeads = 4096, kVocab = int64_t(1) << 24, kPositions = 1 << 20;
    std::string type = r.text("model_type", "");
    TransformerConfig c;
    if (type == "gpt2") {
        c = gpt2_config();
        c.n_layer = r.integer("n_layer", 12, 1, kLayers);
        c.n_embd = r.integer("n_embd", 768, 1, kWidth);
        c.n_head = r.integer("n_head", 12, 1, kHeads);
        c.vocab_size = r.integer("vocab_size", 50257, 1, kVocab);
        c.block_size = r.integer("n_positions", 1024, 1, kPositions);
        c.norm_eps = r.number("layer_norm_epsilon", 1e-5, 0, 1);
        c.gelu_tanh = r.text("activation_function", "gelu_new") != "gelu";
        c.tie_embeddings = r.flag("tie_word_embeddings", true);
        c.mlp_hidden = r.integer("n_inner", 0, 0, 1 << 20);  // null: 4 n_embd
        r.unsupported("scale_attn_by_inverse_layer_idx", !r.flag("scale_attn_by_inverse_layer_idx", false),
                      "attention scores are scaled by 1/sqrt(head size) only");
    } else if (type == "llama") {
        c = llama_config();
        c.n_layer = r.integer("num_hidden_layers", 32, 1, kLayers);
        c.n_embd = r.integer("hidden_size", 4096, 1, kWidth);
        c.n_head = r.integer("num_attention_heads", 32, 1, kHeads);
        c.n_kv_head = r.integer("num_key_value_heads", c.n_head, 1, kHeads);
        c.vocab_size = r.integer("vocab_size", 32000, 1, kVocab);
        c.block_size = r.integer("max_position_embeddings", 2048, 1, kPositions);
        c.norm_eps = r.number("rms_norm_eps", 1e-6, 0, 1);
        c.rope_theta = r.number("rope_theta", 10000.0, 1, 1e12);
        c.tie_embeddings = r.flag("tie_word_embeddings", false);
        c.bias = r.flag("attention_bias", false);
        c.mlp_hidden = r.integer("intermediate_size", 0, 0, 1 << 20);
        r.unsupported("rope_scaling", false, "RoPE runs unscaled (theta^(-2i/D) at every position)");
        r.unsupported("hidden_act", r.text("hidden_act", "silu") == "silu", "Llama's MLP is SwiGLU, with silu");
        r.unsupported("mlp_bias", r.flag("mlp_bias", c.bias) == c.bias,
                      "the MLP has biases exactly when attention_bias is true");
        r.unsupported("head_dim", r.integer("head_dim", 1, 1, kWidth) * c.n_head == c.n_embd,
                      "the head size is hidden_size / num_attention_heads");
    } else if (type == "vit") {
        c = vit_config();
        c.n_layer = r.integer("num_hidden_layers", 12, 1, kLayers);
        c.n_embd = r.integer("hidden_size", 768, 1, kWidth);
        c.n_head = r.integer("num_attention_heads", 12, 1, kHeads);
        c.mlp_hidden = r.integer("intermediate_size", 0, 0, 1 << 20);
        c.image_size = r.integer("image_size", 224, 1, 4096);
        c.patch_size = r.integer("patch_size", 16, 1, 4096);
        c.channels = r.integer("num_channels", 3, 1, 3);
        c.norm_eps = r.number("layer_norm_eps", 1e-12, 0, 1);
        c.gelu_tanh = r.text("hidden_act", "gelu") != "gelu";
        c.bias = r.flag("qkv_bias", true);
        if (j.contains("id2label") && !j["id2label"].is_object())
            throw Error("config '" + source + "': field id2label must be an object");
        c.num_classes = j.contains("id2label") ? (int64_t)j["id2label"].size() : 1000;
        if (c.num_classes < 1 || c.num_classes > (1 << 20))
            throw Error("config '" + source + "': id2label must name from 1 to 2^20 classes");
    } else {
        throw Error("config '" + source + "': model_type '" + type + "' is not gpt2, llama or vit");
    }
    if (r.has("normcore")) {
        if (!j["normcore"].is_object()) throw Error("config '" + source + "': field normcore must be an object");
        ConfigReader n{j["normcore"], source + "' section 'normcore"};
        c.norm = parse_norm(n.text("norm", to_string(c.norm)));
        c.placement = parse_placement(n.text("placement", to_string(c.placement)));
        c.decay = parse_decay(n.text("decay", to_string(c.decay)));
        c.attention = parse_attention(n.text("attention", to_string(c.attention)));
        c.mlp = parse_mlp(n.text("mlp", to_string(c.mlp)));
        c.positions = parse_positions(n.text("positions", to_string(c.positions)));
        c.bias = n.flag("bias", c.bias);
        c.dyt_alpha0 = n.number("dyt_alpha0", c.dyt_alpha0, -1e6, 1e6);
        c.dyt_final_gamma0 = n.number("dyt_final_gamma0", c.dyt_final_gamma0, -1e6, 1e6);
        c.dyt_alpha0_attn = n.number("dyt_alpha0_attn", c.dyt_alpha0_attn, 0, 1e6);
        c.dyt_gamma0 = n.number("dyt_gamma0", c.dyt_gamma0, -1e6, 1e6);
        c.embed_scale0 = n.number("embed_scale0", c.embed_scale0, 0, 1e6);
        c.geo_step = n.number("geo_step", c.geo_step, -1e6, 1e6);
        c.geo_learnable_step = n.flag("geo_learnable_step", c.geo_learnable_step);
        c.swiglu_multiple = n.integer("swiglu_multiple", c.swiglu_multiple, 1, 1 << 20);
        c.mlp_hidden = n.integer("mlp_hidden", c.mlp_hidden, 0, 1 << 20);
        c.dropout = n.number("dropout", c.dropout, 0, 0.999999);
        c.geo_radius = n.number("geo_radius", c.geo_radius, 0, 1e12);
        c.geo_max_angle = n.number("geo_max_angle", c.geo_max_angle, 0, 10);
        c.geo_sublayer_norm = n.flag("geo_sublayer_norm", c.geo_sublayer_norm);
        c.rope_theta = n.number("rope_theta", c.rope_theta, 1, 1e12);
        c.tie_embeddings = n.flag("tie_embeddings", c.tie_embeddings);
    }
    try {
        c.validate();
    } catch (const Error& e) {
        throw Error("config '" + source + "': " + e.what());
    }
    return c;
}

}  // namespace nn
}  // namespace nc
