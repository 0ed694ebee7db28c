// views.cpp — ops that return a new view of the same storage.
//
// None of these copies data: each computes a new (shape, strides, offset)
// triple. That is why `transpose` is free, and also why its result is not
// contiguous: walking it in row-major order jumps around in memory.
#include <algorithm>
#include <utility>

#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

// Replaces one -1 in `shape` by whatever makes the element count match.
static Shape infer_shape(Shape shape, int64_t numel, const std::string& op, const Shape& from) {
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (infer_at >= 0) fail(op, "only one dimension can be -1, got " + shape_str(shape));
            infer_at = (int64_t)i;
        } else if (shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known)) {
            fail(op, "cannot reshape a tensor of shape " + shape_str(from) + " into shape " + shape_str(shape));
        }
    }
    if (infer_at >= 0 && known != 0 && numel % known == 0) shape[infer_at] = numel / known;
    bool negative = false;
    for (int64_t d : shape) negative = negative || d < 0;
    // A -1 that was filled in always fits, so on failure `shape` is still the
    // shape as it was asked for.
    if (negative || shape_numel(shape) != numel)
        fail(op, "cannot reshape a tensor of shape " + shape_str(from) + " (" + std::to_string(numel) +
                     " elements) into shape " + shape_str(shape));
    check_ndim(shape, op);
    return shape;
}

// Strides for viewing `t` with `shape` without copying, or an empty result if
// the memory layout does not allow it. Works on groups of old dims that are
// contiguous with each other (the same idea as PyTorch's computeStride).
static bool view_strides(const Tensor& t, const Shape& shape, Shape& out) {
    const Shape& old_shape = t.shape();
    const Shape& old_strides = t.strides();
    out = Shape(shape.size(), 0);
    if (t.numel() == 0 || t.dim() == 0) { out = contiguous_strides(shape); return true; }
    int64_t new_dim = (int64_t)shape.size() - 1;
    int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
    int64_t tensor_numel = 1, view_numel = 1;
    for (int64_t d = (int64_t)old_shape.size() - 1; d >= 0; --d) {
        tensor_numel *= old_shape[d];
        // The end of a chunk: the next-outer dim is not laid out right after this one.
        if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
            while (new_dim >= 0 && (view_numel < tensor_numel || shape[new_dim] == 1)) {
                out[new_dim] = view_numel * chunk_base_stride;
                view_numel *= shape[new_dim];
                --new_dim;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base_stride = old_strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if (new_dim != -1) return false;
    return true;
}

Tensor view(const Tensor& t, Shape shape) {
    shape = infer_shape(std::move(shape), t.numel(), "view", t.shape());
    Shape strides;
    if (!view_strides(t, shape, strides))
        fail("view", "cannot view a tensor of shape " + shape_str(t.shape()) + " with strides " +
                         shape_str(t.strides()) + " as " + shape_str(shape) +
                         " without copying; call contiguous() first or use reshape");
    return make_view(t, std::move(shape), std::move(strides), t.offset());
}

Tensor reshape(const Tensor& t, Shape shape) {
    shape = infer_shape(std::move(shape), t.numel(), "reshape", t.shape());
    Shape strides;
    if (view_strides(t, shape, strides)) return make_view(t, std::move(shape), std::move(strides), t.offset());
    return view(contiguous(t), shape);
}

Tensor permute(const Tensor& t, std::vector<int64_t> dims) {
    int64_t n = t.dim();
    if ((int64_t)dims.size() != n)
        fail("permute", "got " + std::to_string(dims.size()) + " dims for a tensor of shape " + shape_str(t.shape()));
    uint64_t seen = 0;  // bit d: dim d is taken (a tensor has at most kMaxDims dims)
    Shape shape(n), strides(n);
    for (int64_t i = 0; i < n; ++i) {
        int64_t d = normalize_dim(dims[i], n, "permute");
        if ((seen >> d) & 1) fail("permute", "dim " + std::to_string(d) + " appears twice in " + shape_str(dims));
        seen |= uint64_t(1) << d;
        shape[i] = t.shape()[d];
        strides[i] = t.strides()[d];
    }
    return make_view(t, std::move(shape), std::move(strides), t.offset());
}

Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1) {
    int64_t n = t.dim();
    dim0 = normalize_dim(dim0, n, "transpose");
    dim1 = normalize_dim(dim1, n, "transpose");
    std::vector<int64_t> dims(n);
    for (int64_t i = 0; i < n; ++i) dims[i] = i;
    std::swap(dims[dim0], dims[dim1]);
    return permute(t, std::move(dims));
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
    dim = normalize_dim(dim, t.dim(), "narrow");
    int64_t size = t.shape()[dim];
    if (start < 0) start += size;
    if (start < 0 || length < 0 || start + length > size)
        fail("narrow", "range [" + std::to_string(start) + ", " + std::to_string(start + length) +
                           ") is outside dim " + std::to_string(dim) + " of size " + std::to_string(size) +
                           " (shape " + shape_str(t.shape()) + ")");
    Shape shape = t.shape();
    shape[dim] = length;
    return make_view(t, std::move(shape), t.strides(), t.offset() + start * t.strides()[dim]);
}

Tensor expand(const Tensor& t, const Shape& shape) {
    check_ndim(shape, "expand");
    int64_t n = (int64_t)shape.size(), extra = n - t.dim();
    if (extra < 0)
        fail("expand", "cannot expand shape " + shape_str(t.shape()) + " to fewer dims " + shape_str(shape));
    Shape strides(n, 0);
    for (int64_t i = 0; i < n; ++i) {
        if (i < extra) continue;  // new leading dims: stride 0 repeats the data
        int64_t have = t.shape()[i - extra];
        if (have == shape[i]) strides[i] = t.strides()[i - extra];
        else if (have != 1)
            fail("expand", "cannot expand shape " + shape_str(t.shape()) + " to " + shape_str(shape) +
                               " (only size-1 dims can grow)");
    }
    return make_view(t, shape, std::move(strides), t.offset());
}

Tensor squeeze(const Tensor& t, int64_t dim) {
    dim = normalize_dim(dim, t.dim(), "squeeze");
    if (t.shape()[dim] != 1) return t.detach();
    Shape shape = t.shape(), strides = t.strides();
    shape.erase(shape.begin() + dim);
    strides.erase(strides.begin() + dim);
    return make_view(t, std::move(shape), std::move(strides), t.offset());
}

Tensor squeeze(const Tensor& t) {
    Shape shape, strides;
    for (int64_t i = 0; i < t.dim(); ++i) {
        if (t.shape()[i] == 1) continue;
        shape.push_back(t.shape()[i]);
        strides.push_back(t.strides()[i]);
    }
    return make_view(t, std::move(shape), std::move(strides), t.offset());
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
    dim = normalize_dim(dim, t.dim() + 1, "unsqueeze");
    Shape shape = t.shape(), strides = t.strides();
    // Any stride works for a size-1 dim; this one keeps contiguous tensors contiguous.
    int64_t stride = dim < t.dim() ? t.strides()[dim] * t.shape()[dim] : 1;
    shape.insert(shape.begin() + dim, 1);
    strides.insert(strides.begin() + dim, stride);
    check_ndim(shape, "unsqueeze");
    return make_view(t, std::move(shape), std::move(strides), t.offset());
}

}  // namespace raw
}  // namespace nc
