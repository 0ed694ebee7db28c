// The one-token decoder (nn/decode.h) against the model's own forward with
// the key/value cache: the same logits and the same cached keys and values,
// to the last bit, for every kind of model it takes, in float32, float64
// and mixed precision (16-bit operands); and a clear refusal of the models
// it does not take.
#include "model_helpers.h"
#include "nn/decode.h"
#include "nn/generate.h"
#include "tensor/backend.h"
#include "tensor/cpu/allocator.h"

using namespace nc;
using namespace nc::nn;
using nc_test::check_error;
using nc_test::generation_config;
using nc_test::token_ids;

namespace {

// Every option the decoder has a branch for, each in at least one model.
std::vector<std::pair<std::string, TransformerConfig>> decodable() {
    std::vector<std::pair<std::string, TransformerConfig>> out;
    out.push_back({"gpt2", generation_config(Family::GPT2)});
    TransformerConfig gpt2_rope = generation_config(Family::GPT2);  // rotary positions on the fused projection, no biases, untied, exact GELU
    gpt2_rope.positions = Positions::Rope;
    gpt2_rope.bias = false;
    gpt2_rope.tie_embeddings = false;
    gpt2_rope.gelu_tanh = false;
    out.push_back({"gpt2 rope, no bias, untied, erf gelu", gpt2_rope});
    TransformerConfig gpt2_plain = generation_config(Family::GPT2);
    gpt2_plain.positions = Positions::None;
    gpt2_plain.norm = NormKind::None;
    gpt2_plain.mlp = MlpKind::SwiGlu;
    out.push_back({"gpt2 no positions, no norm, swiglu", gpt2_plain});
    TransformerConfig gpt2_rms = generation_config(Family::GPT2);
    gpt2_rms.norm = NormKind::RMSNorm;
    gpt2_rms.n_kv_head = 2;
    out.push_back({"gpt2 rmsnorm, grouped-query", gpt2_rms});
    out.push_back({"llama", generation_config(Family::Llama)});
    TransformerConfig gqa = generation_config(Family::Llama);
    gqa.n_kv_head = 2;
    out.push_back({"llama grouped-query", gqa});
    TransformerConfig mqa = generation_config(Family::Llama);
    mqa.n_kv_head = 1;
    mqa.tie_embeddings = true;
    mqa.bias = true;
    out.push_back({"llama one key/value head, tied, biases", mqa});
    TransformerConfig learned = generation_config(Family::Llama);
    learned.positions = Positions::Learned;
    learned.mlp = MlpKind::Gelu;
    out.push_back({"llama learned positions, gelu", learned});
    // Settings the defaults would hide: the norms' epsilon and RoPE's base.
    TransformerConfig eps = generation_config(Family::GPT2);
    eps.norm_eps = 1e-2;
    out.push_back({"gpt2 layernorm epsilon 1e-2", eps});
    TransformerConfig theta = generation_config(Family::Llama);
    theta.norm_eps = 1e-2;
    theta.rope_theta = 500;
    out.push_back({"llama rmsnorm epsilon 1e-2, rope theta 500", theta});
    return out;
}

// Every parameter moved off its initial value: biases start at zero and
// norm gains at one, where a step that dropped them would still agree.
void scramble(const TransformerModel& model, Generator& gen) {
    NoGradGuard no_grad;
    for (const Tensor& p : model.parameters())
        raw::copy_(p, raw::add(p, raw::mul(raw::randn(p.shape(), gen, p.dtype()), 0.1)));
}

// The first `length` positions of a cache buffer [1, heads, capacity, D].
std::vector<double> cached(const Tensor& buffer, int64_t length) { return raw::narrow(buffer, 2, 0, length).to_vector(); }

}  // namespace

TEST_CASE("the one-token decoder gives the model's own logits and cache, bit for bit", "[generate][decode]") {
    // Weights, and the operands of the products (mixed precision: float32
    // weights rounded to 16 bits in every product and attention).
    const std::vector<std::pair<DType, DType>> kinds{
        {kFloat32, kFloat32}, {kFloat64, kFloat64}, {kFloat32, kBFloat16}, {kFloat32, kFloat16}};
    for (auto [dtype, precision] : kinds) {
        for (auto& [name, c] : decodable()) {
            Generator gen(31);
            auto model = nn::make_model(c, gen, Options{dtype, kCPU});
            scramble(*model, gen);
            if (precision != dtype) model->set_precision(precision);
            model->eval();
            NoGradGuard no_grad;
            REQUIRE(TokenDecoder::unsupported(*model).empty());
            std::vector<int64_t> ids = token_ids(c.block_size, c.vocab_size, 4);
            // Prompts of 0 (the decoder's first token is the whole prompt), 1 and 5 tokens.
            for (int64_t prompt : {int64_t(0), int64_t(1), int64_t(5)}) {
                INFO(name << " " << dtype_name(dtype) << " weights, " << dtype_name(precision) << " operands, prompt of "
                          << prompt);
                KVCache theirs = model->make_cache(1), ours = model->make_cache(1);
                if (prompt > 0) {
                    std::vector<int64_t> head(ids.begin(), ids.begin() + prompt);
                    model->forward(raw::from_indices(head, {1, prompt}), theirs);
                    model->forward(raw::from_indices(head, {1, prompt}), ours);
                }
                TokenDecoder decoder(*model, ours);
                for (int64_t t = prompt; t < c.block_size; ++t) {
                    INFO("position " << t);
                    std::vector<double> expected =
                        model->forward(raw::from_indices({ids[t]}, {1, 1}), theirs).to_vector();
                    CHECK(decoder.step(ids[t]) == expected);
                }
                REQUIRE(ours.length == theirs.length);
                for (size_t l = 0; l < ours.layers.size(); ++l) {
                    CHECK(cached(ours.layers[l].k, ours.length) == cached(theirs.layers[l].k, theirs.length));
                    CHECK(cached(ours.layers[l].v, ours.length) == cached(theirs.layers[l].v, theirs.length));
                }
            }
        }
    }
}

TEST_CASE("the decoder goes on after the cache is refilled", "[generate][decode]") {
    for (DType precision : {kFloat32, kBFloat16}) {
        INFO(dtype_name(precision) << " operands");
        TransformerConfig c = generation_config(Family::Llama);
        Generator gen(5);
        auto model = nn::make_model(c, gen, Options{kFloat32, kCPU});
        scramble(*model, gen);
        model->set_precision(precision);
        model->eval();
        NoGradGuard no_grad;
        std::vector<int64_t> ids = token_ids(c.block_size, c.vocab_size, 9);
        KVCache theirs = model->make_cache(1), ours = model->make_cache(1);
        TokenDecoder decoder(*model, ours);
        for (int64_t t = 0; t < 4; ++t) decoder.step(ids[t]);
        // generate_tokens' window moves: reset, refill through the model's forward, go on.
        ours.reset();
        std::vector<int64_t> window(ids.begin() + 2, ids.begin() + 6);
        model->forward(raw::from_indices(window, {1, 4}), ours);
        model->forward(raw::from_indices(window, {1, 4}), theirs);
        for (int64_t t = 6; t < 10; ++t)
            CHECK(decoder.step(ids[t]) == model->forward(raw::from_indices({ids[t]}, {1, 1}), theirs).to_vector());
    }
}

TEST_CASE("generate takes the decoder where the model has one, with the same tokens", "[generate][decode]") {
    // The cached generation of a decodable model now runs through the
    // decoder; the uncached one recomputes every position through the
    // model's forward. Greedy and sampled, across moves of the window.
    for (auto& [name, c] : decodable()) {
        Generator gen(12);
        auto model = nn::make_model(c, gen, Options{kFloat64, kCPU});
        scramble(*model, gen);
        model->eval();
        for (double temperature : {0.0, 1.0}) {
            SampleOptions cached{temperature, 0, true}, uncached = cached;
            uncached.use_cache = false;
            Generator g1(7), g2(7);
            std::vector<int64_t> prompt = token_ids(3, c.vocab_size, 2);
            INFO(name << ", temperature " << temperature);
            CHECK(generate_tokens(*model, prompt, 30, cached, g1) == generate_tokens(*model, prompt, 30, uncached, g2));
        }
    }
}

TEST_CASE("the decoder names what it does not take, and refuses bad steps", "[generate][decode][errors]") {
    auto why = [](TransformerConfig c, DType precision = kFloat32) {
        Generator gen(1);
        auto model = nn::make_model(c, gen);
        model->set_precision(precision);
        return TokenDecoder::unsupported(*model);
    };
    TransformerConfig post = generation_config(Family::GPT2), dyt = generation_config(Family::GPT2), diff = generation_config(Family::Llama);
    post.placement = Placement::Post;
    dyt.norm = NormKind::DyT;
    diff.attention = AttentionKind::Differential;
    CHECK(why(post).find("pre-norm") != std::string::npos);
    CHECK(why(dyt).find("Dynamic Tanh") != std::string::npos);
    CHECK(why(diff).find("differential") != std::string::npos);
    CHECK(why(generation_config(Family::GPT2)).empty());
    CHECK(why(generation_config(Family::GPT2), kBFloat16).empty());  // mixed precision: taken
    CHECK(why(generation_config(Family::Llama), kFloat16).empty());
    TransformerConfig scaled = generation_config(Family::GPT2);
    scaled.embed_scale0 = 2;
    CHECK(why(scaled).find("scaled") != std::string::npos);
    {
        TransformerConfig c = generation_config(Family::Llama);
        c.dropout = 0.1;
        Generator gen(4);
        auto model = nn::make_model(c, gen);
        model->train();
        CHECK(TokenDecoder::unsupported(*model).find("dropout") != std::string::npos);
        model->eval();  // no dropout in eval mode: the decoder takes it
        CHECK(TokenDecoder::unsupported(*model).empty());
        // Switched back to training after the decoder was made: a step refuses.
        KVCache cache = model->make_cache(1);
        TokenDecoder decoder(*model, cache);
        model->train();
        NoGradGuard no_grad;
        check_error([&] { decoder.step(1); }, {"changed since the decoder was made"});
    }
    {
        // 16-bit operands set layer by layer, not as the model's precision says.
        Generator gen(6);
        auto linears = nn::make_model(generation_config(Family::GPT2), gen);
        set_linear_operand_dtype(*linears, kBFloat16);
        CHECK(TokenDecoder::unsupported(*linears).find("products do not all round") != std::string::npos);
        auto attention = nn::make_model(generation_config(Family::GPT2), gen);
        set_attention_operand_dtype(*attention, kBFloat16);
        CHECK(TokenDecoder::unsupported(*attention).find("attention does not round") != std::string::npos);
        // float64 weights cannot be rounded to 16 bits (linear() takes float32 only).
        auto wide = nn::make_model(generation_config(Family::GPT2), gen, Options{kFloat64, kCPU});
        wide->set_precision(kBFloat16);
        CHECK(TokenDecoder::unsupported(*wide).find("not float32") != std::string::npos);
        // The precision changed after the decoder was made: a step refuses.
        auto model = nn::make_model(generation_config(Family::GPT2), gen);
        model->eval();
        model->set_precision(kBFloat16);
        KVCache cache = model->make_cache(1);
        TokenDecoder decoder(*model, cache);
        model->set_precision(kFloat32);
        NoGradGuard no_grad;
        check_error([&] { decoder.step(1); }, {"changed since the decoder was made", "precision"});
    }

    Generator gen(3);
    auto post_model = nn::make_model(post, gen);
    KVCache post_cache = post_model->make_cache(1);
    check_error([&] { TokenDecoder d(*post_model, post_cache); }, {"no one-token step", "pre-norm"});

    TransformerConfig c = generation_config(Family::GPT2);
    auto model = nn::make_model(c, gen);
    KVCache two = model->make_cache(2);
    check_error([&] { TokenDecoder d(*model, two); }, {"make_cache(1)"});
    KVCache cache = model->make_cache(1);
    TokenDecoder decoder(*model, cache);
    check_error([&] { decoder.step(1); }, {"NoGradGuard"});
    NoGradGuard no_grad;
    check_error([&] { decoder.step(23); }, {"23", "vocabulary of 23"});
    check_error([&] { decoder.step(-1); }, {"-1"});
    for (int64_t t = 0; t < c.block_size; ++t) decoder.step(t % c.vocab_size);
    check_error([&] { decoder.step(1); }, {"position 12", "12 positions"});
}

TEST_CASE("a decoder step takes memory only for the attention kernel's working buffers", "[generate][decode]") {
    // What the decoder is for: no tensors made per op. The allocator is asked
    // only by the attention kernel (its tiles; nothing else in a step makes a
    // tensor) and once for the logits handed back, where the model's forward
    // asks for every op's output.
    TransformerConfig c = generation_config(Family::GPT2);
    Generator gen(9);
    auto model = nn::make_model(c, gen);
    model->eval();
    NoGradGuard no_grad;
    auto asked = [] {
        AllocatorStats s = cpu::allocator_stats();
        return s.system_allocations + s.cache_hits;
    };
    KVCache theirs = model->make_cache(1), ours = model->make_cache(1);
    model->forward(raw::from_indices({1, 2, 3}, {1, 3}), theirs);
    model->forward(raw::from_indices({1, 2, 3}, {1, 3}), ours);
    TokenDecoder decoder(*model, ours);
    decoder.step(4);
    model->forward(raw::from_indices({4}, {1, 1}), theirs);

    const int64_t H = c.n_head, D = c.head_dim(), S = ours.length + 1;
    Tensor q = raw::zeros({1, H, 1, D}), k = raw::zeros({1, H, S, D}), v = raw::zeros({1, H, S, D});
    Tensor out = empty({1, H, 1, D}), lse = empty({H, 1});
    int64_t before = asked();
    backend_for(kCPU).attention.forward(q, k, v, false, 0.5, out, lse);
    const int64_t per_attention = asked() - before;

    before = asked();
    decoder.step(5);
    const int64_t per_step = asked() - before;
    before = asked();
    model->forward(raw::from_indices({5}, {1, 1}), theirs);
    const int64_t per_forward = asked() - before;
    INFO("decoder step " << per_step << ", model forward " << per_forward << ", one attention call " << per_attention);
    CHECK(per_step <= c.n_layer * per_attention + 1);
    CHECK(per_forward > 2 * per_step);

    // generate_tokens takes the decoder: 4 more tokens (no window move in a
    // block of 12) cost 4 decoder steps, not 4 forwards.
    SampleOptions greedy{0.0, 0, true};
    Generator g1(1), g2(1);
    before = asked();
    generate_tokens(*model, {1, 2}, 2, greedy, g1);
    const int64_t two = asked() - before;
    before = asked();
    generate_tokens(*model, {1, 2}, 6, greedy, g2);
    const int64_t six = asked() - before;
    INFO("generate: 2 tokens " << two << ", 6 tokens " << six);
    CHECK(six - two <= 4 * (c.n_layer * per_attention + 1));
}
