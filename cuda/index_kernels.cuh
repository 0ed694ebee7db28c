// index_kernels.cuh — index_select / index_add and gather / scatter_add
// kernels (cuda/index.cu launches them). Inputs arrive as contiguous
// [outer, D, inner] (tensor/backend.h). The accumulating kernels use
// atomicAdd, so duplicate indices add up correctly; the order of those
// additions (and so the last bits of a float sum) may differ from the
// CPU's. Every kernel checks its indices itself and records a bad one
// (device_common.cuh). In a header of their own so that the CPU emulator
// (tests/cuda_emulator) runs these very kernels in CI.
//
// Shapes: in [outer, D, inner]; index_select: index [L], out [outer, L, inner];
// gather: index and out [outer, L, inner]; the adds the reverse, src [outer, L, inner].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_common.cuh"

namespace nc {
namespace cuda {

// out[o, l, i] = in[o, index[l], i]
template <typename T>
__global__ void index_select_kernel(const T* in, const int64_t* index, T* out, int64_t outer, int64_t D, int64_t L,
                                    int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, l = (e / inner) % L, o = e / (inner * L);
        out[e] = index_in_range(index[l], D, kIndexSelectOp, record) ? in[(o * D + index[l]) * inner + i] : T(0);
    }
}

// out[o, index[l], i] += src[o, l, i]
// atomicAdd for each dtype the CPU supports here. CUDA has no int64_t
// overload; adding as unsigned 64-bit integers gives the same bits (two's
// complement), so that one serves.
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int64_t* p, int64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}

template <typename T>
__global__ void index_add_kernel(T* out, const int64_t* index, const T* src, int64_t outer, int64_t D, int64_t L,
                                 int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, l = (e / inner) % L, o = e / (inner * L);
        if (index_in_range(index[l], D, kIndexAddOp, record)) atomic_add(&out[(o * D + index[l]) * inner + i], src[e]);
    }
}

// out[o, l, i] = in[o, index[o, l, i], i]  (and, above and below, the adds)
template <typename T>
__global__ void gather_kernel(const T* in, const int64_t* index, T* out, int64_t outer, int64_t D, int64_t L,
                              int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, o = e / (inner * L);
        out[e] = index_in_range(index[e], D, kGatherOp, record) ? in[(o * D + index[e]) * inner + i] : T(0);
    }
}

// out[o, index[o, l, i], i] += src[o, l, i]
template <typename T>
__global__ void scatter_add_kernel(T* out, const int64_t* index, const T* src, int64_t outer, int64_t D, int64_t L,
                                   int64_t inner, IndexErrorRecord* record) {
    int64_t n = outer * L * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e % inner, o = e / (inner * L);
        if (index_in_range(index[e], D, kScatterAddOp, record)) atomic_add(&out[(o * D + index[e]) * inner + i], src[e]);
    }
}

}  // namespace cuda
}  // namespace nc
