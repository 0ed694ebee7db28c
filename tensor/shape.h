// shape.h — shapes, strides and the arithmetic on them.
//
// A shape lists the size of each dimension, outermost first; strides list how
// many *elements* (not bytes) to step in storage to move one index along each
// dimension. A contiguous (row-major) tensor of shape [2, 3, 4] has strides
// [12, 4, 1]. Views change shape/strides/offset and share the storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nc {

// The kernels keep per-dimension counters in fixed arrays of this size.
constexpr int kMaxDims = 8;

// A Shape is a list of int64_t that behaves like std::vector<int64_t> (size,
// [], begin/end, push_back, insert, erase, resize, ==) but keeps up to
// kMaxDims numbers inside the object itself.
//
// Why not the vector: every tensor header holds two of these (shape and
// strides), and generating one token builds a few hundred headers (views,
// outputs of small ops). With a vector each of them is a heap allocation and
// a free: decoding one token of the default model made 1,141 allocations
// with vectors, 515 with this class. Inside the object, copying a Shape is
// copying 96 bytes (and an empty vector).
//
// A list longer than kMaxDims still works (the numbers then live in a vector
// on the heap), so an error about too many dims comes from check_ndim with
// the op's name, as before, and not from here.
class Shape {
public:
    using value_type = int64_t;
    using iterator = int64_t*;
    using const_iterator = const int64_t*;
    using size_type = size_t;
    using reference = int64_t&;
    using const_reference = const int64_t&;

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) : Shape(dims.begin(), dims.end()) {}
    explicit Shape(size_t ndim, int64_t value = 0) { resize(ndim, value); }
    Shape(const int64_t* first, const int64_t* last);
    Shape(const std::vector<int64_t>& dims) : Shape(dims.data(), dims.data() + dims.size()) {}
    operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }

    Shape(const Shape&) = default;
    Shape& operator=(const Shape&) = default;
    // A move leaves the source empty, as a vector's does. (The compiler's
    // move would take the heap numbers of a long list and leave its size
    // behind.) The fixed-size copy of inline_ is a few instructions.
    Shape(Shape&& other) noexcept : heap_(std::move(other.heap_)), ndim_(other.ndim_) {
        for (int i = 0; i < kMaxDims; ++i) inline_[i] = other.inline_[i];
        other.ndim_ = 0;
    }
    Shape& operator=(Shape&& other) noexcept {
        if (this == &other) return *this;
        for (int i = 0; i < kMaxDims; ++i) inline_[i] = other.inline_[i];
        heap_ = std::move(other.heap_);
        ndim_ = other.ndim_;
        other.heap_.clear();
        other.ndim_ = 0;
        return *this;
    }

    size_t size() const { return ndim_; }
    bool empty() const { return ndim_ == 0; }
    int64_t* data() { return ndim_ <= kMaxDims ? inline_ : heap_.data(); }
    const int64_t* data() const { return ndim_ <= kMaxDims ? inline_ : heap_.data(); }
    int64_t& operator[](size_t i) { return data()[i]; }
    const int64_t& operator[](size_t i) const { return data()[i]; }
    int64_t* begin() { return data(); }
    int64_t* end() { return data() + ndim_; }
    const int64_t* begin() const { return data(); }
    const int64_t* end() const { return data() + ndim_; }
    int64_t& front() { return data()[0]; }
    const int64_t& front() const { return data()[0]; }
    int64_t& back() { return data()[ndim_ - 1]; }
    const int64_t& back() const { return data()[ndim_ - 1]; }

    // New entries are `value`; the entries kept keep their values.
    void resize(size_t ndim, int64_t value = 0) {
        if (ndim > kMaxDims || ndim_ > kMaxDims) return resize_on_heap(ndim, value);
        for (size_t i = ndim_; i < ndim; ++i) inline_[i] = value;
        ndim_ = ndim;
    }
    void clear() { resize(0); }
    void push_back(int64_t value) { resize(ndim_ + 1, value); }
    void pop_back() { resize(ndim_ - 1); }
    int64_t* insert(const int64_t* position, int64_t value);
    int64_t* insert(const int64_t* position, const int64_t* first, const int64_t* last);
    int64_t* insert(const int64_t* position, std::initializer_list<int64_t> values) {
        return insert(position, values.begin(), values.end());
    }
    int64_t* erase(const int64_t* position) { return erase(position, position + 1); }
    int64_t* erase(const int64_t* first, const int64_t* last);

private:
    void resize_on_heap(size_t ndim, int64_t value);  // resize() where either size is past kMaxDims

    int64_t inline_[kMaxDims] = {};  // the numbers while there are at most kMaxDims
    std::vector<int64_t> heap_;      // the numbers when there are more (then inline_ is unused)
    size_t ndim_ = 0;
};

bool operator==(const Shape& a, const Shape& b);
inline bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

std::string shape_str(const Shape& shape);                       // "[2, 3]"
int64_t shape_numel(const Shape& shape);                         // product, 1 for []; throws past 2^63 - 1
Shape contiguous_strides(const Shape& shape);                    // row-major strides
// NumPy broadcasting: align from the right, a size-1 dim stretches.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);
// Turns a possibly negative dim into 0..ndim-1, or throws naming the op.
int64_t normalize_dim(int64_t dim, int64_t ndim, std::string_view op);
void check_ndim(const Shape& shape, std::string_view op);     // <= kMaxDims

}  // namespace nc
