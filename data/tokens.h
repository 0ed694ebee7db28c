// tokens.h — a read-only run of token ids, owned in memory or mapped from a
// token file (token_file.h), so a corpus of a billion tokens is not copied
// into a vector of int64 to be trained on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace nc {
namespace data {

class TokenIds {
public:
    TokenIds() = default;
    // Owns the ids (a vector converts implicitly, so tests and small corpora
    // need not care).
    TokenIds(std::vector<int64_t> ids);
    // `count` ids of `width` bytes (2 or 4, little-endian unsigned) at `data`,
    // kept alive by `owner` (a memory mapping).
    TokenIds(std::shared_ptr<const void> owner, const void* data, int width, int64_t count);

    int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    int64_t operator[](int64_t i) const;
    TokenIds slice(int64_t begin, int64_t end) const;  // [begin, end), sharing the storage
    std::vector<int64_t> to_vector() const;

private:
    std::shared_ptr<const void> owner_;
    const unsigned char* data_ = nullptr;
    int width_ = 8;  // bytes per id: 8 (owned int64), 4 or 2 (mapped)
    int64_t size_ = 0;
};

}  // namespace data
}  // namespace nc
