// cuda_common.cuh — what every CUDA kernel file shares: error checks that
// turn CUDA's status codes into nc::Error, the one stream all work goes to,
// (launch sizes and the device-only helpers are in device_common.cuh, the
// strided indexer of the elementwise kernels in strided_indexer.cuh).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "cuda/device_common.cuh"
#include "cuda/strided_indexer.cuh"
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

// ---- indices out of range: the record kernels write (device_common.cuh) ------------

// The device's view of the record (mapped pinned memory, allocated once).
IndexErrorRecord* index_error_record();
// Throws nc::Error for a recorded bad index, and clears the record. Called
// after every synchronization with the stream.
void throw_recorded_index_error();

// A tensor's data as a T*, or nullptr for an undefined (optional) tensor.
template <typename T>
T* ptr_or_null(const Tensor& t) { return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr; }

}  // namespace cuda
}  // namespace nc
