#include "train/lm.h"

#include "tensor/backend.h"

#include "train/checkpoint.h"
#include "data/bpe.h"
#include "data/text.h"
#include "data/token_file.h"
#include "data/unicode.h"

#include <filesystem>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace nc {
namespace app {

using namespace nn;

std::vector<FlagSpec> model_flags() {
    return {
        {"model", "gpt2", "gpt2 | llama | vit"},
        {"norm", "", "layernorm | rmsnorm | dyt | none (default: the model's own)"},
        {"placement", "pre", "pre | post | sandwich | deepnorm | geonorm"},
        {"decay", "none", "geonorm step decay: none | harmonic | sqrt | linear"},
        {"attention", "standard", "standard | differential (official Diff-Transformer) | differential-regime (the DyT regime study's)"},
        {"mlp", "", "gelu | swiglu (default: the model's own)"},
        {"positions", "", "learned | rope | none (default: the model's own)"},
        {"layers", "4", "number of blocks"},
        {"width", "128", "channels C"},
        {"heads", "4", "attention heads"},
        {"kv-heads", "0", "key/value heads for grouped-query attention (0: = heads)"},
        {"seq", "128", "sequence length T (also the learned position table's size)"},
        {"dropout", "0", "dropout probability"},
        {"dyt-alpha", "auto", "initial alpha of Dynamic Tanh; auto: 0.5 (the DyT paper's)"},
        {"dyt-final-gamma", "auto",
         "initial gain of the DyT before the head; auto: 1 / (alpha0 x the stream's RMS at initialization) for a language model, so that it "
         "starts as large as a LayerNorm (1 keeps it from learning: tutorials/12-dyt-and-saturation.md), 1 for vit"},
        {"dyt-gamma", "1", "initial gain of every other DyT; auto: 1 / (alpha0 x the stream's RMS at initialization), as the last one's"},
        {"dyt-alpha-attn", "0", "initial alpha of the DyT layers before attention (the DyT paper's LLaMA recipe starts them "
                                "larger, 0.8 against 0.2); 0: --dyt-alpha, as every other DyT layer"},
        {"embed-scale", "auto", "language models: a learnable scalar, starting at this value, multiplies the embeddings before the "
                                "first block (sqrt: sqrt(width), as the DyT paper's LLaMA recipe; 0: none); auto: sqrt with --norm "
                                "dyt, else none (tutorials/12-dyt-and-saturation.md)"},
        {"geo-step", "1", "GeoNorm base step size a"},
        {"geo-max-angle", "0", "GeoNorm: bound each update's angle smoothly to this many radians (0: unbounded)"},
        {"geo-radius", "0", "GeoNorm: the radius of the stream's sphere (0: sqrt(C))"},
        {"geo-sublayer-norm", "false", "GeoNorm: the sublayers read the stream through the configured norm", true},
        {"geo-learnable-step", "false", "GeoNorm: each update's step is a parameter (attn_step, mlp_step), starting at a_k", true},
        {"image-size", "28", "vit: images are resized to this square size"},
        {"patch", "7", "vit: patch size (must divide --image-size)"},
        {"channels", "1", "vit: image channels (1 or 3)"},
    };
}

// --dyt-alpha: a number, or auto (nn/config.h, kDytAlpha0*).
static double dyt_alpha0(const Flags& flags, Family family) {
    if (flags.str("dyt-alpha") != "auto") return flags.number("dyt-alpha");
    return family == Family::ViT ? kDytAlpha0Vit : kDytAlpha0LanguageModel;
}

// --embed-scale: a number (0: none), sqrt (sqrt of the width), or auto:
// sqrt for a language model with DyT, none otherwise (the scalar helps DyT
// and the model without a norm, and hurts LayerNorm: tutorials/12).
static double embed_scale0(const Flags& flags, const TransformerConfig& cfg) {
    std::string v = flags.str("embed-scale");
    bool sqrt_width = v == "sqrt" || (v == "auto" && cfg.family != Family::ViT && cfg.norm == NormKind::DyT);
    if (sqrt_width) return std::sqrt((double)cfg.n_embd);
    return v == "auto" ? 0 : flags.number("embed-scale");
}

TransformerConfig config_from_flags(const Flags& flags) {
    std::string model = flags.str("model");
    Family family;
    try {
        family = parse_family(model);
    } catch (const Error&) {
        throw Error("flag --model: unknown model '" + model + "' (choose gpt2, llama or vit)");
    }
    TransformerConfig cfg = default_config(family);
    if (!flags.str("norm").empty()) cfg.norm = parse_norm(flags.str("norm"));
    cfg.placement = parse_placement(flags.str("placement"));
    cfg.decay = parse_decay(flags.str("decay"));
    cfg.attention = parse_attention(flags.str("attention"));
    if (!flags.str("mlp").empty()) cfg.mlp = parse_mlp(flags.str("mlp"));
    if (!flags.str("positions").empty()) cfg.positions = parse_positions(flags.str("positions"));
    cfg.n_layer = flags.integer("layers");
    cfg.n_embd = flags.integer("width");
    cfg.n_head = flags.integer("heads");
    cfg.n_kv_head = flags.integer("kv-heads");
    cfg.block_size = flags.integer("seq");
    cfg.dropout = flags.number("dropout");
    cfg.dyt_alpha0 = dyt_alpha0(flags, cfg.family);
    cfg.dyt_alpha0_attn = flags.number("dyt-alpha-attn");
    // The embedding scale first: the gains' auto values depend on it.
    cfg.embed_scale0 = embed_scale0(flags, cfg);
    if (flags.str("dyt-final-gamma") == "auto")
        cfg.dyt_final_gamma0 = cfg.family == Family::ViT ? 1 : cfg.dyt_final_gamma_matching_layernorm();
    else
        cfg.dyt_final_gamma0 = flags.number("dyt-final-gamma");
    cfg.dyt_gamma0 = flags.str("dyt-gamma") == "auto" ? cfg.dyt_final_gamma_matching_layernorm() : flags.number("dyt-gamma");
    cfg.geo_step = flags.number("geo-step");
    cfg.geo_max_angle = flags.number("geo-max-angle");
    cfg.geo_radius = flags.number("geo-radius");
    cfg.geo_sublayer_norm = flags.on("geo-sublayer-norm");
    cfg.geo_learnable_step = flags.on("geo-learnable-step");
    // GeoNorm's flags do nothing elsewhere: say so rather than ignore them
    // (their default values may be given, as the studies' commands do).
    auto changed = [&](const std::string& name) {
        if (!flags.given(name)) return false;
        if (flags.spec(name).is_switch) return flags.on(name);
        if (name == "decay") return cfg.decay != Decay::None;
        return flags.number(name) != std::stod(flags.spec(name).default_value);
    };
    if (cfg.placement != Placement::GeoNorm)
        for (const char* name : {"decay", "geo-step", "geo-max-angle", "geo-radius", "geo-sublayer-norm", "geo-learnable-step"})
            if (changed(name))
                throw Error("flag --" + std::string(name) + (flags.spec(name).is_switch ? "" : " " + flags.str(name)) +
                            " applies to --placement geonorm only, not " + flags.str("placement"));
    cfg.vocab_size = 256;
    cfg.image_size = flags.integer("image-size");
    cfg.patch_size = flags.integer("patch");
    cfg.channels = flags.integer("channels");
    if (cfg.family != Family::ViT) cfg.swiglu_multiple = std::min<int64_t>(256, std::max<int64_t>(8, cfg.n_embd / 4));
    cfg.validate();
    return cfg;
}

TextCodec make_codec(const Flags& flags, const std::string& training_text, std::FILE* out) {
    std::string spec = flags.accepts("tokenizer") ? flags.str("tokenizer") : "byte";
    TextCodec codec;
    if (spec == "byte") {
        codec.encode = data::encode_bytes;
        codec.ids_are_bytes = true;
        codec.token_text = [](int64_t t) { return std::string(1, (char)t); };
        return codec;
    }
    namespace fs = std::filesystem;
    std::shared_ptr<data::BPETokenizer> tok;
    if (fs::is_directory(spec)) {
        tok = std::make_shared<data::BPETokenizer>(
            data::BPETokenizer::load_gpt2((fs::path(spec) / "vocab.json").string(), (fs::path(spec) / "merges.txt").string()));
    } else if (fs::exists(spec)) {
        tok = std::make_shared<data::BPETokenizer>(data::BPETokenizer::load(spec));
    } else {
        if (training_text.empty()) throw Error("--tokenizer: '" + spec + "' does not exist");
        int64_t size = flags.accepts("vocab-size") ? flags.integer("vocab-size") : 512;
        std::fprintf(out, "training a BPE vocabulary of %lld tokens, saved to %s\n", (long long)size, spec.c_str());
        // Learning merges is quadratic-ish in the corpus: a 1 MB sample is plenty.
        tok = std::make_shared<data::BPETokenizer>(data::BPETokenizer::train(training_text.substr(0, 1 << 20), size));
        tok->save(spec);
    }
    codec.encode = [tok](const std::string& text) { return tok->encode(text); };
    codec.token_text = [tok](int64_t t) { return tok->token(t); };
    codec.vocab_size = tok->vocab_size();
    codec.name = "BPE " + spec + " (" + std::to_string(codec.vocab_size) + " tokens)";
    return codec;
}

void encode_pieces(const TextCodec& codec, const std::string& text,
                   const std::function<bool(const std::vector<int64_t>& ids, size_t bytes_done)>& on_piece,
                   size_t piece_bytes) {
    for (size_t done = 0; done < text.size();) {
        size_t end = data::BPETokenizer::safe_cut_after(text, done + piece_bytes);
        std::vector<int64_t> ids = codec.encode(text.substr(done, end - done));
        done = end;
        if (!on_piece(ids, done)) return;
    }
}

std::vector<int64_t> encode_prefix(const TextCodec& codec, const std::string& text, int64_t count, size_t piece_bytes) {
    std::vector<int64_t> ids;
    if (count <= 0) return ids;
    encode_pieces(codec, text, [&](const std::vector<int64_t>& piece, size_t) {
        ids.insert(ids.end(), piece.begin(), piece.end());
        return (int64_t)ids.size() < count;
    }, piece_bytes);
    return ids;
}

// A model flag given on the command line must agree with the configuration
// that a model directory or checkpoint brings: silently preferring one would
// build a model the user did not ask for (or fail later with a list of
// missing weights). Each given flag is read the way config_from_flags reads
// it and compared with the loaded value.
static void check_flags_agree(const Flags& flags, const TransformerConfig& loaded, const std::string& source) {
    std::string family = to_string(loaded.family);
    auto number = flag_number;
    auto yes_no = [](bool on) { return std::string(on ? "on" : "off"); };
    // flag -> (its value as the flag says it, the loaded config's value).
    std::vector<std::pair<std::string, std::function<std::pair<std::string, std::string>(const std::string&)>>> checks = {
        {"model", [&](const std::string& v) { return std::make_pair(v, std::string(family)); }},
        {"norm", [&](const std::string& v) { return std::make_pair(to_string(parse_norm(v)), to_string(loaded.norm)); }},
        {"placement", [&](const std::string& v) { return std::make_pair(to_string(parse_placement(v)), to_string(loaded.placement)); }},
        {"decay", [&](const std::string& v) { return std::make_pair(to_string(parse_decay(v)), to_string(loaded.decay)); }},
        {"attention", [&](const std::string& v) { return std::make_pair(to_string(parse_attention(v)), to_string(loaded.attention)); }},
        {"mlp", [&](const std::string& v) { return std::make_pair(to_string(parse_mlp(v)), to_string(loaded.mlp)); }},
        {"positions", [&](const std::string& v) { return std::make_pair(to_string(parse_positions(v)), to_string(loaded.positions)); }},
        {"layers", [&](const std::string&) { return std::make_pair(std::to_string(flags.integer("layers")), std::to_string(loaded.n_layer)); }},
        {"width", [&](const std::string&) { return std::make_pair(std::to_string(flags.integer("width")), std::to_string(loaded.n_embd)); }},
        {"heads", [&](const std::string&) { return std::make_pair(std::to_string(flags.integer("heads")), std::to_string(loaded.n_head)); }},
        {"kv-heads", [&](const std::string&) {
             int64_t k = flags.integer("kv-heads");
             return std::make_pair(std::to_string(k > 0 ? k : loaded.n_head), std::to_string(loaded.kv_heads()));
         }},
        {"dyt-alpha", [&](const std::string&) { return std::make_pair(number(dyt_alpha0(flags, loaded.family)), number(loaded.dyt_alpha0)); }},
        {"embed-scale", [&](const std::string&) { return std::make_pair(number(embed_scale0(flags, loaded)), number(loaded.embed_scale0)); }},
        {"geo-step", [&](const std::string&) { return std::make_pair(number(flags.number("geo-step")), number(loaded.geo_step)); }},
        {"geo-max-angle", [&](const std::string&) { return std::make_pair(number(flags.number("geo-max-angle")), number(loaded.geo_max_angle)); }},
        {"geo-radius", [&](const std::string&) { return std::make_pair(number(flags.number("geo-radius")), number(loaded.geo_radius)); }},
        {"geo-sublayer-norm", [&](const std::string&) { return std::make_pair(yes_no(flags.on("geo-sublayer-norm")), yes_no(loaded.geo_sublayer_norm)); }},
        {"geo-learnable-step", [&](const std::string&) { return std::make_pair(yes_no(flags.on("geo-learnable-step")), yes_no(loaded.geo_learnable_step)); }},
    };
    if (loaded.family == Family::ViT) {
        checks.push_back({"image-size", [&](const std::string&) { return std::make_pair(std::to_string(flags.integer("image-size")), std::to_string(loaded.image_size)); }});
        checks.push_back({"patch", [&](const std::string&) { return std::make_pair(std::to_string(flags.integer("patch")), std::to_string(loaded.patch_size)); }});
        checks.push_back({"channels", [&](const std::string&) { return std::make_pair(std::to_string(flags.integer("channels")), std::to_string(loaded.channels)); }});
    }
    for (auto& [name, values] : checks) {
        if (!flags.accepts(name) || !flags.given(name)) continue;
        auto [wanted, have] = values(flags.str(name));
        if (wanted != have)
            throw Error("flag --" + name + " " + flags.str(name) + " contradicts " + source + ", which says " + have +
                        " (drop the flag to use the saved model as it is)");
    }
}

TransformerConfig resolve_config(const Flags& flags) {
    auto has = [&](const char* name) { return flags.accepts(name) && flags.given(name); };
    TransformerConfig cfg;
    if (has("resume")) {
        cfg = read_checkpoint_config(flags.str("resume"));
        check_flags_agree(flags, cfg, "the checkpoint " + flags.str("resume"));
    } else if (has("init") && is_directory_target(flags.str("init"))) {
        cfg = read_directory_config(flags.str("init"));
        check_flags_agree(flags, cfg, (std::filesystem::path(flags.str("init")) / "config.json").string());
    } else {
        return config_from_flags(flags);
    }
    // Dropout is a training setting, not part of the weights: the flag wins.
    if (has("dropout")) cfg.dropout = flags.number("dropout");
    return cfg;
}

std::string describe(const TransformerConfig& c) {
    return to_string(c.family) + " L=" + std::to_string(c.n_layer) + " C=" + std::to_string(c.n_embd) +
           " H=" + std::to_string(c.n_head) + " norm=" + to_string(c.norm) + " placement=" + to_string(c.placement) +
           (c.placement == Placement::GeoNorm ? " decay=" + to_string(c.decay) : "") +
           " attention=" + to_string(c.attention) + " mlp=" + to_string(c.mlp) + " positions=" + to_string(c.positions);
}

Device device_from_name(const std::string& name) {
    if (name == "cpu") return kCPU;
    if (name == "cuda" || name == "cuda:0") return Device{DeviceType::CUDA, 0};
    throw Error("flag --device: unknown device '" + name + "' (choose cpu or cuda)");
}

Device parse_device(const std::string& name) {
    Device device = device_from_name(name);
    if (device == kCPU) return kCPU;
    std::string why;
    if (!cuda_available(&why)) throw Error("flag --device: cuda is not available: " + why);
    return device;
}

FlagSpec precision_flag() {
    return {"precision", "fp32",
            "fp32 | bf16 | fp16: the dtype every linear layer's operands and attention's q, k, v are rounded to "
            "(sums, weights, norms, softmax and the loss stay float32); fp16 trains with dynamic loss scaling"};
}

DType parse_precision(const std::string& name) {
    if (name == "fp32") return kFloat32;
    if (name == "bf16") return kBFloat16;
    if (name == "fp16") return kFloat16;
    throw Error("flag --precision: unknown precision '" + name + "' (choose fp32, bf16 or fp16)");
}

const char* precision_name(DType operand_dtype) {
    return operand_dtype == kBFloat16 ? "bf16" : operand_dtype == kFloat16 ? "fp16" : "fp32";
}

LanguageModel build_language_model(const TransformerConfig& cfg, Generator& gen, nn::Options opt) {
    if (cfg.family == Family::ViT) throw Error("the vit model classifies images; it has no text forward");
    return LanguageModel{make_model(cfg, gen, opt)};
}

Tensor LanguageModel::forward(const Tensor& ids, std::vector<Tensor>* stream) const {
    return module->forward(raw::to_device(ids, module->device()), stream);
}

data::TokenIds load_corpus_tokens(const std::string& path, const TextCodec& codec) {
    if (!data::is_token_file(path)) return encode_text(codec, data::read_corpus(path));
    data::TokenFileInfo info;
    data::TokenIds ids = data::map_token_file(path, &info);
    if (info.vocab_size != codec.vocab_size)
        throw Error("--data: the token file '" + path + "' was written with a vocabulary of " +
                    std::to_string(info.vocab_size) + " tokens, the tokenizer (" + codec.name + ") has " +
                    std::to_string(codec.vocab_size) + " (give --tokenizer the one `normcore tokenize` used)");
    return ids;
}

data::TokenIds encode_text(const TextCodec& codec, std::string text) {
    if (codec.ids_are_bytes) return data::byte_ids(std::move(text));
    return codec.encode(text);
}

std::string corpus_text_if_any(const std::string& path) {
    return data::is_token_file(path) ? std::string() : data::read_corpus(path);
}

void check_vocabulary(const TextCodec& codec, const TransformerConfig& cfg) {
    if (codec.vocab_size > cfg.vocab_size)
        throw Error("the tokenizer has " + std::to_string(codec.vocab_size) + " tokens, the model's vocabulary is " +
                    std::to_string(cfg.vocab_size) + " (give the tokenizer the model was trained with)");
}

std::vector<int64_t> print_sample(const LanguageModel& lm, const TextCodec& codec, const std::string& prompt,
                                  int64_t count, const SampleOptions& options, Generator& gen, std::FILE* out,
                                  std::ostream* exact) {
    data::PrintableStream screen;
    std::fputs(screen.feed(prompt).c_str(), out);
    if (exact) *exact << prompt;
    std::vector<int64_t> ids = codec.encode(prompt.empty() ? std::string("\n") : prompt);
    // The text appears as it is produced, but the stream is flushed (a
    // system call) at most every 1/30 s: a slow model shows each token at
    // once, a fast one in smooth bursts. Flushing after every token cost
    // 8-38 us a token of the default model's 84 on a virtual machine whose
    // system calls are slow (bench/results/generate-decoder-2026-12-06.txt).
    using Clock = std::chrono::steady_clock;
    Clock::time_point last_flush = Clock::now();
    std::vector<int64_t> tokens = generate_tokens(*lm.module, ids, count, options, gen, [&](int64_t t) {
        std::string bytes = codec.token_text(t);
        std::fputs(screen.feed(bytes).c_str(), out);
        if (Clock::now() - last_flush >= std::chrono::milliseconds(33)) {
            std::fflush(out);
            last_flush = Clock::now();
        }
        if (exact) *exact << bytes;
    });
    std::fputs(screen.finish().c_str(), out);
    std::fflush(out);
    return tokens;
}

}  // namespace app
}  // namespace nc
