// cells.cpp — running a study's training runs (studies/study.h).
//
// Each cell is the training runtime (train/train.h) called in this process
// with the flags of its `normcore train` command, its words going to its own
// OUT/runs/<name>/train.log. A few worker threads take cells from a shared
// counter; each worker gives its runs cores / jobs OpenMP threads, as
// OMP_NUM_THREADS does for the command in commands.txt, so that the command
// pasted into a shell reproduces the cell's numbers.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "studies/study.h"
#include "tensor/cpu/allocator.h"
#include "tensor/error.h"

namespace nc {
namespace app {

namespace fs = std::filesystem;

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

// This program's own path, for the commands of commands.txt. Read once:
// when the program is rebuilt while a study runs, Linux shows the old file
// as "<path> (deleted)".
static std::string self_path() {
    static const std::string path = [] {
        std::error_code ec;
        std::string p = fs::read_symlink("/proc/self/exe", ec).string();
        if (ec) return std::string("normcore");  // not Linux: the name on the PATH
        const std::string deleted = " (deleted)";
        if (p.size() > deleted.size() && p.compare(p.size() - deleted.size(), deleted.size(), deleted) == 0)
            p.resize(p.size() - deleted.size());
        return p;
    }();
    return path;
}

// The cell's `normcore train` arguments, its run directory last.
static std::vector<std::string> train_args(const Cell& cell, const std::string& dir) {
    std::vector<std::string> args = cell.args;
    args.insert(args.end(), {"--run-dir", dir});
    return args;
}

// One cell, in this thread: its flags parsed as `normcore train` parses
// them, its words into train.log, and an error (as the command would print
// it) recorded rather than thrown, so that the other cells go on.
static CellResult run_one_cell(const std::vector<std::string>& args, const std::string& dir, int runs_in_process) {
    CellResult cell;
    std::FILE* log = std::fopen((dir + "/train.log").c_str(), "w");
    if (!log) {
        cell.error = "cannot write '" + dir + "/train.log' (" + std::strerror(errno) + ")";
        return cell;
    }
    try {
        Flags flags("train", train_flags());
        flags.parse(args);
        cell.train = train_run(flags, Distributed{}, TrainOutput{log, runs_in_process});
        if (cell.train.stop == StopReason::NonFinite) std::fprintf(log, "normcore: error: %s\n", cell.train.message.c_str());
    } catch (const std::exception& e) {
        cell.error = e.what();
        std::fprintf(log, "normcore: error: %s\n", e.what());
    }
    std::fclose(log);
    return cell;
}

// --reuse: a cell whose folder holds a result written under this very
// command (its command.txt) is kept.
static bool reusable(const std::string& dir, const std::string& cmd, CellResult& kept) {
    std::ifstream previous(dir + "/command.txt");
    std::string previous_cmd;
    std::getline(previous, previous_cmd);
    if (previous_cmd != cmd || !fs::exists(dir + "/result.json")) return false;
    try {
        kept.train = read_result(dir + "/result.json");
        return true;
    } catch (const Error&) {
        return false;
    }
}

static void print_cell(size_t done, size_t total, const Cell& cell, const std::string& dir, const CellResult& r,
                       bool reused, double seconds) {
    if (!r.ran())
        std::printf("  [%zu/%zu] %-28s FAILED (%s/train.log)\n", done, total, cell.name.c_str(), dir.c_str());
    else if (r.train.stop == StopReason::NonFinite)
        std::printf("  [%zu/%zu] %-28s diverged at step %lld  %s\n", done, total, cell.name.c_str(),
                    (long long)r.train.steps, reused ? "(reused)" : fmt("%5.1f s", seconds).c_str());
    else
        std::printf("  [%zu/%zu] %-28s val %.4f  train %.4f  %s\n", done, total, cell.name.c_str(), r.train.val_loss,
                    r.train.train_loss, reused ? "(reused)" : fmt("%5.1f s", seconds).c_str());
    std::fflush(stdout);
}

std::vector<CellResult> run_cells(const std::vector<Cell>& cells, const StudyOptions& options, bool allow_failures) {
    fs::create_directories(options.out_dir + "/runs");
    // Each cell gets an equal share of the cores: small models run faster
    // as several single-threaded runs than as one run whose threads wait on
    // each other after every small GEMM.
    int cores = std::max(1u, std::thread::hardware_concurrency());
    int jobs = std::max(1, std::min<int>(options.jobs, (int)cells.size()));
    int threads = std::max(1, cores / jobs);
    std::vector<CellResult> results(cells.size());
    std::vector<bool> reused(cells.size(), false);
    std::ofstream listing(options.out_dir + "/commands.txt", std::ios::app);
    if (!listing) throw Error("experiment: cannot write '" + options.out_dir + "/commands.txt'");
    for (size_t i = 0; i < cells.size(); ++i) {
        std::string dir = cell_dir(options, cells[i].name);
        fs::create_directories(dir);
        // The same run from a shell: this program, the same threads and flags.
        std::string cmd = "OMP_NUM_THREADS=" + std::to_string(threads) + " " + shell_quote(self_path()) + " train";
        for (const std::string& a : train_args(cells[i], dir)) cmd += " " + shell_quote(a);
        listing << cmd << "\n";
        reused[i] = options.reuse && reusable(dir, cmd, results[i]);
        if (!reused[i]) {
            // A fresh start: nothing of an earlier run in this folder (its
            // result.json or stream.csv) may pass for this run's.
            fs::remove_all(dir);
            fs::create_directories(dir);
            std::ofstream(dir + "/command.txt") << cmd << "\n";
        }
    }
    listing.close();
    std::printf("running %zu training runs, %d at a time with %d thread%s each (commands in %s/commands.txt)\n",
                cells.size(), jobs, threads, threads == 1 ? "" : "s", options.out_dir.c_str());
    std::fflush(stdout);

    std::atomic<size_t> next{0};
    std::mutex print;
    size_t done = 0;
    std::vector<std::string> failed;
    auto worker = [&] {
        omp_set_num_threads(threads);  // this thread's OpenMP teams, as OMP_NUM_THREADS would set them
        for (size_t i = next++; i < cells.size(); i = next++) {
            std::string dir = cell_dir(options, cells[i].name);
            auto start = std::chrono::steady_clock::now();
            if (!reused[i]) results[i] = run_one_cell(train_args(cells[i], dir), dir, jobs);
            // What the cell's tensors left in the allocator's free lists goes
            // back to the system, as a finished process's memory did: cells of
            // other sizes would not reuse it, and a long grid would only grow.
            cpu::empty_cache();
            double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::lock_guard<std::mutex> lock(print);
            ++done;
            if (!results[i].ran()) failed.push_back(cells[i].name + ": " + results[i].error + " (" + dir + "/train.log)");
            print_cell(done, cells.size(), cells[i], dir, results[i], reused[i], seconds);
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
    return results;
}

}  // namespace app
}  // namespace nc
