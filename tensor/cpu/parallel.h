// parallel.h — when the CPU kernels split work across OpenMP threads.
// Starting a parallel region costs microseconds, so a loop with little work
// runs on one thread: below kParallelMin elements (of work: a reduction
// over [rows, n] counts rows * n), or, for kernels that give each thread
// whole rows, below kParallelRows rows. Every `#pragma omp parallel ... if`
// in tensor/ uses these two numbers.
#pragma once

#include <cstdint>

namespace nc {
namespace cpu {

constexpr int64_t kParallelMin = 32768;
constexpr int64_t kParallelRows = 4;

}  // namespace cpu
}  // namespace nc
