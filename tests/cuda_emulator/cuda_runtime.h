// cuda_runtime.h — a CPU stand-in for the few parts of CUDA that
// normcore's kernel headers use, so that the kernels themselves (not a
// copy) run and are checked on a machine without a GPU, in every CI run.
//
// It is found instead of the toolkit's header because the emulated tests
// are compiled with -Itests/cuda_emulator (Makefile). A kernel header such
// as cuda/attention_tiled.cuh then compiles as plain C++:
//
//   __global__, __device__  nothing: a kernel is an ordinary function
//   __shared__              static: one array for all the block's threads
//                           (blocks run one after another, so one is enough)
//   threadIdx, blockIdx     set by the emulator before it resumes a thread
//   __syncthreads()         a barrier of the block's threads
//   dynamic_shared_memory   the launch's buffer (launch_with_shared)
//   __shfl_xor_sync, ...    an exchange through the warp's 32 slots
//   atomicAdd, atomicCAS    plain code (only one thread runs at a time)
//
// Each CUDA thread is a fiber (ucontext): the emulator runs one thread of
// the block until it reaches a barrier or ends, then the next, and lets a
// barrier pass once every live thread of the block (or of the warp, for a
// shuffle) waits at it. Threads that have returned no longer count, as on
// GPUs since Volta. Threads that wait at barriers no one else can reach (a
// __syncthreads inside an `if`) are reported as a deadlock, by throwing
// std::runtime_error from launch().
//
// Between barriers the threads of a block run in a fixed order, and
// `Schedule` chooses it: thread 0 first, or the last thread first. A
// missing __syncthreads usually lets some thread read shared memory
// another has not written yet in one of the two orders, so the tests run
// every launch both ways. What the emulator cannot show: speed, memory
// coalescing, bank conflicts, register pressure, float rounding of the
// GPU's own expf (glibc's is used) and races that need real concurrency.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

namespace cuda_emulator {

struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The running thread's coordinates and the launch's sizes (the emulator
// runs one CUDA thread at a time, so one variable of each is enough).
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

enum class Schedule { FirstThreadFirst, LastThreadFirst };

// Runs `body` once per thread of a grid x block launch, with
// `shared_bytes` of dynamic shared memory per block.
void run_grid(dim3 grid, dim3 block, size_t shared_bytes, Schedule schedule, const std::function<void()>& body);

// kernel<<<grid, block>>>(args...) on the CPU.
template <typename Kernel, typename... Args>
void launch(dim3 grid, dim3 block, Schedule schedule, Kernel kernel, Args... args) {
    run_grid(grid, block, 0, schedule, [&] { kernel(args...); });
}
// kernel<<<grid, block, shared_bytes>>>(args...) on the CPU.
template <typename Kernel, typename... Args>
void launch_with_shared(dim3 grid, dim3 block, size_t shared_bytes, Schedule schedule, Kernel kernel, Args... args) {
    run_grid(grid, block, shared_bytes, schedule, [&] { kernel(args...); });
}

// The running block's dynamic shared memory. Each block's starts filled
// with 0xff bytes (a NaN in every float and double), so a kernel that reads
// it before writing it shows. (Static __shared__ arrays keep what the last
// block left: a kernel reading one before writing it is not caught.)
void* dynamic_shared_bytes();

void syncthreads();
// The 8 bytes of `value` from lane `source` of the calling thread's warp;
// every live thread of the warp must call it with a full mask.
uint64_t exchange_in_warp(unsigned mask, uint64_t value, int source);
int lane_id();

template <typename T>
T shuffle(unsigned mask, T value, int source) {
    static_assert(sizeof(T) <= 8, "the emulator shuffles values of up to 8 bytes");
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    bits = exchange_in_warp(mask, bits, source);
    std::memcpy(&value, &bits, sizeof(T));
    return value;
}

}  // namespace cuda_emulator

using cuda_emulator::blockDim;
using cuda_emulator::blockIdx;
using cuda_emulator::dim3;
using cuda_emulator::gridDim;
using cuda_emulator::threadIdx;
using cuda_emulator::uint3;

// The CUDA keywords a kernel header uses. Macros, because they are keywords.
// (`#pragma unroll` is only a hint; the Makefile silences g++ about it.)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

inline void __syncthreads() { cuda_emulator::syncthreads(); }

// device_common.cuh's, for the GPU, declares `extern __shared__` bytes.
template <typename T>
T* dynamic_shared_memory() {
    return static_cast<T*>(cuda_emulator::dynamic_shared_bytes());
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
    return cuda_emulator::shuffle(mask, value, cuda_emulator::lane_id() ^ lane_mask);
}
// A lane past the warp's end keeps its own value, as on the GPU.
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta) {
    int source = cuda_emulator::lane_id() + (int)delta;
    return cuda_emulator::shuffle(mask, value, source < 32 ? source : cuda_emulator::lane_id());
}

inline float atomicAdd(float* address, float value) {
    float old = *address;
    *address = old + value;
    return old;
}
inline double atomicAdd(double* address, double value) {
    double old = *address;
    *address = old + value;
    return old;
}
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    unsigned long long old = *address;
    *address = old + value;
    return old;
}
inline int atomicCAS(int* address, int compare, int value) {
    int old = *address;
    if (old == compare) *address = value;
    return old;
}
