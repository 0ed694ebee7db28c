#include "train/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/safetensors.h"
#include "tensor/raw_ops.h"
#include "nn/hf.h"

namespace nc {
namespace app {

namespace fs = std::filesystem;

bool is_directory_target(const std::string& path) {
    return !path.empty() && (path.back() == '/' || fs::is_directory(path));
}

void check_finite_weights(const nn::TransformerModel& model, const std::string& path) {
    for (auto& [name, t] : model.named_parameters())
        if (!raw::all_finite(t))
            throw Error("refusing to write '" + path + "': parameter " + name +
                        " holds NaN or Inf values; whatever was there is unchanged");
}

void save_weights(const nn::TransformerModel& model, const std::string& path) {
    check_finite_weights(model, path);
    std::map<std::string, std::string> meta = {{"format", "pt"}, {"normcore_config", nn::hf_config_json(model.config())}};
    if (!is_directory_target(path)) {
        data::write_safetensors(path, nn::to_hf_layout(model), meta);
        return;
    }
    // A directory is a pair: both files are written under temporary names
    // first and renamed only when both are complete, so a full disk never
    // leaves a new config.json beside old weights.
    fs::create_directories(path);
    std::string weights = (fs::path(path) / "model.safetensors").string(), config = (fs::path(path) / "config.json").string();
    auto drop_temporaries = [&] {
        std::remove((weights + ".new").c_str());
        std::remove((config + ".new").c_str());
    };
    try {
        data::write_safetensors(weights + ".new", nn::to_hf_layout(model), meta);
        std::ofstream out(config + ".new");
        out << nn::hf_config_json(model.config()) << "\n";
        out.close();
        if (!out) throw Error("--save: cannot write '" + config + ".new' (disk full?)");
    } catch (...) {
        drop_temporaries();
        throw;
    }
    std::error_code ec1, ec2;
    fs::rename(weights + ".new", weights, ec1);
    if (!ec1) fs::rename(config + ".new", config, ec2);
    if (ec1 || ec2) {
        drop_temporaries();
        throw Error("--save: cannot move the new files into '" + path + "': " + (ec1 ? ec1 : ec2).message());
    }
}

void load_weights(nn::TransformerModel& model, const std::string& path) {
    std::string file = is_directory_target(path) ? (fs::path(path) / "model.safetensors").string() : path;
    try {
        nn::load_hf_layout(model, data::read_safetensors(file).tensors);
    } catch (const Error& e) {
        throw Error("loading weights from '" + file + "': " + e.what());
    }
}

nn::TransformerConfig read_directory_config(const std::string& dir) {
    std::string path = (fs::path(dir) / "config.json").string();
    std::ifstream in(path);
    if (!in) throw Error("--init: '" + path + "' is missing (a model directory holds config.json and model.safetensors)");
    std::stringstream text;
    text << in.rdbuf();
    return nn::config_from_hf_json(text.str(), path);
}

void save_training_checkpoint(const std::string& path, const nn::TransformerModel& model, const optim::Optimizer& opt,
                              const TrainingState& s) {
    check_finite_weights(model, path);
    std::map<std::string, Tensor> tensors;
    for (auto& [name, t] : nn::to_hf_layout(model)) tensors["model." + name] = t;
    for (auto& [name, t] : opt.state()) {
        // A NaN in a moment would come back as NaN weights at the first
        // step after a resume.
        if (!raw::all_finite(t))
            throw Error("refusing to write '" + path + "': optimizer state " + name +
                        " holds NaN or Inf values; whatever was there is unchanged");
        tensors["optimizer." + name] = t;
    }
    std::map<std::string, std::string> meta = {
        {"format", "normcore-training"},
        {"config", nn::hf_config_json(model.config())},
        {"step", std::to_string(s.step)},
        {"batches_taken", std::to_string(s.batches_taken)},
        {"batch_seed", std::to_string(s.batch_seed)},
        {"batch_offset", std::to_string(s.batch_offset)},
        {"dropout_seed", std::to_string(s.dropout_seed)},
        {"dropout_offset", std::to_string(s.dropout_offset)},
        {"schedule_steps", std::to_string(s.schedule_steps)},
        {"ranks", std::to_string(s.ranks)},
    };
    if (s.loss_scale > 0) {
        char scale[32];
        std::snprintf(scale, sizeof scale, "%.17g", s.loss_scale);
        meta["loss_scale"] = scale;
        meta["loss_scale_good_steps"] = std::to_string(s.loss_scale_good_steps);
        meta["loss_scale_skipped"] = std::to_string(s.loss_scale_skipped);
    }
    data::write_safetensors(path, tensors, meta);
}

static const std::string& required(const std::map<std::string, std::string>& meta, const std::string& key,
                                   const std::string& path) {
    auto it = meta.find(key);
    if (it == meta.end()) throw Error("--resume: '" + path + "' is not a normcore training checkpoint (no '" + key + "')");
    return it->second;
}

nn::TransformerConfig read_checkpoint_config(const std::string& path) {
    data::SafetensorsFile f = data::read_safetensors(path);
    return nn::config_from_hf_json(required(f.metadata, "config", path), path);
}

TrainingState load_training_checkpoint(const std::string& path, nn::TransformerModel& model, optim::Optimizer& opt) {
    data::SafetensorsFile f = data::read_safetensors(path);
    if (required(f.metadata, "format", path) != "normcore-training")
        throw Error("--resume: '" + path + "' holds weights only, not a training checkpoint (use --init for weights)");
    std::map<std::string, Tensor> weights, opt_state;
    for (auto& [name, t] : f.tensors) {
        if (name.rfind("model.", 0) == 0) weights[name.substr(6)] = t;
        else if (name.rfind("optimizer.", 0) == 0) opt_state[name.substr(10)] = t;
    }
    try {
        nn::load_hf_layout(model, weights);
        opt.load_state(opt_state);
    } catch (const Error& e) {
        throw Error("--resume '" + path + "': " + e.what());
    }
    // Every field: decimal digits only, at most `max` (the positions count
    // steps and batches; seeds and offsets are full 64-bit generator states).
    auto number = [&](const char* key, uint64_t max) {
        const std::string& text = required(f.metadata, key, path);
        uint64_t v = 0;
        bool ok = !text.empty() && text.size() <= 20;
        for (char c : text) ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(v, 10, &v) &&
                                 !__builtin_add_overflow(v, (uint64_t)(c - '0'), &v);
        if (!ok || v > max)
            throw Error("--resume: '" + path + "': metadata field " + key + " is '" + text +
                        "', not a whole number from 0 to " + std::to_string(max));
        return v;
    };
    const uint64_t kMaxCount = 1000000000000000ull;  // 10^15 steps or batches
    TrainingState s;
    s.step = (int64_t)number("step", kMaxCount);
    s.batches_taken = (int64_t)number("batches_taken", kMaxCount);
    s.batch_seed = number("batch_seed", UINT64_MAX);
    s.batch_offset = number("batch_offset", UINT64_MAX);
    s.dropout_seed = number("dropout_seed", UINT64_MAX);
    s.dropout_offset = number("dropout_offset", UINT64_MAX);
    // Older checkpoints did not record it.
    s.schedule_steps = f.metadata.count("schedule_steps") ? (int64_t)number("schedule_steps", kMaxCount) : 0;
    s.ranks = f.metadata.count("ranks") ? (int64_t)number("ranks", 1000000) : 1;
    if (s.ranks < 1) throw Error("checkpoint '" + path + "': metadata field 'ranks' must be at least 1");
    if (f.metadata.count("loss_scale")) {  // a float16 run's scaler
        const std::string& text = f.metadata.at("loss_scale");
        char* end = nullptr;
        s.loss_scale = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !(s.loss_scale > 0) || !std::isfinite(s.loss_scale))
            throw Error("--resume: '" + path + "': metadata field loss_scale is '" + text + "', not a positive number");
        s.loss_scale_good_steps = (int64_t)number("loss_scale_good_steps", kMaxCount);
        s.loss_scale_skipped = (int64_t)number("loss_scale_skipped", kMaxCount);
    }
    return s;
}

}  // namespace app
}  // namespace nc
