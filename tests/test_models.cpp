// GPT-2, Llama and ViT: parameter names and counts, gradcheck of a whole tiny
// model for every model x placement x norm combination, constants and
// initialization (the invariants are in test_model_invariants.cpp).
#include <cstdio>
#include <map>
#include <set>

#include "model_helpers.h"
#include "nn/models.h"
#include "optim/optimizer.h"

using namespace nc;
using namespace nc::nn;
using nc_test::check_error;
using nc_test::check_values;
using V = std::vector<Tensor>;
using nc_test::build;
using nc_test::f64;
using nc_test::run;
using nc_test::tiny;
using nc_test::tiny_input;

static std::vector<std::string> names(const Module& m) {
    std::vector<std::string> out;
    for (auto& [name, t] : m.named_parameters()) out.push_back(name);
    return out;
}

static bool has(const std::vector<std::string>& all, const std::string& name) {
    return std::find(all.begin(), all.end(), name) != all.end();
}

// GPT-2 small as OpenAI released it: 12 layers of width 768, 12 heads,
// 50,257 tokens, 1,024 positions.
static TransformerConfig gpt2_124m() {
    TransformerConfig c = gpt2_config();
    c.n_layer = 12;
    c.n_embd = 768;
    c.n_head = 12;
    c.vocab_size = 50257;
    c.block_size = 1024;
    return c;
}

TEST_CASE("GPT-2 124M counts exactly 124,439,808 parameters", "[models][slow]") {
    TransformerConfig c = gpt2_124m();
    CHECK(count_parameters(c) == 124439808);
    Generator gen(0);
    GPT2 model(c, gen);
    CHECK(model.num_parameters() == 124439808);
}

TEST_CASE("training FLOPs per token: 6 N without the looked-up tables, plus 12 L T C", "[models][constants]") {
    // By hand, from the published parameter counts. GPT-2 124M: N = 124,439,808
    // less its 1024 x 768 position table = 123,653,376.
    TransformerConfig g = gpt2_124m();
    CHECK(training_flops_per_token(g, 1024) == 6.0 * 123653376 + 12.0 * 12 * 1024 * 768);  // 855,166,464
    CHECK(training_flops_per_token(g, 512) == 6.0 * 123653376 + 12.0 * 12 * 512 * 768);    // T, not block_size
    // With RoPE there is no position table: all N counts.
    g.positions = Positions::Rope;
    CHECK(training_flops_per_token(g, 1024) == 6.0 * (double)count_parameters(g) + 12.0 * 12 * 1024 * 768);
    // Untied, the token table is only looked up and the head counts: 6 N
    // less the 50,257 x 768 table (the head, the same size, is in N).
    g.tie_embeddings = false;
    CHECK(training_flops_per_token(g, 1024) ==
          6.0 * ((double)count_parameters(g) - 50257.0 * 768) + 12.0 * 12 * 1024 * 768);
    // ViT-B/16 at 224: 86,567,656 parameters (1000 classes), 197 positions of 768.
    TransformerConfig v = vit_config();
    v.n_layer = 12;
    v.n_embd = 768;
    v.n_head = 12;
    v.image_size = 224;
    v.patch_size = 16;
    v.channels = 3;
    v.num_classes = 1000;
    CHECK(count_parameters(v) == 86567656);
    CHECK(training_flops_per_token(v, 197) == 6.0 * (86567656 - 197 * 768) + 12.0 * 12 * 197 * 768);
}

TEST_CASE("every DyT layer starts at the configured alpha0", "[models][constants]") {
    // A make_norm that passed DyT's default alpha0 (0.5) would train the
    // DyT study's every alpha0 as 0.5; 1.75 is no default anywhere.
    for (Family family : {Family::GPT2, Family::Llama, Family::ViT}) {
        for (Placement placement : {Placement::Pre, Placement::Sandwich}) {
            TransformerConfig c = tiny(family);
            c.norm = NormKind::DyT;
            c.placement = placement;
            c.dyt_alpha0 = 1.75;
            Generator gen(4);
            auto model = build(c, gen);
            int alphas = 0;
            for (auto& [name, t] : model->named_parameters())
                if (name.size() >= 6 && name.compare(name.size() - 6, 6, ".alpha") == 0) {
                    INFO(name);
                    CHECK(t.item() == 1.75);
                    ++alphas;
                }
            CHECK(alphas == (placement == Placement::Sandwich ? 4 : 2) * 2 + 1);  // per block, and the final norm
        }
    }
}

TEST_CASE("the DyT recipe's options: alpha0 before attention, the gains, the embedding scale", "[models][constants]") {
    // The DyT paper's LLaMA recipe starts the DyT before attention at a
    // larger alpha0 than the others; the final DyT and the others have their
    // own initial gains; the embedding scale is one parameter, starting at
    // its value, and the matching-LayerNorm gain divides by it.
    for (Family family : {Family::GPT2, Family::Llama}) {
        TransformerConfig c = tiny(family);
        c.norm = NormKind::DyT;
        c.dyt_alpha0 = 0.25;
        c.dyt_alpha0_attn = 1.75;
        c.dyt_gamma0 = 3.5;
        c.dyt_final_gamma0 = 9.5;
        c.embed_scale0 = 6.5;
        Generator gen(4);
        auto model = build(c, gen);
        const char* before_attention = family == Family::GPT2 ? ".ln_1." : ".input_layernorm.";
        const char* final_norm = family == Family::GPT2 ? "ln_f." : "model.norm.";
        int alphas = 0, gains = 0, scales = 0;
        for (auto& [name, t] : model->named_parameters()) {
            INFO(name);
            bool is_final = name.rfind(final_norm, 0) == 0;
            if (name.size() > 6 && name.compare(name.size() - 6, 6, ".alpha") == 0) {
                CHECK(t.item() == (name.find(before_attention) != std::string::npos ? 1.75 : 0.25));
                ++alphas;
            } else if (name.find("embed_scale") != std::string::npos) {
                CHECK(t.numel() == 1);
                CHECK(t.item() == 6.5);
                ++scales;
            } else if ((name.find("ln_") != std::string::npos || name.find("layernorm") != std::string::npos ||
                        is_final) && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) {
                std::vector<double> w = t.to_vector();
                for (double v : w) CHECK(v == (is_final ? 9.5 : 3.5));
                ++gains;
            }
        }
        CHECK(alphas == 2 * 2 + 1);
        CHECK(gains == 2 * 2 + 1);
        CHECK(scales == 1);
        CHECK(model->num_parameters() == count_parameters(c));
        // The stream starts s times larger: the last gain that matches a LayerNorm is s times smaller.
        TransformerConfig unscaled = c;
        unscaled.embed_scale0 = 0;
        CHECK(c.dyt_final_gamma_matching_layernorm() == Approx(unscaled.dyt_final_gamma_matching_layernorm() / 6.5));
    }
    // The scale multiplies the embeddings: with s = 2 the stream entering block 0 is twice the unscaled one.
    TransformerConfig c = tiny(Family::GPT2);
    Generator gen(5), gen2(5);
    auto plain = build(c, gen);
    c.embed_scale0 = 2;
    auto scaled = build(c, gen2);
    Tensor ids = raw::from_indices({1, 2, 3}, {1, 3});
    std::vector<Tensor> s1, s2;
    {
        NoGradGuard no_grad;
        plain->forward(ids, &s1);
        scaled->forward(ids, &s2);
    }
    std::vector<double> a = s1[0].to_vector(), b = s2[0].to_vector();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(b[i] == Approx(2 * a[i]));
    TransformerConfig v = tiny(Family::ViT);
    v.embed_scale0 = 2;
    check_error([&] { ViT m(v, gen); }, {"embedding scale", "vit"});
    TransformerConfig bad_alpha = tiny(Family::GPT2);
    bad_alpha.dyt_alpha0_attn = -1;
    check_error([&] { GPT2 m(bad_alpha, gen); }, {"alpha0", "-1"});
}

TEST_CASE("parameter names follow Hugging Face", "[models][names]") {
    Generator gen(1);
    std::vector<std::string> g = names(*build(tiny(Family::GPT2), gen));
    for (const char* n : {"wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.ln_1.bias", "h.0.attn.c_attn.weight",
                          "h.0.attn.c_attn.bias", "h.0.attn.c_proj.weight", "h.0.ln_2.weight", "h.1.mlp.c_fc.weight",
                          "h.1.mlp.c_proj.bias", "ln_f.weight", "ln_f.bias"})
        CHECK(has(g, n));
    CHECK(!has(g, "lm_head.weight"));  // tied to wte
    std::vector<std::string> l = names(*build(tiny(Family::Llama), gen));
    for (const char* n : {"model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                          "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                          "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
                          "model.layers.1.post_attention_layernorm.weight", "model.layers.1.mlp.gate_proj.weight",
                          "model.layers.1.mlp.up_proj.weight", "model.layers.1.mlp.down_proj.weight", "model.norm.weight",
                          "lm_head.weight"})
        CHECK(has(l, n));
    CHECK(!has(l, "model.layers.0.self_attn.q_proj.bias"));
    std::vector<std::string> v = names(*build(tiny(Family::ViT), gen));
    for (const char* n : {"vit.embeddings.cls_token", "vit.embeddings.position_embeddings",
                          "vit.embeddings.patch_embeddings.projection.weight",
                          "vit.encoder.layer.0.layernorm_before.weight", "vit.encoder.layer.0.attention.attention.query.weight",
                          "vit.encoder.layer.0.attention.attention.key.bias", "vit.encoder.layer.0.attention.output.dense.weight",
                          "vit.encoder.layer.0.layernorm_after.bias", "vit.encoder.layer.1.intermediate.dense.weight",
                          "vit.encoder.layer.1.output.dense.weight", "vit.layernorm.weight", "classifier.weight", "classifier.bias"})
        CHECK(has(v, n));
}

// The names of the parameters decay_groups puts in its decayed group.
static std::set<std::string> decayed_names(const TransformerModel& model) {
    std::vector<optim::ParamGroup> groups = optim::decay_groups(model, 0.1);
    std::set<std::string> out;
    for (auto& [name, p] : model.named_parameters())
        for (const Tensor& d : groups[0].params)
            if (d.impl() == p.impl()) out.insert(name);
    return out;
}

TEST_CASE("weight decay falls on exactly the Linear weights of every model", "[models][optim]") {
    // minGPT's rule, and timm's for ViT: matrices that multiply activations
    // are decayed; embedding tables, positions, the class token, norms and
    // biases are not. ViT's patch projection is a Linear: decayed (a rule
    // that skips every name containing "embed" missed it).
    Generator gen(3);
    std::set<std::string> gpt2, llama, vit = {"vit.embeddings.patch_embeddings.projection.weight", "classifier.weight"};
    for (std::string l : {"0", "1"}) {
        for (const char* n : {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"})
            gpt2.insert("h." + l + "." + n);
        for (const char* n : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                              "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                              "mlp.down_proj.weight"})
            llama.insert("model.layers." + l + "." + n);
        for (const char* n : {"attention.attention.query.weight", "attention.attention.key.weight",
                              "attention.attention.value.weight", "attention.output.dense.weight",
                              "intermediate.dense.weight", "output.dense.weight"})
            vit.insert("vit.encoder.layer." + l + "." + n);
    }
    llama.insert("lm_head.weight");
    CHECK(decayed_names(*build(tiny(Family::GPT2), gen)) == gpt2);
    CHECK(decayed_names(*build(tiny(Family::Llama), gen)) == llama);
    CHECK(decayed_names(*build(tiny(Family::ViT), gen)) == vit);
    // Every parameter lands in exactly one group.
    auto model = build(tiny(Family::ViT), gen);
    std::vector<optim::ParamGroup> groups = optim::decay_groups(*model, 0.1);
    CHECK(groups[0].params.size() + groups[1].params.size() == model->named_parameters().size());
    CHECK(groups[1].weight_decay == 0.0);
}

TEST_CASE("placements own exactly the norms they use", "[models][names]") {
    Generator gen(2);
    TransformerConfig c = tiny(Family::GPT2);
    c.placement = Placement::GeoNorm;
    std::vector<std::string> geo = names(*build(c, gen));
    CHECK(!has(geo, "h.0.ln_1.weight"));
    CHECK(!has(geo, "h.0.ln_2.weight"));
    CHECK(has(geo, "ln_f.weight"));
    c.geo_learnable_step = true;
    CHECK(has(names(*build(c, gen)), "h.1.mlp_step"));
    c.placement = Placement::Post;
    std::vector<std::string> post = names(*build(c, gen));
    CHECK(has(post, "h.0.ln_1.weight"));
    CHECK(!has(post, "ln_f.weight"));
    c.placement = Placement::Sandwich;
    std::vector<std::string> sandwich = names(*build(c, gen));
    CHECK(has(sandwich, "h.0.ln_attn_out.weight"));
    CHECK(has(sandwich, "h.0.ln_mlp_out.weight"));
    c.norm = NormKind::None;
    std::vector<std::string> none = names(*build(c, gen));
    CHECK(!has(none, "h.0.ln_1.weight"));
    c.norm = NormKind::DyT;
    CHECK(has(names(*build(c, gen)), "h.0.ln_1.alpha"));
    c.attention = AttentionKind::Differential;
    std::vector<std::string> diff = names(*build(c, gen));
    CHECK(has(diff, "h.0.attn.lambda_q1"));
    CHECK(has(diff, "h.0.attn.subln.weight"));
    c.attention = AttentionKind::DifferentialRegime;  // the same lambdas, a normalization without parameters
    std::vector<std::string> regime = names(*build(c, gen));
    CHECK(has(regime, "h.0.attn.lambda_q1"));
    CHECK(!has(regime, "h.0.attn.subln.weight"));
}

TEST_CASE("parameter counts match the closed form for every combination", "[models][count]") {
    Generator gen(3);
    for (Family family : {Family::GPT2, Family::Llama, Family::ViT})
        for (Placement p : {Placement::Pre, Placement::Post, Placement::Sandwich, Placement::DeepNorm, Placement::GeoNorm})
            for (NormKind n : {NormKind::LayerNorm, NormKind::RMSNorm, NormKind::DyT, NormKind::None})
                for (AttentionKind a : {AttentionKind::Standard, AttentionKind::Differential, AttentionKind::DifferentialRegime}) {
                    TransformerConfig c = tiny(family);
                    c.placement = p;
                    c.norm = n;
                    c.attention = a;
                    c.geo_learnable_step = p == Placement::GeoNorm;
                    INFO(to_string(p) << " " << to_string(n) << " " << to_string(a));
                    CHECK(build(c, gen, {})->num_parameters() == count_parameters(c));
                }
    TransformerConfig gqa = tiny(Family::Llama);
    gqa.n_head = 4;
    gqa.n_kv_head = 2;
    gqa.n_embd = 16;
    CHECK(build(gqa, gen, {})->num_parameters() == count_parameters(gqa));
}

// gradcheck of a whole model: every parameter tensor, a few elements each.
static void check_model_gradients(const TransformerConfig& c, const std::string& label) {
    Generator gen(4);
    auto model = build(c, gen);
    Tensor input = tiny_input(c, gen);
    V params = model->parameters();
    GradcheckOptions options;
    options.max_elements_per_input = 3;
    GradcheckResult r = gradcheck([&](const V&) { return run(*model, input); }, params, options);
    std::printf("gradcheck %-40s %s (%zu parameter tensors)\n", label.c_str(), r.passed ? "passed" : "FAILED", params.size());
    INFO(label << ": " << r.report());
    CHECK(r.passed);
}

TEST_CASE("gradcheck: every model x placement x norm", "[models][gradcheck][slow]") {
    for (Family family : {Family::GPT2, Family::Llama, Family::ViT})
        for (Placement p : {Placement::Pre, Placement::Post, Placement::Sandwich, Placement::DeepNorm, Placement::GeoNorm})
            for (NormKind n : {NormKind::LayerNorm, NormKind::RMSNorm, NormKind::DyT, NormKind::None}) {
                TransformerConfig c = tiny(family);
                c.placement = p;
                c.norm = n;
                if (p == Placement::GeoNorm) c.geo_learnable_step = true;
                std::string fam = to_string(family);
                check_model_gradients(c, std::string(fam) + " " + to_string(p) + " " + to_string(n));
            }
}

TEST_CASE("gradcheck: differential attention, GQA, SwiGLU/GELU swaps, geonorm decays", "[models][gradcheck][slow]") {
    for (Family family : {Family::GPT2, Family::Llama, Family::ViT}) {
        TransformerConfig c = tiny(family);
        c.attention = AttentionKind::Differential;
        c.n_embd = 16;  // head size 8: sub-heads of 4 (RoPE needs an even sub-head)
        std::string fam = to_string(family);
        check_model_gradients(c, std::string(fam) + " differential attention (rope for llama)");
        c.attention = AttentionKind::DifferentialRegime;
        check_model_gradients(c, std::string(fam) + " differential-regime attention");
    }
    TransformerConfig gqa = tiny(Family::Llama);
    gqa.n_head = 4;
    gqa.n_kv_head = 2;
    gqa.n_embd = 16;
    check_model_gradients(gqa, "llama grouped-query (4 q heads, 2 kv)");
    TransformerConfig swap = tiny(Family::GPT2);
    swap.mlp = MlpKind::SwiGlu;
    swap.positions = Positions::Rope;
    check_model_gradients(swap, "gpt2 swiglu rope");
    TransformerConfig llama_gelu = tiny(Family::Llama);
    llama_gelu.mlp = MlpKind::Gelu;
    llama_gelu.positions = Positions::Learned;
    llama_gelu.tie_embeddings = true;
    check_model_gradients(llama_gelu, "llama gelu learned positions tied");
    for (Family family : {Family::GPT2, Family::Llama}) {
        TransformerConfig recipe = tiny(family);  // the DyT paper's LLaMA recipe: the embedding scale included
        recipe.norm = NormKind::DyT;
        recipe.embed_scale0 = 2.5;
        recipe.dyt_alpha0_attn = 0.8;
        recipe.dyt_alpha0 = 0.2;
        check_model_gradients(recipe, to_string(family) + " dyt with embedding scale");
    }
    for (Decay d : {Decay::Harmonic, Decay::Sqrt, Decay::Linear}) {
        TransformerConfig geo = tiny(Family::GPT2);
        geo.placement = Placement::GeoNorm;
        geo.decay = d;
        geo.geo_sublayer_norm = true;
        check_model_gradients(geo, "gpt2 geonorm decay " + to_string(d));
    }
    TransformerConfig bounded = tiny(Family::GPT2);
    bounded.placement = Placement::GeoNorm;
    bounded.geo_learnable_step = true;  // the bound depends on the step: its gradient flows there too
    bounded.geo_max_angle = 0.3;
    bounded.geo_step = 300;             // turns of about 0.3 rad at this init: the bound bites
    check_model_gradients(bounded, "gpt2 geonorm bounded angle 0.3");
}

TEST_CASE("constants: DeepNorm, differential attention, SwiGLU hidden size, GeoNorm decay", "[models][constants]") {
    CHECK(deepnorm_alpha(24) == Approx(2.632).epsilon(1e-3));
    CHECK(deepnorm_beta(24) == Approx(0.2686).epsilon(1e-3));
    CHECK(diff_lambda_init(0) == Approx(0.2));
    CHECK(diff_lambda_init(10) == Approx(0.8 - 0.6 * std::exp(-3.0)));
    CHECK(swiglu_hidden(4096, 256) == 11008);
    CHECK(swiglu_hidden(512, 256) == 1536);
    CHECK(geonorm_step(Decay::Harmonic, 1.0, 3, 8) == Approx(0.25));
    CHECK(geonorm_step(Decay::Sqrt, 2.0, 3, 8) == Approx(1.0));
    CHECK(geonorm_step(Decay::Linear, 1.0, 0, 8) == Approx(1.0));
    CHECK(geonorm_step(Decay::Linear, 1.0, 7, 8) == Approx(0.125));
}

// The sample standard deviation of a weight's entries.
static double entry_std(const Tensor& w) {
    std::vector<double> xs = raw::contiguous(w).to_vector();
    double mean = 0, total = 0;
    for (double x : xs) mean += x / (double)xs.size();
    for (double x : xs) total += (x - mean) * (x - mean);
    return std::sqrt(total / (double)(xs.size() - 1));
}

TEST_CASE("DeepNorm initializes as DeepNet does: Xavier-normal, gain beta on v, out, fc1, fc2", "[models][constants]") {
    // Expected std: gain * sqrt(2 / (fan_in + fan_out)) (DeepNet, Algorithm 1).
    // With 4,096+ entries per matrix the sample std is within ~2% of it; 6%
    // is the tolerance. GPT-2's own 1/sqrt(2L) must not come on top of beta.
    for (Family family : {Family::GPT2, Family::Llama}) {
        TransformerConfig c = tiny(family);
        c.n_embd = 64;
        c.n_head = 4;
        c.n_layer = 3;
        c.placement = Placement::DeepNorm;
        Generator gen(8);
        auto model = build(c, gen);
        double beta = deepnorm_beta(3);
        auto xavier = [](const Tensor& w, double gain) { return gain * std::sqrt(2.0 / (double)(w.size(0) + w.size(1))); };
        for (const auto& block : model->blocks()) {
            for (const Tensor& w : block->attn->query_key_weights()) CHECK(entry_std(w) == Approx(xavier(w, 1)).epsilon(0.06));
            std::vector<Tensor> scaled = block->attn->value_weights();
            scaled.push_back(block->attn->output_weights()[0]);
            for (const auto& l : {block->mlp.fc, block->mlp.up, block->mlp.proj})
                if (l) scaled.push_back(l->weight);
            CHECK(scaled.size() == (family == Family::GPT2 ? 4u : 5u));
            for (const Tensor& w : scaled) CHECK(entry_std(w) == Approx(xavier(w, beta)).epsilon(0.06));
        }
        CHECK(model->blocks()[0]->residual_alpha == Approx(std::pow(6.0, 0.25)));
        // The other placements keep GPT-2's 0.02 (and 0.02/sqrt(2L) on the residual projections).
        c.placement = Placement::Pre;
        Generator gen2(8);
        auto pre = build(c, gen2);
        CHECK(entry_std(pre->blocks()[0]->attn->query_key_weights()[0]) == Approx(0.02).epsilon(0.06));
        if (family == Family::GPT2)
            CHECK(entry_std(pre->blocks()[0]->attn->output_weights()[0]) == Approx(0.02 / std::sqrt(6.0)).epsilon(0.06));
    }
}

TEST_CASE("GPT-2, Llama and ViT initialize as their reference code does", "[models][constants]") {
    // Sample stds of 4,096+ entries are within ~2% of the true std; 6% is
    // the tolerance, far below the gaps between the plausible wrong scales
    // (0.02 vs 0.02/sqrt(L) vs 0.02/sqrt(2L) at L = 4 is 0.02, 0.01, 0.0071).
    const double L = 4;
    Generator gen(21);
    for (Family family : {Family::GPT2, Family::Llama, Family::ViT}) {
        TransformerConfig c = tiny(family);
        c.n_embd = 64;
        c.n_head = 4;
        c.n_layer = (int)L;
        c.vocab_size = 200;
        c.block_size = 64;
        c.image_size = 32;  // 64 patches of 4 x 4 x 2 = 32 values
        auto model = build(c, gen);
        std::map<std::string, Tensor> p;
        for (auto& [name, t] : model->named_parameters()) p[name] = t;
        INFO(to_string(family));
        if (family == Family::GPT2) {
            // GPT-2 (and nanoGPT): N(0, 0.02) everywhere, N(0, 0.02/sqrt(2L))
            // on the two projections that write into the residual stream.
            for (const char* n : {"wte.weight", "wpe.weight", "h.1.attn.c_attn.weight", "h.1.mlp.c_fc.weight"})
                CHECK(entry_std(p.at(n)) == Approx(0.02).epsilon(0.06));
            for (const char* n : {"h.1.attn.c_proj.weight", "h.1.mlp.c_proj.weight"})
                CHECK(entry_std(p.at(n)) == Approx(0.02 / std::sqrt(2 * L)).epsilon(0.06));
            CHECK(raw::sum(raw::abs(p.at("h.1.mlp.c_fc.bias"))).item() == 0.0);
        } else if (family == Family::Llama) {
            // Hugging Face's Llama: N(0, initializer_range = 0.02) for every matrix, no depth scaling.
            for (const char* n : {"model.embed_tokens.weight", "lm_head.weight", "model.layers.1.self_attn.q_proj.weight",
                                  "model.layers.1.self_attn.o_proj.weight", "model.layers.1.mlp.down_proj.weight"})
                CHECK(entry_std(p.at(n)) == Approx(0.02).epsilon(0.06));
        } else {
            // ViT (Google's and timm's): Xavier-uniform matrices, U(-b, b) with
            // b = sqrt(6 / (fan_in + fan_out)), so std b / sqrt(3); MLP biases
            // N(0, 1e-6); positions N(0, 0.02); class token and head zero.
            for (const char* n : {"vit.embeddings.patch_embeddings.projection.weight",
                                  "vit.encoder.layer.1.attention.attention.query.weight",
                                  "vit.encoder.layer.1.attention.output.dense.weight",
                                  "vit.encoder.layer.1.intermediate.dense.weight", "vit.encoder.layer.1.output.dense.weight"}) {
                const Tensor& w = p.at(n);
                double bound = std::sqrt(6.0 / (double)(w.size(0) + w.size(1)));
                CHECK(entry_std(w) == Approx(bound / std::sqrt(3.0)).epsilon(0.06));
                CHECK(raw::max(raw::abs(w)).item() <= bound);
            }
            CHECK(entry_std(p.at("vit.encoder.layer.1.intermediate.dense.bias")) == Approx(1e-6).epsilon(0.25));
            CHECK(entry_std(p.at("vit.embeddings.position_embeddings")) == Approx(0.02).epsilon(0.06));
            for (const char* n : {"vit.embeddings.cls_token", "classifier.weight", "classifier.bias"})
                CHECK(raw::sum(raw::abs(p.at(n))).item() == 0.0);
        }
    }
}

TEST_CASE("bad configurations are refused with a clear message", "[models][errors]") {
    Generator gen(9);
    TransformerConfig c = tiny(Family::GPT2);
    c.n_head = 3;
    check_error([&] { GPT2 m(c, gen); }, {"--heads 3", "--width 8"});
    TransformerConfig v = tiny(Family::ViT);
    v.image_size = 10;
    check_error([&] { ViT m(v, gen); }, {"image size 10", "patch size 4"});
    check_error([] { parse_placement("middle"); }, {"unknown placement 'middle'", "geonorm"});
    check_error([] { parse_norm("groupnorm"); }, {"unknown norm 'groupnorm'"});
    check_error([] { parse_family("bert"); }, {"unknown model 'bert'", "gpt2, llama, vit"});
    for (Family f : {Family::GPT2, Family::Llama, Family::ViT}) {
        CHECK(parse_family(to_string(f)) == f);
        CHECK(default_config(f).family == f);
    }
    TransformerConfig k = tiny(Family::Llama);
    k.n_kv_head = 3;
    check_error([&] { Llama m(k, gen); }, {"--kv-heads 3"});
    GPT2 ok(tiny(Family::GPT2), gen);
    check_error([&] { ok.forward(raw::from_indices({1, 2, 3, 4, 5, 6, 7}, {1, 7})); }, {"GPT2", "exceeds the block size 6"});
    check_error([&] { ok.forward(raw::zeros({1, 3})); }, {"GPT2", "int64"});
    ViT vit(tiny(Family::ViT), gen);
    check_error([&] { vit.forward(raw::zeros({1, 2, 7, 7})); }, {"ViT", "[B, 2, 8, 8]"});
}

TEST_CASE("residual dropout acts in training mode only", "[models]") {
    Generator gen(10);
    TransformerConfig c = tiny(Family::GPT2);
    c.dropout = 0.5;
    GPT2 model(c, gen, f64);
    Tensor ids = raw::from_indices({1, 5, 10, 3}, {1, 4});
    CHECK(model.forward(ids).to_vector() != model.forward(ids).to_vector());  // new masks each call
    model.eval();
    CHECK(model.forward(ids).to_vector() == model.forward(ids).to_vector());
}

TEST_CASE("every model runs through the base class's forward; a ViT refuses a key/value cache", "[models]") {
    for (Family family : {Family::GPT2, Family::Llama, Family::ViT}) {
        Generator gen(3);
        TransformerConfig c = tiny(family);
        std::shared_ptr<TransformerModel> m = make_model(c, gen, f64);
        Tensor input = tiny_input(c, gen);
        // The base pointer reaches the family's own forward: the logits'
        // shape is the family's, and the stream holds L + 1 tensors.
        std::vector<Tensor> stream;
        Tensor logits = m->forward(input, &stream);
        CHECK(stream.size() == (size_t)c.n_layer + 1);
        if (family == Family::ViT) {
            CHECK(logits.shape() == Shape{2, c.num_classes});
            KVCache cache = m->make_cache(1);
            check_error([&] { m->forward(raw::from_indices({1}, {1, 1}), cache); }, {"forward", "a vit generates none"});
        } else {
            CHECK(logits.shape() == Shape{2, 4, c.vocab_size});
            KVCache cache = m->make_cache(2);
            NoGradGuard no_grad;  // the cache is for inference
            Tensor cached = m->forward(input, cache);  // the whole prompt at once: the full forward's logits
            check_values(cached, logits.to_vector(), 1e-12);
        }
    }
}
