// train.cpp — `normcore train`: the training loop of a language model.
//
// data -> batches -> forward -> cross-entropy -> backward -> clip -> optimizer
// step, with a learning-rate schedule, validation every N steps, a progress
// bar, a CSV log of every step in the run directory, a text sample at the
// end, and the summary line of the command-line contract.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/checkpoint.h"
#include "apps/commands.h"
#include "apps/lm.h"
#include "data/text.h"
#include "optim/optimizer.h"

namespace nc {
namespace app {

static std::vector<FlagSpec> train_flags() {
    std::vector<FlagSpec> specs = model_flags();
    std::vector<FlagSpec> more = {
        {"device", "cpu", "cpu | cuda"},
        {"data", data::kDefaultCorpus, "a text file or a directory of text files"},
        {"val-fraction", "0.1", "the last fraction of the tokens used for validation"},
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
        {"schedule", "cosine", "constant | cosine | linear"},
        {"warmup", "100", "linear warm-up steps"},
        {"min-lr-ratio", "0.1", "cosine/linear decay ends at this fraction of --lr"},
        {"seed", "1337", "seed for initialization, batches and sampling"},
        {"eval-every", "250", "validation loss every N steps (0: only at the end)"},
        {"eval-batches", "16", "batches per validation"},
        {"sample-tokens", "300", "bytes of text sampled at the end (0: none)"},
        {"temperature", "0.8", "sampling temperature"},
        {"top-k", "0", "sample among the k most likely bytes (0: all)"},
        {"prompt", "", "text the sample continues (default: a newline)"},
        {"run-dir", "", "where the CSV log goes (default: runs/<model>-<date>-<time>)"},
        {"init", "", "initial weights: a safetensors file (architecture from the flags) or a model directory"},
        {"save", "", "write the final weights here: FILE.safetensors, or DIR/ for config.json + model.safetensors"},
        {"resume", "", "continue from a training checkpoint (<run-dir>/checkpoint.safetensors)"},
        {"stop-after", "0", "stop after this many steps as if interrupted (the schedule still spans --steps)"},
        {"checkpoint-every", "0", "also write <run-dir>/checkpoint.safetensors every N steps (it is always written at the end)"},
    };
    specs.insert(specs.end(), more.begin(), more.end());
    return specs;
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

// Mean cross-entropy over `batches` deterministic validation windows.
static double evaluate(const LanguageModel& lm, const data::LMBatches& val, int64_t batches) {
    NoGradGuard no_grad;
    lm.module->eval();
    double total = 0;
    for (int64_t i = 0; i < batches; ++i) {
        data::Batch b = val.at(i);
        total += cross_entropy(lm.forward(b.inputs), b.targets).item();
    }
    lm.module->train();
    return total / (double)batches;
}

int train_command(int argc, char** argv) {
    Flags flags("train", train_flags());
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Trains a model. With no flags: the default small GPT-2 on the fortunes corpus.\n\n" << flags.usage();
        return 0;
    }
    if (flags.str("device") != "cpu")
        throw Error("flag --device: '" + flags.str("device") + "' is not available: this build has only the cpu backend");
    nn::TransformerConfig cfg = resolve_config(flags);
    std::string run_dir = flags.given("run-dir") ? flags.str("run-dir") : default_run_dir(flags.str("model"));
    if (cfg.family == nn::Family::ViT)
        throw Error("--model vit: image data (Fashion-MNIST, image folders) is not implemented yet in this build");
    if (flags.integer("seq") > cfg.block_size && cfg.positions == nn::Positions::Learned)
        throw Error("--seq " + flags.str("seq") + " is longer than the model's position table (" + std::to_string(cfg.block_size) + ")");

    // Data.
    std::string text = data::read_corpus(flags.str("data"));
    data::Split split = data::split_tokens(data::encode_bytes(text), flags.number("val-fraction"));
    int64_t B = flags.integer("batch"), T = flags.integer("seq"), steps = flags.integer("steps"), accum = flags.integer("accum");
    if (steps <= 0 || accum <= 0) throw Error("flags --steps and --accum must be positive");
    uint64_t seed = (uint64_t)flags.integer("seed");
    data::LMBatches train_batches(split.train, B, T, !flags.on("no-shuffle"), seed + 1);
    bool has_val = (int64_t)split.val.size() > T + 1;
    std::unique_ptr<data::LMBatches> val_batches;
    if (has_val) val_batches = std::make_unique<data::LMBatches>(split.val, B, T, false, seed + 2);

    // Model and optimizer.
    Generator init_gen(seed);
    LanguageModel lm = build_language_model(cfg, init_gen);
    if (flags.given("init") && !flags.given("resume")) load_weights(*lm.module, flags.str("init"));
    std::vector<optim::ParamGroup> groups = optim::decay_groups(*lm.module, flags.number("weight-decay"));
    std::unique_ptr<optim::Optimizer> opt;
    double lr = flags.number("lr");
    if (flags.str("optimizer") == "adamw")
        opt = std::make_unique<optim::AdamW>(groups, lr, flags.number("beta1"), flags.number("beta2"), flags.number("eps"));
    else if (flags.str("optimizer") == "sgd")
        opt = std::make_unique<optim::SGD>(groups, lr, flags.number("momentum"), flags.on("nesterov"));
    else
        throw Error("flag --optimizer: unknown optimizer '" + flags.str("optimizer") + "' (choose sgd or adamw)");
    optim::Schedule schedule = optim::parse_schedule(flags.str("schedule"));
    std::vector<Tensor> params = lm.module->parameters();
    int64_t first_step = 0;
    if (flags.given("resume")) {
        TrainingState state = load_training_checkpoint(flags.str("resume"), *lm.module, *opt);
        first_step = state.step;
        train_batches.generator().manual_seed(state.batch_seed);
        train_batches.generator().set_offset(state.batch_offset);
        train_batches.set_position(state.batches_taken);
        lm.module->dropout_generator().manual_seed(state.dropout_seed);
        lm.module->dropout_generator().set_offset(state.dropout_offset);
        if (first_step >= steps)
            throw Error("--resume: the checkpoint is at step " + std::to_string(first_step) + ", nothing left for --steps " +
                        std::to_string(steps));
        std::printf("resumed from %s at step %lld\n", flags.str("resume").c_str(), (long long)first_step);
    }
    auto checkpoint = [&](int64_t done) {
        TrainingState state{done, train_batches.batches_taken(), train_batches.generator().seed(),
                            train_batches.generator().offset(), lm.module->dropout_generator().seed(),
                            lm.module->dropout_generator().offset()};
        save_training_checkpoint(run_dir + "/checkpoint.safetensors", *lm.module, *opt, state);
    };

    std::filesystem::create_directories(run_dir);
    std::ofstream csv(run_dir + "/train_log.csv", first_step > 0 ? std::ios::app : std::ios::trunc);
    if (!csv) throw Error("--run-dir: cannot write '" + run_dir + "/train_log.csv'");
    if (first_step == 0) csv << "step,loss,val_loss,lr,grad_norm,time_s\n";

    std::printf("model: %s, %lld parameters\n", describe(cfg).c_str(), (long long)lm.module->num_parameters());
    std::printf("data: %s, %zu train / %zu val bytes; batch %lld x %lld%s; %lld steps, log in %s/train_log.csv\n",
                flags.str("data").c_str(), split.train.size(), split.val.size(), (long long)B, (long long)T,
                accum > 1 ? (" x " + std::to_string(accum) + " micro-batches").c_str() : "", (long long)steps,
                run_dir.c_str());

    bool tty = isatty(STDOUT_FILENO);
    int64_t eval_every = flags.integer("eval-every"), eval_batches = flags.integer("eval-batches");
    int64_t report_every = std::max<int64_t>(1, steps / 20);
    double last_loss = 0, last_val = NAN, train_seconds = 0;
    int64_t stop = flags.integer("stop-after") > 0 ? std::min(steps, flags.integer("stop-after")) : steps;
    for (int64_t step = first_step; step < stop; ++step) {
        auto start = std::chrono::steady_clock::now();
        double step_lr = optim::learning_rate(schedule, lr, step, steps, flags.integer("warmup"), flags.number("min-lr-ratio"));
        opt->set_lr(step_lr);
        opt->zero_grad();
        double loss_sum = 0;
        for (int64_t micro = 0; micro < accum; ++micro) {
            data::Batch batch = train_batches.next();
            Tensor loss = cross_entropy(lm.forward(batch.inputs), batch.targets);
            loss_sum += loss.item();
            backward(accum > 1 ? loss * (1.0 / (double)accum) : loss);  // the mean over micro-batches
        }
        double grad_norm = optim::clip_grad_norm(params, flags.number("grad-clip"));
        opt->step();
        last_loss = loss_sum / (double)accum;
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        train_seconds += seconds;

        bool last = step == stop - 1;
        double val = NAN;
        if (has_val && (last || (eval_every > 0 && (step + 1) % eval_every == 0))) {
            val = evaluate(lm, *val_batches, eval_batches);
            last_val = val;
        }
        csv << step + 1 << "," << last_loss << "," << (std::isnan(val) ? "" : std::to_string(val)) << "," << step_lr << ","
            << grad_norm << "," << train_seconds << "\n";

        int64_t done_here = step + 1 - first_step;
        double tok_per_s = (double)(B * T * accum) * (double)done_here / train_seconds;
        double eta = train_seconds / (double)done_here * (double)(stop - step - 1);
        int64_t every = flags.integer("checkpoint-every");
        if (every > 0 && (step + 1) % every == 0 && !last) checkpoint(step + 1);
        char line[256];
        std::snprintf(line, sizeof line, "step %5lld/%lld | loss %.4f | lr %.2e | %6.0f tok/s | ETA %s",
                      (long long)(step + 1), (long long)stop, last_loss, step_lr, tok_per_s, format_duration(eta).c_str());
        if (tty) {
            int width = 24, filled = (int)((step + 1) * width / steps);
            std::printf("\r[%s%s] %s", std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), line);
            if (!std::isnan(val)) std::printf(" | val %.4f\n", val);
            std::fflush(stdout);
        } else if (!std::isnan(val) || (step + 1) % report_every == 0 || last) {
            std::printf("%s%s\n", line, std::isnan(val) ? "" : (" | val " + std::to_string(val)).c_str());
            std::fflush(stdout);
        }
    }
    if (tty) std::printf("\n");
    checkpoint(stop);
    if (flags.given("save")) {
        save_weights(*lm.module, flags.str("save"));
        std::printf("weights saved to %s\n", flags.str("save").c_str());
    }

    int64_t sample_count = flags.integer("sample-tokens");
    if (sample_count > 0) {
        Generator sample_gen(seed + 3);
        std::string prompt = flags.str("prompt");
        std::printf("\n--- sample (temperature %.2f) ---\n%s", flags.number("temperature"), prompt.c_str());
        sample_tokens(lm, data::encode_bytes(prompt), sample_count, flags.number("temperature"), flags.integer("top-k"),
                      sample_gen, [](int64_t t) {
                          std::putchar((int)t);
                          std::fflush(stdout);
                      });
        std::printf("\n--- end of sample ---\n");
    }
    double ms_per_step = 1000 * train_seconds / (double)(stop - first_step);
    std::printf("summary: steps=%lld train_loss=%.4f val_loss=%.4f ms_per_step=%.1f tok_per_s=%.0f\n", (long long)stop,
                last_loss, last_val, ms_per_step, (double)(B * T * accum) / (ms_per_step / 1000));
    return 0;
}

}  // namespace app
}  // namespace nc
