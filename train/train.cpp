// train.cpp — the training loop (train/train.h).
//
// flags -> a task (train/train_task.h: text for GPT-2 and Llama, images for
// ViT) -> for each step: the learning rate, one train_step
// (train/train_step.h: forward, loss, backward, all-reduce, clip, update),
// the logs and the progress line (train/run_log.h), validation every N steps,
// checkpoints -> the task's report at the end, the summary line of the
// command-line contract, and the TrainResult.
#include "train/train.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "analysis/run_diagnostics.h"
#include "optim/optimizer.h"
#include "tensor/cpu/gemm_16bit.h"
#include "tensor/cpu/gemm_kernels.h"
#include "train/checkpoint.h"
#include "train/lm.h"
#include "train/memory_plan.h"
#include "train/run_log.h"
#include "train/step_peak.h"
#include "train/train_step.h"
#include "train/train_task.h"

namespace nc {
namespace app {

// What a killed or failed run can leave behind: the temporaries that are
// renamed over the real files only when complete. They are never good data.
static void remove_stale_temporaries(const std::string& run_dir, const std::string& save, std::FILE* out) {
    std::vector<std::string> stale = {run_dir + "/checkpoint.safetensors.tmp"};
    if (!save.empty()) {
        stale.push_back(save + ".tmp");
        for (const char* f : {"/model.safetensors.new", "/model.safetensors.new.tmp", "/config.json.new"})
            stale.push_back(save + f);
    }
    for (const std::string& path : stale)
        if (std::filesystem::is_regular_file(path) && std::remove(path.c_str()) == 0)
            std::fprintf(out, "removed %s, a temporary file a killed or failed run left behind\n", path.c_str());
}

static std::string default_run_dir(const std::string& model) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    return "runs/" + model + "-" + stamp;
}


// The run's flags that the loop reads, parsed and checked before anything is built.
struct RunPlan {
    int64_t steps = 0, accum = 1, stop = 0;  // stop: --stop-after, or steps
    double lr = 0;
    optim::Schedule schedule = optim::Schedule::Cosine;
    int64_t warmup = 0;
    double min_lr_ratio = 0;
    int64_t eval_every = 0, checkpoint_every = 0, sample_every = 0;
    bool skip_nonfinite = false;
    std::string run_dir;
};

void check_run_shape(const Flags& flags, const nn::TransformerConfig& cfg) {
    if (cfg.family != nn::Family::ViT && flags.integer("seq") > cfg.block_size && cfg.positions == nn::Positions::Learned)
        throw Error("flag --seq " + flags.str("seq") + ": longer than the model's position table (" + std::to_string(cfg.block_size) + ")");
    if (flags.integer("steps") <= 0 || flags.integer("accum") <= 0) throw Error("flags --steps and --accum must be positive");
}

static RunPlan plan_run(const Flags& flags, const nn::TransformerConfig& cfg, const Distributed& dist) {
    // Every rank's dropout generator starts from the same seed, so ranks would
    // drop the same positions of their different rows: correlated masks, and
    // not the run of one process with the whole batch.
    if (dist.active() && cfg.dropout > 0)
        throw Error("--dropout " + flags.str("dropout") + ": not with data-parallel ranks yet (every rank would draw the "
                    "same dropout masks for its rows); use --dropout 0 or one rank (chapter 14)");
    if (flags.on("diagnostics") && dist.active())
        throw Error("flag --diagnostics: not with data-parallel ranks yet (train on one rank to log diagnostics)");
    check_run_shape(flags, cfg);
    RunPlan plan;
    plan.steps = flags.integer("steps");
    plan.accum = flags.integer("accum");
    plan.stop = flags.integer("stop-after") > 0 ? std::min(plan.steps, flags.integer("stop-after")) : plan.steps;
    plan.lr = flags.number("lr");
    plan.schedule = optim::parse_schedule(flags.str("schedule"));
    plan.warmup = flags.integer("warmup");
    plan.min_lr_ratio = flags.number("min-lr-ratio");
    plan.eval_every = flags.integer("eval-every");
    plan.checkpoint_every = flags.integer("checkpoint-every");
    plan.sample_every = flags.integer("sample-every");
    if (plan.sample_every < 0) throw Error("flag --sample-every must be >= 0, got " + flags.str("sample-every"));
    plan.skip_nonfinite = flags.on("skip-nonfinite");
    plan.run_dir = flags.given("run-dir") ? flags.str("run-dir") : default_run_dir(flags.str("model"));
    return plan;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Flags& flags, nn::Module& model) {
    std::vector<optim::ParamGroup> groups = optim::decay_groups(model, flags.number("weight-decay"));
    double lr = flags.number("lr");
    if (flags.str("optimizer") == "adamw")
        return std::make_unique<optim::AdamW>(groups, lr, flags.number("beta1"), flags.number("beta2"), flags.number("eps"));
    if (flags.str("optimizer") == "sgd")
        return std::make_unique<optim::SGD>(groups, lr, flags.number("momentum"), flags.on("nesterov"));
    throw Error("flag --optimizer: unknown optimizer '" + flags.str("optimizer") + "' (choose sgd or adamw)");
}

// --resume: the weights, the optimizer state and the batch and dropout
// streams' positions; returns the step to continue from.
static int64_t resume(const std::string& path, Task& task, optim::Optimizer& opt, optim::LossScaler* scaler,
                      const Distributed& dist, const RunPlan& plan, std::FILE* out) {
    nn::TransformerModel& model = task.model();
    TrainingState state = load_training_checkpoint(path, model, opt);
    if (state.ranks != dist.world)
        throw Error("--resume: '" + path + "' was written by a run of " + std::to_string(state.ranks) +
                    " rank(s) and this run has " + std::to_string(dist.world) + ": the batches of each step would "
                    "differ (resume with mpirun -np " + std::to_string(state.ranks) + ")");
    task.set_batch_position({state.batches_taken, state.batch_seed, state.batch_offset});
    model.dropout_generator().manual_seed(state.dropout_seed);
    model.dropout_generator().set_offset(state.dropout_offset);
    if (state.step >= plan.steps)
        throw Error("--resume: the checkpoint is at step " + std::to_string(state.step) + ", nothing left for --steps " +
                    std::to_string(plan.steps));
    // A float16 run goes on with the scale it had; one whose checkpoint has
    // none (it trained in another precision) starts the scaler afresh.
    if (scaler && state.loss_scale > 0)
        scaler->restore(state.loss_scale, state.loss_scale_good_steps, state.loss_scale_skipped);
    std::fprintf(out, "resumed from %s at step %lld\n", path.c_str(), (long long)state.step);
    if (state.schedule_steps > 0 && state.schedule_steps != plan.steps)
        std::fprintf(out, "warning: the checkpoint's run was scheduled for %lld steps and --steps is %lld: the "
                    "learning-rate schedule changes from here on, so this run will not match an uninterrupted one\n",
                    (long long)state.schedule_steps, (long long)plan.steps);
    return state.step;
}

// RUN_DIR/checkpoint.safetensors after `done` steps (rank 0 only: every
// rank holds the same weights and state).
static void save_checkpoint(Task& task, const optim::Optimizer& opt, const optim::LossScaler* scaler,
                            const RunPlan& plan, const Distributed& dist, int64_t done) {
    if (!dist.root()) return;
    BatchPosition batches = task.batch_position();
    nn::TransformerModel& model = task.model();
    TrainingState state{done, batches.batches_taken, batches.seed, batches.offset, model.dropout_generator().seed(),
                        model.dropout_generator().offset(), plan.steps, dist.world};
    if (scaler) {
        state.loss_scale = scaler->scale();
        state.loss_scale_good_steps = scaler->good_steps_in_a_row();
        state.loss_scale_skipped = scaler->skipped_steps();
    }
    save_training_checkpoint(plan.run_dir + "/checkpoint.safetensors", model, opt, state);
}

// The run directory with its train_log.csv (on rank 0; the others log nothing).
static TrainLog open_run_dir(const RunPlan& plan, const std::string& save, int64_t first_step, const Distributed& dist,
                             std::FILE* out) {
    if (!dist.root()) return TrainLog();
    std::error_code made;
    std::filesystem::create_directories(plan.run_dir, made);
    if (made) throw Error("--run-dir: cannot create '" + plan.run_dir + "': " + made.message());
    remove_stale_temporaries(plan.run_dir, save, out);
    return TrainLog(plan.run_dir + "/train_log.csv", first_step);
}

// A step that train_step refused (its loss or gradient norm not finite)
// would spread NaN into every weight, and the run would then save them over
// good files: stop (returns why), or with --skip-nonfinite skip it (at most
// 100 in a row; returns "").
struct Skipped {
    int64_t total = 0, in_a_row = 0;
};
static std::string refused_step(const StepResult& r, int64_t step, const RunPlan& plan, Skipped& skipped,
                                Progress& progress, std::FILE* out) {
    double value = r.refused_value();
    const char* what = refusal_name(r.refused);
    if (!plan.skip_nonfinite)
        return "step " + std::to_string(step) + ": the " + what + " is " + std::to_string(value) + ". " +
               kStoppedOnNonFinite + " (lower --lr, check the data and the --init weights, or pass "
               "--skip-nonfinite to skip such steps)";
    if (++skipped.in_a_row > 100)
        return "step " + std::to_string(step) + ": 100 steps in a row had a non-finite " + what + ". " +
               kStoppedOnNonFinite + " (--skip-nonfinite skips isolated steps only)";
    ++skipped.total;
    progress.interrupt();
    std::fprintf(out, "step %lld: skipped, the %s is %g\n", (long long)step, what, value);
    return "";
}

// Data parallel: identical gradients and identical updates keep every rank's
// model and optimizer state identical; check it rather than trust it, and
// say how long the all-reduce kept the steps waiting.
static void report_data_parallel(const Distributed& dist, const std::vector<Tensor>& params, const optim::Optimizer& opt,
                                 const GradientAverager& averager, bool overlap, int64_t steps_run, double train_seconds,
                                 std::FILE* out) {
    double checksum = 0, k = 0;
    auto add = [&](const Tensor& t) {
        for (double v : raw::to_device(t, kCPU).to_vector()) checksum += v * (1 + std::fmod(k++, 7.0));
    };
    for (const Tensor& p : params) add(p);
    for (const auto& [name, t] : opt.state()) add(t);
    bool same = same_on_every_rank(dist, checksum);
    double per_step = 1000.0 / (double)steps_run;
    std::fprintf(out, "data parallel: %d ranks, %zu gradient buckets %s; per step %.1f ms waiting for the all-reduce after "
                "backward (%.1f%% of the step) and %.1f ms packing during it; weights and optimizer state identical "
                "on every rank: %s\n",
                dist.world, averager.bucket_count(), overlap ? "reduced during backward" : "reduced after backward (--no-overlap)",
                per_step * averager.finish_seconds(), 100 * averager.finish_seconds() / train_seconds,
                per_step * averager.packing_seconds(), same ? "yes" : "NO");
    if (!same) abort_all_ranks("the ranks' weights or optimizer state differ after training (a bug: please report it)");
}

// Everything a run trains with, built from the flags in this order: the
// device, the config and the plan, the task (data and model), the optimizer,
// a resumed run's position, and the run directory with its log.
struct Run {
    TrainOutput output;
    Device device;
    nn::TransformerConfig cfg;
    RunPlan plan;
    std::unique_ptr<Task> task;
    std::unique_ptr<optim::Optimizer> opt;
    std::unique_ptr<optim::LossScaler> scaler;  // --precision fp16 only
    std::vector<Tensor> params;
    int64_t first_step = 0;
    TrainLog log;
    ForwardMemoryProbe forward_memory;  // the activations (train/memory_plan.h)
};

static Run set_up_run(const Flags& flags, const Distributed& dist, const TrainOutput& output) {
    Run run;
    run.output = output;
    std::FILE* out = output.text;
    // Each rank on a machine takes its own GPU, before anything touches one.
    if (dist.active() && flags.str("device").rfind("cuda", 0) == 0) choose_gpu(dist);
    run.device = parse_device(flags.str("device"));
    run.forward_memory.device = run.device;
    // A run alone in its process starts its memory peak afresh (a study's
    // cells that run one after the other each see their own).
    if (output.runs_in_process == 1) backend_for(run.device).reset_peak_bytes();
    run.cfg = resolve_config(flags);
    run.plan = plan_run(flags, run.cfg, dist);
    run.task = make_task(flags, run.cfg, (uint64_t)flags.integer("seed"), dist, out);
    nn::TransformerModel& model = run.task->model();
    if (flags.given("init") && !flags.given("resume")) load_weights(model, flags.str("init"));
    // Parameters move in place, so the optimizer below (and checkpoint
    // loading, which copies across devices) sees them on `device`.
    model.to(run.device);
    model.set_recompute(flags.on("recompute"));
    model.set_precision(parse_precision(flags.str("precision")));
    if (model.precision() == kFloat16) run.scaler = std::make_unique<optim::LossScaler>();
    run.opt = make_optimizer(flags, model);
    run.params = model.parameters();
    if (flags.given("resume"))
        run.first_step = resume(flags.str("resume"), *run.task, *run.opt, run.scaler.get(), dist, run.plan, out);
    if (run.plan.stop <= run.first_step)
        throw Error("--stop-after " + std::to_string(run.plan.stop) + ": the checkpoint is already at step " +
                    std::to_string(run.first_step) + ", so there is nothing to run (give a later --stop-after)");
    run.log = open_run_dir(run.plan, flags.str("save"), run.first_step, dist, out);
    if (dist.active())
        std::fprintf(out, "data parallel: %d ranks, %lld x %d = %lld examples per step, gradients averaged by %s\n", dist.world,
                    (long long)flags.integer("batch"), dist.world, (long long)(flags.integer("batch") * dist.world),
                    gradient_transport(run.params).c_str());
    std::fprintf(out, "model: %s, %lld parameters\n", describe(run.cfg).c_str(), (long long)model.num_parameters());
    if (run.device == kCPU)
        std::fprintf(out, "cpu: %d threads, the %s GEMM micro-kernel\n", omp_get_max_threads(),
                    cpu::simd_isa_name(cpu::best_simd_isa()));
    if (model.precision() != kFloat32) {
        // On the CPU, which of gemm_16bit.h's paths the products take (AMX, AVX512-BF16 or widening).
        std::string path = run.device == kCPU
                               ? std::string(" (on this CPU: ") + cpu::gemm16_path_name(cpu::best_gemm16_path(model.precision())) + ")"
                               : "";
        std::string scaling = run.scaler ? "; dynamic loss scaling from " + flag_number(run.scaler->scale()) : "";
        std::fprintf(out, "precision: every linear layer and attention multiplies %s operands and sums in float32%s; "
                          "weights, gradients, optimizer state, norms, softmax and the loss stay float32%s\n",
                     dtype_name(model.precision()), path.c_str(), scaling.c_str());
        if (run.device == kCPU && dist.root()) {
            StepPeak peak = step_peak_of(model.precision());
            if (peak == StepPeak::Unmeasured) std::fprintf(out, "precision: no MFU shown: %s\n", step_peak_name(peak));
            else std::fprintf(out, "precision: MFU against the %s\n", step_peak_name(peak));
        }
    }
    std::fprintf(out, "training: %lld steps%s%s, log in %s/train_log.csv\n", (long long)run.plan.steps,
                run.plan.accum > 1 ? (" of " + std::to_string(run.plan.accum) + " micro-batches").c_str() : "",
                model.recompute() ? ", each block's activations recomputed during backward" : "", run.plan.run_dir.c_str());
    return run;
}

// --diagnostics (analysis/run_diagnostics.h), or diagnostics that do nothing.
static diag::RunDiagnostics make_diagnostics(const Flags& flags, Run& run) {
    if (!flags.on("diagnostics")) return diag::RunDiagnostics();
    int64_t calibration = flags.integer("calibration-step");
    diag::DiagnosticsSettings settings{flags.integer("spike-window"), flags.number("spike-factor"),
                                 flags.number("saturation-threshold"),
                                 calibration > 0 ? calibration : std::max<int64_t>(1, run.plan.steps / 10)};
    Task* task = run.task.get();
    std::function<void(int64_t)> held_out;  // none without validation data
    if (task->held_out_batches() > 0) held_out = [task](int64_t i) { task->held_out_forward(i); };
    return diag::RunDiagnostics(task->model(), run.plan.run_dir, run.first_step, settings, task->held_out_batches(), held_out);
}

// The progress line, with the model FLOPs utilization against the peak of
// the arithmetic the step's products use (train/step_peak.h), sampled quickly as
// `bench` measures it, at the start and again during the run (Progress keeps
// the best). No peak is known for a GPU, so no MFU there; nor on the ranks
// other than the root, whose lines nobody reads and whose samples would take
// the cores the root samples on.
static Progress make_progress(const Flags& flags, const Run& run, const Distributed& dist) {
    const nn::TransformerConfig& cfg = run.cfg;
    int64_t positions = cfg.family == nn::Family::ViT
                            ? (cfg.image_size / cfg.patch_size) * (cfg.image_size / cfg.patch_size) + 1
                            : flags.integer("seq");
    std::function<double(int)> sample_peak;
    if (run.device == kCPU && dist.root()) sample_peak = step_peak_sampler(step_peak_of(run.task->model().precision()));
    return Progress(run.output.text, run.first_step, run.plan.stop, run.plan.steps,
                    (double)(run.task->tokens_per_batch() * run.plan.accum), nn::training_flops_per_token(cfg, positions),
                    sample_peak);
}

// One step of the run (train/train_step.h). Data parallel: the ranks average
// each bucket of gradients while backward still runs (--no-overlap: after it).
static TrainStep make_step(const Flags& flags, Run& run, GradientAverager& averager, const Distributed& dist,
                           diag::RunDiagnostics& diagnostics) {
    TrainStep step;
    Task* task = run.task.get();
    ForwardMemoryProbe* probe = &run.forward_memory;
    step.loss = [task, probe] { return probe->measure([task] { return task->train_loss(); }); };
    step.params = run.params;
    step.optimizer = run.opt.get();
    step.accum = run.plan.accum;
    step.grad_clip = flags.number("grad-clip");
    step.averager = &averager;
    step.dist = &dist;
    step.overlap = !flags.on("no-overlap");
    step.scaler = run.scaler.get();
    step.before_clip = [&diagnostics] { diagnostics.before_clip(); };
    step.before_update = [&diagnostics] { diagnostics.before_update(); };
    return step;
}

// The peak's parts (train/memory_plan.h): parameters, gradients and the
// optimizer's state are exact sizes, the activations what the forward pass
// kept. The peak comes during backward, when part of the gradients exist:
// what backward holds there besides (those gradients, the gradient flowing
// back, temporaries) is the rest of the peak; `normcore memory` splits it.
static void report_memory_split(const Run& run, TrainResult& r, std::FILE* out) {
    std::vector<Tensor> state;
    for (const auto& [name, t] : run.opt->state()) state.push_back(t);
    r.parameters_mib = mib_of_tensors(run.params);
    r.gradients_mib = r.parameters_mib;  // every parameter trains: one gradient of its size
    r.optimizer_mib = mib_of_tensors(state);
    r.activations_mib = (double)run.forward_memory.largest_bytes / 1048576.0;
    r.gradients_and_workspace_mib = r.peak_mib - r.parameters_mib - r.optimizer_mib - r.activations_mib;
    std::fprintf(out, "memory at the peak: parameters %.1f MiB, optimizer state %.1f, activations %.1f (what the forward "
                      "pass keeps for backward), gradients and workspace %.1f (the rest); all gradients: %.1f\n",
                 r.parameters_mib, r.optimizer_mib, r.activations_mib, r.gradients_and_workspace_mib, r.gradients_mib);
}

// What the loop carries from step to step into the summary.
struct Totals {
    double last_loss = 0, last_val = NAN, train_seconds = 0;
    Skipped skipped;
    int64_t overflow_skipped = 0;  // steps the float16 loss scaler skipped in this run
    std::vector<double> losses;
    std::string stopped;  // why a non-finite value stopped the run ("" while it runs)
};

// The end of a run: a checkpoint, the weights, the task's report (a sample
// or the accuracy), the diagnostics' files, memory, the ranks' agreement,
// the throughput and the contract's summary line; the run's result.
static TrainResult finish_run(const Flags& flags, Run& run, const Distributed& dist, Totals& totals,
                              const Progress& progress, const GradientAverager& averager, bool overlap,
                              diag::RunDiagnostics& diagnostics) {
    std::FILE* out = run.output.text;
    if (totals.skipped.total > 0)
        std::fprintf(out, "skipped %lld steps whose loss or gradient was not finite (--skip-nonfinite)\n",
                     (long long)totals.skipped.total);
    if (run.scaler)
        std::fprintf(out, "loss scaling: %lld of this run's %lld steps skipped because a gradient overflowed float16 "
                          "(%lld over the whole run); the scale is now %s\n",
                     (long long)totals.overflow_skipped, (long long)(run.plan.stop - run.first_step),
                     (long long)run.scaler->skipped_steps(), flag_number(run.scaler->scale()).c_str());
    save_checkpoint(*run.task, *run.opt, run.scaler.get(), run.plan, dist, run.plan.stop);
    if (flags.given("save") && dist.root()) {
        save_weights(run.task->model(), flags.str("save"));
        std::fprintf(out, "weights saved to %s\n", flags.str("save").c_str());
    }
    run.task->finish();
    TrainResult r;
    int64_t steps_run = run.plan.stop - run.first_step;
    r.ms_per_step = 1000 * totals.train_seconds / (double)steps_run;
    if (diagnostics.on()) {
        diagnostics.finish(run.task->residual_stream());
        std::fprintf(out, "diagnostics: %lld loss spikes (factor %.2f, window %lld), per-block gradient norms in %s/diagnostics.csv\n",
                     (long long)diagnostics.spikes(), diagnostics.settings().spike_factor,
                     (long long)diagnostics.settings().spike_window, run.plan.run_dir.c_str());
    }
    // The caching allocator's high-water mark on the training device:
    // parameters, optimizer state, activations and gradients at their largest
    // (tensor/cpu/allocator.h, or device memory on a GPU).
    AllocatorStats memory = backend_for(run.device).allocator_stats();
    r.peak_mib = (double)memory.peak_bytes_in_use / 1048576.0;
    std::fprintf(out, "memory: peak %.1f MiB in tensors on %s%s, %lld blocks from the system, %lld reused\n", r.peak_mib,
                 run.device.str().c_str(),
                 run.output.runs_in_process > 1 ? " (in this process, shared with the runs beside this one)" : "",
                 (long long)memory.system_allocations, (long long)memory.cache_hits);
    report_memory_split(run, r, out);
    // The whole step's tokens, every rank's.
    r.tok_per_s = (double)(run.task->tokens_per_batch() * run.plan.accum * dist.world) / (r.ms_per_step / 1000);
    if (dist.active())
        report_data_parallel(dist, run.params, *run.opt, averager, overlap, steps_run, totals.train_seconds, out);
    double flops_per_token = progress.flops_per_token();
    r.mfu = progress.mfu(r.tok_per_s);
    if (progress.peak_gflops() > 0)
        std::fprintf(out, "throughput: %.0f tok/s x %.3g FLOPs/token = %.1f GFLOP/s, MFU %.1f%% of the %.1f GFLOP/s %s\n",
                     r.tok_per_s, flops_per_token, r.tok_per_s * flops_per_token / 1e9, r.mfu, progress.peak_gflops(),
                     step_peak_name(step_peak_of(run.task->model().precision())));
    // The contract's line, exactly (checks outside the suite parse it): the
    // MFU is on the throughput line above it.
    std::fprintf(out, "summary: steps=%lld train_loss=%.4f val_loss=%.4f ms_per_step=%.1f tok_per_s=%.0f\n",
                 (long long)run.plan.stop, totals.last_loss, totals.last_val, r.ms_per_step, r.tok_per_s);
    std::fflush(out);
    r.files = diagnostics.files();
    return r;
}

// Steps run.first_step .. plan.stop, or until a non-finite value stops the
// run (totals.stopped says why).
static void run_steps(Run& run, Totals& totals, TrainStep& one_step, diag::RunDiagnostics& diagnostics,
                      Progress& progress, const Distributed& dist) {
    const RunPlan& plan = run.plan;
    for (int64_t step = run.first_step; step < plan.stop; ++step) {
        auto start = std::chrono::steady_clock::now();
        double lr = optim::learning_rate(plan.schedule, plan.lr, step, plan.steps, plan.warmup, plan.min_lr_ratio);
        run.opt->set_lr(lr);
        StepResult r = train_step(one_step);
        totals.last_loss = r.loss;
        totals.losses.push_back(r.loss);
        if (r.refused != Refusal::None) {
            totals.stopped = refused_step(r, step + 1, plan, totals.skipped, progress, run.output.text);
            if (!totals.stopped.empty()) return;
            // Skipped, but it happened: its batch was drawn and its time
            // spent, and its row (with the non-finite value) keeps the log
            // one row per step up to the checkpoint's step.
            totals.train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            double val = NAN;
            if (step == plan.stop - 1) {  // the summary's validation loss, of the weights the run ends with
                val = run.task->validate();
                totals.last_val = val;
            }
            run.log.row(step + 1, r.loss, val, lr, r.grad_norm, totals.train_seconds);
            continue;
        }
        totals.skipped.in_a_row = 0;
        // A step the loss scaler skipped made no update: nothing for the
        // diagnostics to measure (their hooks did not run either).
        if (r.skipped) ++totals.overflow_skipped;
        else diagnostics.after_update(step + 1, r.loss);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        totals.train_seconds += seconds;

        bool last = step == plan.stop - 1;
        diagnostics.held_out(step + 1, last);
        double val = NAN;
        if (last || (plan.eval_every > 0 && (step + 1) % plan.eval_every == 0)) {
            val = run.task->validate();
            if (!std::isnan(val)) totals.last_val = val;
        }
        run.log.row(step + 1, r.loss, val, lr, r.grad_norm, totals.train_seconds);
        if (plan.checkpoint_every > 0 && (step + 1) % plan.checkpoint_every == 0 && !last)
            save_checkpoint(*run.task, *run.opt, run.scaler.get(), plan, dist, step + 1);
        progress.step(step + 1, seconds, totals.train_seconds, r.loss, val, lr);
        if (plan.sample_every > 0 && (step + 1) % plan.sample_every == 0 && !last) {
            progress.interrupt();
            run.task->sample_during(step + 1);
        }
    }
}

TrainResult train_run(const Flags& flags, const Distributed& dist, const TrainOutput& output) {
    Run run = set_up_run(flags, dist, output);
    diag::RunDiagnostics diagnostics = make_diagnostics(flags, run);
    Progress progress = make_progress(flags, run, dist);
    GradientAverager averager(dist, run.params);
    TrainStep one_step = make_step(flags, run, averager, dist, diagnostics);
    Totals totals;
    run_steps(run, totals, one_step, diagnostics, progress, dist);
    progress.interrupt();
    TrainResult result;
    if (totals.stopped.empty()) {
        result = finish_run(flags, run, dist, totals, progress, averager, one_step.overlap, diagnostics);
    } else {
        result.stop = StopReason::NonFinite;
        result.message = totals.stopped;
    }
    result.steps = run.first_step + (int64_t)totals.losses.size();
    result.train_loss = totals.last_loss;
    result.val_loss = totals.last_val;
    result.skipped_steps = totals.skipped.total;
    if (run.scaler) {
        result.overflow_skipped_steps = run.scaler->skipped_steps();
        result.loss_scale = run.scaler->scale();
    }
    result.losses = std::move(totals.losses);
    result.run_dir = run.plan.run_dir;
    if (dist.root()) write_result(result, run.plan.run_dir + "/result.json");
    return result;
}

}  // namespace app
}  // namespace nc
