// allocator.h — the CPU's caching allocator.
//
// A training step allocates and frees the same few hundred blocks every step
// (activations, gradients, temporaries). Asking the C library each time costs
// page faults and zeroing of fresh pages from the OS, so freed blocks are
// kept on free lists by size class and handed out again: after the first step
// a steady-state step makes no system allocation at all (tests count them).
//
// Size classes: below 4 KiB, multiples of 64 bytes; above, four classes per
// power of two (1, 1.25, 1.5, 1.75 x 2^k), so at most 25% of a block is slack.
// All blocks are 64-byte aligned (a cache line, an AVX-512 register).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/backend.h"  // AllocatorStats

namespace nc {
namespace cpu {

void* allocate(size_t nbytes);
void deallocate(void* data);

// The counters (AllocatorStats, tensor/backend.h); the CUDA allocator keeps
// the same ones for device memory.
AllocatorStats allocator_stats();
void reset_peak_bytes();
// Returns every cached block to the C library.
void empty_cache();
// The size a request is rounded up to.
size_t size_class(size_t nbytes);

}  // namespace cpu
}  // namespace nc

namespace nc {
namespace cpu {

// A temporary array from the caching allocator, freed when it goes out of
// scope (the GEMM's packing buffers, for example).
template <typename T>
class ScratchBuffer {
public:
    explicit ScratchBuffer(size_t count) : data_(static_cast<T*>(allocate(count * sizeof(T)))) {}
    ~ScratchBuffer() { deallocate(data_); }
    ScratchBuffer(const ScratchBuffer&) = delete;
    ScratchBuffer& operator=(const ScratchBuffer&) = delete;
    T* data() const { return data_; }
    T& operator[](int64_t i) const { return data_[i]; }

private:
    T* data_;
};

}  // namespace cpu
}  // namespace nc
