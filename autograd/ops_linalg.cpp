// ops_linalg.cpp — matmul, softmax and indexing, each forward next to its backward.
#include "autograd/ops.h"

namespace nc {

using Grads = std::vector<Tensor>;

Tensor matmul(const Tensor& a, const Tensor& b) {
    // Vectors are promoted to matrices with differentiable unsqueeze/squeeze,
    // so the core below only deals with [..., M, K] @ [..., K, N].
    if (a.dim() == 1 && b.dim() >= 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
    if (b.dim() == 1 && a.dim() >= 2) return squeeze(matmul(a, unsqueeze(b, 1)), -1);

    // C = A B  =>  dA = dC B^T,  dB = A^T dC  (then summed over broadcast batch dims)
    return record("MatMul", raw::matmul(a, b), {a, b}, [a, b](const Tensor& dc) {
        Tensor da, db;
        if (a.requires_grad()) da = raw::sum_to(raw::matmul(dc, raw::transpose(b, -1, -2)), a.shape());
        if (b.requires_grad()) db = raw::sum_to(raw::matmul(raw::transpose(a, -1, -2), dc), b.shape());
        return Grads{da, db};
    });
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
    // y = x w^T + b with x flattened to X [M, K] (M = all leading dims) and
    // G = dL/dy as [M, N]:  dX = G w,  dw = G^T X,  db = the column sums of G.
    // As 2-D products, dw is one GEMM with inner size M, where matmul's
    // batched rule would first make one [K, N] product per batch and sum them.
    std::vector<Tensor> inputs = {x, w};
    if (bias.defined()) inputs.push_back(bias);
    return record("Linear", raw::linear(x, w, bias), inputs, [x, w, bias](const Tensor& g) {
        int64_t K = x.size(-1), N = w.size(0), M = x.numel() / std::max<int64_t>(1, K);
        Tensor g2 = raw::reshape(g, {M, N});
        Grads grads(bias.defined() ? 3 : 2);
        if (x.requires_grad()) grads[0] = raw::reshape(raw::matmul(g2, w), x.shape());
        if (w.requires_grad()) grads[1] = raw::matmul(raw::transpose(g2, 0, 1), raw::reshape(x, {M, K}));
        if (bias.defined() && bias.requires_grad()) grads[2] = raw::sum(g2, {0});
        return grads;
    });
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, DType operand_dtype) {
    if (!is_16bit_float(operand_dtype)) return linear(x, w, bias);  // float32 (or float64): nothing rounded
    if (x.dtype() != kFloat32)
        fail("linear", std::string("rounds float32 operands to bfloat16 or float16, got ") + dtype_name(x.dtype()) +
                           " operands and " + dtype_name(operand_dtype));
    // The same products as linear's, each operand rounded first:
    //   y  = round(x) round(w)^T + b
    //   dX = round(G) round(w),  dw = round(G)^T round(X),  db = the column sums of G.
    // The gradient of the rounding itself is taken as 1 (a straight-through
    // estimate, what every mixed-precision trainer does): the rounding is
    // noise of relative size 2^-9 (bfloat16) or 2^-12 (float16), not a
    // function to differentiate.
    Tensor x16 = raw::to_dtype(x, operand_dtype), w16 = raw::to_dtype(w, operand_dtype);
    std::vector<Tensor> inputs = {x, w};
    if (bias.defined()) inputs.push_back(bias);
    bool need_x = x.requires_grad(), need_w = w.requires_grad();
    return record("Linear", raw::linear(x16, w16, bias), inputs,
                  [x16, w16, bias, operand_dtype, need_x, need_w](const Tensor& g) {
        int64_t K = x16.size(-1), N = w16.size(0), M = x16.numel() / std::max<int64_t>(1, K);
        Tensor g2 = raw::reshape(g, {M, N}), g16 = raw::to_dtype(g2, operand_dtype);
        Grads grads(bias.defined() ? 3 : 2);
        if (need_x) grads[0] = raw::reshape(raw::matmul(g16, w16), x16.shape());
        if (need_w) grads[1] = raw::matmul(raw::transpose(g16, 0, 1), raw::reshape(x16, {M, K}));
        if (bias.defined() && bias.requires_grad()) grads[2] = raw::sum(g2, {0});
        return grads;
    });
}

Tensor softmax(const Tensor& x, int64_t dim) {
    // y = softmax(x): dy_i/dx_j = y_i (delta_ij - y_j), so
    // dx = y * (g - sum(g * y)) with the sum along `dim`.
    Tensor y = raw::softmax(x, dim);
    return record("Softmax", y, {x}, [y = y.detach(), dim](const Tensor& g) {
        Tensor dot = raw::sum(raw::mul(g, y), {dim}, /*keepdim=*/true);
        return Grads{raw::mul(y, raw::sub(g, dot))};
    });
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
    // y = x - logsumexp(x): dy_i/dx_j = delta_ij - softmax(x)_j, so
    // dx = g - softmax(x) * sum(g) with softmax(x) = exp(y).
    Tensor y = raw::log_softmax(x, dim);
    return record("LogSoftmax", y, {x}, [y = y.detach(), dim](const Tensor& g) {
        Tensor total = raw::sum(g, {dim}, /*keepdim=*/true);
        return Grads{raw::sub(g, raw::mul(raw::exp(y), total))};
    });
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
    // out = x[..., index, ...]: each picked element sends its gradient home;
    // an element picked twice receives both.
    return record("Gather", raw::gather(x, dim, index), {x}, [shape = x.shape(), dim, index](const Tensor& g) {
        return Grads{raw::scatter_add(shape, dim, index, g)};
    });
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
    return record("IndexSelect", raw::index_select(x, dim, index), {x},
                  [shape = x.shape(), dim, index](const Tensor& g) {
                      return Grads{raw::index_add(shape, dim, index, raw::contiguous(g))};
                  });
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
    if (weight.dim() != 2) fail("embedding", "weight must be [vocab, channels], got " + shape_str(weight.shape()));
    if (ids.dtype() != kInt64)
        fail("embedding", std::string("ids must be int64 (from_indices), got ") + dtype_name(ids.dtype()));
    // Look up the flattened ids, then give the result the ids' shape + [C].
    Shape shape = ids.shape();
    shape.push_back(weight.shape()[1]);
    return reshape(index_select(weight, 0, raw::reshape(ids, {ids.numel()})), shape);
}

}  // namespace nc
