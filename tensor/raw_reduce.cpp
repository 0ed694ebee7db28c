// raw_reduce.cpp — sum, mean, max, var, argmax over one or more dims.
//
// Every reduction is done the same way: move the reduced dims to the end
// (a permute, free), make that contiguous, view it as a [rows, n] matrix, and
// let the backend reduce each row. Then give the result its final shape.
// One shortcut: a sum over leading dims of a contiguous tensor is a column
// sum, which needs no copy.
#include <algorithm>

#include "tensor/profile.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

// Sorted, de-duplicated, normalized dims; an empty list means every dim.
static std::vector<int64_t> reduced_dims(const Tensor& x, std::vector<int64_t> dims, const std::string& op) {
    if (dims.empty()) {
        for (int64_t i = 0; i < x.dim(); ++i) dims.push_back(i);
        return dims;
    }
    for (int64_t& d : dims) d = normalize_dim(d, x.dim(), op);
    std::sort(dims.begin(), dims.end());
    if (std::adjacent_find(dims.begin(), dims.end()) != dims.end())
        fail(op, "a dim appears twice in the list of dims to reduce");
    return dims;
}

static Shape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    Shape shape;
    for (int64_t i = 0; i < x.dim(); ++i) {
        bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
        if (!reduced) shape.push_back(x.shape()[i]);
        else if (keepdim) shape.push_back(1);
    }
    return shape;
}

// Permutes the reduced dims last and flattens to [rows, n].
static Tensor as_rows(const Tensor& x, const std::vector<int64_t>& dims) {
    std::vector<int64_t> order;
    int64_t rows = 1, n = 1;
    for (int64_t i = 0; i < x.dim(); ++i)
        if (std::find(dims.begin(), dims.end(), i) == dims.end()) { order.push_back(i); rows *= x.shape()[i]; }
    for (int64_t d : dims) { order.push_back(d); n *= x.shape()[d]; }
    Tensor moved = contiguous(permute(x, order));
    return view(moved, {rows, n});
}

static Tensor reduce(ReduceOp op, const Tensor& x, std::vector<int64_t> dims, bool keepdim, const std::string& name) {
    check_compute_dtype(x.dtype(), name);
    if (!is_floating(x.dtype()))
        fail(name, std::string("needs a floating-point tensor, got ") + dtype_name(x.dtype()));
    dims = reduced_dims(x, dims, name);
    // A sum over the leading dims of a contiguous tensor (a bias gradient:
    // [B, T, C] -> [C]) is a column sum of [B*T, C]: no transpose, no copy.
    bool leading = !dims.empty() && dims.back() == (int64_t)dims.size() - 1 && (int64_t)dims.size() < x.dim();
    if (op == ReduceOp::Sum && leading && x.is_contiguous() && x.numel() > 0) {
        int64_t n = 1;
        for (int64_t d : dims) n *= x.shape()[d];
        Tensor out = empty({x.numel() / n}, x.dtype(), x.device());
        ProfileScope scope(OpKind::Elementwise);
        backend_for(x.device()).sum_columns(view(x, {n, x.numel() / n}), out);
        return view(out, reduced_shape(x, dims, keepdim));
    }
    Tensor rows = as_rows(x, dims);
    if ((op != ReduceOp::Sum) && rows.shape()[1] == 0)
        fail(name, "cannot reduce over an empty dimension (shape " + shape_str(x.shape()) + ")");
    DType out_dtype = op == ReduceOp::Argmax ? kInt64 : x.dtype();
    Tensor out = empty({rows.shape()[0]}, out_dtype, x.device());
    ProfileScope scope(OpKind::Elementwise);
    backend_for(x.device()).reduce_rows(op, rows, out);
    return view(out, reduced_shape(x, dims, keepdim));
}

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
    return reduce(ReduceOp::Sum, x, std::move(dims), keepdim, "sum");
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
    Tensor total = sum(x, dims, keepdim);
    int64_t count = total.numel() == 0 ? 0 : x.numel() / total.numel();
    return mul(total, 1.0 / (double)count);
}

Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
    return reduce(ReduceOp::Max, x, std::move(dims), keepdim, "max");
}

Tensor var(const Tensor& x, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
    // Two passes (mean first, then squared deviations) are more accurate than
    // E[x^2] - E[x]^2, which cancels catastrophically when the mean is large.
    Tensor mu = mean(x, dims, /*keepdim=*/true);
    Tensor centered = sub(x, mu);
    Tensor ss = sum(mul(centered, centered), dims, keepdim);
    int64_t count = ss.numel() == 0 ? 0 : x.numel() / ss.numel();
    if (count - correction <= 0)
        fail("var", "needs more than " + std::to_string(correction) + " elements per reduction, got " +
                        std::to_string(count) + " (shape " + shape_str(x.shape()) + ")");
    return mul(ss, 1.0 / (double)(count - correction));
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
    return reduce(ReduceOp::Argmax, x, {dim}, keepdim, "argmax");
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
    if (grad.shape() == shape) return grad;
    int64_t extra = grad.dim() - (int64_t)shape.size();
    if (extra < 0) fail("sum_to", "cannot sum shape " + shape_str(grad.shape()) + " to the larger " + shape_str(shape));
    // Leading dims that broadcasting added, and dims that were 1 and got stretched.
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < grad.dim(); ++i)
        if (i < extra || (shape[i - extra] == 1 && grad.shape()[i] != 1)) dims.push_back(i);
    Tensor summed = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
    return reshape(summed, shape);
}

}  // namespace raw
}  // namespace nc
