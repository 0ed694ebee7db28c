// norms_report.cpp — the norms study's report (studies/norms.h): its CSVs,
// the variants' table, each part's verdicts, and the plots, all from what
// the runs gave.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nn/config.h"
#include "nn/placement.h"
#include "studies/norms.h"

namespace nc {
namespace app {
namespace norms {

// The paper's unifying claim reads Pre-Norm as GeoNorm with an implicit
// step that shrinks with depth. Given the angle by which each block k of a
// trained model turns the stream, fit theta_k = a s_k for a schedule s
// (least squares: a = sum theta s / sum s^2) and return a and the RMS misfit
// relative to the mean angle.
struct ScheduleFit {
    std::string schedule;
    double a = NAN, relative_rms = NAN;
};
static std::vector<ScheduleFit> fit_schedules(const std::vector<double>& theta) {
    std::vector<ScheduleFit> fits;
    int64_t L = (int64_t)theta.size();
    for (nn::Decay decay : {nn::Decay::None, nn::Decay::Harmonic, nn::Decay::Sqrt, nn::Decay::Linear}) {
        double ts = 0, ss = 0;
        for (int64_t k = 0; k < L; ++k) {
            double shape = nn::geonorm_step(decay, 1.0, k, L);  // GeoNorm's own schedules, a = 1
            ts += theta[k] * shape, ss += shape * shape;
        }
        ScheduleFit f{nn::to_string(decay), ts / ss, 0};
        double err = 0;
        for (int64_t k = 0; k < L; ++k) {
            double miss = theta[k] - f.a * nn::geonorm_step(decay, 1.0, k, L);
            err += miss * miss / (double)L;
        }
        f.relative_rms = std::sqrt(err) / mean(theta);
        fits.push_back(f);
    }
    return fits;
}

// A moving average over `window` steps, so curves of noisy steps can be told
// apart (spikes stay visible in diagnostics.csv).
static std::vector<double> smooth(const std::vector<double>& xs, size_t window) {
    std::vector<double> out(xs.size());
    double total = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        total += xs[i];
        if (i >= window) total -= xs[i - window];
        out[i] = total / (double)std::min(i + 1, window);
    }
    return out;
}

// What a difference says when the paper makes no claim about it (the ablations).
static std::string change_reading(const Interval& d) {
    std::string v = verdict(d, Direction::Lower);
    return v == "reproduced" ? "lower loss" : v == "contradicted" ? "higher loss" : "inconclusive";
}

void write_run_csvs(const NormsStudy& study) {
    const NormsScale& s = study.s;
    const std::vector<Variant>& variants = study.variants;
    // results.csv: one row per reported run.
    std::ofstream results(study.out_dir + "/results.csv");
    results << "variant,seed,lr,warmup,val_loss,train_loss,spikes";
    for (int64_t b = 0; b < s.layers; ++b) results << ",grad_norm_block_" << b;
    for (int64_t b = 0; b < s.layers; ++b) results << ",update_block_" << b;
    for (int64_t b = 0; b < s.layers; ++b) results << ",residual_block_" << b;
    results << "\n";
    for (const Variant& v : variants)
        for (int64_t i = 0; i < s.seeds; ++i) {
            const RunResult& r = study.base.at(v.name)[i];
            const Setting& chosen = study.outcome.at(v.name)->choice.best;
            results << v.name << "," << i + 1 << "," << fmt("%g", chosen.lr) << "," << chosen.warmup << "," << r.val << ","
                    << r.train << "," << r.spikes;
            for (double g : r.block_grad) results << "," << g;
            for (double u : r.block_update) results << "," << u;
            for (double x : r.residual) results << "," << x;
            results << "\n";
        }
    results.close();

    // curves.csv: training loss per step (seed mean, smoothed); one column per variant.
    size_t window = std::max<int64_t>(1, s.steps / 30);
    {
        std::ofstream out(study.out_dir + "/curves.csv");
        out << "step";
        std::vector<std::vector<double>> columns;
        for (const Variant& v : variants) {
            out << "," << v.name;
            std::vector<double> avg(s.steps, 0.0), count(s.steps, 0.0);
            for (const RunResult& r : study.base.at(v.name))
                for (int64_t i = 0; i < s.steps && i < (int64_t)r.loss.size(); ++i) avg[i] += r.loss[i], count[i] += 1;
            for (int64_t i = 0; i < s.steps; ++i) avg[i] = count[i] > 0 ? avg[i] / count[i] : NAN;
            columns.push_back(smooth(avg, window));
        }
        out << "\n";
        for (int64_t i = 0; i < s.steps; ++i) {
            out << i + 1;
            for (const auto& c : columns) out << "," << c[i];
            out << "\n";
        }
    }

}

std::map<std::string, std::vector<double>> write_profiles(const NormsStudy& study) {
    const NormsScale& s = study.s;
    const std::vector<Variant>& variants = study.variants;
    // Per-block profiles, block x variant, each a mean over seeds of one of a
    // run's per-block numbers: grad_profile.csv, update_profile.csv and
    // residual_profile.csv (means over steps), turning.csv (the angle, in
    // radians, by which the trained model's block turns the stream of a
    // fixed batch) and change.csv (|x_out - x_in| / |x_in|). Returns the columns.
    using PerBlock = std::vector<double> RunResult::*;
    auto write_profile = [&](const std::string& file, PerBlock field) {
        std::ofstream out(study.out_dir + "/" + file);
        out << "block";
        for (const Variant& v : variants) out << "," << v.name;
        out << "\n";
        std::map<std::string, std::vector<double>> per_variant;
        for (int64_t b = 0; b < s.layers; ++b) {
            out << b;
            for (const Variant& v : variants) {
                std::vector<double> xs;
                for (const RunResult& r : study.base.at(v.name))
                    if ((int64_t)(r.*field).size() > b) xs.push_back((r.*field)[b]);
                per_variant[v.name].push_back(mean(xs));
                out << "," << mean(xs);
            }
            out << "\n";
        }
        return per_variant;
    };
    write_profile("grad_profile.csv", &RunResult::block_grad);
    write_profile("update_profile.csv", &RunResult::block_update);
    write_profile("residual_profile.csv", &RunResult::residual);
    std::map<std::string, std::vector<double>> turning = write_profile("turning.csv", &RunResult::turn_angle);
    write_profile("change.csv", &RunResult::relative_change);
    return turning;

}

VariantsTable variants_table(const NormsStudy& study) {
    const NormsScale& s = study.s;
    const std::string& baseline = study.baseline;
    auto validation = [&](const std::string& name) { return study.validation(name); };
    std::ostringstream table;
    table << "| variant | lr | warm-up | tuning loss | val loss, mean [95% CI], " << s.seeds << " seeds | minus " << baseline
          << ", paired [95% CI] | train loss | update block 0 / block " << s.layers - 1
          << " | spikes |\n|---|---|---|---|---|---|---|---|---|\n";
    VariantsTable out;
    std::string& best = out.best;
    double& best_val = out.best_val;
    for (const Variant& v : study.variants) {
        const VariantOutcome& o = *study.outcome.at(v.name);
        Interval val = mean_interval(validation(v.name));
        std::vector<double> trains, first, last;
        int64_t spikes = 0, diverged = 0;
        for (const RunResult& r : study.base.at(v.name)) {
            if (!std::isfinite(r.val)) ++diverged;
            trains.push_back(r.train);
            if (!r.block_update.empty()) first.push_back(r.block_update.front()), last.push_back(r.block_update.back());
            spikes += r.spikes;
        }
        if (val.mean < best_val) best_val = val.mean, best = v.name;
        std::string diff = v.name == baseline ? "baseline" : interval_text(paired_difference(validation(v.name), validation(baseline)), "%+.4f");
        table << "| " << v.name << (o.edge_flagged ? " (" + edge_text(o.choice) + ")" : "") << " | " << fmt("%g", o.choice.best.lr)
              << " | " << o.choice.best.warmup << " | " << fmt("%.4f", o.choice.loss) << " | " << interval_text(val, "%.4f")
              << (diverged ? " (" + std::to_string(diverged) + " diverged)" : "") << " | " << diff << " | "
              << fmt("%.4f", mean(trains)) << " | " << fmt("%.2f", mean(first) / mean(last)) << " | " << spikes << " |\n";
    }

    out.text = table.str();
    return out;
}

// A claim's row: a - b, paired over seeds, where the paper says a is lower.
static std::string compare_row(const NormsStudy& study, const std::string& claim, const std::string& paper,
                               const std::string& a, const std::string& b) {
    Interval d = paired_difference(study.validation(a), study.validation(b));
    std::ostringstream row;
    row << "| " << claim << " | " << paper << " | " << a << " - " << b << " = " << interval_text(d, "%+.4f") << " | "
        << verdict(d, Direction::Lower) << " |\n";
    return row.str();
}

static const char* kVerdictsHeader =
    "| claim | paper | ours: difference, paired over seeds [95% CI] | verdict |\n|---|---|---|---|\n";

Verdicts placement_verdicts(const NormsStudy& study, const std::map<std::string, std::vector<double>>& turning) {
    const NormsScale& s = study.s;
    std::ostringstream verdicts, fits;
    verdicts << kVerdictsHeader;
    auto compare = [&](const std::string& claim, const std::string& paper, const std::string& a, const std::string& b) {
        verdicts << compare_row(study, claim, paper, a, b);
    };
    const std::string paper1 = "GeoNorm lowest in every setting (1.3B: 3.1759 against Pre-Norm's 3.2067)";
    for (const char* other : {"pre", "post", "sandwich", "deepnorm"})
        compare(std::string("1. GeoNorm has a lower validation loss than ") + other, paper1, "geonorm-harmonic", other);
    for (const char* other : {"geonorm", "geonorm-sqrt", "geonorm-linear"}) {
        std::string decay = std::string(other) == "geonorm" ? "no decay" : std::string(other).substr(8) + " decay";
        compare("2. harmonic decay beats " + decay, "harmonic the best decay", "geonorm-harmonic", other);
    }
    // Claim 3, per seed: log(update of block 0 / update of the last block), mean over steps.
    std::vector<double> log_ratio, grad_log_ratio;
    for (const RunResult& r : study.base.at("pre")) {
        if (r.block_update.empty()) continue;
        log_ratio.push_back(std::log(r.block_update.front() / r.block_update.back()));
        grad_log_ratio.push_back(std::log(r.block_grad.front() / r.block_grad.back()));
    }
    Interval u = mean_interval(log_ratio), g = mean_interval(grad_log_ratio);
    verdicts << "| 3. Pre-Norm: block 0 gets larger updates than block " << s.layers - 1
             << " | lower blocks get larger updates | log(update ratio) = " << interval_text(u, "%+.3f") << " | "
             << verdict(u, Direction::Higher) << " |\n";
    verdicts << "| 3'. the same with gradient norms | (not the paper's quantity) | log(gradient ratio) = "
             << interval_text(g, "%+.3f") << " | " << verdict(g, Direction::Higher) << " |\n";
    fits << "| schedule fitted to Pre-Norm's turning angles | a | RMS misfit / mean angle |\n|---|---|---|\n";
    for (const ScheduleFit& f : fit_schedules(turning.at("pre")))
        fits << "| " << f.schedule << " | " << fmt("%.4f", f.a) << " | " << fmt("%.3f", f.relative_rms) << " |\n";
    return {verdicts.str(), fits.str()};
}

Verdicts ablation_verdicts(const NormsStudy& study) {
    const std::string& baseline = study.baseline;
    std::ostringstream verdicts;
    verdicts << "| GeoNorm's choice | changed from harmonic GeoNorm | ours: difference, paired over seeds [95% CI] | reading |\n"
             << "|---|---|---|---|\n";
    for (const Variant& v : study.variants) {
        if (v.name == baseline) continue;
        std::string what = v.extra.empty() ? "--geo-max-angle " + v.max_angle : v.extra[0] + (v.extra.size() > 1 ? " " + v.extra[1] : "");
        Interval d = paired_difference(study.validation(v.name), study.validation(baseline));
        verdicts << "| " << v.name << " | " << what << " | " << v.name << " - " << baseline << " = " << interval_text(d, "%+.4f")
                 << " | " << change_reading(d) << " |\n";
    }
    return {verdicts.str(), ""};
}

Verdicts long_verdicts(const NormsStudy& study, const StudyOptions& options) {
    const NormsScale& s = study.s;
    const std::vector<VariantOutcome>& outcomes = study.outcomes;
    std::ostringstream verdicts, fits;
    verdicts << kVerdictsHeader;
    auto compare = [&](const std::string& claim, const std::string& paper, const std::string& a, const std::string& b) {
        verdicts << compare_row(study, claim, paper, a, b);
    };
    auto spike_counts = [&](const std::string& name) { return study.spike_counts(name); };
    // Claim 4: at the tuned settings, more spikes for Post-Norm than for
    // GeoNorm, and GeoNorm's loss no worse; over the whole grid, the
    // settings at which each variant spiked or diverged.
    const std::string paper4 = "Post-Norm spikes and is unstable on long sequences (up to 4096); GeoNorm converges stably";
    Interval spikes = paired_difference(spike_counts("post"), spike_counts("geonorm-harmonic"));
    verdicts << "| 4. Post-Norm spikes more than GeoNorm at T = " << s.seq << " | " << paper4
             << " | spikes: post - geonorm-harmonic = " << interval_text(spikes, "%+.2f") << " | "
             << verdict(spikes, Direction::Higher) << " |\n";
    compare("4'. GeoNorm has a lower validation loss than post at T = " + std::to_string(s.seq), paper4, "geonorm-harmonic", "post");
    compare("4''. GeoNorm has a lower validation loss than pre at T = " + std::to_string(s.seq),
            "(claim 1 at long sequences)", "geonorm-harmonic", "pre");
    fits << "| variant | tuning runs | spiked | diverged | spikes in all tuning runs |\n|---|---|---|---|---|\n";
    std::ofstream grid(options.out_dir + "/grid_spikes.csv");
    grid << "variant,lr,warmup,tuning_loss,spikes,diverged\n";
    for (const VariantOutcome& o : outcomes) {
        int64_t spiked = 0, diverged = 0, total = 0;
        for (size_t k = 0; k < o.tried.size(); ++k) {
            RunResult r = read_run(cell_dir(options, tuning_cell_name(o.name, o.tried[k])), o.tuning_runs[k]);
            spiked += r.spikes > 0, diverged += r.diverged, total += r.spikes;
            grid << o.name << "," << fmt("%g", o.tried[k].lr) << "," << o.tried[k].warmup << "," << o.tuning_losses[k] << ","
                 << r.spikes << "," << (r.diverged ? 1 : 0) << "\n";
        }
        fits << "| " << o.name << " | " << o.tried.size() << " | " << spiked << " | " << diverged << " | " << total << " |\n";
    }
    return {verdicts.str(), fits.str()};
}

std::vector<std::string> draw_plots(const NormsStudy& study) {
    const NormsScale& s = study.s;
    const std::vector<Variant>& variants = study.variants;
    const std::string& model = study.model;
    const std::vector<VariantOutcome>& outcomes = study.outcomes;
    // Plots: loss curves, the depth profiles, and the tuning curves.
    {
        std::ofstream gp(study.out_dir + "/loss_curves.gp");
        gp << plot_header(study.out_dir, "loss_curves", model + ", T=" + std::to_string(s.seq) +
                                                              ": training loss at each variant's tuned setting (seed mean, moving average)")
           << "set key autotitle columnhead\nset xlabel 'step'\nset ylabel 'training loss'\n"
           << "set xrange [" << std::max<int64_t>(1, s.steps / 10) << ":*]\n"
           << "plot for [i=2:" << variants.size() + 1 << "] '" << study.out_dir
           << "/curves.csv' using 1:i with lines lt (i - 1) lw 2\n";
    }
    std::vector<std::string> notes = {render_plot(study.out_dir, "loss_curves")};
    auto profile_plot = [&](const std::string& name, const std::string& title, const std::string& ylabel) {
        std::ofstream gp(study.out_dir + "/" + name + ".gp");
        gp << plot_header(study.out_dir, name, title) << "set key autotitle columnhead\nset logscale y\nset xlabel 'block'\n"
           << "set ylabel '" << ylabel << "'\nset xtics 1\nplot for [i=2:" << variants.size() + 1 << "] '" << study.out_dir
           << "/" << name << ".csv' using 1:i with linespoints lt (i - 1) lw 2\n";
        gp.close();
        notes.push_back(render_plot(study.out_dir, name));
    };
    profile_plot("grad_profile", "gradient norm of each block (mean over steps and seeds)", "gradient norm");
    profile_plot("update_profile", "relative update ||dW|| / ||W|| of each block per step (mean over steps and seeds)",
                 "relative update");
    profile_plot("residual_profile",
                 "residual contribution ||F(x)|| / ||x|| per block (mean over sublayers, tokens, steps, seeds)",
                 "||F(x)|| / ||x||");
    profile_plot("turning", "angle by which each trained block turns the stream (radians, mean over tokens and seeds)",
                 "turning angle");
    {
        // tuning_curves.csv: lr, then each variant's tuning loss at its chosen warm-up.
        std::map<double, std::map<std::string, double>> by_lr;
        for (const VariantOutcome& o : outcomes)
            for (size_t k = 0; k < o.tried.size(); ++k)
                if (o.tried[k].warmup == o.choice.best.warmup) by_lr[o.tried[k].lr][o.name] = o.tuning_losses[k];
        std::ofstream csv(study.out_dir + "/tuning_curves.csv");
        csv << "lr";
        for (const Variant& v : variants) csv << "," << v.name;
        csv << "\n";
        for (const auto& [lr, row] : by_lr) {
            csv << lr;
            for (const Variant& v : variants) csv << "," << (row.count(v.name) ? fmt("%.6f", row.at(v.name)) : "nan");
            csv << "\n";
        }
        std::ofstream gp(study.out_dir + "/tuning_curves.gp");
        gp << plot_header(study.out_dir, "tuning_curves", "tuning loss against learning rate (each variant at its chosen warm-up)")
           << "set key autotitle columnhead\nset logscale x\nset xlabel 'peak learning rate'\nset ylabel 'tuning loss'\n"
           << "set yrange [*:4]\n"  // diverged settings end far above the byte-frequency plateau (about 3.3); keep the rest readable
           << "plot for [i=2:" << variants.size() + 1 << "] '" << study.out_dir
           << "/tuning_curves.csv' using 1:i with linespoints lt (i - 1) lw 2\n";
    }
    notes.push_back(render_plot(study.out_dir, "tuning_curves"));

    return notes;
}

}  // namespace norms
}  // namespace app
}  // namespace nc
