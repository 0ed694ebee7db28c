// parallel.h — when and how the CPU kernels split work across OpenMP threads.
// Starting a parallel region costs microseconds, so a loop with little work
// runs on one thread: below kParallelMin elements (of work: a reduction
// over [rows, n] counts rows * n), or, for kernels that give each thread
// whole rows, below kParallelRows rows. The row and element kernels of
// tensor/ use these two numbers; the products (gemm.cpp, gemv.cpp) count
// multiply-adds instead. Loops go through the two functions below. The
// exceptions open their OpenMP regions themselves: products with a thread
// plan of their own (gemm.cpp's shared B block and K split, gemv.cpp,
// gemm_16bit.cpp), and loops that always use every thread (AdamW over all
// parameters, the FMA peak probe).
#pragma once

#include <cstdint>

namespace nc {
namespace cpu {

constexpr int64_t kParallelMin = 32768;
constexpr int64_t kParallelRows = 4;

// body(i) for every 0 <= i < n: split into one equal run of i per thread
// (schedule static) when `parallel` is true, else a plain loop on the
// calling thread. The plain loop is why this exists: OpenMP's own
// `#pragma omp parallel for if (false)` still opens a region of one thread,
// which costs about 0.36 us and a futex call to the idle thread pool, and
// generating one token of the default model ran some fifty such loops
// (bench/results/parallel-for-2026-12-05.txt).
// Each i is computed the same way whatever the thread count, so results do
// not depend on it.
template <typename Body>
void parallel_for(int64_t n, bool parallel, const Body& body) {
    if (!parallel) {
        for (int64_t i = 0; i < n; ++i) body(i);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i);
}

// The same for loops whose items differ in cost (schedule dynamic: a free
// thread takes the next i) and need working memory: each thread calls
// make_scratch() once and passes what it returns to body(i, scratch) for
// each of its i. Kernels that may themselves run inside another kernel's
// threads (attention's tile products, gemm_packed_b) must use this or
// parallel_for, never a bare `#pragma omp for`: outside a parallel region
// of their own, that would bind to the caller's threads.
template <typename MakeScratch, typename Body>
void parallel_for_dynamic(int64_t n, bool parallel, const MakeScratch& make_scratch, const Body& body) {
    if (!parallel) {
        auto scratch = make_scratch();
        for (int64_t i = 0; i < n; ++i) body(i, scratch);
        return;
    }
#pragma omp parallel
    {
        auto scratch = make_scratch();
#pragma omp for schedule(dynamic)
        for (int64_t i = 0; i < n; ++i) body(i, scratch);
    }
}

}  // namespace cpu
}  // namespace nc
