// raw_linalg.cpp — matmul, softmax, indexing (gather/index_select and their
// reverses), and joining (cat/stack).
#include <algorithm>

#include "tensor/profile.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

// ---- matmul --------------------------------------------------------------------

// The profile's name for a product of a [.., M, K] and b [.., K, N]:
// "1024 x 256 x 768 NT" (T: that operand is a transposed view, its rows not
// contiguous), with "32 x " in front for a batch of 32.
static std::string gemm_shape_label(int64_t batch, int64_t M, int64_t K, int64_t N, const Tensor& a,
                                    const Tensor& b) {
    auto layout = [](const Tensor& t) { return t.size(-1) > 1 && t.strides().back() != 1 ? "T" : "N"; };
    std::string label = batch > 1 ? std::to_string(batch) + " x " : std::string();
    return label + std::to_string(M) + " x " + std::to_string(K) + " x " + std::to_string(N) + " " + layout(a) +
           layout(b);
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
    if (a_in.dim() == 0 || b_in.dim() == 0)
        fail("matmul", "both operands need at least 1 dim, got " + shape_str(a_in.shape()) + " and " +
                           shape_str(b_in.shape()));
    if (a_in.device() != b_in.device()) fail("matmul", "operands are on different devices");
    // Two 16-bit operands (bfloat16 or float16) give a float32 product:
    // mixed precision's matrix product (tensor/cpu/gemm_16bit.h).
    if (a_in.dtype() != b_in.dtype() || !(is_floating(a_in.dtype()) || is_16bit_float(a_in.dtype())))
        fail("matmul", std::string("operands must share a floating dtype, got ") + dtype_name(a_in.dtype()) +
                           " and " + dtype_name(b_in.dtype()));
    // NumPy rule for vectors: a 1-D left operand is a row [1, K], a 1-D right
    // operand a column [K, 1]; the added dim is removed from the result.
    Tensor a = a_in.dim() == 1 ? unsqueeze(a_in, 0) : a_in;
    Tensor b = b_in.dim() == 1 ? unsqueeze(b_in, 1) : b_in;
    int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
    if (b.size(-2) != K)
        fail("matmul", "shapes " + shape_str(a_in.shape()) + " and " + shape_str(b_in.shape()) +
                           " do not match: inner dims " + std::to_string(K) + " and " + std::to_string(b.size(-2)) +
                           " differ");
    Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
    Shape batch = broadcast_shapes(batch_a, batch_b, "matmul (batch dims)");
    Shape shape_a = batch, shape_b = batch, shape_out = batch;
    shape_a.insert(shape_a.end(), {M, K});
    shape_b.insert(shape_b.end(), {K, N});
    shape_out.insert(shape_out.end(), {M, N});
    check_ndim(shape_out, "matmul");
    Tensor out = empty(shape_out, product_dtype(a.dtype()), a.device());
    ProfileScope scope(OpKind::Gemm, 2.0 * (double)out.numel() * (double)K,
                       is_profiling() ? gemm_shape_label(out.numel() / std::max<int64_t>(1, M * N), M, K, N, a, b)
                                      : std::string());
    backend_for(a.device()).matmul(expand(a, shape_a), expand(b, shape_b), out, /*accumulate=*/false, Tensor());
    if (a_in.dim() == 1) out = squeeze(out, -2);
    if (b_in.dim() == 1) out = squeeze(out, -1);
    return out;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
    if (x.dim() == 0 || w.dim() != 2 || x.size(-1) != w.size(1))
        fail("linear", "expects x [..., K] and w [N, K], got " + shape_str(x.shape()) + " and " + shape_str(w.shape()));
    if (x.device() != w.device() || (bias.defined() && bias.device() != x.device()))
        fail("linear", "x, w and bias are on different devices");
    // 16-bit x and w (the same format) give a float32 output; the bias is then float32.
    if (x.dtype() != w.dtype() || !(is_floating(x.dtype()) || is_16bit_float(x.dtype())) ||
        (bias.defined() && bias.dtype() != product_dtype(x.dtype())))
        fail("linear", std::string("x and w must share a floating dtype and the bias must be the output's, got x ") +
                           dtype_name(x.dtype()) + ", w " + dtype_name(w.dtype()) +
                           (bias.defined() ? std::string(", bias ") + dtype_name(bias.dtype()) : std::string()));
    int64_t K = x.size(-1), N = w.size(0), M = x.numel() / std::max<int64_t>(1, K);
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != N))
        fail("linear", "bias must be [" + std::to_string(N) + "], got " + shape_str(bias.shape()));
    Shape shape_out = x.shape();
    shape_out.back() = N;
    // The bias goes into the product (Backend::matmul): each block of the
    // output starts as the bias, and the GEMM adds x w^T to it. No pass of
    // its own over the output, before or after.
    Tensor out = empty({M, N}, product_dtype(x.dtype()), x.device());
    ProfileScope scope(OpKind::Gemm, 2.0 * (double)M * (double)N * (double)K,
                       is_profiling() ? gemm_shape_label(1, M, K, N, x, transpose(w, 0, 1)) : std::string());
    backend_for(x.device()).matmul(reshape(x, {M, K}), transpose(w, 0, 1), out, /*accumulate=*/false,
                                   bias.defined() ? contiguous(bias) : Tensor());
    return view(out, shape_out);
}

// ---- softmax -------------------------------------------------------------------

static Tensor softmax_impl(const Tensor& x, int64_t dim, bool log, const std::string& op) {
    check_compute_dtype(x.dtype(), op);
    if (!is_floating(x.dtype())) fail(op, std::string("needs a floating-point tensor, got ") + dtype_name(x.dtype()));
    if (x.dim() == 0) return view(softmax_impl(unsqueeze(x, 0), 0, log, op), {});
    dim = normalize_dim(dim, x.dim(), op);
    // Move `dim` last so each softmax is one contiguous row.
    Tensor moved = contiguous(transpose(x, dim, -1));
    int64_t n = moved.size(-1);
    Tensor rows = view(moved, {n == 0 ? 0 : moved.numel() / n, n});
    Tensor out = empty(rows.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Elementwise);
    backend_for(x.device()).softmax_rows(rows, out, log);
    return contiguous(transpose(view(out, moved.shape()), dim, -1));
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false, "softmax"); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true, "log_softmax"); }

// ---- indexing ------------------------------------------------------------------

static void check_index(const Tensor& index, Device data_device, const std::string& op) {
    if (index.dtype() != kInt64)
        fail(op, std::string("index must be an int64 tensor (from_indices), got ") + dtype_name(index.dtype()));
    if (index.device() != data_device)
        fail(op, "the index is on " + index.device().str() + " but the data is on " + data_device.str() +
                     " (move one with .to())");
}

// Bounds check on the host: an out-of-range index must be an error, not a
// read past the end of memory. On the GPU the kernels check their indices
// themselves (reading them here would make every lookup wait for the GPU)
// and report a bad one at the next copy to the host; see cuda/cuda_common.cuh.
static void check_bounds(const Tensor& index, int64_t size, const std::string& op, int64_t dim) {
    if (index.device() != kCPU) return;
    for (int64_t i : index.to_int_vector())
        if (i < 0 || i >= size)
            fail(op, "index " + std::to_string(i) + " is out of range for dim " + std::to_string(dim) +
                         " of size " + std::to_string(size));
}

// Views a contiguous tensor as [outer, shape[dim], inner].
static Tensor as_3d(const Tensor& t, int64_t dim) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < dim; ++i) outer *= t.shape()[i];
    for (int64_t i = dim + 1; i < t.dim(); ++i) inner *= t.shape()[i];
    return view(contiguous(t), {outer, t.shape()[dim], inner});
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
    check_compute_dtype(x.dtype(), "index_select");
    check_index(index, x.device(), "index_select");
    if (index.dim() != 1) fail("index_select", "index must be 1-D, got shape " + shape_str(index.shape()));
    dim = normalize_dim(dim, x.dim(), "index_select");
    check_bounds(index, x.shape()[dim], "index_select", dim);
    Shape shape = x.shape();
    shape[dim] = index.numel();
    Tensor out = empty(shape, x.dtype(), x.device());
    ProfileScope scope(OpKind::Movement);
    backend_for(x.device()).index_select(as_3d(x, dim), contiguous(index), as_3d(out, dim));
    return out;
}

Tensor index_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
    check_compute_dtype(src.dtype(), "index_add");
    check_index(index, src.device(), "index_add");
    dim = normalize_dim(dim, (int64_t)shape.size(), "index_add");
    Shape expected = shape;
    expected[dim] = index.numel();
    if (src.shape() != expected)
        fail("index_add", "source shape " + shape_str(src.shape()) + " should be " + shape_str(expected));
    check_bounds(index, shape[dim], "index_add", dim);
    Tensor out = zeros(shape, src.dtype(), src.device());
    ProfileScope scope(OpKind::Movement);
    backend_for(src.device()).index_add(as_3d(out, dim), contiguous(index), as_3d(src, dim));
    return out;
}

// gather/scatter_add index: same number of dims as x, and every dim except
// `dim` no larger than x's (as in PyTorch); we require them equal, which is
// what cross-entropy and friends need and keeps the kernel a simple 3-D loop.
static void check_gather_index(const Shape& x_shape, Device device, int64_t dim, const Tensor& index,
                               const std::string& op) {
    check_index(index, device, op);
    bool ok = index.dim() == (int64_t)x_shape.size();
    for (int64_t i = 0; ok && i < index.dim(); ++i)
        if (i != dim && index.shape()[i] != x_shape[i]) ok = false;
    if (!ok)
        fail(op, "index shape " + shape_str(index.shape()) + " must match input shape " + shape_str(x_shape) +
                     " in every dim except dim " + std::to_string(dim));
    check_bounds(index, x_shape[dim], op, dim);
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
    check_compute_dtype(x.dtype(), "gather");
    dim = normalize_dim(dim, x.dim(), "gather");
    check_gather_index(x.shape(), x.device(), dim, index, "gather");
    Tensor out = empty(index.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Movement);
    backend_for(x.device()).gather(as_3d(x, dim), as_3d(index, dim), as_3d(out, dim));
    return out;
}

Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
    check_compute_dtype(src.dtype(), "scatter_add");
    dim = normalize_dim(dim, (int64_t)shape.size(), "scatter_add");
    check_gather_index(shape, src.device(), dim, index, "scatter_add");
    if (src.shape() != index.shape())
        fail("scatter_add", "source shape " + shape_str(src.shape()) + " must equal index shape " +
                                shape_str(index.shape()));
    Tensor out = zeros(shape, src.dtype(), src.device());
    ProfileScope scope(OpKind::Movement);
    backend_for(src.device()).scatter_add(as_3d(out, dim), as_3d(index, dim), as_3d(src, dim));
    return out;
}

// ---- joining -------------------------------------------------------------------

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
    if (tensors.empty()) fail("cat", "needs at least one tensor");
    const Tensor& first = tensors[0];
    dim = normalize_dim(dim, first.dim(), "cat");
    Shape shape = first.shape();
    shape[dim] = 0;
    for (size_t k = 0; k < tensors.size(); ++k) {
        const Tensor& t = tensors[k];
        bool ok = t.dim() == first.dim() && t.dtype() == first.dtype() && t.device() == first.device();
        for (int64_t i = 0; ok && i < t.dim(); ++i)
            if (i != dim && t.shape()[i] != first.shape()[i]) ok = false;
        if (!ok)
            fail("cat", "tensor " + std::to_string(k) + " has shape " + shape_str(t.shape()) + " (" +
                            dtype_name(t.dtype()) + "), incompatible with tensor 0's " + shape_str(first.shape()) +
                            " (" + dtype_name(first.dtype()) + ") outside dim " + std::to_string(dim));
        shape[dim] += t.shape()[dim];
    }
    Tensor out = empty(shape, first.dtype(), first.device());
    int64_t start = 0;
    for (const Tensor& t : tensors) {
        copy_(narrow(out, dim, start, t.shape()[dim]), t);
        start += t.shape()[dim];
    }
    return out;
}

int64_t check_stack(const std::vector<Tensor>& tensors, int64_t dim) {
    if (tensors.empty()) fail("stack", "needs at least one tensor");
    for (size_t k = 0; k < tensors.size(); ++k)
        if (tensors[k].shape() != tensors[0].shape())
            fail("stack", "all tensors need the same shape; tensor " + std::to_string(k) + " is " +
                              shape_str(tensors[k].shape()) + ", tensor 0 is " + shape_str(tensors[0].shape()));
    return normalize_dim(dim, tensors[0].dim() + 1, "stack");
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
    dim = check_stack(tensors, dim);
    std::vector<Tensor> expanded;
    for (const Tensor& t : tensors) expanded.push_back(unsqueeze(t, dim));
    return cat(expanded, dim);
}

}  // namespace raw
}  // namespace nc
