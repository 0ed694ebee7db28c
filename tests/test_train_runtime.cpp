// test_train_runtime.cpp — the training runtime as a library (train/train.h)
// and the studies' cells that call it in-process (studies/study.h): the
// result is what the run logged, a NaN stops a run as a result and not as an
// error, result.json round-trips, and cells running side by side in one
// process do not disturb each other.
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include "helpers.h"
#include "studies/study.h"
#include "train/lm.h"
#include "train/run_log.h"
#include "train/step_peak.h"
#include "train/train.h"

using namespace nc;
using namespace nc::app;
using nc_test::temp_dir;

namespace {

// A small text corpus and the flags of a small, fast model trained on it.
std::string tiny_corpus(const std::filesystem::path& dir) {
    std::string path = (dir / "tiny.txt").string();
    std::ofstream out(path);
    for (int i = 0; i < 60; ++i) out << "the quick brown fox " << i << " jumps over the lazy dog. ";
    return path;
}

std::vector<std::string> tiny_run(const std::string& data) {
    return {"--data", data, "--layers", "1", "--width", "16", "--heads", "2", "--seq", "8", "--batch", "2",
            "--eval-batches", "2", "--sample-tokens", "0"};
}

// `normcore train` flags parsed from a list, as the command parses argv.
Flags parse_train_flags(const std::vector<std::string>& args) {
    Flags flags("train", train_flags());
    flags.parse(args);
    return flags;
}

// Runs with the run's words going to a scratch file instead of the test's output.
TrainResult run_quietly(const std::vector<std::string>& args) {
    Flags flags = parse_train_flags(args);
    std::FILE* out = std::tmpfile();
    REQUIRE(out != nullptr);
    try {
        TrainResult r = train_run(flags, Distributed{}, TrainOutput{out, 1});
        std::fclose(out);
        return r;
    } catch (...) {
        std::fclose(out);
        throw;
    }
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

}  // namespace

TEST_CASE("training runtime: the result is the run's own log, and result.json keeps it", "[train]") {
    std::filesystem::path dir = temp_dir("normcore_runtime_result");
    std::string run_dir = (dir / "run").string();
    TrainResult r = run_quietly(with(tiny_run(tiny_corpus(dir)), {"--steps", "6", "--eval-every", "3", "--run-dir", run_dir}));
    CHECK(r.stop == StopReason::Finished);
    CHECK(r.steps == 6);
    CHECK(r.run_dir == run_dir);
    REQUIRE(r.losses.size() == 6);
    CHECK(r.train_loss == r.losses.back());
    CHECK(r.ms_per_step > 0);
    CHECK(r.tok_per_s > 0);
    // The peak's split: the parameters by the closed-form count (in the
    // allocator's size classes: at most a quarter more, and 64 bytes per
    // small tensor), AdamW's two moments per parameter, the activations
    // measured, and the rest of the peak.
    int64_t n_params = nn::count_parameters(resolve_config(parse_train_flags(tiny_run(tiny_corpus(dir)))));
    CHECK(r.parameters_mib * 1048576.0 >= 4.0 * (double)n_params);
    CHECK(r.parameters_mib * 1048576.0 <= 1.25 * 4.0 * (double)n_params + 64 * 20);
    CHECK(r.gradients_mib == r.parameters_mib);
    CHECK(r.optimizer_mib == Approx(2 * r.parameters_mib).epsilon(0.01));
    CHECK(r.activations_mib > 0);
    CHECK(r.gradients_and_workspace_mib > 0);
    CHECK(r.parameters_mib + r.optimizer_mib + r.activations_mib + r.gradients_and_workspace_mib == Approx(r.peak_mib));
    // train_log.csv, written by the same loop step by step, has the same
    // losses (printed with 6 significant digits) and the last validation.
    Csv log = read_csv(run_dir + "/train_log.csv");
    REQUIRE(log.rows.size() == 6);
    for (size_t i = 0; i < 6; ++i) CHECK(log.number(i, log.column("loss")) == Approx(r.losses[i]).epsilon(1e-5));
    CHECK(log.number(5, log.column("val_loss")) == Approx(r.val_loss).epsilon(1e-5));
    CHECK(std::isnan(log.number(4, log.column("val_loss"))));

    TrainResult back = read_result(run_dir + "/result.json");
    CHECK(back.stop == r.stop);
    CHECK(back.steps == r.steps);
    CHECK(back.losses == r.losses);  // every digit
    CHECK(back.val_loss == r.val_loss);
    CHECK(back.ms_per_step == r.ms_per_step);
    CHECK(back.run_dir == r.run_dir);

    // JSON has no NaN: null, read back as NaN; a file that is not a result is named.
    TrainResult nan_result;
    nan_result.losses = {1.5, NAN};
    write_result(nan_result, run_dir + "/nan.json");
    TrainResult nan_back = read_result(run_dir + "/nan.json");
    CHECK(std::isnan(nan_back.val_loss));
    REQUIRE(nan_back.losses.size() == 2);
    CHECK(nan_back.losses[0] == 1.5);
    CHECK(std::isnan(nan_back.losses[1]));
    std::ofstream(run_dir + "/bad.json") << "{\"stop\": \"finished\"}";
    nc_test::check_error([&] { read_result(run_dir + "/bad.json"); }, {"bad.json' is not a run's result.json"});
    nc_test::check_error([&] { read_result(run_dir + "/missing.json"); }, {"cannot read '"});
}

TEST_CASE("progress: the MFU is over the best FMA peak sampled so far, sampled again during the run", "[train]") {
    // A peak sample can only come out too low (another process held a
    // core). Here the first samples say 50 GFLOP/s, the next the true 200,
    // the third a slowed 120: the lines must use 200 from the second on, and
    // sample again only at a report line at least 2 s of training after the
    // previous sample.
    std::vector<int> asked;  // the sample counts asked for, call by call
    auto sample_peak = [&](int samples) {
        asked.push_back(samples);
        return asked.size() == 1 ? 50.0 : asked.size() == 2 ? 200.0 : 120.0;
    };
    std::FILE* out = std::tmpfile();
    REQUIRE(out != nullptr);
    // 40 steps (a line every 2), 1000 tokens a step, 1e8 FLOPs a token: at 1
    // s a step, 100 GFLOP/s, MFU 200% over the first peak, 50% over the true one.
    Progress progress(out, 0, 40, 40, 1000, 1e8, sample_peak);
    CHECK(asked == std::vector<int>{3});
    CHECK(progress.peak_gflops() == 50.0);
    CHECK(progress.mfu(1000) == Approx(200.0));
    progress.step(1, 1.0, 1.0, 5.0, NAN, 1e-3);  // 1 s after the first sample: none
    CHECK(asked.size() == 1);
    progress.step(2, 1.0, 2.0, 5.0, NAN, 1e-3);  // a report line, 2 s after the first sample (at 0 s)
    CHECK(asked == std::vector<int>{3, 1});
    CHECK(progress.peak_gflops() == 200.0);
    progress.step(3, 1.0, 3.0, 5.0, NAN, 1e-3);
    progress.step(4, 1.0, 3.5, 5.0, NAN, 1e-3);  // a report line only 1.5 s after the last sample
    CHECK(asked.size() == 2);
    progress.step(5, 1.0, 4.5, 5.0, NAN, 1e-3);  // 2.5 s after it, but not a report line: none
    CHECK(asked.size() == 2);
    progress.step(6, 1.0, 5.5, 5.0, NAN, 1e-3);  // a report line 3.5 s after it
    CHECK(asked.size() == 3);
    CHECK(progress.peak_gflops() == 200.0);  // the best, not the last
    CHECK(progress.mfu(1000) == Approx(50.0));
    // What was printed: the line of step 2 on, over the best peak.
    std::rewind(out);
    std::string text(4096, '\0');
    text.resize(std::fread(&text[0], 1, text.size(), out));
    std::fclose(out);
    CHECK(text.find("step     2/40") != std::string::npos);
    CHECK(text.find("MFU 50.0%") != std::string::npos);
    CHECK(text.find("MFU 200.0%") == std::string::npos);

    // Without a sampler (a GPU): no peak, no MFU, nothing sampled.
    std::FILE* quiet = std::tmpfile();
    REQUIRE(quiet != nullptr);
    Progress gpu(quiet, 0, 10, 10, 1000, 1e8, nullptr);
    gpu.step(10, 1.0, 10.0, 5.0, NAN, 1e-3);
    CHECK(gpu.peak_gflops() == 0.0);
    std::rewind(quiet);
    std::string gpu_text(1024, '\0');
    gpu_text.resize(std::fread(&gpu_text[0], 1, gpu_text.size(), quiet));
    std::fclose(quiet);
    CHECK(gpu_text.find("step    10/10") != std::string::npos);
    CHECK(gpu_text.find("MFU") == std::string::npos);
}

TEST_CASE("progress: the MFU divides by the peak of the products' own arithmetic", "[train]") {
    using cpu::Gemm16Path;
    // float32 runs on the FMA whatever the 16-bit path would be.
    for (Gemm16Path path : {Gemm16Path::Widen, Gemm16Path::Bf16Dot, Gemm16Path::Amx})
        CHECK(step_peak_kind(kFloat32, path) == StepPeak::Fma);
    // 16 bits widened to float32: still the FMA.
    CHECK(step_peak_kind(kBFloat16, Gemm16Path::Widen) == StepPeak::Fma);
    CHECK(step_peak_kind(kFloat16, Gemm16Path::Widen) == StepPeak::Fma);
    // bfloat16 pairs on vdpbf16ps: that instruction's peak; on AMX tiles none.
    CHECK(step_peak_kind(kBFloat16, Gemm16Path::Bf16Dot) == StepPeak::Bf16Dot);
    CHECK(step_peak_kind(kBFloat16, Gemm16Path::Amx) == StepPeak::Unmeasured);
    // float16 has no pair path: whatever path is named, the FMA.
    CHECK(step_peak_kind(kFloat16, Gemm16Path::Bf16Dot) == StepPeak::Fma);
    // On this CPU: the path matmul takes (best_gemm16_path) decides.
    CHECK(step_peak_of(kFloat32) == StepPeak::Fma);
    CHECK(step_peak_of(kFloat16) == StepPeak::Fma);
    const Gemm16Path bf16_path = cpu::best_gemm16_path(kBFloat16);
    CHECK(step_peak_of(kBFloat16) == (bf16_path == Gemm16Path::Widen     ? StepPeak::Fma
                                      : bf16_path == Gemm16Path::Bf16Dot ? StepPeak::Bf16Dot
                                                                         : StepPeak::Unmeasured));
    CHECK(std::string(step_peak_id(StepPeak::Bf16Dot)) == "bf16_dot");
    CHECK(std::string(step_peak_name(StepPeak::Fma)) == "float32 FMA peak");
    CHECK(std::string(step_peak_name(StepPeak::Bf16Dot)).rfind("vdpbf16ps peak", 0) == 0);
    // No sampler where no peak is measured: Progress then shows no MFU.
    CHECK(!step_peak_sampler(StepPeak::Unmeasured));
    CHECK(step_peak_sampler(StepPeak::Fma));
    // The vdpbf16ps sampler measures that instruction: 0 where the CPU has
    // none, a rate where it has (the rate itself is bench's to report).
    double dot = step_peak_sampler(StepPeak::Bf16Dot)(1);
    if (cpu::cpu_supports(Gemm16Path::Bf16Dot, kBFloat16)) CHECK(dot > 0);
    else CHECK(dot == 0);
}

TEST_CASE("training runtime: a NaN or Inf stops the run as a result; a bad flag is an error", "[train]") {
    std::filesystem::path dir = temp_dir("normcore_runtime_stop");
    std::string data = tiny_corpus(dir), run_dir = (dir / "run").string();
    // Plain SGD at the largest learning rate the flag allows, unclipped:
    // the weights blow up within a few steps.
    TrainResult r = run_quietly(with(tiny_run(data), {"--steps", "30", "--optimizer", "sgd", "--lr", "1000", "--grad-clip", "0",
                                                      "--warmup", "0", "--run-dir", run_dir}));
    CHECK(r.stop == StopReason::NonFinite);
    CHECK(r.steps < 30);
    CHECK(r.steps == (int64_t)r.losses.size());
    CHECK(r.message.find("step " + std::to_string(r.steps) + ": the ") == 0);
    CHECK(r.message.find("Stopping with nothing saved") != std::string::npos);
    CHECK(std::isnan(r.ms_per_step));  // a stopped run reports no throughput
    CHECK(read_result(run_dir + "/result.json").stop == StopReason::NonFinite);

    nc_test::check_error([&] { run_quietly(with(tiny_run(data), {"--steps", "2", "--optimizer", "lion", "--run-dir", run_dir})); },
                         {"flag --optimizer: unknown optimizer 'lion'"});
    nc_test::check_error([&] { run_quietly(with(tiny_run((dir / "nowhere.txt").string()), {"--steps", "2", "--run-dir", run_dir})); },
                         {"nowhere.txt"});
}

// [threads]: it starts worker threads, which qemu-aarch64 (make test-arm64)
// hangs on creating (its strace stops before the clone); natively and under
// the sanitizers it runs in every make test.
TEST_CASE("study cells: side by side in one process, each runs as it would alone", "[train][protocol][threads]") {
    std::filesystem::path dir = temp_dir("normcore_runtime_cells");
    std::string data = tiny_corpus(dir);
    StudyOptions options;
    options.out_dir = (dir / "study").string();
    options.jobs = 2;
    std::vector<Cell> cells = {
        {"a", with(tiny_run(data), {"--steps", "5", "--seed", "1"})},
        {"b", with(tiny_run(data), {"--steps", "5", "--seed", "2", "--placement", "geonorm"})},
        {"broken", with(tiny_run((dir / "nowhere.txt").string()), {"--steps", "5"})},
    };
    // With failures allowed, the broken cell's error is its result and the others run.
    std::vector<CellResult> side_by_side = run_cells(cells, options, /*allow_failures=*/true);
    REQUIRE(side_by_side.size() == 3);
    REQUIRE(side_by_side[0].ran());
    REQUIRE(side_by_side[1].ran());
    CHECK_FALSE(side_by_side[2].ran());
    CHECK(side_by_side[2].error.find("nowhere.txt") != std::string::npos);
    CHECK(std::isnan(side_by_side[2].val_loss()));
    CHECK(side_by_side[0].val_loss() == side_by_side[0].train.val_loss);

    // Cell a alone, in a thread with the same number of OpenMP threads the
    // cells had (cores / jobs): the same losses, bit for bit, so nothing of
    // cell b's run leaked into it (shared caches, generators, grad mode).
    int threads = std::max(1, (int)std::max(1u, std::thread::hardware_concurrency()) / 2);
    TrainResult alone;
    std::thread t([&] {
        omp_set_num_threads(threads);
        alone = run_quietly(with(cells[0].args, {"--run-dir", (dir / "alone").string()}));
    });
    t.join();
    CHECK(alone.losses == side_by_side[0].train.losses);
    CHECK(alone.val_loss == side_by_side[0].train.val_loss);

    // Without failures allowed, the broken cell is an error that names it.
    nc_test::check_error([&] { run_cells({cells[2]}, options); }, {"1 training run(s) failed:\n  broken: "});

    // --reuse: a cell that ended under the same command (threads included)
    // has its result.json read back and is not run again.
    options.reuse = true;
    std::filesystem::remove(options.out_dir + "/runs/a/train_log.csv");
    std::vector<CellResult> reused = run_cells(cells, options, true);
    CHECK(reused[0].train.losses == side_by_side[0].train.losses);
    CHECK(reused[1].train.losses == side_by_side[1].train.losses);
    CHECK_FALSE(std::filesystem::exists(options.out_dir + "/runs/a/train_log.csv"));
    // A changed command is run again.
    std::vector<CellResult> changed = run_cells({{"a", with(cells[0].args, {"--lr", "1e-3"})}, cells[1], cells[2]}, options, true);
    CHECK(std::filesystem::exists(options.out_dir + "/runs/a/train_log.csv"));
    CHECK(changed[0].train.losses != side_by_side[0].train.losses);
    // A changed command that fails leaves nothing of the earlier run for a
    // later --reuse to take as its result.
    std::vector<CellResult> failed = run_cells({{"a", cells[2].args}, cells[1], cells[2]}, options, true);
    CHECK_FALSE(failed[0].ran());
    CHECK_FALSE(std::filesystem::exists(options.out_dir + "/runs/a/result.json"));
    CHECK_FALSE(run_cells({{"a", cells[2].args}, cells[1], cells[2]}, options, true)[0].ran());
}
