// experiment_dyt.cpp — `normcore experiment dyt`: when does removing the norm help?
//
// The DyT regime study (Verma, arXiv:2604.23434) replaces every LayerNorm
// (RMSNorm in Llama) by Dynamic Tanh, DyT(x) = gamma * tanh(alpha x) with
// alpha0 = 2, and finds the effect depends on the data regime: with little
// data (a model that can memorize its training set) DyT's bounded
// activations regularize and the validation loss drops; with much data they
// cost capacity and it rises. Differential attention is its contrast (it
// helps more with more data). Its mechanism is saturation, the fraction of
// alpha x beyond +-2 where tanh is flat; its screening rule says: measure the
// saturation after a short calibration run; DyT helps iff it is >= 0.43.
//
// How this study asks that (chapter 12):
//   - The regime axis: training sets of 6 sizes (text) spanning 2.5 orders
//     of magnitude, the first N tokens of the corpus's training split, whose
//     documents `normcore corpus build` shuffled with a fixed seed (so the
//     sets are nested random documents); ViT on the first N Fashion-MNIST
//     training images. Every run sees the same number of tokens (steps x
//     batch: a fixed token budget), so the smallest sets are seen for dozens
//     of epochs and the largest for a fraction of one.
//   - The protocol (studies/protocol.h): the learning rate is tuned per model,
//     variant and size band (small: several epochs; large: about one or
//     fewer), on the tuning split, at one size inside the band; every size of
//     the band is then reported with 3 seeds on the validation split.
//     Differences are paired by seed, with 95% intervals and verdicts.
//   - Variants: the model as it is ("vanilla"), DyT (alpha0 = 2), and the
//     regime study's differential attention (--diffattn official for the
//     Diff-Transformer's own). Llama also runs with a GELU MLP instead of
//     SwiGLU, with and without DyT: the component ablation behind the
//     paper's r = 0.94 between saturation and validation loss.
//   - Saturation on held-out data (train's saturation_heldout.csv) after a
//     tenth of the steps (the calibration point: the paper's step 500 of
//     5,000) and at the end; the screening rule scored as stated, fitted in
//     sample, and leaving one size out, against predicting the majority.
//   - Weight spectra: effective rank and HTSR alpha of every block matrix
//     whose smaller side has at least kMinMatrixSide rows or columns.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "studies/study.h"
#include "studies/protocol.h"
#include "studies/screening.h"
#include "data/corpus.h"
#include "tensor/error.h"

namespace nc {
namespace app {

namespace {

struct ModelScale {
    int64_t layers, width, heads, batch, steps;
    std::vector<int64_t> sizes;  // training tokens (text) or images (ViT), increasing
    size_t first_large;          // sizes[first_large..] are the large band
    int64_t tune_small, tune_large;  // the size each band is tuned at
};

struct DytScale {
    ModelScale text, vit;
    int64_t seq, seeds;
    std::vector<double> lrs;
    int64_t eval_tokens, eval_batches;  // per evaluation: text tokens spread over the split; ViT batches
};

DytScale dyt_scale(const std::string& scale) {
    if (scale == "smoke")
        return {{1, 32, 2, 4, 20, {200, 600, 2000, 6000, 20000}, 3, 600, 6000},
                {1, 32, 2, 8, 20, {64, 200, 640, 2000, 6400}, 3, 200, 2000},
                16, 2, {3e-3}, 2000, 4};
    if (scale == "quick")
        return {{4, 64, 4, 8, 800, {10000, 32000, 100000, 320000, 1000000, 3200000}, 3, 32000, 1000000},
                {4, 64, 4, 32, 800, {1000, 3000, 10000, 30000, 60000}, 3, 3000, 30000},
                64, 3, {3e-4, 1e-3, 3e-3}, 100000, 40};
    return {{6, 256, 8, 32, 5000, {100000, 320000, 1000000, 3200000, 10000000, 32000000}, 3, 320000, 10000000},
            {6, 192, 6, 128, 5000, {1000, 3000, 10000, 30000, 60000}, 3, 3000, 30000},
            128, 3, {1e-4, 3e-4, 1e-3}, 200000, 39};
}

// HTSR alpha is fitted to a matrix's eigenvalue tail: a small matrix has too
// few eigenvalues for the fit to mean much. Block matrices at least this
// many rows and columns (the quick scale's are 64 x 64 and up).
const int64_t kMinMatrixSide = 32;

struct RunResult {
    double val = NAN, train = NAN;  // validation loss; training loss over the last tenth of the steps
    double saturation_calib = NAN, saturation_final = NAN;  // held-out, mean over DyT layers
    std::vector<std::string> dyt_layers;
    std::vector<double> layer_saturation_final;
    double activation_erank = NAN;  // residual stream after the last block
    double weight_erank = NAN, weight_alpha = NAN;  // means over block matrices (kMinMatrixSide)
};

bool is_block_matrix(const std::string& name) {
    std::stringstream parts(name);
    std::string part;
    while (std::getline(parts, part, '.'))
        if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) return true;
    return false;
}

// A reported run's result and what it left in its directory; NaN for what
// a diverged run did not write.
RunResult read_run(const std::string& dir, const CellResult& run) {
    RunResult r;
    r.val = run.val_loss();
    if (std::isnan(r.val)) return r;  // stopped on a non-finite loss: nothing else was written
    Csv log = read_csv(dir + "/train_log.csv");
    int loss = log.column("loss");
    std::vector<double> tail;
    for (size_t i = log.rows.size() - std::max<size_t>(1, log.rows.size() / 10); i < log.rows.size(); ++i)
        tail.push_back(log.number(i, loss));
    r.train = mean(tail);
    std::ifstream probe(dir + "/saturation_heldout.csv");
    if (probe) {
        Csv s = read_csv(dir + "/saturation_heldout.csv");
        int m = s.column("mean");
        r.saturation_calib = s.number(0, m);
        r.saturation_final = s.number(s.rows.size() - 1, m);
        for (int c : s.columns_starting_with("saturation_")) {
            r.dyt_layers.push_back(s.header[c].substr(std::string("saturation_").size()));
            r.layer_saturation_final.push_back(s.number(s.rows.size() - 1, c));
        }
    }
    Csv stream = read_csv(dir + "/stream.csv");
    r.activation_erank = stream.number(stream.rows.size() - 1, stream.column("effective_rank"));
    Csv weights = read_csv(dir + "/weights.csv");
    int name = weights.column("name"), rows = weights.column("rows"), cols = weights.column("cols");
    int erank_col = weights.column("effective_rank"), alpha_col = weights.column("htsr_alpha");
    std::vector<double> erank, alpha;
    for (size_t i = 0; i < weights.rows.size(); ++i) {
        if (!is_block_matrix(weights.rows[i][name])) continue;
        if (std::min(weights.number(i, rows), weights.number(i, cols)) < (double)kMinMatrixSide) continue;
        erank.push_back(weights.number(i, erank_col));
        double a = weights.number(i, alpha_col);
        if (!std::isnan(a)) alpha.push_back(a);
    }
    r.weight_erank = mean(erank);
    r.weight_alpha = mean(alpha);
    return r;
}

std::string size_label(int64_t n) {
    if (n >= 1000000 && n % 100000 == 0) return fmt("%g", (double)n / 1e6) + "M";
    if (n >= 1000 && n % 100 == 0) return fmt("%g", (double)n / 1e3) + "K";
    return std::to_string(n);
}

// One number per seed, from every run of a configuration.
std::vector<double> field(const std::vector<RunResult>& runs, double RunResult::*member) {
    std::vector<double> xs;
    for (const RunResult& r : runs) xs.push_back(r.*member);
    return xs;
}

// r with its interval, or why there is none (a constant saturation, e.g. every DyT run at 0).
std::string correlation_text(const std::vector<double>& xs, const std::vector<double>& ys) {
    Interval r = correlation_interval(xs, ys);
    return std::isfinite(r.mean) ? interval_text(r, "%+.2f") : "n/a (one of them is constant)";
}

// The rule in words; a threshold outside the cases' range predicts one outcome for all.
std::string rule_text(const ThresholdRule& rule, const std::vector<ScreeningCase>& cases) {
    bool below_all = true, above_all = true;
    for (const ScreeningCase& c : cases) {
        below_all &= rule.threshold <= c.saturation;
        above_all &= rule.threshold > c.saturation;
    }
    if (below_all || above_all) return (predict(rule, below_all ? 1e9 : -1e9) ? "'DyT always helps'" : "'DyT never helps'");
    return std::string("'DyT helps iff saturation ") + (rule.helps_above ? ">= " : "< ") + fmt("%.3f", rule.threshold) + "'";
}

// seed-wise a[i] - b[i]
std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> d;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d.push_back(a[i] - b[i]);
    return d;
}

}  // namespace

static int dyt_experiment(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    DytScale s = dyt_scale(options.scale);
    if (flags.integer("steps") > 0) s.text.steps = s.vit.steps = flags.integer("steps");
    if (flags.integer("seeds") > 0) s.seeds = flags.integer("seeds");
    std::string data = flags.str("data");
    std::vector<std::string> models;
    {
        std::stringstream list(flags.str("models"));
        std::string m;
        while (std::getline(list, m, ','))
            if (m == "gpt2" || m == "llama" || m == "vit") models.push_back(m);
            else throw Error("flag --models: unknown model '" + m + "' (choose from gpt2, llama, vit)");
        if (models.empty()) throw Error("flag --models: name at least one of gpt2, llama, vit");
    }
    bool text = false;
    for (const std::string& m : models) text |= m != "vit";
    if (text && !data::is_split_corpus(data))
        throw Error("flag --data: '" + data + "' is not a corpus directory with train, tuning and validation splits "
                    "(build one with `make corpus` or `normcore corpus build --out DIR`)");
    std::string diffattn = flags.str("diffattn");
    if (diffattn != "regime" && diffattn != "official")
        throw Error("flag --diffattn: '" + diffattn + "' is not a kind (regime or official)");
    // The Llama component ablation rides along with Llama: "llama-gelu" is Llama with a GELU MLP.
    std::vector<std::string> trained = models;
    bool ablation = false;
    for (const std::string& m : models) ablation |= m == "llama";
    if (ablation) trained.push_back("llama-gelu");

    auto scale_of = [&](const std::string& model) -> const ModelScale& { return model == "vit" ? s.vit : s.text; };
    auto variants_of = [&](const std::string& model) {
        return model == "llama-gelu" ? std::vector<std::string>{"vanilla", "dyt"}
                                     : std::vector<std::string>{"vanilla", "dyt", "diffattn"};
    };
    auto size_args = [&](const std::string& model, int64_t size) {
        return std::vector<std::string>{model == "vit" ? "--train-images" : "--train-tokens", std::to_string(size)};
    };
    auto report_name = [&](const std::string& model, const std::string& variant, int64_t size) {
        return model + "-" + variant + "-" + size_label(size);
    };
    int64_t tokens_per_run = s.text.steps * s.text.batch * s.seq, images_per_run = s.vit.steps * s.vit.batch;
    auto epochs = [&](const std::string& model, int64_t size) {
        return (double)(model == "vit" ? images_per_run : tokens_per_run) / (double)size;
    };

    std::vector<ProtocolVariant> variants;
    for (const std::string& model : trained) {
        const ModelScale& m = scale_of(model);
        for (const std::string& variant : variants_of(model))
            for (int band = 0; band < 2; ++band) {
                ProtocolVariant v;
                v.name = model + "-" + variant + (band == 0 ? "-small" : "-large");
                v.args = {"--model", model == "llama-gelu" ? "llama" : model, "--layers", std::to_string(m.layers),
                          "--width", std::to_string(m.width), "--heads", std::to_string(m.heads), "--batch",
                          std::to_string(m.batch), "--steps", std::to_string(m.steps), "--eval-every", "0", "--device",
                          flags.str("device")};
                if (model == "vit") {
                    v.args.insert(v.args.end(), {"--eval-batches", std::to_string(s.eval_batches)});
                } else {
                    v.args.insert(v.args.end(), {"--seq", std::to_string(s.seq), "--sample-tokens", "0", "--data", data,
                                                 "--eval-tokens", std::to_string(s.eval_tokens)});
                }
                if (model == "llama-gelu") v.args.insert(v.args.end(), {"--mlp", "gelu"});
                if (variant == "dyt") v.args.insert(v.args.end(), {"--norm", "dyt", "--dyt-alpha", "2"});
                if (variant == "diffattn")
                    v.args.insert(v.args.end(), {"--attention", diffattn == "regime" ? "differential-regime" : "differential"});
                v.tuning_args = size_args(model, band == 0 ? m.tune_small : m.tune_large);
                for (size_t i = band == 0 ? 0 : m.first_large; i < (band == 0 ? m.first_large : m.sizes.size()); ++i)
                    v.reports.push_back({report_name(model, variant, m.sizes[i]), size_args(model, m.sizes[i])});
                variants.push_back(v);
            }
    }
    ProtocolPlan plan;
    plan.grid.lrs = s.lrs;
    plan.grid.warmups = {std::max<int64_t>(1, s.text.steps / 10)};
    plan.grid.max_warmup = plan.grid.warmups.front();  // the warm-up stays a tenth of the run
    plan.seeds = s.seeds;
    plan.eval_tokens = 0;  // the variants carry their own evaluation flags (text and images differ)
    plan.data = "";
    plan.max_extensions = 1;
    plan.report_args = {"--diagnostics"};

    std::printf("DyT study: text L=%lld C=%lld T=%lld B=%lld on %s training tokens (%s tokens per run); ViT L=%lld "
                "C=%lld B=%lld on %s images (%s images per run); %lld steps, %lld seeds, differential attention: %s\n",
                (long long)s.text.layers, (long long)s.text.width, (long long)s.seq, (long long)s.text.batch,
                (size_label(s.text.sizes.front()) + ".." + size_label(s.text.sizes.back())).c_str(),
                size_label(tokens_per_run).c_str(), (long long)s.vit.layers, (long long)s.vit.width,
                (long long)s.vit.batch, (size_label(s.vit.sizes.front()) + ".." + size_label(s.vit.sizes.back())).c_str(),
                size_label(images_per_run).c_str(), (long long)s.text.steps, (long long)s.seeds, diffattn.c_str());
    std::vector<VariantOutcome> outcomes = run_protocol(variants, plan, options);

    // Read every reported run back: runs[model][size][variant] = one result per seed.
    std::map<std::string, std::map<int64_t, std::map<std::string, std::vector<RunResult>>>> runs;
    std::map<std::string, std::map<int64_t, std::map<std::string, double>>> chosen_lr;
    for (size_t i = 0; i < variants.size(); ++i)
        for (size_t r = 0; r < outcomes[i].report_names.size(); ++r) {
            const std::string& name = outcomes[i].report_names[r];
            for (const std::string& model : trained)
                for (const std::string& variant : variants_of(model))
                    for (int64_t size : scale_of(model).sizes)
                        if (report_name(model, variant, size) == name) {
                            for (size_t s = 0; s < outcomes[i].report_dirs[r].size(); ++s)
                                runs[model][size][variant].push_back(read_run(outcomes[i].report_dirs[r][s], outcomes[i].report_runs[r][s]));
                            chosen_lr[model][size][variant] = outcomes[i].choice.best.lr;
                        }
        }

    std::ofstream runs_csv(options.out_dir + "/results.csv");
    runs_csv << "model,variant,train_size,epochs,lr,seed,val_loss,train_loss,generalization_gap,saturation_calibration,"
                "saturation_final,activation_erank,weight_erank,weight_alpha\n";
    std::ofstream sat_csv(options.out_dir + "/saturation.csv");
    sat_csv << "model,train_size,layer_index,layer,saturation_final\n";
    for (const std::string& model : trained)
        for (int64_t size : scale_of(model).sizes)
            for (const std::string& v : variants_of(model)) {
                const std::vector<RunResult>& rs = runs[model][size][v];
                for (size_t seed = 0; seed < rs.size(); ++seed) {
                    const RunResult& r = rs[seed];
                    runs_csv << model << "," << v << "," << size << "," << epochs(model, size) << ","
                             << chosen_lr[model][size][v] << "," << seed + 1 << "," << r.val << "," << r.train << ","
                             << r.val - r.train << "," << r.saturation_calib << "," << r.saturation_final << ","
                             << r.activation_erank << "," << r.weight_erank << "," << r.weight_alpha << "\n";
                }
                if (v == "dyt" && !rs.empty())
                    for (size_t l = 0; l < rs.front().dyt_layers.size(); ++l) {
                        std::vector<double> per_seed;
                        for (const RunResult& r : rs)
                            if (l < r.layer_saturation_final.size()) per_seed.push_back(r.layer_saturation_final[l]);
                        sat_csv << model << "," << size << "," << l << "," << rs.front().dyt_layers[l] << ","
                                << mean_interval(per_seed).mean << "\n";
                    }
            }
    runs_csv.close();
    sat_csv.close();

    // ---- the tuning: each model x variant x size band's learning rate ----
    std::ostringstream tuning;
    tuning << "| tuned | at | learning rate | tuning loss | note |\n|---|---|---|---|---|\n";
    for (size_t i = 0; i < variants.size(); ++i) {
        const VariantOutcome& o = outcomes[i];
        tuning << "| " << o.name << " | " << size_label(std::stoll(variants[i].tuning_args.back())) << " | "
               << fmt("%g", o.choice.best.lr) << " | " << fmt("%.4f", o.choice.loss) << " | "
               << (o.edge_flagged ? edge_text(o.choice) + " (after " + std::to_string(o.tried.size() - plan.grid.lrs.size()) +
                                        " extension)"
                                  : "")
               << " |\n";
    }

    // ---- the regime table: per model and size, DyT and DiffAttn against vanilla ----
    std::ostringstream table;
    table << "| model | train size | epochs | vanilla val | vanilla train / gap | DyT - vanilla | DyT change | verdict | "
             "DiffAttn - vanilla | verdict | DyT saturation at 10% / end | HTSR alpha vanilla / DyT |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::ofstream delta_csv(options.out_dir + "/delta.csv");
    delta_csv << "model,train_size,relative_size,epochs,dyt_change_percent,dyt_low,dyt_high,diffattn_change_percent,"
                 "diffattn_low,diffattn_high,saturation_calibration,saturation_final,vanilla_train,vanilla_val\n";
    std::vector<ScreeningCase> calib_cases, final_cases;
    int alpha_cells = 0, dyt_alpha_higher = 0;
    for (const std::string& model : models) {
        const ModelScale& m = scale_of(model);
        for (size_t i = 0; i < m.sizes.size(); ++i) {
            int64_t size = m.sizes[i];
            bool large = i >= m.first_large;
            auto& cell = runs[model][size];
            std::vector<double> van = field(cell["vanilla"], &RunResult::val), dyt = field(cell["dyt"], &RunResult::val),
                                diff = field(cell["diffattn"], &RunResult::val);
            Interval v = mean_interval(van);
            Interval d_dyt = paired_difference(dyt, van), d_diff = paired_difference(diff, van);
            double van_train = mean_interval(field(cell["vanilla"], &RunResult::train)).mean;
            double sat_calib = mean_interval(field(cell["dyt"], &RunResult::saturation_calib)).mean;
            double sat_final = mean_interval(field(cell["dyt"], &RunResult::saturation_final)).mean;
            double alpha_van = mean_interval(field(cell["vanilla"], &RunResult::weight_alpha)).mean;
            double alpha_dyt = mean_interval(field(cell["dyt"], &RunResult::weight_alpha)).mean;
            if (std::isfinite(alpha_van) && std::isfinite(alpha_dyt)) {
                ++alpha_cells;
                dyt_alpha_higher += alpha_dyt > alpha_van;
            }
            double pct = 100.0 / v.mean;
            std::string dyt_verdict = verdict(d_dyt, large ? Direction::Higher : Direction::Lower);
            std::string diff_verdict = large ? verdict(d_diff, Direction::Lower) : "(no claim)";
            table << "| " << model << " | " << size_label(size) << (model == "vit" ? " images" : " tokens") << " | "
                  << fmt("%.2f", epochs(model, size)) << " | " << interval_text(v, "%.4f") << " | " << fmt("%.4f", van_train)
                  << " / " << fmt("%+.4f", v.mean - van_train) << " | " << interval_text(d_dyt, "%+.4f") << " | "
                  << fmt("%+.1f%%", d_dyt.mean * pct) << " | " << dyt_verdict << " | " << interval_text(d_diff, "%+.4f")
                  << " | " << diff_verdict << " | " << fmt("%.3f", sat_calib) << " / " << fmt("%.3f", sat_final) << " | "
                  << fmt("%.2f", alpha_van) << " / " << fmt("%.2f", alpha_dyt) << " |\n";
            delta_csv << model << "," << size << "," << (double)size / (double)m.sizes.front() << "," << epochs(model, size)
                      << "," << d_dyt.mean * pct << "," << d_dyt.low * pct << "," << d_dyt.high * pct << ","
                      << d_diff.mean * pct << "," << d_diff.low * pct << "," << d_diff.high * pct << "," << sat_calib
                      << "," << sat_final << "," << van_train << "," << v.mean << "\n";
            double dyt_mean = mean_interval(dyt).mean;
            if (std::isfinite(sat_calib) && std::isfinite(dyt_mean) && std::isfinite(v.mean)) {
                int group = (model == "vit" ? 100 : 0) + (int)i;  // one group per training-set size
                calib_cases.push_back({sat_calib, dyt_mean < v.mean, group});
                final_cases.push_back({sat_final, dyt_mean < v.mean, group});
            }
        }
    }
    delta_csv.close();

    // ---- the claims, per model: the ends of the regime axis, and the trend between them ----
    std::ostringstream claims;
    claims << "| model | claim | paper | measured (validation loss, nats) | verdict |\n|---|---|---|---|---|\n";
    for (const std::string& model : models) {
        const ModelScale& m = scale_of(model);
        auto& small = runs[model][m.sizes.front()];
        auto& big = runs[model][m.sizes.back()];
        auto val = [](std::vector<RunResult>& rs) { return field(rs, &RunResult::val); };
        std::vector<double> dyt_small = minus(val(small["dyt"]), val(small["vanilla"]));
        std::vector<double> dyt_big = minus(val(big["dyt"]), val(big["vanilla"]));
        std::vector<double> diff_small = minus(val(small["diffattn"]), val(small["vanilla"]));
        std::vector<double> diff_big = minus(val(big["diffattn"]), val(big["vanilla"]));
        std::string smallest = size_label(m.sizes.front()), largest = size_label(m.sizes.back());
        auto row = [&](const std::string& claim, const std::string& paper, const std::string& what, const Interval& d,
                       Direction dir) {
            claims << "| " << model << " | " << claim << " | " << paper << " | " << what << " = " << interval_text(d, "%+.4f")
                   << " | " << verdict(d, dir) << " |\n";
        };
        row("DyT helps with the smallest set (" + smallest + ")", "lower", "DyT - vanilla", mean_interval(dyt_small),
            Direction::Lower);
        row("DyT hurts with the largest set (" + largest + ")", "higher", "DyT - vanilla", mean_interval(dyt_big),
            Direction::Higher);
        row("DyT's effect grows with data", "higher", "(DyT - vanilla) at " + largest + " minus at " + smallest,
            paired_difference(dyt_big, dyt_small), Direction::Higher);
        row("DiffAttn helps with the largest set (" + largest + ")", "lower", "DiffAttn - vanilla", mean_interval(diff_big),
            Direction::Lower);
        row("DiffAttn's advantage grows with data", "lower", "(DiffAttn - vanilla) at " + largest + " minus at " + smallest,
            paired_difference(diff_big, diff_small), Direction::Lower);
    }

    // ---- the screening rule ----
    std::ostringstream screening;
    auto score_text = [](const ScreeningScore& sc) {
        return std::to_string(sc.correct) + " of " + std::to_string(sc.total) + " (" + fmt("%.0f%%", 100 * sc.accuracy()) + ")";
    };
    ThresholdRule paper_rule{kScreeningThreshold, true};
    ThresholdRule fitted = fit_threshold(calib_cases);
    screening << "screening rule 'DyT helps iff held-out saturation >= " << kScreeningThreshold
              << "': " << score_text(score(calib_cases, paper_rule)) << " cells right at 10% of training, "
              << score_text(score(final_cases, paper_rule)) << " at the end\n"
              << "fitted to these cells: " << rule_text(fitted, calib_cases) << ", " << score_text(score(calib_cases, fitted))
              << " in sample\n"
              << "leave one size out: the fitted rule " << score_text(leave_one_group_out(calib_cases))
              << ", the majority outcome of the other sizes " << score_text(majority_leave_one_group_out(calib_cases)) << "\n";
    {
        Csv d = read_csv(options.out_dir + "/delta.csv");
        int col = d.column("dyt_change_percent"), sat = d.column("saturation_calibration");
        std::vector<double> xs, ys;
        for (size_t i = 0; i < d.rows.size(); ++i) xs.push_back(d.number(i, sat)), ys.push_back(d.number(i, col));
        screening << "correlation of the saturation at 10% with DyT's change in validation loss over the cells: r = "
                  << correlation_text(xs, ys) << "\n";
    }
    screening << "HTSR alpha (block matrices of at least " << kMinMatrixSide << " x " << kMinMatrixSide
              << "): DyT's higher than vanilla's in " << dyt_alpha_higher << " of " << alpha_cells << " cells\n";

    // ---- the Llama component ablation: SwiGLU or GELU, RMSNorm or DyT ----
    std::ostringstream ablation_table;
    if (ablation) {
        ablation_table << "| train size | RMSNorm + SwiGLU | DyT + SwiGLU | RMSNorm + GELU | DyT + GELU | DyT saturation at the end "
                          "SwiGLU / GELU | r(saturation, val) over the DyT runs |\n|---|---|---|---|---|---|---|\n";
        std::vector<double> all_sat, all_val;  // deviations from each size's means: like for like
        for (int64_t size : s.text.sizes) {
            auto& swiglu = runs["llama"][size];
            auto& gelu = runs["llama-gelu"][size];
            std::vector<double> sat, val;
            for (auto* rs : {&swiglu["dyt"], &gelu["dyt"]})
                for (const RunResult& r : *rs) sat.push_back(r.saturation_final), val.push_back(r.val);
            double ms = mean_interval(sat).mean, mv = mean_interval(val).mean;
            for (size_t k = 0; k < sat.size(); ++k) all_sat.push_back(sat[k] - ms), all_val.push_back(val[k] - mv);
            auto v = [](std::vector<RunResult>& rs) { return interval_text(mean_interval(field(rs, &RunResult::val)), "%.4f"); };
            ablation_table << "| " << size_label(size) << " | " << v(swiglu["vanilla"]) << " | " << v(swiglu["dyt"]) << " | "
                           << v(gelu["vanilla"]) << " | " << v(gelu["dyt"]) << " | "
                           << fmt("%.3f", mean_interval(field(swiglu["dyt"], &RunResult::saturation_final)).mean) << " / "
                           << fmt("%.3f", mean_interval(field(gelu["dyt"], &RunResult::saturation_final)).mean) << " | "
                           << correlation_text(sat, val) << " |\n";
        }
        ablation_table << "\nwithin-size correlation of the final saturation with the validation loss (each size's means "
                          "subtracted; the interval ignores the "
                       << s.text.sizes.size() << " means): r = " << correlation_text(all_sat, all_val) << "\n";
    }
    std::ofstream(options.out_dir + "/table.md") << tuning.str() << "\n" << table.str() << "\n" << claims.str() << "\n" << screening.str() << "\n"
                                                 << ablation_table.str();

    // ---- plots ----
    {
        std::ofstream gp(options.out_dir + "/delta.gp");
        gp << plot_header(options.out_dir, "delta", "change in validation loss against the vanilla model (95% intervals)")
           << "set logscale x\nset xlabel 'training-set size / smallest size'\nset ylabel 'change in validation loss (%)'\n"
           << "set xzeroaxis\nset key outside right\nplot ";
        bool first = true;
        for (const std::string& model : models)
            for (int col : {5, 8}) {
                gp << (first ? "" : ", ") << "'" << options.out_dir << "/delta.csv' using (strcol(1) eq '" << model
                   << "' ? $3 : NaN):" << col << ":" << col + 1 << ":" << col + 2 << " with yerrorlines lw 2 title '" << model
                   << (col == 5 ? " DyT" : " DiffAttn") << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(options.out_dir + "/gap.gp");
        gp << plot_header(options.out_dir, "gap", "the regime axis: vanilla models' training and validation loss")
           << "set logscale x\nset xlabel 'epochs over the training set'\nset ylabel 'loss'\nset key outside right\nplot ";
        bool first = true;
        for (const std::string& model : models)
            for (int col : {13, 14}) {
                gp << (first ? "" : ", ") << "'" << options.out_dir << "/delta.csv' using (strcol(1) eq '" << model
                   << "' ? $4 : NaN):" << col << " with linespoints lw 2 " << (col == 13 ? "dt 2 " : "") << "title '" << model
                   << (col == 13 ? " train" : " validation") << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(options.out_dir + "/saturation.gp");
        gp << plot_header(options.out_dir, "saturation", "DyT saturation per layer at the end, held out (|alpha x| > 2)")
           << "set xlabel 'DyT layer (input order; the last is the final norm)'\nset ylabel 'saturation'\nset yrange [0:1]\n"
              "set key outside right\nplot ";
        bool first = true;
        for (const std::string& model : trained)
            for (int64_t size : {scale_of(model).sizes.front(), scale_of(model).sizes.back()}) {
                gp << (first ? "" : ", ") << "'" << options.out_dir << "/saturation.csv' using (strcol(1) eq '" << model
                   << "' && $2 == " << size << " ? $3 : NaN):5 with linespoints title '" << model << " " << size_label(size) << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(options.out_dir + "/screening.gp");
        gp << plot_header(options.out_dir, "screening", "screening rule: held-out saturation at 10% of training vs DyT's effect")
           << "set xlabel 'DyT saturation at 10% of training (held out)'\nset ylabel 'DyT change in validation loss (%)'\n"
           << "set xzeroaxis\nset arrow from " << kScreeningThreshold << ", graph 0 to " << kScreeningThreshold
           << ", graph 1 nohead dt 2\nplot ";
        bool first = true;
        for (const std::string& model : models) {
            gp << (first ? "" : ", ") << "'" << options.out_dir << "/delta.csv' using (strcol(1) eq '" << model
               << "' ? $11 : NaN):5 with points pt 7 ps 1.5 title '" << model << "'";
            first = false;
        }
        gp << "\n";
    }
    std::string notes = render_plot(options.out_dir, "delta") + ", " + render_plot(options.out_dir, "gap") + ", " +
                        render_plot(options.out_dir, "saturation") + ", " + render_plot(options.out_dir, "screening");

    std::printf("\n%s\n%s\n%s\n%s%s%s", tuning.str().c_str(), table.str().c_str(), claims.str().c_str(), screening.str().c_str(),
                ablation ? "\nLlama component ablation (validation loss, 95% intervals):\n" : "", ablation_table.str().c_str());
    std::printf("results in %s: results.csv, delta.csv, saturation.csv, tuning.csv, chosen.csv, table.md, %s\n",
                options.out_dir.c_str(), notes.c_str());
    return 0;
}

Study dyt_study() {
    Study s;
    s.name = "dyt";
    s.trains = true;
    s.flags = {{"data", data::kStudyCorpus, "the studies' corpus (make corpus)"},
               {"models", "gpt2,llama,vit", "which models, comma-separated (llama brings its GELU ablation)"},
               {"diffattn", "regime", "regime (the DyT regime study's differential attention) | official (Diff-Transformer's)"}};
    s.run = dyt_experiment;
    return s;
}

}  // namespace app
}  // namespace nc
