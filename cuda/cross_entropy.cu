// cross_entropy.cu — softmax + cross-entropy on the GPU, forward and
// backward; the math is tensor/ops/cross_entropy.cpp's. Forward: one block
// per row (max, then the sum of exponentials, in double). Backward: one
// thread per logit.
//
// Shapes: logits, dlogits [N, V]; targets, losses, logsumexp, dlosses [N].
#include <cmath>

#include "cuda/block_reduce.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

template <typename T>
__global__ void cross_entropy_kernel(const T* logits, const int64_t* targets, int64_t ignore_index, T* losses, T* lse,
                                     int64_t N, int64_t V, IndexErrorRecord* record) {
    for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
        const T* row = logits + n * V;
        double m = -INFINITY;
        for (int64_t v = threadIdx.x; v < V; v += blockDim.x) m = fmax(m, (double)row[v]);
        m = block_max(m);
        double total = 0;
        for (int64_t v = threadIdx.x; v < V; v += blockDim.x) total += exp_shifted(row[v], m);
        double logsumexp = m + log(block_sum(total));
        if (threadIdx.x == 0) {
            lse[n] = (T)logsumexp;
            int64_t t = targets[n];
            // A target out of range is recorded (cuda_common.cuh) and adds no loss.
            bool counted = t != ignore_index && index_in_range(t, V, kCrossEntropyOp, record);
            losses[n] = counted ? (T)(logsumexp - row[t]) : T(0);
        }
    }
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T* dlosses, const T* logits, const int64_t* targets, const T* lse,
                                              int64_t ignore_index, T* dlogits, int64_t N, int64_t V) {
    int64_t total = N * V;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = e / V, v = e % V;
        if (targets[n] == ignore_index || targets[n] < 0 || targets[n] >= V) {  // (the forward recorded a bad one)
            dlogits[e] = T(0);
            continue;
        }
        double dloss = dlosses[n];
        double value = dloss * exp_shifted(logits[e], (double)lse[n]);  // dloss * softmax
        if (v == targets[n]) value -= dloss;                               // - dloss * onehot
        dlogits[e] = (T)value;
    }
}


void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                   const Tensor& logsumexp) {
    int64_t N = logits.size(0), V = logits.size(1);
    if (N == 0) return;
    const int64_t* t = static_cast<const int64_t*>(targets.raw_data());
    if (logits.dtype() == kFloat32)
        cross_entropy_kernel<<<row_blocks(N), kThreads, 0, stream()>>>(ptr_or_null<float>(logits), t, ignore_index,
                                                                       ptr_or_null<float>(losses), ptr_or_null<float>(logsumexp), N, V,
                                                                       index_error_record());
    else
        cross_entropy_kernel<<<row_blocks(N), kThreads, 0, stream()>>>(ptr_or_null<double>(logits), t, ignore_index,
                                                                       ptr_or_null<double>(losses), ptr_or_null<double>(logsumexp), N, V,
                                                                       index_error_record());
    check_launch("cross_entropy_kernel");
}

void cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                            const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits) {
    int64_t N = logits.size(0), V = logits.size(1);
    if (N * V == 0) return;
    const int64_t* t = static_cast<const int64_t*>(targets.raw_data());
    if (logits.dtype() == kFloat32)
        cross_entropy_backward_kernel<<<blocks_for(N * V), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dlosses), ptr_or_null<float>(logits), t, ptr_or_null<float>(logsumexp), ignore_index,
            ptr_or_null<float>(dlogits), N, V);
    else
        cross_entropy_backward_kernel<<<blocks_for(N * V), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dlosses), ptr_or_null<double>(logits), t, ptr_or_null<double>(logsumexp), ignore_index,
            ptr_or_null<double>(dlogits), N, V);
    check_launch("cross_entropy_backward_kernel");
}
}  // namespace

void add_cross_entropy(Backend& table) {
    table.cross_entropy = cross_entropy;
    table.cross_entropy_backward = cross_entropy_backward;
}

}  // namespace cuda
}  // namespace nc
