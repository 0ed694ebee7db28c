// corpus.h — the studies' corpus: documents from Debian packages, shuffled
// at document granularity with a fixed seed, split three ways.
//
// The fortunes alone (2.5 MB, one topic per file, concatenated in file-name
// order) cannot span data regimes, and a prefix of them is one topic. The
// studies' corpus is built once, from three sources that `make setup`
// installs, into a directory of three splits:
//
//   train.txt       what the model trains on
//   tuning.txt      what learning rates and warm-ups are chosen on
//   validation.txt  what the studies report (never used for a choice)
//   corpus.json     the sources, their sizes, the seed, the split sizes
//
// Every split is a random sample of whole documents, so each holds every
// source and topic in proportion; documents are joined by a blank line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nc {
namespace data {

// Where the sources are on a Debian machine (`make setup` installs them).
struct CorpusSources {
    std::string dictionary = "/usr/share/dictd/gcide.dict.dz";            // dict-gcide (GPL-3+)
    std::string python_docs = "/usr/share/doc/python3.11/html/_sources";  // python3.11-doc (PSF-2.0)
    std::string fortunes = "/usr/share/games/fortunes";                   // fortunes-min, fortunes (various free)
};

extern const char* const kStudyCorpus;  // runs/corpus, where `normcore corpus build` writes by default

// ---- splitting sources into documents -------------------------------------------

// A dictd database (GCIDE): an entry starts at a line with no indent after a
// blank line. The database's own header entries (00-database-*) are left
// out, and so are lines that are only a bracketed source tag ("[1913
// Webster]"), which follow nearly every definition and carry no language.
std::vector<std::string> split_dictionary(const std::string& text);
// A fortune file: fortunes are separated by lines holding only "%".
std::vector<std::string> split_fortunes(const std::string& text);
// A long page (a reST source): runs of whole paragraphs (blank-line
// separated) of at least target_bytes each, the last one possibly shorter,
// so that a few long pages do not make the splits' mix of sources a lottery.
std::vector<std::string> split_paragraph_runs(const std::string& text, size_t target_bytes);

// ---- shuffling and splitting ----------------------------------------------------

struct CorpusSplits {
    std::vector<std::string> train, tuning, validation;
};

// Shuffles the documents (Fisher-Yates on Philox draws: the same order on
// every machine and compiler) and deals them out: validation takes documents
// until it holds at least validation_fraction of all bytes, tuning likewise,
// train the rest. Throws if a split would be empty.
CorpusSplits split_documents(std::vector<std::string> documents, double tuning_fraction,
                             double validation_fraction, uint64_t seed);

// ---- the corpus directory -------------------------------------------------------

struct CorpusBuildReport {
    struct Source {
        std::string name, path;
        int64_t documents = 0, bytes = 0;
    };
    std::vector<Source> sources;
    int64_t train_bytes = 0, tuning_bytes = 0, validation_bytes = 0;
};

// Reads the sources, splits and writes out_dir/{train,tuning,validation}.txt
// and corpus.json. Throws naming a missing source and the package that has it.
CorpusBuildReport build_corpus(const CorpusSources& sources, const std::string& out_dir, uint64_t seed,
                               double tuning_fraction = 0.02, double validation_fraction = 0.02);

// True if dir holds train.txt, tuning.txt and validation.txt.
bool is_split_corpus(const std::string& dir);
std::string split_path(const std::string& dir, const std::string& split);  // dir/<split>.txt
// The bytes of a file, read whole (through zlib, so gzip and dictzip files too).
std::string read_maybe_gzipped(const std::string& path);

}  // namespace data
}  // namespace nc
