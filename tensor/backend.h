// backend.h — the kernel table every device implements.
//
// Raw ops (raw_ops.h, raw_nn.h) validate their arguments, allocate outputs,
// and then call exactly one entry of the Backend that owns the tensors'
// device. Each kernel file sets its own entries by name (its add_ function);
// the CPU table is assembled in tensor/cpu/cpu_backend.cpp, the CUDA table in
// cuda/cuda_backend.cu, without touching any op. Kernels may assume their
// arguments were validated: same dtype, same device, shapes as documented
// per entry (for a fused op: in its header, tensor/ops/<op>.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/ops/fused_ops.h"  // each fused op's kernel signatures
#include "tensor/philox.h"  // RandomKind
#include "tensor/tensor.h"

namespace nc {

// The activations' backward passes are BinaryOps below (one pass: g f'(x)).
enum class UnaryOp {
    Copy, Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Sin, Cos, Abs, Sign,
    Relu, Sigmoid, Silu, Gelu, GeluTanh
};
// The ...Backward ops are an activation's backward in one pass: a = the
// activation's input x, b = the incoming gradient g, out = g f'(x). SwiGLU
// is silu(a) * b (Llama's gated MLP) in one pass.
enum class BinaryOp {
    Add, Sub, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge,
    ReluBackward, SiluBackward, GeluBackward, GeluTanhBackward, SwiGLU
};
enum class ReduceOp { Sum, Max, Argmax };

const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);

// A caching allocator's counters (tensor/cpu/allocator.h for host memory,
// cuda/cuda_backend.cu for device memory).
struct AllocatorStats {
    int64_t system_allocations = 0;  // blocks obtained from the system (the C library, or cudaMalloc)
    int64_t cache_hits = 0;          // allocations served from a free list
    size_t bytes_in_use = 0;         // handed out and not yet freed (size-class bytes)
    size_t peak_bytes_in_use = 0;    // the maximum of bytes_in_use since the last reset
    size_t bytes_cached = 0;         // on the free lists, ready for reuse

    // The bookkeeping both caching allocators do, under their lock
    // (tensor/cpu/allocator.cpp, cuda/cuda_backend.cu), for a block of
    // `bytes` (its size class).
    void handed_out(size_t bytes) {
        bytes_in_use += bytes;
        if (bytes_in_use > peak_bytes_in_use) peak_bytes_in_use = bytes_in_use;
    }
    void reused(size_t bytes) {  // the block came off a free list
        ++cache_hits;
        bytes_cached -= bytes;
    }
    void returned(size_t bytes) {  // the block went back onto a free list
        bytes_in_use -= bytes;
        bytes_cached += bytes;
    }
    void reset_peak() { peak_bytes_in_use = bytes_in_use; }
};

struct Backend {
    const char* name;

    void* (*allocate)(size_t nbytes);
    void (*deallocate)(void* data);
    // The allocator's counters, and a reset of the peak to what is in use now.
    AllocatorStats (*allocator_stats)();
    void (*reset_peak_bytes)();
    // Moves nbytes between this device's memory and the host's (for the CPU
    // backend both are host memory). Returns when the copy is complete.
    void (*copy_to_host)(const void* device_src, void* host_dst, size_t nbytes);
    void (*copy_from_host)(const void* host_src, void* device_dst, size_t nbytes);

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
    // in: contiguous [n, cols] -> out: contiguous [cols], out[j] = sum_i in[i, j]
    // (a sum over leading dims, such as a bias gradient, without a transpose).
    void (*sum_columns)(const Tensor& in, const Tensor& out);
    // a: [batch..., M, K], b: [batch..., K, N] (same batch dims, any strides)
    // -> out: contiguous [batch..., M, N]: out = a b, or out += a b when
    // `accumulate`, or, given a `bias` (contiguous [N], the output's dtype;
    // an undefined Tensor for none), out = bias + a b, the bias added to
    // every row: linear's. A bias and `accumulate` are never both given, and
    // the bias is never part of `out` (it is read while out is written).
    void (*matmul)(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate, const Tensor& bias);
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

    // ---- the fused ops (LayerNorm, RMSNorm, DyT, cross-entropy, the geodesic
    // update, attention, AdamW): one entry per line of tensor/ops/ops.def,
    // each a struct of kernel pointers (forward, backward) declared in the
    // op's header, tensor/ops/<op>.h, where its shapes are documented.
#define NC_FUSED_OP(name, Kernels) Kernels name;
#include "tensor/ops/ops.def"
#undef NC_FUSED_OP
};

// A backend's table is filled entry by entry (tensor/cpu/cpu_backend.cpp,
// cuda/cuda_backend.cu); this throws if one was left out (a null entry
// would crash at its first call), naming its position in the struct.
void require_complete(const Backend& table);

// For matmul kernels: the element offset of every matrix in the batch dims
// of t (all dims but the last two), row-major over those dims.
std::vector<int64_t> matrix_batch_offsets(const Tensor& t);

// The table for a device; throws if that backend is not built in (or, for
// CUDA, if no GPU can be used: the message says why).
const Backend& backend_for(Device device);
const Backend& cpu_backend();  // tensor/cpu/cpu_backend.cpp
const Backend& meta_backend();  // tensor/meta_backend.cpp (its record: tensor/meta_backend.h)

// Whether this build has the CUDA backend and a GPU it can use; when not,
// `why` (if given) says which of the two is missing.
bool cuda_available(std::string* why = nullptr);

}  // namespace nc
