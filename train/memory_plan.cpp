// memory_plan.cpp — train/memory_plan.h: the forward pass's memory, and the
// whole run's predicted on the meta device.
#include "train/memory_plan.h"

#include <omp.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "data/images.h"
#include "nn/models.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer.h"
#include "tensor/backend.h"
#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemm.h"
#include "tensor/meta_backend.h"
#include "train/checkpoint.h"
#include "train/lm.h"
#include "train/train.h"
#include "train/train_step.h"

namespace nc {
namespace app {

static constexpr double kMiB = 1048576.0;

Tensor ForwardMemoryProbe::measure(const std::function<Tensor()>& forward) {
    const Backend& backend = backend_for(device);
    size_t before = backend.allocator_stats().bytes_in_use;
    Tensor loss = forward();
    size_t after = backend.allocator_stats().bytes_in_use;
    if (after > before) largest_bytes = std::max(largest_bytes, after - before);
    return loss;
}

// The vocabulary train would use, without reading the corpus: bytes (256),
// a saved BPE file or GPT-2's directory (read: small), or --vocab-size for
// a BPE vocabulary train would learn first (at most that many: a small
// corpus can end the merges sooner). A checkpoint or model directory
// brings its own (resolve_config read it).
static int64_t vocabulary_size(const Flags& flags, const nn::TransformerConfig& cfg) {
    if (flags.given("resume") || (flags.given("init") && is_directory_target(flags.str("init"))))
        return cfg.vocab_size;
    std::string tokenizer = flags.str("tokenizer");
    if (tokenizer == "byte") return 256;
    if (std::filesystem::exists(tokenizer)) return make_codec(flags, "", stdout).vocab_size;
    return flags.integer("vocab-size");
}

static std::uintptr_t block_of(const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.storage()->data); }

double mib_of_tensors(const std::vector<Tensor>& tensors) {
    double bytes = 0;
    for (const Tensor& t : tensors) bytes += (double)cpu::size_class(t.storage()->nbytes);
    return bytes / kMiB;
}

static double mib_of_blocks(const std::set<std::uintptr_t>& blocks, const std::map<std::uintptr_t, size_t>& live) {
    double bytes = 0;
    for (std::uintptr_t b : blocks) {
        auto it = live.find(b);
        if (it != live.end()) bytes += (double)it->second;
    }
    return bytes / kMiB;
}

// Replays the second step's allocations to the moment the most was in use
// and sorts what was live then into the five parts (the workspace is what
// is left when the other four are known).
static PeakSplit split_the_peak(const std::vector<MetaEvent>& events, size_t baseline,
                                const std::set<std::uintptr_t>& parameters,
                                const std::set<std::uintptr_t>& optimizer_state,
                                const std::set<std::uintptr_t>& gradients, const std::set<std::uintptr_t>& forward_made) {
    size_t in_use = 0, most = 0, peak_index = 0;
    for (size_t i = 0; i < events.size(); ++i) {
        in_use = events[i].allocated ? in_use + events[i].bytes : in_use - events[i].bytes;
        if (in_use > most) most = in_use, peak_index = i;
    }
    std::map<std::uintptr_t, size_t> live;
    for (size_t i = 0; i <= peak_index && i < events.size(); ++i) {
        if (events[i].allocated) live[events[i].block] = events[i].bytes;
        else live.erase(events[i].block);
    }
    PeakSplit s;
    s.parameters = mib_of_blocks(parameters, live);
    s.optimizer_state = mib_of_blocks(optimizer_state, live);
    s.gradients = mib_of_blocks(gradients, live);
    std::set<std::uintptr_t> activations;
    for (std::uintptr_t b : forward_made)
        if (!parameters.count(b) && !optimizer_state.count(b) && !gradients.count(b)) activations.insert(b);
    s.activations = mib_of_blocks(activations, live);
    // Meta tensors that were alive before the prediction started (another
    // prediction's, in a test) are in the record too; they are no part.
    s.workspace = (double)(most - baseline) / kMiB - s.parameters - s.optimizer_state - s.gradients - s.activations;
    return s;
}

// The ViT's images as train loads them (train/train_task.cpp): float32
// [N, channels, size, size], the training set and the validation set, each
// one tensor. Only their number is read here: Fashion-MNIST's label files'
// headers, or the image files of a folder. (Loading a folder holds its
// images twice for a moment, while it shuffles them into the two sets; a
// run whose step needs less than that peaks there instead.)
static double image_data_mib(const Flags& flags, const nn::TransformerConfig& cfg) {
    namespace fs = std::filesystem;
    std::string path = flags.given("data") ? flags.str("data") : data::kFashionMnist;
    int64_t train = 0, val = 0;
    if (fs::exists(path + "/train-images-idx3-ubyte.gz")) {
        // As the task: the first --train-images training images (0: all) and
        // --eval-batches x --batch test images, from the 5,001st for tuning.
        std::vector<int64_t> dims;
        data::read_idx(path + "/train-labels-idx1-ubyte.gz", dims);
        train = dims.at(0);
        if (flags.integer("train-images") > 0) train = std::min(train, flags.integer("train-images"));
        data::read_idx(path + "/t10k-labels-idx1-ubyte.gz", dims);
        int64_t offset = flags.str("eval-split") == "tuning" ? 5000 : 0;
        val = std::min(flags.integer("eval-batches") * flags.integer("batch"), dims.at(0) - offset);
    } else if (fs::is_directory(path)) {
        int64_t n = data::count_image_folder(path);
        val = (int64_t)((double)n * flags.number("val-fraction"));
        train = n - val;
    } else {
        throw Error("--data: '" + path + "' is neither Fashion-MNIST's directory nor a folder of root/<class>/<image>");
    }
    size_t image = (size_t)(cfg.channels * cfg.image_size * cfg.image_size) * sizeof(float);
    return (double)(cpu::size_class(image * (size_t)train) + (val > 0 ? cpu::size_class(image * (size_t)val) : 0)) / kMiB;
}

MemoryPrediction predict_memory(const Flags& flags) {
    MemoryPrediction p;
    p.device = device_from_name(flags.str("device")).str();
    nn::TransformerConfig cfg = resolve_config(flags);
    bool text = cfg.family != nn::Family::ViT;
    if (text) cfg.vocab_size = vocabulary_size(flags, cfg);
    check_run_shape(flags, cfg);
    int64_t B = flags.integer("batch"), T = flags.integer("seq"), accum = flags.integer("accum");
    if (B <= 0 || T <= 0) throw Error("flags --batch and --seq must be positive");
    p.model = describe(cfg);
    p.run = "batch " + std::to_string(B) + (text ? " x " + std::to_string(T) + " tokens" : " images") + ", " +
            flags.str("precision") + " operands, activations " + (flags.on("recompute") ? "recomputed" : "kept") +
            (accum > 1 ? ", " + std::to_string(accum) + " micro-batches per step" : "") + ", " + flags.str("optimizer");

    const Backend& meta = meta_backend();
    size_t baseline = meta.allocator_stats().bytes_in_use;  // meta tensors alive before this prediction
    meta.reset_peak_bytes();
    Generator gen((uint64_t)flags.integer("seed"));
    std::shared_ptr<nn::TransformerModel> model = nn::make_model(cfg, gen, nn::Options{kFloat32, kMeta});
    model->set_recompute(flags.on("recompute"));
    model->set_precision(parse_precision(flags.str("precision")));
    std::unique_ptr<optim::Optimizer> optimizer = make_optimizer(flags, *model);
    std::unique_ptr<optim::LossScaler> scaler;
    if (model->precision() == kFloat16) scaler = std::make_unique<optim::LossScaler>();

    // Blocks the forward passes of the recorded step handed out.
    std::set<std::uintptr_t> forward_made;
    bool recording = false;
    ForwardMemoryProbe probe{kMeta};
    auto forward = [&] {
        // A batch of token ids (or images) made where train's loader makes
        // it: inside the step's forward, counted with it.
        if (text) {
            Tensor ids = raw::zeros({B, T}, kInt64, kMeta), targets = raw::zeros({B, T}, kInt64, kMeta);
            return cross_entropy(model->forward(ids), targets);
        }
        Tensor images = raw::zeros({B, cfg.channels, cfg.image_size, cfg.image_size}, kFloat32, kMeta);
        return cross_entropy(model->forward(images), raw::zeros({B}, kInt64, kMeta));
    };
    std::set<std::uintptr_t> gradients;
    TrainStep step;
    step.loss = [&] {
        size_t first = recording ? meta_record_size() : 0;
        Tensor loss = probe.measure(forward);
        if (recording)
            for (const MetaEvent& e : meta_record_since(first))
                if (e.allocated) forward_made.insert(e.block);
        return loss;
    };
    step.params = model->parameters();
    step.optimizer = optimizer.get();
    step.accum = accum;
    step.grad_clip = flags.number("grad-clip");
    step.scaler = scaler.get();
    step.before_update = [&] {
        if (!recording) return;
        for (const Tensor& param : step.params)
            if (param.grad().defined()) gradients.insert(block_of(param.grad()));
    };
    // The first step creates the optimizer's state; the second is the
    // steady state every later step repeats.
    train_step(step);
    recording = true;
    start_meta_record();
    train_step(step);

    std::set<std::uintptr_t> parameters, state;
    std::vector<Tensor> state_tensors;
    for (const Tensor& param : step.params) parameters.insert(block_of(param));
    for (const auto& entry : optimizer->state()) {
        state.insert(block_of(entry.second));
        state_tensors.push_back(entry.second);
    }
    std::vector<MetaEvent> events = stop_meta_record();
    p.parameters_mib = mib_of_tensors(step.params);
    p.optimizer_mib = mib_of_tensors(state_tensors);
    p.gradients_mib = p.parameters_mib;  // one per parameter, of its shape
    p.activations_mib = (double)probe.largest_bytes / kMiB;
    if (p.device == "cpu") p.packing_bound_mib = (double)cpu::packing_buffers_bound_bytes(omp_get_max_threads()) / kMiB;
    p.at_peak = split_the_peak(events, baseline, parameters, state, gradients, forward_made);
    if (!text && p.device == "cpu") p.data_mib = image_data_mib(flags, cfg);
    p.peak_mib = (double)(meta.allocator_stats().peak_bytes_in_use - baseline) / kMiB + p.data_mib;
    return p;
}

double parse_memory_size(const std::string& text, const std::string& flag) {
    auto bad = [&] {
        return Error("flag --" + flag + ": '" + text +
                     "' is not a memory size (write it as 6GB, 6GiB, 512MB, 512MiB or a number of bytes)");
    };
    size_t end = 0;
    double number = 0;
    try {
        number = std::stod(text, &end);
    } catch (const std::exception&) {
        throw bad();
    }
    std::string unit;
    for (size_t i = end; i < text.size(); ++i)
        if (!std::isspace((unsigned char)text[i])) unit += (char)std::toupper((unsigned char)text[i]);
    static const std::map<std::string, double> units = {
        {"", 1},         {"B", 1},           {"KB", 1e3},        {"MB", 1e6},          {"GB", 1e9},
        {"TB", 1e12},    {"K", 1024.0},      {"KIB", 1024.0},    {"M", kMiB},          {"MIB", kMiB},
        {"G", kMiB * 1024}, {"GIB", kMiB * 1024}, {"T", kMiB * kMiB}, {"TIB", kMiB * kMiB}};
    auto it = units.find(unit);
    if (it == units.end() || !std::isfinite(number) || number <= 0) throw bad();
    return number * it->second;
}

static std::string mib(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", x);
    return buf;
}

void print_memory_prediction(const MemoryPrediction& p, double budget_bytes, const std::string& budget_text,
                             std::FILE* out) {
    const PeakSplit& s = p.at_peak;
    std::fprintf(out, "model: %s\nrun: %s\n", p.model.c_str(), p.run.c_str());
    std::fprintf(out, "predicted tensor memory on %s (a dry run of two training steps on the meta device):\n",
                 p.device.c_str());
    std::fprintf(out, "  parameters        %12s\n", mib(p.parameters_mib).c_str());
    std::fprintf(out, "  gradients         %12s  made during backward, kept until the update\n", mib(p.gradients_mib).c_str());
    std::fprintf(out, "  optimizer state   %12s\n", mib(p.optimizer_mib).c_str());
    std::fprintf(out, "  activations       %12s  what the forward pass keeps for backward\n", mib(p.activations_mib).c_str());
    char images[48] = "";
    if (p.data_mib > 0) {
        std::fprintf(out, "  images            %12s  the training and validation sets, in the same tensor memory on the CPU\n",
                     mib(p.data_mib).c_str());
        std::snprintf(images, sizeof images, "images %.1f + ", p.data_mib);
    }
    std::fprintf(out, "  peak              %12s  = %sparameters %.1f + optimizer state %.1f + activations still held %.1f "
                      "+ gradients made so far %.1f + workspace %.1f\n",
                 mib(p.peak_mib).c_str(), images,
                 s.parameters, s.optimizer_state, s.activations, s.gradients, s.workspace);
    if (p.device == "cpu")
        std::fprintf(out, "  plus up to %.1f MiB of the kernels' scratch (the GEMM's packing buffers and partial sums, attention's tiles), "
                          "which they take from the same allocator and the dry run cannot see\n",
                     p.packing_bound_mib);
    else
        std::fprintf(out, "  (on a GPU the CUDA context, cuBLAS's workspace and the kernels' own scratch come on top: a few "
                          "hundred MiB)\n");
    if (budget_bytes <= 0) return;
    double budget_mib = budget_bytes / kMiB;
    // The packing buffers' bound counts: a budget must hold the worst case.
    if (p.worst_mib() <= budget_mib)
        std::fprintf(out, "budget %s (%.1f MiB): fits, the peak is at most %.0f%% of it\n", budget_text.c_str(),
                     budget_mib, 100 * p.worst_mib() / budget_mib);
    else
        std::fprintf(out, "budget %s (%.1f MiB): does not fit, the peak is up to %.2fx the budget\n",
                     budget_text.c_str(), budget_mib, p.worst_mib() / budget_mib);
}

}  // namespace app
}  // namespace nc
