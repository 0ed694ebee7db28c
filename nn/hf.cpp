#include "nn/hf.h"

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
    // Match the model's dtype (HF files may be float16/bfloat16, read as float32).
    std::map<std::string, Tensor> state = model.state_dict();
    for (auto& [name, t] : ours) {
        auto it = state.find(name);
        if (it != state.end() && it->second.dtype() != t.dtype() && is_floating(t.dtype()) && is_floating(it->second.dtype()))
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
                     {"bias", c.bias},                      {"dyt_alpha0", c.dyt_alpha0},
                     {"geo_step", c.geo_step},              {"geo_learnable_step", c.geo_learnable_step},
                     {"swiglu_multiple", c.swiglu_multiple}, {"mlp_hidden", c.mlp_hidden},
                     {"dropout", c.dropout},                {"geo_radius", c.geo_radius}, {"geo_max_angle", c.geo_max_angle},
                     {"geo_sublayer_norm", c.geo_sublayer_norm}, {"rope_theta", c.rope_theta},
                     {"tie_embeddings", c.tie_embeddings}};
    return j.dump(2);
}

TransformerConfig config_from_hf_json(const std::string& text, const std::string& source) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error("config '" + source + "': not valid JSON: " + e.what());
    }
    auto get = [&](const char* key, auto fallback) {
        return j.contains(key) && !j[key].is_null() ? j[key].get<decltype(fallback)>() : fallback;
    };
    std::string type = get("model_type", std::string());
    TransformerConfig c;
    try {
        if (type == "gpt2") {
            c = gpt2_config();
            c.n_layer = get("n_layer", (int64_t)12);
            c.n_embd = get("n_embd", (int64_t)768);
            c.n_head = get("n_head", (int64_t)12);
            c.vocab_size = get("vocab_size", (int64_t)50257);
            c.block_size = get("n_positions", (int64_t)1024);
            c.norm_eps = get("layer_norm_epsilon", 1e-5);
            c.gelu_tanh = get("activation_function", std::string("gelu_new")) != "gelu";
            c.tie_embeddings = get("tie_word_embeddings", true);
        } else if (type == "llama") {
            c = llama_config();
            c.n_layer = get("num_hidden_layers", (int64_t)32);
            c.n_embd = get("hidden_size", (int64_t)4096);
            c.n_head = get("num_attention_heads", (int64_t)32);
            c.n_kv_head = get("num_key_value_heads", c.n_head);
            c.vocab_size = get("vocab_size", (int64_t)32000);
            c.block_size = get("max_position_embeddings", (int64_t)2048);
            c.norm_eps = get("rms_norm_eps", 1e-6);
            c.rope_theta = get("rope_theta", 10000.0);
            c.tie_embeddings = get("tie_word_embeddings", false);
            c.bias = get("attention_bias", false);
            c.mlp_hidden = get("intermediate_size", (int64_t)0);
        } else if (type == "vit") {
            c = vit_config();
            c.n_layer = get("num_hidden_layers", (int64_t)12);
            c.n_embd = get("hidden_size", (int64_t)768);
            c.n_head = get("num_attention_heads", (int64_t)12);
            c.mlp_hidden = get("intermediate_size", (int64_t)0);
            c.image_size = get("image_size", (int64_t)224);
            c.patch_size = get("patch_size", (int64_t)16);
            c.channels = get("num_channels", (int64_t)3);
            c.norm_eps = get("layer_norm_eps", 1e-12);
            c.gelu_tanh = get("hidden_act", std::string("gelu")) != "gelu";
            c.bias = get("qkv_bias", true);
            c.num_classes = j.contains("id2label") ? (int64_t)j["id2label"].size() : 1000;
        } else {
            throw Error("config '" + source + "': model_type '" + type + "' is not gpt2, llama or vit");
        }
        if (j.contains("normcore")) {
            const json& n = j["normcore"];
            c.norm = parse_norm(n.value("norm", to_string(c.norm)));
            c.placement = parse_placement(n.value("placement", to_string(c.placement)));
            c.decay = parse_decay(n.value("decay", to_string(c.decay)));
            c.attention = parse_attention(n.value("attention", to_string(c.attention)));
            c.mlp = parse_mlp(n.value("mlp", to_string(c.mlp)));
            c.positions = parse_positions(n.value("positions", to_string(c.positions)));
            c.bias = n.value("bias", c.bias);
            c.dyt_alpha0 = n.value("dyt_alpha0", c.dyt_alpha0);
            c.geo_step = n.value("geo_step", c.geo_step);
            c.geo_learnable_step = n.value("geo_learnable_step", c.geo_learnable_step);
            c.swiglu_multiple = n.value("swiglu_multiple", c.swiglu_multiple);
            c.mlp_hidden = n.value("mlp_hidden", c.mlp_hidden);
            c.dropout = n.value("dropout", c.dropout);
            c.geo_radius = n.value("geo_radius", c.geo_radius);
            c.geo_max_angle = n.value("geo_max_angle", c.geo_max_angle);
            c.geo_sublayer_norm = n.value("geo_sublayer_norm", c.geo_sublayer_norm);
            c.rope_theta = n.value("rope_theta", c.rope_theta);
            c.tie_embeddings = n.value("tie_embeddings", c.tie_embeddings);
        }
    } catch (const json::exception& e) {
        throw Error("config '" + source + "': a value has the wrong type: " + e.what());
    }
    c.validate();
    return c;
}

}  // namespace nn
}  // namespace nc
