// cuda_common.cuh — what every CUDA kernel file shares: error checks that
// turn CUDA's status codes into nc::Error, the one stream all work goes to,
// and the strided indexer for elementwise kernels (launch sizes and the
// device-only helpers are in device_common.cuh).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "cuda/device_common.cuh"
#include "tensor/backend.h"
#include "tensor/merged_dims.h"

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

// ---- indices out of range: the record kernels write (device_common.cuh) ------------

// The device's view of the record (mapped pinned memory, allocated once).
IndexErrorRecord* index_error_record();
// Throws nc::Error for a recorded bad index, and clears the record. Called
// after every synchronization with the stream.
void throw_recorded_index_error();

// A tensor's data as a T*, or nullptr for an undefined (optional) tensor.
template <typename T>
T* ptr_or_null(const Tensor& t) { return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr; }

// Offsets of element `linear` (row-major over `sizes`) in each of N operands
// with their own strides: a tensor view of any layout, including broadcast
// (stride 0). Passed to kernels by value. make_indexer merges the dims first
// (tensor/merged_dims.h), so a contiguous operand has one dim and costs no
// div/mod at all (the outermost dim never needs one); when the element
// count fits in 31 bits, the div/mods run in 32-bit arithmetic, several
// times faster than 64-bit on a GPU. The offsets themselves stay 64-bit (a
// small view may sit far into a large buffer).
template <int N>
struct StridedIndexer {
    int ndim;
    bool narrow;  // every linear index < 2^31
    int64_t sizes[kMaxDims];
    int64_t strides[N][kMaxDims];

    __device__ void offsets(int64_t linear, int64_t* out) const {
        for (int k = 0; k < N; ++k) out[k] = 0;
        if (narrow) {
            uint32_t rest = (uint32_t)linear;
            for (int d = ndim - 1; d > 0; --d) {
                uint32_t size = (uint32_t)sizes[d], index = rest % size;
                rest /= size;
                for (int k = 0; k < N; ++k) out[k] += (int64_t)index * strides[k][d];
            }
            linear = rest;
        } else {
            for (int d = ndim - 1; d > 0; --d) {
                int64_t index = linear % sizes[d];
                linear /= sizes[d];
                for (int k = 0; k < N; ++k) out[k] += index * strides[k][d];
            }
        }
        if (ndim > 0)  // dim 0 takes what is left: no div/mod
            for (int k = 0; k < N; ++k) out[k] += linear * strides[k][0];
    }
};

template <int N>
StridedIndexer<N> make_indexer(const Shape& shape, const std::array<const Tensor*, N>& operands) {
    std::array<const Shape*, N> strides;
    for (int k = 0; k < N; ++k) strides[k] = &operands[k]->strides();
    MergedDims<N> m = merge_dims<N>(shape, strides);
    StridedIndexer<N> ix{};
    ix.ndim = m.empty ? 0 : m.ndim;  // empty: no element is ever asked for
    int64_t count = 1;
    for (int d = 0; d < ix.ndim; ++d) {
        ix.sizes[d] = m.sizes[d];
        count *= m.sizes[d];
        for (int k = 0; k < N; ++k) ix.strides[k][d] = m.strides[k][d];
    }
    ix.narrow = count < (int64_t(1) << 31);
    return ix;
}

}  // namespace cuda
}  // namespace nc
