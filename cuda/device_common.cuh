// device_common.cuh — what kernels share and needs no host API: launch
// sizes and small device functions. A kernel header (attention_tiled.cuh,
// reduce_kernels.cuh) includes this and not cuda_common.cuh, so that
// the CPU emulator (tests/cuda_emulator) can compile it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nc {
namespace cuda {

// e^(x - m) for a max-subtracted exponent (softmax, cross-entropy): in
// float for float data, since FP64 runs at 1/32-1/64 of the FP32 rate on
// laptop GPUs and the result is stored as float anyway (expf is accurate
// to 2 ulp); in double for double data. Sums of these stay in double.
__device__ inline double exp_shifted(float x, double m) { return (double)expf((float)((double)x - m)); }
__device__ inline double exp_shifted(double x, double m) { return exp(x - m); }

// The block's dynamic shared memory (the size given as the third launch
// argument, <<<grid, block, bytes>>>), as a T*. The CPU emulator
// (tests/cuda_emulator) provides its own.
#ifdef __CUDACC__
template <typename T>
__device__ T* dynamic_shared_memory() {
    extern __shared__ __align__(16) unsigned char dynamic_shared_bytes[];
    return reinterpret_cast<T*>(dynamic_shared_bytes);
}
#endif

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill the GPU, each thread then walks
// i, i + gridDim.x * blockDim.x, ...
inline int blocks_for(int64_t n) {
    return (int)std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, 8192));
}

// One block per row (the row kernels: norms, cross-entropy, reductions):
// as many blocks as rows, up to gridDim.x's limit, each then walking rows
// r, r + gridDim.x, ...
inline int row_blocks(int64_t rows) { return (int)std::max<int64_t>(1, std::min<int64_t>(rows, 65535)); }

// ---- indices out of range ---------------------------------------------------------
//
// An op that looks up indices (an embedding, a gather, cross-entropy's
// targets) must turn a bad index into an error, not a read past the end of a
// buffer. On the CPU the raw op checks them before calling the kernel. On
// the GPU that would mean copying every index tensor to the host, so that
// every such op waits for the GPU to finish. Here each kernel checks its own
// indices instead. It skips a bad one (writing 0, adding nothing) and
// records the first into this record. The record lives in pinned host memory
// that the GPU writes directly. The host reads it whenever it waits for the
// GPU anyway (copy_to_host: item(), printing, .to(cpu)) and throws then,
// naming the op, the index and the size it had to be below.
enum IndexOp : int { kNoIndexError = 0, kIndexSelectOp, kIndexAddOp, kGatherOp, kScatterAddOp, kCrossEntropyOp };
struct IndexErrorRecord {
    int op;  // an IndexOp; the first kernel to find a bad index sets it
    long long index, size;
};
// In a kernel: whether 0 <= index < size; if not, records it (first one wins).
__device__ inline bool index_in_range(int64_t index, int64_t size, IndexOp op, IndexErrorRecord* record) {
    if (index >= 0 && index < size) return true;
    if (atomicCAS(&record->op, (int)kNoIndexError, (int)op) == (int)kNoIndexError) {
        record->index = index;
        record->size = size;
    }
    return false;
}

}  // namespace cuda
}  // namespace nc
