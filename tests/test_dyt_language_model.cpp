// A DyT language model's last DyT and its starting gain
// (tutorials/12-dyt-and-saturation.md): the gain that makes it start as large
// as a LayerNorm, how the flags set it, and the collapse it prevents.
#include "helpers.h"

#include "analysis/diagnostics.h"
#include "cli/flags.h"
#include "nn/hf.h"
#include "optim/optimizer.h"
#include "train/lm.h"

using namespace nc;
using namespace nc::nn;
using nc_test::check_error;
using nc_test::check_values;

namespace {

// The final norm's parameters from the model's named parameters.
Tensor parameter(const Module& model, const std::string& name) {
    for (const auto& [n, t] : model.named_parameters())
        if (n == name) return t;
    FAIL("no parameter " << name);
    return Tensor();
}

TransformerConfig config_from(const std::vector<std::string>& args) {
    app::Flags flags("train", app::model_flags());
    flags.parse(args);
    return app::config_from_flags(flags);
}

// Byte-level English with the skewed letter frequencies that make the
// unigram distribution the first thing a model learns.
const std::string kText =
    "A language model reads a sequence of bytes and predicts the next one. At first it knows nothing but how often "
    "each byte occurs: spaces and the letters e, t and a are common, q and z are rare. Then it learns which byte "
    "follows which, then whole words, and the loss falls below the entropy of the byte frequencies. A model that "
    "never gets there has learned only how often each byte occurs, and predicts the same distribution everywhere. ";

struct Outcome {
    double final_saturation, block_0_gradient, loss;
};

// Trains a 2-block, 64-wide byte-level GPT-2 with DyT (alpha0 2) on kText
// with AdamW (lr 3e-3 after 10 warm-up steps, clipping at 1) and returns the
// final DyT's saturation, the first block's gradient norm and the loss of
// the last step.
Outcome train_dyt(double final_gamma0, int steps) {
    TransformerConfig c = gpt2_config();
    c.n_layer = 2;
    c.n_embd = 64;
    c.n_head = 2;
    c.block_size = 32;
    c.norm = NormKind::DyT;
    c.dyt_alpha0 = 2;
    c.dyt_final_gamma0 = final_gamma0;
    Generator gen(7);
    GPT2 model(c, gen);
    auto dyts = diag::dyt_layers(model);
    nn::DyT* final_dyt = dyts.back().second;
    final_dyt->track_saturation(true);
    optim::AdamW opt(optim::decay_groups(model, 0.1), 3e-3, 0.9, 0.99);
    const int64_t B = 8, T = 32, stride = 37;
    std::vector<int64_t> bytes(kText.begin(), kText.end());
    Outcome out{};
    for (int step = 0; step < steps; ++step) {
        std::vector<int64_t> input, target;
        for (int64_t b = 0; b < B; ++b) {
            int64_t start = ((step * B + b) * stride) % ((int64_t)bytes.size() - T - 1);
            for (int64_t t = 0; t < T; ++t) {
                input.push_back(bytes[start + t]);
                target.push_back(bytes[start + t + 1]);
            }
        }
        opt.set_lr(3e-3 * std::min(1.0, (step + 1) / 10.0));
        opt.zero_grad();
        Tensor loss = cross_entropy(model.forward(raw::from_indices(input, {B, T})), raw::from_indices(target, {B, T}));
        backward(loss);
        out.block_0_gradient = diag::block_grad_norms(model, c.n_layer)[0];
        out.final_saturation = final_dyt->last_saturation();
        out.loss = loss.item();
        optim::clip_grad_norm(model.parameters(), 1.0);
        opt.step();
    }
    return out;
}

}  // namespace

TEST_CASE("the final DyT gain that matches a LayerNorm at initialization", "[models][dyt]") {
    // GPT-2: token + position embeddings, each N(0, 0.02^2): the stream's RMS
    // is 0.02 sqrt 2, and DyT(x) ~ gamma alpha0 x has RMS 1 at gamma = 1 / (alpha0 0.02 sqrt 2).
    TransformerConfig gpt2 = config_from({"--norm", "dyt", "--dyt-alpha", "2", "--embed-scale", "0"});
    CHECK(gpt2.dyt_final_gamma0 == Approx(1 / (2 * 0.02 * std::sqrt(2.0))));
    // Llama: RoPE, no position table.
    CHECK(config_from({"--model", "llama", "--norm", "dyt", "--dyt-alpha", "0.5", "--embed-scale", "0"}).dyt_final_gamma0 ==
          Approx(100));
    // train's recipe for a language model with every option auto (chapter 12):
    // alpha0 0.5 in every DyT (none larger before attention), the scalar
    // sqrt(C) on the embeddings, and the last gain that matches a LayerNorm
    // through that scalar.
    for (const char* model : {"gpt2", "llama"}) {
        TransformerConfig recipe = config_from({"--model", model, "--norm", "dyt"});
        double tables = std::string(model) == "gpt2" ? 2 : 1;
        INFO(model);
        CHECK(recipe.dyt_alpha0 == 0.5);
        CHECK(recipe.dyt_alpha0_attn == 0);
        CHECK(recipe.embed_scale0 == Approx(std::sqrt(128.0)));
        CHECK(recipe.dyt_final_gamma0 == Approx(1 / (0.5 * 0.02 * std::sqrt(tables) * std::sqrt(128.0))));
        CHECK(recipe.dyt_gamma0 == 1);
        // The scalar is DyT's: LayerNorm, RMSNorm and no norm get none unless asked.
        for (const char* norm : {"layernorm", "rmsnorm", "none"})
            CHECK(config_from({"--model", model, "--norm", norm}).embed_scale0 == 0);
    }
    TransformerConfig vit = config_from({"--model", "vit", "--norm", "dyt"});  // the paper's ViT recipe
    CHECK(vit.dyt_final_gamma0 == 1);
    CHECK(vit.dyt_alpha0 == 0.5);
    CHECK(vit.dyt_alpha0_attn == 0);
    CHECK(vit.embed_scale0 == 0);
    check_error([&] { config_from({"--norm", "dyt", "--dyt-alpha", "big"}); }, {"--dyt-alpha", "big"});
    CHECK(config_from({"--norm", "dyt", "--dyt-final-gamma", "1"}).dyt_final_gamma0 == 1);
    check_error([&] { config_from({"--norm", "dyt", "--dyt-final-gamma", "big"}); }, {"--dyt-final-gamma", "big"});
    check_error([&] { config_from({"--norm", "dyt", "--dyt-final-gamma", "0"}); }, {"final DyT", "non-zero"});
    // The recipe's other options: every gain auto, the embedding scale (sqrt:
    // sqrt(width)), which divides the matching gains, and alpha0 before attention.
    TransformerConfig all = config_from({"--norm", "dyt", "--dyt-alpha", "2", "--dyt-gamma", "auto", "--embed-scale", "0"});
    CHECK(all.dyt_gamma0 == Approx(1 / (2 * 0.02 * std::sqrt(2.0))));
    CHECK(config_from({"--norm", "dyt"}).dyt_gamma0 == 1);
    TransformerConfig scaled = config_from({"--norm", "dyt", "--dyt-alpha", "2", "--embed-scale", "sqrt", "--width", "64",
                                            "--dyt-alpha-attn", "0.8"});
    CHECK(scaled.embed_scale0 == Approx(8));
    CHECK(scaled.dyt_final_gamma0 == Approx(1 / (2 * 0.02 * std::sqrt(2.0) * 8)));
    CHECK(scaled.dyt_alpha0_attn == 0.8);
    CHECK(config_from({"--embed-scale", "2.5"}).embed_scale0 == 2.5);
    check_error([&] { config_from({"--embed-scale", "wide"}); }, {"--embed-scale", "wide"});
    check_error([&] { config_from({"--embed-scale", "-1"}); }, {"embedding scale", "positive"});
    check_error([&] { config_from({"--model", "vit", "--embed-scale", "2"}); }, {"embedding scale", "vit"});
    check_error([&] { config_from({"--norm", "dyt", "--dyt-gamma", "0"}); }, {"DyT layers' initial gain", "non-zero"});

    // In the model: only the last DyT starts at that gain, and at initialization
    // its output has the RMS of a LayerNorm's (1) to within the tanh's curvature,
    // with and without the scalar on the embeddings.
    for (double scale : {0.0, 4.0}) {
        TransformerConfig c = nc_test::tiny_config(gpt2);
        c.vocab_size = 256;
        c.embed_scale0 = scale;
        c.dyt_alpha0 = scale > 0 ? 0.5 : 2;  // alpha0 x stays in tanh's linear part either way
        c.dyt_final_gamma0 = c.dyt_final_gamma_matching_layernorm();
        Generator gen(3);
        GPT2 model(c, gen);
        check_values(parameter(model, "ln_f.weight"), std::vector<double>(c.n_embd, c.dyt_final_gamma0), 1e-4);
        check_values(parameter(model, "h.0.ln_1.weight"), std::vector<double>(c.n_embd, 1.0));
        std::vector<Tensor> stream;
        Tensor ids = raw::from_indices(std::vector<int64_t>{1, 50, 99, 200, 7, 7, 3, 128}, {1, 8});
        model.forward(ids, &stream);
        // The stream entering the final DyT.
        Tensor top = stream.back();
        Tensor y = diag::dyt_layers(model).back().second->forward(top);
        double rms = std::sqrt(raw::mean(raw::mul(y, y)).item());
        INFO("embedding scale " << scale << ": RMS of the final DyT's output " << rms);
        CHECK(rms > 0.8);
        CHECK(rms < 1.25);

        // config.json keeps the gain and the scale.
        TransformerConfig back = config_from_hf_json(hf_config_json(c), "test");
        CHECK(back.dyt_final_gamma0 == Approx(c.dyt_final_gamma0));
        CHECK(back.embed_scale0 == c.embed_scale0);
    }
}

// The collapse of chapter 12, small: with the final gain at 1, the stream
// grows until the final DyT saturates and not one gradient reaches the
// blocks; with the LayerNorm-matching gain nothing saturates and the model
// keeps learning.
TEST_CASE("a DyT language model starting at final gain 1 stops passing gradient to its blocks", "[training][dyt][slow]") {
    Outcome collapsed = train_dyt(1.0, 40);
    Outcome trains = train_dyt(1 / (2 * 0.02 * std::sqrt(2.0)), 40);
    INFO("gain 1: saturation " << collapsed.final_saturation << ", block-0 gradient " << collapsed.block_0_gradient
                               << ", loss " << collapsed.loss);
    INFO("matched gain: saturation " << trains.final_saturation << ", block-0 gradient " << trains.block_0_gradient
                                     << ", loss " << trains.loss);
    CHECK(collapsed.final_saturation > 0.99);
    CHECK(collapsed.block_0_gradient < 1e-6);
    CHECK(trains.final_saturation < 0.05);
    CHECK(trains.block_0_gradient > 1e-2);
    CHECK(trains.loss < collapsed.loss - 0.3);
}
