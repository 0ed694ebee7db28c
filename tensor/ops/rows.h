// rows.h — what the fused ops of tensor/ops/ share: their inputs as
// contiguous [rows, C] matrices (C the last dim, leading dims flattened),
// the argument checks with their messages, and the CPU kernels' helpers.
// Internal to tensor/ops/; callers include the op's header (or tensor/raw_nn.h).
#pragma once

#include <algorithm>
#include <string>

#include "tensor/backend.h"
#include "tensor/cpu/parallel.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

// What the fused ops compute in: a floating-point dtype with kernels.
inline void check_rows_dtype(const Tensor& x, const std::string& op) {
    check_compute_dtype(x.dtype(), op);
    if (!is_floating(x.dtype())) fail(op, std::string("needs a floating-point tensor, got ") + dtype_name(x.dtype()));
}

// x as a contiguous [rows, C] matrix, C = the last dim.
inline Tensor as_rows(const Tensor& x, const std::string& op) {
    if (x.dim() == 0) fail(op, "needs at least one dim (the features), got a scalar");
    check_rows_dtype(x, op);
    int64_t C = x.size(-1);
    return view(contiguous(x), {C == 0 ? 0 : x.numel() / C, C});
}

// A per-feature parameter (gamma, beta) must be [C] with x's dtype and device.
inline void check_feature_param(const Tensor& p, const Tensor& x, const char* name, const std::string& op) {
    if (!p.defined()) return;
    if (p.dim() != 1 || p.size(0) != x.size(-1))
        fail(op, std::string(name) + " has shape " + shape_str(p.shape()) + " but the input " + shape_str(x.shape()) +
                     " has " + std::to_string(x.size(-1)) + " features in its last dim");
    if (p.dtype() != x.dtype() || p.device() != x.device())
        fail(op, std::string(name) + " is " + dtype_name(p.dtype()) + " on " + p.device().str() + ", the input is " +
                     dtype_name(x.dtype()) + " on " + x.device().str());
}

inline void check_same(const Tensor& a, const Tensor& b, const char* what, const std::string& op) {
    if (a.shape() != b.shape() || a.dtype() != b.dtype() || a.device() != b.device())
        fail(op, std::string(what) + ": shapes/dtypes " + shape_str(a.shape()) + " " + dtype_name(a.dtype()) + " and " +
                     shape_str(b.shape()) + " " + dtype_name(b.dtype()) + " must be equal");
}

}  // namespace raw

namespace cpu {

// Rows are independent, so the CPU kernels split them across threads (with
// fewer than kParallelRows rows, or little work, one thread: parallel.h);
// per-row sums accumulate in double.

template <typename T>
const T* ptr_or_null(const Tensor& t) { return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr; }
template <typename T>
T* mut_or_null(const Tensor& t) { return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr; }

// dgamma[c] = sum_rows dy[r, c] * xh[r, c] and dbeta[c] = sum_rows dy[r, c],
// with xh computed by `normalized(r, c)`. Threads split the columns, so no two
// threads write the same entry. Blocks of 32 columns, as the column sums of
// reduce.cpp (blocks of 64 before): LayerNorm's whole backward on 2048 x
// 384 went from 736-904 to 515-575 us, on 1024 x 768 from 798-931 to
// 508-568; 128 wide it was mixed, 171-223 against 205-215 (2 threads, Zen
// 3, medians of 200 calls in two alternating runs; blocks of 16 were
// slower; bench/results/column-sums-2026-12-07.txt). Each column is still
// summed in row order.
template <typename T, typename Normalized>
void affine_param_grads(int64_t rows, int64_t C, const T* dy, T* dgamma, T* dbeta, Normalized normalized) {
    if (!dgamma && !dbeta) return;
    constexpr int64_t block = 32;
    parallel_for((C + block - 1) / block, rows * C >= kParallelMin, [&](int64_t piece) {
        const int64_t c0 = piece * block, c1 = std::min(C, c0 + block);
        double g[block] = {}, b[block] = {};
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = c0; c < c1; ++c) {
                g[c - c0] += (double)dy[r * C + c] * normalized(r, c);
                b[c - c0] += dy[r * C + c];
            }
        for (int64_t c = c0; c < c1; ++c) {
            if (dgamma) dgamma[c] = (T)g[c - c0];
            if (dbeta) dbeta[c] = (T)b[c - c0];
        }
    });
}

}  // namespace cpu
}  // namespace nc
