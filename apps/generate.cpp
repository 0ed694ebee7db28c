// generate.cpp — `normcore generate` (sample text from trained weights) and
// `normcore eval` (loss and perplexity of weights on a data set).
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <iostream>

#include "apps/checkpoint.h"
#include "apps/commands.h"
#include "apps/lm.h"
#include "data/images.h"
#include "data/text.h"

namespace nc {
namespace app {

// Builds the model a command's --init / --resume names, with its weights.
static LanguageModel load_model(const Flags& flags) {
    if (!flags.given("init") && !flags.given("resume"))
        throw Error("give the weights with --init (a safetensors file or a model directory) or --resume (a training checkpoint)");
    nn::TransformerConfig cfg = resolve_config(flags);
    Generator gen(0);
    LanguageModel lm = build_language_model(cfg, gen);
    if (flags.given("resume")) {
        optim::SGD unused({}, 0);  // the checkpoint's optimizer state is not needed here
        load_training_checkpoint(flags.str("resume"), *lm.module, unused);
    } else {
        load_weights(*lm.module, flags.str("init"));
    }
    lm.module->eval();
    return lm;
}

static std::vector<FlagSpec> with_model_flags(std::vector<FlagSpec> specs) {
    std::vector<FlagSpec> all = model_flags();
    all.insert(all.end(), specs.begin(), specs.end());
    return all;
}

int generate_command(int argc, char** argv) {
    Flags flags("generate", with_model_flags({
                                {"init", "", "weights: a safetensors file (architecture from the flags) or a model directory"},
                                {"resume", "", "or a training checkpoint"},
                                {"prompt", "", "text to continue (default: a newline)"},
                                {"max-tokens", "200", "tokens to generate"},
                                {"temperature", "0.8", "sampling temperature (0: always the most likely byte)"},
                                {"top-k", "0", "sample among the k most likely bytes (0: all)"},
                                {"seed", "1", "sampling seed"},
                                {"tokenizer", "byte", "byte, a BPE file, or a GPT-2 vocab.json + merges.txt directory"},
                            }));
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Generates text from trained weights, printing it as it is produced.\n\n" << flags.usage();
        return 0;
    }
    LanguageModel lm = load_model(flags);
    Generator gen((uint64_t)flags.integer("seed"));
    std::string prompt = flags.str("prompt");
    std::printf("%s", prompt.c_str());
    TextCodec codec = make_codec(flags, "");
    sample_tokens(lm, codec.encode(prompt.empty() ? std::string("\n") : prompt), flags.integer("max-tokens"), flags.number("temperature"),
                  flags.integer("top-k"), gen, [&codec](int64_t t) {
                      std::fputs(codec.token_text(t).c_str(), stdout);
                      std::fflush(stdout);
                  });
    std::printf("\n");
    return 0;
}

// The ViT: loss and accuracy on Fashion-MNIST's test split (or an image folder).
static int eval_vit(const Flags& flags, const nn::TransformerConfig& cfg) {
    if (!flags.given("init")) throw Error("eval --model vit: give the weights with --init");
    Generator gen(0);
    nn::ViT model(cfg, gen);
    load_weights(model, flags.str("init"));
    model.eval();
    std::string path = flags.given("data") ? flags.str("data") : data::kFashionMnist;
    data::ImageSet set = std::filesystem::exists(path + "/t10k-images-idx3-ubyte.gz")
                             ? data::load_fashion_mnist(path, false, flags.integer("limit"))
                             : data::load_image_folder(path, cfg.image_size, cfg.channels);
    set.images = data::resize_images(set.images, cfg.image_size);
    NoGradGuard no_grad;
    int64_t n = (int64_t)set.labels.size();
    if (flags.integer("limit") > 0) n = std::min(n, flags.integer("limit"));
    int64_t B = flags.integer("batch"), correct = 0;
    double loss = 0;
    for (int64_t start = 0; start < n; start += B) {
        int64_t count = std::min(B, n - start);
        Tensor logits = model.forward(raw::narrow(set.images, 0, start, count));
        std::vector<int64_t> labels(set.labels.begin() + start, set.labels.begin() + start + count);
        Tensor target = raw::from_indices(labels, {count});
        loss += cross_entropy(logits, target).item() * (double)count;
        std::vector<int64_t> guess = raw::argmax(logits, 1).to_int_vector();
        for (int64_t i = 0; i < count; ++i) correct += guess[i] == labels[i];
    }
    std::printf("eval: loss=%.4f accuracy=%.4f (%lld of %lld images)\n", loss / (double)n, (double)correct / (double)n,
                (long long)correct, (long long)n);
    return 0;
}

int eval_command(int argc, char** argv) {
    Flags flags("eval", with_model_flags({
                            {"init", "", "weights: a safetensors file (architecture from the flags) or a model directory"},
                            {"resume", "", "or a training checkpoint"},
                            {"data", data::kDefaultCorpus, "a text file or directory (vit: Fashion-MNIST's test split by default, or root/<class>/<image>)"},
                            {"val-fraction", "0.1", "evaluate on the last fraction of the tokens (1: all of them)"},
                            {"batch", "16", "sequences per batch"},
                            {"batches", "16", "number of batches"},
                            {"limit", "0", "vit: evaluate only the first N images (0: all)"},
                            {"tokenizer", "byte", "byte, a BPE file, or a GPT-2 vocab.json + merges.txt directory"},
                        }));
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Reports the loss and perplexity (language models) or accuracy (vit) of weights on a data set.\n\n"
                  << flags.usage();
        return 0;
    }
    nn::TransformerConfig cfg = resolve_config(flags);
    if (cfg.family == nn::Family::ViT) return eval_vit(flags, cfg);
    LanguageModel lm = load_model(flags);
    std::vector<int64_t> tokens = make_codec(flags, "").encode(data::read_corpus(flags.str("data")));
    double fraction = flags.number("val-fraction");
    if (!(fraction > 0 && fraction <= 1)) throw Error("--val-fraction must be in (0, 1], got " + flags.str("val-fraction"));
    std::vector<int64_t> part(tokens.begin() + (int64_t)((double)tokens.size() * (1 - fraction)), tokens.end());
    int64_t T = flags.integer("seq"), batches = flags.integer("batches");
    data::LMBatches windows(part, flags.integer("batch"), T, false, 0);
    NoGradGuard no_grad;
    double total = 0;
    for (int64_t i = 0; i < batches; ++i) {
        data::Batch b = windows.at(i);
        total += cross_entropy(lm.forward(b.inputs), b.targets).item();
    }
    double loss = total / (double)batches;
    std::printf("eval: loss=%.4f nats/token (%.4f bits/token) perplexity=%.3f over %lld windows of %lld tokens\n", loss,
                loss / std::log(2.0), std::exp(loss), (long long)(batches * flags.integer("batch")), (long long)T);
    return 0;
}

}  // namespace app
}  // namespace nc
