// Generation: the key/value cache gives the logits of the full forward pass
// at every position, and generate_tokens gives the same tokens with and
// without it (greedy and sampled, short prompts, long prompts, and past the
// block size where the context window moves).
#include <algorithm>

#include "model_helpers.h"
#include "nn/generate.h"

using namespace nc;
using namespace nc::nn;
using nc_test::check_error;
using nc_test::generation_config;
using nc_test::token_ids;

namespace {

std::shared_ptr<TransformerModel> build(const TransformerConfig& c, Generator& gen, DType dtype) {
    return nn::make_model(c, gen, Options{dtype, kCPU});
}

Tensor full_forward(const TransformerModel& m, const Tensor& ids) { return m.forward(ids); }

Tensor cached_forward(const TransformerModel& m, const Tensor& ids, KVCache& cache) { return m.forward(ids, cache); }

std::vector<std::pair<std::string, TransformerConfig>> variants() {
    std::vector<std::pair<std::string, TransformerConfig>> out;
    out.push_back({"gpt2", generation_config(Family::GPT2)});
    TransformerConfig gqa = generation_config(Family::Llama);
    gqa.n_kv_head = 2;
    out.push_back({"llama gqa rope", gqa});
    TransformerConfig llama_learned = generation_config(Family::Llama);
    llama_learned.positions = Positions::Learned;
    out.push_back({"llama learned positions", llama_learned});
    TransformerConfig diff = generation_config(Family::Llama);
    diff.attention = AttentionKind::Differential;
    out.push_back({"llama differential", diff});
    TransformerConfig regime = generation_config(Family::GPT2);
    regime.attention = AttentionKind::DifferentialRegime;
    out.push_back({"gpt2 differential-regime", regime});
    TransformerConfig geo = generation_config(Family::GPT2);
    geo.placement = Placement::GeoNorm;
    geo.decay = Decay::Harmonic;
    out.push_back({"gpt2 geonorm", geo});
    TransformerConfig post = generation_config(Family::GPT2);
    post.placement = Placement::Post;
    post.norm = NormKind::RMSNorm;
    out.push_back({"gpt2 post rmsnorm", post});
    TransformerConfig none = generation_config(Family::GPT2);
    none.positions = Positions::None;
    out.push_back({"gpt2 no positions", none});
    return out;
}

}  // namespace

TEST_CASE("context_start keeps between half a block and a block of context", "[generate]") {
    CHECK(context_start(1, 8) == 0);
    CHECK(context_start(8, 8) == 0);
    CHECK(context_start(9, 8) == 4);
    CHECK(context_start(12, 8) == 4);
    CHECK(context_start(13, 8) == 8);
    CHECK(context_start(5, 1) == 4);
    for (int64_t n = 1; n < 50; ++n) {
        int64_t len = n - context_start(n, 10);
        CHECK(len >= 1);
        CHECK(len <= 10);
        if (n > 10) CHECK(len > 5);
    }
}

TEST_CASE("cached logits equal the full forward pass at every position", "[generate][kvcache]") {
    for (DType dtype : {kFloat64, kFloat32}) {
        double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
        for (auto& [name, c] : variants()) {
            Generator gen(21);
            auto model = build(c, gen, dtype);
            model->eval();
            NoGradGuard no_grad;
            std::vector<int64_t> ids = token_ids(c.block_size, c.vocab_size, 3);
            Tensor full = full_forward(*model, raw::from_indices(ids, {1, c.block_size}));  // [1, T, V]
            for (int64_t prompt : {int64_t(1), int64_t(5)}) {
                KVCache cache = model->make_cache(1);
                std::vector<int64_t> head(ids.begin(), ids.begin() + prompt);
                Tensor first = cached_forward(*model, raw::from_indices(head, {1, prompt}), cache);
                INFO(name << " " << dtype_name(dtype) << ", prompt of " << prompt);
                nc_test::check_values(first, raw::narrow(full, 1, 0, prompt).to_vector(), tol);
                for (int64_t t = prompt; t < c.block_size; ++t) {
                    Tensor step = cached_forward(*model, raw::from_indices({ids[t]}, {1, 1}), cache);
                    INFO("position " << t);
                    nc_test::check_values(step, raw::narrow(full, 1, t, 1).to_vector(), tol);
                }
                CHECK(cache.length == c.block_size);
            }
        }
    }
}

TEST_CASE("a batch of sequences shares one cache", "[generate][kvcache]") {
    TransformerConfig c = generation_config(Family::Llama);
    c.n_kv_head = 2;
    Generator gen(4);
    auto model = build(c, gen, kFloat64);
    NoGradGuard no_grad;
    std::vector<int64_t> a = token_ids(6, c.vocab_size, 1), b = token_ids(6, c.vocab_size, 2), both = a;
    both.insert(both.end(), b.begin(), b.end());
    Tensor full = full_forward(*model, raw::from_indices(both, {2, 6}));
    KVCache cache = model->make_cache(2);
    cached_forward(*model, raw::from_indices({a[0], a[1], a[2], b[0], b[1], b[2]}, {2, 3}), cache);
    for (int64_t t = 3; t < 6; ++t) {
        Tensor step = cached_forward(*model, raw::from_indices({a[t], b[t]}, {2, 1}), cache);
        nc_test::check_values(step, raw::narrow(full, 1, t, 1).to_vector(), 1e-12);
    }
}

TEST_CASE("generate gives the same tokens with and without the cache", "[generate][kvcache][slow]") {
    for (auto& [name, c] : variants()) {
        Generator gen(8);
        auto model = build(c, gen, kFloat32);
        model->eval();
        for (double temperature : {0.0, 1.0}) {
            // A one-token prompt, a ten-token prompt, and one longer than the block.
            for (int64_t prompt_len : {int64_t(1), int64_t(10), c.block_size + 3}) {
                std::vector<int64_t> prompt = token_ids(prompt_len, c.vocab_size, 5);
                SampleOptions cached{temperature, temperature > 0 ? 5 : 0, true}, uncached = cached;
                uncached.use_cache = false;
                Generator g1(99), g2(99);
                // 40 tokens: the window moves several times (block 12).
                std::vector<int64_t> with = generate_tokens(*model, prompt, 40, cached, g1);
                std::vector<int64_t> without = generate_tokens(*model, prompt, 40, uncached, g2);
                INFO(name << ", temperature " << temperature << ", prompt of " << prompt_len);
                CHECK(with == without);
                CHECK(with.size() == 40);
            }
        }
    }
}

TEST_CASE("the key/value cache refuses what it cannot do, clearly", "[generate][kvcache][errors]") {
    TransformerConfig c = generation_config(Family::GPT2);
    Generator gen(2);
    auto model = build(c, gen, kFloat32);
    KVCache cache = model->make_cache(1);
    // Under grad mode the cache would keep graph-free copies of graph tensors.
    check_error([&] { cached_forward(*model, raw::from_indices({1, 2}, {1, 2}), cache); }, {"NoGradGuard"});
    NoGradGuard no_grad;
    KVCache fresh = model->make_cache(1);
    cached_forward(*model, raw::from_indices({1, 2}, {1, 2}), fresh);
    check_error([&] { cached_forward(*model, raw::from_indices({3, 4}, {1, 2}), fresh); },
                {"one token at a time", "2 cached"});
    KVCache full = model->make_cache(1);
    cached_forward(*model, raw::from_indices(token_ids(12, c.vocab_size, 1), {1, 12}), full);
    check_error([&] { cached_forward(*model, raw::from_indices({1}, {1, 1}), full); }, {"13", "block size 12"});
    KVCache batch_of_two = model->make_cache(2);
    check_error([&] { cached_forward(*model, raw::from_indices({1}, {1, 1}), batch_of_two); }, {"make_cache(1)"});
    Generator sample(1);
    check_error([&] { generate_tokens(*model, {}, 3, SampleOptions{}, sample); }, {"at least one token"});
    check_error([&] { generate_tokens(*model, {1, 99}, 3, SampleOptions{}, sample); }, {"99", "vocabulary of 23"});
}

// Sampling against its definition: among the top k logits (all when k <= 0),
// token v has probability exp(l_v / T) / Z. pick_token draws u in [0, 1)
// and walks the tokens in index order until the running sum passes u Z; a
// twin generator gives the same u here, so each draw has one right answer,
// computed below in long double from the logits alone. T = 1 is avoided
// (there l T = l / T), as are ties at the cutoff.
TEST_CASE("sampling picks from softmax(logits / T) over the top k", "[generate]") {
    const std::vector<double> logits = {2.0, 1.0, 0.5, 0.0, -1.0, 1.7};
    for (double temperature : {0.5, 2.0})
        for (int64_t top_k : {0, 2, 3}) {
            INFO("temperature " << temperature << ", top_k " << top_k);
            std::vector<double> sorted = logits;
            std::sort(sorted.rbegin(), sorted.rend());
            double kth = top_k > 0 ? sorted[top_k - 1] : -INFINITY;
            std::vector<long double> weight(logits.size());
            long double total = 0;
            for (size_t v = 0; v < logits.size(); ++v) {
                weight[v] = logits[v] >= kth ? std::exp((long double)logits[v] / temperature) : 0.0L;
                total += weight[v];
            }
            Generator gen(21), twin(21);
            std::vector<int64_t> counts(logits.size(), 0);
            int mismatches = 0;
            for (int draw = 0; draw < 300; ++draw) {
                long double u = raw::rand({1}, twin, kFloat64).item() * total, running = 0;
                int64_t expected = (int64_t)logits.size() - 1;
                for (size_t v = 0; v < logits.size(); ++v) {
                    running += weight[v];
                    if (u < running) {
                        expected = (int64_t)v;
                        break;
                    }
                }
                int64_t got = pick_token(logits, temperature, top_k, gen);
                mismatches += got != expected;
                ++counts[got];
            }
            CHECK(mismatches == 0);
            // Only the top k ever come out (indices 0 and 5 for k = 2).
            for (size_t v = 0; v < logits.size(); ++v)
                if (logits[v] < kth) CHECK(counts[v] == 0);
        }
    // Temperature 0 is greedy.
    Generator gen(3);
    CHECK(pick_token(logits, 0.0, 0, gen) == 0);
}
