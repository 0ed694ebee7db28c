// ops.h — the differentiable tensor operations. This is the API users call.
//
// Each op computes its result with raw ops (tensor/raw_ops.h) and, through
// record() (node.h), leaves a Node whose backward lambda sits right next to
// the forward code in ops_*.cpp:
//
//   ops_elementwise.cpp  add sub mul div neg pow exp log sqrt rsqrt tanh sin
//                        cos abs maximum minimum where, comparisons
//   ops_reduce.cpp       sum mean max var argmax
//   ops_shape.cpp        reshape view permute transpose narrow expand squeeze
//                        unsqueeze contiguous flatten cat stack
//   ops_linalg.cpp       matmul softmax log_softmax gather index_select embedding
//
// Broadcasting follows NumPy; a gradient flowing back to a broadcast input
// is summed over the broadcast dims (raw::sum_to).
#pragma once

#include <vector>

#include "autograd/engine.h"
#include "autograd/mode.h"
#include "tensor/raw_ops.h"

namespace nc {

// Creation functions record nothing, so the raw ones are the API.
using raw::arange;
using raw::bernoulli;
using raw::from_indices;
using raw::from_vector;
using raw::full;
using raw::ones;
using raw::ones_like;
using raw::rand;
using raw::randn;
using raw::scalar;
using raw::zeros;
using raw::zeros_like;

// ---- elementwise (ops_elementwise.cpp) -------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // no gradient to cond
// Comparisons: 1 where true, 0 where false; not differentiable (no graph).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
// A number on either side becomes a scalar tensor of the other side's dtype.
Tensor operator+(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(const Tensor& a, double b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(const Tensor& a, double b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(const Tensor& a, double b);
Tensor operator/(double a, const Tensor& b);

// ---- reductions (ops_reduce.cpp); empty dims = all dims ----------------------
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// Maximum values; the gradient goes to the maximal entries (split evenly on ties).
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64, no gradient

// ---- shapes and views (ops_shape.cpp) -------------------------------------------
Tensor reshape(const Tensor& x, Shape shape);
Tensor view(const Tensor& x, Shape shape);
Tensor permute(const Tensor& x, std::vector<int64_t> dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor contiguous(const Tensor& x);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);

// ---- linear algebra, softmax, indexing (ops_linalg.cpp) -----------------------
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x w^T + bias (bias may be undefined): one GEMM over all rows of x.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());
// Mixed precision's linear layer: x and w are rounded to `operand_dtype`
// (kBFloat16 or kFloat16; any other dtype: the plain linear above) for the
// product, which sums in float32 and returns float32 like x. Backward rounds
// the incoming gradient the same way for its two products; the bias and its
// gradient stay float32. What is kept for backward is the 16-bit copies:
// half the bytes of x.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, DType operand_dtype);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// Rows of weight [V, C] picked by int64 ids of any shape -> [ids..., C].
Tensor embedding(const Tensor& weight, const Tensor& ids);

}  // namespace nc
