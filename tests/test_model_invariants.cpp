// The models' invariants: causality, RoPE's relative positions and angles,
// each placement's equation, GeoNorm's sphere and angle bound.
#include <cmath>

#include "model_helpers.h"

using namespace nc;
using namespace nc::nn;
using nc_test::build;
using nc_test::check_error;
using nc_test::check_values;
using nc_test::f64;
using nc_test::run;
using nc_test::tiny;
using nc_test::tiny_input;
using V = std::vector<Tensor>;

TEST_CASE("causal models: the output at t does not depend on tokens after t", "[models][invariants]") {
    Generator gen(5);
    for (Family family : {Family::GPT2, Family::Llama}) {
        auto model = build(tiny(family), gen);
        Tensor a = raw::from_indices({1, 5, 10, 3}, {1, 4}), b = raw::from_indices({1, 5, 2, 9}, {1, 4});
        Tensor ya = run(*model, a), yb = run(*model, b);
        check_values(raw::narrow(ya, 1, 0, 2), raw::narrow(yb, 1, 0, 2).to_vector(), 1e-12);
        CHECK(raw::narrow(ya, 1, 2, 1).to_vector() != raw::narrow(yb, 1, 2, 1).to_vector());
    }
}

TEST_CASE("RoPE: rotated scores depend only on the relative position", "[models][invariants]") {
    Generator gen(6);
    int64_t D = 8, T = 12;
    RopeTables tables = rope_tables(T, D, 10000.0, kFloat64);
    // The same q at every position, the same k at every position.
    Tensor q = raw::expand(raw::randn({1, D}, gen, kFloat64), {T, D});
    Tensor k = raw::expand(raw::randn({1, D}, gen, kFloat64), {T, D});
    Tensor scores = raw::matmul(apply_rope(q, tables), raw::transpose(apply_rope(k, tables), 0, 1));  // [T, T]
    std::vector<double> s = scores.to_vector();
    for (int64_t offset : {0, 1, 3})
        for (int64_t m = offset; m < T; ++m) CHECK(s[m * T + (m - offset)] == Approx(s[offset * T]).epsilon(1e-10));
    // Position 0 is not rotated at all.
    check_values(raw::narrow(apply_rope(q, tables), 0, 0, 1), raw::narrow(q, 0, 0, 1).to_vector(), 1e-15);
}

// The property above holds for any frequencies; this checks the angles
// themselves. Pair i of a head of size D turns by m f_i at position m, with
// f_i = theta^(-2i/D) (the RoFormer paper's and Llama's), in both layouts:
// the library's rotate_half pairs (i, i + D/2), the paper's interleaved
// pairs (2i, 2i + 1) (the same rotation on permuted features, chapter 6).
// Positions up to 1000 make a frequency off by a fraction of a percent show.
TEST_CASE("RoPE: pair i turns by m theta^(-2i/D) at position m, in both layouts", "[models]") {
    Generator gen(8);
    const int64_t T = 1001;
    for (int64_t D : {2, 8, 64})
        for (double theta : {10000.0, 500000.0}) {
            INFO("head size " << D << ", theta " << theta);
            RopeTables tables = rope_tables(T, D, theta, kFloat64);
            Tensor x = raw::randn({T, D}, gen, kFloat64);
            std::vector<double> xs = x.to_vector(), cs = tables.cos.to_vector(), ss = tables.sin.to_vector();
            std::vector<double> y = apply_rope(x, tables).to_vector();
            // The interleaved layout through the library: evens to the first
            // half, odds to the second, rotate, and back.
            std::vector<double> shuffled(T * D), y_interleaved(T * D);
            for (int64_t m = 0; m < T; ++m)
                for (int64_t i = 0; i < D / 2; ++i) {
                    shuffled[m * D + i] = xs[m * D + 2 * i];
                    shuffled[m * D + i + D / 2] = xs[m * D + 2 * i + 1];
                }
            std::vector<double> rotated = apply_rope(raw::from_vector(shuffled, {T, D}), tables).to_vector();
            for (int64_t m = 0; m < T; ++m)
                for (int64_t i = 0; i < D / 2; ++i) {
                    y_interleaved[m * D + 2 * i] = rotated[m * D + i];
                    y_interleaved[m * D + 2 * i + 1] = rotated[m * D + i + D / 2];
                }
            double worst = 0;
            for (int64_t m : {0, 1, 2, 5, 37, 999, 1000})
                for (int64_t i = 0; i < D / 2; ++i) {
                    double angle = (double)m * std::pow(theta, -2.0 * (double)i / (double)D);
                    double c = std::cos(angle), s = std::sin(angle);
                    int64_t a = m * D + i, b = m * D + i + D / 2;  // rotate_half's pair
                    double ya = xs[a] * c - xs[b] * s, yb = xs[a] * s + xs[b] * c;
                    int64_t e = m * D + 2 * i, o = e + 1;  // the interleaved pair
                    double ye = xs[e] * c - xs[o] * s, yo = xs[e] * s + xs[o] * c;
                    for (double d : {cs[a] - c, cs[b] - c, ss[a] - s, ss[b] - s, y[a] - ya, y[b] - yb,
                                     y_interleaved[e] - ye, y_interleaved[o] - yo})
                        worst = nc_test::worst_of(worst, std::fabs(d));
                }
            CHECK(worst < 1e-12);
        }
}

TEST_CASE("each placement composes its block as its equation says, every norm in its own place", "[models][placements]") {
    // Every norm gets its own random gain and bias, so a block that used
    // the MLP's norm in the attention sublayer (or the input norm where the
    // output norm belongs) computes another function. With the gains all
    // one, as at init, such swaps are invisible.
    //   pre       h = x + A(n1(x))              y = h + M(n2(h))
    //   post      h = n1(x + A(x))              y = n2(h + M(h))
    //   sandwich  h = x + n1o(A(n1(x)))         y = h + n2o(M(n2(h)))
    //   deepnorm  h = n1(alpha x + A(x))        y = n2(alpha h + M(h)),  alpha = (2L)^(1/4)
    for (Family family : {Family::GPT2, Family::Llama}) {
        for (Placement placement : {Placement::Pre, Placement::Post, Placement::Sandwich, Placement::DeepNorm}) {
            Generator gen(41);
            TransformerConfig c = tiny(family);
            c.placement = placement;
            c.positions = Positions::Learned;  // A(.) below runs without RoPE tables
            auto model = build(c, gen);
            const Block& block = *model->blocks()[1];
            {
                NoGradGuard no_grad;
                for (const auto& n : {block.norm_1, block.norm_2, block.norm_1_out, block.norm_2_out})
                    if (n)
                        for (auto& [name, t] : n->named_parameters())
                            raw::copy_(t, raw::add(raw::mul(raw::randn(t.shape(), gen, kFloat64), 0.5), 1.0));
            }
            Tensor x = raw::randn({2, 4, c.n_embd}, gen, kFloat64);
            auto A = [&](const Tensor& in) { return block.attn->forward(in, nullptr, nullptr); };
            auto M = [&](const Tensor& in) { return block.mlp.forward(in); };
            auto n = [](const std::shared_ptr<NormLayer>& layer, const Tensor& in) {
                REQUIRE(layer);
                return layer->forward(in);
            };
            Tensor expected;
            if (placement == Placement::Pre) {
                Tensor h = x + A(n(block.norm_1, x));
                expected = h + M(n(block.norm_2, h));
            } else if (placement == Placement::Post) {
                Tensor h = n(block.norm_1, x + A(x));
                expected = n(block.norm_2, h + M(h));
            } else if (placement == Placement::Sandwich) {
                Tensor h = x + n(block.norm_1_out, A(n(block.norm_1, x)));
                expected = h + n(block.norm_2_out, M(n(block.norm_2, h)));
            } else {
                double alpha = std::pow(2.0 * (double)c.n_layer, 0.25);
                Tensor h = n(block.norm_1, x * alpha + A(x));
                expected = n(block.norm_2, h * alpha + M(h));
            }
            INFO(to_string(placement) << (family == Family::GPT2 ? " gpt2" : " llama"));
            check_values(block.forward(x, nullptr), expected.to_vector(), 1e-12);
        }
    }
}

TEST_CASE("GeoNorm models keep every token on the sphere of radius sqrt(C) (or geo_radius)", "[models][invariants]") {
    // The stream entering block 0 (projected by the model itself) and after
    // every block has the configured radius: sqrt(C) by default, else geo_radius.
    for (double geo_radius : {0.0, 3.0}) {
        Generator gen(7);
        TransformerConfig c = tiny(Family::GPT2);
        c.placement = Placement::GeoNorm;
        c.norm = NormKind::None;  // no final norm: the stream itself reaches the head
        c.geo_radius = geo_radius;
        double expected = geo_radius > 0 ? geo_radius : std::sqrt(8.0);
        GPT2 model(c, gen, f64);
        std::vector<Tensor> stream;
        model.forward(raw::from_indices({1, 5, 10, 3}, {1, 4}), &stream);
        REQUIRE(stream.size() == model.blocks().size() + 1);
        for (const Tensor& x : stream) {
            Tensor radius = raw::sqrt(raw::sum(raw::mul(x, x), {-1}));
            check_values(radius, std::vector<double>(4, expected), 1e-12);
        }
    }
}

TEST_CASE("GeoNorm's angle bound: a turn of m tanh(theta / m) with theta = |a| |P_x u| / |x|", "[models][invariants]") {
    // The geodesic update turns x by theta = |a| |P_x u| / |x| (an arc of
    // length |a P_x u| on the sphere of radius |x|); the bound makes that
    // m tanh(theta / m). Checked on spheres of three radii, where a bound
    // that forgot to divide by |x| turns by the wrong amount.
    Generator gen(31);
    const double m = 0.4;
    for (double radius : {0.5, 1.0, 3.0}) {
        for (double step : {0.05, 0.3, 2.0}) {
            Tensor x = project_to_sphere(raw::randn({3, 6}, gen, kFloat64), radius);
            Tensor u = raw::randn({3, 6}, gen, kFloat64);
            Tensor a = raw::full({}, step, kFloat64);
            Tensor y = geodesic_update(x, bound_angle(x, u, a, m), a);
            std::vector<double> xs = x.to_vector(), us = u.to_vector(), ys = y.to_vector();
            for (int row = 0; row < 3; ++row) {
                double xx = 0, ux = 0, xy = 0, yy = 0;
                for (int j = 0; j < 6; ++j) {
                    xx += xs[row * 6 + j] * xs[row * 6 + j];
                    ux += us[row * 6 + j] * xs[row * 6 + j];
                    xy += xs[row * 6 + j] * ys[row * 6 + j];
                    yy += ys[row * 6 + j] * ys[row * 6 + j];
                }
                double tangent2 = 0;  // |P_x u|^2
                for (int j = 0; j < 6; ++j) {
                    double v = us[row * 6 + j] - xs[row * 6 + j] * ux / xx;
                    tangent2 += v * v;
                }
                double theta = step * std::sqrt(tangent2) / std::sqrt(xx);
                INFO("radius " << radius << ", step " << step << ", row " << row << ": theta " << theta);
                REQUIRE(std::isfinite(xy / std::sqrt(xx * yy)));  // a NaN would clamp to no turn
                double turned = std::acos(std::max(-1.0, std::min(1.0, xy / std::sqrt(xx * yy))));
                CHECK(turned == Approx(m * std::tanh(theta / m)).margin(1e-6));
                CHECK(std::sqrt(yy) == Approx(radius).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("GeoNorm with geo_max_angle turns each token by at most that angle", "[models][invariants]") {
    Generator gen(8);
    TransformerConfig c = tiny(Family::GPT2);
    c.placement = Placement::GeoNorm;
    c.norm = NormKind::None;
    c.geo_step = 1000;  // a huge step (the sublayer outputs are small at init): turns of about a radian
    const double m = 0.5;
    for (double max_angle : {0.0, m}) {
        c.geo_max_angle = max_angle;
        GPT2 model(c, gen, f64);
        Tensor ids = raw::from_indices({1, 5, 10, 3}, {1, 4});
        Tensor x = model.wte->forward(ids) + raw::narrow(model.wpe->weight, 0, 0, 4);
        x = x * rsqrt(sum(x * x, {-1}, true)) * std::sqrt(8.0);
        // The angle between a token before and after a block of two updates: at most 2m when bounded.
        Tensor y = model.blocks()[0]->forward(x, nullptr);
        std::vector<double> cosines = raw::div(raw::sum(raw::mul(x, y), {-1}), raw::full({4}, 8.0, kFloat64)).to_vector();
        double largest = 0;
        INFO("max angle " << max_angle << ": cosines " << cosines[0] << " " << cosines[1] << " " << cosines[2] << " "
                          << cosines[3]);
        for (double cs : cosines) {
            // Clamping first would turn a NaN cosine into 1 (no turn at all) and pass it.
            REQUIRE(std::isfinite(cs));
            largest = std::max(largest, std::acos(std::max(-1.0, std::min(1.0, cs))));
        }
        INFO("max angle " << max_angle << ": largest turn " << largest);
        if (max_angle > 0) CHECK(largest <= 2 * m + 1e-9);
        else CHECK(largest > 2 * m);  // without the bound the same step turns further
    }
    // The bound is tanh-shaped: small angles pass almost unchanged (m tanh(t/m) = t - t^3/(3 m^2) + ...).
    c.geo_step = 1e-3;
    Tensor outputs[2];
    for (int bounded = 0; bounded < 2; ++bounded) {
        c.geo_max_angle = bounded ? m : 0.0;
        Generator same(9);
        GPT2 model(c, same, f64);
        outputs[bounded] = model.forward(raw::from_indices({1, 5, 10, 3}, {1, 4}));
    }
    check_values(outputs[1], outputs[0].to_vector(), 1e-7);
}

