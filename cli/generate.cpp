// generate.cpp — `normcore generate` (sample text from trained weights) and
// `normcore eval` (loss and perplexity of weights on a data set).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <filesystem>
#include <cstdio>
#include <iostream>

#include "train/checkpoint.h"
#include "cli/commands.h"
#include "train/lm.h"
#include "data/corpus.h"
#include "data/images.h"
#include "data/text.h"
#include "tensor/profile.h"

namespace nc {
namespace app {

// generate --profile: where a token's time goes. The kernels' time by kind
// of op and their calls, per generated token, and what remains of the wall
// clock: the work around each kernel call (output tensors, shapes,
// dispatch) and sampling. "Per token" averages over the whole run, so it
// includes the prompt's forward pass and the cache's refills when the
// window moves.
static void print_generation_profile(const ProfileTotals& p, double seconds, int64_t tokens) {
    if (tokens <= 0 || seconds <= 0) return;
    const double us = 1e6 / (double)tokens;
    double in_kernels = 0;
    int64_t calls = 0;
    std::fprintf(stderr, "per token, by kind of op (kernel time, kernel calls):\n");
    for (int k = 0; k < kOpKinds; ++k) {
        in_kernels += p.seconds[k];
        calls += p.calls[k];
        if (p.calls[k] > 0)
            std::fprintf(stderr, "  %-12s %8.1f us %6.1f calls\n", op_kind_name((OpKind)k), p.seconds[k] * us,
                         (double)p.calls[k] / (double)tokens);
    }
    double outside = std::max(0.0, seconds - in_kernels);
    std::fprintf(stderr, "  %-12s %8.1f us %6.1f calls\n", "all kernels", in_kernels * us, (double)calls / (double)tokens);
    std::fprintf(stderr, "  outside the kernels: %.1f us (%.0f%% of the time; %.2f us per kernel call)\n", outside * us,
                 100.0 * outside / seconds, calls > 0 ? outside * 1e6 / (double)calls : 0.0);
}

// Builds the model a command's --init / --resume names, with its weights.
static LanguageModel load_model(const Flags& flags) {
    if (!flags.given("init") && !flags.given("resume"))
        throw Error("give the weights with --init (a safetensors file or a model directory) or --resume (a training checkpoint)");
    DType precision = parse_precision(flags.str("precision"));  // a mistyped flag before any file is read
    nn::TransformerConfig cfg = resolve_config(flags);
    Generator gen(0);
    LanguageModel lm = build_language_model(cfg, gen, nn::Options::for_loading());
    if (flags.given("resume")) {
        optim::SGD unused({}, 0);  // the checkpoint's optimizer state is not needed here
        load_training_checkpoint(flags.str("resume"), *lm.module, unused);
    } else {
        load_weights(*lm.module, flags.str("init"));
    }
    lm.module->eval();
    lm.module->set_precision(precision);
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
                                {"temperature", "0.8", "sampling temperature (0: always the most likely token)"},
                                {"top-k", "0", "sample among the k most likely tokens (0: all)"},
                                {"seed", "1", "sampling seed"},
                                {"tokenizer", "byte", "byte, a BPE file, or a GPT-2 vocab.json + merges.txt directory"},
                                {"no-cache", "false", "recompute the whole context for every token (no key/value cache)", true},
                                {"out", "", "also write the exact bytes of prompt + generated text to this file"},
                                {"profile", "false", "print, per token, the kernels' time and calls by kind of op and the time outside them", true},
                                precision_flag(),
                            }));
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Generates text from trained weights, printing it as it is produced.\n\n" << flags.usage();
        return 0;
    }
    LanguageModel lm = load_model(flags);
    TextCodec codec = make_codec(flags, "");
    check_vocabulary(codec, lm.module->config());
    std::unique_ptr<std::ofstream> out;
    if (flags.given("out")) {
        out = std::make_unique<std::ofstream>(flags.str("out"), std::ios::binary);
        if (!*out) throw Error("--out: cannot write '" + flags.str("out") + "'");
    }
    Generator gen((uint64_t)flags.integer("seed"));
    nn::SampleOptions options{flags.number("temperature"), flags.integer("top-k"), !flags.on("no-cache")};
    int64_t count = flags.integer("max-tokens");
    if (count < 0) throw Error("flag --max-tokens must be >= 0, got " + flags.str("max-tokens"));
    const bool profile = flags.on("profile");
    reset_profile();
    set_profiling(profile);
    auto start = std::chrono::steady_clock::now();
    print_sample(lm, codec, flags.str("prompt"), count, options, gen, stdout, out.get());
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    set_profiling(false);
    std::printf("\n");
    std::fflush(stdout);
    if (out && !out->flush()) throw Error("--out: writing '" + flags.str("out") + "' failed");
    // On stderr, so that the text on stdout is only the text.
    std::fprintf(stderr, "generated %lld tokens in %.2f s: %.1f tokens/s (%s)\n", (long long)count, seconds,
                 seconds > 0 ? (double)count / seconds : 0.0, options.use_cache ? "key/value cache" : "no cache");
    if (profile) print_generation_profile(profile_totals(), seconds, count);
    return 0;
}

// The ViT: loss and accuracy on Fashion-MNIST's test split (or an image folder).
static int eval_vit(const Flags& flags, const nn::TransformerConfig& cfg) {
    if (!flags.given("init")) throw Error("eval --model vit: give the weights with --init");
    DType precision = parse_precision(flags.str("precision"));
    Generator gen(0);
    nn::ViT model(cfg, gen, nn::Options::for_loading());
    load_weights(model, flags.str("init"));
    model.eval();
    model.set_precision(precision);
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
                            {"val-fraction", "0.1", "evaluate on the last fraction of the tokens (1: all of them; not for a split corpus)"},
                            {"split", "validation", "with a corpus directory of `normcore corpus build`: validation | tuning | train"},
                            {"batch", "16", "sequences per batch"},
                            {"batches", "16", "number of batches"},
                            {"limit", "0", "vit: evaluate only the first N images (0: all)"},
                            {"tokenizer", "byte", "byte, a BPE file, or a GPT-2 vocab.json + merges.txt directory"},
                            precision_flag(),
                        }));
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Reports the loss and perplexity (language models) or accuracy (vit) of weights on a data set.\n\n"
                  << flags.usage();
        return 0;
    }
    parse_precision(flags.str("precision"));  // checked before any file is read
    nn::TransformerConfig cfg = resolve_config(flags);
    if (cfg.family == nn::Family::ViT) return eval_vit(flags, cfg);
    LanguageModel lm = load_model(flags);
    TextCodec codec = make_codec(flags, "");
    check_vocabulary(codec, cfg);
    // A corpus directory of `normcore corpus build`: one of its splits, whole,
    // in windows spread over it (as train --eval-tokens does). Anything else:
    // its last --val-fraction, from the start of that part.
    std::string path = flags.str("data"), split = flags.str("split");
    bool split_corpus = data::is_split_corpus(path);
    if (split != "validation" && split != "tuning" && split != "train")
        throw Error("flag --split: '" + split + "' is not a split (validation, tuning or train)");
    if (split_corpus && flags.given("val-fraction"))
        throw Error("flag --val-fraction: the corpus '" + path + "' has its own splits (choose one with --split)");
    if (!split_corpus && flags.given("split"))
        throw Error("flag --split: '" + path + "' is not a corpus directory of `normcore corpus build`");
    data::TokenIds part;
    if (split_corpus) {
        part = encode_text(codec, data::read_file(data::split_path(path, split)));
    } else {
        data::TokenIds tokens = load_corpus_tokens(path, codec);
        double fraction = flags.number("val-fraction");
        if (!(fraction > 0 && fraction <= 1)) throw Error("--val-fraction must be in (0, 1], got " + flags.str("val-fraction"));
        part = tokens.slice((int64_t)((double)tokens.size() * (1 - fraction)), tokens.size());
    }
    int64_t T = flags.integer("seq"), batches = flags.integer("batches");
    data::LMBatches windows(part, flags.integer("batch"), T, false, 0);
    NoGradGuard no_grad;
    double total = 0;
    for (int64_t i = 0; i < batches; ++i) {
        data::Batch b = split_corpus ? windows.spread(i, batches) : windows.at(i);
        total += cross_entropy(lm.forward(b.inputs), b.targets).item();
    }
    double loss = total / (double)batches;
    std::printf("eval: loss=%.4f nats/token (%.4f bits/token) perplexity=%.3f over %lld windows of %lld tokens\n", loss,
                loss / std::log(2.0), std::exp(loss), (long long)(batches * flags.integer("batch")), (long long)T);
    return 0;
}

}  // namespace app
}  // namespace nc
