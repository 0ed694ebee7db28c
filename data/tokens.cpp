#include "data/tokens.h"

#include <cstring>

#include "tensor/error.h"

namespace nc {
namespace data {

TokenIds::TokenIds(std::vector<int64_t> ids) {
    auto owned = std::make_shared<std::vector<int64_t>>(std::move(ids));
    data_ = reinterpret_cast<const unsigned char*>(owned->data());
    size_ = (int64_t)owned->size();
    width_ = 8;
    owner_ = owned;
}

TokenIds::TokenIds(std::shared_ptr<const void> owner, const void* data, int width, int64_t count)
    : owner_(std::move(owner)), data_(static_cast<const unsigned char*>(data)), width_(width), size_(count) {
    if (width != 1 && width != 2 && width != 4 && width != 8)
        throw Error("token ids: width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
}

int64_t TokenIds::operator[](int64_t i) const {
    const unsigned char* p = data_ + i * width_;
    if (width_ == 1) return *p;
    // memcpy: a mapped file gives no alignment guarantee beyond its header.
    if (width_ == 2) {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
    }
    if (width_ == 4) {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

TokenIds TokenIds::slice(int64_t begin, int64_t end) const {
    if (begin < 0 || end < begin || end > size_)
        throw Error("token ids: slice [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " +
                    std::to_string(size_) + " ids");
    TokenIds out = *this;
    out.data_ = data_ + begin * width_;
    out.size_ = end - begin;
    return out;
}

std::vector<int64_t> TokenIds::to_vector() const {
    std::vector<int64_t> out((size_t)size_);
    for (int64_t i = 0; i < size_; ++i) out[(size_t)i] = (*this)[i];
    return out;
}

TokenIds byte_ids(std::string text) {
    auto owned = std::make_shared<const std::string>(std::move(text));
    return TokenIds(owned, owned->data(), 1, (int64_t)owned->size());
}

}  // namespace data
}  // namespace nc
