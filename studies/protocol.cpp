// protocol.cpp — tuning, seeds and intervals shared by the studies (studies/protocol.h).
#include "studies/protocol.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "tensor/error.h"

namespace nc {
namespace app {

// ---- tuning ----------------------------------------------------------------------

std::string setting_name(const Setting& s) {
    std::string name = "lr" + fmt("%g", s.lr) + "-wu" + std::to_string(s.warmup);
    // A flag adds "-" and its name, a value follows it directly: lr0.001-wu80-dyt-alpha2.
    for (const std::string& part : s.option)
        name += part.rfind("-", 0) == 0 ? "-" + part.substr(part.find_first_not_of('-')) : part;
    return name;
}

std::string option_text(const Setting& s) {
    std::string text;
    for (const std::string& part : s.option) text += (text.empty() ? "" : " ") + part;
    return text;
}

bool same_setting(const Setting& a, const Setting& b) {
    return a.lr == b.lr && a.warmup == b.warmup && a.option == b.option;
}

std::vector<Setting> grid_settings(const TuningGrid& grid, const std::vector<std::vector<std::string>>& options) {
    std::vector<std::vector<std::string>> each = options.empty() ? std::vector<std::vector<std::string>>{{}} : options;
    std::vector<Setting> out;
    for (double lr : grid.lrs)
        for (int64_t w : grid.warmups)
            for (const std::vector<std::string>& option : each) out.push_back({lr, w, option});
    return out;
}

TuningChoice choose_setting(const std::vector<Setting>& tried, const std::vector<double>& losses) {
    if (tried.size() != losses.size() || tried.empty())
        throw Error("protocol: " + std::to_string(losses.size()) + " losses for " + std::to_string(tried.size()) + " settings");
    TuningChoice c;
    double low = INFINITY, high = -INFINITY;
    int64_t shortest = INT64_MAX, longest = INT64_MIN;
    for (size_t i = 0; i < tried.size(); ++i) {
        low = std::min(low, tried[i].lr);
        high = std::max(high, tried[i].lr);
        shortest = std::min(shortest, tried[i].warmup);
        longest = std::max(longest, tried[i].warmup);
        if (std::isfinite(losses[i]) && (!c.trained || losses[i] < c.loss)) {
            c.best = tried[i];
            c.loss = losses[i];
            c.trained = true;
        }
    }
    if (!c.trained) return c;
    // A setting of only one learning rate sits at both edges: nothing was compared.
    c.at_low_edge = c.best.lr == low;
    c.at_high_edge = c.best.lr == high;
    c.at_short_warmup_edge = c.best.warmup == shortest;
    c.at_long_warmup_edge = c.best.warmup == longest;
    return c;
}

int64_t extension_warmup(const TuningChoice& c, const TuningGrid& grid) {
    if (!c.trained || (c.at_short_warmup_edge && c.at_long_warmup_edge)) return 0;
    if (c.at_short_warmup_edge) return c.best.warmup > 1 ? std::max<int64_t>(1, c.best.warmup / 2) : 0;
    if (c.at_long_warmup_edge) {
        int64_t longer = c.best.warmup * 2;
        return grid.max_warmup > 0 && longer > grid.max_warmup ? 0 : longer;
    }
    return 0;
}

double extension_lr(const TuningChoice& c) {
    if (!c.trained || (c.at_low_edge && c.at_high_edge)) return 0;
    if (c.at_low_edge) return c.best.lr / 2;
    if (c.at_high_edge) return c.best.lr * 2;
    return 0;
}

// A dimension sits at an edge when the best is at one end of it; at both ends
// means it had one value (fixed by the study's design, as the DyT study's
// warm-up), which is no finding about the grid.
static bool at_one_edge(bool low, bool high) { return low != high; }

bool at_an_edge(const TuningChoice& c) {
    return at_one_edge(c.at_low_edge, c.at_high_edge) || at_one_edge(c.at_short_warmup_edge, c.at_long_warmup_edge);
}

std::string edge_text(const TuningChoice& c) {
    bool lr = at_one_edge(c.at_low_edge, c.at_high_edge), warmup = at_one_edge(c.at_short_warmup_edge, c.at_long_warmup_edge);
    if (lr && warmup) return "lr and warm-up at the grid's edge";
    return lr ? "lr at the grid's edge" : warmup ? "warm-up at the grid's edge" : "";
}

// ---- statistics ------------------------------------------------------------------

double t_quantile_975(int64_t df) {
    if (df < 1) throw Error("t_quantile_975: needs at least 1 degree of freedom, got " + std::to_string(df));
    // The standard table for df 1..30 (checked in tests/test_protocol.cpp by
    // integrating the t density), then the Cornish-Fisher expansion around
    // the normal quantile z, accurate to 1e-4 beyond df = 30.
    static const double table[30] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                     2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                     2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
    if (df <= 30) return table[df - 1];
    double z = 1.959963985, n = (double)df;
    return z + (z * z * z + z) / (4 * n) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

Interval mean_interval(const std::vector<double>& values) {
    std::vector<double> xs;
    for (double x : values)
        if (std::isfinite(x)) xs.push_back(x);
    Interval r;
    r.n = (int64_t)xs.size();
    if (r.n == 0) {
        r.mean = r.se = r.low = r.high = NAN;
        return r;
    }
    r.mean = mean(xs);
    if (r.n == 1) {
        r.low = -INFINITY;
        r.high = INFINITY;
        return r;
    }
    r.se = sample_std(xs) / std::sqrt((double)r.n);
    double half = t_quantile_975(r.n - 1) * r.se;
    r.low = r.mean - half;
    r.high = r.mean + half;
    return r;
}

Interval paired_difference(const std::vector<double>& variant, const std::vector<double>& baseline) {
    std::vector<double> d;
    for (size_t i = 0; i < std::min(variant.size(), baseline.size()); ++i)
        if (std::isfinite(variant[i]) && std::isfinite(baseline[i])) d.push_back(variant[i] - baseline[i]);
    return mean_interval(d);
}

Interval correlation_interval(const std::vector<double>& xs, const std::vector<double>& ys) {
    std::vector<double> x, y;
    for (size_t i = 0; i < std::min(xs.size(), ys.size()); ++i)
        if (std::isfinite(xs[i]) && std::isfinite(ys[i])) x.push_back(xs[i]), y.push_back(ys[i]);
    Interval r;
    r.n = (int64_t)x.size();
    r.mean = r.n >= 2 ? pearson(x, y) : NAN;
    r.low = -1;
    r.high = 1;
    if (r.n < 4 || !std::isfinite(r.mean)) return r;
    if (std::abs(r.mean) >= 1) {  // a perfect line: atanh is infinite, the interval a point
        r.low = r.high = r.mean;
        return r;
    }
    r.se = 1 / std::sqrt((double)(r.n - 3));
    double z = std::atanh(r.mean);
    r.low = std::tanh(z - 1.959964 * r.se);
    r.high = std::tanh(z + 1.959964 * r.se);
    return r;
}

std::string verdict(const Interval& d, Direction paper) {
    if (d.n < 2) return "inconclusive";
    bool below = d.high < 0, above = d.low > 0;
    if (paper == Direction::Lower) return below ? "reproduced" : above ? "contradicted" : "inconclusive";
    return above ? "reproduced" : below ? "contradicted" : "inconclusive";
}

std::string interval_text(const Interval& i, const char* format) {
    if (i.n == 0) return "n/a";
    if (i.n == 1) return fmt(format, i.mean) + " (one run)";
    return fmt(format, i.mean) + " [" + fmt(format, i.low) + ", " + fmt(format, i.high) + "]";
}

// ---- running it ------------------------------------------------------------------

std::string seed_cell_name(const std::string& variant, int64_t seed) { return variant + "-seed" + std::to_string(seed); }
std::string tuning_cell_name(const std::string& variant, const Setting& s) { return "tune-" + variant + "-" + setting_name(s); }

// A tuning run (report == nullptr) or a reported run of `report`.
static Cell make_cell(const ProtocolVariant& v, const ProtocolReport* report, const ProtocolPlan& plan, const Setting& s,
                      int64_t seed, const std::string& name) {
    Cell c{name, v.args};
    const std::vector<std::string>& extra = report ? report->args : v.tuning_args;
    c.args.insert(c.args.end(), extra.begin(), extra.end());
    c.args.insert(c.args.end(), {"--lr", fmt("%g", s.lr), "--warmup", std::to_string(s.warmup), "--seed", std::to_string(seed)});
    c.args.insert(c.args.end(), s.option.begin(), s.option.end());
    if (!plan.data.empty()) c.args.insert(c.args.end(), {"--data", plan.data});
    c.args.insert(c.args.end(), {"--eval-split", report ? "validation" : "tuning"});
    if (plan.eval_tokens > 0) c.args.insert(c.args.end(), {"--eval-tokens", std::to_string(plan.eval_tokens)});
    if (report) c.args.insert(c.args.end(), plan.report_args.begin(), plan.report_args.end());
    return c;
}

static std::vector<ProtocolReport> reports_of(const ProtocolVariant& v) {
    return v.reports.empty() ? std::vector<ProtocolReport>{{v.name, {}}} : v.reports;
}


// 1. The grid for every variant at once (one pool of runs keeps the cores busy).
static void tune_on_grid(std::vector<VariantOutcome>& out, const std::vector<ProtocolVariant>& variants,
                         const ProtocolPlan& plan, const StudyOptions& options) {
    std::vector<Cell> cells;
    for (size_t i = 0; i < variants.size(); ++i) {
        out[i].name = variants[i].name;
        out[i].tried = grid_settings(plan.grid, variants[i].tuned_options);
        for (const Setting& s : out[i].tried)
            cells.push_back(make_cell(variants[i], nullptr, plan, s, 1, tuning_cell_name(variants[i].name, s)));
    }
    std::printf("tuning: %zu variants, %zu runs (lr x warm-up%s), seed 1, scored on the tuning split\n", variants.size(),
                cells.size(), cells.size() > variants.size() * grid_settings(plan.grid).size() ? " x a variant's options" : "");
    // A run that failed or diverged scores NaN, so it never wins the tuning.
    std::vector<CellResult> runs = run_cells(cells, options, /*allow_failures=*/true);
    for (size_t i = 0, j = 0; i < variants.size(); ++i)
        for (size_t k = 0; k < out[i].tried.size(); ++k, ++j) {
            out[i].tuning_runs.push_back(runs[j]);
            out[i].tuning_losses.push_back(runs[j].val_loss());
        }
}

// 2. Past an edge: one more learning rate (at the best warm-up) and one more
//    warm-up (at the best learning rate), until the best is inside the tried
//    ranges or the extensions are used up.
static void extend_past_edges(std::vector<VariantOutcome>& out, const std::vector<ProtocolVariant>& variants,
                              const ProtocolPlan& plan, const StudyOptions& options) {
    for (int round = 0; round <= plan.max_extensions; ++round) {
        std::vector<Cell> cells;
        std::vector<size_t> owner;
        for (size_t i = 0; i < variants.size(); ++i) {
            out[i].choice = choose_setting(out[i].tried, out[i].tuning_losses);
            double lr = extension_lr(out[i].choice);
            int64_t warmup = extension_warmup(out[i].choice, plan.grid);
            const TuningChoice& c = out[i].choice;
            out[i].edge_flagged = at_an_edge(c);
            if (round == plan.max_extensions) continue;
            std::vector<Setting> more;
            if (lr > 0) more.push_back({lr, c.best.warmup, c.best.option});
            if (warmup > 0) more.push_back({c.best.lr, warmup, c.best.option});
            for (const Setting& s : more) {
                out[i].tried.push_back(s);
                ++out[i].extensions;
                owner.push_back(i);
                cells.push_back(make_cell(variants[i], nullptr, plan, s, 1, tuning_cell_name(out[i].name, s)));
            }
        }
        if (cells.empty()) break;
        std::printf("tuning: extending the grid past its edges by %zu run(s)\n", cells.size());
        std::vector<CellResult> runs = run_cells(cells, options, true);
        for (size_t j = 0; j < cells.size(); ++j) {
            VariantOutcome& o = out[owner[j]];
            o.tuning_runs.push_back(runs[j]);
            o.tuning_losses.push_back(runs[j].val_loss());
        }
    }
    for (const VariantOutcome& o : out)
        if (!o.choice.trained)
            throw Error("protocol: variant " + o.name + " diverged or failed at every setting of the grid (see " +
                        options.out_dir + "/runs/tune-" + o.name + "-*/train.log)");
}

// 3. The seeds of every report at its variant's chosen setting, scored on the
//    validation split. A reported run may diverge (a result); any other
//    failure is an error.
static void report_seeds(std::vector<VariantOutcome>& out, const std::vector<ProtocolVariant>& variants,
                         const ProtocolPlan& plan, const StudyOptions& options) {
    std::vector<Cell> cells;
    size_t reported = 0;
    for (size_t i = 0; i < variants.size(); ++i) {
        std::vector<ProtocolReport> reports = reports_of(variants[i]);
        reported += reports.size();
        for (const ProtocolReport& r : reports) {
            out[i].report_names.push_back(r.name);
            out[i].report_dirs.emplace_back();
            for (int64_t seed = 1; seed <= plan.seeds; ++seed) {
                out[i].report_dirs.back().push_back(cell_dir(options, seed_cell_name(r.name, seed)));
                cells.push_back(make_cell(variants[i], &r, plan, out[i].choice.best, seed, seed_cell_name(r.name, seed)));
            }
        }
    }
    std::printf("reporting: %zu configurations x %lld seeds at their variants' chosen settings, scored on the validation split\n",
                reported, (long long)plan.seeds);
    std::vector<CellResult> runs = run_cells(cells, options, true);
    std::string failed;
    size_t next = 0;
    for (VariantOutcome& o : out) {
        for (size_t r = 0; r < o.report_names.size(); ++r) {
            o.report_validation.emplace_back();
            o.report_runs.emplace_back();
            for (int64_t seed = 1; seed <= plan.seeds; ++seed) {
                const CellResult& run = runs[next++];
                o.report_runs.back().push_back(run);
                o.report_validation.back().push_back(run.val_loss());
                if (!run.ran() || (!run.diverged() && std::isnan(run.val_loss())))
                    failed += "\n  " + cell_dir(options, seed_cell_name(o.report_names[r], seed)) + ": " +
                              (run.ran() ? std::string("no validation loss") : run.error);
            }
        }
        o.validation = o.report_validation.front();
        o.seed_dirs = o.report_dirs.front();
        o.seed_runs = o.report_runs.front();
    }
    if (!failed.empty()) throw Error("protocol: reported runs failed (not by diverging):" + failed);
}

// OUT/tuning.csv (every tuning run) and OUT/chosen.csv (each report's setting and losses).
static void write_protocol_csvs(const std::vector<VariantOutcome>& out, const ProtocolPlan& plan, const StudyOptions& options) {
    std::ofstream tuning(options.out_dir + "/tuning.csv");
    tuning << "variant,lr,warmup,option,tuning_loss,chosen\n";
    for (const VariantOutcome& o : out)
        for (size_t k = 0; k < o.tried.size(); ++k)
            tuning << o.name << "," << fmt("%g", o.tried[k].lr) << "," << o.tried[k].warmup << "," << option_text(o.tried[k])
                   << "," << o.tuning_losses[k] << "," << same_setting(o.tried[k], o.choice.best) << "\n";
    std::ofstream chosen(options.out_dir + "/chosen.csv");
    chosen << "variant,lr,warmup,option,tuning_loss,edge_flagged";
    for (int64_t seed = 1; seed <= plan.seeds; ++seed) chosen << ",validation_seed" << seed;
    chosen << "\n";
    for (const VariantOutcome& o : out)
        for (size_t r = 0; r < o.report_names.size(); ++r) {
            chosen << o.report_names[r] << "," << fmt("%g", o.choice.best.lr) << "," << o.choice.best.warmup << ","
                   << option_text(o.choice.best) << "," << o.choice.loss << "," << o.edge_flagged;
            for (double v : o.report_validation[r]) chosen << "," << v;
            chosen << "\n";
        }
}


std::vector<VariantOutcome> run_protocol(const std::vector<ProtocolVariant>& variants, const ProtocolPlan& plan,
                                         const StudyOptions& options) {
    std::vector<VariantOutcome> out(variants.size());
    tune_on_grid(out, variants, plan, options);
    extend_past_edges(out, variants, plan, options);
    report_seeds(out, variants, plan, options);
    write_protocol_csvs(out, plan, options);
    return out;
}

}  // namespace app
}  // namespace nc
