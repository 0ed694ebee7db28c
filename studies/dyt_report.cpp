// dyt_report.cpp — the DyT study's report (studies/dyt.h): its CSVs, its
// tables (the tuning, the regime, the claims, the Llama ablation), the
// screening rule's scores and its plots, all from what the runs gave.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "studies/dyt.h"

namespace nc {
namespace app {
namespace dyt {

// r with its interval, or why there is none (a constant saturation, e.g. every DyT run at 0).
static std::string correlation_text(const std::vector<double>& xs, const std::vector<double>& ys) {
    Interval r = correlation_interval(xs, ys);
    return std::isfinite(r.mean) ? interval_text(r, "%+.2f") : "n/a (one of them is constant)";
}

// The rule in words; a threshold outside the cases' range predicts one outcome for all.
static std::string rule_text(const ThresholdRule& rule, const std::vector<ScreeningCase>& cases) {
    bool below_all = true, above_all = true;
    for (const ScreeningCase& c : cases) {
        below_all &= rule.threshold <= c.saturation;
        above_all &= rule.threshold > c.saturation;
    }
    if (below_all || above_all) return (predict(rule, below_all ? 1e9 : -1e9) ? "'DyT always helps'" : "'DyT never helps'");
    return std::string("'DyT helps iff saturation ") + (rule.helps_above ? ">= " : "< ") + fmt("%.3f", rule.threshold) + "'";
}

// seed-wise a[i] - b[i]
static std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> d;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d.push_back(a[i] - b[i]);
    return d;
}

void write_run_csvs(DytStudy& study) {
    auto& runs = study.runs;
    auto& chosen_lr = study.chosen_lr;
    const std::vector<std::string>& trained = study.trained;
    std::ofstream runs_csv(study.out_dir + "/results.csv");
    runs_csv << "model,variant,train_size,epochs,lr,seed,val_loss,train_loss,generalization_gap,saturation_calibration,"
                "saturation_final,activation_erank,weight_erank,weight_alpha\n";
    std::ofstream sat_csv(study.out_dir + "/saturation.csv");
    sat_csv << "model,train_size,layer_index,layer,saturation_final\n";
    for (const std::string& model : trained)
        for (int64_t size : study.scale_of(model).sizes)
            for (const std::string& v : study.variants_of(model)) {
                const std::vector<RunResult>& rs = runs[model][size][v];
                for (size_t seed = 0; seed < rs.size(); ++seed) {
                    const RunResult& r = rs[seed];
                    runs_csv << model << "," << v << "," << size << "," << study.epochs(model, size) << ","
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

}

std::string tuning_table(const DytStudy& study) {
    const std::vector<ProtocolVariant>& variants = study.variants;
    const std::vector<VariantOutcome>& outcomes = study.outcomes;
    std::ostringstream tuning;
    bool options = false;
    for (const ProtocolVariant& v : variants) options |= !v.tuned_options.empty();
    tuning << "| tuned | at | learning rate |" << (options ? " also tuned |" : "") << " tuning loss | note |\n|---|---|---|"
           << (options ? "---|" : "") << "---|---|\n";
    for (size_t i = 0; i < variants.size(); ++i) {
        const VariantOutcome& o = outcomes[i];
        tuning << "| " << o.name << " | " << size_label(std::stoll(variants[i].tuning_args.back())) << " | "
               << fmt("%g", o.choice.best.lr) << " | " << (options ? option_text(o.choice.best) + " | " : "")
               << fmt("%.4f", o.choice.loss) << " | "
               << (o.edge_flagged ? edge_text(o.choice) + " (after " + std::to_string(o.extensions) + " extension)" : "")
               << " |\n";
    }

    return tuning.str();
}

RegimeTable regime_table(DytStudy& study) {
    auto& runs = study.runs;
    const std::vector<std::string>& models = study.models;
    RegimeTable out;
    std::vector<ScreeningCase>& calib_cases = out.calibration_cases;
    std::vector<ScreeningCase>& final_cases = out.final_cases;
    int& alpha_cells = out.alpha_cells;
    int& dyt_alpha_higher = out.dyt_alpha_higher;
    std::ostringstream table;
    table << "| model | train size | epochs | vanilla val | vanilla train / gap | DyT - vanilla | DyT change | verdict | "
             "DiffAttn - vanilla | verdict | DyT saturation at 10% / end | HTSR alpha vanilla / DyT |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::ofstream delta_csv(study.out_dir + "/delta.csv");
    delta_csv << "model,train_size,relative_size,epochs,dyt_change_percent,dyt_low,dyt_high,diffattn_change_percent,"
                 "diffattn_low,diffattn_high,saturation_calibration,saturation_final,vanilla_train,vanilla_val\n";
    for (const std::string& model : models) {
        const ModelScale& m = study.scale_of(model);
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
                  << fmt("%.2f", study.epochs(model, size)) << " | " << interval_text(v, "%.4f") << " | " << fmt("%.4f", van_train)
                  << " / " << fmt("%+.4f", v.mean - van_train) << " | " << interval_text(d_dyt, "%+.4f") << " | "
                  << fmt("%+.1f%%", d_dyt.mean * pct) << " | " << dyt_verdict << " | " << interval_text(d_diff, "%+.4f")
                  << " | " << diff_verdict << " | " << fmt("%.3f", sat_calib) << " / " << fmt("%.3f", sat_final) << " | "
                  << fmt("%.2f", alpha_van) << " / " << fmt("%.2f", alpha_dyt) << " |\n";
            delta_csv << model << "," << size << "," << (double)size / (double)m.sizes.front() << "," << study.epochs(model, size)
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

    out.text = table.str();
    return out;
}

std::string claims_table(DytStudy& study) {
    auto& runs = study.runs;
    std::ostringstream claims;
    claims << "| model | claim | paper | measured (validation loss, nats) | verdict |\n|---|---|---|---|---|\n";
    for (const std::string& model : study.models) {
        const ModelScale& m = study.scale_of(model);
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

    return claims.str();
}

std::string screening_text(const DytStudy& study, const RegimeTable& regime) {
    const std::vector<ScreeningCase>& calib_cases = regime.calibration_cases;
    const std::vector<ScreeningCase>& final_cases = regime.final_cases;
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
        Csv d = read_csv(study.out_dir + "/delta.csv");
        int col = d.column("dyt_change_percent"), sat = d.column("saturation_calibration");
        std::vector<double> xs, ys;
        for (size_t i = 0; i < d.rows.size(); ++i) xs.push_back(d.number(i, sat)), ys.push_back(d.number(i, col));
        screening << "correlation of the saturation at 10% with DyT's change in validation loss over the cells: r = "
                  << correlation_text(xs, ys) << "\n";
    }
    screening << "HTSR alpha (block matrices of at least " << kMinMatrixSide << " x " << kMinMatrixSide
              << "): DyT's higher than vanilla's in " << regime.dyt_alpha_higher << " of " << regime.alpha_cells << " cells\n";

    return screening.str();
}

std::string ablation_table(DytStudy& study) {
    auto& runs = study.runs;
    bool ablation = study.ablation;
    const DytScale& s = study.s;
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
    return ablation_table.str();
}

std::string draw_plots(const DytStudy& study) {
    const std::vector<std::string>& models = study.models;
    const std::vector<std::string>& trained = study.trained;
    {
        std::ofstream gp(study.out_dir + "/delta.gp");
        gp << plot_header(study.out_dir, "delta", "change in validation loss against the vanilla model (95% intervals)")
           << "set logscale x\nset xlabel 'training-set size / smallest size'\nset ylabel 'change in validation loss (%)'\n"
           << "set xzeroaxis\nset key outside right\nplot ";
        bool first = true;
        for (const std::string& model : models)
            for (int col : {5, 8}) {
                gp << (first ? "" : ", ") << "'" << study.out_dir << "/delta.csv' using (strcol(1) eq '" << model
                   << "' ? $3 : NaN):" << col << ":" << col + 1 << ":" << col + 2 << " with yerrorlines lw 2 title '" << model
                   << (col == 5 ? " DyT" : " DiffAttn") << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(study.out_dir + "/gap.gp");
        gp << plot_header(study.out_dir, "gap", "the regime axis: vanilla models' training and validation loss")
           << "set logscale x\nset xlabel 'epochs over the training set'\nset ylabel 'loss'\nset key outside right\nplot ";
        bool first = true;
        for (const std::string& model : models)
            for (int col : {13, 14}) {
                gp << (first ? "" : ", ") << "'" << study.out_dir << "/delta.csv' using (strcol(1) eq '" << model
                   << "' ? $4 : NaN):" << col << " with linespoints lw 2 " << (col == 13 ? "dt 2 " : "") << "title '" << model
                   << (col == 13 ? " train" : " validation") << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(study.out_dir + "/saturation.gp");
        gp << plot_header(study.out_dir, "saturation", "DyT saturation per layer at the end, held out (|alpha x| > 2)")
           << "set xlabel 'DyT layer (input order; the last is the final norm)'\nset ylabel 'saturation'\nset yrange [0:1]\n"
              "set key outside right\nplot ";
        bool first = true;
        for (const std::string& model : trained)
            for (int64_t size : {study.scale_of(model).sizes.front(), study.scale_of(model).sizes.back()}) {
                gp << (first ? "" : ", ") << "'" << study.out_dir << "/saturation.csv' using (strcol(1) eq '" << model
                   << "' && $2 == " << size << " ? $3 : NaN):5 with linespoints title '" << model << " " << size_label(size) << "'";
                first = false;
            }
        gp << "\n";
    }
    {
        std::ofstream gp(study.out_dir + "/screening.gp");
        gp << plot_header(study.out_dir, "screening", "screening rule: held-out saturation at 10% of training vs DyT's effect")
           << "set xlabel 'DyT saturation at 10% of training (held out)'\nset ylabel 'DyT change in validation loss (%)'\n"
           << "set xzeroaxis\nset arrow from " << kScreeningThreshold << ", graph 0 to " << kScreeningThreshold
           << ", graph 1 nohead dt 2\nplot ";
        bool first = true;
        for (const std::string& model : models) {
            gp << (first ? "" : ", ") << "'" << study.out_dir << "/delta.csv' using (strcol(1) eq '" << model
               << "' ? $11 : NaN):5 with points pt 7 ps 1.5 title '" << model << "'";
            first = false;
        }
        gp << "\n";
    }
    std::string notes = render_plot(study.out_dir, "delta") + ", " + render_plot(study.out_dir, "gap") + ", " +
                        render_plot(study.out_dir, "saturation") + ", " + render_plot(study.out_dir, "screening");

    return notes;
}

}  // namespace dyt
}  // namespace app
}  // namespace nc
