// cross_entropy_kernels.cuh — softmax + cross-entropy kernels, forward and
// backward (cuda/cross_entropy.cu launches them; the math is
// tensor/ops/cross_entropy.cpp's). Forward: one block per row (max, then
// the sum of exponentials, in double). Backward: one thread per logit. In
// a header of their own so that the CPU emulator (tests/cuda_emulator) runs
// these very kernels in CI.
//
// Shapes: logits, dlogits [N, V]; targets, losses, logsumexp, dlosses [N].
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "cuda/device_common.cuh"

namespace nc {
namespace cuda {

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

}  // namespace cuda
}  // namespace nc
