// Activations and fused ops: values against formulas, fused kernels against
// their unfused compositions (value and gradient), gradchecks, and the
// geodesic update's invariants and degenerate cases.
#include "autograd/ops_nn.h"
#include "helpers.h"
#include "tensor/ops/geodesic_update.h"
#include "tensor/profile.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_gradcheck;
using nc_test::check_values;
using nc_test::leaf;
using V = std::vector<Tensor>;

TEST_CASE("activations match their formulas", "[nn][activations]") {
    std::vector<double> xs = {-3, -1, -0.1, 0, 0.2, 1.5, 4};
    Tensor x = raw::from_vector(xs, {7});
    std::vector<double> relu_v, silu_v, gelu_v, gelu_t;
    for (double v : xs) {
        relu_v.push_back(v > 0 ? v : 0);
        silu_v.push_back(v / (1 + std::exp(-v)));
        gelu_v.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
        gelu_t.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
    }
    check_values(relu(x), relu_v, 1e-15);
    check_values(silu(x), silu_v, 1e-15);
    check_values(gelu(x, false), gelu_v, 1e-15);
    check_values(gelu(x, true), gelu_t, 1e-15);
    check_values(sigmoid(raw::from_vector(std::vector<double>{0}, {1})), {0.5});
}

// The unfused compositions the fused kernels must agree with.
static Tensor layer_norm_reference(const Tensor& x, const Tensor& g, const Tensor& b, double eps) {
    Tensor mu = mean(x, {-1}, true);
    Tensor xh = (x - mu) * rsqrt(var(x, {-1}, 0, true) + eps);
    return xh * g + b;
}
static Tensor rms_norm_reference(const Tensor& x, const Tensor& g, double eps) {
    return x * rsqrt(mean(x * x, {-1}, true) + eps) * g;
}
static Tensor cross_entropy_reference(const Tensor& logits, const Tensor& targets) {
    return -mean(gather(log_softmax(logits, -1), -1, unsqueeze(targets, -1)));
}

// Value and every input's gradient of f and g agree (float64, one backward each).
static void check_same_function(const std::function<Tensor(const V&)>& f, const std::function<Tensor(const V&)>& g,
                                const V& inputs, double tol) {
    Tensor yf = f(inputs);
    Generator gen(99);
    Tensor probe = raw::randn(yf.shape(), gen, kFloat64);
    backward(sum(yf * probe));
    std::vector<std::vector<double>> grads_f;
    for (const Tensor& t : inputs) {
        grads_f.push_back(t.requires_grad() ? t.grad().to_vector() : std::vector<double>{});
        if (t.requires_grad()) t.zero_grad();
    }
    Tensor yg = g(inputs);
    check_values(yf, yg.to_vector(), tol);
    backward(sum(yg * probe));
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].requires_grad()) continue;
        INFO("gradient of input " << i);
        check_values(inputs[i].grad(), grads_f[i], tol);
        inputs[i].zero_grad();
    }
}

TEST_CASE("gradcheck: activations", "[nn][gradcheck]") {
    Tensor x = leaf({3, 4}, 31, 2.0);
    check_gradcheck([](const V& v) { return relu(v[0]); }, {x});
    check_gradcheck([](const V& v) { return sigmoid(v[0]); }, {x});
    check_gradcheck([](const V& v) { return silu(v[0]); }, {x});
    check_gradcheck([](const V& v) { return gelu(v[0], false); }, {x});
    check_gradcheck([](const V& v) { return gelu(v[0], true); }, {x});
    // The fused SwiGLU equals silu(gate) * up, and its gradient checks out,
    // also when `up` is broadcast along the rows.
    Tensor up = leaf({3, 4}, 32), row = leaf({4}, 33);
    check_same_function([](const V& v) { return swiglu(v[0], v[1]); }, [](const V& v) { return silu(v[0]) * v[1]; },
                        {x, up}, 1e-12);
    check_gradcheck([](const V& v) { return swiglu(v[0], v[1]); }, {x, up});
    check_gradcheck([](const V& v) { return swiglu(v[0], v[1]); }, {x, row});
}


TEST_CASE("fused LayerNorm and RMSNorm equal their compositions", "[nn][fused]") {
    // Rows of 8 numbers: one step of the row sums' 8 lanes; of 37: four
    // steps, then 5 numbers more.
    for (Shape shape : {Shape{2, 3, 8}, Shape{3, 7, 8}, Shape{3, 7, 37}}) {
        INFO("x " << shape_str(shape));
        Tensor x = leaf(shape, 32, 3.0, 1.0), g = leaf({shape[2]}, 33), b = leaf({shape[2]}, 34);
        check_same_function([](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-5); },
                            [](const V& v) { return layer_norm_reference(v[0], v[1], v[2], 1e-5); }, {x, g, b},
                            1e-11);
        check_same_function([](const V& v) { return rms_norm(v[0], v[1], 1e-5); },
                            [](const V& v) { return rms_norm_reference(v[0], v[1], 1e-5); }, {x, g}, 1e-11);
    }
    // float32: normalized rows have mean 0 and variance 1.
    Tensor y = layer_norm(raw::randn({64, 256}), Tensor(), Tensor(), 1e-5);
    CHECK(raw::max(raw::abs(raw::mean(y, {1}))).item() < 1e-5);
    CHECK(raw::max(raw::abs(raw::add(raw::var(y, {1}, 0), -1.0))).item() < 1e-3);
}

// Each row's sums run in 8 lanes (tensor/ops/norms.cpp); a row's result
// must not depend on where it sits: every row of a batch of 21 has the same
// bits, forward and backward, as the same numbers normalized alone, copied
// 1 to 3 numbers past the start of a fresh buffer (a vectorized loop that
// first stepped to an aligned address would sum in another order).
TEST_CASE("a row's LayerNorm and RMSNorm do not depend on the rows beside it", "[nn][fused]") {
    Generator gen(38);
    for (DType dtype : {kFloat32, kFloat64})
        for (int64_t C : {37, 128}) {
            Tensor x = raw::randn({21, C}, gen, dtype), g = raw::randn({C}, gen, dtype);
            Tensor b = raw::randn({C}, gen, dtype), dy = raw::randn({21, C}, gen, dtype);
            raw::NormForward ln = raw::layer_norm(x, g, b, 1e-5), rms = raw::rms_norm(x, g, 1e-6);
            raw::NormBackward d_ln = raw::layer_norm_backward(dy, x, g, b, ln);
            raw::NormBackward d_rms = raw::rms_norm_backward(dy, x, g, rms);
            for (int64_t r = 0; r < 21; ++r) {
                INFO(dtype_name(dtype) << " C=" << C << " row " << r);
                auto alone = [&](const Tensor& t) {  // row r, copied 1 + r % 3 numbers into a fresh buffer
                    Tensor buffer = raw::zeros({C + 4}, dtype);
                    Tensor copy = raw::view(raw::narrow(buffer, 0, 1 + r % 3, C), {1, C});
                    raw::copy_(copy, raw::narrow(t, 0, r, 1));
                    return copy;
                };
                auto row_of = [&](const Tensor& t) { return raw::narrow(t, 0, r, 1).to_vector(); };
                Tensor xr = alone(x), dyr = alone(dy);
                raw::NormForward ln_r = raw::layer_norm(xr, g, b, 1e-5), rms_r = raw::rms_norm(xr, g, 1e-6);
                CHECK(row_of(ln.out) == ln_r.out.to_vector());
                CHECK(row_of(rms.out) == rms_r.out.to_vector());
                CHECK(row_of(d_ln.dx) == raw::layer_norm_backward(dyr, xr, g, b, ln_r).dx.to_vector());
                CHECK(row_of(d_rms.dx) == raw::rms_norm_backward(dyr, xr, g, rms_r).dx.to_vector());
            }
        }
}

TEST_CASE("gradcheck: fused LayerNorm and RMSNorm with and without affine", "[nn][gradcheck]") {
    Tensor x = leaf({3, 6}, 35, 2.0, 0.5), g = leaf({6}, 36), b = leaf({6}, 37);
    check_gradcheck([](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-5); }, {x, g, b});
    check_gradcheck([](const V& v) { return layer_norm(v[0], Tensor(), Tensor(), 1e-5); }, {x});
    check_gradcheck([](const V& v) { return rms_norm(v[0], v[1], 1e-6); }, {x, g});
    check_gradcheck([](const V& v) { return rms_norm(transpose(v[0], 0, 1), Tensor(), 1e-6); }, {x});
}

TEST_CASE("fused DyT equals weight * tanh(alpha x) + bias and passes gradcheck", "[nn][fused][dyt]") {
    Tensor x = leaf({3, 4, 7}, 40, 2.0), alpha = leaf({1}, 41, 0.3, 0.8), w = leaf({7}, 42, 0.5, 1.0), b = leaf({7}, 43);
    check_same_function([](const V& v) { return dyt(v[0], v[1], v[2], v[3]); },
                        [](const V& v) { return v[2] * tanh(v[1] * v[0]) + v[3]; }, {x, alpha, w, b}, 1e-12);
    check_same_function([](const V& v) { return dyt(v[0], v[1], v[2], Tensor()); },
                        [](const V& v) { return v[2] * tanh(v[1] * v[0]); }, {x, alpha, w}, 1e-12);
    check_gradcheck([](const V& v) { return dyt(v[0], v[1], v[2], v[3]); }, {x, alpha, w, b});
    check_gradcheck([](const V& v) { return dyt(v[0], v[1], v[2], Tensor()); }, {x, alpha, w});
    // float32, a transposed (strided) input, 33 features (no SIMD width divides it).
    Generator gen(44);
    Tensor x32 = raw::transpose(raw::mul(raw::randn({33, 50}, gen), 3.0), 0, 1);
    Tensor a32 = raw::full({1}, 0.7), w32 = raw::randn({33}, gen), b32 = raw::randn({33}, gen);
    Tensor composed = raw::add(raw::mul(w32, raw::tanh(raw::mul(a32, x32))), b32);
    check_values(raw::dyt(x32, a32, w32, b32), composed.to_vector(), 1e-6);
    // Bad arguments name what is wrong.
    check_error([&] { dyt(x, raw::ones({2}, kFloat64), w, b); }, {"dyt", "alpha", "[2]"});
    check_error([&] { dyt(x, alpha, leaf({6}, 45), b); }, {"dyt", "weight", "[6]", "7 features"});
    check_error([&] { dyt(x, alpha, Tensor(), b); }, {"dyt", "weight"});
}

TEST_CASE("fused cross-entropy equals log_softmax + gather and honours ignore_index", "[nn][fused]") {
    Tensor logits = leaf({2, 3, 5}, 38, 2.0);
    Tensor targets = raw::from_indices({0, 4, 2, 1, 1, 3}, {2, 3});
    check_same_function([targets](const V& v) { return cross_entropy(v[0], targets); },
                        [targets](const V& v) { return cross_entropy_reference(v[0], targets); }, {logits}, 1e-12);
    check_gradcheck([targets](const V& v) { return cross_entropy(v[0], targets); }, {logits});
    // Ignored rows: the mean runs over the other rows only, and they get no gradient.
    Tensor with_ignored = raw::from_indices({0, -100, 2, -100, 1, 3}, {2, 3});
    Tensor kept_rows = raw::from_indices({0, 2, 4, 5}, {4});
    Tensor flat = reshape(logits, {6, 5});
    Tensor expected = cross_entropy_reference(index_select(flat, 0, kept_rows), raw::from_indices({0, 2, 1, 3}, {4}));
    CHECK(cross_entropy(logits, with_ignored).item() == Approx(expected.item()).epsilon(1e-12));
    check_gradcheck([with_ignored](const V& v) { return cross_entropy(v[0], with_ignored); }, {logits});
    backward(cross_entropy(logits, with_ignored));
    std::vector<double> grad = logits.grad().to_vector();
    for (int i = 5; i < 10; ++i) CHECK(grad[i] == 0);  // row 1 was ignored
    logits.zero_grad();
    // Every row ignored: the loss is 0 (not 0/0) and so is every gradient.
    Tensor all_ignored = raw::full({2, 3}, -100, kInt64);
    Tensor nothing = cross_entropy(logits, all_ignored);
    CHECK(nothing.item() == 0);
    backward(nothing);
    for (double g : logits.grad().to_vector()) CHECK(g == 0);
    logits.zero_grad();
    // Huge logits stay finite.
    Tensor big = raw::from_vector(std::vector<float>{1000, -1000, 0}, {1, 3});
    CHECK(cross_entropy(big, raw::from_indices({0}, {1})).item() == Approx(0).margin(1e-6));
    check_error([&] { cross_entropy(logits, raw::from_indices({0, 5, 0, 0, 0, 0}, {2, 3})); }, {"cross_entropy", "target 5"});
    check_error([&] { cross_entropy(logits, raw::from_indices({0, 1}, {2})); }, {"cross_entropy", "[2, 3]", "[2]"});
}

// A point x and an update u = 0.7 x + t * (a unit-norm tangent direction) * |x|,
// so that |v| / |x| = t exactly (up to rounding).
static std::pair<Tensor, Tensor> point_and_update(int64_t rows, int64_t D, double t, uint64_t seed) {
    Generator gen(seed);
    Tensor x = raw::randn({rows, D}, gen, kFloat64);
    Tensor r = raw::randn({rows, D}, gen, kFloat64);
    Tensor xx = raw::sum(raw::mul(x, x), {1}, true);
    Tensor tangent = raw::sub(r, raw::mul(raw::div(raw::sum(raw::mul(r, x), {1}, true), xx), x));
    Tensor unit = raw::div(tangent, raw::sqrt(raw::sum(raw::mul(tangent, tangent), {1}, true)));
    Tensor u = raw::add(raw::mul(x, 0.7), raw::mul(raw::mul(unit, raw::sqrt(xx)), t));
    x.set_requires_grad(true);
    u.set_requires_grad(true);
    return {x, u};
}

TEST_CASE("geodesic update: matches the textbook exp map and keeps |x|", "[nn][geonorm]") {
    auto [x, u] = point_and_update(5, 16, 0.8, 40);
    Tensor alpha = raw::full({}, 1.3, kFloat64);
    Tensor y = geodesic_update(x, u, alpha);
    // Textbook form: theta = |w|/|x|, y = cos(theta) x + |x| sin(theta) w/|w|.
    Tensor xx = raw::sum(raw::mul(x, x), {1}, true);
    Tensor v = raw::sub(u, raw::mul(raw::div(raw::sum(raw::mul(u, x), {1}, true), xx), x));
    Tensor w = raw::mul(v, 1.3);
    Tensor wn = raw::sqrt(raw::sum(raw::mul(w, w), {1}, true));
    Tensor theta = raw::div(wn, raw::sqrt(xx));
    Tensor expected = raw::add(raw::mul(raw::cos(theta), x), raw::mul(raw::mul(raw::sqrt(xx), raw::sin(theta)), raw::div(w, wn)));
    check_values(y, expected.to_vector(), 1e-13);
    // |y| = |x| per row, also in float32 over many rows (to 1e-6 relative).
    Generator gen(41);
    Tensor xf = raw::randn({512, 384}, gen), uf = raw::randn({512, 384}, gen);
    Tensor yf = geodesic_update(xf, uf, raw::scalar(0.9));
    Tensor ratio = raw::div(raw::sqrt(raw::sum(raw::mul(yf, yf), {1})), raw::sqrt(raw::sum(raw::mul(xf, xf), {1})));
    CHECK(raw::max(raw::abs(raw::add(ratio, -1.0))).item() < 1e-6);
}

TEST_CASE("gradcheck: geodesic update, generic, large step and tiny or zero tangent", "[nn][geonorm][gradcheck]") {
    for (double t : {0.8, 2.5, 1e-3, 1e-6, 0.0}) {
        INFO("|v|/|x| = " << t);
        auto [x, u] = point_and_update(3, 6, t, 42);
        Tensor alpha = raw::full({}, 1.1, kFloat64);
        alpha.set_requires_grad(true);
        check_gradcheck([](const V& v) { return geodesic_update(v[0], v[1], v[2]); }, {x, u, alpha});
        // Gradients are finite and dL/du is tangent to the sphere at x.
        backward(sum(geodesic_update(x, u, alpha) * raw::randn({3, 6}, default_generator(), kFloat64)));
        CHECK(raw::all_finite(x.grad()));
        CHECK(raw::all_finite(u.grad()));
        CHECK(raw::all_finite(alpha.grad()));
        double radial = raw::max(raw::abs(raw::sum(raw::mul(u.grad(), x), {1}))).item();
        CHECK(radial < 1e-12);
    }
    // u = 0 exactly (v = 0 with no rounding at all), and alpha = 0: y = x.
    Tensor x = leaf({2, 4}, 43), zero = raw::zeros({2, 4}, kFloat64);
    zero.set_requires_grad(true);
    Tensor alpha0 = raw::full({}, 0.0, kFloat64);
    alpha0.set_requires_grad(true);
    check_values(geodesic_update(x, zero, raw::full({}, 1.0, kFloat64)), x.to_vector(), 0);
    check_gradcheck([](const V& v) { return geodesic_update(v[0], v[1], v[2]); }, {x, zero, alpha0});
}

TEST_CASE("geodesic update: x = 0 falls back to x + u; bad arguments are refused", "[nn][geonorm]") {
    Tensor x = raw::zeros({1, 3}, kFloat64), u = raw::from_vector(std::vector<double>{1, 2, 3}, {1, 3});
    check_values(geodesic_update(x, u, raw::full({}, 1.0, kFloat64)), {1, 2, 3});
    check_error([] { geodesic_update(raw::zeros({2, 3}), raw::zeros({2, 4}), raw::scalar(1)); }, {"geodesic_update", "[2, 3]", "[2, 4]"});
    check_error([] { geodesic_update(raw::zeros({2, 3}), raw::zeros({2, 3}), raw::zeros({2})); }, {"geodesic_update", "alpha"});
}

TEST_CASE("dropout keeps the expectation and is the identity in eval", "[nn]") {
    Generator gen(44);
    Tensor x = raw::ones({100000});
    Tensor y = dropout(x, 0.25, true, gen);
    double zeros = 1.0 - raw::mean(raw::ne(y, raw::zeros({1}))).item();
    CHECK(zeros == Approx(0.25).margin(0.01));
    CHECK(raw::mean(y).item() == Approx(1.0).margin(0.01));
    CHECK(dropout(x, 0.25, false, gen).same(x));
    check_error([&] { dropout(x, 1.0, true, gen); }, {"dropout", "[0, 1)"});
    // With the mask fixed (a fresh generator per call), dropout is linear in x: gradcheck it.
    check_gradcheck([](const V& v) { Generator fixed(5); return dropout(v[0], 0.3, true, fixed); }, {leaf({3, 4}, 45)});
}

// softmax(q k^T / sqrt(D) + mask) v with plain ops.
static Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
    Tensor scores = matmul(q, transpose(k, -1, -2)) / std::sqrt((double)q.size(-1));
    if (causal) {
        int64_t T = q.size(-2), S = k.size(-2);
        Tensor i = raw::reshape(raw::arange(0, T, 1, q.dtype()), {T, 1});
        Tensor j = raw::reshape(raw::arange(0, S, 1, q.dtype()), {1, S});
        scores = where(raw::gt(j, i), raw::full({}, -INFINITY, q.dtype()), scores);
    }
    return matmul(softmax(scores, -1), v);
}

TEST_CASE("fused attention equals the unfused composition and passes gradcheck", "[nn][attention]") {
    Tensor q = leaf({2, 3, 5, 4}, 60), k = leaf({2, 3, 5, 4}, 61), v = leaf({2, 3, 5, 6}, 62);
    for (bool causal : {false, true}) {
        INFO("causal " << causal);
        check_same_function([causal](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); },
                            [causal](const V& x) { return attention_reference(x[0], x[1], x[2], causal); }, {q, k, v},
                            1e-12);
        check_gradcheck([causal](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); }, {q, k, v});
    }
    // Cross-attention shapes (S != T) and non-contiguous inputs.
    Tensor kk = leaf({2, 7, 4}, 63), vv = leaf({2, 7, 3}, 64), qq = leaf({2, 4, 5}, 65);
    check_gradcheck([](const V& x) { return scaled_dot_product_attention(transpose(x[0], 1, 2), x[1], x[2], false); },
                    {qq, kk, vv});
}

// The kernels take views (tensor/ops/attention.h): q, k and v as the heads
// of one [B, T, 3C] tensor, the output written into a [B, T, C] tensor's
// heads, the gradients into one [B, T, 3C]. The same numbers, to the last
// bit, as with every operand copied into contiguous [B, H, T, D] tensors,
// over several tiles of queries and keys (T = 150 > 128), causal or not.
TEST_CASE("attention on views equals attention on contiguous copies, to the bit", "[nn][attention]") {
    const int64_t B = 2, T = 150, H = 3, D = 16, C = H * D;
    for (DType dtype : {kFloat32, kFloat64})
        for (bool causal : {true, false}) {
            INFO(dtype_name(dtype) << ", causal " << causal);
            Generator gen(71);
            Tensor qkv = raw::to_dtype(raw::randn({B, T, 3 * C}, gen), dtype);
            Tensor dy = raw::to_dtype(raw::randn({B, T, C}, gen), dtype);
            auto heads = [&](const Tensor& t, int64_t which) {
                return raw::transpose(raw::view(raw::narrow(t, 2, which * C, C), {B, T, H, D}), 1, 2);
            };
            Tensor q = heads(qkv, 0), k = heads(qkv, 1), v = heads(qkv, 2);
            Tensor y = raw::zeros({B, T, C}, dtype), y_heads = raw::transpose(raw::view(y, {B, T, H, D}), 1, 2);
            raw::AttentionForward viewed = raw::attention(q, k, v, causal, 0.25, y_heads);
            raw::AttentionForward copied =
                raw::attention(raw::contiguous(q), raw::contiguous(k), raw::contiguous(v), causal, 0.25);
            CHECK(raw::contiguous(y_heads).to_vector() == copied.out.to_vector());
            CHECK(viewed.logsumexp.to_vector() == copied.logsumexp.to_vector());
            Tensor dout = raw::transpose(raw::view(dy, {B, T, H, D}), 1, 2);
            Tensor dqkv = raw::full({B, T, 3 * C}, 7.0, dtype);  // every number must be written
            raw::attention_backward(dout, q, k, v, {y_heads, viewed.logsumexp}, causal, 0.25,
                                    {heads(dqkv, 0), heads(dqkv, 1), heads(dqkv, 2)});
            raw::AttentionBackward g = raw::attention_backward(raw::contiguous(dout), raw::contiguous(q),
                                                               raw::contiguous(k), raw::contiguous(v), copied,
                                                               causal, 0.25);
            CHECK(raw::contiguous(heads(dqkv, 0)).to_vector() == g.dq.to_vector());
            CHECK(raw::contiguous(heads(dqkv, 1)).to_vector() == g.dk.to_vector());
            CHECK(raw::contiguous(heads(dqkv, 2)).to_vector() == g.dv.to_vector());
        }
    Tensor q = raw::zeros({1, 4, 8}, kFloat64);
    raw::AttentionForward f = raw::attention(q, q, q, true, 0.5);
    check_error([&] { raw::attention(q, q, q, true, 0.5, raw::zeros({1, 4, 7}, kFloat64)); },
                {"attention", "output to write into", "[1, 4, 7]", "[1, 4, 8]"});
    check_error([&] { raw::attention(q, q, q, true, 0.5, raw::transpose(raw::zeros({1, 8, 4}, kFloat64), 1, 2)); },
                {"attention", "contiguous rows"});
    check_error([&] { raw::attention(q, q, q, true, 0.5, raw::expand(raw::zeros({1, 1, 8}, kFloat64), {1, 4, 8})); },
                {"attention", "do not overlap"});
    check_error([&] { raw::attention_backward(q, q, q, q, f, true, 0.5, {raw::zeros({1, 4, 8}, kFloat64), Tensor(), Tensor()}); },
                {"attention_backward", "all three"});
}

// raw::attention_grid gives the [batch, heads, R, C] view the CUDA kernels
// take (cuda/attention_strides.cuh): the same storage for 2, 3 and 4 dims
// and for 5 that merge (GPT-2's heads of [B, T, 3C] stay a view with row
// stride 3C), a copy with the same numbers for 5 that do not.
TEST_CASE("attention_grid views an operand as [batch, heads, R, C]", "[nn][attention]") {
    Tensor m = raw::randn({5, 8});
    Tensor g2 = raw::attention_grid(m);
    CHECK(g2.shape() == Shape{1, 1, 5, 8});
    CHECK(g2.raw_data() == m.raw_data());
    Tensor three = raw::narrow(raw::randn({6, 7, 10}), 2, 1, 8);  // rows 10 apart
    Tensor g3 = raw::attention_grid(three);
    CHECK(g3.shape() == Shape{1, 6, 7, 8});
    CHECK(g3.raw_data() == three.raw_data());
    CHECK(g3.strides()[1] == 70);
    CHECK(g3.strides()[2] == 10);
    Tensor qkv = raw::randn({2, 9, 3 * 12});  // B 2, T 9, H 3, D 4
    Tensor k = raw::transpose(raw::view(raw::narrow(qkv, 2, 12, 12), {2, 9, 3, 4}), 1, 2);
    Tensor g4 = raw::attention_grid(k);
    CHECK(g4.raw_data() == k.raw_data());
    CHECK(g4.strides() == Shape{9 * 36, 4, 36, 1});
    Tensor five = raw::randn({2, 3, 4, 5, 6});
    Tensor g5 = raw::attention_grid(five);
    CHECK(g5.shape() == Shape{6, 4, 5, 6});
    CHECK(g5.raw_data() == five.raw_data());
    Tensor crossed = raw::transpose(raw::randn({3, 2, 4, 5, 6}), 0, 1);  // [2, 3, 4, 5, 6], its first dims do not merge
    Tensor g5c = raw::attention_grid(crossed);
    CHECK(g5c.shape() == Shape{6, 4, 5, 6});
    CHECK(g5c.raw_data() != crossed.raw_data());
    CHECK(g5c.to_vector() == raw::contiguous(crossed).to_vector());
    check_error([] { raw::attention_grid(raw::randn({4})); }, {"attention", "at least 2 dims", "[4]"});
}

// Heads split from projections of their own (Llama's q, k and v): the op
// writes its output, and the gradient of a heads-last input, in the
// [B, T, H, D] layout, so that merging the heads back after it and
// splitting them before it (transpose and reshape) are views on the way
// forward and back (the profiler counts copies as "movement"): forward
// copies nothing, backward only stores each leaf's gradient, one copy per
// leaf as for any leaf. The numbers are those of contiguous operands, to
// the bit.
TEST_CASE("attention on heads split from projections copies nothing to merge them", "[nn][attention]") {
    const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
    auto heads = [&](const Tensor& t) { return transpose(view(t, {B, T, H, D}), 1, 2); };
    for (bool causal : {false, true}) {
        INFO("causal " << causal);
        Generator gen(69);
        Tensor dy = raw::randn({B, T, C}, gen);
        std::vector<Tensor> viewed, copied;
        for (int i = 0; i < 3; ++i) {
            Tensor x = raw::randn({B, T, C}, gen);
            viewed.push_back(raw::clone(x).set_requires_grad(true));
            copied.push_back(raw::clone(x).set_requires_grad(true));
        }
        reset_profile();
        set_profiling(true);
        Tensor y = scaled_dot_product_attention(heads(viewed[0]), heads(viewed[1]), heads(viewed[2]), causal);
        Tensor merged = reshape(transpose(y, 1, 2), {B, T, C});
        CHECK(profile_totals().calls[(int)OpKind::Movement] == 0);
        backward(sum(merged * dy));
        set_profiling(false);
        CHECK(profile_totals().calls[(int)OpKind::Movement] == 3);   // the three leaves' gradients
        CHECK(profile_totals().calls[(int)OpKind::Attention] == 2);  // forward and backward ran
        reset_profile();
        auto apart = [&](const Tensor& t) { return contiguous(heads(t)); };
        Tensor y2 = scaled_dot_product_attention(apart(copied[0]), apart(copied[1]), apart(copied[2]), causal);
        Tensor merged2 = reshape(contiguous(transpose(y2, 1, 2)), {B, T, C});
        backward(sum(merged2 * dy));
        CHECK(merged.to_vector() == merged2.to_vector());
        for (int i = 0; i < 3; ++i) CHECK(viewed[i].grad().to_vector() == copied[i].grad().to_vector());
    }
}

// The attention op on q, k and v taken apart from one [B, T, 3C] tensor
// with narrow() (with q, k and v rounded to `operand` when it is 16-bit),
// heads merged back: what packed_qkv_attention must equal.
static Tensor attention_on_parts(const Tensor& qkv, int64_t heads, bool causal, DType operand = kFloat32) {
    int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, D = C / heads;
    auto part = [&](int64_t which) { return transpose(view(narrow(qkv, 2, which * C, C), {B, T, heads, D}), 1, 2); };
    Tensor y = scaled_dot_product_attention(part(0), part(1), part(2), causal, 0, operand);
    return reshape(transpose(y, 1, 2), {B, T, C});
}

// q, k, v side by side in one [B, T, 3C] tensor (GPT-2's one projection):
// the same as taking them apart with narrow() and calling the op above,
// forward and gradient to the last bit (float32 and float64), and against
// float64 finite differences; one head and several, causal or not.
TEST_CASE("packed q, k, v attention equals the op on the three parts", "[nn][attention]") {
    for (DType dtype : {kFloat32, kFloat64})
        for (int64_t heads : {1, 3})
            for (bool causal : {false, true}) {
                INFO(dtype_name(dtype) << ", " << heads << " heads, causal " << causal);
                Generator gen(67);
                Tensor qkv = raw::to_dtype(raw::randn({2, 5, 3 * heads * 4}, gen), dtype);
                Tensor dy = raw::to_dtype(raw::randn({2, 5, heads * 4}, gen), dtype);
                Tensor a = raw::clone(qkv).set_requires_grad(true), b = raw::clone(qkv).set_requires_grad(true);
                Tensor ya = packed_qkv_attention(a, heads, causal), yb = attention_on_parts(b, heads, causal);
                CHECK(ya.shape() == yb.shape());
                CHECK(ya.to_vector() == yb.to_vector());
                backward(sum(ya * dy));
                backward(sum(yb * dy));
                CHECK(a.grad().to_vector() == b.grad().to_vector());
                if (dtype == kFloat64)
                    check_gradcheck([heads, causal](const V& x) { return packed_qkv_attention(x[0], heads, causal); },
                                    {leaf({2, 5, 3 * heads * 4}, 68)});
            }
    check_error([] { packed_qkv_attention(raw::zeros({2, 5, 10}), 2, true); }, {"attention", "[2, 5, 10]", "2 heads"});
}

// Mixed precision: the packed op with q, k and v rounded to 16 bits gives
// what the 16-bit op on the three parts gives (the path GPT-2 took in 16
// bits before), output and gradient to the last bit; and it differs from
// the float32 op (the rounding happens). Independently of the 16-bit code,
// its output is the float64 attention of the rounded numbers, within
// float32's rounding.
TEST_CASE("packed q, k, v attention in 16 bits equals the 16-bit op on the three parts", "[nn][attention]") {
    for (DType operand : {kBFloat16, kFloat16})
        for (int64_t heads : {1, 3})
            for (bool causal : {false, true}) {
                INFO(dtype_name(operand) << ", " << heads << " heads, causal " << causal);
                Generator gen(69);
                Tensor qkv = raw::randn({2, 7, 3 * heads * 8}, gen), dy = raw::randn({2, 7, heads * 8}, gen);
                Tensor a = raw::clone(qkv).set_requires_grad(true), b = raw::clone(qkv).set_requires_grad(true);
                Tensor c = raw::clone(qkv).set_requires_grad(true);
                Tensor ya = packed_qkv_attention(a, heads, causal, operand), yb = attention_on_parts(b, heads, causal, operand);
                Tensor yc = packed_qkv_attention(c, heads, causal, kFloat32);
                CHECK(ya.shape() == yb.shape());
                CHECK(ya.to_vector() == yb.to_vector());
                CHECK(ya.to_vector() != yc.to_vector());
                // The float64 attention of the rounded numbers, with plain ops.
                Tensor rounded = raw::to_dtype(raw::to_dtype(qkv, operand), kFloat64);
                auto part = [&](int64_t which) {
                    return transpose(view(narrow(rounded, 2, which * heads * 8, heads * 8), {2, 7, heads, 8}), 1, 2);
                };
                Tensor exact = attention_reference(part(0), part(1), part(2), causal);
                check_values(ya, reshape(transpose(exact, 1, 2), {2, 7, heads * 8}).to_vector(), 1e-5);
                backward(sum(ya * dy));
                backward(sum(yb * dy));
                backward(sum(yc * dy));
                CHECK(a.grad().to_vector() == b.grad().to_vector());
                CHECK(a.grad().to_vector() != c.grad().to_vector());
            }
    check_error([] { packed_qkv_attention(raw::zeros({2, 5, 12}, kFloat64), 2, true, kBFloat16); },
                {"attention", "float64", "bfloat16"});
}

TEST_CASE("causal attention at position t ignores tokens after t", "[nn][attention]") {
    Generator gen(66);
    Tensor q = raw::randn({1, 2, 6, 4}, gen), k = raw::randn({1, 2, 6, 4}, gen), v = raw::randn({1, 2, 6, 4}, gen);
    Tensor out = scaled_dot_product_attention(q, k, v, true);
    // Change keys and values at positions 4 and 5: outputs 0..3 stay the same.
    Tensor k2 = raw::clone(k), v2 = raw::clone(v);
    raw::copy_(raw::narrow(k2, 2, 4, 2), raw::randn({1, 2, 2, 4}, gen));
    raw::copy_(raw::narrow(v2, 2, 4, 2), raw::randn({1, 2, 2, 4}, gen));
    Tensor out2 = scaled_dot_product_attention(q, k2, v2, true);
    check_values(raw::narrow(out2, 2, 0, 4), raw::narrow(out, 2, 0, 4).to_vector(), 0);
    CHECK(raw::narrow(out2, 2, 4, 2).to_vector() != raw::narrow(out, 2, 4, 2).to_vector());
    check_error([&] { scaled_dot_product_attention(q, raw::zeros({1, 2, 6, 3}), v, true); }, {"attention", "[1, 2, 6, 3]"});
}

TEST_CASE("fused ops do not keep their own outputs alive", "[nn][memory]") {
    Tensor x = leaf({2, 3, 4}, 70), g = leaf({4}, 71), b = leaf({4}, 72);
    Tensor alpha = raw::full({}, 0.5, kFloat64).set_requires_grad(true);
    Tensor t = raw::from_indices({0, 1, 2, 3, 0, 1}, {2, 3});
    std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
        {"layer_norm", [&] { return layer_norm(x, g, b, 1e-5); }},
        {"rms_norm", [&] { return rms_norm(x, g, 1e-5); }},
        {"cross_entropy", [&] { return cross_entropy(x, t); }},
        {"geodesic_update", [&] { return geodesic_update(x, x * 2.0, alpha); }},
        {"attention", [&] { return scaled_dot_product_attention(x, x, x, true); }},
        {"gelu", [&] { return gelu(x); }}, {"sigmoid", [&] { return sigmoid(x); }},
    };
    for (auto& [name, op] : ops) {
        INFO(name);
        Tensor out = op();
        std::weak_ptr<TensorImpl> alive = out.impl_ptr();
        out = Tensor();
        CHECK(alive.expired());
    }
}

TEST_CASE("the fused geodesic update equals its composition from plain ops", "[nn][geonorm][fused]") {
    // Generic case (theta away from 0): cos(theta) x + |x| sin(theta) w / |w| with
    // theta = |w| / |x|, w = alpha (u - <u,x>/<x,x> x), all differentiable ops.
    // Rows of 5 numbers, fewer than the row sums' 8 lanes, and of 37: four
    // steps of 8 and 5 more.
    for (int64_t D : {5, 37}) {
        INFO("D = " << D);
        auto [x, u] = point_and_update(3, D, 0.9, 73);
        Tensor alpha = raw::full({}, 0.8, kFloat64).set_requires_grad(true);
        check_same_function([](const V& v) { return geodesic_update(v[0], v[1], v[2]); },
                            [](const V& v) {
                                Tensor xx = sum(v[0] * v[0], {-1}, true);
                                Tensor w = (v[1] - sum(v[1] * v[0], {-1}, true) / xx * v[0]) * v[2];
                                Tensor wn = sqrt(sum(w * w, {-1}, true)), xn = sqrt(xx);
                                Tensor theta = wn / xn;
                                return cos(theta) * v[0] + xn * sin(theta) * w / wn;
                            },
                            {x, u, alpha}, 1e-12);
    }
}

// The geodesic update's row sums run in 8 lanes, as the norms' do: a row
// has the same float64 bits, forward and backward, as the same numbers
// updated alone at an unaligned place in memory (see the norms' test).
TEST_CASE("a row's geodesic update does not depend on where it sits", "[nn][geonorm][fused]") {
    auto [x, u] = point_and_update(11, 37, 0.9, 74);
    Generator gen(75);
    Tensor alpha = raw::full({}, 0.6, kFloat64), dy = raw::randn({11, 37}, gen, kFloat64);
    Tensor y = raw::geodesic_update(x, u, alpha);
    raw::GeodesicBackward d = raw::geodesic_update_backward(dy, x, u, alpha);
    for (int64_t r = 0; r < 11; ++r) {
        INFO("row " << r);
        auto alone = [&](const Tensor& t) {  // row r, copied 1 + r % 3 numbers into a fresh buffer
            Tensor buffer = raw::zeros({41}, kFloat64);
            Tensor copy = raw::view(raw::narrow(buffer, 0, 1 + r % 3, 37), {1, 37});
            raw::copy_(copy, raw::narrow(t, 0, r, 1));
            return copy;
        };
        auto row_of = [&](const Tensor& t) { return raw::narrow(t, 0, r, 1).to_vector(); };
        Tensor xr = alone(x), ur = alone(u), dyr = alone(dy);
        CHECK(row_of(y) == raw::geodesic_update(xr, ur, alpha).to_vector());
        raw::GeodesicBackward dr = raw::geodesic_update_backward(dyr, xr, ur, alpha);
        CHECK(row_of(d.dx) == dr.dx.to_vector());
        CHECK(row_of(d.du) == dr.du.to_vector());
    }
}
