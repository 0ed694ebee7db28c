// experiment_isometry.cpp — `normcore experiment isometry`: deep MLPs at
// initialization (Joudaki, Daneshmand & Bach, 2023): how fast a batch's Gram
// matrix becomes isometric with depth, per activation, with LayerNorm,
// BatchNorm or no norm, next to the rate predicted from each activation's
// Hermite coefficients. Unlike the other studies it trains nothing, so it
// runs in this process.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "studies/study.h"
#include "studies/protocol.h"
#include "train/train_step.h"
#include "autograd/engine.h"
#include "autograd/mode.h"
#include "autograd/ops.h"
#include "autograd/ops_nn.h"
#include "data/images.h"
#include "analysis/diagnostics.h"
#include "optim/optimizer.h"
#include "tensor/raw_nn.h"

namespace nc {
namespace app {

namespace {


// ---- the activations and their Hermite coefficients ------------------------------

struct Activation {
    std::string name;
    std::function<double(double)> scalar;              // for the Gaussian integrals
    std::function<Tensor(const Tensor&)> on_tensor;    // for the network at initialization
    std::function<Tensor(const Tensor&)> on_graph;     // the same with autograd, for training
};

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
double gaussian_mean(const std::function<double(double)>& f) {
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
Tensor layer_norm_plain(const Tensor& h) { return raw::layer_norm(h, Tensor(), Tensor(), 1e-5).out; }
// BatchNorm at initialization (batch statistics, no affine): the same
// normalization over samples instead of features.
Tensor batch_norm_plain(const Tensor& h) { return raw::transpose(layer_norm_plain(raw::transpose(h, 0, 1)), 0, 1); }

struct Scale {
    int64_t width, depth, batch, seeds;
};

// Per layer 0..depth, one value per seed, of what the study measures at a
// layer whose input is h (the rows are the batch's samples):
//   gap         -log I of h itself, the point this study measured first;
//   gap_normed  -log I of LN(h) (centred, divided by the RMS): the point the
//               authors measure, whose recursion is h <- LN(act(W h));
//   bias        the normalization bias of h;
//   margin      Theorem 1's margin on the centred h (diag::theorem1_margin:
//               >= 0 where normalizing raised I by at least 1 + bias),
//               with the unbiased and the biased variance in the bias.
struct Curve {
    std::vector<std::vector<double>> gap, gap_normed, bias, margin, margin_biased;
};

// Layer l: h <- act(W norm(h)), W ~ N(0, 1/width) (the authors' training
// notebook order: Norm -> Linear -> activation). The input batch is made
// nearly degenerate (its top singular direction boosted), so it starts far
// from isometry. `full`: all five measures, else only the gap.
Curve isometry_curve(const Activation& act, const std::string& norm, const Scale& s, uint64_t seed, bool full = true) {
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

// ---- does isometry at initialization predict training? -------------------------
//
// The reviewers' question. Deep MLPs on Fashion-MNIST (784 standardized
// pixels, [Norm -> Linear -> activation] x depth, a linear head to the 10
// classes; weights N(0, 1/fan_in) and SGD at lr 0.01 with batches of 100,
// the authors' training notebook): each network's isometry gap at
// initialization, at its last hidden layer on the first min(100, width / 2)
// images (fewer samples than dimensions, or the Gram matrix is singular),
// against its loss on 1,000 test images after a fixed number of steps.
struct TrainScale {
    int64_t width, steps, seeds, train_images;
    std::vector<int64_t> depths;
};

struct TrainedNet {
    std::string activation, norm;
    int64_t depth = 0;
    double gap_at_init = 0, test_loss = NAN;
    bool diverged = false;  // a non-finite training loss stopped it
};

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

// A gnuplot line per activation of `column` (with its standard error in the
// next column) for one norm, from isometry.csv.
std::string curves_plot(const std::string& out_dir, const std::string& name, const std::string& title, int column) {
    std::ofstream gp(out_dir + "/" + name + ".gp");
    gp << plot_header(out_dir, name, title) << "set logscale y\nset xlabel 'depth (layers)'\nset ylabel 'isometry gap -log I'\n";
    gp << "plot ";
    bool first = true;
    for (const Activation& act : activations()) {
        gp << (first ? "" : ", ") << "'" << out_dir << "/isometry.csv' using (strcol(2) eq 'layernorm' && strcol(1) eq '"
           << act.name << "' ? $3 : NaN):" << column << ":" << column + 1 << " with yerrorlines title '" << act.name << "'";
        first = false;
    }
    gp << "\n";
    gp.close();
    return render_plot(out_dir, name);
}

}  // namespace

static int isometry_experiment(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    if (flags.given("depth") && flags.integer("depth") < 1) throw Error("flag --depth: needs at least 1 layer");
    if (flags.given("width") && flags.integer("width") < 2) throw Error("flag --width: needs at least 2");
    const std::string& scale_name = options.scale;
    const std::string& out_dir = options.out_dir;
    Scale s = scale_name == "smoke" ? Scale{64, 8, 8, 2} : scale_name == "quick" ? Scale{512, 100, 16, 3}
                                                                                 : Scale{1024, 200, 32, 5};
    if (flags.given("depth")) s.depth = flags.integer("depth");
    if (flags.given("width")) s.width = flags.integer("width");
    std::filesystem::create_directories(out_dir);
    std::ofstream csv(out_dir + "/isometry.csv");
    if (!csv) throw Error("experiment isometry: cannot write '" + out_dir + "/isometry.csv'");
    csv << "activation,norm,layer,isometry_gap,isometry_gap_se,gap_after_normalization,gap_after_normalization_se,"
           "normalization_bias,theorem1_margin_min\n";
    std::printf("isometry at initialization: width %lld, depth %lld, batch %lld, %lld seeds\n", (long long)s.width,
                (long long)s.depth, (long long)s.batch, (long long)s.seeds);

    struct Row {
        std::string activation;
        double beta0, predicted, measured_ln, measured_normed, gap_none, gap_ln, gap_bn, gap_ln_normed;
    };
    struct TheoremRow {
        std::string activation, norm;
        int64_t checked = 0, held = 0, held_biased = 0;
        double worst = INFINITY, worst_biased = INFINITY;
    };
    std::vector<Row> rows;
    std::vector<TheoremRow> theorem;
    const std::vector<std::string> norms = {"none", "layernorm", "batchnorm"};
    for (const Activation& act : activations()) {
        Row row{act.name, hermite_beta0(act), 0, 0, 0, 0, 0, 0, 0};
        // The authors' rate: the gap shrinks by 1 / (2 - beta0) per LN + activation layer.
        row.predicted = 1.0 / (2.0 - row.beta0);
        for (const std::string& norm : norms) {
            Curve c = isometry_curve(act, norm, s, 7);
            TheoremRow t{act.name, norm};
            for (int64_t l = 0; l <= s.depth; ++l) {
                double worst_here = INFINITY;
                for (size_t r = 0; r < c.margin[l].size(); ++r) {
                    ++t.checked;
                    t.held += c.margin[l][r] >= 0;
                    t.held_biased += c.margin_biased[l][r] >= 0;
                    worst_here = std::min(worst_here, c.margin[l][r]);
                    t.worst = std::min(t.worst, c.margin[l][r]);
                    t.worst_biased = std::min(t.worst_biased, c.margin_biased[l][r]);
                }
                csv << act.name << "," << norm << "," << l << "," << mean(c.gap[l]) << "," << standard_error(c.gap[l]) << ","
                    << mean(c.gap_normed[l]) << "," << standard_error(c.gap_normed[l]) << "," << mean(c.bias[l]) << ","
                    << worst_here << "\n";
            }
            theorem.push_back(t);
            std::vector<double> gap = seed_means(c.gap), normed = seed_means(c.gap_normed);
            if (norm == "none") row.gap_none = gap.back();
            if (norm == "layernorm") {
                row.gap_ln = gap.back();
                row.gap_ln_normed = normed.back();
                row.measured_ln = measured_rate(gap);
                row.measured_normed = measured_rate(normed);
            }
            if (norm == "batchnorm") row.gap_bn = gap.back();
        }
        std::printf("  %-9s done\n", act.name.c_str());
        std::fflush(stdout);
        rows.push_back(row);
    }
    csv.close();  // gnuplot reads it below

    // The floor: where ReLU + LayerNorm settles, against width and batch size.
    std::vector<int64_t> widths = scale_name == "smoke" ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{256, 512, 1024, 2048};
    std::vector<int64_t> batches = scale_name == "smoke" ? std::vector<int64_t>{4, 8} : std::vector<int64_t>{8, 16, 32, 64, 128};
    int64_t floor_depth = scale_name == "smoke" ? 8 : 60;
    {
        std::ofstream floors(out_dir + "/floor.csv");
        floors << "width,batch,floor,floor_se\n";
        const Activation relu = activations()[1];
        for (int64_t width : widths)
            for (int64_t batch : batches) {
                Scale f{width, floor_depth, batch, s.seeds};
                Curve c = isometry_curve(relu, "layernorm", f, 17, /*full=*/false);
                std::vector<double> per_seed;
                for (int64_t r = 0; r < s.seeds; ++r) {
                    std::vector<double> one;
                    for (const auto& layer : c.gap) one.push_back(layer[r]);
                    per_seed.push_back(curve_floor(one));
                }
                floors << width << "," << batch << "," << mean(per_seed) << "," << standard_error(per_seed) << "\n";
            }
        std::printf("  floor sweep done (ReLU + LayerNorm, depth %lld: widths", (long long)floor_depth);
        for (int64_t w : widths) std::printf(" %lld", (long long)w);
        std::printf(" x batches");
        for (int64_t b : batches) std::printf(" %lld", (long long)b);
        std::printf(")\n");
    }

    // Training: does the gap at initialization predict the loss after N steps?
    TrainScale t = scale_name == "smoke" ? TrainScale{32, 10, 2, 400, {4}}
                   : scale_name == "quick" ? TrainScale{256, 300, 3, 30000, {20, 50}}
                                           : TrainScale{1000, 2000, 5, 60000, {20, 50}};
    data::ImageSet train_set = data::load_fashion_mnist(data::kFashionMnist, true, t.train_images);
    data::ImageSet test_set = data::load_fashion_mnist(data::kFashionMnist, false, 1000);
    Tensor images = standardized(train_set.images), test_images = standardized(test_set.images);
    Tensor labels = raw::from_indices(train_set.labels, {(int64_t)train_set.labels.size()});
    Tensor test_labels = raw::from_indices(test_set.labels, {(int64_t)test_set.labels.size()});
    std::vector<TrainedNet> nets;
    std::ofstream trained(out_dir + "/training.csv");
    trained << "activation,norm,depth,seed,gap_at_init,test_loss,diverged\n";
    for (int64_t depth : t.depths)
        for (const Activation& act : activations())
            for (const std::string norm : {"none", "layernorm"})
                for (int64_t r = 0; r < t.seeds; ++r) {
                    TrainedNet net = train_mlp(act, norm, depth, t, images, labels, test_images, test_labels, 100 + (uint64_t)r);
                    trained << act.name << "," << norm << "," << depth << "," << r + 1 << "," << net.gap_at_init << ","
                            << net.test_loss << "," << (net.diverged ? 1 : 0) << "\n";
                    nets.push_back(net);
                }
    trained.close();
    std::printf("  training done (%lld steps of SGD at lr 0.01, width %lld, depths", (long long)t.steps, (long long)t.width);
    for (int64_t d : t.depths) std::printf(" %lld", (long long)d);
    std::printf(", %lld seeds)\n", (long long)t.seeds);

    std::ostringstream table;
    char line[320];
    table << "| activation | beta0 | predicted decay per layer, 1/(2-beta0) | measured with LayerNorm: gap of h | of LN(h) | gap at depth "
          << s.depth << ": none | LayerNorm | BatchNorm | LayerNorm, of LN(h) |\n|---|---|---|---|---|---|---|---|---|\n";
    auto rate_text = [](double r) { return std::isnan(r) ? std::string("no decay") : fmt("%.3f", r); };
    for (const Row& r : rows) {
        std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %s | %s | %.3g | %.3g | %.3g | %.3g |\n", r.activation.c_str(),
                      r.beta0, r.predicted, rate_text(r.measured_ln).c_str(), rate_text(r.measured_normed).c_str(), r.gap_none,
                      r.gap_ln, r.gap_bn, r.gap_ln_normed);
        table << line;
    }
    std::ostringstream theorem_table;
    theorem_table << "| activation | norm | layers x seeds | Theorem 1 holds (unbiased variance) | worst margin | holds (biased variance) | worst margin |\n"
                  << "|---|---|---|---|---|---|---|\n";
    for (const TheoremRow& t : theorem) {
        std::snprintf(line, sizeof line, "| %s | %s | %lld | %lld (%.0f%%) | %.3g | %lld (%.0f%%) | %.3g |\n", t.activation.c_str(),
                      t.norm.c_str(), (long long)t.checked, (long long)t.held, 100.0 * t.held / t.checked, t.worst,
                      (long long)t.held_biased, 100.0 * t.held_biased / t.checked, t.worst_biased);
        theorem_table << line;
    }
    // The training table: per configuration the seed means (of the networks
    // that did not diverge), then per depth the rank correlation between the
    // gap at initialization and the loss over every network, a diverged one
    // ranking as the worst loss.
    std::ostringstream training_table;
    training_table << "| depth | activation | norm | gap at init, mean +- se | test loss after " << t.steps
                   << " steps, mean +- se |\n|---|---|---|---|---|\n";
    std::ostringstream correlations;
    for (int64_t depth : t.depths) {
        std::vector<double> all_gaps, all_losses;
        for (const Activation& act : activations())
            for (const std::string norm : {"none", "layernorm"}) {
                std::vector<double> gaps, losses;
                int64_t diverged = 0;
                for (const TrainedNet& n : nets) {
                    if (n.depth != depth || n.activation != act.name || n.norm != norm) continue;
                    gaps.push_back(n.gap_at_init);
                    all_gaps.push_back(n.gap_at_init);
                    all_losses.push_back(n.diverged ? INFINITY : n.test_loss);
                    if (n.diverged) ++diverged;
                    else losses.push_back(n.test_loss);
                }
                std::string loss_text = losses.empty() ? "-" : fmt("%.4f", mean(losses)) + " +- " + fmt("%.4f", standard_error(losses));
                if (diverged) loss_text += " (" + std::to_string(diverged) + " diverged)";
                std::snprintf(line, sizeof line, "| %lld | %s | %s | %.3g +- %.2g | %s |\n", (long long)depth, act.name.c_str(),
                              norm.c_str(), mean(gaps), standard_error(gaps), loss_text.c_str());
                training_table << line;
            }
        correlations << "depth " << depth << ": Spearman rank correlation between the gap at initialization and the test loss over the "
                     << all_gaps.size() << " networks (diverged ones ranked worst) = " << fmt("%+.2f", spearman(all_gaps, all_losses))
                     << "\n";
    }
    std::ofstream(out_dir + "/table.md") << table.str() << "\n" << theorem_table.str() << "\n" << training_table.str() << "\n"
                                         << correlations.str();

    std::vector<std::string> notes;
    notes.push_back(curves_plot(out_dir, "isometry",
                                "gap of each layer's input h, LayerNorm MLPs at initialization (width " + std::to_string(s.width) +
                                    ", mean and standard error over " + std::to_string(s.seeds) + " seeds)",
                                4));
    notes.push_back(curves_plot(out_dir, "isometry_normalized",
                                "gap after centring and normalization, LN(h): the authors' point (width " + std::to_string(s.width) + ")",
                                6));
    {
        std::ofstream gp(out_dir + "/floor.gp");
        gp << plot_header(out_dir, "floor", "where ReLU + LayerNorm settles: the gap's floor against batch size, per width")
           << "set logscale xy\nset xlabel 'batch size n'\nset ylabel 'floor of the isometry gap'\nset key left top\nplot ";
        for (size_t i = 0; i < widths.size(); ++i)
            gp << (i ? ", " : "") << "'" << out_dir << "/floor.csv' using ($1 == " << widths[i]
               << " ? $2 : NaN):3:4 with yerrorlines title 'width " << widths[i] << "'";
        gp << "\n";
    }
    notes.push_back(render_plot(out_dir, "floor"));
    {
        std::ofstream gp(out_dir + "/training.gp");
        gp << plot_header(out_dir, "training", "isometry gap at initialization against the test loss after " +
                                                   std::to_string(t.steps) + " SGD steps (each point one network)")
           << "set logscale x\nset xlabel 'isometry gap at initialization (last hidden layer)'\nset ylabel 'test loss'\nset key outside\nplot ";
        bool first = true;
        for (int64_t depth : t.depths)
            for (const std::string norm : {"none", "layernorm"}) {
                gp << (first ? "" : ", ") << "'" << out_dir << "/training.csv' using (strcol(2) eq '" << norm << "' && $3 == " << depth
                   << " ? $5 : NaN):6 with points pt " << (norm == "none" ? 6 : 7) << " title 'depth " << depth << ", " << norm << "'";
                first = false;
            }
        gp << "\n";
    }
    notes.push_back(render_plot(out_dir, "training"));

    std::printf("\n%s\n%s\n%s\n%s", table.str().c_str(), theorem_table.str().c_str(), training_table.str().c_str(),
                correlations.str().c_str());
    std::string listing;
    for (const std::string& n : notes) listing += ", " + n;
    std::printf("results in %s: isometry.csv, floor.csv, training.csv, table.md%s\n", out_dir.c_str(), listing.c_str());
    return 0;
}

Study isometry_study() {
    Study s;
    s.name = "isometry";
    s.flags = {{"depth", "0", "override the depth of the scale"}, {"width", "0", "override the width of the scale"}};
    s.run = isometry_experiment;
    return s;
}

}  // namespace app
}  // namespace nc
