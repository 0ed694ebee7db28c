// isometry_networks.cpp — the isometry study's networks and measurements
// (studies/isometry.h): Gaussian integrals for the Hermite coefficients,
// MLPs at initialization, and MLPs trained on Fashion-MNIST.
#include <algorithm>
#include <cmath>

#include "analysis/diagnostics.h"
#include "autograd/mode.h"
#include "autograd/ops.h"
#include "autograd/ops_nn.h"
#include "optim/optimizer.h"
#include "studies/isometry.h"
#include "studies/protocol.h"
#include "tensor/raw_nn.h"
#include "train/train_step.h"

namespace nc {
namespace app {
namespace isometry {

std::vector<Activation> activations() {
    return {
        {"identity", [](double x) { return x; }, [](const Tensor& x) { return x; }, [](const Tensor& x) { return x; }},
        {"relu", [](double x) { return x > 0 ? x : 0.0; }, [](const Tensor& x) { return raw::relu(x); },
         [](const Tensor& x) { return relu(x); }},
        {"tanh", [](double x) { return std::tanh(x); }, [](const Tensor& x) { return raw::tanh(x); },
         [](const Tensor& x) { return tanh(x); }},
        {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
         [](const Tensor& x) { return raw::gelu(x, false); }, [](const Tensor& x) { return gelu(x, false); }},
        {"sin", [](double x) { return std::sin(x); }, [](const Tensor& x) { return raw::sin(x); },
         [](const Tensor& x) { return sin(x); }},
    };
}

// E[f(x)] for x ~ N(0, 1), by the trapezoid rule on [-12, 12] (the density
// beyond is below 1e-31): accurate to ~1e-10 for these smooth-enough f.
static double gaussian_mean(const std::function<double(double)>& f) {
    const int steps = 200000;
    const double lo = -12, hi = 12, h = (hi - lo) / steps;
    double total = 0;
    for (int i = 0; i <= steps; ++i) {
        double x = lo + i * h;
        double w = (i == 0 || i == steps) ? 0.5 : 1.0;
        total += w * f(x) * std::exp(-0.5 * x * x);
    }
    return total * h / std::sqrt(2 * M_PI);
}

// beta0 = c1^2 / sum_{k>=1} c_k^2 with c0 = E[s(x)], c1 = E[x s(x)] and
// sum_{k>=1} c_k^2 = E[s(x)^2] - c0^2 (normalized Hermite basis). 1 for a
// linear activation, smaller the more nonlinear it is.
double hermite_beta0(const Activation& a) {
    double c0 = gaussian_mean(a.scalar);
    double c1 = gaussian_mean([&](double x) { return x * a.scalar(x); });
    double second = gaussian_mean([&](double x) { return a.scalar(x) * a.scalar(x); });
    return c1 * c1 / (second - c0 * c0);
}

// ---- the networks ------------------------------------------------------------------

// LayerNorm without affine (centre, divide by the RMS) over features: the
// fused kernel with no gamma and beta.
static Tensor layer_norm_plain(const Tensor& h) { return raw::layer_norm(h, Tensor(), Tensor(), 1e-5).out; }
// BatchNorm at initialization (batch statistics, no affine): the same
// normalization over samples instead of features.
static Tensor batch_norm_plain(const Tensor& h) { return raw::transpose(layer_norm_plain(raw::transpose(h, 0, 1)), 0, 1); }

// Layer l: h <- act(W norm(h)), W ~ N(0, 1/width) (the authors' training
// notebook order: Norm -> Linear -> activation). The input batch is made
// nearly degenerate (its top singular direction boosted), so it starts far
// from isometry. `full`: all five measures, else only the gap.
Curve isometry_curve(const Activation& act, const std::string& norm, const Scale& s, uint64_t seed, bool full) {
    Curve c;
    for (auto* v : {&c.gap, &c.gap_normed, &c.bias, &c.margin, &c.margin_biased}) v->assign(s.depth + 1, {});
    for (int64_t r = 0; r < s.seeds; ++r) {
        Generator gen(seed + 1000 * (uint64_t)r);
        Tensor x = raw::randn({s.batch, s.width}, gen, kFloat64);
        Tensor shared = raw::randn({1, s.width}, gen, kFloat64);
        Tensor h = raw::add(x, raw::mul(shared, 5.0));  // every sample shares a large common direction
        for (int64_t l = 0; l <= s.depth; ++l) {
            c.gap[l].push_back(diag::isometry_gap(h));
            if (full) {
                c.gap_normed[l].push_back(diag::isometry_gap(layer_norm_plain(h)));
                c.bias[l].push_back(diag::normalization_bias(h));
                Tensor centred = raw::sub(h, raw::mean(h, {1}, true));
                c.margin[l].push_back(diag::theorem1_margin(centred, true));
                c.margin_biased[l].push_back(diag::theorem1_margin(centred, false));
            }
            if (l == s.depth) break;
            Tensor z = norm == "layernorm" ? layer_norm_plain(h) : norm == "batchnorm" ? batch_norm_plain(h) : h;
            Tensor w = raw::mul(raw::randn({s.width, s.width}, gen, kFloat64), 1.0 / std::sqrt((double)s.width));
            h = act.on_tensor(raw::matmul(z, w));
        }
    }
    return c;
}

std::vector<double> seed_means(const std::vector<std::vector<double>>& per_layer) {
    std::vector<double> out;
    for (const auto& xs : per_layer) out.push_back(mean(xs));
    return out;
}

// Standard error over seeds (the protocol's; 0 for one seed).
double standard_error(const std::vector<double>& xs) { return mean_interval(xs).se; }

// The level a curve settles at: the mean of its last tenth (at least 3 layers).
double curve_floor(const std::vector<double>& gap) {
    size_t tail = std::min(gap.size(), std::max<size_t>(3, gap.size() / 10));
    double floor = 0;
    for (size_t l = gap.size() - tail; l < gap.size(); ++l) floor += gap[l] / (double)tail;
    return floor;
}

// The measured decay per layer. A finite network does not reach gap 0: the
// curve levels off at a floor (curve_floor; finite width and batch, and a
// non-centred activation's mean direction). The rate is exp of the
// least-squares slope of log(gap - floor) against depth over the layers
// still well above the floor (gap > 2 floor).
double measured_rate(const std::vector<double>& gap) {
    double floor = curve_floor(gap);
    std::vector<double> xs, ys;
    for (size_t l = 0; l < gap.size(); ++l)
        if (gap[l] > 2 * floor && gap[l] > 1e-9) {
            xs.push_back((double)l);
            ys.push_back(std::log(gap[l] - floor));
        }
    if (xs.size() < 3) return NAN;
    double mx = 0, my = 0;
    for (size_t i = 0; i < xs.size(); ++i) mx += xs[i], my += ys[i];
    mx /= xs.size();
    my /= ys.size();
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < xs.size(); ++i) sxy += (xs[i] - mx) * (ys[i] - my), sxx += (xs[i] - mx) * (xs[i] - mx);
    return std::exp(sxy / sxx);
}

TrainedNet train_mlp(const Activation& act, const std::string& norm, int64_t depth, const TrainScale& s, const Tensor& images,
                     const Tensor& labels, const Tensor& test_images, const Tensor& test_labels, uint64_t seed) {
    Generator gen(seed);
    std::vector<Tensor> weights;
    int64_t in = images.size(1);
    for (int64_t l = 0; l <= depth; ++l) {  // depth hidden layers, then the head
        int64_t out = l == depth ? 10 : s.width;
        weights.push_back(raw::mul(raw::randn({in, out}, gen), 1.0 / std::sqrt((double)in)).set_requires_grad(true));
        in = out;
    }
    auto hidden = [&](const Tensor& x) {
        Tensor h = x;
        for (int64_t l = 0; l < depth; ++l) {
            Tensor z = norm == "layernorm" ? layer_norm(h, Tensor(), Tensor(), 1e-5) : h;
            h = act.on_graph(matmul(z, weights[l]));
        }
        return h;
    };
    auto logits = [&](const Tensor& x) {
        Tensor h = hidden(x);
        return matmul(norm == "layernorm" ? layer_norm(h, Tensor(), Tensor(), 1e-5) : h, weights[depth]);
    };
    TrainedNet net{act.name, norm, depth};
    const int64_t batch = 100, n = images.size(0);
    {
        NoGradGuard no_grad;
        int64_t samples = std::min<int64_t>(batch, s.width / 2);
        net.gap_at_init = diag::isometry_gap(raw::to_dtype(hidden(raw::narrow(images, 0, 0, samples)), kFloat64));
    }
    optim::SGD sgd({{weights}}, 0.01);
    // train's step (train/train_step.h), without clipping: a non-finite loss
    // refuses the step, and the network counts as diverged.
    int64_t step = 0;
    TrainStep one_step;
    one_step.loss = [&] {
        int64_t start = (step * batch) % (n - batch + 1);
        return cross_entropy(logits(raw::narrow(images, 0, start, batch)), raw::narrow(labels, 0, start, batch));
    };
    one_step.params = weights;
    one_step.optimizer = &sgd;
    one_step.measure_grad_norm = false;
    for (; step < s.steps; ++step) {
        if (train_step(one_step).refused != Refusal::None) {
            net.diverged = true;
            return net;
        }
    }
    NoGradGuard no_grad;
    net.test_loss = cross_entropy(logits(test_images), test_labels).item();
    net.diverged = !std::isfinite(net.test_loss);
    return net;
}

// Pixels standardized over the whole set, flattened to [N, 784].
Tensor standardized(const Tensor& images) {
    Tensor flat = raw::reshape(images, {images.size(0), images.numel() / images.size(0)});
    double m = raw::mean(flat).item(), sd = std::sqrt(raw::mean(raw::mul(raw::add(flat, -m), raw::add(flat, -m))).item());
    return raw::mul(raw::add(flat, -m), 1.0 / sd);
}

}  // namespace isometry
}  // namespace app
}  // namespace nc
