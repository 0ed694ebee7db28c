// backend.h — the kernel table every device implements.
//
// Raw ops (raw_ops.h, raw_nn.h) validate their arguments, allocate outputs,
// and then call exactly one entry of the Backend that owns the tensors'
// device. Each kernel file sets its own entries by name (its add_ function);
// the CPU table is assembled in tensor/cpu/cpu_backend.cpp, the CUDA table in
// cuda/cuda_backend.cu, without touching any op. Kernels may assume their arguments were validated: same dtype,
// same device, shapes as documented per entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The scalars of one AdamW step (optim/optimizer.h has the formula).
struct AdamWStep {
    double lr, beta1, beta2, eps;
    double correction1, correction2;  // 1 - beta^t, the bias corrections
};

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
    // `accumulate` (linear's bias: out starts as the bias in every row).
    void (*matmul)(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate);
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

    // ---- fused neural-network kernels (math and CPU kernels: tensor/ops/) --------
    // x, out: contiguous [rows, C]; gamma, beta: [C] or undefined (no affine);
    // mean, rstd: [rows], saved for backward.
    void (*layer_norm)(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                       const Tensor& mean, const Tensor& rstd);
    // dgamma, dbeta: [C] or undefined when gamma/beta are.
    void (*layer_norm_backward)(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta);
    void (*rms_norm)(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd);
    void (*rms_norm_backward)(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                              const Tensor& dx, const Tensor& dgamma);
    // logits: contiguous [N, V]; targets: int64 [N]; losses, logsumexp: [N]
    // (rows whose target is ignore_index get loss 0).
    void (*cross_entropy)(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                          const Tensor& logsumexp);
    // dlogits[n] = dlosses[n] * (softmax(logits[n]) - onehot(targets[n])), 0 for ignored rows.
    void (*cross_entropy_backward)(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                                   const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits);
    // x, u, out: contiguous [rows, C]; alpha: one element (the step size).
    void (*geodesic_update)(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out);
    // dalpha_rows: [rows], each row's contribution to dL/dalpha.
    void (*geodesic_update_backward)(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha,
                                     const Tensor& dx, const Tensor& du, const Tensor& dalpha_rows);
    // Dynamic Tanh. x, out: contiguous [rows, C]; alpha: one element;
    // weight: [C]; bias: [C] or undefined.
    void (*dyt)(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out);
    // dx and dy_t = dy tanh(alpha x): [rows, C]; dalpha_rows: [rows], each
    // row's sum of dz x (the raw op sums dy_t and dalpha_rows over rows).
    void (*dyt_backward)(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight,
                         const Tensor& dx, const Tensor& dy_t, const Tensor& dalpha_rows);
    // q: [N, T, D], k: [N, S, D], v: [N, S, Dv], all contiguous -> out [N, T, Dv]
    // = softmax(scale q k^T, keys j > i masked when causal) v, and logsumexp
    // [N, T] = log of each softmax row's denominator (in units of the scaled
    // scores), all backward needs to rebuild the probabilities tile by tile.
    void (*attention)(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
                      const Tensor& logsumexp);
    void (*attention_backward)(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& out, const Tensor& logsumexp, bool causal, double scale,
                               const Tensor& dq, const Tensor& dk, const Tensor& dv);

    // ---- the optimizer ------------------------------------------------------------
    // One AdamW step over all parameters at once: params[i], m[i], v[i] are
    // updated in place (contiguous, same shape as grads[i]); weight_decay[i]
    // is parameter i's decoupled decay.
    void (*adamw_update)(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                         const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                         const std::vector<double>& weight_decay, const AdamWStep& step);
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

// Whether this build has the CUDA backend and a GPU it can use; when not,
// `why` (if given) says which of the two is missing.
bool cuda_available(std::string* why = nullptr);

}  // namespace nc
