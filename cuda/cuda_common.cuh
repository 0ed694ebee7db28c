// cuda_common.cuh — what every CUDA kernel file shares: error checks that
// turn CUDA's status codes into nc::Error, the one stream all work goes to,
// launch sizes, and the strided indexer for elementwise kernels.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "tensor/backend.h"

namespace nc {
namespace cuda {

// Throws nc::Error("CUDA: <call> failed: <CUDA's message>") unless status is success.
void check(cudaError_t status, const char* call);
void check_cublas(cublasStatus_t status, const char* call);
// After every kernel launch: reports a bad launch configuration at once
// (errors inside the kernel surface at the next synchronizing call).
void check_launch(const char* kernel);

// All kernels and copies go to this one stream, in order, so no op needs to
// synchronize; only copies to the host wait for it.
cudaStream_t stream();
cublasHandle_t cublas();

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill the GPU, each thread then walks
// i, i + gridDim.x * blockDim.x, ...
inline int blocks_for(int64_t n) {
    return (int)std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, 8192));
}

// Offsets of element `linear` (row-major over `sizes`) in each of N operands
// with their own strides: a tensor view of any layout, including broadcast
// (stride 0). Passed to kernels by value.
template <int N>
struct StridedIndexer {
    int ndim;
    int64_t sizes[kMaxDims];
    int64_t strides[N][kMaxDims];

    __device__ void offsets(int64_t linear, int64_t* out) const {
        for (int k = 0; k < N; ++k) out[k] = 0;
        for (int d = ndim - 1; d >= 0; --d) {
            int64_t index = linear % sizes[d];
            linear /= sizes[d];
            for (int k = 0; k < N; ++k) out[k] += index * strides[k][d];
        }
    }
};

template <int N>
StridedIndexer<N> make_indexer(const Shape& shape, const std::array<const Tensor*, N>& operands) {
    StridedIndexer<N> ix{};
    ix.ndim = (int)shape.size();
    for (int d = 0; d < ix.ndim; ++d) {
        ix.sizes[d] = shape[d];
        for (int k = 0; k < N; ++k) ix.strides[k][d] = operands[k]->strides()[d];
    }
    return ix;
}

}  // namespace cuda
}  // namespace nc
