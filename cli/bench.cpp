// bench.cpp — `normcore bench`: how fast normcore is on this machine, in one
// run: the FMA peak of the CPU, GEMM throughput as a fraction of it, and the
// training step of GPT-2 and Llama at two sizes, with the time split by kind
// of op. `--json FILE` writes the same numbers for scripts
// (bench/compare_pytorch.py measures PyTorch on the same steps).
//
// Throughput numbers are the best of several runs (other processes only
// ever slow a run down); step times are the median of the timed steps.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "tensor/cpu/gemm_16bit.h"
#include "train/lm.h"
#include "train/step_peak.h"
#include "train/train_step.h"
#include "autograd/engine.h"
#include "autograd/ops_nn.h"
#include "optim/optimizer.h"
#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemm_kernels.h"
#include "tensor/profile.h"

namespace nc {
namespace app {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

// ---- the machine's peak ------------------------------------------------------------

// The float32 FMA peak: the best of five samples of about 50 ms (sizing
// them also warms up the clocks and the thread pool), as train samples it
// (train/step_peak.h) but longer.
double fma_peak() { return step_peak_sampler(StepPeak::Fma, 0.05)(5); }

// ---- GEMM --------------------------------------------------------------------------

struct GemmShape {
    int64_t M, K, N;
    const char* layout;  // NN: A B, NT: A B^T (x W^T, a Linear forward), TN: A^T B (a weight gradient)
    const char* label;
};

// Times every shape once per round, for `rounds` rounds, and returns each
// shape's best rate (in GFLOP/s). Going round-robin (rather than all runs of
// one shape, then the next) spreads each shape's runs over the whole
// measurement, so a slow stretch on a shared machine costs every shape one
// sample instead of costing one shape all of its samples. Each round also
// takes a sample of the FMA peak and raises `peak` if it is higher: the
// percentages then compare numbers from the same stretch of time, and one
// sample slowed by another guest does not lower the peak (when every sample
// of a run is slowed, the percentages come out high: above 100% is the sign).
std::vector<double> gemm_gflops(const std::vector<GemmShape>& shapes, int rounds, cpu::SimdIsa isa, int threads,
                                double& peak) {
    Generator gen(1);
    std::vector<std::pair<Tensor, Tensor>> operands;
    for (const GemmShape& s : shapes) {
        std::string layout = s.layout;
        // Stored the way a training step stores them; the transposes are views.
        Tensor a = layout == "TN" ? raw::transpose(raw::randn({s.K, s.M}, gen), 0, 1) : raw::randn({s.M, s.K}, gen);
        Tensor b = layout == "NT" ? raw::transpose(raw::randn({s.N, s.K}, gen), 0, 1) : raw::randn({s.K, s.N}, gen);
        raw::matmul(a, b);  // warm-up: the allocator's cache, the thread pool
        operands.push_back({a, b});
    }
    std::vector<double> best(shapes.size(), 1e30);
    auto measure_peak = [&](int64_t n) { return cpu::measure_fma_peak_gflops(isa, threads, n); };
    const int64_t peak_iterations = cpu::iterations_lasting(0.008, measure_peak);  // a sample of ~8 ms a round
    for (int r = 0; r < rounds; ++r) {
        peak = std::max(peak, measure_peak(peak_iterations));
        for (size_t i = 0; i < shapes.size(); ++i) {
            // One untimed call first brings this shape's operands back into
            // the caches the previous shape filled (as repeated calls of one
            // shape, the usual way to time a GEMM, would find them).
            raw::matmul(operands[i].first, operands[i].second);
            auto start = Clock::now();
            Tensor c = raw::matmul(operands[i].first, operands[i].second);
            best[i] = std::min(best[i], seconds_since(start));
        }
    }
    std::vector<double> gflops;
    for (size_t i = 0; i < shapes.size(); ++i)
        gflops.push_back(2.0 * (double)shapes[i].M * (double)shapes[i].N * (double)shapes[i].K / best[i] / 1e9);
    return gflops;
}

// The same, for 16-bit operands (bfloat16 or float16) through one path of
// tensor/cpu/gemm_16bit.h (float32 result). No FMA peak here: the rates are
// read against the float32 table above, which ran just before.
std::vector<double> gemm16_gflops(const std::vector<GemmShape>& shapes, int rounds, DType dtype,
                                  cpu::Gemm16Path path) {
    Generator gen(1);
    struct Operands {
        Tensor a, b, c;
    };
    std::vector<Operands> operands;
    auto operand = [](const Tensor& t) {
        return cpu::MatrixOperand<uint16_t>{static_cast<const uint16_t*>(t.raw_data()), {0}, t.strides()[0],
                                            t.strides()[1]};
    };
    for (const GemmShape& s : shapes) {
        std::string layout = s.layout;
        auto random16 = [&](int64_t rows, int64_t cols) { return raw::to_dtype(raw::randn({rows, cols}, gen), dtype); };
        Tensor a = layout == "TN" ? raw::transpose(random16(s.K, s.M), 0, 1) : random16(s.M, s.K);
        Tensor b = layout == "NT" ? raw::transpose(random16(s.N, s.K), 0, 1) : random16(s.K, s.N);
        operands.push_back({a, b, raw::zeros({s.M, s.N})});
    }
    auto run = [&](size_t i) {
        const GemmShape& s = shapes[i];
        cpu::gemm_16bit(s.M, s.N, s.K, dtype, operand(operands[i].a), operand(operands[i].b),
                        static_cast<float*>(operands[i].c.raw_data()), {0}, s.N, path);
    };
    for (size_t i = 0; i < shapes.size(); ++i) run(i);  // warm-up
    std::vector<double> best(shapes.size(), 1e30);
    for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < shapes.size(); ++i) {
            run(i);
            auto start = Clock::now();
            run(i);
            best[i] = std::min(best[i], seconds_since(start));
        }
    std::vector<double> gflops;
    for (size_t i = 0; i < shapes.size(); ++i)
        gflops.push_back(2.0 * (double)shapes[i].M * (double)shapes[i].N * (double)shapes[i].K / best[i] / 1e9);
    return gflops;
}

// ---- training steps ----------------------------------------------------------------

struct StepTiming {
    std::string model, size;
    DType precision = kFloat32;  // what the linear layers' products read (--precisions)
    std::string name() const {  // "gpt2 tiny", "gpt2 tiny bf16"
        return model + " " + size + (precision == kFloat32 ? "" : std::string(" ") + precision_name(precision));
    }
    int64_t params = 0, batch = 0, seq = 0;
    double ms_per_step = 0, tokens_per_s = 0;
    double flops_per_token = 0;  // a training step's model FLOPs per token (nn/models.h)
    // Model FLOPs utilization, percent of a peak: the model FLOPs per second
    // over what the units the step's products run on can do (the FMA's, or
    // vdpbf16ps's for bfloat16 pairs: train/step_peak.h).
    double mfu(double peak) const { return peak > 0 ? 100.0 * tokens_per_s * flops_per_token / 1e9 / peak : 0; }
    size_t peak_bytes = 0;
    ProfileTotals profile;
    double profiled_seconds = 0;  // wall time of the profiled steps
    // Each GEMM shape's rate (GFLOP/s) in every timed step, from which the
    // median is reported, as for the step time: on a shared machine one
    // disturbed step can halve a shape's rate if only the totals are kept.
    std::map<std::string, std::vector<double>> gemm_shape_rates;
};

// The configurations of the speed comparisons:
// train  `normcore train`'s default model, L=4 C=128 H=4 T=128 B=16;
// tiny  L=4 C=256 H=4 T=128 B=8;  small  L=6 C=384 H=6 T=256 B=8; vocab 256;
// 124m  GPT-2 124M's shape, L=12 C=768 H=12 T=1024 B=8, vocab 50257 (for GPUs).
nn::TransformerConfig bench_config(const std::string& model, const std::string& size, int64_t& batch) {
    nn::TransformerConfig c = model == "gpt2" ? nn::gpt2_config() : nn::llama_config();
    c.vocab_size = 256;
    batch = 8;
    if (size == "train") {
        c.n_layer = 4, c.n_embd = 128, c.n_head = 4, c.block_size = 128;
        batch = 16;
    } else if (size == "tiny") {
        c.n_layer = 4, c.n_embd = 256, c.n_head = 4, c.block_size = 128;
    } else if (size == "small") {
        c.n_layer = 6, c.n_embd = 384, c.n_head = 6, c.block_size = 256;
    } else {
        c.n_layer = 12, c.n_embd = 768, c.n_head = 12, c.block_size = 1024, c.vocab_size = 50257;
    }
    return c;
}

StepTiming time_training_step(const std::string& model, const std::string& size, int steps, Device device,
                              DType precision) {
    StepTiming r;
    r.model = model;
    r.size = size;
    r.precision = precision;
    nn::TransformerConfig cfg = bench_config(model, size, r.batch);
    r.seq = cfg.block_size;
    r.flops_per_token = nn::training_flops_per_token(cfg, r.seq);
    Generator gen(1234);
    LanguageModel lm = build_language_model(cfg, gen);
    lm.module->to(device);
    lm.module->set_precision(precision);
    r.params = lm.module->num_parameters();
    optim::AdamW opt(optim::decay_groups(*lm.module, 0.1), 3e-4);
    // Random tokens: the speed of a step does not depend on the text.
    std::vector<int64_t> tokens(r.batch * (r.seq + 1));
    std::vector<double> uniform = raw::rand({(int64_t)tokens.size()}, gen, kFloat64).to_vector();
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::min<int64_t>(255, (int64_t)(uniform[i] * 256));
    Tensor window = raw::from_indices(tokens, {r.batch, r.seq + 1});
    Tensor ids = raw::to_device(raw::contiguous(raw::narrow(window, 1, 0, r.seq)), device);
    Tensor targets = raw::to_device(raw::contiguous(raw::narrow(window, 1, 1, r.seq)), device);
    // The training step of `train` (train/train_step.h) without clipping or
    // checks, as PyTorch's and llm.c's steps are timed. It reads the loss
    // last, which waits for the GPU's queue to finish (on the CPU the work is
    // already done), so the timing covers the whole step.
    TrainStep one_step;
    one_step.loss = [&] { return cross_entropy(lm.forward(ids), targets); };
    one_step.params = lm.module->parameters();
    one_step.optimizer = &opt;
    one_step.measure_grad_norm = false;
    one_step.refuse_non_finite = false;
    auto step = [&] { train_step(one_step); };
    step();  // warm-up: the optimizer state, the allocator's cache, the thread pool
    step();
    backend_for(device).reset_peak_bytes();  // the memory of the device the step runs on
    reset_profile();
    set_profiling(true);
    std::vector<double> times;
    ProfileTotals before;  // the totals so far; a step's own share is the difference
    for (int i = 0; i < steps; ++i) {
        auto start = Clock::now();
        step();
        times.push_back(seconds_since(start));
        ProfileTotals now = profile_totals();
        for (const auto& [shape, t] : now.gemm_shapes) {
            auto seen = before.gemm_shapes.find(shape);
            GemmShapeTotals earlier = seen != before.gemm_shapes.end() ? seen->second : GemmShapeTotals{};
            double seconds = t.seconds - earlier.seconds, flops = t.flops - earlier.flops;
            if (seconds > 0) r.gemm_shape_rates[shape].push_back(flops / seconds / 1e9);
        }
        before = now;
    }
    set_profiling(false);
    r.profile = profile_totals();
    for (double t : times) r.profiled_seconds += t;
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    r.ms_per_step = median * 1e3;
    r.tokens_per_s = (double)(r.batch * r.seq) / median;
    r.peak_bytes = backend_for(device).allocator_stats().peak_bytes_in_use;
    return r;
}

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// The peaks the steps' MFU divides by, each the best sampled beside the
// steps: the FMA's, and vdpbf16ps's where bfloat16 steps run on it.
struct StepPeaks {
    double fma = 0, bf16_dot = 0;
    // A step's peak (train/step_peak.h); 0 where none is measured (AMX).
    double of(DType precision) const {
        switch (step_peak_of(precision)) {
        case StepPeak::Fma: return fma;
        case StepPeak::Bf16Dot: return bf16_dot;
        case StepPeak::Unmeasured: break;
        }
        return 0;
    }
};

// Every GEMM shape the timed steps ran, as a rate (its FLOPs over its time
// in one step, the median over the steps) and a fraction of the peak: the
// slowest three per model are printed, all of them go to the JSON file.
// The peak is each step's own (StepPeaks::of); none for AMX.
void print_step_gemm_shapes(const std::vector<StepTiming>& results, const StepPeaks& peaks, json& out) {
    std::printf(
        "\nGEMM shapes inside the steps (M x K x N layout, batch x in front; median rate over the steps), the\n"
        "slowest three per model:\n");
    for (size_t i = 0; i < results.size(); ++i) {
        const double peak = peaks.of(results[i].precision);
        std::vector<std::pair<double, std::string>> by_rate;  // GFLOP/s, shape
        for (const auto& [shape, t] : results[i].profile.gemm_shapes) {
            std::vector<double> rates = results[i].gemm_shape_rates.count(shape)
                                            ? results[i].gemm_shape_rates.at(shape)
                                            : std::vector<double>{0.0};
            std::sort(rates.begin(), rates.end());
            double rate = rates[rates.size() / 2];
            by_rate.push_back({rate, shape});
            out["training"][i]["gemm_shapes"].push_back({{"shape", shape}, {"calls", t.calls}, {"gflops", rate}});
            if (peak > 0) out["training"][i]["gemm_shapes"].back()["percent_of_peak"] = percent(rate, peak);
        }
        std::sort(by_rate.begin(), by_rate.end());
        std::string name = results[i].name();
        std::printf("  %-12s %zu shapes, slowest:", name.c_str(), by_rate.size());
        for (size_t k = 0; k < by_rate.size() && k < 3; ++k) {
            std::printf("%s %s %.0f GF/s", k ? ";" : "", by_rate[k].second.c_str(), by_rate[k].first);
            if (peak > 0) std::printf(" (%.0f%%)", percent(by_rate[k].first, peak));
        }
        std::printf("\n");
    }
}

}  // namespace

// 2. GEMM on the shapes of the two configurations (M = B T tokens); the
// peak is sampled again in every round (gemm_gflops updates it).
static std::vector<std::pair<GemmShape, double>> bench_gemm(int64_t repeats, cpu::SimdIsa isa, int nthreads, double& peak,
                                                            json& out) {
    std::vector<std::pair<GemmShape, double>> gemm_rows;
    const std::vector<GemmShape> shapes = {
        {1024, 1024, 1024, "NN", "square"},
        {1024, 768, 3072, "NN", "C=768 MLP up"},
        {1024, 3072, 768, "NN", "C=768 MLP down"},
        {1024, 256, 768, "NT", "tiny: x W^T, qkv"},
        {1024, 256, 1024, "NT", "tiny: x W^T, MLP up"},
        {1024, 1024, 256, "NN", "tiny: dy W, MLP up"},
        {1024, 1024, 256, "TN", "tiny: dW, MLP up"},
        {2048, 384, 1152, "NT", "small: x W^T, qkv"},
        {2048, 1536, 384, "NT", "small: x W^T, MLP down"},
        {2048, 1536, 384, "NN", "small: dy W, MLP up"},
        {1536, 2048, 384, "TN", "small: dW, MLP up"},
        // The weight gradients of the default model (make run: C = 128,
        // B T = 2048): few rows and a long K.
        {128, 2048, 128, "TN", "train: dW, attn out"},
        {128, 2048, 512, "TN", "train: dW, MLP down"},
    };
    std::vector<double> rates = gemm_gflops(shapes, (int)repeats, isa, nthreads, peak);
    out["machine"]["fma_peak_gflops"] = peak;
    std::printf("GEMM (float32, best of %lld runs, taken round-robin over the shapes; the FMA peak, sampled\n"
                "again in every round, is now %.1f GFLOP/s, and the percentages are of that)\n",
                (long long)repeats, peak);
    std::printf("  %-20s %-6s %-24s %10s %8s\n", "M x K x N", "layout", "what", "GFLOP/s", "of peak");
    for (size_t i = 0; i < shapes.size(); ++i) {
        const GemmShape& s = shapes[i];
        double g = rates[i];
        gemm_rows.push_back({s, g});
        char dims[64];
        std::snprintf(dims, sizeof dims, "%lld x %lld x %lld", (long long)s.M, (long long)s.K, (long long)s.N);
        std::printf("  %-20s %-6s %-24s %10.1f %7.1f%%\n", dims, s.layout, s.label, g, percent(g, peak));
        out["gemm"].push_back({{"m", s.M}, {"k", s.K}, {"n", s.N}, {"layout", s.layout}, {"what", s.label},
                               {"gflops", g}, {"percent_of_peak", percent(g, peak)}});
    }
    // 16-bit operands beside float32: bfloat16 through each path this CPU
    // offers, float16 through the one there is (widening).
    struct Path16 {
        DType dtype;
        cpu::Gemm16Path path;
        std::vector<double> rates;
        std::string name() const {
            return std::string(dtype == kBFloat16 ? "bf16 " : "fp16 ") + cpu::gemm16_path_name(path);
        }
    };
    std::vector<Path16> paths;
    for (cpu::Gemm16Path path : {cpu::Gemm16Path::Widen, cpu::Gemm16Path::Bf16Dot, cpu::Gemm16Path::Amx})
        if (cpu::cpu_supports(path, kBFloat16))
            paths.push_back({kBFloat16, path, gemm16_gflops(shapes, (int)repeats, kBFloat16, path)});
    paths.push_back({kFloat16, cpu::Gemm16Path::Widen,
                     gemm16_gflops(shapes, (int)repeats, kFloat16, cpu::Gemm16Path::Widen)});
    // The instruction's own rate first: vdpbf16ps does two multiply-adds per
    // lane, so it pays only if it issues at more than half the FMA's rate.
    double dot_peak = 0;
    if (cpu::cpu_supports(cpu::Gemm16Path::Bf16Dot, kBFloat16)) {
        int threads = omp_get_max_threads();
        dot_peak = step_peak_sampler(StepPeak::Bf16Dot, 0.05)(5);  // as fma_peak's samples
        std::printf("\nvdpbf16ps peak (AVX512-BF16, %d threads): %.1f GFLOP/s, %.2fx the float32 FMA peak\n", threads,
                    dot_peak, dot_peak / peak);
        out["machine"]["bf16_dot_peak_gflops"] = dot_peak;
    }
    std::printf("\nGEMM with 16-bit operands and a float32 result (matmul's paths: bf16 %s, fp16 %s),\n"
                "GFLOP/s and x float32:\n",
                cpu::gemm16_path_name(cpu::best_gemm16_path(kBFloat16)),
                cpu::gemm16_path_name(cpu::best_gemm16_path(kFloat16)));
    std::printf("  %-20s %-6s", "M x K x N", "layout");
    for (const Path16& p : paths) std::printf(" %21s", p.name().c_str());
    std::printf("\n");
    for (size_t i = 0; i < shapes.size(); ++i) {
        const GemmShape& s = shapes[i];
        char dims[64];
        std::snprintf(dims, sizeof dims, "%lld x %lld x %lld", (long long)s.M, (long long)s.K, (long long)s.N);
        std::printf("  %-20s %-6s", dims, s.layout);
        json row = {{"m", s.M}, {"k", s.K}, {"n", s.N}, {"layout", s.layout}, {"float32_gflops", rates[i]}};
        json row16 = row;
        for (const Path16& p : paths) {
            std::printf(" %12.1f (%5.2fx)", p.rates[i], p.rates[i] / rates[i]);
            (p.dtype == kBFloat16 ? row : row16)[cpu::gemm16_path_name(p.path)] = p.rates[i];
        }
        std::printf("\n");
        out["gemm_bfloat16"].push_back(row);
        out["gemm_float16"].push_back(row16);
    }
    std::printf("\n");
    return gemm_rows;
}

// 3. Training steps, each timed and split by kind of op.
static std::vector<StepTiming> bench_training(const std::vector<std::string>& models, const std::vector<std::string>& sizes,
                                              const std::vector<DType>& precisions, int64_t steps, Device device,
                                              StepPeaks& peaks, json& out) {
    std::vector<StepTiming> results;
    // A model's precisions one right after the other: their ratio compares
    // the same stretch of the machine's time.
    for (const std::string& size : sizes)
        for (const std::string& model : models)
            for (DType precision : precisions) {
                std::printf("timing %s %s (%s) ...\n", model.c_str(), size.c_str(), precision_name(precision));
                std::fflush(stdout);
                // The peak sampled again beside every model, the best kept:
                // one disturbed sample (another guest on the core) would
                // otherwise inflate every MFU of the run.
                if (device == kCPU) {
                    peaks.fma = std::max(peaks.fma, fma_peak());
                    if (step_peak_of(precision) == StepPeak::Bf16Dot)
                        peaks.bf16_dot = std::max(peaks.bf16_dot, step_peak_sampler(StepPeak::Bf16Dot, 0.05)(5));
                }
                results.push_back(time_training_step(model, size, (int)steps, device, precision));
            }
    std::printf("\nTraining step on %s (forward + backward + AdamW), median of %lld steps; time by kind of op:\n",
                device.str().c_str(), (long long)steps);
    // MFU, model FLOPs utilization: the step's model FLOPs (6 N per token
    // plus attention's, nn/models.h) per second over the peak of its
    // products' units sampled in this run; on a GPU there is no peak to
    // divide by.
    const bool with_mfu = device == kCPU && peaks.fma > 0;
    std::printf("  %-17s %8s %10s %9s %9s %6s %6s %6s %6s %6s %6s %6s %6s %11s%s\n", "model", "params", "ms/step",
                "tok/s", "peak MiB", "gemm", "attn", "norm", "elem", "move", "loss", "optim", "other",
                "gemm GF/s", with_mfu ? "    MFU" : "");
    for (const StepTiming& r : results) {
        const ProfileTotals& p = r.profile;
        double timed = 0;
        for (double s : p.seconds) timed += s;
        double other = std::max(0.0, r.profiled_seconds - timed);
        double gemm_rate = p.seconds[(int)OpKind::Gemm] > 0 ? p.gemm_flops / p.seconds[(int)OpKind::Gemm] / 1e9 : 0;
        std::string name = r.name();
        std::printf("  %-17s %7.2fM %10.1f %9.0f %9.1f", name.c_str(), (double)r.params / 1e6, r.ms_per_step,
                    r.tokens_per_s, (double)r.peak_bytes / 1048576.0);
        json split;
        for (int k = 0; k < kOpKinds; ++k) {
            std::printf(" %5.1f%%", percent(p.seconds[k], r.profiled_seconds));
            split[op_kind_name((OpKind)k)] = percent(p.seconds[k], r.profiled_seconds);
        }
        split["other"] = percent(other, r.profiled_seconds);
        std::printf(" %5.1f%% %11.1f", percent(other, r.profiled_seconds), gemm_rate);
        bool row_mfu = with_mfu && peaks.of(r.precision) > 0;
        if (row_mfu) std::printf(" %5.1f%%", r.mfu(peaks.of(r.precision)));
        else if (with_mfu) std::printf(" %6s", "-");
        std::printf("\n");
        out["training"].push_back({{"model", r.model}, {"size", r.size}, {"precision", precision_name(r.precision)},
                                   {"params", r.params},
                                   {"batch", r.batch}, {"seq", r.seq}, {"ms_per_step", r.ms_per_step},
                                   {"tokens_per_s", r.tokens_per_s}, {"peak_bytes", r.peak_bytes},
                                   {"time_split_percent", split}, {"gemm_gflops_in_step", gemm_rate},
                                   {"flops_per_token", r.flops_per_token}});
        if (row_mfu) {
            out["training"].back()["mfu_percent"] = r.mfu(peaks.of(r.precision));
            out["training"].back()["mfu_peak"] = step_peak_id(step_peak_of(r.precision));
        }
    }
    std::printf("  (other: autograd bookkeeping, allocation and everything outside the kernels)\n");
    if (with_mfu) {
        std::printf("  (MFU: tok/s x model FLOPs per token (6 N + 12 L T C) over the %.1f GFLOP/s FMA peak", peaks.fma);
        if (peaks.bf16_dot > 0)
            std::printf(";\n   bf16 steps over the %.1f GFLOP/s vdpbf16ps peak, the instruction of their products", peaks.bf16_dot);
        bool amx = false;
        for (const StepTiming& r : results) amx = amx || step_peak_of(r.precision) == StepPeak::Unmeasured;
        if (amx) std::printf(";\n   none for steps on AMX tiles, whose peak is not measured");
        std::printf(")\n");
    }
    // Each 16-bit step against the float32 step of the same model, timed just before it.
    for (const StepTiming& r : results) {
        if (r.precision == kFloat32) continue;
        for (const StepTiming& base : results)
            if (base.precision == kFloat32 && base.model == r.model && base.size == r.size)
                std::printf("  %s: %.2fx the float32 step's speed (%.1f vs %.1f ms), peak memory %.2fx\n",
                            r.name().c_str(), base.ms_per_step / r.ms_per_step, r.ms_per_step, base.ms_per_step,
                            (double)r.peak_bytes / (double)base.peak_bytes);
    }
    if (device == kCPU)
        print_step_gemm_shapes(results, peaks, out);
    else
        std::printf("  (on %s the split times kernel launches, not the GPU's work, which runs asynchronously;\n"
                    "   peak MiB is device memory in tensors)\n",
                    device.str().c_str());
    return results;
}

// 4. The summary table.
// The GEMM rows against the peak of the GEMM rounds, the steps' MFU against
// the peak sampled beside the steps (the two tables above use the same).
static void print_summary(const std::vector<std::pair<GemmShape, double>>& gemm_rows, const std::vector<StepTiming>& results,
                          int nthreads, double peak, const StepPeaks& step_peaks, bool on_cpu) {
    const double step_peak = step_peaks.fma;
    // The bfloat16 steps' own peak, where they have one.
    char dot[96] = "";
    if (on_cpu && step_peaks.bf16_dot > 0)
        std::snprintf(dot, sizeof dot, "; the bf16 steps' MFU over the vdpbf16ps peak, %.1f", step_peaks.bf16_dot);
    if (on_cpu && !results.empty() && !gemm_rows.empty())
        std::printf("\n== summary (%d threads, FMA peak %.1f GFLOP/s in the GEMM rounds, %.1f beside the steps%s) ==\n",
                    nthreads, peak, step_peak, dot);
    else
        std::printf("\n== summary (%d threads, FMA peak %.1f GFLOP/s%s) ==\n", nthreads, results.empty() ? peak : step_peak,
                    dot);
    std::printf("%-34s %12s %10s\n", "what", "value", "of peak");
    for (const auto& [s, g] : gemm_rows) {
        char what[80];
        std::snprintf(what, sizeof what, "gemm %lldx%lldx%lld %s", (long long)s.M, (long long)s.K, (long long)s.N,
                      s.layout);
        std::printf("%-34s %7.1f GF/s %9.1f%%\n", what, g, percent(g, peak));
    }
    for (const StepTiming& r : results) {
        std::string what = r.name() + " step";
        std::printf("%-34s %9.1f ms", what.c_str(), r.ms_per_step);
        if (on_cpu && step_peaks.of(r.precision) > 0) std::printf(" %9.1f%% MFU", r.mfu(step_peaks.of(r.precision)));
        std::printf("\n");
    }
}

static std::vector<FlagSpec> bench_flags() {
    return {
        {"models", "gpt2,llama", "models to time (gpt2, llama)"},
        {"sizes", "tiny,small", "sizes to time: train (train's default model: L4 C128 T128 B16), tiny (L4 C256 T128 B8), small (L6 C384 T256 B8), 124m (GPT-2 124M, B8)"},
        {"steps", "10", "timed training steps per model (after 2 warm-up steps)"},
        {"precisions", "fp32", "the --precision of each timed step, a list: fp32,bf16,fp16 (each 16-bit one is compared with fp32)"},
        {"repeats", "20", "runs per GEMM shape (the best is reported)"},
        {"threads", "0", "OpenMP threads (0: all cores)"},
        {"device", "cpu", "cpu | cuda: where the training steps run (the peak and GEMM table are CPU only)"},
        {"skip-gemm", "false", "skip the GEMM table", true},
        {"skip-training", "false", "skip the training steps", true},
        {"json", "", "also write the results to this JSON file"},
    };
}

int bench_command(int argc, char** argv) {
    Flags flags("bench", bench_flags());
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::fputs(flags.usage().c_str(), stdout);
        return 0;
    }
    std::vector<std::string> models = split_list(flags.str("models")), sizes = split_list(flags.str("sizes"));
    std::vector<DType> precisions;
    for (const std::string& p : split_list(flags.str("precisions"))) precisions.push_back(parse_precision(p));
    if (precisions.empty()) throw Error("flag --precisions: name at least one of fp32, bf16, fp16");

    for (const std::string& m : models)
        if (m != "gpt2" && m != "llama") throw Error("flag --models: unknown model '" + m + "' (choose gpt2, llama)");
    for (const std::string& s : sizes)
        if (s != "train" && s != "tiny" && s != "small" && s != "124m")
            throw Error("flag --sizes: unknown size '" + s + "' (choose train, tiny, small, 124m)");
    Device device = parse_device(flags.str("device"));
    bool on_cpu = device == kCPU;
    int64_t steps = flags.integer("steps"), repeats = flags.integer("repeats"), threads = flags.integer("threads");
    if (steps < 1) throw Error("flag --steps: needs at least 1 timed step, got " + std::to_string(steps));
    if (repeats < 1) throw Error("flag --repeats: needs at least 1, got " + std::to_string(repeats));
    if (threads < 0) throw Error("flag --threads: must be 0 (all cores) or more, got " + std::to_string(threads));
    if (threads > 0) omp_set_num_threads((int)threads);
    const int nthreads = omp_get_max_threads();
    const cpu::SimdIsa isa = cpu::best_simd_isa();
    json out;

    // 1. The machine.
    double peak = on_cpu || !flags.on("skip-gemm") ? fma_peak() : 0;
    std::printf("normcore bench: %d threads, %s micro-kernel\n", nthreads, cpu::simd_isa_name(isa));
    std::printf("FMA peak (float32, %s, %d threads): %.1f GFLOP/s\n\n", cpu::simd_isa_name(isa), nthreads, peak);
    out["machine"] = {{"threads", nthreads}, {"simd", cpu::simd_isa_name(isa)}, {"fma_peak_gflops", peak}};

    std::vector<std::pair<GemmShape, double>> gemm_rows;
    if (!flags.on("skip-gemm")) gemm_rows = bench_gemm(repeats, isa, nthreads, peak, out);
    std::vector<StepTiming> results;
    // Sampled again beside every timed model, the best kept. The FMA peak of
    // the start counts among the FMA's samples; vdpbf16ps's is sampled only
    // beside the bf16 steps (the GEMM table's sample of it, when taken, is
    // that table's).
    StepPeaks step_peaks;
    step_peaks.fma = peak;
    if (!flags.on("skip-training")) {
        results = bench_training(models, sizes, precisions, steps, device, step_peaks, out);
        if (on_cpu) out["machine"]["fma_peak_gflops_steps"] = step_peaks.fma;  // what the steps' MFU divides by
        if (on_cpu && step_peaks.bf16_dot > 0) out["machine"]["bf16_dot_peak_gflops_steps"] = step_peaks.bf16_dot;
    }
    print_summary(gemm_rows, results, nthreads, peak, step_peaks, on_cpu);
    if (!flags.str("json").empty()) {
        std::ofstream f(flags.str("json"));
        if (!f) throw Error("bench: cannot write --json file '" + flags.str("json") + "'");
        f << out.dump(2) << "\n";
        std::printf("results written to %s\n", flags.str("json").c_str());
    }
    return 0;
}

}  // namespace app
}  // namespace nc
