// ops_reduce.cpp — reductions, each forward next to its backward.
//
// A reduction maps many inputs to one output, so its backward spreads the
// output gradient back over the reduced dims. With keepdim=false those dims
// are gone from g; `unreduce` puts them back as size-1 dims so g broadcasts.
#include <algorithm>

#include "autograd/ops.h"

namespace nc {

using Grads = std::vector<Tensor>;

// Normalized, sorted dims (all dims when the list is empty).
static std::vector<int64_t> dims_or_all(const Tensor& x, std::vector<int64_t> dims, const char* op) {
    if (dims.empty())
        for (int64_t i = 0; i < x.dim(); ++i) dims.push_back(i);
    for (int64_t& d : dims) d = normalize_dim(d, x.dim(), op);
    std::sort(dims.begin(), dims.end());
    return dims;
}

// g has the reduced shape; give it back the reduced dims as size 1, then
// broadcast it to the input's shape.
static Tensor unreduce(const Tensor& g, const Shape& input_shape, const std::vector<int64_t>& dims, bool keepdim) {
    Tensor expanded = g;
    if (!keepdim)
        for (int64_t d : dims) expanded = raw::unsqueeze(expanded, d);  // ascending order keeps positions right
    return raw::expand(expanded, input_shape);
}

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
    dims = dims_or_all(x, dims, "sum");
    // Every input element contributes with weight 1: the gradient is g, copied out.
    return record("Sum", raw::sum(x, dims, keepdim), {x}, [shape = x.shape(), dims, keepdim](const Tensor& g) {
        return Grads{unreduce(g, shape, dims, keepdim)};
    });
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
    dims = dims_or_all(x, dims, "mean");
    int64_t count = 1;
    for (int64_t d : dims) count *= x.shape()[d];
    return record("Mean", raw::mean(x, dims, keepdim), {x}, [shape = x.shape(), dims, keepdim, count](const Tensor& g) {
        return Grads{raw::mul(unreduce(g, shape, dims, keepdim), 1.0 / (double)count)};
    });
}

Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
    dims = dims_or_all(x, dims, "max");
    Tensor out = raw::max(x, dims, keepdim);
    return record("Max", out, {x}, [x, dims, keepdim, out = out.detach()](const Tensor& g) {
        // 1 where x equals its max, divided by how many entries tie for it.
        Tensor is_max = raw::eq(x, unreduce(out, x.shape(), dims, keepdim));
        Tensor ties = raw::sum(is_max, dims, /*keepdim=*/true);
        return Grads{raw::div(raw::mul(is_max, unreduce(g, x.shape(), dims, keepdim)), ties)};
    });
}

Tensor var(const Tensor& x, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
    dims = dims_or_all(x, dims, "var");
    int64_t count = 1;
    for (int64_t d : dims) count *= x.shape()[d];
    // var = sum((x - mean)^2) / (n - c)  =>  dvar/dx = 2 (x - mean) / (n - c)
    // (the mean's own dependence on x drops out because sum(x - mean) = 0).
    return record("Var", raw::var(x, dims, correction, keepdim), {x},
                  [x, dims, keepdim, correction, count](const Tensor& g) {
                      Tensor centered = raw::sub(x, raw::mean(x, dims, /*keepdim=*/true));
                      Tensor scale = raw::mul(unreduce(g, x.shape(), dims, keepdim), 2.0 / (double)(count - correction));
                      return Grads{raw::mul(centered, scale)};
                  });
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return raw::argmax(x, dim, keepdim); }

}  // namespace nc
