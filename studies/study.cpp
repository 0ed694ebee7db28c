// study.cpp — what the studies share besides running cells (studies/study.h):
// the list of studies, CSV files, small statistics and gnuplot plots.
#include "studies/study.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensor/error.h"

namespace nc {
namespace app {

// ---- the studies ---------------------------------------------------------------------

const std::vector<Study>& studies() {
    // Every study, one line each (the order of `normcore experiment`'s usage line).
    static const std::vector<Study> all = {norms_study(), dyt_study(), isometry_study()};
    return all;
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

}  // namespace app
}  // namespace nc
