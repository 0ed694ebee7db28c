// gemm_kernels.h — the register-blocked micro-kernels GEMM is built on, one
// per instruction set, chosen at run time from what the CPU supports.
//
// A micro-kernel computes one MR x NR block of C from a packed A panel
// (kc steps of MR values) and a packed B panel (kc steps of NR values):
//
//   C[i][j] (+)= sum_p a[p*MR + i] * b[p*NR + j]       0 <= i < MR, 0 <= j < NR
//
// i.e. kc rank-1 updates of an accumulator block that never leaves the
// registers. Only rows < m and columns < n are written back (edge blocks).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace nc {
namespace cpu {

// Every value exists on every CPU (so code can name them), but only the
// kernels of the build's own architecture are compiled: AVX2 and AVX-512 on
// x86-64, NEON on AArch64. cpu_supports() is false for the others.
enum class SimdIsa { Portable, Avx2, Avx512, Neon };
const char* simd_isa_name(SimdIsa isa);
// Whether this CPU (and this build) can run code for `isa`.
bool cpu_supports(SimdIsa isa);
// The widest instruction set this CPU supports; fixed for the process.
SimdIsa best_simd_isa();
// The instruction sets this build has kernels for, narrowest first:
// portable, AVX2, AVX-512 on x86-64; portable, NEON on AArch64.
std::vector<SimdIsa> compiled_simd_isas();

using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int m, int n,
                               bool accumulate);

// Packing helper: copies a block of `rows` x 16 floats (rows <= 16, rows
// src_stride apart) transposed, dst[p * dst_stride + i] = src[i * src_stride + p]
// for p < 16 and i < width, writing zeros for rows <= i < width (width <= 16).
// Packing a row-major A, or the W of x W^T, is exactly this transpose.
using Transpose16Fn = void (*)(const float* src, int64_t src_stride, int rows, float* dst, int64_t dst_stride,
                               int width);

// The same block for m <= MR rows of A read where it lies, unpacked:
// A(i, p) at a[i * a_rs + p * a_cs], with A row-major (a_cs = 1) or
// transposed (a_rs = 1, as in a weight gradient dY^T X). Only the m rows
// are read. The multiply-adds, and their order, are those of the packed
// kernel, so the result is the same to the bit; only the copy into a panel
// is saved.
using MicroKernelUnpackedAFn = void (*)(int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
                                        float* c, int64_t ldc, int m, int n, bool accumulate);

// The dot products of the one-row product (gemv.cpp), B read in place:
//   c[j] (+)= dot(a, B[:, j])     for j < columns,
// column j at b + j * b_cs, contiguous along k. `streaming`: B comes from
// memory, so read its columns one after the other (one sequential stream);
// otherwise several at a time. Every kernel adds each sum in the same
// order, however many columns it takes at once, so which one runs never
// changes a bit (the hand-written kernels fuse every multiply-add; the
// plain C++ one does where the build has the instruction, FP_FAST_FMAF,
// and a build without it uses the plain kernel alone, gemv.h):
//   - kDotLanes partial sums; partial i takes the terms k = i, i + 16,
//     i + 32, ... in increasing k, each a fused multiply-add (a vector
//     register of 16 floats holds all of them);
//   - then ((0 + partial_0) + partial_1) + ... + partial_15, left to right.
// The portable kernel (gemm_kernel_portable.cpp) is the order written out.
constexpr int kDotLanes = 16;
using DotColumnsFn = void (*)(int64_t K, const float* a, const float* b, int64_t b_cs, int64_t columns, float* c,
                              bool accumulate, bool streaming);
// The same dot products with B holding 16-bit numbers (mixed precision's
// weights: bfloat16 when `bfloat16`, else float16, as their bits), each
// widened to float32 as it is loaded; a is float32 (widened once by the
// caller). The same order as above, so the bits of DotColumnsFn on the
// widened B: a product of two 16-bit numbers is exact in float32 (a
// bfloat16 one unless it overflows or falls below float32's normal
// numbers: bfloat16 has float32's exponents).
using DotColumns16Fn = void (*)(int64_t K, const float* a, const uint16_t* b, int64_t b_cs, int64_t columns,
                                bool bfloat16, float* c, bool accumulate, bool streaming);

struct MicroKernel {
    SimdIsa isa;
    int mr, nr;  // register block: MR rows x NR columns of C
    MicroKernelFn run;
    Transpose16Fn transpose16;  // nullptr: packing uses plain loops
    MicroKernelUnpackedAFn run_unpacked_a = nullptr;  // nullptr: A is always packed
    DotColumnsFn dot_columns = nullptr;               // nullptr: the portable kernel's
    DotColumns16Fn dot_columns_16bit = nullptr;       // nullptr: the portable kernel's
};
const MicroKernel& micro_kernel_for(SimdIsa isa);

// float64 (used by gradcheck and tests, not for speed) has one plain kernel.
using MicroKernelDoubleFn = void (*)(int64_t kc, const double* a, const double* b, double* c, int64_t ldc, int m,
                                     int n, bool accumulate);
struct MicroKernelDouble {
    int mr, nr;
    MicroKernelDoubleFn run;
};
extern const MicroKernelDouble kDoubleKernel;

// The implementations (gemm_kernel_*.cpp). The AVX ones are compiled for
// their instruction set whatever the build's -march is, and are only called
// after cpu_supports() said yes; NEON is part of every AArch64 CPU.
extern const MicroKernel kPortableKernel;
#if defined(__x86_64__) || defined(__i386__)
extern const MicroKernel kAvx2Kernel, kAvx512Kernel;
#endif
#if defined(__aarch64__)
extern const MicroKernel kNeonKernel;
#endif

// The hardware's limit: GFLOP/s of a loop of independent FMAs on this many
// threads (each thread runs `iterations` x 12 vector FMAs). 2 FLOPs per lane.
double measure_fma_peak_gflops(SimdIsa isa, int threads, int64_t iterations);
// How many iterations of a peak measurement last about `seconds`:
// `measure(n)` (measure_fma_peak_gflops or the vdpbf16ps one) runs once
// untimed with 100,000 (starting the threads, waking the clocks), then
// twice timed with a million; the count is scaled from the faster of the
// two, and is at least 250,000 (so that a probe slowed by another process
// cannot shrink the samples to where starting the threads is all they
// measure). Peaks are sampled for a time, not a fixed count: a debug or
// sanitizer build runs these loops 10-25 times slower, and the 17 million
// iterations every training run spent on its MFU's peak took 0.7 s there,
// where 30 ms in a release build.
int64_t iterations_lasting(double seconds, const std::function<double(int64_t)>& measure);
// The best of `samples` samples of `measure` (GFLOP/s), each of about
// `seconds` (sized by iterations_lasting): a peak can only be underestimated
// by a sample another process slowed, so the highest is the one to trust.
double best_peak_gflops(const std::function<double(int64_t)>& measure, int samples, double seconds);
// The timing both peak measurements share (this one and gemm_16bit.h's
// vdpbf16ps peak): `loop(iterations)` on `threads` threads at once, as
// GFLOP/s given the FLOPs one thread does per iteration.
double time_register_loop_gflops(float (*loop)(int64_t), int threads, int64_t iterations,
                                 double flops_per_iteration);
// One thread's FMA loop, used by measure_fma_peak_gflops; returns a value
// derived from the accumulators so the compiler cannot drop the work.
float fma_loop_portable(int64_t iterations);
#if defined(__x86_64__) || defined(__i386__)
float fma_loop_avx2(int64_t iterations);
float fma_loop_avx512(int64_t iterations);
#endif
#if defined(__aarch64__)
float fma_loop_neon(int64_t iterations);
#endif

}  // namespace cpu
}  // namespace nc
