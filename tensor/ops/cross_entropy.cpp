// cross_entropy.cpp — softmax + cross-entropy, fused (declared in
// cross_entropy.h): the raw ops, the differentiable loss, and the CPU
// kernels, forward beside backward. The CUDA kernels are in cuda/cross_entropy.cu.
//
// Per row n of logits [N, V]: loss_n = logsumexp(logits_n) - logits_n[target_n],
// or 0 when target_n == ignore_index. logsumexp is computed as
// m + log sum_v exp(logit_v - m), m the row's max, so no exp overflows (a
// naive softmax overflows at logits near 89 in float32), and it is saved
// for backward:  dlogits_n = dlosses_n (softmax(logits_n) - onehot(target_n)),
// softmax(logits_n)_v = exp(logit_v - logsumexp_n).
//
// Shapes: logits, dlogits [N, V] (N = B T rows); targets (int64), losses,
// logsumexp, dlosses [N].

#include <algorithm>
#include <cmath>

#include "tensor/cpu/fast_math.h"
#include "tensor/ops/rows.h"
#include "tensor/profile.h"
#include "autograd/node.h"
#include "tensor/raw_nn.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

// Checks logits [..., V] against targets [...] and returns them as [N, V] and [N].
static void check_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
    Shape expected(logits.shape().begin(), logits.shape().end() - (logits.dim() ? 1 : 0));
    if (logits.dim() == 0 || targets.shape() != expected)
        fail("cross_entropy", "logits " + shape_str(logits.shape()) + " need targets of shape " + shape_str(expected) +
                                  " (one class index per row), got " + shape_str(targets.shape()));
    if (targets.dtype() != kInt64)
        fail("cross_entropy", std::string("targets must be int64 class indices, got ") + dtype_name(targets.dtype()));
    if (targets.device() != logits.device())
        fail("cross_entropy", "the targets are on " + targets.device().str() + " but the logits are on " +
                                  logits.device().str() + " (move one with .to())");
    // On the GPU the kernel checks the targets itself (reading them here would
    // make the op wait for the GPU) and reports a bad one at the next copy to
    // the host; see cuda/cuda_common.cuh.
    if (targets.device() != kCPU) return;
    int64_t V = logits.size(-1);
    for (int64_t t : targets.to_int_vector())
        if (t != ignore_index && (t < 0 || t >= V))
            fail("cross_entropy", "target " + std::to_string(t) + " is not a class index in [0, " + std::to_string(V) +
                                      ") (and not the ignore_index " + std::to_string(ignore_index) + ")");
}

CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
    check_cross_entropy(logits, targets, ignore_index);
    Tensor rows = as_rows(logits, "cross_entropy");
    CrossEntropyForward f{empty({rows.size(0)}, logits.dtype(), logits.device()),
                          empty({rows.size(0)}, logits.dtype(), logits.device())};
    ProfileScope scope(OpKind::Loss);
    backend_for(logits.device()).cross_entropy.forward(rows, reshape(contiguous(targets), {rows.size(0)}), ignore_index,
                                               f.losses, f.logsumexp);
    return f;
}

Tensor cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                              const CrossEntropyForward& saved, int64_t ignore_index) {
    Tensor rows = as_rows(logits, "cross_entropy_backward");
    if (dlosses.numel() != rows.size(0))
        fail("cross_entropy_backward", "got " + std::to_string(dlosses.numel()) + " row gradients for " +
                                           std::to_string(rows.size(0)) + " rows");
    if (dlosses.dtype() != logits.dtype() || dlosses.device() != logits.device())
        fail("cross_entropy_backward", std::string("the row gradients are ") + dtype_name(dlosses.dtype()) + " on " +
                                           dlosses.device().str() + ", the logits " + dtype_name(logits.dtype()) + " on " +
                                           logits.device().str());
    Tensor dlogits = empty(logits.shape(), logits.dtype(), logits.device());
    ProfileScope scope(OpKind::Loss);
    backend_for(logits.device()).cross_entropy.backward(reshape(contiguous(dlosses), {rows.size(0)}), rows,
                                                        reshape(contiguous(targets), {rows.size(0)}), saved.logsumexp,
                                                        ignore_index, view(dlogits, rows.shape()));
    return dlogits;
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

using Grads = std::vector<Tensor>;

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
    raw::CrossEntropyForward f = raw::cross_entropy(logits, targets, ignore_index);
    // The mean runs over the rows that count (target != ignore_index); the
    // others contribute 0. Their number is counted where the targets live,
    // as a tensor: on a GPU, reading the targets on the host would make
    // every forward wait for the GPU. scale = 1 / max(counted, 1): with no
    // row counting, the sum is 0 and so is the loss.
    DType dtype = logits.dtype();
    Tensor ignored = raw::scalar((double)ignore_index, dtype, logits.device());
    Tensor one = raw::scalar(1.0, dtype, logits.device());
    Tensor counted = raw::sum(raw::ne(raw::to_dtype(targets, dtype), ignored));
    Tensor scale = raw::div(one, raw::maximum(counted, one));
    Tensor loss = raw::mul(raw::sum(f.losses), scale);
    // dL/dlogits_n = (g / counted) (softmax(logits_n) - onehot(t_n)); 0 for ignored rows.
    return record("CrossEntropy", loss, {logits}, [logits, targets, f, scale, ignore_index](const Tensor& g) {
        Tensor dlosses = raw::expand(raw::mul(g, scale), f.losses.shape());
        return Grads{raw::cross_entropy_backward(dlosses, logits, targets, f, ignore_index)};
    });
}

// ---- the CPU kernels, forward beside backward ------------------------------------

namespace cpu {

template <typename T>
static void cross_entropy_typed(const Tensor& logits_tensor, const Tensor& targets_tensor, int64_t ignore_index,
                                const Tensor& losses_tensor, const Tensor& lse_tensor) {
    int64_t N = logits_tensor.size(0), V = logits_tensor.size(1);
    const T* logits = ptr_or_null<T>(logits_tensor);
    const int64_t* targets = targets_tensor.data<int64_t>();
    T *losses = mut_or_null<T>(losses_tensor), *lse = mut_or_null<T>(lse_tensor);
    parallel_for(N, N >= kParallelRows && N * V >= kParallelMin, [&](int64_t n) {
        const T* row = logits + n * V;
        // The exponentials in the logits' own precision: for float32 the
        // exp_fast that attention's softmax uses too (fast_math.h:
        // vectorized, a relative error under 3e-7), for float64 libm's.
        // Each was a libm call on a double before, one value at a time:
        // most of the loss's time. The sum is kept in double, added in
        // vector lanes (omp simd), so float64 losses also moved in their
        // last bits.
        const T m = max_of(row, V, T(-INFINITY));
        double total = 0;
#pragma omp simd reduction(+ : total)
        for (int64_t v = 0; v < V; ++v) total += (double)exp_fast(row[v] - m);
        double logsumexp = (double)m + std::log(total);  // log sum_v exp(logit_v), computed without overflow
        lse[n] = (T)logsumexp;
        losses[n] = targets[n] == ignore_index ? T(0) : (T)(logsumexp - row[targets[n]]);
    });
}

template <typename T>
static void cross_entropy_backward_typed(const Tensor& dlosses_tensor, const Tensor& logits_tensor,
                                         const Tensor& targets_tensor, const Tensor& lse_tensor, int64_t ignore_index,
                                         const Tensor& dlogits_tensor) {
    int64_t N = logits_tensor.size(0), V = logits_tensor.size(1);
    const T *dlosses = ptr_or_null<T>(dlosses_tensor), *logits = ptr_or_null<T>(logits_tensor),
            *lse = ptr_or_null<T>(lse_tensor);
    const int64_t* targets = targets_tensor.data<int64_t>();
    T* dlogits = mut_or_null<T>(dlogits_tensor);
    parallel_for(N, N >= kParallelRows && N * V >= kParallelMin, [&](int64_t n) {
        T* drow = dlogits + n * V;
        if (targets[n] == ignore_index) {
            std::fill(drow, drow + V, T(0));
            return;
        }
        const T* row = logits + n * V;
        const T dloss = dlosses[n], shift = lse[n];
        for (int64_t v = 0; v < V; ++v) drow[v] = dloss * exp_fast(row[v] - shift);  // dloss * softmax
        drow[targets[n]] -= dloss;                                                  // - dloss * onehot
    });
}

static void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                   const Tensor& logsumexp) {
    if (logits.dtype() == kFloat32) cross_entropy_typed<float>(logits, targets, ignore_index, losses, logsumexp);
    else cross_entropy_typed<double>(logits, targets, ignore_index, losses, logsumexp);
}

static void cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                            const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits) {
    if (logits.dtype() == kFloat32)
        cross_entropy_backward_typed<float>(dlosses, logits, targets, logsumexp, ignore_index, dlogits);
    else cross_entropy_backward_typed<double>(dlosses, logits, targets, logsumexp, ignore_index, dlogits);
}

void add_cross_entropy(Backend& table) {
    table.cross_entropy = {cross_entropy, cross_entropy_backward};
}

}  // namespace cpu
}  // namespace nc
