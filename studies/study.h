// study.h — what the studies of `normcore experiment` share.
//
// A study is a grid of training runs ("cells"). Each cell is the training
// runtime (train/train.h) called in this process with the flags of a
// `normcore train` command and its own run directory, so every number in a
// study's table can be reproduced by pasting one line of OUT/commands.txt
// into a shell. The study gets each cell's TrainResult, reads what the cells
// logged (train_log.csv, and with --diagnostics diagnostics.csv, weights.csv,
// stream.csv), aggregates it into CSVs and a markdown table, and renders
// plots with gnuplot.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "train/train.h"

namespace nc {
namespace app {

// What every study gets from the command line.
struct StudyOptions {
    std::string scale;    // "smoke", "quick" or "full"
    std::string out_dir;  // results directory
    int jobs = 1;         // cells run at once (each with cores / jobs threads)
    bool reuse = false;   // --reuse: keep a finished cell whose command is unchanged (an interrupted study goes on)
    const Flags* flags = nullptr;
};

// A study of `normcore experiment <name>`: its flags beyond the common ones
// (--smoke/--quick/--full, --out) and how it runs. A new study is one file
// that defines its run function and its Study, and one line in studies()
// (studies/study.cpp).
struct Study {
    std::string name;
    // Whether it trains (a grid of training cells): then it also
    // takes --device, --jobs, --steps, --seeds and --reuse.
    bool trains = false;
    std::vector<FlagSpec> flags;  // its own flags, in the order --help lists them
    // What to add to the default results directory runs/experiment-<name>
    // (the norms study's --part), or null for nothing.
    std::string (*out_suffix)(const Flags& flags) = nullptr;
    int (*run)(const StudyOptions& options) = nullptr;
};

Study isometry_study();  // studies/isometry.cpp
Study norms_study();     // studies/norms.cpp
Study dyt_study();       // studies/dyt.cpp

// Every study, in the order `normcore experiment` lists them.
const std::vector<Study>& studies();

// ---- running cells -------------------------------------------------------------------

struct Cell {
    std::string name;               // its folder: OUT/runs/<name>
    std::vector<std::string> args;  // flags for `normcore train` (--run-dir is added)
};

// What came of a cell: its result, or the error that stopped it (a missing
// file, a bad flag: what `normcore train` would print).
struct CellResult {
    std::string error;  // "" when the run ran
    TrainResult train;  // its result when it ran: finished, or stopped on a NaN or Inf
    bool ran() const { return error.empty(); }
    bool diverged() const { return ran() && train.stop == StopReason::NonFinite; }
    // The validation loss of a finished run; NaN for one that diverged or failed.
    double val_loss() const { return ran() && train.stop == StopReason::Finished ? train.val_loss : NAN; }
};

// Runs every cell (at most options.jobs at a time, in this process: a crash
// that ends the process ends the study; --reuse goes on from there), printing
// one line as each finishes, and appends their commands to OUT/commands.txt
// (a study starts it empty). Returns the cells' results in order. Throws,
// naming the cells and their logs, if any run failed with an error (not by
// diverging), unless allow_failures (the protocol's tuning: studies/protocol.h).
std::vector<CellResult> run_cells(const std::vector<Cell>& cells, const StudyOptions& options, bool allow_failures = false);
std::string cell_dir(const StudyOptions& options, const std::string& name);

// A CSV file with a header row; cells are read as numbers when asked
// (an empty cell or "nan" is NaN).
struct Csv {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    int column(const std::string& name) const;  // throws if missing
    std::vector<int> columns_starting_with(const std::string& prefix) const;
    double number(size_t row, int column) const;
};
Csv read_csv(const std::string& path);

// ---- small statistics ------------------------------------------------------------------

// One number printed with a printf format ("%.4f"), for tables.
std::string fmt(const char* format, double x);

double mean(const std::vector<double>& xs);
double sample_std(const std::vector<double>& xs);  // n - 1 in the denominator; 0 for one value
double pearson(const std::vector<double>& xs, const std::vector<double>& ys);
// Spearman's rank correlation: Pearson's on the ranks (tied values share their mean rank).
double spearman(const std::vector<double>& xs, const std::vector<double>& ys);

// ---- plots -------------------------------------------------------------------------------

// Runs gnuplot on OUT/<name>.gp (which writes OUT/<name>.png) and returns
// what to tell the reader: the PNG, or the script and why it was not drawn.
std::string render_plot(const std::string& out_dir, const std::string& name);
// The lines every plot script starts with: a PNG terminal and CSV input.
std::string plot_header(const std::string& out_dir, const std::string& name, const std::string& title);

}  // namespace app
}  // namespace nc
