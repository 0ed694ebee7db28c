// norms.cpp — the norms study's design and runs (studies/norms.h): its
// flags, its variants, the protocol that tunes and reports them, and
// reading the reported runs back.
#include "studies/norms.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/corpus.h"
#include "tensor/error.h"

namespace nc {
namespace app {
namespace norms {

NormsScale norms_scale(const std::string& scale, const std::string& part) {
    NormsScale s;
    if (scale == "smoke") s = {2, 32, 2, 16, 4, 24, 2, 2048, {1e-3, 4e-3}, {0.05, 0.2}};
    else if (scale == "quick") s = {6, 96, 4, 64, 8, 1500, 3, 200000, {3e-4, 9e-4, 2.7e-3, 6e-3}, {0.05, 0.2}};
    else s = {12, 384, 6, 1024, 16, 5000, 3, 1000000, {1e-4, 3e-4, 9e-4, 2.7e-3}, {0.05, 0.2}};  // full (a GPU)
    if (part == "long") {
        // The same model on sequences 16 times longer, one sequence per step
        // (1,024 tokens, twice the placement part's 512), for 2/3 of the steps.
        if (scale == "smoke") s.seq = 64, s.batch = 1;
        else if (scale == "quick") s.seq = 1024, s.batch = 1, s.steps = 1000;
        else s.seq = 4096, s.batch = 4;
    }
    return s;
}

static const std::vector<Variant>& placement_variants() {
    static const std::vector<Variant> all = {
        {"post", "post", "none", "0", {}},
        {"pre", "pre", "none", "0", {}},
        {"sandwich", "sandwich", "none", "0", {}},
        {"deepnorm", "deepnorm", "none", "0", {}},
        {"geonorm", "geonorm", "none", "0", {}},
        {"geonorm-harmonic", "geonorm", "harmonic", "0", {}},
        {"geonorm-sqrt", "geonorm", "sqrt", "0", {}},
        {"geonorm-linear", "geonorm", "linear", "0", {}},
        // Not in the paper's list: the exp map with each update's angle
        // bounded smoothly by pi/4 (a third-party reading of the paper's
        // appendix clamps it there; nn/placement.cpp, bound_angle).
        {"geonorm-harmonic-bounded", "geonorm", "harmonic", "0.7854", {}},
    };
    return all;
}

// GeoNorm's open choices, each changed alone from harmonic GeoNorm (whose
// stream lives on the sphere of radius sqrt(C), read directly by the
// sublayers, with fixed steps a/k and no angle bound).
static std::vector<Variant> ablation_variants(int64_t width) {
    std::string big = fmt("%.4g", 4.0 * std::sqrt((double)width));
    return {
        {"geonorm-harmonic", "geonorm", "harmonic", "0", {}},
        {"radius-1", "geonorm", "harmonic", "0", {"--geo-radius", "1"}},
        {"radius-4sqrtC", "geonorm", "harmonic", "0", {"--geo-radius", big}},
        {"sublayer-norm", "geonorm", "harmonic", "0", {"--geo-sublayer-norm"}},
        {"learnable-step", "geonorm", "harmonic", "0", {"--geo-learnable-step"}},
        {"bounded", "geonorm", "harmonic", "0.7854", {}},
    };
}

// Claim 4's contrast: Post-Norm against harmonic GeoNorm, with Pre-Norm.
static const std::vector<Variant>& long_variants() {
    static const std::vector<Variant> all = {
        {"post", "post", "none", "0", {}},
        {"pre", "pre", "none", "0", {}},
        {"geonorm-harmonic", "geonorm", "harmonic", "0", {}},
    };
    return all;
}

// A run's result and what it logged in its folder; a run that stopped early
// still gives its spikes and its steps up to there (a diverged run's
// diagnostics end at the bad step).
RunResult read_run(const std::string& dir, const CellResult& run) {
    RunResult r;
    r.val = run.val_loss();
    if (!std::isnan(r.val)) r.train = run.train.train_loss;
    r.diverged = run.diverged();
    if (!std::filesystem::exists(dir + "/diagnostics.csv")) return r;
    Csv d = read_csv(dir + "/diagnostics.csv");
    int loss_col = d.column("loss"), spike_col = d.column("spike");
    std::vector<int> grads = d.columns_starting_with("grad_norm_block_"), updates = d.columns_starting_with("update_block_"),
                     residuals = d.columns_starting_with("residual_block_");
    r.block_grad.assign(grads.size(), 0.0);
    r.block_update.assign(updates.size(), 0.0);
    r.residual.assign(residuals.size(), 0.0);
    double rows = (double)d.rows.size();
    r.steps_logged = (int64_t)d.rows.size();
    for (size_t i = 0; i < d.rows.size(); ++i) {
        r.loss.push_back(d.number(i, loss_col));
        r.spikes += d.number(i, spike_col) > 0;
        for (size_t b = 0; b < grads.size(); ++b) r.block_grad[b] += d.number(i, grads[b]) / rows;
        for (size_t b = 0; b < updates.size(); ++b) r.block_update[b] += d.number(i, updates[b]) / rows;
        for (size_t b = 0; b < residuals.size(); ++b) r.residual[b] += d.number(i, residuals[b]) / rows;
    }
    if (!std::filesystem::exists(dir + "/stream.csv")) return r;
    Csv stream = read_csv(dir + "/stream.csv");
    int angle = stream.column("turn_angle"), change = stream.column("relative_change");
    for (size_t i = 1; i < stream.rows.size(); ++i) {  // row 0: the embeddings
        r.turn_angle.push_back(stream.number(i, angle));
        r.relative_change.push_back(stream.number(i, change));
    }
    return r;
}

std::vector<double> NormsStudy::validation(const std::string& variant) const {
    std::vector<double> xs;
    for (const RunResult& r : base.at(variant)) xs.push_back(r.val);
    return xs;
}

std::vector<double> NormsStudy::spike_counts(const std::string& variant) const {
    std::vector<double> xs;
    for (const RunResult& r : base.at(variant)) xs.push_back((double)r.spikes);
    return xs;
}

// The design from the flags, checked.
static NormsStudy design_from_flags(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    NormsStudy study;
    study.part = flags.str("part");
    const std::string& part = study.part;
    if (part != "placement" && part != "ablations" && part != "long")
        throw Error("flag --part: the norms study has the parts placement, ablations and long, not '" + part + "'");
    NormsScale& s = study.s;
    s = norms_scale(options.scale, part);
    if (flags.integer("steps") > 0) s.steps = flags.integer("steps");
    if (flags.integer("seeds") > 0) s.seeds = flags.integer("seeds");
    study.model = flags.str("model");
    if (study.model != "gpt2" && study.model != "llama")
        throw Error("flag --model: the norms study trains gpt2 or llama, not '" + study.model + "'");
    study.data = flags.str("data");
    if (!data::is_split_corpus(study.data))
        throw Error("flag --data: '" + study.data + "' is not a corpus directory with train, tuning and validation splits "
                    "(build the studies' corpus with `make corpus`, or `normcore corpus build --out DIR` and --data DIR)");
    study.device = flags.str("device");
    study.out_dir = options.out_dir;
    study.variants = part == "placement" ? placement_variants() : part == "ablations" ? ablation_variants(s.width) : long_variants();
    study.baseline = part == "ablations" ? "geonorm-harmonic" : "pre";
    return study;
}

static ProtocolPlan protocol_plan(const NormsStudy& study) {
    const NormsScale& s = study.s;
    ProtocolPlan plan;
    plan.grid.lrs = s.lrs;
    for (double f : s.warmup_fractions) plan.grid.warmups.push_back(std::max<int64_t>(1, (int64_t)std::lround(f * (double)s.steps)));
    plan.grid.max_warmup = (int64_t)(0.4 * (double)s.steps);  // extensions warm up for at most 40% of the run
    plan.seeds = s.seeds;
    plan.eval_tokens = s.eval_tokens;
    plan.data = study.data;
    plan.report_args = {"--diagnostics"};
    // Claim 4 is about instability at any setting, so the long part logs
    // spikes in the tuning runs too (protocol_variants): every run has it already.
    if (study.part == "long") plan.report_args.clear();
    return plan;
}

static void print_design(const NormsStudy& study, const ProtocolPlan& plan) {
    const NormsScale& s = study.s;
    std::string lr_list, warmup_list;
    for (double lr : plan.grid.lrs) lr_list += (lr_list.empty() ? "" : ", ") + fmt("%g", lr);
    for (int64_t w : plan.grid.warmups) warmup_list += (warmup_list.empty() ? "" : ", ") + std::to_string(w);
    std::printf("norms study, part %s: %s L=%lld C=%lld H=%lld, T=%lld B=%lld, %lld steps on %s\n"
                "protocol: lr {%s} x warm-up {%s} on the tuning split (seed 1), then %lld seeds on the validation split; "
                "%lld tokens per evaluation\n",
                study.part.c_str(), study.model.c_str(), (long long)s.layers, (long long)s.width, (long long)s.heads,
                (long long)s.seq, (long long)s.batch, (long long)s.steps, study.data.c_str(), lr_list.c_str(),
                warmup_list.c_str(), (long long)s.seeds, (long long)s.eval_tokens);
}

static std::vector<ProtocolVariant> protocol_variants(const NormsStudy& study) {
    const NormsScale& s = study.s;
    std::vector<ProtocolVariant> runs;
    for (const Variant& v : study.variants) {
        std::vector<std::string> args = {"--model", study.model, "--placement", v.placement, "--decay", v.decay, "--geo-max-angle", v.max_angle};
        args.insert(args.end(), v.extra.begin(), v.extra.end());
        for (const std::string& a : std::vector<std::string>{"--layers", std::to_string(s.layers), "--width", std::to_string(s.width), "--heads",
                                     std::to_string(s.heads), "--seq", std::to_string(s.seq), "--batch", std::to_string(s.batch),
                                     "--steps", std::to_string(s.steps), "--eval-every", "0", "--sample-tokens", "0", "--device",
                                     study.device})
            args.push_back(a);
        if (study.part == "long") args.push_back("--diagnostics");
        runs.push_back({v.name, args, {}, {}, {}});
    }
    return runs;
}

}  // namespace norms

static int norms_experiment(const StudyOptions& options) {
    norms::NormsStudy study = norms::design_from_flags(options);
    ProtocolPlan plan = norms::protocol_plan(study);
    norms::print_design(study, plan);
    study.outcomes = run_protocol(norms::protocol_variants(study), plan, options);
    for (const VariantOutcome& o : study.outcomes) {
        study.outcome[o.name] = &o;
        for (size_t s = 0; s < o.seed_dirs.size(); ++s) study.base[o.name].push_back(norms::read_run(o.seed_dirs[s], o.seed_runs[s]));
    }

    norms::write_run_csvs(study);
    std::map<std::string, std::vector<double>> turning = norms::write_profiles(study);
    norms::VariantsTable table = norms::variants_table(study);
    norms::Verdicts verdicts = study.part == "placement"   ? norms::placement_verdicts(study, turning)
                               : study.part == "ablations" ? norms::ablation_verdicts(study)
                                                           : norms::long_verdicts(study, options);
    std::ofstream(options.out_dir + "/table.md") << table.text << "\n" << verdicts.verdicts << "\n" << verdicts.fits;
    std::vector<std::string> notes = norms::draw_plots(study);

    std::printf("\n%s\n%s\n%s\n", table.text.c_str(), verdicts.verdicts.c_str(), verdicts.fits.c_str());
    std::printf("lowest mean validation loss: %s (%.4f)\n", table.best.c_str(), table.best_val);
    std::string listing;
    for (const std::string& n : notes) listing += ", " + n;
    std::printf("results in %s: results.csv, tuning.csv, chosen.csv, curves.csv, grad_profile.csv, update_profile.csv, "
                "residual_profile.csv, turning.csv, change.csv%s, table.md%s\n",
                options.out_dir.c_str(), study.part == "long" ? ", grid_spikes.csv" : "", listing.c_str());
    return 0;
}

Study norms_study() {
    Study s;
    s.name = "norms";
    s.trains = true;
    s.flags = {{"model", "gpt2", "gpt2 | llama"},
               {"part", "placement", "placement (claims 1-3) | ablations (GeoNorm's choices) | long (claim 4, T = 1024)"},
               {"data", data::kStudyCorpus, "the studies' corpus (make corpus)"}};
    // Each part gets its own default directory: runs/experiment-norms-ablations.
    s.out_suffix = [](const Flags& flags) { return flags.str("part") != "placement" ? "-" + flags.str("part") : std::string(); };
    s.run = norms_experiment;
    return s;
}

}  // namespace app
}  // namespace nc
