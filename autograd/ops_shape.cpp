// ops_shape.cpp — views, reshapes and joins, each forward next to its backward.
//
// These ops move numbers around without changing them, so the backward of
// each one just moves the gradient back: the inverse permutation, the
// original shape, the slice of the gradient that belongs to each input.
#include "autograd/ops.h"

namespace nc {

using Grads = std::vector<Tensor>;

Tensor reshape(const Tensor& x, Shape shape) {
    return record("Reshape", raw::reshape(x, std::move(shape)), {x},
                  [in_shape = x.shape()](const Tensor& g) { return Grads{raw::reshape(g, in_shape)}; });
}

Tensor view(const Tensor& x, Shape shape) {
    return record("View", raw::view(x, std::move(shape)), {x},
                  [in_shape = x.shape()](const Tensor& g) { return Grads{raw::reshape(g, in_shape)}; });
}

Tensor permute(const Tensor& x, std::vector<int64_t> dims) {
    Tensor out = raw::permute(x, dims);
    // out dim i is x dim dims[i], so the inverse sends dim dims[i] back to i.
    std::vector<int64_t> inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) inverse[normalize_dim(dims[i], x.dim(), "permute")] = (int64_t)i;
    return record("Permute", out, {x}, [inverse](const Tensor& g) { return Grads{raw::permute(g, inverse)}; });
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
    return record("Transpose", raw::transpose(x, dim0, dim1), {x},
                  [dim0, dim1](const Tensor& g) { return Grads{raw::transpose(g, dim0, dim1)}; });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
    Tensor out = raw::narrow(x, dim, start, length);
    // The slice's gradient lands in its place; the rest of x got none.
    return record("Narrow", out, {x}, [in_shape = x.shape(), dim, start, length](const Tensor& g) {
        Tensor dx = raw::zeros(in_shape, g.dtype(), g.device());
        raw::copy_(raw::narrow(dx, dim, start, length), g);
        return Grads{dx};
    });
}

Tensor expand(const Tensor& x, const Shape& shape) {
    // An expanded element is read many times: its gradients add up.
    return record("Expand", raw::expand(x, shape), {x},
                  [in_shape = x.shape()](const Tensor& g) { return Grads{raw::sum_to(g, in_shape)}; });
}

Tensor squeeze(const Tensor& x, int64_t dim) {
    return record("Squeeze", raw::squeeze(x, dim), {x},
                  [in_shape = x.shape()](const Tensor& g) { return Grads{raw::reshape(g, in_shape)}; });
}

Tensor squeeze(const Tensor& x) {
    return record("Squeeze", raw::squeeze(x), {x},
                  [in_shape = x.shape()](const Tensor& g) { return Grads{raw::reshape(g, in_shape)}; });
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
    return record("Unsqueeze", raw::unsqueeze(x, dim), {x},
                  [in_shape = x.shape()](const Tensor& g) { return Grads{raw::reshape(g, in_shape)}; });
}

Tensor contiguous(const Tensor& x) {
    return record("Contiguous", raw::contiguous(x), {x}, [](const Tensor& g) { return Grads{g}; });
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
    if (x.dim() == 0) return reshape(x, {1});
    start_dim = normalize_dim(start_dim, x.dim(), "flatten");
    end_dim = normalize_dim(end_dim, x.dim(), "flatten");
    if (start_dim > end_dim) fail("flatten", "start_dim comes after end_dim");
    Shape shape;
    for (int64_t i = 0; i < start_dim; ++i) shape.push_back(x.shape()[i]);
    int64_t merged = 1;
    for (int64_t i = start_dim; i <= end_dim; ++i) merged *= x.shape()[i];
    shape.push_back(merged);
    for (int64_t i = end_dim + 1; i < x.dim(); ++i) shape.push_back(x.shape()[i]);
    return reshape(x, shape);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
    Tensor out = raw::cat(tensors, dim);
    dim = normalize_dim(dim, out.dim(), "cat");
    std::vector<int64_t> sizes;
    for (const Tensor& t : tensors) sizes.push_back(t.shape()[dim]);
    // Input k's gradient is the slice of g where input k was copied to.
    return record("Cat", out, tensors, [dim, sizes](const Tensor& g) {
        Grads grads;
        int64_t start = 0;
        for (int64_t size : sizes) {
            grads.push_back(raw::narrow(g, dim, start, size));
            start += size;
        }
        return grads;
    });
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
    // stack = unsqueeze each, then cat: both differentiable, so no new backward.
    dim = raw::check_stack(tensors, dim);
    std::vector<Tensor> expanded;
    for (const Tensor& t : tensors) expanded.push_back(unsqueeze(t, dim));
    return cat(expanded, dim);
}

}  // namespace nc
