// The reference solution of exercise 10 (make test runs it on a GPU).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "exercises/10_sum_v2/sum_v2.h"

namespace exercise {

namespace {

constexpr int kThreads = 256;

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// The sum of one value per thread of the block, valid in thread 0. Within a
// warp, each step adds the value `offset` lanes away (16, 8, 4, 2, 1); the
// warps' sums then meet in shared memory and warp 0 adds them the same way.
__device__ double block_total(double v) {
    __shared__ double warp_sums[kThreads / 32];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0;
    if (warp == 0)
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Pass 1: every thread of the grid strides over all of x.
__global__ void partial_sums(const float* x, int64_t n, double* partial) {
    double v = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) v += x[i];
    v = block_total(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

// Pass 2: one block adds the blocks' sums.
__global__ void total_of(const double* partial, int count, double* out) {
    double v = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) v += partial[i];
    v = block_total(v);
    if (threadIdx.x == 0) *out = v;
}

}  // namespace

double sum_v2(const float* x_on_gpu, int64_t n) {
    int device = 0, sms = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    // Two blocks per SM keep every SM busy; no more blocks than 4,096-element pieces.
    int64_t pieces = (n + 4095) / 4096;
    int blocks = (int)(pieces < 2 * sms ? (pieces > 0 ? pieces : 1) : 2 * sms);
    double *partial = nullptr, *total = nullptr;
    check(cudaMalloc(&partial, blocks * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&total, sizeof(double)), "cudaMalloc");
    partial_sums<<<blocks, kThreads>>>(x_on_gpu, n, partial);
    check(cudaGetLastError(), "partial_sums");
    total_of<<<1, kThreads>>>(partial, blocks, total);
    check(cudaGetLastError(), "total_of");
    double result = 0;
    check(cudaMemcpy(&result, total, sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy (a kernel may have faulted)");
    cudaFree(partial);
    cudaFree(total);
    return result;
}

}  // namespace exercise
