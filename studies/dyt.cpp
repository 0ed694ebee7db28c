// dyt.cpp — the DyT study's design and runs (studies/dyt.h): its flags,
// its variants, the protocol that tunes and reports them, and reading the
// reported runs back.
#include "studies/dyt.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "data/corpus.h"
#include "data/text.h"
#include "tensor/error.h"
#include "train/lm.h"

namespace nc {
namespace app {
namespace dyt {

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

static bool is_block_matrix(const std::string& name) {
    std::stringstream parts(name);
    std::string part;
    while (std::getline(parts, part, '.'))
        if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) return true;
    return false;
}

// A reported run's result and what it left in its directory; NaN for what
// a diverged run did not write.
static RunResult read_run(const std::string& dir, const CellResult& run) {
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

std::vector<std::string> DytStudy::variants_of(const std::string& model) const {
    return model == "llama-gelu" ? std::vector<std::string>{"vanilla", "dyt"}
                                 : std::vector<std::string>{"vanilla", "dyt", "diffattn"};
}

std::string DytStudy::report_name(const std::string& model, const std::string& variant, int64_t size) const {
    return model + "-" + variant + "-" + size_label(size);
}

double DytStudy::epochs(const std::string& model, int64_t size) const {
    return (double)(model == "vit" ? images_per_run() : tokens_per_run()) / (double)size;
}

static bool has_language_model(const DytStudy& study) {
    for (const std::string& model : study.models)
        if (model != "vit") return true;
    return false;
}

// The design from the flags, checked.
static DytStudy design_from_flags(const StudyOptions& options) {
    const Flags& flags = *options.flags;
    DytStudy study;
    DytScale& s = study.s;
    s = dyt_scale(options.scale);
    if (flags.integer("steps") > 0) s.text.steps = s.vit.steps = flags.integer("steps");
    if (flags.integer("seeds") > 0) s.seeds = flags.integer("seeds");
    study.data = flags.str("data");
    study.device = flags.str("device");
    study.out_dir = options.out_dir;
    std::stringstream list(flags.str("models"));
    std::string m;
    while (std::getline(list, m, ','))
        if (m == "gpt2" || m == "llama" || m == "vit") study.models.push_back(m);
        else throw Error("flag --models: unknown model '" + m + "' (choose from gpt2, llama, vit)");
    if (study.models.empty()) throw Error("flag --models: name at least one of gpt2, llama, vit");
    study.dyt_final_gamma = flags.str("dyt-final-gamma");
    if (study.dyt_final_gamma != "auto") flags.number("dyt-final-gamma");  // a number, or the error naming the flag
    study.embed_scale = flags.str("embed-scale");
    if (study.embed_scale != "sqrt") flags.number("embed-scale");
    study.dyt_alpha_attn = flags.str("dyt-alpha-attn");
    flags.number("dyt-alpha-attn");
    study.dyt_alphas.clear();
    std::stringstream alphas(flags.str("dyt-alphas"));
    std::string a;
    while (std::getline(alphas, a, ',')) {
        char* end = nullptr;
        double value = std::strtod(a.c_str(), &end);
        if (a.empty() || *end != '\0' || !(value > 0) || !std::isfinite(value))
            throw Error("flag --dyt-alphas: '" + a + "' is not a positive number (give a comma-separated list, e.g. 0.5,1,2,3)");
        study.dyt_alphas.push_back(a);
    }
    if (study.dyt_alphas.empty()) throw Error("flag --dyt-alphas: give at least one alpha0");
    study.tokenizer = flags.str("tokenizer");
    study.diffattn = flags.str("diffattn");
    if (study.diffattn != "regime" && study.diffattn != "official")
        throw Error("flag --diffattn: '" + study.diffattn + "' is not a kind (regime or official)");
    // The files last: a mistyped flag is reported before a missing corpus.
    if (has_language_model(study) && !data::is_split_corpus(study.data))
        throw Error("flag --data: '" + study.data + "' is not a corpus directory with train, tuning and validation splits "
                    "(build one with `make corpus` or `normcore corpus build --out DIR`)");
    // The Llama component ablation rides along with Llama: "llama-gelu" is Llama with a GELU MLP.
    study.trained = study.models;
    for (const std::string& model : study.models) study.ablation |= model == "llama";
    if (study.ablation) study.trained.push_back("llama-gelu");
    return study;
}

static std::vector<std::string> size_args(const std::string& model, int64_t size) {
    return {model == "vit" ? "--train-images" : "--train-tokens", std::to_string(size)};
}

// One protocol variant: a model, a variant of it, and a size band (tuned at
// one size of the band, every size of the band reported).
static ProtocolVariant band_variant(const DytStudy& study, const std::string& model, const std::string& variant, int band) {
    const DytScale& s = study.s;
    const ModelScale& m = study.scale_of(model);
    ProtocolVariant v;
    v.name = model + "-" + variant + (band == 0 ? "-small" : "-large");
    v.args = {"--model", model == "llama-gelu" ? "llama" : model, "--layers", std::to_string(m.layers),
              "--width", std::to_string(m.width), "--heads", std::to_string(m.heads), "--batch",
              std::to_string(m.batch), "--steps", std::to_string(m.steps), "--eval-every", "0", "--device",
              study.device};
    if (model == "vit") {
        v.args.insert(v.args.end(), {"--eval-batches", std::to_string(s.eval_batches)});
    } else {
        v.args.insert(v.args.end(), {"--seq", std::to_string(s.seq), "--sample-tokens", "0", "--data", study.data,
                                     "--eval-tokens", std::to_string(s.eval_tokens)});
        if (study.tokenizer != "byte") v.args.insert(v.args.end(), {"--tokenizer", study.tokenizer});
    }
    if (model == "llama-gelu") v.args.insert(v.args.end(), {"--mlp", "gelu"});
    if (variant == "dyt") {
        v.args.insert(v.args.end(), {"--norm", "dyt"});
        // One alpha0 is part of the variant; several are tuned with the learning rate.
        if (study.dyt_alphas.size() == 1) v.args.insert(v.args.end(), {"--dyt-alpha", study.dyt_alphas.front()});
        else
            for (const std::string& a : study.dyt_alphas) v.tuned_options.push_back({"--dyt-alpha", a});
        v.args.insert(v.args.end(), {"--dyt-final-gamma", study.dyt_final_gamma});
        v.args.insert(v.args.end(), {"--dyt-alpha-attn", study.dyt_alpha_attn});
        if (model != "vit") v.args.insert(v.args.end(), {"--embed-scale", study.embed_scale});
    }
    if (variant == "diffattn")
        v.args.insert(v.args.end(), {"--attention", study.diffattn == "regime" ? "differential-regime" : "differential"});
    v.tuning_args = size_args(model, band == 0 ? m.tune_small : m.tune_large);
    for (size_t i = band == 0 ? 0 : m.first_large; i < (band == 0 ? m.first_large : m.sizes.size()); ++i)
        v.reports.push_back({study.report_name(model, variant, m.sizes[i]), size_args(model, m.sizes[i])});
    return v;
}

static ProtocolPlan protocol_plan(const DytScale& s) {
    ProtocolPlan plan;
    plan.grid.lrs = s.lrs;
    plan.grid.warmups = {std::max<int64_t>(1, s.text.steps / 10)};
    plan.grid.max_warmup = plan.grid.warmups.front();  // the warm-up stays a tenth of the run
    plan.seeds = s.seeds;
    plan.eval_tokens = 0;  // the variants carry their own evaluation flags (text and images differ)
    plan.data = "";
    plan.max_extensions = 1;
    plan.report_args = {"--diagnostics"};
    return plan;
}

static void print_design(const DytStudy& study) {
    const DytScale& s = study.s;
    std::printf("DyT study: text L=%lld C=%lld T=%lld B=%lld on %s training tokens (%s tokens per run); ViT L=%lld "
                "C=%lld B=%lld on %s images (%s images per run); %lld steps, %lld seeds, differential attention: %s\n",
                (long long)s.text.layers, (long long)s.text.width, (long long)s.seq, (long long)s.text.batch,
                (size_label(s.text.sizes.front()) + ".." + size_label(s.text.sizes.back())).c_str(),
                size_label(study.tokens_per_run()).c_str(), (long long)s.vit.layers, (long long)s.vit.width,
                (long long)s.vit.batch, (size_label(s.vit.sizes.front()) + ".." + size_label(s.vit.sizes.back())).c_str(),
                size_label(study.images_per_run()).c_str(), (long long)s.text.steps, (long long)s.seeds,
                study.diffattn.c_str());
}

// Every reported run read back into study.runs[model][size][variant].
static void collect_runs(DytStudy& study) {
    for (size_t i = 0; i < study.variants.size(); ++i) {
        const VariantOutcome& o = study.outcomes[i];
        for (size_t r = 0; r < o.report_names.size(); ++r)
            for (const std::string& model : study.trained)
                for (const std::string& variant : study.variants_of(model))
                    for (int64_t size : study.scale_of(model).sizes) {
                        if (study.report_name(model, variant, size) != o.report_names[r]) continue;
                        for (size_t seed = 0; seed < o.report_dirs[r].size(); ++seed)
                            study.runs[model][size][variant].push_back(read_run(o.report_dirs[r][seed], o.report_runs[r][seed]));
                        study.chosen_lr[model][size][variant] = o.choice.best.lr;
                    }
    }
}

}  // namespace dyt

static int dyt_experiment(const StudyOptions& options) {
    dyt::DytStudy study = dyt::design_from_flags(options);
    for (const std::string& model : study.trained)
        for (const std::string& variant : study.variants_of(model))
            for (int band = 0; band < 2; ++band) study.variants.push_back(dyt::band_variant(study, model, variant, band));
    dyt::print_design(study);
    // A BPE vocabulary is trained here, once, before the runs: each run
    // would otherwise train its own, and parallel runs race to save it.
    if (dyt::has_language_model(study) && study.tokenizer != "byte")
        std::printf("tokens: %s\n",
                    make_codec(*options.flags, data::read_file(data::split_path(study.data, "train"))).name.c_str());
    study.outcomes = run_protocol(study.variants, dyt::protocol_plan(study.s), options);
    dyt::collect_runs(study);

    dyt::write_run_csvs(study);
    std::string tuning = dyt::tuning_table(study);
    dyt::RegimeTable regime = dyt::regime_table(study);
    std::string claims = dyt::claims_table(study);
    std::string screening = dyt::screening_text(study, regime);
    std::string ablation = dyt::ablation_table(study);
    std::ofstream(options.out_dir + "/table.md") << tuning << "\n" << regime.text << "\n" << claims << "\n" << screening << "\n"
                                                 << ablation;
    std::string notes = dyt::draw_plots(study);
    std::printf("\n%s\n%s\n%s\n%s%s%s", tuning.c_str(), regime.text.c_str(), claims.c_str(), screening.c_str(),
                study.ablation ? "\nLlama component ablation (validation loss, 95% intervals):\n" : "", ablation.c_str());
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
               {"diffattn", "regime", "regime (the DyT regime study's differential attention) | official (Diff-Transformer's)"},
               {"dyt-alphas", "2",
                "DyT's alpha0: one value (2, the regime study's setting), or a comma-separated list tuned with the "
                "learning rate (0.5,1,2,3: the regime study's sweep)"},
               {"dyt-final-gamma", "1",
                "the initial gain of the DyT before the head: 1, the regime study's setting (its language models stop "
                "learning: chapter 12), or auto, the gain at which they train (train --dyt-final-gamma)"},
               {"embed-scale", "0",
                "the language models' learnable scalar on the embeddings with DyT: 0 (none, the regime study's setting) "
                "or a value or sqrt (train --embed-scale)"},
               {"dyt-alpha-attn", "0",
                "alpha0 of the DyT layers before attention: 0 (the same as the others, the regime study's setting) or "
                "a value (train --dyt-alpha-attn)"},
               {"tokenizer", "byte",
                "the language models' tokens: byte, or a BPE file (trained once on the corpus's train split before "
                "the runs, with --vocab-size tokens, if it does not exist; train --tokenizer)"},
               {"vocab-size", "512", "the size of a BPE vocabulary the study trains (--tokenizer)"}};
    s.run = dyt_experiment;
    return s;
}

}  // namespace app
}  // namespace nc
