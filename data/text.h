// text.h — text corpora, the byte-level tokenizer, and language-model batches.
//
// A corpus is the bytes of one file or of every file in a directory (sorted by
// path, so the order is reproducible). The default is the fortunes corpus of
// Debian's `fortunes` package, skipping its index (.dat) and UTF-8 copy (.u8)
// files. Tokens are bytes: token = byte value, vocabulary 256.
#pragma once

#include <string>
#include <vector>

#include "data/tokens.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace data {

extern const char* const kDefaultCorpus;  // /usr/share/games/fortunes

// All bytes of `path` (a file, or every regular file below a directory).
// Throws nc::Error naming the path when it is missing, unreadable or empty.
std::string read_corpus(const std::string& path);
// The files read_corpus reads, in its order: `path` itself, or every regular
// file below it sorted by path, without fortune's .dat and .u8 files.
std::vector<std::string> corpus_files(const std::string& path);
std::string read_file(const std::string& path);  // one file's bytes; throws naming it

// Byte-level tokenizer: every byte string round-trips.
std::vector<int64_t> encode_bytes(const std::string& text);
std::string decode_bytes(const std::vector<int64_t>& tokens);

struct Split {
    TokenIds train, val;  // views of the same ids
};
// The first (1 - val_fraction) of the tokens train, the rest validate.
Split split_tokens(const TokenIds& tokens, double val_fraction);

// Batches of B windows of T+1 tokens: inputs are each window's first T
// tokens, targets its last T.
struct Batch {
    Tensor inputs, targets;  // int64 [B, T]
};

class LMBatches {
public:
    // shuffle: windows start at random offsets drawn from a seeded generator.
    // !shuffle (--no-shuffle): window j of batch i starts at token (i B + j) T,
    // wrapping around the end, so another framework can replay the batches.
    LMBatches(TokenIds tokens, int64_t B, int64_t T, bool shuffle, uint64_t seed);
    Batch next();
    Batch at(int64_t batch_index) const;  // the --no-shuffle batch i
    // Batch i of `batches` whose B * batches windows are spread evenly over
    // all of the data (window w starts at token w (n - T - 1) / (W - 1)), so
    // an evaluation covers the whole split, not only its beginning.
    Batch spread(int64_t batch_index, int64_t batches) const;
    int64_t batches_taken() const { return taken_; }
    Generator& generator() { return gen_; }
    void set_position(int64_t taken) { taken_ = taken; }

private:
    Batch make(const std::vector<int64_t>& starts) const;
    TokenIds tokens_;
    int64_t B_, T_;
    bool shuffle_;
    Generator gen_;
    int64_t taken_ = 0;
};

}  // namespace data
}  // namespace nc
