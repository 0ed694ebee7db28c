// Whole models against an independent float64 implementation: the Hugging
// Face model directories under tests/data/reference/ (random weights; GPT-2
// pre and post, Llama with GQA and RoPE, a ViT, and GPT-2 and Llama with
// differential attention, the official kind and the DyT regime study's, and
// GPT-2 with Dynamic Tanh, with and without the DyT paper's scalar on the
// embeddings) and what PyTorch in float64
// computes from them (make_reference.py there): logits at every position for
// several sequence lengths, and 32 greedy tokens after a one-byte and a
// ten-byte prompt. normcore loads each directory as `--init DIR` would, in
// float64 (tight tolerance) and float32 (the precision users train in). The
// one-token decoder (nn/decode.h) is held to the same logits, position by
// position.
#include <fstream>
#include <sstream>

#include "data/safetensors.h"
#include "helpers.h"
#include "nn/decode.h"
#include "nn/generate.h"
#include "nn/hf.h"

using namespace nc;
using namespace nc::nn;

namespace {

const std::string kDir = "tests/data/reference/";

std::shared_ptr<TransformerModel> load(const std::string& name, DType dtype) {
    std::ifstream in(kDir + name + "/config.json");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    TransformerConfig cfg = config_from_hf_json(text.str(), name);
    Generator gen(0);
    Options opt = Options::for_loading();  // as --init builds it: no random init under the file's weights
    opt.dtype = dtype;
    std::shared_ptr<TransformerModel> m = nn::make_model(cfg, gen, opt);
    load_hf_layout(*m, data::read_safetensors(kDir + name + "/model.safetensors").tensors);
    m->eval();
    return m;
}

Tensor forward(const TransformerModel& m, const Tensor& x) { return m.forward(x); }

// Every element within tol * max(1, the reference's largest magnitude);
// the largest difference is printed either way.
void compare(const Tensor& got, const Tensor& expected, double tol, const std::string& what) {
    REQUIRE(got.numel() == expected.numel());
    std::vector<double> g = got.to_vector(), e = expected.to_vector();
    double scale = 1, worst = 0;
    for (double v : e) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < g.size(); ++i) worst = nc_test::worst_of(worst, std::abs(g[i] - e[i]));
    INFO(what << ": largest difference " << worst << " (tolerance " << tol * scale << ")");
    CHECK(worst <= tol * scale);
}

}  // namespace

TEST_CASE("language models equal float64 PyTorch: logits and greedy continuations", "[reference][models]") {
    for (const char* name : {"gpt2_pre", "gpt2_post", "llama_gqa", "gpt2_diff", "gpt2_diff_regime", "llama_diff_regime", "gpt2_dyt",
                             "gpt2_dyt_embed_scale"}) {
        auto expected = data::read_safetensors(kDir + name + "/expected.safetensors").tensors;
        for (DType dtype : {kFloat64, kFloat32}) {
            double tol = dtype == kFloat64 ? 1e-10 : 2e-5;
            auto model = load(name, dtype);
            NoGradGuard no_grad;
            std::vector<int64_t> ids = expected.at("ids_T48").to_int_vector();
            for (int64_t T : {1, 2, 7, 48}) {
                std::vector<int64_t> head(ids.begin(), ids.begin() + T);
                Tensor logits = forward(*model, raw::from_indices(head, {1, T}));
                compare(logits, expected.at("logits_T" + std::to_string(T)), tol,
                        std::string(name) + " " + dtype_name(dtype) + " logits T=" + std::to_string(T));
            }
            for (const char* prompt : {"1", "10"}) {
                std::vector<int64_t> p = expected.at(std::string("prompt_") + prompt).to_int_vector();
                std::vector<int64_t> want = expected.at(std::string("greedy_") + prompt).to_int_vector();
                for (bool cache : {true, false}) {
                    Generator gen(1);
                    std::vector<int64_t> got = generate_tokens(*model, p, 32, SampleOptions{0.0, 0, cache}, gen);
                    INFO(name << " " << dtype_name(dtype) << ", " << prompt << "-byte prompt, cache " << cache);
                    CHECK(got == want);
                }
            }
        }
    }
}

TEST_CASE("the one-token decoder equals float64 PyTorch at every position", "[reference][models][decode]") {
    // After a one-token prompt through the model's forward, every later
    // token goes through the decoder; its logits must be PyTorch's for that
    // position of the 48-token sequence.
    for (const char* name : {"gpt2_pre", "llama_gqa"}) {
        auto expected = data::read_safetensors(kDir + name + "/expected.safetensors").tensors;
        for (DType dtype : {kFloat64, kFloat32}) {
            double tol = dtype == kFloat64 ? 1e-10 : 2e-5;
            auto model = load(name, dtype);
            REQUIRE(TokenDecoder::unsupported(*model).empty());
            NoGradGuard no_grad;
            std::vector<int64_t> ids = expected.at("ids_T48").to_int_vector();
            Tensor reference = expected.at("logits_T48");  // [48, V]
            KVCache cache = model->make_cache(1);
            model->forward(raw::from_indices({ids[0]}, {1, 1}), cache);
            TokenDecoder decoder(*model, cache);
            for (int64_t t = 1; t < (int64_t)ids.size(); ++t) {
                std::vector<double> got = decoder.step(ids[t]);
                compare(raw::from_vector(got, {(int64_t)got.size()}), raw::narrow(reference, 0, t, 1), tol,
                        std::string(name) + " " + dtype_name(dtype) + " decoder, position " + std::to_string(t));
            }
        }
    }
}

TEST_CASE("the ViT equals float64 PyTorch, for a batch of three and of one", "[reference][models]") {
    auto expected = data::read_safetensors(kDir + "vit/expected.safetensors").tensors;
    for (DType dtype : {kFloat64, kFloat32}) {
        double tol = dtype == kFloat64 ? 1e-10 : 2e-5;
        auto model = load("vit", dtype);
        NoGradGuard no_grad;
        Tensor images = raw::to_dtype(expected.at("images"), dtype);
        compare(forward(*model, images), expected.at("logits"), tol, std::string("vit B=3 ") + dtype_name(dtype));
        compare(forward(*model, raw::narrow(images, 0, 0, 1)), expected.at("logits_B1"), tol,
                std::string("vit B=1 ") + dtype_name(dtype));
    }
}
