// experiment_dyt.cpp — `normcore experiment dyt`: when does removing the norm help?
//
// The DyT regime study (Verma, arXiv:2604.23434) replaces every LayerNorm
// (RMSNorm in Llama) by Dynamic Tanh, DyT(x) = gamma * tanh(alpha x) with
// alpha0 = 2, and finds the effect depends on the data regime: with little
// data DyT's bounded activations regularize and the validation loss drops;
// with much data they cost capacity and it rises. Differential attention is
// its contrast (it helps more with more data). Its mechanism is saturation,
// the fraction of alpha x beyond +-2 where tanh is flat, and its screening
// rule says: measure saturation after a short calibration run; DyT helps iff
// it is at least 0.43.
//
// This study trains, for GPT-2 and Llama on fortunes subsets of four sizes
// (100x apart) and ViT on Fashion-MNIST subsets (100x apart), the model as it
// is ("vanilla"), with DyT, and with differential attention; it reads the
// per-layer DyT saturation (train --diagnostics) at 10% of the run (the
// calibration point: the paper's step 500 of 5000) and at the end, the
// activations' effective rank and the weights' effective rank and HTSR
// alpha, and scores the screening rule.
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

struct ModelScale {
    int64_t layers, width, heads, batch, steps;
    std::vector<int64_t> sizes;  // training tokens (text) or images (ViT)
};

struct DytScale {
    ModelScale text, vit;
    int64_t seq, seeds;
};

DytScale dyt_scale(const std::string& scale) {
    if (scale == "smoke") return {{2, 32, 2, 4, 20, {200, 2000, 20000, 200000}}, {1, 32, 2, 16, 20, {64, 200, 640, 6400}}, 16, 1};
    if (scale == "quick")
        return {{4, 128, 4, 16, 300, {20000, 100000, 500000, 2000000}}, {4, 64, 4, 64, 300, {600, 2000, 6000, 60000}}, 64, 1};
    return {{6, 256, 8, 32, 3000, {20000, 100000, 500000, 2000000}}, {6, 192, 6, 128, 3000, {600, 2000, 6000, 60000}}, 128, 3};
}

// The screening rule's threshold (the study's fitted midpoint 0.4295).
const double kScreeningThreshold = 0.43;

struct RunResult {
    double val = NAN;
    double saturation_calib = NAN, saturation_final = NAN;  // mean over DyT layers
    std::vector<std::string> dyt_layers;
    std::vector<double> layer_saturation_final;
    double activation_erank = NAN;  // residual stream after the last block
    double weight_erank = NAN, weight_alpha = NAN;  // means over weight matrices
};

// Mean over DyT layers of the saturation, averaged over steps [from, to).
double mean_saturation(const Csv& d, const std::vector<int>& cols, size_t from, size_t to) {
    std::vector<double> xs;
    for (size_t i = from; i < to && i < d.rows.size(); ++i)
        for (int c : cols) xs.push_back(d.number(i, c));
    return mean(xs);
}

RunResult read_run(const std::string& dir, int64_t steps) {
    RunResult r;
    r.val = read_summary(dir).val_loss;
    Csv d = read_csv(dir + "/diagnostics.csv");
    std::vector<int> sat = d.columns_starting_with("saturation_");
    if (!sat.empty()) {
        // Five steps around each reading point: one batch's saturation is noisy.
        size_t calib = (size_t)std::max<int64_t>(5, steps / 10);
        r.saturation_calib = mean_saturation(d, sat, calib - 5, calib);
        r.saturation_final = mean_saturation(d, sat, d.rows.size() - std::min<size_t>(5, d.rows.size()), d.rows.size());
        for (int c : sat) {
            r.dyt_layers.push_back(d.header[c].substr(std::string("saturation_").size()));
            std::vector<int> one = {c};
            r.layer_saturation_final.push_back(mean_saturation(d, one, d.rows.size() - std::min<size_t>(5, d.rows.size()), d.rows.size()));
        }
    }
    Csv stream = read_csv(dir + "/stream.csv");
    r.activation_erank = stream.number(stream.rows.size() - 1, stream.column("effective_rank"));
    Csv weights = read_csv(dir + "/weights.csv");
    int erank_col = weights.column("effective_rank"), alpha_col = weights.column("htsr_alpha");
    std::vector<double> erank, alpha;
    for (size_t i = 0; i < weights.rows.size(); ++i) {
        erank.push_back(weights.number(i, erank_col));
        double a = weights.number(i, alpha_col);
        if (!std::isnan(a)) alpha.push_back(a);
    }
    r.weight_erank = mean(erank);
    r.weight_alpha = mean(alpha);
    return r;
}

// The seeds' mean of every number (the layer names are the same in every run).
RunResult average(const std::vector<RunResult>& runs) {
    RunResult a = runs.front();
    double n = (double)runs.size();
    a.val = a.saturation_calib = a.saturation_final = a.activation_erank = a.weight_erank = a.weight_alpha = 0;
    for (double& x : a.layer_saturation_final) x = 0;
    for (const RunResult& r : runs) {
        a.val += r.val / n;
        a.saturation_calib += r.saturation_calib / n;
        a.saturation_final += r.saturation_final / n;
        a.activation_erank += r.activation_erank / n;
        a.weight_erank += r.weight_erank / n;
        a.weight_alpha += r.weight_alpha / n;
        for (size_t l = 0; l < r.layer_saturation_final.size(); ++l) a.layer_saturation_final[l] += r.layer_saturation_final[l] / n;
    }
    return a;
}

std::string size_label(int64_t n) {
    if (n >= 1000000 && n % 1000000 == 0) return std::to_string(n / 1000000) + "M";
    if (n >= 1000 && n % 1000 == 0) return std::to_string(n / 1000) + "K";
    return std::to_string(n);
}

double percent_change(double value, double baseline) { return 100.0 * (value - baseline) / baseline; }

}  // namespace

int dyt_experiment(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    DytScale s = dyt_scale(options.scale);
    if (flags.integer("steps") > 0) s.text.steps = s.vit.steps = flags.integer("steps");
    if (flags.integer("seeds") > 0) s.seeds = flags.integer("seeds");
    std::vector<std::string> models;
    {
        std::stringstream list(flags.str("models"));
        std::string m;
        while (std::getline(list, m, ','))
            if (m == "gpt2" || m == "llama" || m == "vit") models.push_back(m);
            else throw Error("flag --models: unknown model '" + m + "' (choose from gpt2, llama, vit)");
        if (models.empty()) throw Error("flag --models: name at least one of gpt2, llama, vit");
    }
    const std::vector<std::string> variants = {"vanilla", "dyt", "diffattn"};
    std::printf("DyT study: text models L=%lld C=%lld T=%lld B=%lld on %s training tokens; ViT L=%lld C=%lld B=%lld on %s "
                "images; %lld steps, %lld seed(s)\n",
                (long long)s.text.layers, (long long)s.text.width, (long long)s.seq, (long long)s.text.batch,
                (size_label(s.text.sizes.front()) + ".." + size_label(s.text.sizes.back())).c_str(), (long long)s.vit.layers,
                (long long)s.vit.width, (long long)s.vit.batch,
                (size_label(s.vit.sizes.front()) + ".." + size_label(s.vit.sizes.back())).c_str(), (long long)s.text.steps,
                (long long)s.seeds);

    auto scale_of = [&](const std::string& model) -> const ModelScale& { return model == "vit" ? s.vit : s.text; };
    auto cell_of = [&](const std::string& model, const std::string& variant, int64_t size, int64_t seed) {
        const ModelScale& m = scale_of(model);
        Cell c;
        c.name = model + "-" + variant + "-" + size_label(size) + "-seed" + std::to_string(seed);
        c.args = {"--model", model, "--layers", std::to_string(m.layers), "--width", std::to_string(m.width),
                  "--heads", std::to_string(m.heads), "--batch", std::to_string(m.batch), "--steps", std::to_string(m.steps),
                  "--warmup", std::to_string(std::max<int64_t>(1, m.steps / 10)), "--seed", std::to_string(seed),
                  "--eval-every", "0", "--diagnostics", "--device", flags.str("device")};
        if (model == "vit") {
            c.args.insert(c.args.end(), {"--train-images", std::to_string(size), "--eval-batches", "16"});
        } else {
            c.args.insert(c.args.end(), {"--seq", std::to_string(s.seq), "--train-tokens", std::to_string(size),
                                         "--sample-tokens", "0"});
        }
        if (variant == "dyt") c.args.insert(c.args.end(), {"--norm", "dyt", "--dyt-alpha", "2"});
        if (variant == "diffattn") c.args.insert(c.args.end(), {"--attention", "differential"});
        return c;
    };
    std::vector<Cell> cells;
    for (const std::string& model : models)
        for (int64_t size : scale_of(model).sizes)
            for (const std::string& v : variants)
                for (int64_t seed = 1; seed <= s.seeds; ++seed) cells.push_back(cell_of(model, v, size, seed));
    run_cells(cells, options);

    // Read back, averaging over seeds: results[model][size][variant].
    std::map<std::string, std::map<int64_t, std::map<std::string, RunResult>>> results;
    std::ofstream runs_csv(options.out_dir + "/results.csv");
    runs_csv << "model,variant,train_size,seed,val_loss,saturation_calibration,saturation_final,activation_erank,"
                "weight_erank,weight_alpha\n";
    std::ofstream sat_csv(options.out_dir + "/saturation.csv");
    sat_csv << "model,train_size,layer_index,layer,saturation_final\n";
    for (const std::string& model : models)
        for (int64_t size : scale_of(model).sizes)
            for (const std::string& v : variants) {
                std::vector<RunResult> runs;
                for (int64_t seed = 1; seed <= s.seeds; ++seed) {
                    runs.push_back(read_run(cell_dir(options, cell_of(model, v, size, seed).name), scale_of(model).steps));
                    const RunResult& r = runs.back();
                    runs_csv << model << "," << v << "," << size << "," << seed << "," << r.val << "," << r.saturation_calib
                             << "," << r.saturation_final << "," << r.activation_erank << "," << r.weight_erank << ","
                             << r.weight_alpha << "\n";
                }
                RunResult a = average(runs);
                for (size_t l = 0; l < a.dyt_layers.size(); ++l)
                    sat_csv << model << "," << size << "," << l << "," << a.dyt_layers[l] << "," << a.layer_saturation_final[l] << "\n";
                results[model][size][v] = a;
            }
    runs_csv.close();
    sat_csv.close();

    // The table, delta.csv for the plot, and the screening rule's score.
    std::ostringstream table;
    table << "| model | train size | vanilla val | DyT val | DyT change | DiffAttn val | DiffAttn change | "
             "saturation at 10% / end | activation erank vanilla / DyT | weight alpha vanilla / DyT | rule: DyT helps? | "
             "DyT helped? |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::ofstream delta_csv(options.out_dir + "/delta.csv");
    delta_csv << "model,train_size,relative_size,dyt_change_percent,diffattn_change_percent,saturation_calibration,"
                 "saturation_final\n";
    int correct_calib = 0, correct_final = 0, total = 0;
    std::vector<double> sat_calib, sat_final, dyt_change;
    for (const std::string& model : models) {
        const std::vector<int64_t>& sizes = scale_of(model).sizes;
        for (int64_t size : sizes) {
            const RunResult& van = results[model][size]["vanilla"];
            const RunResult& dyt = results[model][size]["dyt"];
            const RunResult& diff = results[model][size]["diffattn"];
            double d_dyt = percent_change(dyt.val, van.val), d_diff = percent_change(diff.val, van.val);
            bool predicted = dyt.saturation_calib >= kScreeningThreshold, helped = dyt.val < van.val;
            correct_calib += predicted == helped;
            correct_final += (dyt.saturation_final >= kScreeningThreshold) == helped;
            ++total;
            sat_calib.push_back(dyt.saturation_calib);
            sat_final.push_back(dyt.saturation_final);
            dyt_change.push_back(d_dyt);
            table << "| " << model << " | " << size_label(size) << (model == "vit" ? " images" : " tokens") << " | "
                  << fmt("%.4f", van.val) << " | " << fmt("%.4f", dyt.val) << " | " << fmt("%+.1f%%", d_dyt) << " | "
                  << fmt("%.4f", diff.val) << " | " << fmt("%+.1f%%", d_diff) << " | " << fmt("%.3f", dyt.saturation_calib)
                  << " / " << fmt("%.3f", dyt.saturation_final) << " | " << fmt("%.1f", van.activation_erank) << " / "
                  << fmt("%.1f", dyt.activation_erank) << " | " << fmt("%.2f", van.weight_alpha) << " / "
                  << fmt("%.2f", dyt.weight_alpha) << " | " << (predicted ? "yes" : "no") << " | " << (helped ? "yes" : "no")
                  << " |\n";
            delta_csv << model << "," << size << "," << (double)size / (double)sizes.front() << "," << d_dyt << "," << d_diff
                      << "," << dyt.saturation_calib << "," << dyt.saturation_final << "\n";
        }
    }
    delta_csv.close();
    std::ostringstream screening;
    screening << "screening rule 'DyT helps iff saturation >= " << kScreeningThreshold << "': " << correct_calib << " of "
              << total << " cells right with saturation at 10% of training, " << correct_final << " of " << total
              << " with the final saturation\n"
              << "correlation of saturation with DyT's change in validation loss: r = " << fmt("%.2f", pearson(sat_calib, dyt_change))
              << " (at 10%), r = " << fmt("%.2f", pearson(sat_final, dyt_change)) << " (final)\n";
    std::ofstream(options.out_dir + "/table.md") << table.str() << "\n" << screening.str();

    // Plots: the change against data size; per-layer saturation; saturation against the change.
    {
        std::ofstream gp(options.out_dir + "/delta.gp");
        gp << plot_header(options.out_dir, "delta", "validation loss change against the vanilla model")
           << "set logscale x\nset xlabel 'training-set size / smallest size'\nset ylabel 'change in validation loss (%)'\n"
           << "set xzeroaxis\nplot ";
        bool first = true;
        for (const std::string& model : models)
            for (int col : {4, 5}) {
                gp << (first ? "" : ", ") << "'" << options.out_dir << "/delta.csv' using (strcol(1) eq '" << model
                   << "' ? $3 : NaN):" << col << " with linespoints lw 2 title '" << model << (col == 4 ? " DyT" : " DiffAttn")
                   << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(options.out_dir + "/saturation.gp");
        gp << plot_header(options.out_dir, "saturation", "DyT saturation per layer at the end (|alpha x| > 2)")
           << "set xlabel 'DyT layer (input order; the last is the final norm)'\nset ylabel 'saturation'\nset yrange [0:1]\nplot ";
        bool first = true;
        for (const std::string& model : models)
            for (int64_t size : scale_of(model).sizes) {
                gp << (first ? "" : ", ") << "'" << options.out_dir << "/saturation.csv' using (strcol(1) eq '" << model
                   << "' && $2 == " << size << " ? $3 : NaN):5 with linespoints title '" << model << " " << size_label(size) << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(options.out_dir + "/screening.gp");
        gp << plot_header(options.out_dir, "screening", "screening rule: saturation at 10% of training vs DyT's effect")
           << "set xlabel 'DyT saturation at 10% of training'\nset ylabel 'DyT change in validation loss (%)'\n"
           << "set xzeroaxis\nset arrow from " << kScreeningThreshold << ", graph 0 to " << kScreeningThreshold
           << ", graph 1 nohead dt 2\nplot ";
        bool first = true;
        for (const std::string& model : models) {
            gp << (first ? "" : ", ") << "'" << options.out_dir << "/delta.csv' using (strcol(1) eq '" << model
               << "' ? $6 : NaN):4 with points pt 7 ps 1.5 title '" << model << "'";
            first = false;
        }
        gp << "\n";
    }
    std::string notes = render_plot(options.out_dir, "delta") + ", " + render_plot(options.out_dir, "saturation") + ", " +
                        render_plot(options.out_dir, "screening");

    std::printf("\n%s\n%s", table.str().c_str(), screening.str().c_str());
    std::printf("results in %s: results.csv, delta.csv, saturation.csv, table.md, %s\n", options.out_dir.c_str(), notes.c_str());
    return 0;
}

}  // namespace app
}  // namespace nc
