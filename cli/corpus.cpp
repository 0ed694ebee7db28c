// corpus.cpp — `normcore corpus build`: the studies' corpus (data/corpus.h),
// written once into a directory of train / tuning / validation splits.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "data/corpus.h"
#include "tensor/error.h"

namespace nc {
namespace app {

int corpus_command(int argc, char** argv) {
    data::CorpusSources defaults;
    Flags flags("corpus build", {
                                    {"out", data::kStudyCorpus, "the directory to write the splits to"},
                                    {"seed", "1", "the seed of the document shuffle"},
                                    {"dictionary", defaults.dictionary, "GCIDE's dictd database (dict-gcide)"},
                                    {"python-docs", defaults.python_docs, "the Python documentation's reST sources (python3.11-doc)"},
                                    {"fortunes", defaults.fortunes, "the fortune files (fortunes-min, fortunes)"},
                                    {"tuning-fraction", "0.02", "the share of bytes in the tuning split"},
                                    {"validation-fraction", "0.02", "the share of bytes in the validation split"},
                                });
    if (argc < 3 || std::string(argv[2]) != "build") {
        if (argc >= 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
            std::cout << "usage: normcore corpus build [flags]\n\n" << flags.usage();
            return 0;
        }
        throw Error("corpus: the only subcommand is `normcore corpus build` (--help lists its flags)");
    }
    flags.parse(argc, argv, 3);
    if (flags.help_requested()) {
        std::cout << "Builds the studies' corpus: English text from three Debian packages, split into\n"
                     "documents, shuffled with a fixed seed and dealt into train / tuning / validation.\n\n"
                  << flags.usage();
        return 0;
    }
    data::CorpusSources sources{flags.str("dictionary"), flags.str("python-docs"), flags.str("fortunes")};
    int64_t seed = flags.integer("seed");
    if (seed < 0) throw Error("flag --seed: must be 0 or more");
    auto start = std::chrono::steady_clock::now();
    data::CorpusBuildReport r = data::build_corpus(sources, flags.str("out"), (uint64_t)seed,
                                                   flags.number("tuning-fraction"), flags.number("validation-fraction"));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const auto& s : r.sources)
        std::printf("%-12s %8lld documents %8.2f MB  %s\n", s.name.c_str(), (long long)s.documents, (double)s.bytes / 1e6,
                    s.path.c_str());
    std::printf("wrote %s: train %.2f MB, tuning %.2f MB, validation %.2f MB (seed %lld, %.1f s)\n",
                flags.str("out").c_str(), (double)r.train_bytes / 1e6, (double)r.tuning_bytes / 1e6,
                (double)r.validation_bytes / 1e6, (long long)seed, seconds);
    return 0;
}

}  // namespace app
}  // namespace nc
