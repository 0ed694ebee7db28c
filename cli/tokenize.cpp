// tokenize.cpp — `normcore tokenize`: a corpus encoded once into a token file
// (data/token_file.h) that train and eval then map into memory.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "train/lm.h"
#include "data/bpe.h"
#include "data/text.h"
#include "data/token_file.h"

namespace nc {
namespace app {

int tokenize_command(int argc, char** argv) {
    Flags flags("tokenize", {
                                {"tokenizer", "byte", "byte, a BPE file (trained on the data and saved there if missing), or a GPT-2 vocab.json + merges.txt directory"},
                                {"vocab-size", "512", "size of a newly trained BPE vocabulary"},
                                {"data", data::kDefaultCorpus, "the text: a file or a directory of files"},
                                {"out", "", "the token file to write (required)"},
                            });
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Encodes a text corpus once into a token file (header + uint16/uint32 ids) that\n"
                     "`train --data FILE` and `eval --data FILE` map into memory.\n\n"
                  << flags.usage();
        return 0;
    }
    if (!flags.given("out")) throw Error("tokenize: give the output file with --out");
    std::string text = data::read_corpus(flags.str("data"));
    TextCodec codec = make_codec(flags, text);
    data::TokenFileWriter writer(flags.str("out"), codec.vocab_size);
    bool tty = isatty(STDOUT_FILENO);
    auto start = std::chrono::steady_clock::now();
    // Piece by piece (about 1 MB each, cut where the pre-tokenizer's chunks
    // do not change), so the ids stream to the file with a progress bar.
    size_t next_report = 0;
    encode_pieces(codec, text, [&](const std::vector<int64_t>& ids, size_t done) {
        writer.append(ids);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        double fraction = (double)done / (double)text.size();
        if (tty) {
            int width = 30, filled = (int)(fraction * width);
            std::printf("\r[%s%s] %5.1f%% of %.1f MB, %.1f MB/s", std::string(filled, '#').c_str(),
                        std::string(width - filled, '.').c_str(), 100 * fraction, (double)text.size() / 1e6,
                        seconds > 0 ? (double)done / 1e6 / seconds : 0.0);
            std::fflush(stdout);
        } else if (done >= next_report || done == text.size()) {
            std::printf("tokenize: %5.1f%% of %.1f MB\n", 100 * fraction, (double)text.size() / 1e6);
            next_report = done + text.size() / 4;
        }
        return true;
    });
    if (tty) std::printf("\n");
    data::TokenFileInfo info = writer.finish();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("tokenize: %lld tokens (%s, %d bytes each) from %.1f MB in %.1f s, written to %s\n",
                (long long)info.count, codec.name.c_str(), info.id_bytes, (double)text.size() / 1e6, seconds,
                flags.str("out").c_str());
    return 0;
}

}  // namespace app
}  // namespace nc
