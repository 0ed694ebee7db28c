#include "tensor/shape.h"

#include <algorithm>

#include "tensor/error.h"

namespace nc {

Shape::Shape(const int64_t* first, const int64_t* last) {
    resize(last - first);
    std::copy(first, last, data());
}

void Shape::resize_on_heap(size_t ndim, int64_t value) {
    if (ndim_ <= kMaxDims) {  // grows past kMaxDims: move the numbers to the heap
        heap_.assign(inline_, inline_ + ndim_);
        heap_.resize(ndim, value);
    } else if (ndim <= kMaxDims) {  // shrinks back: move the numbers inside
        std::copy(heap_.begin(), heap_.begin() + ndim, inline_);
        heap_.clear();
    } else {
        heap_.resize(ndim, value);
    }
    ndim_ = ndim;
}

int64_t* Shape::insert(const int64_t* position, const int64_t* first, const int64_t* last) {
    // Copy the inserted numbers first: they may point into this shape.
    // (A Shape: no heap for up to kMaxDims of them.)
    const Shape inserted(first, last);
    size_t at = position - data(), count = inserted.size(), old_ndim = ndim_;
    resize(old_ndim + count);
    int64_t* numbers = data();
    std::copy_backward(numbers + at, numbers + old_ndim, numbers + old_ndim + count);
    std::copy(inserted.begin(), inserted.end(), numbers + at);
    return numbers + at;
}

int64_t* Shape::insert(const int64_t* position, int64_t value) {
    size_t at = position - data(), old_ndim = ndim_;
    resize(old_ndim + 1);
    int64_t* numbers = data();
    std::copy_backward(numbers + at, numbers + old_ndim, numbers + old_ndim + 1);
    numbers[at] = value;
    return numbers + at;
}

int64_t* Shape::erase(const int64_t* first, const int64_t* last) {
    size_t at = first - data(), count = last - first;
    int64_t* numbers = data();
    std::copy(numbers + at + count, numbers + ndim_, numbers + at);
    resize(ndim_ - count);
    return data() + at;
}

bool operator==(const Shape& a, const Shape& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

std::string shape_str(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t shape_numel(const Shape& shape) {
    for (int64_t d : shape)
        if (d == 0) return 0;  // [2^32, 2^32, 0] is empty, whatever the other dims multiply to
    int64_t n = 1;
    for (int64_t d : shape)
        if (d < 0 || __builtin_mul_overflow(n, d, &n))
            throw Error("shape " + shape_str(shape) + (d < 0 ? " has a negative size" : " has more than 2^63 elements"));
    return n;
}

Shape contiguous_strides(const Shape& shape) {
    Shape strides(shape.size());
    int64_t step = 1;
    for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
        strides[i] = step;
        step *= shape[i];
    }
    return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
    size_t ndim = std::max(a.size(), b.size());
    Shape out(ndim);
    for (size_t i = 0; i < ndim; ++i) {
        // Align from the right: missing leading dims count as size 1.
        int64_t da = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
        int64_t db = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
        if (da != db && da != 1 && db != 1)
            fail(op, "shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together (dim " +
                         std::to_string(i) + ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
        out[i] = da == 1 ? db : da;
    }
    return out;
}

int64_t normalize_dim(int64_t dim, int64_t ndim, std::string_view op) {
    int64_t d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        fail(op, "dim " + std::to_string(dim) + " is out of range for a tensor with " + std::to_string(ndim) +
                     " dims");
    return d;
}

void check_ndim(const Shape& shape, std::string_view op) {
    if ((int)shape.size() > kMaxDims)
        fail(op, "shape " + shape_str(shape) + " has " + std::to_string(shape.size()) + " dims; at most " +
                     std::to_string(kMaxDims) + " are supported");
    for (int64_t d : shape)
        if (d < 0) fail(op, "shape " + shape_str(shape) + " has a negative size");
}

}  // namespace nc
