// raw_ops.h — tensor operations that never record an autograd graph.
//
// These are the building blocks: each validates its arguments (throwing
// nc::Error naming the op and shapes), allocates the output, and dispatches to
// the device's backend (backend.h). Differentiable ops in autograd/ compute
// their forward *and* backward passes with these, so backward runs on
// whatever device the tensors live on.
//
// Users normally call the differentiable versions in autograd/ops.h; raw ops
// are for code that must not touch the graph (optimizers, initialisers,
// gradient formulas).
//
// The aliasing rule. An op writes only into the tensors its caller hands it
// as outputs: copy_'s and fill_'s dst, the parameters and state of
// adamw_update (raw_optim.h), a backend kernel's `out`. Every other argument is
// read-only, whatever shape it has. The result of an op has storage of its
// own, except for these, which share their input's storage on purpose:
//   - the views below (view, permute, transpose, narrow, expand, squeeze,
//     unsqueeze), and reshape when the strides allow a view;
//   - contiguous(t) when t is already contiguous, to_dtype / to_device when
//     t already has that dtype / device, and sum_to(g, shape) when g already
//     has that shape: each returns t itself.
// So never write into such a result unless you own its input: an op that
// needs a private buffer to accumulate into (a GEMM's C, say) takes a
// clone(), never a contiguous() (tests/test_aliasing.cpp).
#pragma once

#include <vector>

#include "tensor/backend.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace nc {
namespace raw {

// ---- creation ---------------------------------------------------------------
Tensor zeros(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
Tensor ones(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
Tensor full(const Shape& shape, double value, DType dtype = kFloat32, Device device = kCPU);
Tensor scalar(double value, DType dtype = kFloat32, Device device = kCPU);  // shape []
// [start, start+step, ...) up to but excluding end, like Python's range.
Tensor arange(double start, double end, double step = 1, DType dtype = kFloat32, Device device = kCPU);
Tensor from_vector(const std::vector<float>& values, const Shape& shape, Device device = kCPU);
Tensor from_vector(const std::vector<double>& values, const Shape& shape, Device device = kCPU);
Tensor from_indices(const std::vector<int64_t>& values, const Shape& shape, Device device = kCPU);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// Random tensors from a seeded generator (tensor/random.h).
Tensor rand(const Shape& shape, Generator& gen = default_generator(), DType dtype = kFloat32, Device device = kCPU);
Tensor randn(const Shape& shape, Generator& gen = default_generator(), DType dtype = kFloat32, Device device = kCPU);
// Each element is 1 with probability p, else 0.
Tensor bernoulli(const Shape& shape, double p, Generator& gen = default_generator(), DType dtype = kFloat32,
                 Device device = kCPU);

// ---- copies, casts, in-place writes ------------------------------------------
Tensor clone(const Tensor& t);       // a contiguous deep copy
Tensor contiguous(const Tensor& t);  // t itself if already contiguous
Tensor to_dtype(const Tensor& t, DType dtype);
Tensor to_device(const Tensor& t, Device device);
void copy_(const Tensor& dst, const Tensor& src);  // src broadcast to dst (and moved, if on another device)
void fill_(const Tensor& dst, double value);

// ---- views (share storage; no data is copied) ---------------------------------
Tensor view(const Tensor& t, Shape shape);      // needs compatible strides; -1 infers
Tensor reshape(const Tensor& t, Shape shape);   // a view when possible, else a copy
Tensor permute(const Tensor& t, std::vector<int64_t> dims);
Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor expand(const Tensor& t, const Shape& shape);  // size-1 dims stretch, stride 0
Tensor squeeze(const Tensor& t, int64_t dim);        // drops dim if its size is 1
Tensor squeeze(const Tensor& t);                     // drops every size-1 dim
Tensor unsqueeze(const Tensor& t, int64_t dim);

// ---- elementwise ------------------------------------------------------------
Tensor unary(UnaryOp op, const Tensor& x);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);  // broadcasts
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Scalar right-hand sides (the scalar takes a's dtype and device).
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double b);
// Comparisons give 1 where true and 0 where false, in a's dtype.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// cond != 0 ? a : b, all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
bool all_finite(const Tensor& t);  // false if any NaN or Inf

// ---- reductions (over one or more dims; an empty list means all dims) ----------
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// Unbiased by default (correction = 1), like torch.var.
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64
// Sums `grad` down to `shape`, undoing NumPy broadcasting (used by backward).
Tensor sum_to(const Tensor& grad, const Shape& shape);

// ---- linear algebra, softmax, indexing, joining -------------------------------
// Batched matrix product: a [..., M, K] @ b [..., K, N] with broadcast batch
// dims; 1-D operands are treated as in NumPy (a vector is a row / column).
Tensor matmul(const Tensor& a, const Tensor& b);
// A linear layer, y = x w^T + bias, for x [..., K], w [N, K], bias [N] or
// undefined -> y [..., N]. The leading dims are flattened into one GEMM of
// M = (their product) rows, and the bias is the GEMM's starting C.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// zeros(shape) then out.index_select(dim, index) += src: index_select's reverse.
Tensor index_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
// stack's argument check (same shapes); returns dim normalized for the result.
int64_t check_stack(const std::vector<Tensor>& tensors, int64_t dim);

}  // namespace raw
}  // namespace nc
