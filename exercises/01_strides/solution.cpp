// The reference solution of exercise 1 (make test checks it with check.cpp).
#include "exercises/01_strides/strides.h"

namespace exercise {

int64_t element_offset(const Sizes& strides, int64_t offset, const Sizes& index) {
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    return offset;
}

Sizes contiguous_strides(const Sizes& shape) {
    Sizes strides(shape.size());
    int64_t step = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = step;
        step *= shape[d];
    }
    return strides;
}

bool is_contiguous(const Sizes& shape, const Sizes& strides) {
    int64_t expected = 1;  // the stride the next dim to the left must have
    for (size_t d = shape.size(); d-- > 0;) {
        if (shape[d] == 1) continue;
        if (strides[d] != expected) return false;
        expected *= shape[d];
    }
    return true;
}

}  // namespace exercise
