// experiment_isometry.cpp — `normcore experiment isometry`: deep MLPs at
// initialization (Joudaki, Daneshmand & Bach, 2023): how fast a batch's Gram
// matrix becomes isometric with depth, per activation, with LayerNorm,
// BatchNorm or no norm, next to the rate predicted from each activation's
// Hermite coefficients. Unlike the other studies it trains nothing, so it
// runs in this process.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "apps/experiment.h"
#include "nn/diagnostics.h"
#include "tensor/raw_nn.h"

namespace nc {
namespace app {

namespace {


// ---- the activations and their Hermite coefficients ------------------------------

struct Activation {
    std::string name;
    std::function<double(double)> scalar;              // for the Gaussian integrals
    std::function<Tensor(const Tensor&)> on_tensor;    // for the network
};

std::vector<Activation> activations() {
    return {
        {"identity", [](double x) { return x; }, [](const Tensor& x) { return x; }},
        {"relu", [](double x) { return x > 0 ? x : 0.0; }, [](const Tensor& x) { return raw::relu(x); }},
        {"tanh", [](double x) { return std::tanh(x); }, [](const Tensor& x) { return raw::tanh(x); }},
        {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
         [](const Tensor& x) { return raw::gelu(x, false); }},
        {"sin", [](double x) { return std::sin(x); }, [](const Tensor& x) { return raw::sin(x); }},
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

// Gap -log I of the layer inputs, for layers 0..depth, averaged over seeds.
// Layer l: h <- act(W norm(h)), W ~ N(0, 1/width) (the authors' training
// notebook order: Norm -> Linear -> activation). The input batch is made
// nearly degenerate (its top singular direction boosted), so it starts far
// from isometry.
struct Curve {
    std::vector<double> gap, bias;
};
Curve isometry_curve(const Activation& act, const std::string& norm, const Scale& s, uint64_t seed) {
    Curve c;
    c.gap.assign(s.depth + 1, 0.0);
    c.bias.assign(s.depth + 1, 0.0);
    for (int64_t r = 0; r < s.seeds; ++r) {
        Generator gen(seed + 1000 * (uint64_t)r);
        Tensor x = raw::randn({s.batch, s.width}, gen, kFloat64);
        Tensor shared = raw::randn({1, s.width}, gen, kFloat64);
        Tensor h = raw::add(x, raw::mul(shared, 5.0));  // every sample shares a large common direction
        for (int64_t l = 0; l <= s.depth; ++l) {
            c.gap[l] += diag::isometry_gap(h) / (double)s.seeds;
            c.bias[l] += diag::normalization_bias(h) / (double)s.seeds;
            if (l == s.depth) break;
            Tensor z = norm == "layernorm" ? layer_norm_plain(h) : norm == "batchnorm" ? batch_norm_plain(h) : h;
            Tensor w = raw::mul(raw::randn({s.width, s.width}, gen, kFloat64), 1.0 / std::sqrt((double)s.width));
            h = act.on_tensor(raw::matmul(z, w));
        }
    }
    return c;
}

// The measured decay per layer. A finite network does not reach gap 0: the
// curve levels off at a floor (the last tenth of the layers' mean; finite
// width and batch, and a non-centred activation's mean direction). The rate
// is exp of the least-squares slope of log(gap - floor) against depth over
// the layers still well above the floor (gap > 2 floor).
double measured_rate(const std::vector<double>& gap) {
    size_t tail = std::max<size_t>(3, gap.size() / 10);
    double floor = 0;
    for (size_t l = gap.size() - tail; l < gap.size(); ++l) floor += gap[l] / (double)tail;
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

}  // namespace

int isometry_experiment(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    const std::string& scale_name = options.scale;
    const std::string& out_dir = options.out_dir;
    Scale s = scale_name == "smoke" ? Scale{64, 8, 8, 1} : scale_name == "quick" ? Scale{512, 100, 16, 3}
                                                                                 : Scale{1024, 200, 32, 5};
    if (flags.given("depth")) s.depth = flags.integer("depth");
    if (flags.given("width")) s.width = flags.integer("width");
    std::filesystem::create_directories(out_dir);
    std::ofstream csv(out_dir + "/isometry.csv");
    if (!csv) throw Error("experiment isometry: cannot write '" + out_dir + "/isometry.csv'");
    csv << "activation,norm,layer,isometry_gap,normalization_bias\n";
    std::printf("isometry at initialization: width %lld, depth %lld, batch %lld, %lld seeds\n", (long long)s.width,
                (long long)s.depth, (long long)s.batch, (long long)s.seeds);

    struct Row {
        std::string activation;
        double beta0, predicted, measured_ln, gap_none, gap_ln, gap_bn;
    };
    std::vector<Row> rows;
    const std::vector<std::string> norms = {"none", "layernorm", "batchnorm"};
    for (const Activation& act : activations()) {
        Row row{act.name, hermite_beta0(act), 0, 0, 0, 0, 0};
        // The authors' rate: the gap shrinks by 1 / (2 - beta0) per LN + activation layer.
        row.predicted = 1.0 / (2.0 - row.beta0);
        for (const std::string& norm : norms) {
            Curve c = isometry_curve(act, norm, s, 7);
            for (int64_t l = 0; l <= s.depth; ++l)
                csv << act.name << "," << norm << "," << l << "," << c.gap[l] << "," << c.bias[l] << "\n";
            double last = c.gap.back();
            if (norm == "none") row.gap_none = last;
            if (norm == "layernorm") {
                row.gap_ln = last;
                row.measured_ln = measured_rate(c.gap);
            }
            if (norm == "batchnorm") row.gap_bn = last;
        }
        std::printf("  %-9s done\n", act.name.c_str());
        std::fflush(stdout);
        rows.push_back(row);
    }

    csv.close();  // gnuplot reads it below
    std::ostringstream table;
    char line[256];
    table << "| activation | beta0 | predicted decay per layer, 1/(2-beta0) | measured with LayerNorm | gap at depth "
          << s.depth << ": none | LayerNorm | BatchNorm |\n|---|---|---|---|---|---|---|\n";
    for (const Row& r : rows) {
        char measured[32];
        if (std::isnan(r.measured_ln)) std::snprintf(measured, sizeof measured, "no decay");
        else std::snprintf(measured, sizeof measured, "%.3f", r.measured_ln);
        std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %s | %.3g | %.3g | %.3g |\n", r.activation.c_str(),
                      r.beta0, r.predicted, measured, r.gap_none, r.gap_ln, r.gap_bn);
        table << line;
    }
    std::ofstream(out_dir + "/table.md") << table.str();

    // The plot: gap against depth on a log scale, one line per activation, with LayerNorm.
    std::ofstream gp(out_dir + "/isometry.gp");
    gp << plot_header(out_dir, "isometry", "MLPs at initialization with LayerNorm (width " + std::to_string(s.width) + ")")
       << "set logscale y\nset xlabel 'depth (layers)'\nset ylabel 'isometry gap -log I'\n";
    gp << "plot ";
    bool first = true;
    for (const Activation& act : activations()) {
        gp << (first ? "" : ", ") << "'" << out_dir << "/isometry.csv' using (strcol(2) eq 'layernorm' && strcol(1) eq '"
           << act.name << "' ? $3 : NaN):4 with lines title '" << act.name << "'";
        first = false;
    }
    gp << "\n";
    gp.close();
    std::string plot_note = render_plot(out_dir, "isometry");

    std::printf("\n%s\n", table.str().c_str());
    std::printf("results in %s: isometry.csv, table.md, %s\n", out_dir.c_str(), plot_note.c_str());
    return 0;
}

}  // namespace app
}  // namespace nc
