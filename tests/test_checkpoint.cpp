// safetensors files, Hugging Face layouts and config.json.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "data/safetensors.h"
#include "helpers.h"
#include "train/checkpoint.h"
#include "nn/hf.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;
using nc_test::temp_dir;
namespace fs = std::filesystem;

// Writes a safetensors file byte by byte, independently of normcore's writer.
static void write_raw(const fs::path& path, const std::string& header, const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put((char)(n >> (8 * i)));
    out << header << data;
}

static std::string bytes_of(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

TEST_CASE("safetensors round trip: dtypes, views, metadata", "[checkpoint]") {
    fs::path dir = temp_dir("normcore_st_roundtrip");
    Tensor a = raw::transpose(raw::reshape(raw::arange(0, 6), {2, 3}), 0, 1);  // non-contiguous float32
    Tensor b = raw::from_vector(std::vector<double>{1.5, -2.25}, {2});
    Tensor c = raw::from_indices({7, 8, 9}, {3});
    Tensor s = raw::scalar(3.0);
    data::write_safetensors((dir / "t.safetensors").string(), {{"a", a}, {"b", b}, {"c", c}, {"s", s}}, {{"step", "12"}});
    data::SafetensorsFile f = data::read_safetensors((dir / "t.safetensors").string());
    CHECK(f.tensors.size() == 4);
    CHECK(f.tensors["a"].shape() == Shape{3, 2});
    check_values(f.tensors["a"], {0, 3, 1, 4, 2, 5});
    CHECK(f.tensors["b"].dtype() == kFloat64);
    check_values(f.tensors["b"], {1.5, -2.25});
    CHECK(f.tensors["c"].to_int_vector() == std::vector<int64_t>{7, 8, 9});
    CHECK(f.tensors["s"].dim() == 0);
    CHECK(f.metadata["step"] == "12");
    CHECK(!fs::exists(dir / "t.safetensors.tmp"));
    // The header is padded so the data starts 8-byte aligned.
    std::ifstream in(dir / "t.safetensors", std::ios::binary);
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= (uint64_t)(unsigned char)in.get() << (8 * i);
    CHECK(n % 8 == 0);
    fs::remove_all(dir);
}

TEST_CASE("safetensors written by an independent writer load, F16 and BF16 included", "[checkpoint]") {
    fs::path dir = temp_dir("normcore_st_independent");
    float w[4] = {1.0f, -2.0f, 0.5f, 3.25f};
    uint16_t half[2] = {0x3C00, 0xC000};     // 1.0, -2.0 in IEEE half
    uint16_t bf16[2] = {0x3F80, 0x4040};     // 1.0, 3.0 in bfloat16
    std::string data = bytes_of(w, 16) + bytes_of(half, 4) + bytes_of(bf16, 4);
    std::string header = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                         R"("h":{"dtype":"F16","shape":[2],"data_offsets":[16,20]},"g":{"dtype":"BF16","shape":[2],"data_offsets":[20,24]}})";
    write_raw(dir / "x.safetensors", header, data);
    data::SafetensorsFile f = data::read_safetensors((dir / "x.safetensors").string());
    check_values(f.tensors["w"], {1, -2, 0.5, 3.25});
    check_values(f.tensors["h"], {1, -2});
    check_values(f.tensors["g"], {1, 3});
    CHECK(f.metadata["format"] == "pt");
    fs::remove_all(dir);
}

TEST_CASE("corrupt safetensors files are refused with the reason", "[checkpoint][errors]") {
    fs::path dir = temp_dir("normcore_st_corrupt");
    std::string four_floats(16, '\0');
    auto path = [&](const char* n) { return (dir / n).string(); };
    write_raw(dir / "json.safetensors", "{not json", four_floats);
    check_error([&] { data::read_safetensors(path("json.safetensors")); }, {"json.safetensors", "does not parse"});
    write_raw(dir / "trunc.safetensors", R"({"w":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", four_floats);
    check_error([&] { data::read_safetensors(path("trunc.safetensors")); }, {"'w'", "truncated"});
    write_raw(dir / "dtype.safetensors", R"({"w":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})", four_floats);
    check_error([&] { data::read_safetensors(path("dtype.safetensors")); }, {"'w'", "U8"});
    write_raw(dir / "shape.safetensors", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", four_floats);
    check_error([&] { data::read_safetensors(path("shape.safetensors")); }, {"'w'", "[3]", "12 bytes"});
    std::ofstream(dir / "short.safetensors") << "abc";
    check_error([&] { data::read_safetensors(path("short.safetensors")); }, {"too short"});
    {
        std::ofstream big(dir / "len.safetensors", std::ios::binary);
        for (int i = 0; i < 8; ++i) big.put((char)0x7f);
    }
    check_error([&] { data::read_safetensors(path("len.safetensors")); }, {"header length"});
    check_error([&] { data::read_safetensors(path("missing.safetensors")); }, {"cannot open"});
    fs::remove_all(dir);
}

TEST_CASE("a failed write leaves the existing file intact", "[checkpoint]") {
    fs::path dir = temp_dir("normcore_st_atomic");
    std::string file = (dir / "w.safetensors").string();
    data::write_safetensors(file, {{"x", raw::ones({3})}});
    fs::create_directories(file + ".tmp");  // the temporary file cannot be created now
    check_error([&] { data::write_safetensors(file, {{"x", raw::zeros({3})}}); }, {"cannot write"});
    check_values(data::read_safetensors(file).tensors["x"], {1, 1, 1});
    fs::remove_all(dir);
}

static nn::TransformerConfig small(nn::Family family) {
    nn::TransformerConfig c = family == nn::Family::GPT2 ? nn::gpt2_config() : family == nn::Family::Llama ? nn::llama_config() : nn::vit_config();
    c.n_layer = 2;
    c.n_embd = 16;
    c.n_head = 2;
    c.vocab_size = 20;
    c.block_size = 8;
    c.swiglu_multiple = 8;
    c.image_size = 8;
    c.patch_size = 4;
    c.channels = 3;
    c.num_classes = 5;
    return c;
}

TEST_CASE("Hugging Face layouts: GPT-2 Conv1D and ViT Conv2d round trip", "[checkpoint][hf]") {
    Generator g1(1), g2(2);
    nn::GPT2 a(small(nn::Family::GPT2), g1), b(small(nn::Family::GPT2), g2);
    std::map<std::string, Tensor> hf = nn::to_hf_layout(a);
    CHECK(hf["h.0.attn.c_attn.weight"].shape() == Shape{16, 48});  // Conv1D [in, out]
    CHECK(hf["h.0.mlp.c_proj.weight"].shape() == Shape{64, 16});
    CHECK(hf["wte.weight"].shape() == Shape{20, 16});
    // What HF files also carry: the mask buffer, a "transformer." prefix, a tied head.
    hf["h.0.attn.bias"] = raw::ones({1, 1, 8, 8});
    hf["lm_head.weight"] = hf["wte.weight"];
    hf["transformer.ln_f.weight"] = hf["ln_f.weight"];
    hf.erase("ln_f.weight");
    nn::load_hf_layout(b, hf);
    Tensor ids = raw::from_indices({1, 2, 3, 4}, {1, 4});
    check_values(b.forward(ids), a.forward(ids).to_vector(), 0);

    nn::ViT va(small(nn::Family::ViT), g1), vb(small(nn::Family::ViT), g2);
    std::map<std::string, Tensor> vhf = nn::to_hf_layout(va);
    CHECK(vhf["vit.embeddings.patch_embeddings.projection.weight"].shape() == Shape{16, 3, 4, 4});
    nn::load_hf_layout(vb, vhf);
    Tensor images = raw::randn({2, 3, 8, 8}, g1);
    check_values(vb.forward(images), va.forward(images).to_vector(), 0);

    nn::Llama la(small(nn::Family::Llama), g1), lb(small(nn::Family::Llama), g2);
    nn::load_hf_layout(lb, nn::to_hf_layout(la));
    check_values(lb.forward(ids), la.forward(ids).to_vector(), 0);

    std::map<std::string, Tensor> wrong = nn::to_hf_layout(la);
    wrong["model.norm.weight"] = raw::ones({17});
    wrong.erase("lm_head.weight");
    check_error([&] { nn::load_hf_layout(lb, wrong); }, {"mismatch: model.norm.weight", "missing: lm_head.weight"});
}

// Weights about to be loaded: the model is built without random init
// (nn::Options::random_init = false). It draws nothing from its generator,
// and after loading it computes what the randomly initialised model loaded
// the same way computes, to the last bit, for every family (differential
// attention's lambda vectors and DeepNorm's init included).
TEST_CASE("a model built for loaded weights draws no random numbers and loads the same", "[checkpoint][hf]") {
    for (nn::Family family : {nn::Family::GPT2, nn::Family::Llama, nn::Family::ViT}) {
        nn::TransformerConfig c = small(family);
        if (family == nn::Family::Llama) c.attention = nn::AttentionKind::Differential;
        if (family == nn::Family::ViT) c.placement = nn::Placement::DeepNorm;
        INFO(nn::to_string(family));
        Generator source_gen(3), random_gen(4), skipped_gen(4);
        auto source = nn::make_model(c, source_gen), random = nn::make_model(c, random_gen);
        auto skipped = nn::make_model(c, skipped_gen, nn::Options::for_loading());
        CHECK(skipped_gen.offset() == Generator(4).offset());  // nothing drawn
        CHECK(random_gen.offset() != skipped_gen.offset());
        nn::load_hf_layout(*random, nn::to_hf_layout(*source));
        nn::load_hf_layout(*skipped, nn::to_hf_layout(*source));
        // The same outputs: nothing the forward pass uses is left to the
        // skipped init outside what loading sets (a state_dict comparison
        // could not see such a tensor).
        Tensor input = family == nn::Family::ViT ? raw::randn({2, 3, 8, 8}, source_gen)
                                                 : raw::from_indices({1, 2, 3, 4, 5, 6}, {1, 6});
        CHECK(skipped->forward(input).to_vector() == random->forward(input).to_vector());
    }
}

TEST_CASE("config.json round trip for every family, variants included", "[checkpoint][hf]") {
    for (nn::Family f : {nn::Family::GPT2, nn::Family::Llama, nn::Family::ViT}) {
        nn::TransformerConfig c = small(f);
        c.placement = nn::Placement::GeoNorm;
        c.decay = nn::Decay::Sqrt;
        c.norm = nn::NormKind::DyT;
        c.dropout = 0.25;
        c.geo_sublayer_norm = true;
        nn::TransformerConfig back = nn::config_from_hf_json(nn::hf_config_json(c), "test");
        CHECK(back.family == f);
        CHECK(back.n_layer == 2);
        CHECK(back.n_embd == 16);
        CHECK(back.placement == nn::Placement::GeoNorm);
        CHECK(back.decay == nn::Decay::Sqrt);
        CHECK(back.norm == nn::NormKind::DyT);
        CHECK(back.dropout == 0.25);
        CHECK(back.geo_sublayer_norm);
        CHECK(nn::count_parameters(back) == nn::count_parameters(c));
    }
    // A config as transformers writes it for GPT-2 small.
    nn::TransformerConfig gpt2 = nn::config_from_hf_json(
        R"({"model_type":"gpt2","n_layer":12,"n_embd":768,"n_head":12,"vocab_size":50257,"n_positions":1024,"activation_function":"gelu_new"})", "x");
    CHECK(nn::count_parameters(gpt2) == 124439808);
    check_error([] { nn::config_from_hf_json(R"({"model_type":"bert"})", "cfg.json"); }, {"cfg.json", "bert"});
    check_error([] { nn::config_from_hf_json("{", "cfg.json"); }, {"cfg.json", "not valid JSON"});
    check_error([] { nn::config_from_hf_json(R"({"model_type":"gpt2","n_layer":"x"})", "cfg.json"); },
                {"cfg.json", "field n_layer must be a whole number from 1 to 1024", "\"x\""});
}

TEST_CASE("config.json: transformers' defaults when a field is absent, every numeric field read back", "[checkpoint][hf]") {
    // Defaults of GPT2Config, LlamaConfig and ViTConfig (transformers 4.x):
    // layer_norm_epsilon 1e-5, rms_norm_eps 1e-6 with rope_theta 1e4,
    // layer_norm_eps 1e-12. A reader that used one epsilon for all passes
    // every round trip (which writes the field) and fails here.
    CHECK(nn::config_from_hf_json(R"({"model_type":"gpt2"})", "x").norm_eps == 1e-5);
    nn::TransformerConfig llama = nn::config_from_hf_json(R"({"model_type":"llama"})", "x");
    CHECK(llama.norm_eps == 1e-6);
    CHECK(llama.rope_theta == 1e4);
    CHECK(nn::config_from_hf_json(R"({"model_type":"vit"})", "x").norm_eps == 1e-12);
    // Written and read back with values no default has.
    for (nn::Family f : {nn::Family::GPT2, nn::Family::Llama, nn::Family::ViT}) {
        nn::TransformerConfig c = small(f);
        c.norm_eps = 3.5e-7;
        c.rope_theta = 12345;
        c.dyt_alpha0 = 1.75;
        c.geo_step = 0.625;
        c.geo_radius = 2.5;
        c.geo_max_angle = 0.375;
        c.mlp_hidden = 40;
        nn::TransformerConfig back = nn::config_from_hf_json(nn::hf_config_json(c), "test");
        CHECK(back.norm_eps == c.norm_eps);
        CHECK(back.rope_theta == c.rope_theta);
        CHECK(back.dyt_alpha0 == c.dyt_alpha0);
        CHECK(back.geo_step == c.geo_step);
        CHECK(back.geo_radius == c.geo_radius);
        CHECK(back.geo_max_angle == c.geo_max_angle);
        CHECK(back.mlp_hidden == c.mlp_hidden);
    }
    // GPT-2's n_inner is the MLP's hidden size (null: 4 n_embd).
    CHECK(nn::config_from_hf_json(R"({"model_type":"gpt2","n_embd":64,"n_head":4,"n_inner":100})", "x").mlp_hidden == 100);
    // Fields that change the function in ways normcore does not implement are refused, never ignored.
    check_error([] { nn::config_from_hf_json(R"({"model_type":"llama","rope_scaling":{"type":"linear","factor":2.0}})", "c.json"); },
                {"c.json", "rope_scaling", "not supported"});
    CHECK(nn::config_from_hf_json(R"({"model_type":"llama","rope_scaling":null})", "x").n_layer == 32);
    check_error([] { nn::config_from_hf_json(R"({"model_type":"llama","hidden_act":"gelu"})", "c.json"); },
                {"c.json", "hidden_act", "\"gelu\""});
    check_error([] { nn::config_from_hf_json(R"({"model_type":"llama","mlp_bias":true})", "c.json"); }, {"mlp_bias"});
    CHECK(nn::config_from_hf_json(R"({"model_type":"llama","mlp_bias":true,"attention_bias":true})", "x").bias);
    check_error([] { nn::config_from_hf_json(R"({"model_type":"llama","hidden_size":64,"num_attention_heads":4,"head_dim":32})", "c.json"); },
                {"head_dim", "hidden_size / num_attention_heads"});
    CHECK(nn::config_from_hf_json(R"({"model_type":"llama","hidden_size":64,"num_attention_heads":4,"head_dim":16})", "x").n_embd == 64);
    check_error([] { nn::config_from_hf_json(R"({"model_type":"gpt2","scale_attn_by_inverse_layer_idx":true})", "c.json"); },
                {"scale_attn_by_inverse_layer_idx"});
}

// Issue 15, item 1: shapes whose element count or byte size exceed 64 bits.
TEST_CASE("safetensors shapes that overflow 64 bits are refused, not wrapped", "[safetensors][hostile]") {
    fs::path dir = temp_dir("normcore_st_overflow");
    auto path = [&](const char* name) { return (dir / name).string(); };
    // [2^31, 2^31] F32 needs 2^64 bytes: wrapped to 0 it would match offsets [0, 0].
    write_raw(dir / "wrap.safetensors", R"({"w":{"dtype":"F32","shape":[2147483648,2147483648],"data_offsets":[0,0]}})", "");
    check_error([&] { data::read_safetensors(path("wrap.safetensors")); }, {"wrap.safetensors", "'w'", "2^64 bytes"});
    write_raw(dir / "f64.safetensors", R"({"w":{"dtype":"F64","shape":[2305843009213693952,2],"data_offsets":[0,0]}})", "");
    check_error([&] { data::read_safetensors(path("f64.safetensors")); }, {"'w'", "2^64 bytes"});
    write_raw(dir / "numel.safetensors", R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})", "");
    check_error([&] { data::read_safetensors(path("numel.safetensors")); }, {"'w'", "2^63"});
    // With a zero dim the tensor is empty, whatever the other dims multiply to.
    write_raw(dir / "empty.safetensors", R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})", "");
    CHECK(data::read_safetensors(path("empty.safetensors")).tensors.at("w").numel() == 0);
    // A shape within 64 bits but beyond the file: refused before anything is allocated.
    write_raw(dir / "huge.safetensors", R"({"w":{"dtype":"F32","shape":[1000000000,1000],"data_offsets":[0,4000000000000]}})", "");
    check_error([&] { data::read_safetensors(path("huge.safetensors")); }, {"'w'", "truncated"});
    CHECK_THROWS_AS(shape_numel({int64_t(1) << 40, int64_t(1) << 40}), Error);
    fs::remove_all(dir);
}

// Issue 15, item 5: every config.json field read with its type and range checked.
TEST_CASE("config.json fields of the wrong type or out of range name the file and the field", "[config][hostile]") {
    auto refuse = [](const std::string& json, std::vector<std::string> fragments) {
        fragments.insert(fragments.begin(), "cfg.json");
        check_error([&] { nn::config_from_hf_json(json, "cfg.json"); }, fragments);
    };
    refuse(R"({"model_type":"gpt2","n_layer":6.6e22})", {"field n_layer", "got 6.5"});
    refuse(R"({"model_type":"gpt2","n_layer":1.5})", {"field n_layer", "whole number"});
    refuse(R"({"model_type":"gpt2","n_layer":1000000000})", {"field n_layer", "from 1 to 1024"});
    refuse(R"({"model_type":"gpt2","n_layer":-2})", {"field n_layer"});
    refuse(R"({"model_type":"gpt2","n_embd":18446744073709551615})", {"field n_embd"});
    refuse(R"({"model_type":5})", {"field model_type must be a string"});
    refuse(R"({"model_type":"gpt2","tie_word_embeddings":"yes"})", {"field tie_word_embeddings must be true or false"});
    refuse(R"({"model_type":"llama","rms_norm_eps":"small"})", {"field rms_norm_eps must be a number"});
    refuse(R"({"model_type":"gpt2","normcore":{"placement":7}})", {"normcore", "field placement must be a string"});
    refuse(R"({"model_type":"gpt2","normcore":[]})", {"field normcore must be an object"});
    refuse(R"([1, 2])", {"must be a JSON object"});
    refuse(R"({"model_type":"gpt2","n_embd":30,"n_head":4})", {"heads"});
    // 12.0 is 12.
    CHECK(nn::config_from_hf_json(R"({"model_type":"gpt2","n_layer":12.0})", "cfg.json").n_layer == 12);
}

// The guard on every write of weights (train/checkpoint.h): a weight or an
// optimizer moment holding NaN, +Inf or -Inf is refused with the file and the
// tensor named, and the good files already there stay byte for byte.
TEST_CASE("weights and checkpoints holding NaN or Inf are refused, and the old files are kept", "[checkpoint][errors]") {
    fs::path dir = temp_dir("normcore_nonfinite");
    Generator gen(3);
    std::shared_ptr<nn::TransformerModel> model = nn::make_model(small(nn::Family::GPT2), gen);
    optim::AdamW adam(optim::decay_groups(*model, 0.1), 1e-3);
    for (auto& [name, p] : model->named_parameters()) p.set_grad(raw::ones_like(p));
    adam.step();
    std::string weights = (dir / "w.safetensors").string(), pair = (dir / "pair").string() + "/",
                checkpoint = (dir / "checkpoint.safetensors").string();
    app::TrainingState state;
    state.step = 1;
    app::save_weights(*model, weights);
    app::save_weights(*model, pair);
    app::save_training_checkpoint(checkpoint, *model, adam, state);
    auto contents = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    std::vector<std::string> files = {weights, pair + "model.safetensors", pair + "config.json", checkpoint};
    std::vector<std::string> before;
    for (const std::string& f : files) before.push_back(contents(f));
    auto files_unchanged = [&] {
        for (size_t i = 0; i < files.size(); ++i) {
            INFO(files[i]);
            CHECK(contents(files[i]) == before[i]);
        }
        CHECK(!fs::exists(weights + ".tmp"));
        CHECK(!fs::exists(checkpoint + ".tmp"));
    };
    // One element of one weight, then of one moment, set to each bad value.
    auto [name, weight] = model->named_parameters()[3];
    Tensor moment = adam.state().at("exp_avg_sq.0.1");
    for (double bad : {(double)NAN, (double)INFINITY, -(double)INFINITY}) {
        INFO("value " << bad);
        Tensor kept = raw::clone(weight);
        raw::fill_(raw::narrow(raw::reshape(weight, {weight.numel()}), 0, 1, 1), bad);
        check_error([&] { app::save_weights(*model, weights); }, {"refusing to write '" + weights + "'", name, "NaN or Inf"});
        check_error([&] { app::save_weights(*model, pair); }, {"refusing to write", name});
        check_error([&] { app::save_training_checkpoint(checkpoint, *model, adam, state); },
                    {"refusing to write '" + checkpoint + "'", name});
        files_unchanged();
        raw::copy_(weight, kept);
        kept = raw::clone(moment);
        raw::fill_(raw::narrow(raw::reshape(moment, {moment.numel()}), 0, 0, 1), bad);
        check_error([&] { app::save_training_checkpoint(checkpoint, *model, adam, state); },
                    {"refusing to write '" + checkpoint + "'", "optimizer state exp_avg_sq.0.1"});
        files_unchanged();
        raw::copy_(moment, kept);
    }
    // Finite again: the writes go through.
    app::save_training_checkpoint(checkpoint, *model, adam, state);
    app::save_weights(*model, weights);
    fs::remove_all(dir);
}
