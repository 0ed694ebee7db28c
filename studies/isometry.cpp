// isometry.cpp — `normcore experiment isometry` (studies/isometry.h): the
// gap against depth per activation and norm with Theorem 1's margin, the
// floor the gap settles at, and whether the gap at initialization predicts
// training; then the tables and the plots. Unlike the other studies it
// trains no transformer, so it runs everything in this process.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/images.h"
#include "studies/isometry.h"
#include "studies/protocol.h"
#include "studies/study.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace app {
namespace isometry {

// Per activation: its Hermite rate against the measured ones, and its gaps at full depth.
struct GapRow {
    std::string activation;
    double beta0, predicted, measured_ln, measured_normed, gap_none, gap_ln, gap_bn, gap_ln_normed;
};
// Per activation and norm: how often Theorem 1's inequality held.
struct TheoremRow {
    std::string activation, norm;
    int64_t checked = 0, held = 0, held_biased = 0;
    double worst = INFINITY, worst_biased = INFINITY;
};
struct GapResults {
    std::vector<GapRow> rows;
    std::vector<TheoremRow> theorem;
};

// The gap of every layer, per activation and norm, into isometry.csv.
static GapResults measure_gaps(const Scale& s, const std::string& out_dir) {
    std::ofstream csv(out_dir + "/isometry.csv");
    if (!csv) throw Error("experiment isometry: cannot write '" + out_dir + "/isometry.csv'");
    csv << "activation,norm,layer,isometry_gap,isometry_gap_se,gap_after_normalization,gap_after_normalization_se,"
           "normalization_bias,theorem1_margin_min\n";
    GapResults out;
    for (const Activation& act : activations()) {
        GapRow row{act.name, hermite_beta0(act), 0, 0, 0, 0, 0, 0, 0};
        // The authors' rate: the gap shrinks by 1 / (2 - beta0) per LN + activation layer.
        row.predicted = 1.0 / (2.0 - row.beta0);
        for (const std::string norm : {"none", "layernorm", "batchnorm"}) {
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
            out.theorem.push_back(t);
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
        out.rows.push_back(row);
    }
    return out;
}

// The floor: where ReLU + LayerNorm settles, against width and batch size,
// into floor.csv. Returns the widths (one line each in the plot).
static std::vector<int64_t> sweep_floor(const std::string& scale_name, const Scale& s, const std::string& out_dir) {
    std::vector<int64_t> widths = scale_name == "smoke" ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{256, 512, 1024, 2048};
    std::vector<int64_t> batches = scale_name == "smoke" ? std::vector<int64_t>{4, 8} : std::vector<int64_t>{8, 16, 32, 64, 128};
    int64_t floor_depth = scale_name == "smoke" ? 8 : 60;
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
    return widths;
}

// Training: does the gap at initialization predict the loss after N steps?
// Every network into training.csv.
static std::vector<TrainedNet> train_networks(const TrainScale& t, const std::string& out_dir) {
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
    std::printf("  training done (%lld steps of SGD at lr 0.01, width %lld, depths", (long long)t.steps, (long long)t.width);
    for (int64_t d : t.depths) std::printf(" %lld", (long long)d);
    std::printf(", %lld seeds)\n", (long long)t.seeds);
    return nets;
}

// ---- the tables ----

static std::string gap_table(const std::vector<GapRow>& rows, int64_t depth) {
    std::ostringstream table;
    char line[320];
    table << "| activation | beta0 | predicted decay per layer, 1/(2-beta0) | measured with LayerNorm: gap of h | of LN(h) | gap at depth "
          << depth << ": none | LayerNorm | BatchNorm | LayerNorm, of LN(h) |\n|---|---|---|---|---|---|---|---|---|\n";
    auto rate_text = [](double r) { return std::isnan(r) ? std::string("no decay") : fmt("%.3f", r); };
    for (const GapRow& r : rows) {
        std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %s | %s | %.3g | %.3g | %.3g | %.3g |\n", r.activation.c_str(),
                      r.beta0, r.predicted, rate_text(r.measured_ln).c_str(), rate_text(r.measured_normed).c_str(), r.gap_none,
                      r.gap_ln, r.gap_bn, r.gap_ln_normed);
        table << line;
    }
    return table.str();
}

static std::string theorem_table(const std::vector<TheoremRow>& theorem) {
    std::ostringstream table;
    char line[320];
    table << "| activation | norm | layers x seeds | Theorem 1 holds (unbiased variance) | worst margin | holds (biased variance) | worst margin |\n"
          << "|---|---|---|---|---|---|---|\n";
    for (const TheoremRow& t : theorem) {
        std::snprintf(line, sizeof line, "| %s | %s | %lld | %lld (%.0f%%) | %.3g | %lld (%.0f%%) | %.3g |\n", t.activation.c_str(),
                      t.norm.c_str(), (long long)t.checked, (long long)t.held, 100.0 * t.held / t.checked, t.worst,
                      (long long)t.held_biased, 100.0 * t.held_biased / t.checked, t.worst_biased);
        table << line;
    }
    return table.str();
}

// The training table: per configuration the seed means (of the networks
// that did not diverge), then per depth the rank correlation between the
// gap at initialization and the loss over every network, a diverged one
// ranking as the worst loss. Returns the table and the correlations' lines.
static std::pair<std::string, std::string> training_tables(const std::vector<TrainedNet>& nets, const TrainScale& t) {
    std::ostringstream training_table, correlations;
    char line[320];
    training_table << "| depth | activation | norm | gap at init, mean +- se | test loss after " << t.steps
                   << " steps, mean +- se |\n|---|---|---|---|---|\n";
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
    return {training_table.str(), correlations.str()};
}

// ---- the plots ----

// A gnuplot line per activation of `column` (with its standard error in the
// next column) for one norm, from isometry.csv.
static std::string curves_plot(const std::string& out_dir, const std::string& name, const std::string& title, int column) {
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

// The plots; what to tell the reader.
static std::vector<std::string> draw_plots(const std::string& out_dir, const Scale& s, const std::vector<int64_t>& widths,
                                           const TrainScale& t) {
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
    return notes;
}

}  // namespace isometry

static int isometry_experiment(const StudyOptions& options) {
    using namespace isometry;
    const Flags& flags = *options.flags;
    if (flags.given("depth") && flags.integer("depth") < 1) throw Error("flag --depth: needs at least 1 layer");
    if (flags.given("width") && flags.integer("width") < 2) throw Error("flag --width: needs at least 2");
    const std::string& scale_name = options.scale;
    const std::string& out_dir = options.out_dir;
    Scale s = scale_name == "smoke" ? Scale{64, 8, 8, 2} : scale_name == "quick" ? Scale{512, 100, 16, 3}
                                                                                 : Scale{1024, 200, 32, 5};
    if (flags.given("depth")) s.depth = flags.integer("depth");
    if (flags.given("width")) s.width = flags.integer("width");
    TrainScale t = scale_name == "smoke" ? TrainScale{32, 10, 2, 400, {4}}
                   : scale_name == "quick" ? TrainScale{256, 300, 3, 30000, {20, 50}}
                                           : TrainScale{1000, 2000, 5, 60000, {20, 50}};
    std::filesystem::create_directories(out_dir);
    std::printf("isometry at initialization: width %lld, depth %lld, batch %lld, %lld seeds\n", (long long)s.width,
                (long long)s.depth, (long long)s.batch, (long long)s.seeds);

    GapResults gaps = measure_gaps(s, out_dir);
    std::vector<int64_t> widths = sweep_floor(scale_name, s, out_dir);
    std::vector<TrainedNet> nets = train_networks(t, out_dir);

    std::string table = gap_table(gaps.rows, s.depth), theorem = theorem_table(gaps.theorem);
    auto [training, correlations] = training_tables(nets, t);
    std::ofstream(out_dir + "/table.md") << table << "\n" << theorem << "\n" << training << "\n" << correlations;
    std::vector<std::string> notes = draw_plots(out_dir, s, widths, t);

    std::printf("\n%s\n%s\n%s\n%s", table.c_str(), theorem.c_str(), training.c_str(), correlations.c_str());
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
