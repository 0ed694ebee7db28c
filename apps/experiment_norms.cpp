// experiment_norms.cpp — `normcore experiment norms`: where the norm goes.
//
// The GeoNorm paper (Zheng et al., arXiv:2601.22095) compares Post-, Pre-,
// Sandwich-Norm and DeepNorm with GeoNorm (the residual stream moves along
// the sphere's geodesics, with a step that decays with depth: none,
// harmonic a/k, sqrt a/sqrt(k), linear a(T-k)/T). It claims that GeoNorm
// reaches the lowest validation loss, that harmonic decay is the best decay,
// that Pre-Norm's lower blocks get larger gradients than its upper ones, and
// that Post-Norm spikes and becomes unstable on longer sequences while
// GeoNorm does not.
//
// This study trains GPT-2 (or Llama) on the fortunes corpus with each of
// the 8 variants (and GeoNorm with a bounded angle) and 3 seeds, logs each block's gradient norm and the loss
// spikes (train --diagnostics), then repeats every variant once with 4x
// longer sequences (and 4x fewer of them: the same tokens per step).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/experiment.h"
#include "tensor/tensor.h"

namespace nc {
namespace app {

namespace {

struct NormsScale {
    int64_t layers, width, heads, seq, batch, steps, seeds;
    double lr;
};

NormsScale norms_scale(const std::string& scale) {
    if (scale == "smoke") return {2, 32, 2, 16, 4, 16, 1, 2e-3};
    if (scale == "quick") return {6, 128, 4, 64, 12, 300, 3, 2e-3};
    return {12, 384, 6, 256, 16, 3000, 3, 1e-3};  // full
}

struct Variant {
    std::string name, placement, decay;
    std::string max_angle = "0";  // --geo-max-angle
};

const std::vector<Variant>& variants() {
    static const std::vector<Variant> all = {
        {"post", "post", "none"},
        {"pre", "pre", "none"},
        {"sandwich", "sandwich", "none"},
        {"deepnorm", "deepnorm", "none"},
        {"geonorm", "geonorm", "none"},
        {"geonorm-harmonic", "geonorm", "harmonic"},
        {"geonorm-sqrt", "geonorm", "sqrt"},
        {"geonorm-linear", "geonorm", "linear"},
        // Not in the paper's list: the exp map with each update's angle
        // bounded smoothly by pi/4 (a third-party reading of the paper's
        // appendix clamps it there; nn/block.cpp, bound_angle).
        {"geonorm-harmonic-bounded", "geonorm", "harmonic", "0.7854"},
    };
    return all;
}

// What one finished run contributes.
struct RunResult {
    double val = NAN, train = NAN;
    int64_t spikes = 0;
    std::vector<double> block_grad;  // each block's gradient norm, mean over steps
    std::vector<double> loss;        // training loss per step
};

RunResult read_run(const std::string& dir) {
    RunResult r;
    Summary s = read_summary(dir);
    r.val = s.val_loss;
    r.train = s.train_loss;
    Csv d = read_csv(dir + "/diagnostics.csv");
    int loss_col = d.column("loss"), spike_col = d.column("spike");
    std::vector<int> blocks = d.columns_starting_with("grad_norm_block_");
    r.block_grad.assign(blocks.size(), 0.0);
    for (size_t i = 0; i < d.rows.size(); ++i) {
        r.loss.push_back(d.number(i, loss_col));
        r.spikes += d.number(i, spike_col) > 0;
        for (size_t b = 0; b < blocks.size(); ++b) r.block_grad[b] += d.number(i, blocks[b]) / (double)d.rows.size();
    }
    return r;
}

// A moving average over `window` steps, so curves of a few hundred noisy
// steps can be told apart (spikes stay visible in diagnostics.csv).
std::vector<double> smooth(const std::vector<double>& xs, size_t window) {
    std::vector<double> out(xs.size());
    double total = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        total += xs[i];
        if (i >= window) total -= xs[i - window];
        out[i] = total / (double)std::min(i + 1, window);
    }
    return out;
}

}  // namespace

int norms_experiment(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    NormsScale s = norms_scale(options.scale);
    if (flags.integer("steps") > 0) s.steps = flags.integer("steps");
    if (flags.integer("seeds") > 0) s.seeds = flags.integer("seeds");
    std::string model = flags.str("model");
    if (model != "gpt2" && model != "llama") throw Error("flag --model: the norms study trains gpt2 or llama, not '" + model + "'");
    const int64_t long_factor = 4;
    std::printf("norms study: %s L=%lld C=%lld H=%lld, T=%lld B=%lld, %lld steps, %lld seeds; longer sequences: T=%lld B=%lld\n",
                model.c_str(), (long long)s.layers, (long long)s.width, (long long)s.heads, (long long)s.seq,
                (long long)s.batch, (long long)s.steps, (long long)s.seeds, (long long)(s.seq * long_factor),
                (long long)std::max<int64_t>(1, s.batch / long_factor));

    // The grid: every variant x seed at the base sequence length, then every
    // variant once (seed 1) with longer sequences.
    auto cell_of = [&](const Variant& v, int64_t seed, bool longer) {
        int64_t T = longer ? s.seq * long_factor : s.seq, B = longer ? std::max<int64_t>(1, s.batch / long_factor) : s.batch;
        Cell c;
        c.name = v.name + (longer ? "-long" : "") + "-seed" + std::to_string(seed);
        c.args = {"--model", model, "--placement", v.placement, "--decay", v.decay, "--geo-max-angle", v.max_angle,
                  "--layers", std::to_string(s.layers), "--width", std::to_string(s.width),
                  "--heads", std::to_string(s.heads), "--seq", std::to_string(T), "--batch", std::to_string(B),
                  "--steps", std::to_string(s.steps), "--warmup", std::to_string(std::max<int64_t>(1, s.steps / 10)),
                  "--lr", fmt("%g", s.lr), "--seed", std::to_string(seed), "--eval-every", "0",
                  "--sample-tokens", "0", "--diagnostics", "--device", flags.str("device")};
        return c;
    };
    std::vector<Cell> cells;
    for (const Variant& v : variants())
        for (int64_t seed = 1; seed <= s.seeds; ++seed) cells.push_back(cell_of(v, seed, false));
    for (const Variant& v : variants()) cells.push_back(cell_of(v, 1, true));
    run_cells(cells, options);

    // Read everything back.
    std::map<std::string, std::vector<RunResult>> base;  // variant -> one per seed
    std::map<std::string, RunResult> longer;
    for (const Variant& v : variants()) {
        for (int64_t seed = 1; seed <= s.seeds; ++seed)
            base[v.name].push_back(read_run(cell_dir(options, cell_of(v, seed, false).name)));
        longer[v.name] = read_run(cell_dir(options, cell_of(v, 1, true).name));
    }

    // results.csv: one row per run.
    std::ofstream results(options.out_dir + "/results.csv");
    results << "variant,sequence,seed,val_loss,train_loss,spikes";
    for (int64_t b = 0; b < s.layers; ++b) results << ",grad_norm_block_" << b;
    results << "\n";
    auto write_row = [&](const std::string& name, int64_t T, int64_t seed, const RunResult& r) {
        results << name << "," << T << "," << seed << "," << r.val << "," << r.train << "," << r.spikes;
        for (double g : r.block_grad) results << "," << g;
        results << "\n";
    };
    for (const Variant& v : variants()) {
        for (int64_t i = 0; i < s.seeds; ++i) write_row(v.name, s.seq, i + 1, base[v.name][i]);
        write_row(v.name, s.seq * long_factor, 1, longer[v.name]);
    }
    results.close();

    // curves.csv / curves_long.csv: training loss per step (seed mean, smoothed); one column per variant.
    size_t window = std::max<int64_t>(1, s.steps / 30);
    auto write_curves = [&](const std::string& file, bool use_long) {
        std::ofstream out(options.out_dir + "/" + file);
        out << "step";
        std::vector<std::vector<double>> columns;
        for (const Variant& v : variants()) {
            out << "," << v.name;
            std::vector<double> avg(s.steps, 0.0);
            const std::vector<RunResult> runs = use_long ? std::vector<RunResult>{longer[v.name]} : base[v.name];
            for (const RunResult& r : runs)
                for (int64_t i = 0; i < s.steps && i < (int64_t)r.loss.size(); ++i) avg[i] += r.loss[i] / (double)runs.size();
            columns.push_back(smooth(avg, window));
        }
        out << "\n";
        for (int64_t i = 0; i < s.steps; ++i) {
            out << i + 1;
            for (const auto& c : columns) out << "," << c[i];
            out << "\n";
        }
    };
    write_curves("curves.csv", false);
    write_curves("curves_long.csv", true);

    // grad_profile.csv: block, one column per variant (gradient norm, mean over steps and seeds).
    std::ofstream profile(options.out_dir + "/grad_profile.csv");
    profile << "block";
    for (const Variant& v : variants()) profile << "," << v.name;
    profile << "\n";
    for (int64_t b = 0; b < s.layers; ++b) {
        profile << b;
        for (const Variant& v : variants()) {
            std::vector<double> g;
            for (const RunResult& r : base[v.name]) g.push_back(r.block_grad[b]);
            profile << "," << mean(g);
        }
        profile << "\n";
    }
    profile.close();

    // The table.
    std::ostringstream table;
    table << "| variant | val loss, T=" << s.seq << " (mean +- std, " << s.seeds << " seeds) | train loss | "
          << "grad norm block 0 / block " << s.layers - 1 << " | spikes | val loss, T=" << s.seq * long_factor
          << " | spikes, T=" << s.seq * long_factor << " |\n|---|---|---|---|---|---|---|\n";
    std::string best;
    double best_val = INFINITY;
    for (const Variant& v : variants()) {
        std::vector<double> vals, trains, first, last;
        int64_t spikes = 0;
        for (const RunResult& r : base[v.name]) {
            vals.push_back(r.val);
            trains.push_back(r.train);
            first.push_back(r.block_grad.front());
            last.push_back(r.block_grad.back());
            spikes += r.spikes;
        }
        double m = mean(vals);
        if (m < best_val) best_val = m, best = v.name;
        table << "| " << v.name << " | " << fmt("%.4f", m) << " +- " << fmt("%.4f", sample_std(vals)) << " | "
              << fmt("%.4f", mean(trains)) << " | " << fmt("%.2f", mean(first) / mean(last)) << " | " << spikes << " | "
              << fmt("%.4f", longer[v.name].val) << " | " << longer[v.name].spikes << " |\n";
    }
    std::ofstream(options.out_dir + "/table.md") << table.str();

    // Plots: loss curves (both lengths) and the gradient-norm profile over depth.
    auto curve_plot = [&](const std::string& name, const std::string& csv, int64_t T) {
        std::ofstream gp(options.out_dir + "/" + name + ".gp");
        gp << plot_header(options.out_dir, name, model + " on fortunes, T=" + std::to_string(T) + ": training loss (moving average)")
           << "set key autotitle columnhead\nset xlabel 'step'\nset ylabel 'training loss'\n"
           << "set xrange [" << std::max<int64_t>(1, s.steps / 10) << ":*]\n"
           << "plot for [i=2:" << variants().size() + 1 << "] '" << options.out_dir << "/" << csv
           << "' using 1:i with lines lt (i - 1) lw 2\n";
        gp.close();
        return render_plot(options.out_dir, name);
    };
    std::string curves_note = curve_plot("loss_curves", "curves.csv", s.seq);
    std::string long_note = curve_plot("loss_curves_long", "curves_long.csv", s.seq * long_factor);
    {
        std::ofstream gp(options.out_dir + "/grad_profile.gp");
        gp << plot_header(options.out_dir, "grad_profile", "gradient norm of the parameters of each block (mean over steps and seeds)")
           << "set key autotitle columnhead\nset logscale y\nset xlabel 'block'\nset ylabel 'gradient norm'\n"
           << "set xtics 1\nplot for [i=2:" << variants().size() + 1 << "] '" << options.out_dir
           << "/grad_profile.csv' using 1:i with linespoints lt (i - 1) lw 2\n";
    }
    std::string profile_note = render_plot(options.out_dir, "grad_profile");

    std::printf("\n%s\n", table.str().c_str());
    std::printf("lowest mean validation loss at T=%lld: %s (%.4f)\n", (long long)s.seq, best.c_str(), best_val);
    std::printf("results in %s: results.csv, curves.csv, curves_long.csv, grad_profile.csv, table.md, %s, %s, %s\n",
                options.out_dir.c_str(), curves_note.c_str(), long_note.c_str(), profile_note.c_str());
    return 0;
}

}  // namespace app
}  // namespace nc
