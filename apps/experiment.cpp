// experiment.cpp — `normcore experiment <name>`: a study run with one
// command, writing CSV logs, a markdown table and plots to a results
// directory and printing the table at the end (apps/experiment.h).
//
//   norms      GPT-2 or Llama with every residual placement and GeoNorm decay,
//              each tuned and run with 3 seeds under the protocol (apps/protocol.h).
//   dyt        LayerNorm/RMSNorm against Dynamic Tanh across training-set
//              sizes, for GPT-2, Llama and ViT, with differential attention
//              as the contrast and the saturation screening rule.
//   isometry   deep MLPs at initialization: the Gram matrix's isometry gap
//              against depth, per activation and norm.
//
// Scales: --smoke (seconds, for the test suite), --quick (the default,
// minutes on 2 CPU cores), --full (larger, meant for a GPU).
#include "apps/experiment.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "apps/commands.h"
#include "apps/lm.h"
#include "data/corpus.h"
#include "tensor/tensor.h"

namespace nc {
namespace app {

namespace fs = std::filesystem;

// ---- running cells -----------------------------------------------------------------

std::string cell_dir(const StudyOptions& options, const std::string& name) { return options.out_dir + "/runs/" + name; }

// 'it' for a POSIX shell where needed, so commands.txt can be pasted as is.
static std::string shell_quote(const std::string& s) {
    bool plain = !s.empty();
    for (char c : s) plain = plain && (std::isalnum((unsigned char)c) || std::strchr("_./=:,+-", c));
    if (plain) return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// This program's own path, to start `normcore train` children of the same
// build. Read once: when the program is rebuilt while a study runs, Linux
// shows the old file as "<path> (deleted)", and the children then run the
// rebuilt program at the same path.
static std::string self_path() {
    static const std::string path = [] {
        std::error_code ec;
        std::string p = fs::read_symlink("/proc/self/exe", ec).string();
        if (ec) throw Error("experiment: cannot find the normcore program itself (/proc/self/exe: " + ec.message() + ")");
        const std::string deleted = " (deleted)";
        if (p.size() > deleted.size() && p.compare(p.size() - deleted.size(), deleted.size(), deleted) == 0)
            p.resize(p.size() - deleted.size());
        return p;
    }();
    return path;
}

void run_cells(const std::vector<Cell>& cells, const StudyOptions& options, bool allow_failures) {
    fs::create_directories(options.out_dir + "/runs");
    // Each child gets an equal share of the cores: small models run faster
    // as several single-threaded processes than as one process whose
    // threads wait on each other after every small GEMM.
    int cores = std::max(1u, std::thread::hardware_concurrency());
    int jobs = std::max(1, std::min<int>(options.jobs, (int)cells.size()));
    int threads = std::max(1, cores / jobs);
    std::string program = self_path();
    std::vector<std::string> commands;
    std::vector<bool> reused;
    std::ofstream listing(options.out_dir + "/commands.txt", std::ios::app);
    if (!listing) throw Error("experiment: cannot write '" + options.out_dir + "/commands.txt'");
    for (const Cell& cell : cells) {
        std::string dir = cell_dir(options, cell.name);
        fs::create_directories(dir);
        std::string cmd = "OMP_NUM_THREADS=" + std::to_string(threads) + " " + shell_quote(program) + " train";
        for (const std::string& a : cell.args) cmd += " " + shell_quote(a);
        cmd += " --run-dir " + shell_quote(dir);
        listing << cmd << "\n";
        // --reuse: a cell that finished (a summary line) under this very
        // command is kept; its command is in its folder's command.txt.
        std::ifstream previous(dir + "/command.txt");
        std::string previous_cmd;
        std::getline(previous, previous_cmd);
        bool keep = false;
        if (options.reuse && previous_cmd == cmd) {
            try {
                read_summary(dir);
                keep = true;
            } catch (const Error&) {
            }
        }
        if (!keep) std::ofstream(dir + "/command.txt") << cmd << "\n";
        reused.push_back(keep);
        commands.push_back(cmd + " > " + shell_quote(dir + "/train.log") + " 2>&1");
    }
    listing.close();
    std::printf("running %zu training runs, %d at a time with %d thread%s each (commands in %s/commands.txt)\n",
                cells.size(), jobs, threads, threads == 1 ? "" : "s", options.out_dir.c_str());
    std::fflush(stdout);

    // A shared counter hands out cells to `jobs` worker threads; each runs
    // its children one after the other with std::system (MT-safe in glibc).
    std::atomic<size_t> next{0};
    std::mutex print;
    size_t done = 0;
    std::vector<std::string> failed;
    auto worker = [&] {
        for (size_t i = next++; i < cells.size(); i = next++) {
            auto start = std::chrono::steady_clock::now();
            int status = reused[i] ? 0 : std::system(commands[i].c_str());
            double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::lock_guard<std::mutex> lock(print);
            ++done;
            std::string dir = cell_dir(options, cells[i].name);
            if (status != 0) {
                failed.push_back(cells[i].name + " (see " + dir + "/train.log)");
                std::printf("  [%zu/%zu] %-28s FAILED (%s/train.log)\n", done, cells.size(), cells[i].name.c_str(), dir.c_str());
            } else {
                Summary s = read_summary(dir);
                std::printf("  [%zu/%zu] %-28s val %.4f  train %.4f  %s\n", done, cells.size(), cells[i].name.c_str(),
                            s.val_loss, s.train_loss, reused[i] ? "(reused)" : fmt("%5.1f s", seconds).c_str());
            }
            std::fflush(stdout);
        }
    };
    std::vector<std::thread> workers;
    for (int j = 0; j < jobs; ++j) workers.emplace_back(worker);
    for (std::thread& w : workers) w.join();
    if (!failed.empty() && !allow_failures) {
        std::string list;
        for (const std::string& f : failed) list += "\n  " + f;
        throw Error("experiment: " + std::to_string(failed.size()) + " training run(s) failed:" + list);
    }
}

Summary read_summary(const std::string& run_dir) {
    std::ifstream log(run_dir + "/train.log");
    std::string line;
    while (std::getline(log, line)) {
        if (line.rfind("summary: ", 0) != 0) continue;
        Summary s;
        // summary: steps=N train_loss=X val_loss=Y ms_per_step=Z tok_per_s=W
        if (std::sscanf(line.c_str(), "summary: steps=%*d train_loss=%lf val_loss=%lf ms_per_step=%lf", &s.train_loss,
                        &s.val_loss, &s.ms_per_step) == 3)
            return s;
        // NaN losses print as "nan", which sscanf's %lf reads; anything else is a format change.
        throw Error("experiment: cannot read the summary line of " + run_dir + "/train.log: " + line);
    }
    throw Error("experiment: no summary line in " + run_dir + "/train.log (did the run finish?)");
}

// ---- CSV -------------------------------------------------------------------------------

static std::vector<std::string> split_commas(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ',')) out.push_back(field);
    if (!line.empty() && line.back() == ',') out.push_back("");
    return out;
}

Csv read_csv(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("experiment: cannot read '" + path + "'");
    Csv csv;
    std::string line;
    if (!std::getline(in, line)) throw Error("experiment: '" + path + "' is empty");
    csv.header = split_commas(line);
    while (std::getline(in, line))
        if (!line.empty()) csv.rows.push_back(split_commas(line));
    return csv;
}

int Csv::column(const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) return (int)i;
    throw Error("experiment: a CSV file has no column '" + name + "'");
}

std::vector<int> Csv::columns_starting_with(const std::string& prefix) const {
    std::vector<int> out;
    for (size_t i = 0; i < header.size(); ++i)
        if (header[i].rfind(prefix, 0) == 0) out.push_back((int)i);
    return out;
}

double Csv::number(size_t row, int column) const {
    if (row >= rows.size() || column < 0 || (size_t)column >= rows[row].size() || rows[row][column].empty()) return NAN;
    return std::strtod(rows[row][column].c_str(), nullptr);  // "nan" and "inf" read as such
}

// ---- statistics ------------------------------------------------------------------------

std::string fmt(const char* format, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, x);
    return buf;
}

double mean(const std::vector<double>& xs) {
    double total = 0;
    for (double x : xs) total += x;
    return xs.empty() ? NAN : total / (double)xs.size();
}

double sample_std(const std::vector<double>& xs) {
    if (xs.size() < 2) return 0;
    double m = mean(xs), total = 0;
    for (double x : xs) total += (x - m) * (x - m);
    return std::sqrt(total / (double)(xs.size() - 1));
}

double pearson(const std::vector<double>& xs, const std::vector<double>& ys) {
    double mx = mean(xs), my = mean(ys), sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        sxy += (xs[i] - mx) * (ys[i] - my);
        sxx += (xs[i] - mx) * (xs[i] - mx);
        syy += (ys[i] - my) * (ys[i] - my);
    }
    return sxy / std::sqrt(sxx * syy);  // NaN when either is constant
}

double spearman(const std::vector<double>& xs, const std::vector<double>& ys) {
    auto ranks = [](const std::vector<double>& v) {
        std::vector<size_t> order(v.size());
        for (size_t i = 0; i < v.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
        std::vector<double> r(v.size());
        for (size_t i = 0; i < order.size();) {
            size_t j = i;  // order[i..j] are tied
            while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
            for (size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * (double)(i + j);
            i = j + 1;
        }
        return r;
    };
    return pearson(ranks(xs), ranks(ys));
}

// ---- plots -----------------------------------------------------------------------------

std::string plot_header(const std::string& out_dir, const std::string& name, const std::string& title) {
    std::string quoted;  // inside gnuplot's '...' strings a quote is written twice
    for (char c : title) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return "set terminal png size 900,600\nset output '" + out_dir + "/" + name + ".png'\n" +
           "set datafile separator ','\nset title '" + quoted + "'\nset key outside right\n" +
           "set linetype 9 lc rgb '#e377c2' pt 6\n";  // gnuplot cycles 8 colours; a 9th line gets a pink of its own
}

std::string render_plot(const std::string& out_dir, const std::string& name) {
    if (std::system("command -v gnuplot > /dev/null 2>&1") != 0)
        return name + ".gp (gnuplot not found: `make setup` installs it)";
    std::string log = out_dir + "/" + name + ".gnuplot.log";
    std::string cmd = "gnuplot '" + out_dir + "/" + name + ".gp' 2> '" + log + "'";
    if (std::system(cmd.c_str()) != 0) return name + ".gp (gnuplot failed: see " + name + ".gnuplot.log)";
    std::filesystem::remove(log);
    return name + ".png";
}

// ---- the command -----------------------------------------------------------------------

// Every study, one line each (the order of the usage line).
static const std::vector<Study>& studies() {
    static const std::vector<Study> all = {norms_study(), dyt_study(), isometry_study()};
    return all;
}

int experiment_command(int argc, char** argv) {
    std::string names;
    for (const Study& s : studies()) names += (names.empty() ? "" : ", ") + s.name;
    const std::string usage = "usage: normcore experiment <name> [--smoke | --quick | --full] [--out DIR] [flags]\n"
                              "experiments: " + names + " (normcore experiment <name> --help lists its flags)\n";
    if (argc < 3 || argv[2][0] == '-') {
        std::fputs(usage.c_str(), argc < 3 ? stderr : stdout);
        return argc < 3 ? 2 : 0;
    }
    std::string name = argv[2];
    auto found = std::find_if(studies().begin(), studies().end(), [&](const Study& s) { return s.name == name; });
    if (found == studies().end())
        throw Error("experiment: unknown experiment '" + name + "' (available: " + names + ")");
    const Study& study = *found;
    std::vector<FlagSpec> specs = {
        {"smoke", "false", "a seconds-long run (the test suite's)", true},
        {"quick", "false", "the default scale: minutes on 2 CPU cores", true},
        {"full", "false", "the larger scale, meant for a GPU", true},
        {"out", "", "results directory (default runs/experiment-<name>)"},
    };
    if (study.trains) {
        specs.push_back({"device", "cpu", "cpu | cuda: where the training runs go"});
        specs.push_back({"jobs", "0", "training runs at once (0: one per core on the CPU, 1 on a GPU)"});
        specs.push_back({"steps", "0", "override the scale's optimizer steps per run"});
        specs.push_back({"seeds", "0", "override the scale's number of seeds"});
        specs.push_back({"reuse", "false", "keep the runs of OUT/runs that finished under the same command (go on after an interruption)", true});
    }
    specs.insert(specs.end(), study.flags.begin(), study.flags.end());
    Flags flags("experiment " + name, specs);
    flags.parse(argc, argv, 3);
    if (flags.help_requested()) {
        std::fputs(flags.usage().c_str(), stdout);
        return 0;
    }
    int chosen = flags.on("smoke") + flags.on("quick") + flags.on("full");
    if (chosen > 1) throw Error("experiment: choose one of --smoke, --quick, --full");
    StudyOptions options;
    options.scale = flags.on("smoke") ? "smoke" : flags.on("full") ? "full" : "quick";
    std::string suffix = study.out_suffix ? study.out_suffix(flags) : "";
    options.out_dir = flags.str("out").empty() ? "runs/experiment-" + name + suffix : flags.str("out");
    options.flags = &flags;
    if (study.trains) {
        std::string device = flags.str("device");
        parse_device(device);  // a clear error now rather than one per training run
        int64_t jobs = flags.integer("jobs");
        if (jobs < 0) throw Error("flag --jobs: must be 0 (automatic) or more");
        options.reuse = flags.on("reuse");
        options.jobs = jobs > 0 ? (int)jobs : device == "cpu" ? (int)std::max(1u, std::thread::hardware_concurrency()) : 1;
        if (flags.integer("steps") < 0) throw Error("flag --steps: must be positive");
        if (flags.integer("seeds") < 0) throw Error("flag --seeds: must be positive");
        fs::create_directories(options.out_dir);
        fs::remove(options.out_dir + "/commands.txt");  // run_cells appends each phase's commands
    }
    return study.run(options);
}

}  // namespace app
}  // namespace nc
