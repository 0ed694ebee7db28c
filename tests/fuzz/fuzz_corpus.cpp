// Fuzz target: the studies' corpus sources split into documents
// (data/corpus.h): a dictd database, fortune files and reST pages, read
// through zlib as build_corpus reads them (so gzip members are fuzzed too).
// Beyond not crashing, each document must be non-empty and end in a newline.
#include <cstdlib>

#include "data/corpus.h"
#include "fuzz_input.h"

static void check(const std::vector<std::string>& documents) {
    for (const std::string& d : documents)
        if (d.empty() || d.back() != '\n') std::abort();  // a finding: a malformed document
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path = nc_fuzz::write_input("corpus", data, size);
    try {
        std::string text = nc::data::read_maybe_gzipped(path);
        check(nc::data::split_dictionary(text));
        check(nc::data::split_fortunes(text));
        check(nc::data::split_paragraph_runs(text, 64));
    } catch (const nc::Error&) {
    }
    std::remove(path.c_str());
    return 0;
}
