// The fast CPU kernels against their simple references: the tiled attention
// against the T x S-materializing one, the vectorizable exp/tanh against
// libm, and the fused AdamW against the formula element by element; and
// parallel.h's loops, which every kernel's threads go through.
#include <algorithm>

#include <omp.h>

#include "helpers.h"
#include "autograd/ops_nn.h"
#include "optim/optimizer.h"
#include "tensor/cpu/allocator.h"
#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/cpu/parallel.h"
#include "tensor/raw_nn.h"
#include "tensor/ops/adamw.h"

using namespace nc;
using nc_test::check_gradcheck;
using nc_test::check_values;
using nc_test::leaf;
using V = std::vector<Tensor>;

namespace {
struct AttentionCase {
    int64_t N, T, S, D, Dv;
    bool causal;
};

// Runs the tiled kernel and the reference kernel on the same inputs and
// compares outputs and all three gradients.
void compare_with_reference(const AttentionCase& c, DType dtype, double tol) {
    Generator gen(100 + c.T * 7 + c.S);
    Tensor q = raw::randn({c.N, c.T, c.D}, gen, dtype), k = raw::randn({c.N, c.S, c.D}, gen, dtype);
    Tensor v = raw::randn({c.N, c.S, c.Dv}, gen, dtype), dout = raw::randn({c.N, c.T, c.Dv}, gen, dtype);
    double scale = 1.0 / std::sqrt((double)c.D);

    // Results start as NaN: a kernel that leaves any value unwritten fails.
    Tensor out = raw::full({c.N, c.T, c.Dv}, NAN, dtype), lse = raw::full({c.N, c.T}, NAN, dtype);
    cpu_backend().attention.forward(q, k, v, c.causal, scale, out, lse);
    Tensor ref_out = raw::zeros({c.N, c.T, c.Dv}, dtype), probs = raw::zeros({c.N, c.T, c.S}, dtype);
    cpu::attention_reference(q, k, v, c.causal, scale, ref_out, probs);
    check_values(out, ref_out.to_vector(), tol);

    Tensor dq = raw::full(q.shape(), NAN, dtype), dk = raw::full(k.shape(), NAN, dtype), dv = raw::full(v.shape(), NAN, dtype);
    cpu_backend().attention.backward(dout, q, k, v, out, lse, c.causal, scale, dq, dk, dv);
    Tensor rdq = raw::zeros(q.shape(), dtype), rdk = raw::zeros(k.shape(), dtype), rdv = raw::zeros(v.shape(), dtype);
    cpu::attention_reference_backward(dout, q, k, v, probs, scale, rdq, rdk, rdv);
    check_values(dq, rdq.to_vector(), tol);
    check_values(dk, rdk.to_vector(), tol);
    check_values(dv, rdv.to_vector(), tol);
}
}  // namespace

TEST_CASE("tiled attention equals the reference kernel, value and gradient", "[attention][fast]") {
    // Sizes that are smaller than, equal to, and not multiples of the 128 x 128
    // tile; S > T (keys beyond the queries, some beyond every query's reach
    // when causal); head sizes D != Dv; no keys, and no queries. Causal, a
    // diagonal tile goes in bands of 32 (33: a last row joins the band
    // before it; 129 x 161: key bands that no query of the tile sees).
    for (AttentionCase c : {AttentionCase{3, 1, 1, 4, 4, true}, AttentionCase{2, 7, 7, 5, 3, true},
                            AttentionCase{2, 3, 0, 4, 4, false}, AttentionCase{2, 0, 5, 4, 4, false},
                            AttentionCase{2, 128, 128, 16, 16, true}, AttentionCase{2, 129, 129, 8, 8, false},
                            AttentionCase{1, 260, 260, 33, 7, true}, AttentionCase{1, 100, 301, 16, 16, false},
                            AttentionCase{1, 140, 300, 8, 12, true}, AttentionCase{2, 33, 33, 8, 8, true},
                            AttentionCase{1, 129, 161, 8, 4, true}}) {
        INFO("N=" << c.N << " T=" << c.T << " S=" << c.S << " D=" << c.D << " Dv=" << c.Dv << " causal=" << c.causal);
        compare_with_reference(c, kFloat32, 2e-5);
        compare_with_reference(c, kFloat64, 1e-12);
    }
}

// Generating a token: one query against the first S positions of a
// key/value cache [B, H, capacity, D], whose heads lie capacity * D apart.
// Forward reads them where they are (attention.h); positions past S hold
// other numbers, so a kernel that took the heads as S * D apart would
// read them. The result must equal attention on contiguous copies, bit
// for bit, and no copy of the cache may be made.
TEST_CASE("attention reads the keys and values of a cache prefix in place", "[attention][fast][kvcache]") {
    Generator gen(31);
    const int64_t B = 2, H = 3, capacity = 40, S = 17, D = 8;
    for (DType dtype : {kFloat32, kFloat64}) {
        Tensor k_cache = raw::randn({B, H, capacity, D}, gen, dtype), v_cache = raw::randn({B, H, capacity, D}, gen, dtype);
        Tensor q = raw::randn({B, H, 1, D}, gen, dtype);
        Tensor k = raw::narrow(k_cache, 2, 0, S), v = raw::narrow(v_cache, 2, 0, S);
        REQUIRE_FALSE(k.is_contiguous());
        Tensor k_copy = raw::contiguous(k), v_copy = raw::contiguous(v);
        auto allocations = [] {
            AllocatorStats a = cpu::allocator_stats();
            return a.system_allocations + a.cache_hits;
        };
        int64_t start = allocations();
        raw::AttentionForward copied = raw::attention(q, k_copy, v_copy, /*causal=*/false, 0.3);
        int64_t middle = allocations();
        raw::AttentionForward in_place = raw::attention(q, k, v, /*causal=*/false, 0.3);
        int64_t end = allocations();
        INFO(dtype_name(dtype));
        CHECK(in_place.out.to_vector() == copied.out.to_vector());
        CHECK(in_place.logsumexp.to_vector() == copied.logsumexp.to_vector());
        CHECK(end - middle == middle - start);  // no allocation for a copy of k or v
    }
}

TEST_CASE("gradcheck: tiled attention across several tiles", "[attention][fast][gradcheck]") {
    // T = 140 spans two query tiles and two key tiles (one partial).
    Tensor q = leaf({1, 140, 3}, 71), k = leaf({1, 140, 3}, 72), v = leaf({1, 140, 2}, 73);
    GradcheckOptions options;
    options.max_elements_per_input = 40;
    for (bool causal : {true, false}) {
        INFO("causal " << causal);
        GradcheckResult r = gradcheck(
            [causal](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); }, {q, k, v},
            options);
        INFO(r.report());
        CHECK(r.passed);
    }
}

TEST_CASE("tiled attention keeps memory linear in T", "[attention][fast][memory]") {
    // What forward saves for backward: out [N, T, Dv] and one float per query,
    // never [N, T, T]. At T = 2048 the probabilities alone would be 16 MiB.
    Generator gen(9);
    Tensor q = raw::randn({1, 2048, 8}, gen);
    raw::AttentionForward f = raw::attention(q, q, q, true, 0.35);
    CHECK(f.logsumexp.shape() == Shape{1, 2048});
    CHECK(f.out.shape() == Shape{1, 2048, 8});
}

TEST_CASE("max_of, sum_of and dot_of equal the plain loops", "[fast][reduce]") {
    Generator gen(31);
    for (int64_t n : {0, 1, 15, 16, 17, 31, 32, 47, 100, 1000}) {
        INFO("n = " << n);
        std::vector<double> values = raw::randn({n + 1}, gen, kFloat64).to_vector();
        std::vector<double> others = raw::randn({n + 1}, gen, kFloat64).to_vector();
        std::vector<float> x(values.begin(), values.begin() + n), y(others.begin(), others.begin() + n);
        double plain_sum = 0, plain_dot = 0;
        float plain_max = -3.0f;  // the start value, also the answer when every x is below it
        for (int64_t i = 0; i < n; ++i) {
            plain_sum += x[i];
            plain_dot += (double)x[i] * y[i];
            plain_max = std::max(plain_max, x[i]);
        }
        CHECK(cpu::max_of(x.data(), n, -3.0f) == plain_max);
        CHECK(std::abs((double)cpu::sum_of(x.data(), n) - plain_sum) <= 1e-5 * (1 + std::sqrt((double)n)));
        CHECK(std::abs((double)cpu::dot_of(x.data(), y.data(), n) - plain_dot) <= 1e-5 * (1 + std::sqrt((double)n)));
        std::vector<double> xd(values.begin(), values.begin() + n);
        const double lowest = -(double)INFINITY;
        CHECK(cpu::max_of(xd.data(), n, lowest) == (n ? *std::max_element(xd.begin(), xd.end()) : lowest));
    }
}

// sum_in_double: kSumLanes running sums in double. Accurate to a long
// double sum, and the same bits for the same numbers at another address
// (a vectorized loop that first stepped to an aligned address would add in
// another order). The numbers span 2^-30 to 2^30, so that the order of the
// additions shows in the bits (sums of ordinary floats would be exact in
// double, in any order).
TEST_CASE("sum_in_double is accurate and does not depend on where the numbers sit", "[fast][reduce]") {
    Generator gen(32);
    for (int64_t n : {0, 1, 7, 8, 9, 100, 1001}) {
        INFO("n = " << n);
        std::vector<double> normal = raw::randn({n + 1}, gen, kFloat64).to_vector();
        std::vector<double> exponent = raw::rand({n + 1}, gen, kFloat64).to_vector();
        std::vector<double> x(n);
        long double exact = 0, magnitude = 0;
        for (int64_t i = 0; i < n; ++i) {
            x[i] = std::ldexp(normal[i], (int)(60 * exponent[i]) - 30);
            exact += x[i];
            magnitude += std::abs(x[i]);
        }
        const double sum = cpu::sum_in_double(x.data(), n);
        CHECK(std::abs(sum - (double)exact) <= 1e-15 * (double)magnitude * std::max<int64_t>(1, n));
        for (int shift = 1; shift < 8; ++shift) {
            std::vector<double> moved(n + shift, 0.0);
            std::copy(x.begin(), x.end(), moved.begin() + shift);
            CHECK(cpu::sum_in_double(moved.data() + shift, n) == sum);
        }
    }
}

TEST_CASE("exp_fast and tanh_fast agree with libm", "[fast][elementwise]") {
    double worst_exp = 0, worst_tanh = 0;
    for (int i = -200000; i <= 200000; ++i) {
        float x = (float)i * 4.4e-4f;  // [-88, 88]
        double e = std::exp((double)x);
        if (e > 1.2e-38 && e < 3e38) worst_exp = nc_test::worst_of(worst_exp, std::abs(cpu::exp_fast(x) - e) / e);
        float y = (float)i * 5e-5f;  // [-10, 10]
        double t = std::tanh((double)y);
        worst_tanh = nc_test::worst_of(worst_tanh, std::abs(cpu::tanh_fast(y) - t) / std::max(std::abs(t), 1e-30));
    }
    INFO("worst relative error: exp " << worst_exp << ", tanh " << worst_tanh);
    CHECK(worst_exp < 5e-7);
    CHECK(worst_tanh < 5e-7);
    CHECK(cpu::exp_fast(-100.0f) == 0.0f);
    CHECK(std::isinf(cpu::exp_fast(100.0f)));
    CHECK(std::isnan(cpu::exp_fast(NAN)));
    // A NaN only known at run time (a constant one is folded away): under
    // UBSan the exponent bits of a NaN's n were once a shift of INT_MIN.
    volatile float runtime_nan = NAN;
    CHECK(std::isnan(cpu::exp_fast((float)runtime_nan)));
    CHECK(std::isnan(cpu::tanh_fast((float)runtime_nan)));
    CHECK(cpu::exp_fast(0.0f) == 1.0f);
    CHECK(cpu::tanh_fast(0.0f) == 0.0f);
    CHECK(cpu::tanh_fast(30.0f) == 1.0f);
    CHECK(cpu::tanh_fast(-30.0f) == -1.0f);
    // Found by comparing with the GPU's kernels (tests/emulated): the clamp
    // at |x| = 10 once turned a NaN into 1.
    CHECK(std::isnan(cpu::tanh_fast(NAN)));
    CHECK(cpu::tanh_fast(INFINITY) == 1.0f);
    CHECK(cpu::tanh_fast(-INFINITY) == -1.0f);
}

// GPT-2's GELU in float32 (x sigmoid(2u), tensor/activations.h) against
// long double, forward and backward, on [-12, 12]: within a few float32
// roundings everywhere, the far left tail included, where 0.5 x (1 + tanh(u))
// rounds to 0 in float32 but x sigmoid(2u) keeps the tiny negative values.
TEST_CASE("float32 GELU (tanh form) agrees with long double", "[fast][elementwise]") {
    const int n = 48001;
    std::vector<float> xs(n);
    for (int i = 0; i < n; ++i) xs[i] = -12.0f + 24.0f * (float)i / (float)(n - 1);
    Tensor x = raw::from_vector(xs, {n});
    Tensor ones = raw::add(raw::mul(x, 0.0), 1.0);
    std::vector<double> y = raw::gelu(x, true).to_vector();  // float32 values, widened exactly
    std::vector<double> dy = raw::gelu_backward(x, ones, true).to_vector();
    double worst_y = 0, worst_dy = 0;
    for (int i = 0; i < n; ++i) {
        // 0.5 (1 + tanh u) = 1 / (1 + e^-2u) = s and 0.5 (1 - tanh^2 u) = 2 s (1 - s),
        // written so that long double keeps the tail (its tanh(u) is -1 below u = -22).
        long double v = xs[i], k = std::sqrt(2.0L / 3.14159265358979323846L);
        long double u = k * (v + 0.044715L * v * v * v), e = std::exp(-2 * u);
        long double s = 1 / (1 + e), one_minus_s = e / (1 + e);
        long double ref = v * s, dref = s + 2 * v * s * one_minus_s * k * (1 + 3 * 0.044715L * v * v);
        // u itself is rounded to float32 first, and on the left e^-2u turns
        // that rounding into a relative error |2u| times as large (2u = -85
        // at x = -9.9): there the error is measured in units of 1 + |2u|. On
        // the right s is near 1 and amplifies nothing. Where s falls below
        // FLT_MIN (x < -10) it is a subnormal float with fewer bits: there
        // the error is checked against FLT_MIN instead.
        if (ref == 0) CHECK(y[i] == 0);  // x = 0
        else if (s > 1.2e-38L)
            worst_y = nc_test::worst_of(worst_y, (double)(std::fabs(y[i] - ref) / std::fabs(ref) / (u < 0 ? 1 - 2 * u : 1)));
        else CHECK(std::fabs(y[i] - ref) <= std::fabs(v) * 1.2e-38L);
        // The derivative crosses 0 near x = -0.75: errors relative to at least 0.1.
        worst_dy = nc_test::worst_of(worst_dy, (double)(std::fabs(dy[i] - dref) / std::max(std::fabs(dref), 0.1L)));
    }
    INFO("worst relative error: forward " << worst_y << " (per 1 + |2u| where u < 0), backward " << worst_dy);
    CHECK(worst_y < 5e-7);
    CHECK(worst_dy < 4e-6);
    // x = -8: GELU is about -3e-21, which 0.5 x (1 + tanh(u)) loses entirely.
    double left = raw::gelu(raw::from_vector(std::vector<float>{-8.0f}, {1}), true).to_vector()[0];
    CHECK(left < 0.0);
}

// The float32 cross-entropy takes its exponentials from exp_fast (the
// float64 one from libm): its losses, log-sum-exps and gradients must stay
// within a few float32 roundings of the float64 computation on the same
// logits, with rows of large logits (no overflow) and an ignored row.
TEST_CASE("float32 cross-entropy stays within float32 rounding of float64", "[fast][loss]") {
    Generator gen(41);
    const int64_t N = 64, V = 300;
    Tensor logits = raw::mul(raw::randn({N, V}, gen), 4.0);
    std::vector<double> as_double = logits.to_vector();
    std::vector<float> values(as_double.begin(), as_double.end());
    for (int64_t v = 0; v < V; ++v) {
        values[1 * V + v] += 80.0f;                       // exp(80) alone would be near float32's limit
        values[2 * V + v] = v == 7 ? 1e4f : values[2 * V + v];  // one logit far above the others
        values[4 * V + v] = v == 5 ? 8.0f : 0.0f;  // a probability of 0.91: its gradient shows exp's error whole
    }
    logits = raw::from_vector(values, {N, V});
    std::vector<int64_t> target_ids;
    for (int64_t n = 0; n < N; ++n) target_ids.push_back(n == 3 ? -100 : (n * 37) % V);
    Tensor targets = raw::from_indices(target_ids, {N});
    raw::CrossEntropyForward f32 = raw::cross_entropy(logits, targets, -100);
    raw::CrossEntropyForward f64 = raw::cross_entropy(raw::to_dtype(logits, kFloat64), targets, -100);
    std::vector<double> lse32 = f32.logsumexp.to_vector(), lse64 = f64.logsumexp.to_vector();
    std::vector<double> loss32 = f32.losses.to_vector(), loss64 = f64.losses.to_vector();
    double worst_lse = 0, worst_loss = 0;
    for (int64_t n = 0; n < N; ++n) {
        worst_lse = nc_test::worst_of(worst_lse, std::abs(lse32[n] - lse64[n]) / std::max(1.0, std::abs(lse64[n])));
        worst_loss = nc_test::worst_of(worst_loss, std::abs(loss32[n] - loss64[n]) / std::max(1.0, std::abs(lse64[n])));
    }
    Tensor dlosses = raw::ones({N});
    std::vector<double> d32 = raw::cross_entropy_backward(dlosses, logits, targets, f32, -100).to_vector();
    std::vector<double> d64 =
        raw::cross_entropy_backward(raw::to_dtype(dlosses, kFloat64), raw::to_dtype(logits, kFloat64), targets, f64, -100)
            .to_vector();
    double worst_grad = 0;
    for (size_t i = 0; i < d32.size(); ++i) worst_grad = nc_test::worst_of(worst_grad, std::abs(d32[i] - d64[i]));
    INFO("worst: log-sum-exp " << worst_lse << ", loss " << worst_loss << " (relative), gradient " << worst_grad);
    CHECK(worst_lse < 1e-7);
    CHECK(worst_loss < 1.5e-7);
    CHECK(worst_grad < 8e-7);  // each value is at most 1 in size (dloss times a probability)
    CHECK(loss32[3] == 0.0);   // the ignored row
}

TEST_CASE("fused AdamW equals the formula on many tensors of odd sizes", "[optim][fast]") {
    Generator gen(21);
    std::vector<int64_t> sizes = {1, 7, 33, 40000};  // 40000 spans several chunks
    std::vector<Tensor> params;
    for (int64_t n : sizes) params.push_back(raw::randn({n}, gen));
    for (Tensor& p : params) p.set_requires_grad(true);
    double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8;
    optim::AdamW adam({{{params[0], params[2]}, 0.1}, {{params[1], params[3]}, 0.0}}, lr, b1, b2, eps);
    std::vector<std::vector<double>> x, m, v;
    for (Tensor& p : params) {
        x.push_back(p.to_vector());
        m.emplace_back(p.numel(), 0.0);
        v.emplace_back(p.numel(), 0.0);
    }
    double decay[] = {0.1, 0.0, 0.1, 0.0};
    for (int t = 1; t <= 3; ++t) {
        std::vector<std::vector<double>> grads;
        for (Tensor& p : params) {
            Tensor g = raw::randn(p.shape(), gen);
            p.set_grad(g);
            grads.push_back(g.to_vector());
        }
        adam.step();
        for (size_t i = 0; i < params.size(); ++i) {
            for (size_t e = 0; e < x[i].size(); ++e) {
                double g = grads[i][e];
                x[i][e] *= 1 - lr * decay[i];
                m[i][e] = b1 * m[i][e] + (1 - b1) * g;
                v[i][e] = b2 * v[i][e] + (1 - b2) * g * g;
                x[i][e] -= lr * (m[i][e] / (1 - std::pow(b1, t))) / (std::sqrt(v[i][e] / (1 - std::pow(b2, t))) + eps);
            }
            INFO("step " << t << ", tensor of " << sizes[i]);
            check_values(params[i], x[i], 2e-6);
        }
    }
}

TEST_CASE("adamw_update refuses mismatched state", "[optim][fast][errors]") {
    Tensor p = raw::zeros({3}), g = raw::zeros({3}), m = raw::zeros({3}), wrong = raw::zeros({4});
    AdamWStep h{0.1, 0.9, 0.999, 1e-8, 0.1, 0.001};
    nc_test::check_error([&] { raw::adamw_update({p}, {g}, {m}, {wrong}, {0.0}, h); },
                         {"adamw_update", "parameter 0", "[4]"});
    nc_test::check_error([&] { raw::adamw_update({p}, {g}, {m}, {m}, {}, h); }, {"adamw_update", "one gradient"});
}

// parallel.h: every item runs once, with or without threads; and a kernel's
// one-thread loop called from inside another kernel's threads (as
// attention's tile products are) runs all its own items on its own
// thread. A bare `#pragma omp for` in that one-thread path would bind to
// the outer threads and hand each of them a part of every inner loop.
TEST_CASE("parallel_for and parallel_for_dynamic run every item once, nested or not", "[fast][parallel][threads]") {
    for (bool parallel : {false, true}) {
        std::vector<int> seen(1000, 0);
        cpu::parallel_for(1000, parallel, [&](int64_t i) { seen[i]++; });
        CHECK(std::count(seen.begin(), seen.end(), 1) == 1000);
        std::fill(seen.begin(), seen.end(), 0);
        int scratch_made = 0;
        cpu::parallel_for_dynamic(
            1000, parallel,
            [&] {
#pragma omp atomic
                scratch_made++;
                return std::vector<int>(4);
            },
            [&](int64_t i, std::vector<int>& scratch) {
                scratch[0]++;
                seen[i]++;
            });
        CHECK(std::count(seen.begin(), seen.end(), 1) == 1000);
        if (parallel) {
            CHECK(scratch_made >= 1);  // once per thread of the team
            CHECK(scratch_made <= omp_get_max_threads());
        } else {
            CHECK(scratch_made == 1);
        }
    }
    // The point of parallel_for_dynamic's one-thread path: a kernel's loop
    // with too little work for threads, run from inside another kernel's
    // threads (two here), must give its one thread all of its items.
    const int64_t outer = 8, inner = 100;
    std::vector<std::vector<int64_t>> order(outer);
#pragma omp parallel for num_threads(2) schedule(static)
    for (int64_t o = 0; o < outer; ++o)
        cpu::parallel_for_dynamic(
            inner, false, [] { return 0; }, [&](int64_t i, int&) { order[o].push_back(i); });
    for (int64_t o = 0; o < outer; ++o) {
        REQUIRE(order[o].size() == (size_t)inner);
        for (int64_t i = 0; i < inner; ++i) CHECK(order[o][i] == i);
    }
}
