// Diagnostics against cases whose answers are known exactly.
#include "helpers.h"
#include "optim/optimizer.h"
#include "analysis/diagnostics.h"
#include "analysis/eigen.h"
#include "autograd/ops_nn.h"
#include "nn/config.h"

using namespace nc;
using nc_test::check_error;

// A random orthogonal n x n matrix: the eigenvectors of a random symmetric one.
static std::vector<double> random_orthogonal(int64_t n, uint64_t seed) {
    Generator gen(seed);
    std::vector<double> r = raw::randn({n, n}, gen, kFloat64).to_vector();
    return diag::symmetric_eigen(r, n, true).vectors;
}

// Q diag(d) Q^T.
static std::vector<double> with_spectrum(const std::vector<double>& q, const std::vector<double>& d) {
    int64_t n = (int64_t)d.size();
    std::vector<double> a(n * n, 0.0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t k = 0; k < n; ++k) a[i * n + j] += q[i * n + k] * d[k] * q[j * n + k];
    return a;
}

TEST_CASE("Jacobi eigenvalues and eigenvectors", "[diagnostics][eigen]") {
    diag::SymmetricEigen two = diag::symmetric_eigen({2, 1, 1, 2}, 2, true);
    CHECK(two.values[0] == Approx(1.0).epsilon(1e-14));
    CHECK(two.values[1] == Approx(3.0).epsilon(1e-14));
    // A random symmetric matrix: A v = lambda v for every pair, V orthonormal.
    const int64_t n = 12;
    Generator gen(3);
    std::vector<double> r = raw::randn({n, n}, gen, kFloat64).to_vector(), a(n * n);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) a[i * n + j] = r[i * n + j] + r[j * n + i];
    diag::SymmetricEigen e = diag::symmetric_eigen(a, n, true);
    CHECK(std::is_sorted(e.values.begin(), e.values.end()));
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) {
            double av = 0;
            for (int64_t k = 0; k < n; ++k) av += a[i * n + k] * e.vectors[k * n + j];
            REQUIRE(av == Approx(e.values[j] * e.vectors[i * n + j]).margin(1e-10));
        }
    // A spectrum we chose, hidden by a random rotation, comes back (also tiny and repeated values).
    std::vector<double> spectrum = {-3, 1e-9, 0.5, 0.5, 2, 7, 1e3, 4};
    diag::SymmetricEigen back = diag::symmetric_eigen(with_spectrum(random_orthogonal(8, 4), spectrum), 8);
    std::sort(spectrum.begin(), spectrum.end());
    for (size_t i = 0; i < spectrum.size(); ++i) CHECK(back.values[i] == Approx(spectrum[i]).margin(1e-11));
    check_error([] { diag::symmetric_eigen({1, 2, 3}, 2); }, {"symmetric_eigen", "2 x 2"});
}

TEST_CASE("effective rank of k equal singular values is k", "[diagnostics]") {
    for (int k : {1, 3, 7}) {
        std::vector<double> d(10, 0.0);
        for (int i = 0; i < k; ++i) d[i] = 2.5;
        Tensor a = raw::from_vector(with_spectrum(random_orthogonal(10, 5 + k), d), {10, 10});
        INFO("k = " << k);
        CHECK(diag::effective_rank(a) == Approx((double)k).epsilon(1e-6));
    }
    // Unequal singular values give less than the rank; a wide matrix works too.
    Tensor wide = raw::from_vector(std::vector<double>{3, 0, 0, 0, 1, 0}, {2, 3});
    std::vector<double> s = diag::singular_values(wide);
    CHECK(s[0] == Approx(3.0));
    CHECK(s[1] == Approx(1.0));
    double p = 0.75, q = 0.25;
    CHECK(diag::effective_rank(wide) == Approx(std::exp(-(p * std::log(p) + q * std::log(q)))));
    check_error([] { diag::effective_rank(raw::zeros({2, 2, 2})); }, {"singular_values", "2-D"});
}

TEST_CASE("a power law's exponent is recovered from its samples", "[diagnostics]") {
    // Pareto samples: x = xmin (1 - u)^(-1 / (alpha - 1)) has density ~ x^-alpha above xmin.
    for (double alpha : {2.5, 4.0}) {
        Generator gen(7);
        std::vector<double> u = raw::rand({4000}, gen, kFloat64).to_vector(), x;
        for (double v : u) x.push_back(0.5 * std::pow(1 - v, -1 / (alpha - 1)));
        diag::PowerLawFit fit = diag::fit_power_law(x);
        INFO("alpha " << alpha << ": fit " << fit.alpha << " xmin " << fit.xmin << " D " << fit.ks_distance);
        CHECK(std::abs(fit.alpha - alpha) < 0.2);
        CHECK(fit.ks_distance < 0.05);
        CHECK(fit.sigma > 0);
    }
    check_error([] { diag::fit_power_law({1.0}); }, {"fit_power_law", "at least 2"});
}

TEST_CASE("isometry is 1 for orthogonal representations and small for collapsed ones", "[diagnostics]") {
    std::vector<double> q = random_orthogonal(6, 8);
    Tensor orthogonal = raw::mul(raw::from_vector(q, {6, 6}), 3.0);  // rows orthogonal, equal norms
    CHECK(diag::isometry(orthogonal) == Approx(1.0).epsilon(1e-8));
    CHECK(diag::isometry_gap(orthogonal) == Approx(0.0).margin(1e-8));
    // Known spectrum: G's eigenvalues 1 and 4 -> I = sqrt(4) / 2.5 = 0.8.
    Tensor two = raw::from_vector(std::vector<double>{1, 0, 0, 2}, {2, 2});
    CHECK(diag::isometry(two, 0) == Approx(0.8));
    // All samples the same: the Gram matrix has rank 1, the gap is large.
    Tensor same = raw::ones({4, 5});
    CHECK(diag::isometry_gap(same) > 10);
    // Normalization bias: RMS norms 1 and 3 -> mean 2, unbiased variance 2 -> 0.5.
    Tensor norms = raw::from_vector(std::vector<double>{1, 1, 3, 3}, {2, 2});
    CHECK(diag::normalization_bias(norms) == Approx(0.5));
    CHECK(diag::normalization_bias(orthogonal) == Approx(0.0).margin(1e-12));
}

TEST_CASE("saturation and loss spikes", "[diagnostics]") {
    Tensor z = raw::from_vector(std::vector<double>{-3, -2, -1.5, 0, 1, 2.0001, 5, 0.1}, {2, 4});
    CHECK(nn::dyt_saturation(z) == Approx(3.0 / 8));  // -3, 2.0001, 5 (|z| = 2 is not beyond 2)
    CHECK(nn::dyt_saturation(z, 1.0) == Approx(5.0 / 8));
    diag::SpikeDetector spikes(3, 2.0);
    std::vector<bool> seen;
    for (double loss : {2.0, 4.5, 3.0, 2.9, 7.0, 2.5, 2.4, 9.9, 2.3}) seen.push_back(spikes.observe(loss));
    // Step 2 already has a verdict: 4.5 > 2 * 2.0. Step 3: the median of
    // (2.0, 4.5) is the upper one, 4.5. Median of (4.5, 3, 2.9) is 3: 7 > 6
    // is a spike; median of (7, 2.5, 2.4) is 2.5: 9.9 > 5 is a spike.
    CHECK(seen == std::vector<bool>{false, true, false, false, true, false, false, true, false});
    CHECK(spikes.spikes() == 3);
    // A falling loss with batch noise (+-10%) is not a spike at factor 1.5.
    diag::SpikeDetector calm(50, 1.5);
    for (int i = 0; i < 500; ++i) calm.observe((5.5 * std::exp(-i / 60.0) + 1.8) * (1 + 0.1 * std::sin(i * 2.7)));
    CHECK(calm.spikes() == 0);
    check_error([] { diag::SpikeDetector(0, 2.0); }, {"SpikeDetector", "window"});
}

TEST_CASE("per-block gradient norms group parameters by their block number", "[diagnostics]") {
    nn::Group model;
    auto h = model.add("h", std::make_shared<nn::ModuleList>());
    auto block0 = std::make_shared<nn::Group>(), block1 = std::make_shared<nn::Group>();
    Tensor a = block0->add_parameter("w", raw::zeros({2})), b = block1->add_parameter("w", raw::zeros({3}));
    Tensor emb = model.add_parameter("wte", raw::zeros({4}));
    h->push_back(block0);
    h->push_back(block1);
    a.set_grad(raw::from_vector(std::vector<float>{3, 4}, {2}));
    b.set_grad(raw::from_vector(std::vector<float>{1, 2, 2}, {3}));
    emb.set_grad(raw::full({4}, 100.0));
    std::vector<double> norms = diag::block_grad_norms(model, 2);
    REQUIRE(norms.size() == 2);
    CHECK(norms[0] == Approx(5.0));
    CHECK(norms[1] == Approx(3.0));
}

TEST_CASE("per-block relative updates: ||dW|| / ||W|| of one optimizer step", "[diagnostics]") {
    // Plain SGD moves W by lr * g, so block b's relative update is
    // lr * ||g_b|| / ||W_b||, computed here from the numbers by hand.
    nn::Group model;
    auto h = model.add("h", std::make_shared<nn::ModuleList>());
    auto block0 = std::make_shared<nn::Group>(), block1 = std::make_shared<nn::Group>();
    Tensor a = block0->add_parameter("w", raw::from_vector(std::vector<float>{1, 2, 2}, {3}));  // ||W|| = 3
    Tensor b = block1->add_parameter("w", raw::from_vector(std::vector<float>{0, 4}, {2}));     // ||W|| = 4
    Tensor emb = model.add_parameter("wte", raw::zeros({2}));
    h->push_back(block0);
    h->push_back(block1);
    a.set_grad(raw::from_vector(std::vector<float>{3, 0, 4}, {3}));  // ||g|| = 5
    b.set_grad(raw::from_vector(std::vector<float>{1, 0}, {2}));     // ||g|| = 1
    emb.set_grad(raw::full({2}, 7.0));
    optim::SGD sgd({{{a, b, emb}, 0.0}}, 0.1);
    diag::BlockUpdates updates(model, 2);
    updates.before_step();
    sgd.step();
    std::vector<double> u = updates.after_step();
    REQUIRE(u.size() == 2);
    CHECK(u[0] == Approx(0.1 * 5 / 3));
    CHECK(u[1] == Approx(0.1 * 1 / 4));
    check_error([&] { updates.after_step(); }, {"BlockUpdates", "before_step"});
}

TEST_CASE("what a block did to the stream: the tokens' turning angle and relative change", "[diagnostics]") {
    // Token 0 turns by 90 degrees and changes by |(-1, 2)| / |(1, 0)| = sqrt 5;
    // token 1 only grows: angle 0, change |(1, 1)| / |(1, 1)| = 1.
    Tensor before = raw::from_vector(std::vector<double>{1, 0, 1, 1}, {2, 2});
    Tensor after = raw::from_vector(std::vector<double>{0, 2, 2, 2}, {2, 2});
    diag::StreamStep step = diag::stream_step(before, after);
    CHECK(step.angle == Approx(M_PI / 4));  // the mean of pi/2 and 0
    CHECK(step.relative_change == Approx((std::sqrt(5.0) + 1) / 2));
    check_error([&] { diag::stream_step(before, raw::zeros({3, 2})); }, {"stream_step", "same shape"});
}

TEST_CASE("DyT layers report their saturation when tracking", "[diagnostics][dyt]") {
    nn::DyT dyt(4, 1.0);
    Tensor x = raw::from_vector(std::vector<float>{-3, -1, 0.5, 2.5, 1, 1, 1, 1}, {2, 4});
    dyt.forward(x);
    CHECK(std::isnan(dyt.last_saturation()));  // not tracking yet
    dyt.track_saturation(true, 2.0);
    dyt.forward(x);
    CHECK(dyt.last_saturation() == Approx(2.0 / 8));  // |-3| and 2.5 (alpha = 1)
    nn::Group model;
    model.add("norm", std::make_shared<nn::DyT>(4));
    auto layers = diag::dyt_layers(model);
    REQUIRE(layers.size() == 1);
    CHECK(layers[0].first == "norm");
}

TEST_CASE("held-out saturation averages each DyT layer over the held-out batches", "[diagnostics][dyt]") {
    // Two layers in a row: alpha 1 then alpha 0.5, each seeing the same inputs
    // (the second reads the first's input, not its output, through `forward`).
    nn::Group model;
    auto first = model.add("a", std::make_shared<nn::DyT>(4, 1.0));
    auto second = model.add("b", std::make_shared<nn::DyT>(4, 0.5));
    std::vector<Tensor> batches = {raw::from_vector(std::vector<float>{0.5f, 3, -3, 1}, {1, 4}),
                                   raw::from_vector(std::vector<float>{2.5f, 0, 0, 0}, {1, 4})};
    auto forward = [&](int64_t i) {
        first->forward(batches[i]);
        second->forward(batches[i]);
    };
    auto layers = diag::dyt_layers(model);
    REQUIRE(layers.size() == 2);
    // alpha 1: batch 0 has 3 and -3 beyond 2 (1/2), batch 1 has 2.5 (1/4): mean 3/8.
    // alpha 0.5: |z| is at most 1.5: none beyond 2.
    std::vector<double> at2 = diag::held_out_saturation(layers, 2, forward, 2.0);
    CHECK(at2[0] == Approx(0.375));
    CHECK(at2[1] == 0.0);
    // At threshold 1: alpha 0.5 has 1.5, 1.5 (1/2) then 1.25 (1/4) beyond it.
    std::vector<double> at1 = diag::held_out_saturation(layers, 2, forward, 1.0);
    CHECK(at1[1] == Approx(0.375));
    CHECK(at1[0] == Approx(0.375));  // alpha 1: 3, -3 (1 is not beyond 1), then 2.5
    check_error([&] { diag::held_out_saturation(layers, 0, forward); }, {"held_out_saturation", "batch"});
}

// ||F_t|| / ||x_t|| averaged over tokens, from the values themselves.
static double mean_token_ratio(const Tensor& f, const Tensor& x) {
    std::vector<double> fv = f.to_vector(), xv = x.to_vector();
    int64_t C = x.size(-1), tokens = x.numel() / C;
    double total = 0;
    for (int64_t t = 0; t < tokens; ++t) {
        double ff = 0, xx = 0;
        for (int64_t k = 0; k < C; ++k) ff += fv[t * C + k] * fv[t * C + k], xx += xv[t * C + k] * xv[t * C + k];
        total += std::sqrt(ff / xx);
    }
    return total / (double)tokens;
}

TEST_CASE("a block's residual contribution ||F(x)|| / ||x|| for each placement", "[diagnostics]") {
    using nn::Placement;
    for (Placement p : {Placement::Pre, Placement::Post, Placement::Sandwich, Placement::DeepNorm, Placement::GeoNorm}) {
        INFO(nn::to_string(p));
        nn::TransformerConfig c = nn::gpt2_config();
        c.n_layer = 3, c.n_embd = 8, c.n_head = 2, c.block_size = 5, c.placement = p, c.decay = nn::Decay::Harmonic;
        c.geo_step = 0.8;
        Generator gen(3);
        nn::Options f64{kFloat64, kCPU};
        nn::Block block(c, 1, gen, f64);  // block 1: GeoNorm's harmonic step is 0.8 / 2
        Tensor x = raw::randn({2, 5, 8}, gen, kFloat64);
        if (p == Placement::GeoNorm) x = raw::mul(x, raw::full({}, 2.0, kFloat64, kCPU));
        CHECK(std::isnan(diag::residual_ratio(block.attn_residual())));  // nothing tracked yet
        block.track_residuals(true);
        Tensor y = block.forward(x, nullptr);

        // The same block's sublayers applied by hand, in the placement's order.
        auto n = [](const std::shared_ptr<nn::NormLayer>& norm, const Tensor& t) { return norm ? norm->forward(t) : t; };
        double expected = 0;
        if (p == Placement::Pre || p == Placement::Sandwich) {
            Tensor fa = n(block.norm_1_out, block.attn->forward(n(block.norm_1, x), nullptr));
            Tensor h = x + fa;
            Tensor fm = n(block.norm_2_out, block.mlp.forward(n(block.norm_2, h)));
            expected = 0.5 * (mean_token_ratio(fa, x) + mean_token_ratio(fm, h));
        } else if (p == Placement::Post || p == Placement::DeepNorm) {
            double alpha = p == Placement::DeepNorm ? std::pow(2.0 * 3, 0.25) : 1.0;  // DeepNet: (2L)^(1/4)
            Tensor fa = block.attn->forward(x, nullptr);
            Tensor h = block.norm_1->forward(x * alpha + fa);
            Tensor fm = block.mlp.forward(h);
            expected = 0.5 * (mean_token_ratio(fa, x) + mean_token_ratio(fm, h)) / alpha;
        } else {
            Tensor fa = block.attn->forward(x, nullptr);
            Tensor step = raw::full({}, 0.4, kFloat64, kCPU);
            Tensor h = geodesic_update(x, fa, step);
            Tensor fm = block.mlp.forward(h);
            expected = 0.4 * 0.5 * (mean_token_ratio(fa, x) + mean_token_ratio(fm, h));
        }
        std::vector<double> ratios = diag::residual_ratios({&block});
        REQUIRE(ratios.size() == 1);
        CHECK(ratios[0] == Approx(expected).epsilon(1e-12));
        CHECK(ratios[0] > 0);
    }
    // The walker finds every block of a model and switches tracking on.
    nn::TransformerConfig c = nn::gpt2_config();
    c.n_layer = 2, c.n_embd = 8, c.n_head = 2, c.block_size = 4, c.vocab_size = 11;
    Generator gen(1);
    auto model = nn::make_model(c, gen, {kFloat64, kCPU});
    std::vector<nn::Block*> blocks = diag::track_block_residuals(*model, true);
    REQUIRE(blocks.size() == 2);
    model->forward(raw::from_indices({1, 5, 10, 3}, {1, 4}));
    for (double r : diag::residual_ratios(blocks)) CHECK(std::isfinite(r));
}

TEST_CASE("Theorem 1's margin: normalizing the samples raises the isometry by at least 1 + bias", "[diagnostics][isometry]") {
    // Orthogonal rows of norms 1 and 2: I(G) = sqrt(1 * 4) / 2.5 = 0.8, and 1
    // after normalizing; RMS norms 1/sqrt2 and 2/sqrt2 have mean 1.5/sqrt2 and
    // unbiased variance 0.25, so b = 0.25 / 1.125 = 2/9 (biased: 1/9).
    Tensor two = raw::from_vector(std::vector<double>{1, 0, 0, 2}, {2, 2});
    CHECK(diag::theorem1_margin(two, true, 0) == Approx(-std::log(0.8) - std::log(1 + 2.0 / 9)).epsilon(1e-12));
    CHECK(diag::theorem1_margin(two, false, 0) == Approx(-std::log(0.8) - std::log(1 + 1.0 / 9)).epsilon(1e-12));
    // Equal norms: normalizing changes nothing and b = 0, so the margin is 0.
    std::vector<double> q = random_orthogonal(5, 3);
    Tensor equal = raw::mul(raw::from_vector(q, {5, 5}), 2.0);
    CHECK(diag::theorem1_margin(equal) == Approx(0.0).margin(1e-9));
    // Random, correlated samples of spread norms: the biased form is a
    // theorem (AM-GM), so its margin is never negative.
    Generator gen(11);
    for (int trial = 0; trial < 20; ++trial) {
        Tensor shared = raw::randn({1, 40}, gen, kFloat64);  // drawn first, in its own statement
        Tensor h = raw::add(raw::randn({12, 40}, gen, kFloat64), raw::mul(shared, 2.0));
        Tensor scales = raw::exp(raw::randn({12, 1}, gen, kFloat64));
        CHECK(diag::theorem1_margin(raw::mul(h, scales), false) >= -1e-9);
    }
    check_error([] { diag::theorem1_margin(raw::zeros({1, 3})); }, {"theorem1_margin", "2 samples"});
    check_error([] { diag::theorem1_margin(raw::from_vector(std::vector<double>{1, 0, 0, 0}, {2, 2})); },
                {"theorem1_margin", "sample 1 is zero"});
}

TEST_CASE("the stream's size and the share of it every token has in common", "[diagnostics]") {
    // Two tokens of 2 channels: (3, 1) and (1, -1). Mean token (2, 0): RMS
    // sqrt(4 / 2) = sqrt 2; stream RMS sqrt((9 + 1 + 1 + 1) / 4) = sqrt 3.
    Tensor x = raw::from_vector(std::vector<double>{3, 1, 1, -1}, {1, 2, 2});
    diag::StreamSize s = diag::stream_size(x);
    CHECK(s.rms == Approx(std::sqrt(3.0)));
    CHECK(s.common_share == Approx(std::sqrt(2.0) / std::sqrt(3.0)));
    // Every token the same vector: all of it is common.
    CHECK(diag::stream_size(raw::from_vector(std::vector<double>{2, -1, 2, -1, 2, -1}, {3, 2})).common_share == Approx(1.0));
    // Opposite tokens: nothing in common.
    CHECK(diag::stream_size(raw::from_vector(std::vector<double>{1, 2, -1, -2}, {2, 2})).common_share == Approx(0.0).margin(1e-12));
    check_error([&] { diag::stream_size(raw::zeros({0, 4})); }, {"stream_size", "empty"});
}
