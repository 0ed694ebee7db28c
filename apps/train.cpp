// train.cpp — `normcore train`: the training loop of a language model.
//
// data -> batches -> forward -> cross-entropy -> backward -> clip -> optimizer
// step, with a learning-rate schedule, validation every N steps, a progress
// bar, a CSV log of every step in the run directory, a text sample at the
// end, and the summary line of the command-line contract.
#include <omp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/checkpoint.h"
#include "apps/distributed.h"
#include "apps/commands.h"
#include "apps/lm.h"
#include "data/corpus.h"
#include "data/images.h"
#include "data/text.h"
#include "analysis/diagnostics.h"
#include "optim/optimizer.h"
#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemm_kernels.h"

namespace nc {
namespace app {

static std::vector<FlagSpec> train_flags() {
    std::vector<FlagSpec> specs = model_flags();
    std::vector<FlagSpec> more = {
        {"device", "cpu", "cpu | cuda"},
        {"data", data::kDefaultCorpus, "a text file or directory (vit: Fashion-MNIST's directory, the default, or root/<class>/<image>)"},
        {"val-fraction", "0.1", "the last fraction of the tokens used for validation (not for a split corpus)"},
        {"eval-split", "validation",
         "with a corpus directory of `normcore corpus build`: validation | tuning; with Fashion-MNIST (vit): validation = "
         "test images from the first, tuning = from the 5,001st"},
        {"eval-tokens", "0", "validate on at least this many tokens, in windows spread over the whole split (0: --eval-batches batches from its start)"},
        {"tokenizer", "byte", "byte, a BPE file (trained on the data and saved there if missing), or a GPT-2 vocab.json + merges.txt directory"},
        {"vocab-size", "512", "size of a newly trained BPE vocabulary"},
        {"no-shuffle", "false", "deterministic batches: window j of batch i starts at token (i*B + j)*T", true},
        {"steps", "1500", "optimizer steps"},
        {"batch", "16", "sequences per batch B"},
        {"accum", "1", "micro-batches accumulated per optimizer step"},
        {"optimizer", "adamw", "sgd | adamw"},
        {"lr", "2e-3", "peak learning rate"},
        {"momentum", "0.9", "SGD momentum"},
        {"nesterov", "false", "SGD: Nesterov momentum", true},
        {"weight-decay", "0.1", "weight decay (matrices only; norms, biases and embeddings are not decayed)"},
        {"beta1", "0.9", "AdamW beta1"},
        {"beta2", "0.99", "AdamW beta2"},
        {"eps", "1e-8", "AdamW epsilon"},
        {"grad-clip", "1.0", "clip the global gradient norm to this (0 = off)"},
        {"diagnostics", "false",
         "log per-block gradient norms, relative updates and residual contributions ||F(x)||/||x||, loss spikes (and DyT saturation) to RUN_DIR/diagnostics.csv; at the end the "
         "weights' effective rank and HTSR alpha (weights.csv) and the residual stream's effective rank (stream.csv)",
         true},
        // At B=8, T=64 on the studies' corpus, batch-to-batch noise reaches 1.23x the running median.
        {"spike-factor", "1.5", "a loss above this times the running median is a spike (with --diagnostics)"},
        {"spike-window", "50", "steps in the running median for spike detection"},
        {"saturation-threshold", "2.0", "DyT saturation: the fraction of |alpha x| above this (with --diagnostics)"},
        {"calibration-step", "0",
         "with --diagnostics and DyT: also measure the saturation on held-out data after this step (0: a tenth of --steps) and "
         "at the end, into RUN_DIR/saturation_heldout.csv"},
        {"schedule", "cosine", "constant | cosine | linear"},
        {"warmup", "100", "linear warm-up steps"},
        {"min-lr-ratio", "0.1", "cosine/linear decay ends at this fraction of --lr"},
        {"seed", "1337", "seed for initialization, batches and sampling"},
        {"eval-every", "250", "validation loss every N steps (0: only at the end)"},
        {"eval-batches", "16", "batches per validation"},
        {"train-images", "0", "vit: use only the first N training images (0: all)"},
        {"train-tokens", "0", "text: use only the first N tokens of the training split (0: all); validation is unchanged"},
        {"sample-tokens", "300", "tokens of text sampled at the end (0: none)"},
        {"temperature", "0.8", "sampling temperature"},
        {"top-k", "0", "sample among the k most likely tokens (0: all)"},
        {"sample-every", "0", "also print a short sample (--sample-every-tokens tokens) every N steps (0: only at the end)"},
        {"sample-every-tokens", "80", "tokens of each sample printed during training"},
        {"prompt", "", "text the sample continues (default: a newline)"},
        {"run-dir", "", "where the CSV log goes (default: runs/<model>-<date>-<time>)"},
        {"init", "", "initial weights: a safetensors file (architecture from the flags) or a model directory"},
        {"save", "", "write the final weights here: FILE.safetensors, or DIR/ for config.json + model.safetensors"},
        {"resume", "", "continue from a training checkpoint (<run-dir>/checkpoint.safetensors)"},
        {"stop-after", "0", "stop after this many steps as if interrupted (the schedule still spans --steps)"},
        {"checkpoint-every", "0", "also write <run-dir>/checkpoint.safetensors every N steps (it is always written at the end)"},
        {"no-overlap", "false", "data parallel: average the gradients after backward instead of during it (the baseline for the overlap)", true},
        {"skip-nonfinite", "false", "skip a step whose loss or gradient is NaN or Inf instead of stopping (at most 100 in a row)", true},
    };
    specs.insert(specs.end(), more.begin(), more.end());
    return specs;
}

// The CPU's float32 FMA peak, the best of three short samples after a
// warm-up (about 50 ms; `normcore bench` takes longer and more samples).
static double quick_fma_peak_gflops() {
    cpu::SimdIsa isa = cpu::best_simd_isa();
    int threads = omp_get_max_threads();
    cpu::measure_fma_peak_gflops(isa, threads, 2000000);
    double best = 0;
    for (int r = 0; r < 3; ++r) best = std::max(best, cpu::measure_fma_peak_gflops(isa, threads, 5000000));
    return best;
}

// The terminal's width (80 when it cannot be asked).
static int terminal_columns() {
    struct winsize w;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col;
    return 80;
}

// What a killed or failed run can leave behind: the temporaries that are
// renamed over the real files only when complete. They are never good data.
static void remove_stale_temporaries(const std::string& run_dir, const std::string& save) {
    std::vector<std::string> stale = {run_dir + "/checkpoint.safetensors.tmp"};
    if (!save.empty()) {
        stale.push_back(save + ".tmp");
        for (const char* f : {"/model.safetensors.new", "/model.safetensors.new.tmp", "/config.json.new"})
            stale.push_back(save + f);
    }
    for (const std::string& path : stale)
        if (std::filesystem::is_regular_file(path) && std::remove(path.c_str()) == 0)
            std::printf("removed %s, a temporary file a killed or failed run left behind\n", path.c_str());
}

// train_log.csv, ready to append a row per step. A new run starts it with
// the header; a resumed run keeps the header and the rows up to the
// checkpoint's step (rows past it belong to steps that will run again), so
// one file holds the whole run.
static std::ofstream open_train_log(const std::string& path, int64_t first_step) {
    const std::string header = "step,loss,val_loss,lr,grad_norm,time_s";
    std::vector<std::string> kept;
    if (first_step > 0) {
        std::ifstream in(path);
        std::string line;
        while (std::getline(in, line)) {
            if (line == header || line.empty()) continue;
            char* end = nullptr;
            long long step = std::strtoll(line.c_str(), &end, 10);
            if (end != line.c_str() && *end == ',' && step >= 1 && step <= first_step) kept.push_back(line);
        }
    }
    {
        std::ofstream out(path + ".tmp", std::ios::trunc);
        out << header << "\n";
        for (const std::string& row : kept) out << row << "\n";
        out.close();
        if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
            std::remove((path + ".tmp").c_str());
            throw Error("--run-dir: cannot write '" + path + "' (disk full, or the directory is not writable)");
        }
    }
    std::ofstream csv(path, std::ios::app);
    if (!csv) throw Error("--run-dir: cannot write '" + path + "'");
    return csv;
}

static std::string default_run_dir(const std::string& model) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    return "runs/" + model + "-" + stamp;
}

static std::string format_duration(double seconds) {
    int s = (int)std::lround(std::max(0.0, seconds));
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, s / 60 % 60);
    else std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
    return buf;
}

// What differs between training a language model and an image classifier:
// where batches come from, how a batch becomes a loss, what validation and
// the end of the run report. The loop in train_command is shared.
struct Task {
    std::shared_ptr<nn::TransformerModel> model;
    int64_t tokens_per_batch = 0;                // transformer positions per batch (for tok/s)
    std::function<Tensor()> train_loss;          // draws the next batch; mean loss
    std::function<double()> validate;            // mean validation loss (NaN: no validation data)
    std::function<void()> finish;                // a text sample, or the accuracy
    std::function<void(int64_t)> sample_during;  // a short text sample at this step (text only)
    std::function<Generator&()> batch_generator; // the training stream, for checkpoints
    std::function<int64_t()> batches_taken;
    std::function<void(int64_t)> set_batches_taken;
    std::function<std::vector<Tensor>()> residual_stream;  // of a fixed training batch (diagnostics)
    // Held-out batch i of held_out_batches, run forward (no gradients, eval
    // mode) for the DyT layers' held-out saturation: evenly spread windows of
    // the evaluation split, or its first images.
    std::function<void(int64_t)> held_out_forward;
    int64_t held_out_batches = 0;
};

static double mean_loss(nn::TransformerModel& model, int64_t batches, const std::function<Tensor(int64_t)>& loss_of) {
    NoGradGuard no_grad;
    model.eval();
    double total = 0;
    for (int64_t i = 0; i < batches; ++i) total += loss_of(i).item();
    model.train();
    return total / (double)batches;
}

// With data-parallel ranks (apps/distributed.h), every rank draws the same
// global batch of world x B examples from one seeded stream and trains on
// rows rank*B .. rank*B+B-1 of it.
static Tensor my_rows(const Tensor& global, const Distributed& dist) {
    if (!dist.active()) return global;
    int64_t B = global.size(0) / dist.world;
    return raw::narrow(global, 0, dist.rank * B, B);
}

static Task text_task(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist) {
    // A corpus directory of `normcore corpus build` (data/corpus.h) brings its
    // own splits: train.txt to train on, and tuning.txt or validation.txt to
    // evaluate on. Anything else is split here: its last --val-fraction validates.
    std::string data_path = flags.str("data");
    bool split_corpus = data::is_split_corpus(data_path);
    std::string eval_split = flags.str("eval-split");
    if (eval_split != "validation" && eval_split != "tuning")
        throw Error("flag --eval-split: '" + eval_split + "' is not a split (validation or tuning)");
    if (split_corpus && flags.given("val-fraction"))
        throw Error("flag --val-fraction: the corpus '" + data_path + "' has its own validation split (drop the flag)");
    if (!split_corpus && flags.given("eval-split"))
        throw Error("flag --eval-split: '" + data_path + "' is not a corpus directory of `normcore corpus build`");
    std::string text = split_corpus ? data::read_file(data::split_path(data_path, "train")) : corpus_text_if_any(data_path);
    TextCodec codec = make_codec(flags, text);
    if (!flags.given("resume") && !(flags.given("init") && is_directory_target(flags.str("init")))) cfg.vocab_size = codec.vocab_size;
    check_vocabulary(codec, cfg);
    data::Split split;
    if (split_corpus) {
        split.train = codec.encode(text);
        split.val = codec.encode(data::read_file(data::split_path(data_path, eval_split)));
    } else {
        split = data::split_tokens(text.empty() ? load_corpus_tokens(data_path, codec) : codec.encode(text),
                                   flags.number("val-fraction"));
    }
    text.clear();  // the tokens are all that is needed from here on
    // B is this rank's batch; GB the step's (every rank's together, chapter
    // 14), which is also the evaluation's, so that N ranks evaluate what one
    // process with batch N x B would.
    int64_t B = flags.integer("batch"), T = flags.integer("seq"), eval_batches = flags.integer("eval-batches");
    int64_t GB = B * dist.world;
    // --eval-tokens: enough batches for that many tokens, spread over the split.
    int64_t eval_tokens = flags.integer("eval-tokens");
    bool spread = eval_tokens > 0;
    if (spread) eval_batches = (eval_tokens + GB * T - 1) / (GB * T);
    if (spread && eval_batches * GB * T > split.val.size())
        throw Error("flag --eval-tokens: " + std::to_string(eval_tokens) + " tokens are more than the " +
                    (split_corpus ? eval_split + " split" : std::string("validation part")) + "'s " +
                    std::to_string(split.val.size()) + " (in windows of " + std::to_string(GB) + " x " + std::to_string(T) + ")");
    // A smaller training set (the DyT study's data regimes): its first N
    // tokens. Validation keeps the same held-out tail, so runs compare.
    int64_t limit = flags.integer("train-tokens");
    if (limit < 0 || (limit > 0 && limit < T + 1))
        throw Error("flag --train-tokens: " + std::to_string(limit) + " tokens cannot fill one window of --seq " +
                    std::to_string(T) + " + 1");
    if (limit > 0 && limit < split.train.size()) split.train = split.train.slice(0, limit);
    auto train = std::make_shared<data::LMBatches>(split.train, GB, T, !flags.on("no-shuffle"), seed + 1);
    std::shared_ptr<data::LMBatches> val;
    if (split.val.size() > T + 1) val = std::make_shared<data::LMBatches>(split.val, GB, T, false, seed + 2);
    Generator init_gen(seed);
    LanguageModel lm = build_language_model(cfg, init_gen);
    std::printf("data: %s, %s, %lld train / %lld %s tokens; batch %lld x %lld\n", data_path.c_str(), codec.name.c_str(),
                (long long)split.train.size(), (long long)split.val.size(), split_corpus ? eval_split.c_str() : "val",
                (long long)B, (long long)T);
    if (spread)
        std::printf("evaluation: %lld windows of %lld tokens spread over the %s tokens\n", (long long)(eval_batches * B),
                    (long long)T, split_corpus ? eval_split.c_str() : "validation");
    Task task;
    task.model = lm.module;
    task.tokens_per_batch = B * T;
    task.train_loss = [lm, train, dist] {
        data::Batch b = train->next();
        Tensor logits = lm.forward(my_rows(b.inputs, dist));
        return cross_entropy(logits, raw::to_device(my_rows(b.targets, dist), logits.device()));
    };
    task.residual_stream = [lm, train] {
        NoGradGuard no_grad;
        std::vector<Tensor> stream;
        lm.forward(train->at(0).inputs, &stream);
        return stream;
    };
    if (val) {
        task.held_out_batches = std::min<int64_t>(16, std::max<int64_t>(1, (split.val.size() - 1) / (GB * T)));
        task.held_out_forward = [lm, val, n = task.held_out_batches](int64_t i) {
            NoGradGuard no_grad;
            lm.module->eval();
            lm.forward(val->spread(i, n).inputs);
            lm.module->train();
        };
    }
    task.validate = [lm, val, eval_batches, spread] {
        if (!val) return (double)NAN;
        return mean_loss(*lm.module, eval_batches, [&](int64_t i) {
            data::Batch b = spread ? val->spread(i, eval_batches) : val->at(i);
            Tensor logits = lm.forward(b.inputs);
            return cross_entropy(logits, raw::to_device(b.targets, logits.device()));
        });
    };
    // A sample of `count` tokens, from its own generator so that samples
    // never change the training run (dropout and batches draw elsewhere).
    auto sample = [lm, &flags, codec](int64_t count, uint64_t sample_seed, const std::string& title) {
        Generator sample_gen(sample_seed);
        std::printf("\n--- %s (temperature %.2f) ---\n", title.c_str(), flags.number("temperature"));
        lm.module->eval();
        print_sample(lm, codec, flags.str("prompt"), count,
                     nn::SampleOptions{flags.number("temperature"), flags.integer("top-k"), true}, sample_gen);
        lm.module->train();
        std::printf("\n--- end of %s ---\n", title.c_str());
        std::fflush(stdout);
    };
    task.finish = [sample, &flags, seed] {
        if (flags.integer("sample-tokens") > 0) sample(flags.integer("sample-tokens"), seed + 3, "sample");
    };
    task.sample_during = [sample, &flags, seed](int64_t step) {
        sample(flags.integer("sample-every-tokens"), seed + 3 + (uint64_t)step, "sample at step " + std::to_string(step));
    };
    task.batch_generator = [train]() -> Generator& { return train->generator(); };
    task.batches_taken = [train] { return train->batches_taken(); };
    task.set_batches_taken = [train](int64_t n) { train->set_position(n); };
    return task;
}

// Each of Fashion-MNIST's two evaluation splits (validation, tuning): half of its test set.
const int64_t kFashionSplitImages = 5000;

static Task image_task(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist) {
    std::string path = flags.given("data") ? flags.str("data") : data::kFashionMnist;
    for (const char* text_only : {"eval-tokens", "train-tokens"})
        if (flags.given(text_only))
            throw Error(std::string("flag --") + text_only + ": applies to text models, not vit (it evaluates --eval-batches batches of images)");
    auto train = std::make_shared<data::ImageSet>(), val = std::make_shared<data::ImageSet>();
    int64_t limit = flags.integer("train-images");
    std::string eval_split = flags.str("eval-split");
    if (eval_split != "validation" && eval_split != "tuning")
        throw Error("flag --eval-split: '" + eval_split + "' is not a split (validation or tuning)");
    if (std::filesystem::exists(path + "/train-images-idx3-ubyte.gz")) {
        *train = data::load_fashion_mnist(path, true, limit);
        // Fashion-MNIST's 10,000 test images: validation reads from the first,
        // tuning from the 5,001st, so up to 5,000 images each never overlap.
        int64_t wanted = flags.integer("eval-batches") * flags.integer("batch") * dist.world;
        if (flags.given("eval-split") && wanted > kFashionSplitImages)
            throw Error("flag --eval-split: --eval-batches x --batch = " + std::to_string(wanted) + " images, more than the " +
                        std::to_string(kFashionSplitImages) + " of each Fashion-MNIST split");
        *val = data::load_fashion_mnist(path, false, wanted, eval_split == "tuning" ? kFashionSplitImages : 0);
        train->images = data::resize_images(train->images, cfg.image_size);
        val->images = data::resize_images(val->images, cfg.image_size);
        if (cfg.channels != 1) throw Error("Fashion-MNIST images have 1 channel; use --channels 1");
    } else {
        if (flags.given("eval-split"))
            throw Error("flag --eval-split: applies to Fashion-MNIST and corpus directories, not the image folder '" + path + "'");
        data::ImageSet all = data::load_image_folder(path, cfg.image_size, cfg.channels);
        // A fixed shuffle, then the last --val-fraction validates.
        int64_t n = (int64_t)all.labels.size(), n_val = (int64_t)((double)n * flags.number("val-fraction"));
        Generator order(seed + 4);
        std::vector<double> keys = raw::rand({n}, order, kFloat64).to_vector();
        std::vector<int64_t> perm(n);
        for (int64_t i = 0; i < n; ++i) perm[i] = i;
        std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
        auto take = [&](int64_t from, int64_t to, data::ImageSet& out) {
            std::vector<int64_t> rows(perm.begin() + from, perm.begin() + to);
            out.images = raw::index_select(all.images, 0, raw::from_indices(rows, {(int64_t)rows.size()}));
            for (int64_t r : rows) out.labels.push_back(all.labels[r]);
            out.class_names = all.class_names;
        };
        take(0, n - n_val, *train);
        if (n_val > 0) take(n - n_val, n, *val);
    }
    int64_t B = flags.integer("batch"), GB = B * dist.world, eval_batches = flags.integer("eval-batches");
    auto batches = std::make_shared<data::ImageBatches>(*train, GB, !flags.on("no-shuffle"), seed + 1);
    std::shared_ptr<data::ImageBatches> val_batches;
    if (!val->labels.empty()) val_batches = std::make_shared<data::ImageBatches>(*val, GB, false, seed + 2);
    Generator init_gen(seed);
    auto model = std::make_shared<nn::ViT>(cfg, init_gen);
    int64_t tokens = (cfg.image_size / cfg.patch_size) * (cfg.image_size / cfg.patch_size) + 1;
    std::printf("data: %s, %zu train / %zu val images of %lld x %lld, %zu classes; batch %lld\n", path.c_str(),
                train->labels.size(), val->labels.size(), (long long)cfg.image_size, (long long)cfg.image_size,
                train->class_names.size(), (long long)B);
    Task task;
    task.model = model;
    task.tokens_per_batch = B * tokens;
    task.train_loss = [model, batches, train, dist] {
        data::ImageBatch b = batches->next();
        return cross_entropy(model->forward(raw::to_device(my_rows(b.images, dist), model->device())),
                             raw::to_device(my_rows(b.labels, dist), model->device()));
    };
    task.residual_stream = [model, batches] {
        NoGradGuard no_grad;
        std::vector<Tensor> stream;
        model->forward(raw::to_device(batches->at(0).images, model->device()), &stream);
        return stream;
    };
    int64_t val_count = std::min<int64_t>((int64_t)val->labels.size() / std::max<int64_t>(1, GB), eval_batches);
    if (val_count > 0) {
        task.held_out_batches = std::min<int64_t>(8, val_count);
        task.held_out_forward = [model, val_batches](int64_t i) {
            NoGradGuard no_grad;
            model->eval();
            model->forward(raw::to_device(val_batches->at(i).images, model->device()));
            model->train();
        };
    }
    task.validate = [model, val_batches, val_count, val] {
        if (!val_batches || val_count == 0) return (double)NAN;
        return mean_loss(*model, val_count, [&](int64_t i) {
            data::ImageBatch b = val_batches->at(i);
            return cross_entropy(model->forward(raw::to_device(b.images, model->device())),
                                 raw::to_device(b.labels, model->device()));
        });
    };
    task.finish = [model, val, B] {
        if (val->labels.empty()) return;
        NoGradGuard no_grad;
        model->eval();
        int64_t correct = 0, n = (int64_t)val->labels.size();
        for (int64_t start = 0; start < n; start += B) {
            int64_t count = std::min(B, n - start);
            Tensor logits = model->forward(raw::to_device(raw::narrow(val->images, 0, start, count), model->device()));
            std::vector<int64_t> guess = raw::argmax(logits, 1).to_int_vector();
            for (int64_t i = 0; i < count; ++i) correct += guess[i] == val->labels[start + i];
        }
        model->train();
        std::printf("validation accuracy: %.4f (%lld of %lld images)\n", (double)correct / (double)n, (long long)correct,
                    (long long)n);
    };
    task.batch_generator = [batches]() -> Generator& { return batches->generator(); };
    task.batches_taken = [batches] { return batches->batches_taken(); };
    task.set_batches_taken = [batches](int64_t n) { batches->set_position(n); };
    return task;
}

int train_command(int argc, char** argv) {
    // Under mpirun every rank runs this; rank 0 alone prints and writes files.
    Distributed dist = start_distributed(argc, argv);
    if (!dist.root() && !std::freopen("/dev/null", "w", stdout)) throw Error("rank " + std::to_string(dist.rank) + ": cannot silence stdout");
    Flags flags("train", train_flags());
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Trains a model. With no flags: the default small GPT-2 on the fortunes corpus.\n\n" << flags.usage();
        return 0;
    }
    // Each rank on a machine takes its own GPU, before anything touches one.
    if (dist.active() && flags.str("device").rfind("cuda", 0) == 0) choose_gpu(dist);
    Device device = parse_device(flags.str("device"));
    nn::TransformerConfig cfg = resolve_config(flags);
    // Every rank's dropout generator starts from the same seed, so ranks would
    // drop the same positions of their different rows: correlated masks, and
    // not the run of one process with the whole batch.
    if (dist.active() && cfg.dropout > 0)
        throw Error("--dropout " + flags.str("dropout") + ": not with data-parallel ranks yet (every rank would draw the "
                    "same dropout masks for its rows); use --dropout 0 or one rank (chapter 14)");
    std::string run_dir = flags.given("run-dir") ? flags.str("run-dir") : default_run_dir(flags.str("model"));
    bool vision = cfg.family == nn::Family::ViT;
    if (!vision && flags.integer("seq") > cfg.block_size && cfg.positions == nn::Positions::Learned)
        throw Error("--seq " + flags.str("seq") + " is longer than the model's position table (" + std::to_string(cfg.block_size) + ")");
    int64_t steps = flags.integer("steps"), accum = flags.integer("accum");
    if (steps <= 0 || accum <= 0) throw Error("flags --steps and --accum must be positive");
    uint64_t seed = (uint64_t)flags.integer("seed");

    // Data and model.
    Task task = vision ? image_task(flags, cfg, seed, dist) : text_task(flags, cfg, seed, dist);
    nn::TransformerModel& model = *task.model;
    if (flags.given("init") && !flags.given("resume")) load_weights(model, flags.str("init"));
    // Parameters move in place, so the optimizer below (and checkpoint
    // loading, which copies across devices) sees them on `device`.
    model.to(device);

    // Optimizer.
    std::vector<optim::ParamGroup> groups = optim::decay_groups(model, flags.number("weight-decay"));
    std::unique_ptr<optim::Optimizer> opt;
    double lr = flags.number("lr");
    if (flags.str("optimizer") == "adamw")
        opt = std::make_unique<optim::AdamW>(groups, lr, flags.number("beta1"), flags.number("beta2"), flags.number("eps"));
    else if (flags.str("optimizer") == "sgd")
        opt = std::make_unique<optim::SGD>(groups, lr, flags.number("momentum"), flags.on("nesterov"));
    else
        throw Error("flag --optimizer: unknown optimizer '" + flags.str("optimizer") + "' (choose sgd or adamw)");
    optim::Schedule schedule = optim::parse_schedule(flags.str("schedule"));
    std::vector<Tensor> params = model.parameters();
    int64_t first_step = 0;
    if (flags.given("resume")) {
        TrainingState state = load_training_checkpoint(flags.str("resume"), model, *opt);
        if (state.ranks != dist.world)
            throw Error("--resume: '" + flags.str("resume") + "' was written by a run of " + std::to_string(state.ranks) +
                        " rank(s) and this run has " + std::to_string(dist.world) + ": the batches of each step would "
                        "differ (resume with mpirun -np " + std::to_string(state.ranks) + ")");
        first_step = state.step;
        task.batch_generator().manual_seed(state.batch_seed);
        task.batch_generator().set_offset(state.batch_offset);
        task.set_batches_taken(state.batches_taken);
        model.dropout_generator().manual_seed(state.dropout_seed);
        model.dropout_generator().set_offset(state.dropout_offset);
        if (first_step >= steps)
            throw Error("--resume: the checkpoint is at step " + std::to_string(first_step) + ", nothing left for --steps " +
                        std::to_string(steps));
        std::printf("resumed from %s at step %lld\n", flags.str("resume").c_str(), (long long)first_step);
        if (state.schedule_steps > 0 && state.schedule_steps != steps)
            std::printf("warning: the checkpoint's run was scheduled for %lld steps and --steps is %lld: the "
                        "learning-rate schedule changes from here on, so this run will not match an uninterrupted one\n",
                        (long long)state.schedule_steps, (long long)steps);
    }
    auto checkpoint = [&](int64_t done) {
        if (!dist.root()) return;  // every rank holds the same weights and state: one file
        TrainingState state{done, task.batches_taken(), task.batch_generator().seed(), task.batch_generator().offset(),
                            model.dropout_generator().seed(), model.dropout_generator().offset(), steps, dist.world};
        save_training_checkpoint(run_dir + "/checkpoint.safetensors", model, *opt, state);
    };

    std::string log_path = run_dir + "/train_log.csv";
    std::ofstream csv;
    if (dist.root()) {
        std::error_code made;
        std::filesystem::create_directories(run_dir, made);
        if (made) throw Error("--run-dir: cannot create '" + run_dir + "': " + made.message());
        remove_stale_temporaries(run_dir, flags.str("save"));
        csv = open_train_log(log_path, first_step);
    }
    if (dist.active())
        std::printf("data parallel: %d ranks, %lld x %d = %lld examples per step, gradients averaged by %s\n", dist.world,
                    (long long)flags.integer("batch"), dist.world, (long long)(flags.integer("batch") * dist.world),
                    gradient_transport(params).c_str());
    std::printf("model: %s, %lld parameters\n", describe(cfg).c_str(), (long long)model.num_parameters());
    std::printf("training: %lld steps%s, log in %s/train_log.csv\n", (long long)steps,
                accum > 1 ? (" of " + std::to_string(accum) + " micro-batches").c_str() : "", run_dir.c_str());

    bool tty = isatty(STDOUT_FILENO);
    bool line_open = false;  // a progress line without its newline is on the screen
    int64_t eval_every = flags.integer("eval-every");
    int64_t report_every = std::max<int64_t>(1, steps / 20);
    double last_loss = 0, last_val = NAN, train_seconds = 0;
    // Diagnostics (analysis/diagnostics.h): the gradient norm of each block before
    // clipping (pre-norm stacks show an imbalance across depth) and spikes.
    bool diagnostics = flags.on("diagnostics");
    if (diagnostics && dist.active()) throw Error("flag --diagnostics: not with data-parallel ranks yet (train on one rank to log diagnostics)");
    // DyT layers (norm dyt) also report their saturation each step.
    std::vector<std::pair<std::string, nn::DyT*>> dyt = diagnostics ? diag::dyt_layers(model) : decltype(dyt){};
    diag::SpikeDetector spikes(flags.integer("spike-window"), flags.number("spike-factor"));
    diag::BlockUpdates block_updates(model, diagnostics ? cfg.n_layer : 0);
    // Each block's residual contribution ||F(x)|| / ||x|| in this step's forward.
    std::vector<nn::Block*> blocks = diag::track_block_residuals(model, diagnostics);
    std::ofstream diag_csv;
    if (diagnostics) {
        diag_csv.open(run_dir + "/diagnostics.csv", first_step > 0 ? std::ios::app : std::ios::trunc);
        if (!diag_csv) throw Error("--run-dir: cannot write '" + run_dir + "/diagnostics.csv'");
        for (auto& [name, layer] : dyt) layer->keep_pre_activation(true);
        if (first_step == 0) {
            diag_csv << "step,loss,spike";
            for (int64_t b = 0; b < cfg.n_layer; ++b) diag_csv << ",grad_norm_block_" << b;
            for (int64_t b = 0; b < cfg.n_layer; ++b) diag_csv << ",update_block_" << b;
            for (size_t b = 0; b < blocks.size(); ++b) diag_csv << ",residual_block_" << b;
            for (auto& [name, layer] : dyt) diag_csv << ",saturation_" << name;
            diag_csv << "\n";
        }
    }
    // Held-out saturation (the DyT study's screening measurement).
    int64_t calibration_step = flags.integer("calibration-step") > 0 ? flags.integer("calibration-step")
                                                                     : std::max<int64_t>(1, steps / 10);
    std::ofstream heldout_csv;
    if (diagnostics && !dyt.empty() && task.held_out_forward) {
        heldout_csv.open(run_dir + "/saturation_heldout.csv", first_step > 0 ? std::ios::app : std::ios::trunc);
        if (!heldout_csv) throw Error("--run-dir: cannot write '" + run_dir + "/saturation_heldout.csv'");
        if (first_step == 0) {
            heldout_csv << "step,mean";
            for (auto& [name, layer] : dyt) heldout_csv << ",saturation_" << name;
            heldout_csv << "\n";
        }
    }
    int64_t stop = flags.integer("stop-after") > 0 ? std::min(steps, flags.integer("stop-after")) : steps;
    // Model FLOPs utilization: the step's FLOPs (nn/models.h) per second over
    // the FMA peak of this CPU, sampled quickly here as `bench` measures it
    // (no peak is known for a GPU, so no MFU there).
    int64_t positions = vision ? (cfg.image_size / cfg.patch_size) * (cfg.image_size / cfg.patch_size) + 1
                               : flags.integer("seq");
    double flops_per_token = nn::training_flops_per_token(cfg, positions);
    double peak_gflops = device == kCPU ? quick_fma_peak_gflops() : 0;
    auto mfu = [&](double tok_per_s) { return peak_gflops > 0 ? 100.0 * tok_per_s * flops_per_token / (peak_gflops * 1e9) : NAN; };
    std::vector<double> recent_seconds;  // the last few steps, for the instantaneous rate
    // Data parallel: the ranks average each bucket of gradients while
    // backward still runs (--no-overlap: all after backward, the baseline).
    GradientAverager averager(dist, params);
    bool overlap = !flags.on("no-overlap");
    int64_t skipped_steps = 0, skipped_in_a_row = 0;  // --skip-nonfinite
    int64_t sample_every = flags.integer("sample-every");
    if (sample_every < 0) throw Error("flag --sample-every must be >= 0, got " + flags.str("sample-every"));
    for (int64_t step = first_step; step < stop; ++step) {
        auto start = std::chrono::steady_clock::now();
        double step_lr = optim::learning_rate(schedule, lr, step, steps, flags.integer("warmup"), flags.number("min-lr-ratio"));
        opt->set_lr(step_lr);
        opt->zero_grad();
        double loss_sum = 0;
        for (int64_t micro = 0; micro < accum; ++micro) {
            Tensor loss = task.train_loss();
            loss_sum += loss.item();
            // The gradients are totals only after the last micro-batch:
            // that backward alone reports them to the averager.
            bool last = micro + 1 == accum;
            backward(accum > 1 ? loss * (1.0 / (double)accum) : loss,  // the mean over micro-batches
                     Tensor(), false, last && overlap ? averager.on_leaf_ready() : nullptr);
        }
        // The ranks' mean: the gradient and loss of the whole N x B batch.
        averager.finish();
        last_loss = average(dist, loss_sum / (double)accum);
        // A NaN or Inf loss (a learning rate too high, bad data, non-finite
        // --init weights) would spread into every weight at the next update,
        // and the run would then save them over good files: stop here, or
        // skip the step when asked to.
        auto non_finite = [&](const char* what, double value) {
            if (!flags.on("skip-nonfinite"))
                throw Error("step " + std::to_string(step + 1) + ": the " + what + " is " + std::to_string(value) +
                            ". " + kStoppedOnNonFinite + " (lower --lr, check the data "
                            "and the --init weights, or pass --skip-nonfinite to skip such steps)");
            if (++skipped_in_a_row > 100)
                throw Error("step " + std::to_string(step + 1) + ": 100 steps in a row had a non-finite " + what +
                            "; stopping (--skip-nonfinite skips isolated steps only)");
            ++skipped_steps;
            opt->zero_grad();
            std::printf("%sstep %lld: skipped, the %s is %g\n", line_open ? "\n" : "", (long long)(step + 1), what, value);
            line_open = false;
        };
        if (!std::isfinite(last_loss)) {
            non_finite("training loss", last_loss);
            continue;
        }
        std::vector<double> block_grads, residuals;
        if (diagnostics) {
            block_grads = diag::block_grad_norms(model, cfg.n_layer);  // before clipping
            residuals = diag::residual_ratios(blocks);  // of the last micro-batch's forward
        }
        double grad_norm = optim::clip_grad_norm(params, flags.number("grad-clip"));
        if (!std::isfinite(grad_norm)) {
            non_finite("gradient norm", grad_norm);
            continue;
        }
        skipped_in_a_row = 0;
        if (diagnostics) block_updates.before_step();
        opt->step();
        if (diagnostics) {
            std::vector<double> updates = block_updates.after_step();
            diag_csv << step + 1 << "," << last_loss << "," << (spikes.observe(last_loss) ? 1 : 0);
            for (double n : block_grads) diag_csv << "," << n;
            for (double u : updates) diag_csv << "," << u;
            for (double r : residuals) diag_csv << "," << r;
            for (auto& [name, layer] : dyt) diag_csv << "," << diag::saturation(*layer, flags.number("saturation-threshold"));
            diag_csv << "\n";
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        train_seconds += seconds;

        bool last = step == stop - 1;
        if (heldout_csv.is_open() && (step + 1 == calibration_step || last)) {
            std::vector<double> sat = diag::held_out_saturation(dyt, task.held_out_batches, task.held_out_forward,
                                                                flags.number("saturation-threshold"));
            double mean = 0;
            for (double v : sat) mean += v / (double)sat.size();
            heldout_csv << step + 1 << "," << mean;
            for (double v : sat) heldout_csv << "," << v;
            heldout_csv << "\n" << std::flush;
        }
        double val = NAN;
        if (last || (eval_every > 0 && (step + 1) % eval_every == 0)) {
            val = task.validate();
            if (!std::isnan(val)) last_val = val;
        }
        // One row per step, flushed: a killed run keeps its log up to there.
        if (dist.root()) {
            csv << step + 1 << "," << last_loss << "," << (std::isnan(val) ? "" : std::to_string(val)) << "," << step_lr
                << "," << grad_norm << "," << train_seconds << "\n" << std::flush;
            if (!csv) throw Error("step " + std::to_string(step + 1) + ": cannot write '" + log_path + "' (disk full?)");
        }

        int64_t done_here = step + 1 - first_step;
        double tok_per_step = (double)(task.tokens_per_batch * accum);
        double tok_per_s = tok_per_step * (double)done_here / train_seconds;
        recent_seconds.push_back(seconds);
        if (recent_seconds.size() > 10) recent_seconds.erase(recent_seconds.begin());
        double recent = 0;
        for (double s : recent_seconds) recent += s;
        double tok_per_s_now = tok_per_step * (double)recent_seconds.size() / recent;
        double eta = train_seconds / (double)done_here * (double)(stop - step - 1);
        int64_t every = flags.integer("checkpoint-every");
        if (every > 0 && (step + 1) % every == 0 && !last) checkpoint(step + 1);
        char line[320], mfu_text[32] = "", val_text[32] = "";
        if (peak_gflops > 0) std::snprintf(mfu_text, sizeof mfu_text, " | MFU %.1f%%", mfu(tok_per_s_now));
        if (!std::isnan(val)) std::snprintf(val_text, sizeof val_text, " | val %.4f", val);
        // tok/s: the last 10 steps (now), then the average since the start.
        // What matters most comes first: a narrow terminal cuts the end.
        std::snprintf(line, sizeof line, "step %5lld/%lld | loss %.4f%s | %6.0f tok/s (avg %.0f)%s | lr %.2e | ETA %s",
                      (long long)(step + 1), (long long)stop, last_loss, val_text, tok_per_s_now, tok_per_s, mfu_text,
                      step_lr, format_duration(eta).c_str());
        if (tty) {
            int width = 24, filled = (int)((step + 1) * width / steps);
            std::string text = line;
            std::string shown = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " + text;
            // A line wider than the terminal wraps, and \r then returns to
            // its last row only: drop the bar, then cut, to stay on one row.
            int columns = terminal_columns();
            if ((int)shown.size() >= columns) shown = text;
            if ((int)shown.size() >= columns) shown.resize(columns - 1);
            // \033[K clears what a longer previous line left at the end; a
            // line with a validation loss stays on the screen.
            std::printf("\r%s\033[K%s", shown.c_str(), std::isnan(val) ? "" : "\n");
            line_open = std::isnan(val);
            std::fflush(stdout);
        } else if (!std::isnan(val) || (step + 1) % report_every == 0 || last) {
            std::printf("%s\n", line);
            std::fflush(stdout);
        }
        if (sample_every > 0 && (step + 1) % sample_every == 0 && !last && task.sample_during) {
            if (line_open) std::printf("\n");  // leave the progress line
            line_open = false;
            task.sample_during(step + 1);
        }
    }
    if (line_open) std::printf("\n");
    if (skipped_steps > 0)
        std::printf("skipped %lld steps whose loss or gradient was not finite (--skip-nonfinite)\n", (long long)skipped_steps);
    checkpoint(stop);
    if (flags.given("save") && dist.root()) {
        save_weights(model, flags.str("save"));
        std::printf("weights saved to %s\n", flags.str("save").c_str());
    }

    task.finish();
    double ms_per_step = 1000 * train_seconds / (double)(stop - first_step);
    // The caching allocator's high-water mark on the training device:
    // parameters, optimizer state, activations and gradients at their largest
    // (tensor/cpu/allocator.h, or device memory on a GPU).
    AllocatorStats memory = backend_for(device).allocator_stats();
    if (diagnostics) {
        // The residual stream of a fixed batch after every block: its tokens'
        // effective rank (the DyT study's activation rank) and normalization bias.
        std::ofstream stream_csv(run_dir + "/stream.csv");
        // And what each block did to it: the tokens' turning angle and relative change.
        stream_csv << "position,effective_rank,normalization_bias,turn_angle,relative_change\n";
        std::vector<Tensor> stream = task.residual_stream();
        Tensor previous;
        for (size_t i = 0; i < stream.size(); ++i) {
            int64_t C = stream[i].size(-1);
            Tensor tokens = raw::reshape(stream[i], {stream[i].numel() / C, C});
            stream_csv << (i == 0 ? std::string("embeddings") : "block_" + std::to_string(i - 1)) << ","
                       << diag::effective_rank(tokens) << "," << diag::normalization_bias(tokens) << ",";
            if (i == 0) {
                stream_csv << ",\n";
            } else {
                diag::StreamStep step = diag::stream_step(previous, tokens);
                stream_csv << step.angle << "," << step.relative_change << "\n";
            }
            previous = tokens;
        }
        // The trained weight matrices' spectra: effective rank and HTSR alpha.
        std::ofstream weights_csv(run_dir + "/weights.csv");
        weights_csv << "name,rows,cols,effective_rank,htsr_alpha,alpha_sigma,ks_distance\n";
        for (const auto& [name, p] : model.named_parameters()) {
            if (p.dim() != 2 || std::min(p.size(0), p.size(1)) < 2) continue;
            diag::PowerLawFit fit;
            try {
                fit = diag::htsr_alpha(p);
            } catch (const Error&) {
                fit.alpha = NAN;  // too few eigenvalues above 1e-5 to fit
            }
            weights_csv << name << "," << p.size(0) << "," << p.size(1) << "," << diag::effective_rank(p) << ","
                        << fit.alpha << "," << fit.sigma << "," << fit.ks_distance << "\n";
        }
    }
    if (diagnostics)
        std::printf("diagnostics: %lld loss spikes (factor %.2f, window %lld), per-block gradient norms in %s/diagnostics.csv\n",
                    (long long)spikes.spikes(), flags.number("spike-factor"), (long long)flags.integer("spike-window"),
                    run_dir.c_str());
    std::printf("memory: peak %.1f MiB in tensors on %s, %lld blocks from the system, %lld reused\n",
                (double)memory.peak_bytes_in_use / 1048576.0, device.str().c_str(), (long long)memory.system_allocations,
                (long long)memory.cache_hits);
    double summary_tok_per_s = (double)(task.tokens_per_batch * accum) / (ms_per_step / 1000);
    if (dist.active()) {
        // Identical gradients and identical updates keep every rank's model
        // and optimizer state identical; check it rather than trust it.
        double checksum = 0, k = 0;
        auto add = [&](const Tensor& t) {
            for (double v : raw::to_device(t, kCPU).to_vector()) checksum += v * (1 + std::fmod(k++, 7.0));
        };
        for (const Tensor& p : params) add(p);
        for (const auto& [name, t] : opt->state()) add(t);
        bool same = same_on_every_rank(dist, checksum);
        double per_step = 1000.0 / (double)(stop - first_step);
        std::printf("data parallel: %d ranks, %zu gradient buckets %s; per step %.1f ms waiting for the all-reduce after "
                    "backward (%.1f%% of the step) and %.1f ms packing during it; weights and optimizer state identical "
                    "on every rank: %s\n",
                    dist.world, averager.bucket_count(), overlap ? "reduced during backward" : "reduced after backward (--no-overlap)",
                    per_step * averager.finish_seconds(), 100 * averager.finish_seconds() / train_seconds,
                    per_step * averager.packing_seconds(), same ? "yes" : "NO");
        if (!same) abort_all_ranks("the ranks' weights or optimizer state differ after training (a bug: please report it)");
        summary_tok_per_s *= dist.world;  // tokens of the whole step
    }
    if (peak_gflops > 0)
        std::printf("throughput: %.0f tok/s x %.3g FLOPs/token = %.1f GFLOP/s, MFU %.1f%% of the %.1f GFLOP/s FMA peak\n",
                    summary_tok_per_s, flops_per_token, summary_tok_per_s * flops_per_token / 1e9, mfu(summary_tok_per_s),
                    peak_gflops);
    // The contract's line, exactly (checks outside the suite parse it): the
    // MFU is on the throughput line above it.
    std::printf("summary: steps=%lld train_loss=%.4f val_loss=%.4f ms_per_step=%.1f tok_per_s=%.0f\n", (long long)stop,
                last_loss, last_val, ms_per_step, summary_tok_per_s);
    std::fflush(stdout);
    finish_distributed(dist);
    return 0;
}

}  // namespace app
}  // namespace nc
