// test_memory_plan.cpp — the meta device (tensors without memory) and the
// memory prediction built on it (train/memory_plan.h), checked against
// what real training runs measure on the CPU.
#include <fstream>

#include "data/images.h"
#include "helpers.h"
#include "nn/models.h"
#include "tensor/backend.h"
#include "tensor/cpu/allocator.h"
#include "tensor/meta_backend.h"
#include "train/memory_plan.h"
#include "train/train.h"

using namespace nc;
using namespace nc::app;

TEST_CASE("meta tensors have shapes and no memory; their ops do nothing but allocate", "[memory][meta]") {
    const Backend& meta = meta_backend();
    size_t before = meta.allocator_stats().bytes_in_use;
    {
        Tensor a = raw::ones({3, 4}, kFloat32, kMeta);
        CHECK(a.device().str() == "meta");
        CHECK(meta.allocator_stats().bytes_in_use - before == cpu::size_class(48));
        Tensor b = raw::ones({4, 1000}, kFloat32, kMeta);
        Tensor c = raw::matmul(a, b);
        CHECK(c.shape() == Shape{3, 1000});
        CHECK(meta.allocator_stats().bytes_in_use - before ==
              cpu::size_class(48) + cpu::size_class(16000) + cpu::size_class(12000));
        // The host reads zeros; host code that would read its memory is told where it is.
        for (double x : c.to_vector()) CHECK(x == 0);
        CHECK_THROWS_WITH(c.data<float>(), Catch::Contains("meta"));
    }
    CHECK(meta.allocator_stats().bytes_in_use == before);  // freed with the tensors, nothing cached
}

TEST_CASE("autograd runs on the meta device: the gradients have their shapes", "[memory][meta]") {
    Tensor w = raw::zeros({8, 5}, kFloat32, kMeta).set_requires_grad(true);
    Tensor x = raw::zeros({2, 5}, kFloat32, kMeta);
    backward(sum(tanh(matmul(x, transpose(w, 0, 1)))));
    REQUIRE(w.grad().defined());
    CHECK(w.grad().shape() == Shape{8, 5});
    CHECK(w.grad().device() == kMeta);
}

TEST_CASE("the meta record opens with the live blocks, then every allocation and free in order", "[memory][meta]") {
    Tensor kept = raw::zeros({100}, kFloat32, kMeta);
    start_meta_record();
    std::vector<MetaEvent> opening = meta_record_since(0);
    auto kept_block = reinterpret_cast<std::uintptr_t>(kept.storage()->data);
    bool found = false;
    for (const MetaEvent& e : opening)
        found = found || (e.block == kept_block && e.allocated && e.bytes == cpu::size_class(400));
    CHECK(found);
    {
        Tensor t = raw::zeros({1000}, kFloat32, kMeta);
    }
    CHECK(meta_record_size() == opening.size() + 2);
    std::vector<MetaEvent> events = stop_meta_record();
    REQUIRE(events.size() == opening.size() + 2);
    CHECK(events[opening.size()].allocated);
    CHECK(events[opening.size()].bytes == cpu::size_class(4000));
    CHECK_FALSE(events[opening.size() + 1].allocated);
    CHECK(events[opening.size() + 1].block == events[opening.size()].block);
    Tensor after = raw::zeros({10}, kFloat32, kMeta);  // a stopped record stays empty
    CHECK(meta_record_size() == 0);
}

TEST_CASE("memory sizes: SI and binary units, and one clear error", "[memory]") {
    CHECK(parse_memory_size("6GB", "budget") == 6e9);
    CHECK(parse_memory_size("6 GB", "budget") == 6e9);
    CHECK(parse_memory_size("6GiB", "budget") == 6.0 * 1024 * 1024 * 1024);
    CHECK(parse_memory_size("1.5g", "budget") == 1.5 * 1024 * 1024 * 1024);
    CHECK(parse_memory_size("512MiB", "budget") == 512.0 * 1024 * 1024);
    CHECK(parse_memory_size("800MB", "budget") == 8e8);
    CHECK(parse_memory_size("4096", "budget") == 4096);
    for (const char* bad : {"", "GB", "6XB", "-1GB", "0", "six", "6GB2"})
        CHECK_THROWS_WITH(parse_memory_size(bad, "budget"), Catch::Contains("flag --budget") && Catch::Contains("memory size"));
}

namespace {

std::string corpus(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    std::string path = (dir / "text.txt").string();
    std::ofstream out(path);
    for (int i = 0; i < 400; ++i) out << "the quick brown fox " << i << " jumps over the lazy dog. ";
    return path;
}

Flags train_flags_of(const std::vector<std::string>& args) {
    Flags flags("train", train_flags());
    flags.parse(args);
    return flags;
}

}  // namespace

// The prediction against the measured peak of a real run with the same
// flags, over the settings that change memory: family, precision,
// recomputation, accumulation, optimizer, placement, norm, attention,
// dropout. The CPU kernels' scratch (the GEMM's packing buffers) comes from
// the same allocator but from no op, so the dry run leaves it out and states
// a bound for it: the measured peak lies between the prediction and the
// prediction plus that bound, which is within 10% at these sizes.
TEST_CASE("normcore memory predicts train's peak to within the kernels' scratch, and its activations exactly", "[memory][slow]") {
    std::filesystem::path dir = nc_test::temp_dir("normcore_memory_plan");
    std::vector<std::string> base = {"--data", corpus(dir), "--layers", "2", "--width", "96", "--heads", "4",
                                     "--seq", "128", "--batch", "8", "--steps", "2", "--eval-every", "0",
                                     "--eval-batches", "1", "--sample-tokens", "0"};
    std::vector<std::vector<std::string>> settings = {
        {},
        {"--model", "llama"},
        {"--precision", "bf16"},
        {"--precision", "fp16"},
        {"--recompute"},
        {"--model", "llama", "--recompute", "--precision", "bf16"},
        {"--accum", "2"},
        {"--optimizer", "sgd"},
        {"--placement", "geonorm"},
        {"--placement", "post", "--norm", "dyt"},
        {"--attention", "differential"},
        {"--dropout", "0.1"},
    };
    for (size_t i = 0; i < settings.size(); ++i) {
        const std::vector<std::string>& extra = settings[i];
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"--run-dir", (dir / ("run" + std::to_string(i))).string()});
        std::string name;
        for (const std::string& a : extra) name += a + " ";
        INFO("train " << name);
        Flags flags = train_flags_of(args);
        MemoryPrediction p = predict_memory(flags);

        std::FILE* quiet = std::tmpfile();
        REQUIRE(quiet != nullptr);
        double before = (double)cpu::allocator_stats().bytes_in_use / 1048576.0;  // other tests' live tensors
        TrainResult r = train_run(flags, Distributed{}, TrainOutput{quiet, 1});
        std::fclose(quiet);
        double measured = r.peak_mib - before;
        INFO("predicted peak " << p.peak_mib << " MiB, measured " << measured);
        CHECK(std::fabs(p.peak_mib / measured - 1) < 0.10);
        CHECK(p.peak_mib <= measured);  // what the dry run leaves out only adds
        CHECK(measured <= p.peak_mib + p.packing_bound_mib);
        CHECK(p.packing_bound_mib > 0);
        CHECK(p.activations_mib == Approx(r.activations_mib).epsilon(1e-9));
        CHECK(p.parameters_mib == Approx(r.parameters_mib).epsilon(1e-9));
        CHECK(p.optimizer_mib == Approx(r.optimizer_mib).epsilon(1e-9));
        // The replay's highest point is the step's peak: the split adds up to
        // it only if the second step is where the run peaks.
        CHECK(p.at_peak.total() == Approx(p.peak_mib).epsilon(1e-9));
        CHECK(p.at_peak.parameters == Approx(p.parameters_mib).epsilon(1e-9));
        CHECK(p.at_peak.workspace >= 0);
        // The peak comes during backward, while part of what forward kept is still held.
        CHECK(p.at_peak.activations > 0);
        // (With --accum 2 the first micro-batch's detached loss is live too.)
        CHECK(p.at_peak.activations <= p.activations_mib + 1e-3);
    }
}

// A ViT on the CPU: its images sit in the same tensor memory all run long,
// and the prediction counts them from the data set's header.
TEST_CASE("normcore memory predicts a ViT's peak, its images included", "[memory][slow]") {
    if (!std::filesystem::exists(std::string(data::kFashionMnist) + "/train-labels-idx1-ubyte.gz")) {
        WARN("skipped: no Fashion-MNIST at " << data::kFashionMnist << " (Debian's dataset-fashion-mnist)");
        return;
    }
    std::filesystem::path dir = nc_test::temp_dir("normcore_memory_plan_vit");
    Flags flags = train_flags_of({"--model", "vit", "--train-images", "3000", "--batch", "32", "--steps", "2",
                                  "--eval-every", "0", "--eval-batches", "2", "--run-dir", (dir / "run").string()});
    MemoryPrediction p = predict_memory(flags);
    CHECK(p.data_mib * 1048576.0 >= 4.0 * 28 * 28 * (3000 + 64));
    std::FILE* quiet = std::tmpfile();
    REQUIRE(quiet != nullptr);
    double before = (double)cpu::allocator_stats().bytes_in_use / 1048576.0;
    TrainResult r = train_run(flags, Distributed{}, TrainOutput{quiet, 1});
    std::fclose(quiet);
    double measured = r.peak_mib - before;
    INFO("predicted peak " << p.peak_mib << " MiB (images " << p.data_mib << "), measured " << measured);
    CHECK(std::fabs(p.peak_mib / measured - 1) < 0.10);
    CHECK(measured <= p.peak_mib + p.packing_bound_mib + 0.01);
}

TEST_CASE("recomputation and 16-bit operands shrink the predicted activations", "[memory]") {
    std::filesystem::path dir = nc_test::temp_dir("normcore_memory_plan_shrink");
    std::vector<std::string> base = {"--data", corpus(dir), "--layers", "4", "--width", "64", "--heads", "4",
                                     "--seq", "128", "--batch", "8"};
    auto predict = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return predict_memory(train_flags_of(args));
    };
    MemoryPrediction fp32 = predict({}), recomputed = predict({"--recompute"}), bf16 = predict({"--precision", "bf16"});
    CHECK(recomputed.activations_mib * 3 < fp32.activations_mib);
    CHECK(bf16.activations_mib < fp32.activations_mib);
    CHECK(recomputed.parameters_mib == fp32.parameters_mib);
    // Twice the batch, about twice the activations (the batch's share of the memory).
    MemoryPrediction twice = predict({"--batch", "16"});
    CHECK(twice.activations_mib == Approx(2 * fp32.activations_mib).epsilon(0.05));
}

TEST_CASE("16-bit attention keeps q, k, v and its output in 16 bits: half the bytes", "[memory][meta][mixed]") {
    // On the meta device: a bfloat16 GPT-2's forward, with the attention op's
    // operands in bfloat16 and then in float32 (its linear layers bfloat16
    // both times). A float32 attention keeps q, k, v (views of the fused
    // qkv output, 3 B T C floats) and its output (B T C): 16 B T C bytes per
    // layer; the 16-bit one keeps four 16-bit copies, 8 B T C.
    nn::TransformerConfig c = nn::gpt2_config();
    c.n_layer = 3;
    c.n_embd = 64;
    c.n_head = 4;
    c.vocab_size = 256;
    c.block_size = 128;
    const int64_t B = 8, T = 128;
    Generator gen(5);
    auto model = nn::make_model(c, gen, nn::Options{kFloat32, kMeta});
    model->set_precision(kBFloat16);
    auto activations = [&] {
        ForwardMemoryProbe probe{kMeta};
        Tensor ids = raw::zeros({B, T}, kInt64, kMeta);
        Tensor loss = probe.measure([&] { return cross_entropy(model->forward(ids), ids); });
        return (double)probe.largest_bytes;
    };
    double sixteen = activations();
    nn::set_attention_operand_dtype(*model, kFloat32);
    double thirty_two = activations();
    double expected = c.n_layer * 8.0 * B * T * c.n_embd;
    CHECK(thirty_two - sixteen == Approx(expected).epsilon(0.05));
}
