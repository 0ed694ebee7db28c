#include "train/train_task.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "train/checkpoint.h"
#include "train/lm.h"
#include "data/corpus.h"
#include "data/images.h"
#include "data/text.h"

namespace nc {
namespace app {

// Mean loss over `batches` evaluation batches, in eval mode, without gradients.
static double mean_loss(nn::TransformerModel& model, int64_t batches, const std::function<Tensor(int64_t)>& loss_of) {
    NoGradGuard no_grad;
    model.eval();
    double total = 0;
    for (int64_t i = 0; i < batches; ++i) total += loss_of(i).item();
    model.train();
    return total / (double)batches;
}

// This rank's rows of a global batch (all of it with one process).
static Tensor my_rows(const Tensor& global, const Distributed& dist) {
    if (!dist.active()) return global;
    int64_t B = global.size(0) / dist.world;
    return raw::narrow(global, 0, dist.rank * B, B);
}

static void check_eval_split(const std::string& eval_split) {
    if (eval_split != "validation" && eval_split != "tuning")
        throw Error("flag --eval-split: '" + eval_split + "' is not a split (validation or tuning)");
}

// Weights loaded from a file (--init, --resume) set every parameter (loading
// fails otherwise), so the model is built without random init first.
static nn::Options model_options(const Flags& flags) {
    return flags.given("init") || flags.given("resume") ? nn::Options::for_loading() : nn::Options();
}

// ---- text: GPT-2 and Llama ----

class TextTask : public Task {
public:
    TextTask(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist, std::FILE* out);
    nn::TransformerModel& model() override { return *lm_.module; }
    int64_t tokens_per_batch() const override { return B_ * T_; }
    Tensor train_loss() override {
        data::Batch b = train_->next();
        Tensor logits = lm_.forward(my_rows(b.inputs, dist_));
        return cross_entropy(logits, raw::to_device(my_rows(b.targets, dist_), logits.device()));
    }
    double validate() override {
        if (!val_) return NAN;
        return mean_loss(*lm_.module, eval_batches_, [&](int64_t i) {
            data::Batch b = spread_ ? val_->spread(i, eval_batches_) : val_->at(i);
            Tensor logits = lm_.forward(b.inputs);
            return cross_entropy(logits, raw::to_device(b.targets, logits.device()));
        });
    }
    void finish() override {
        if (flags_.integer("sample-tokens") > 0) sample(flags_.integer("sample-tokens"), seed_ + 3, "sample");
    }
    void sample_during(int64_t step) override {
        sample(flags_.integer("sample-every-tokens"), seed_ + 3 + (uint64_t)step, "sample at step " + std::to_string(step));
    }
    BatchPosition batch_position() override {
        return {train_->batches_taken(), train_->generator().seed(), train_->generator().offset()};
    }
    void set_batch_position(const BatchPosition& p) override {
        train_->generator().manual_seed(p.seed);
        train_->generator().set_offset(p.offset);
        train_->set_position(p.batches_taken);
    }
    std::vector<Tensor> residual_stream() override {
        NoGradGuard no_grad;
        std::vector<Tensor> stream;
        lm_.forward(train_->at(0).inputs, &stream);
        return stream;
    }
    int64_t held_out_batches() const override { return held_out_batches_; }
    void held_out_forward(int64_t i) override {
        NoGradGuard no_grad;
        lm_.module->eval();
        lm_.forward(val_->spread(i, held_out_batches_).inputs);
        lm_.module->train();
    }

private:
    // A sample of `count` tokens, from its own generator so that samples
    // never change the training run (dropout and batches draw elsewhere).
    void sample(int64_t count, uint64_t sample_seed, const std::string& title) {
        Generator sample_gen(sample_seed);
        std::fprintf(out_, "\n--- %s (temperature %.2f) ---\n", title.c_str(), flags_.number("temperature"));
        lm_.module->eval();
        print_sample(lm_, codec_, flags_.str("prompt"), count,
                     nn::SampleOptions{flags_.number("temperature"), flags_.integer("top-k"), true}, sample_gen, out_);
        lm_.module->train();
        std::fprintf(out_, "\n--- end of %s ---\n", title.c_str());
        std::fflush(out_);
    }

    const Flags& flags_;
    uint64_t seed_;
    std::FILE* out_;
    Distributed dist_;
    TextCodec codec_;
    LanguageModel lm_;
    std::shared_ptr<data::LMBatches> train_, val_;  // val_: null without validation tokens
    int64_t B_ = 0, T_ = 0, eval_batches_ = 0, held_out_batches_ = 0;
    bool spread_ = false;  // --eval-tokens: evaluation windows spread over the split
};

TextTask::TextTask(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist, std::FILE* out)
    : flags_(flags), seed_(seed), out_(out), dist_(dist) {
    // A corpus directory of `normcore corpus build` (data/corpus.h) brings its
    // own splits: train.txt to train on, and tuning.txt or validation.txt to
    // evaluate on. Anything else is split here: its last --val-fraction validates.
    std::string data_path = flags.str("data");
    bool split_corpus = data::is_split_corpus(data_path);
    std::string eval_split = flags.str("eval-split");
    check_eval_split(eval_split);
    if (split_corpus && flags.given("val-fraction"))
        throw Error("flag --val-fraction: the corpus '" + data_path + "' has its own validation split (drop the flag)");
    if (!split_corpus && flags.given("eval-split"))
        throw Error("flag --eval-split: '" + data_path + "' is not a corpus directory of `normcore corpus build`");
    std::string text = split_corpus ? data::read_file(data::split_path(data_path, "train")) : corpus_text_if_any(data_path);
    codec_ = make_codec(flags, text, out);
    if (!flags.given("resume") && !(flags.given("init") && is_directory_target(flags.str("init")))) cfg.vocab_size = codec_.vocab_size;
    check_vocabulary(codec_, cfg);
    // A smaller training set (the DyT study's data regimes): its first N
    // tokens. Validation keeps the same held-out tail, so runs compare.
    int64_t limit = flags.integer("train-tokens");
    if (limit < 0 || (limit > 0 && limit < flags.integer("seq") + 1))
        throw Error("flag --train-tokens: " + std::to_string(limit) + " tokens cannot fill one window of --seq " +
                    std::to_string(flags.integer("seq")) + " + 1");
    data::Split split;
    if (split_corpus) {
        // Only as much of train.txt as the run trains on is encoded.
        split.train = limit > 0 ? data::TokenIds(encode_prefix(codec_, text, limit)) : encode_text(codec_, std::move(text));
        split.val = encode_text(codec_, data::read_file(data::split_path(data_path, eval_split)));
    } else {
        split = data::split_tokens(text.empty() ? load_corpus_tokens(data_path, codec_) : encode_text(codec_, std::move(text)),
                                   flags.number("val-fraction"));
    }
    text.clear();  // the tokens are all that is needed from here on (moved into them, or encoded)
    // B is this rank's batch; GB the step's (every rank's together, chapter
    // 14), which is also the evaluation's, so that N ranks evaluate what one
    // process with batch N x B would.
    B_ = flags.integer("batch");
    T_ = flags.integer("seq");
    eval_batches_ = flags.integer("eval-batches");
    int64_t GB = B_ * dist.world, T = T_;
    // --eval-tokens: enough batches for that many tokens, spread over the split.
    int64_t eval_tokens = flags.integer("eval-tokens");
    spread_ = eval_tokens > 0;
    if (spread_) eval_batches_ = (eval_tokens + GB * T - 1) / (GB * T);
    if (spread_ && eval_batches_ * GB * T > split.val.size())
        throw Error("flag --eval-tokens: " + std::to_string(eval_tokens) + " tokens are more than the " +
                    (split_corpus ? eval_split + " split" : std::string("validation part")) + "'s " +
                    std::to_string(split.val.size()) + " (in windows of " + std::to_string(GB) + " x " + std::to_string(T) + ")");
    if (limit > 0 && limit < split.train.size()) split.train = split.train.slice(0, limit);
    train_ = std::make_shared<data::LMBatches>(split.train, GB, T, !flags.on("no-shuffle"), seed + 1);
    if (split.val.size() > T + 1) val_ = std::make_shared<data::LMBatches>(split.val, GB, T, false, seed + 2);
    Generator init_gen(seed);
    lm_ = build_language_model(cfg, init_gen, model_options(flags));
    std::fprintf(out, "data: %s, %s, %lld train / %lld %s tokens; batch %lld x %lld\n", data_path.c_str(), codec_.name.c_str(),
                (long long)split.train.size(), (long long)split.val.size(), split_corpus ? eval_split.c_str() : "val",
                (long long)B_, (long long)T);
    if (spread_)
        std::fprintf(out, "evaluation: %lld windows of %lld tokens spread over the %s tokens\n", (long long)(eval_batches_ * B_),
                    (long long)T, split_corpus ? eval_split.c_str() : "validation");
    if (val_) held_out_batches_ = std::min<int64_t>(16, std::max<int64_t>(1, (split.val.size() - 1) / (GB * T)));
}

// ---- images: ViT ----

// Each of Fashion-MNIST's two evaluation splits (validation, tuning): half of its test set.
const int64_t kFashionSplitImages = 5000;

class ImageTask : public Task {
public:
    ImageTask(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist, std::FILE* out);
    nn::TransformerModel& model() override { return *model_; }
    int64_t tokens_per_batch() const override { return B_ * tokens_; }
    Tensor train_loss() override {
        data::ImageBatch b = batches_->next();
        return cross_entropy(model_->forward(raw::to_device(my_rows(b.images, dist_), model_->device())),
                             raw::to_device(my_rows(b.labels, dist_), model_->device()));
    }
    double validate() override {
        if (!val_batches_ || val_count_ == 0) return NAN;
        return mean_loss(*model_, val_count_, [&](int64_t i) {
            data::ImageBatch b = val_batches_->at(i);
            return cross_entropy(model_->forward(raw::to_device(b.images, model_->device())),
                                 raw::to_device(b.labels, model_->device()));
        });
    }
    void finish() override;  // the validation accuracy
    BatchPosition batch_position() override {
        return {batches_->batches_taken(), batches_->generator().seed(), batches_->generator().offset()};
    }
    void set_batch_position(const BatchPosition& p) override {
        batches_->generator().manual_seed(p.seed);
        batches_->generator().set_offset(p.offset);
        batches_->set_position(p.batches_taken);
    }
    std::vector<Tensor> residual_stream() override {
        NoGradGuard no_grad;
        std::vector<Tensor> stream;
        model_->forward(raw::to_device(batches_->at(0).images, model_->device()), &stream);
        return stream;
    }
    int64_t held_out_batches() const override { return val_count_ > 0 ? std::min<int64_t>(8, val_count_) : 0; }
    void held_out_forward(int64_t i) override {
        NoGradGuard no_grad;
        model_->eval();
        model_->forward(raw::to_device(val_batches_->at(i).images, model_->device()));
        model_->train();
    }

private:
    Distributed dist_;
    std::FILE* out_;
    std::shared_ptr<nn::ViT> model_;
    data::ImageSet train_, val_;
    std::shared_ptr<data::ImageBatches> batches_, val_batches_;  // val_batches_: null without validation images
    int64_t B_ = 0, tokens_ = 0, val_count_ = 0;
};

ImageTask::ImageTask(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist, std::FILE* out)
    : dist_(dist), out_(out) {
    std::string path = flags.given("data") ? flags.str("data") : data::kFashionMnist;
    for (const char* text_only : {"eval-tokens", "train-tokens"})
        if (flags.given(text_only))
            throw Error(std::string("flag --") + text_only + ": applies to text models, not vit (it evaluates --eval-batches batches of images)");
    int64_t limit = flags.integer("train-images");
    std::string eval_split = flags.str("eval-split");
    check_eval_split(eval_split);
    if (std::filesystem::exists(path + "/train-images-idx3-ubyte.gz")) {
        train_ = data::load_fashion_mnist(path, true, limit);
        // Fashion-MNIST's 10,000 test images: validation reads from the first,
        // tuning from the 5,001st, so up to 5,000 images each never overlap.
        int64_t wanted = flags.integer("eval-batches") * flags.integer("batch") * dist.world;
        if (flags.given("eval-split") && wanted > kFashionSplitImages)
            throw Error("flag --eval-split: --eval-batches x --batch = " + std::to_string(wanted) + " images, more than the " +
                        std::to_string(kFashionSplitImages) + " of each Fashion-MNIST split");
        val_ = data::load_fashion_mnist(path, false, wanted, eval_split == "tuning" ? kFashionSplitImages : 0);
        train_.images = data::resize_images(train_.images, cfg.image_size);
        val_.images = data::resize_images(val_.images, cfg.image_size);
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
        take(0, n - n_val, train_);
        if (n_val > 0) take(n - n_val, n, val_);
    }
    B_ = flags.integer("batch");
    int64_t GB = B_ * dist.world, eval_batches = flags.integer("eval-batches");
    batches_ = std::make_shared<data::ImageBatches>(train_, GB, !flags.on("no-shuffle"), seed + 1);
    if (!val_.labels.empty()) val_batches_ = std::make_shared<data::ImageBatches>(val_, GB, false, seed + 2);
    Generator init_gen(seed);
    model_ = std::make_shared<nn::ViT>(cfg, init_gen, model_options(flags));
    tokens_ = (cfg.image_size / cfg.patch_size) * (cfg.image_size / cfg.patch_size) + 1;
    std::fprintf(out, "data: %s, %zu train / %zu val images of %lld x %lld, %zu classes; batch %lld\n", path.c_str(),
                train_.labels.size(), val_.labels.size(), (long long)cfg.image_size, (long long)cfg.image_size,
                train_.class_names.size(), (long long)B_);
    val_count_ = std::min<int64_t>((int64_t)val_.labels.size() / std::max<int64_t>(1, GB), eval_batches);
}

void ImageTask::finish() {
    if (val_.labels.empty()) return;
    NoGradGuard no_grad;
    model_->eval();
    int64_t correct = 0, n = (int64_t)val_.labels.size();
    for (int64_t start = 0; start < n; start += B_) {
        int64_t count = std::min(B_, n - start);
        Tensor logits = model_->forward(raw::to_device(raw::narrow(val_.images, 0, start, count), model_->device()));
        std::vector<int64_t> guess = raw::argmax(logits, 1).to_int_vector();
        for (int64_t i = 0; i < count; ++i) correct += guess[i] == val_.labels[start + i];
    }
    model_->train();
    std::fprintf(out_, "validation accuracy: %.4f (%lld of %lld images)\n", (double)correct / (double)n, (long long)correct,
                (long long)n);
}

std::unique_ptr<Task> make_task(const Flags& flags, nn::TransformerConfig cfg, uint64_t seed, const Distributed& dist,
                                std::FILE* out) {
    if (cfg.family == nn::Family::ViT) return std::make_unique<ImageTask>(flags, cfg, seed, dist, out);
    return std::make_unique<TextTask>(flags, cfg, seed, dist, out);
}

}  // namespace app
}  // namespace nc
