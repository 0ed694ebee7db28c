// tokens.h — a read-only run of token ids, owned in memory or mapped from a
// token file (token_file.h), so a corpus of a billion tokens is not copied
// into a vector of int64 to be trained on. A text read with the byte
// tokenizer is its own ids (byte_ids): one byte per id, not eight.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nc {
namespace data {

class TokenIds {
public:
    TokenIds() = default;
    // Owns the ids (a vector converts implicitly, so tests and small corpora
    // need not care).
    TokenIds(std::vector<int64_t> ids);
    // `count` ids of `width` bytes (1, 2, 4 or 8, little-endian unsigned) at
    // `data`, kept alive by `owner` (a memory mapping, a text).
    TokenIds(std::shared_ptr<const void> owner, const void* data, int width, int64_t count);

    int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    int64_t operator[](int64_t i) const;
    TokenIds slice(int64_t begin, int64_t end) const;  // [begin, end), sharing the storage
    std::vector<int64_t> to_vector() const;

private:
    std::shared_ptr<const void> owner_;
    const unsigned char* data_ = nullptr;
    int width_ = 8;  // bytes per id: 8 (owned int64), 4 or 2 (mapped), 1 (a text's bytes)
    int64_t size_ = 0;
};

// Each byte of `text` as one id (0-255), the ids of the byte tokenizer; the
// text is kept as it is. So a 47 MB corpus takes 47 MB, where the same ids
// as int64 took 377 MB and, on a 2-core virtual machine, a second of page
// faults to write, every time a training run started.
TokenIds byte_ids(std::string text);

}  // namespace data
}  // namespace nc
