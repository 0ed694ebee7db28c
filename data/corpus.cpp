#include "data/corpus.h"

#include <zlib.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/text.h"
#include "tensor/error.h"
#include "tensor/random.h"

namespace nc {
namespace data {

namespace fs = std::filesystem;

const char* const kStudyCorpus = "runs/corpus";

// ---- documents --------------------------------------------------------------------

static std::string trimmed(const std::string& line) {
    size_t a = line.find_first_not_of(" \t\r\n"), b = line.find_last_not_of(" \t\r\n");
    return a == std::string::npos ? std::string() : line.substr(a, b - a + 1);
}

// "[1913 Webster]", "[PJC]", "[Webster 1913 Suppl.]": a whole line that is one bracketed tag.
static bool is_source_tag(const std::string& line) {
    std::string t = trimmed(line);
    return t.size() >= 2 && t.front() == '[' && t.back() == ']' && t.find(']') == t.size() - 1;
}

// Calls `line` with each line of text, without its newline (a final newline
// does not start an empty last line).
static void for_each_line(const std::string& text, const std::function<void(const std::string&)>& line) {
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        line(text.substr(start, end - start));
        start = end + 1;
    }
}

// Ends a document: its trailing newlines become one, and a blank one is dropped.
static void finish_document(std::string& document, std::vector<std::string>& documents) {
    while (!document.empty() && document.back() == '\n') document.pop_back();
    if (!trimmed(document).empty()) documents.push_back(document + "\n");
    document.clear();
}

std::vector<std::string> split_dictionary(const std::string& text) {
    std::vector<std::string> entries;
    std::string entry;
    bool previous_blank = true, keep = false;
    auto finish = [&] {
        if (keep) finish_document(entry, entries);
        entry.clear();
    };
    for_each_line(text, [&](const std::string& line) {
        bool blank = trimmed(line).empty();
        if (!blank && previous_blank && line[0] != ' ' && line[0] != '\t') {  // a headword: a new entry
            finish();
            keep = line.rfind("00-database-", 0) != 0 && line.rfind("00database", 0) != 0;
        }
        previous_blank = blank;
        if (!is_source_tag(line)) entry += line + "\n";
    });
    finish();
    return entries;
}

std::vector<std::string> split_fortunes(const std::string& text) {
    std::vector<std::string> fortunes;
    std::string current;
    auto finish = [&] {  // a fortune keeps its lines as they are, blank ones included
        if (!trimmed(current).empty()) fortunes.push_back(current);
        current.clear();
    };
    for_each_line(text, [&](const std::string& line) {
        if (trimmed(line) == "%") finish();
        else current += line + "\n";
    });
    finish();
    return fortunes;
}

std::vector<std::string> split_paragraph_runs(const std::string& text, size_t target_bytes) {
    std::vector<std::string> runs;
    std::string run;
    bool previous_blank = false;
    for_each_line(text, [&](const std::string& line) {
        bool blank = trimmed(line).empty();
        if (!blank && previous_blank && run.size() >= target_bytes) finish_document(run, runs);  // a paragraph starts: cut here
        previous_blank = blank;
        run += line + "\n";
    });
    finish_document(run, runs);
    return runs;
}

// ---- shuffle and split ------------------------------------------------------------

CorpusSplits split_documents(std::vector<std::string> documents, double tuning_fraction, double validation_fraction,
                             uint64_t seed) {
    if (!(tuning_fraction > 0 && validation_fraction > 0 && tuning_fraction + validation_fraction < 1))
        throw Error("corpus: the tuning and validation fractions must be positive and leave room for training");
    // Fisher-Yates: position i swaps with a uniform j in [0, i], j from the
    // i-th Philox draw (64 bits; the modulo bias is below 2^-40 here).
    for (size_t i = documents.size(); i > 1; --i) {
        std::array<uint32_t, 4> r = philox4x32(i, seed);
        uint64_t j = (((uint64_t)r[0] << 32) | r[1]) % i;
        std::swap(documents[i - 1], documents[j]);
    }
    int64_t total = 0;
    for (const std::string& d : documents) total += (int64_t)d.size();
    CorpusSplits splits;
    size_t next = 0;
    auto deal = [&](std::vector<std::string>& split, double fraction, const char* name) {
        int64_t bytes = 0, want = (int64_t)((double)total * fraction);
        while (next < documents.size() && (bytes < want || split.empty())) {
            bytes += (int64_t)documents[next].size();
            split.push_back(std::move(documents[next++]));
        }
        if (bytes < want || split.empty()) throw Error(std::string("corpus: too few documents to fill the ") + name + " split");
    };
    deal(splits.validation, validation_fraction, "validation");
    deal(splits.tuning, tuning_fraction, "tuning");
    for (; next < documents.size(); ++next) splits.train.push_back(std::move(documents[next]));
    if (splits.train.empty()) throw Error("corpus: no documents are left for the training split");
    return splits;
}

// ---- files ------------------------------------------------------------------------

std::string read_maybe_gzipped(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are, gzip and dictzip decompressed
    if (!f) throw Error("corpus: cannot read '" + path + "'");
    std::string out;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, (size_t)n);
    int err = 0;
    const char* why = gzerror(f, &err);
    std::string message = err < 0 ? std::string(why) : std::string();
    gzclose(f);
    if (n < 0 || !message.empty()) throw Error("corpus: '" + path + "' is damaged: " + message);
    return out;
}

bool is_split_corpus(const std::string& dir) {
    std::error_code ec;
    for (const char* s : {"train", "tuning", "validation"})
        if (!fs::is_regular_file(split_path(dir, s), ec)) return false;
    return true;
}

std::string split_path(const std::string& dir, const std::string& split) { return dir + "/" + split + ".txt"; }

static void require(const std::string& path, const std::string& what, const std::string& package) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw Error("corpus: " + what + " '" + path + "' does not exist (Debian's " + package +
                    " package has it: make setup installs it)");
}

static void write_split(const std::string& path, const std::vector<std::string>& documents, int64_t* bytes) {
    std::ofstream out(path + ".tmp", std::ios::binary);
    *bytes = 0;
    for (size_t i = 0; i < documents.size(); ++i) {
        if (i) out << "\n";  // a blank line between documents (each ends with a newline)
        out << documents[i];
        *bytes += (int64_t)documents[i].size() + (i ? 1 : 0);
    }
    out.close();
    if (!out) throw Error("corpus: cannot write '" + path + "' (disk full?)");
    fs::rename(path + ".tmp", path);
}

CorpusBuildReport build_corpus(const CorpusSources& sources, const std::string& out_dir, uint64_t seed,
                               double tuning_fraction, double validation_fraction) {
    require(sources.dictionary, "the dictionary", "dict-gcide");
    require(sources.python_docs, "the Python documentation's sources", "python3.11-doc");
    require(sources.fortunes, "the fortunes", "fortunes");
    CorpusBuildReport report;
    std::vector<std::string> all;
    auto add = [&](const std::string& name, const std::string& path, std::vector<std::string> docs) {
        CorpusBuildReport::Source s{name, path, (int64_t)docs.size(), 0};
        for (std::string& d : docs) {
            s.bytes += (int64_t)d.size();
            all.push_back(std::move(d));
        }
        report.sources.push_back(s);
    };
    add("gcide", sources.dictionary, split_dictionary(read_maybe_gzipped(sources.dictionary)));
    std::vector<std::string> pages;
    for (const std::string& f : corpus_files(sources.python_docs)) {
        for (std::string& run : split_paragraph_runs(read_file(f), 2000)) pages.push_back(std::move(run));
    }
    add("python-docs", sources.python_docs, std::move(pages));
    std::vector<std::string> fortunes;
    for (const std::string& f : corpus_files(sources.fortunes))
        for (std::string& d : split_fortunes(read_file(f))) fortunes.push_back(std::move(d));
    add("fortunes", sources.fortunes, std::move(fortunes));
    for (const auto& s : report.sources)
        if (s.documents == 0) throw Error("corpus: the source '" + s.path + "' holds no documents");

    CorpusSplits splits = split_documents(std::move(all), tuning_fraction, validation_fraction, seed);
    fs::create_directories(out_dir);
    write_split(split_path(out_dir, "train"), splits.train, &report.train_bytes);
    write_split(split_path(out_dir, "tuning"), splits.tuning, &report.tuning_bytes);
    write_split(split_path(out_dir, "validation"), splits.validation, &report.validation_bytes);

    nlohmann::json j;
    j["seed"] = seed;
    j["tuning_fraction"] = tuning_fraction;
    j["validation_fraction"] = validation_fraction;
    for (const auto& s : report.sources)
        j["sources"].push_back({{"name", s.name}, {"path", s.path}, {"documents", s.documents}, {"bytes", s.bytes}});
    j["splits"] = {{"train", {{"documents", splits.train.size()}, {"bytes", report.train_bytes}}},
                   {"tuning", {{"documents", splits.tuning.size()}, {"bytes", report.tuning_bytes}}},
                   {"validation", {{"documents", splits.validation.size()}, {"bytes", report.validation_bytes}}}};
    std::ofstream(out_dir + "/corpus.json") << j.dump(2) << "\n";
    return report;
}

}  // namespace data
}  // namespace nc
