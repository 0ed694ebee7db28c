// token_file.h — a corpus tokenized once (`normcore tokenize`), read back by
// mapping it into memory: the analogue of nanoGPT's and llm.c's .bin files.
//
// Layout (all little-endian), 32 bytes of header, then the ids:
//   bytes  0..7   magic "NCTOKENS"
//   bytes  8..11  uint32 version (1)
//   bytes 12..15  uint32 bytes per id: 2 (uint16, vocabularies up to 65536) or 4 (uint32)
//   bytes 16..23  uint64 vocabulary size (every id is below it)
//   bytes 24..31  uint64 number of ids
//   bytes 32..    the ids
#pragma once

#include <cstdio>
#include <string>

#include "data/tokens.h"

namespace nc {
namespace data {

struct TokenFileInfo {
    int64_t vocab_size = 0, count = 0;
    int id_bytes = 0;
};

// Whether `path` is a file that starts with the token-file magic.
bool is_token_file(const std::string& path);

// Maps the file read-only. Checks the header (magic, version, width, a vocabulary
// the width can hold, the size the count implies) and every id against the
// vocabulary; each failure is an nc::Error naming the file and what is wrong.
TokenIds map_token_file(const std::string& path, TokenFileInfo* info = nullptr);

// Writes ids as they come: to `path.tmp`, renamed to `path` by finish(), so a
// failed run never leaves a truncated file under the real name.
class TokenFileWriter {
public:
    TokenFileWriter(const std::string& path, int64_t vocab_size);
    ~TokenFileWriter();
    TokenFileWriter(const TokenFileWriter&) = delete;
    TokenFileWriter& operator=(const TokenFileWriter&) = delete;
    void append(const std::vector<int64_t>& ids);
    TokenFileInfo finish();

private:
    std::string path_;
    std::FILE* file_ = nullptr;
    TokenFileInfo info_;
};

}  // namespace data
}  // namespace nc
