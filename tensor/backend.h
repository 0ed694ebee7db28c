// backend.h — the kernel table every device implements.
//
// Raw ops (raw_ops.h) validate their arguments, allocate outputs, and then
// call exactly one entry of the Backend that owns the tensors' device. The CPU
// table lives in tensor/cpu/; a CUDA table is added by cuda/ without touching
// any op. Kernels may assume their arguments were validated: same dtype,
// same device, shapes as documented per entry.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace nc {

enum class UnaryOp { Copy, Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Sin, Cos, Abs, Sign };
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge };
enum class ReduceOp { Sum, Max, Argmax };
enum class RandomKind { Uniform, Normal, Bernoulli };

const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);

struct Backend {
    const char* name;

    void* (*allocate)(size_t nbytes);
    void (*deallocate)(void* data);

    // out[...] = value. `out` may be any strided view.
    void (*fill)(const Tensor& out, double value);
    // out = op(in); in and out have the same shape and any strides (a stride
    // of 0 is a broadcast). For Copy the dtypes may differ (a cast).
    void (*unary)(UnaryOp op, const Tensor& in, const Tensor& out);
    // out = op(a, b); a and b are already expanded to out's shape.
    void (*binary)(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
    // out = cond != 0 ? a : b; all expanded to out's shape.
    void (*where)(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
    // in: contiguous [rows, n] -> out: contiguous [rows] (Argmax writes int64).
    void (*reduce_rows)(ReduceOp op, const Tensor& in, const Tensor& out);
    // a: [batch..., M, K], b: [batch..., K, N] (same batch dims, any strides)
    // -> out: contiguous [batch..., M, N].
    void (*matmul)(const Tensor& a, const Tensor& b, const Tensor& out);
    // in, out: contiguous [rows, n]; softmax (or log_softmax) of each row.
    void (*softmax_rows)(const Tensor& in, const Tensor& out, bool log);
    // in: contiguous [outer, D, inner], index: contiguous int64 [L]
    // -> out: contiguous [outer, L, inner], out[o, l, i] = in[o, index[l], i].
    void (*index_select)(const Tensor& in, const Tensor& index, const Tensor& out);
    // The reverse: out[o, index[l], i] += src[o, l, i] (duplicates accumulate).
    void (*index_add)(const Tensor& out, const Tensor& index, const Tensor& src);
    // in: contiguous [outer, D, inner], index: contiguous int64 [outer, L, inner]
    // -> out: contiguous [outer, L, inner], out[o, l, i] = in[o, index[o, l, i], i].
    void (*gather)(const Tensor& in, const Tensor& index, const Tensor& out);
    // The reverse: out[o, index[o, l, i], i] += src[o, l, i].
    void (*scatter_add)(const Tensor& out, const Tensor& index, const Tensor& src);
    // Fills contiguous `out` from the counter-based stream (seed, offset):
    // element e uses counter offset + e, so the result does not depend on
    // how the work is split across threads (or devices).
    void (*random)(RandomKind kind, uint64_t seed, uint64_t offset, double p, const Tensor& out);
};

// The table for a device; throws if that backend is not built in.
const Backend& backend_for(Device device);
const Backend& cpu_backend();  // tensor/cpu/cpu_backend.cpp

}  // namespace nc
