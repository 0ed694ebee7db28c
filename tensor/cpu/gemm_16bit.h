// gemm_16bit.h — C (+)= A B where A and B hold 16-bit numbers (bfloat16 or
// float16) and C is float32: mixed-precision training's matrix product.
//
// The product of two 16-bit numbers is exact in float32 (8 x 8 or 11 x 11
// significant bits fit in float32's 24), so the only roundings are those of
// the float32 sums, the same as a float32 GEMM of the widened inputs. What
// 16 bits buy is speed and memory: half the bytes to move, and on CPUs with
// AVX512-BF16 one instruction (vdpbf16ps) does two multiply-adds per lane.
//
// Three ways to run it:
//   Widen:   packing converts to float32 and the float32 micro-kernel runs
//            (any CPU, both 16-bit formats);
//   Bf16Dot: packing keeps bfloat16, in pairs along K, and the AVX512-BF16
//            micro-kernel adds a[2q] b[2q] + a[2q+1] b[2q+1] per lane;
//   Amx:     the same pairs, multiplied 16 x 16 x 32 at a time by AMX tiles
//            (gemm_kernel_amx.cpp).
// matmul takes AMX where the CPU has it, else AVX512-BF16 where it pays
// (bf16_dot_pays), else widens; a product with one row of A and B's
// columns contiguous (generating a token) goes to gemv_16bit (gemv.h)
// whatever the path and micro-kernel asked for (takes_gemv_16bit). CPUs
// differ: on the development machine (a Sapphire Rapids-class Xeon)
// vdpbf16ps issues at a quarter of the FMA's rate, so its two products per
// lane reach half the FMA's FLOPs; on an AMD EPYC (Zen 4) it issues at the
// full rate, 1.8x the FMA's FLOPs, and its GEMMs ran 1.1-1.9x float32's
// where widening ran 0.74-1.00x
// (bench/results/cpu-2026-12-04-mfu.txt; chapter 9 has the Xeon's numbers).
//
// Shapes: C [M, N] (+)= A [M, K] B [K, N], each a strided view, as gemm.h.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/cpu/gemm.h"
#include "tensor/dtype.h"

namespace nc {
namespace cpu {

enum class Gemm16Path { Widen, Bf16Dot, Amx };
const char* gemm16_path_name(Gemm16Path path);  // "widen to float32", "AVX512-BF16", "AMX"
// Whether this CPU (and build) can run `path` for numbers of `dtype`.
bool cpu_supports(Gemm16Path path, DType dtype);
// The path matmul takes for `dtype` (kBFloat16 or kFloat16) on this CPU.
Gemm16Path best_gemm16_path(DType dtype);
// Whether vdpbf16ps does more FLOPs per second than the float32 FMA, by a
// quarter at least (two products per lane: it must issue at more than half
// the FMA's rate). Measured once per process on one thread, the two peak
// loops side by side (a few milliseconds); false without AVX512-BF16.
bool bf16_dot_pays();

// A and B hold `dtype` numbers as their 16 bits. C = A B, or C += A B when
// `accumulate`. `isa` picks the float32 micro-kernel the widening path
// multiplies with, and whose in-register transpose packs (the pair paths
// too); the best this CPU has unless a test asks for another.
void gemm_16bit(int64_t M, int64_t N, int64_t K, DType dtype, const MatrixOperand<uint16_t>& A,
                const MatrixOperand<uint16_t>& B, float* C, const std::vector<int64_t>& c_offsets,
                int64_t c_row_stride, Gemm16Path path, bool accumulate = false, SimdIsa isa = best_simd_isa());

// Whether gemm_16bit sends this product to gemv_16bit (gemv.h): one row of
// A (generating a token) with B's columns contiguous. That route widens
// whatever `path` says, so matmul asks for the path (and so runs
// bf16_dot_pays's few milliseconds) only for the products that use it.
bool takes_gemv_16bit(int64_t M, const MatrixOperand<uint16_t>& B);

// out[k] = the value of x[k] for k < n, x holding `dtype` numbers as their
// 16 bits (exact: every bfloat16 and float16 is a float32). The widening
// path's packing and the one-row product (gemv.h) convert through it.
void widen_run(const uint16_t* x, int64_t n, DType dtype, float* out);

// The AVX512-BF16 micro-kernel (gemm_kernel_avx512_bf16.cpp): an MR x NR
// block of C from kq steps of packed pairs, each a uint32 holding two
// bfloat16 (the even K index in the low half):
//   C[i][j] (+)= sum_q a0 b0 + a1 b1,  (a0, a1) = a[q*MR + i], (b0, b1) = b[q*NR + j]
struct PairKernel {
    int mr, nr;
    void (*run)(int64_t kq, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, int m, int n,
                bool accumulate);
};
#if defined(__x86_64__) || defined(__i386__)
extern const PairKernel kAvx512Bf16Kernel;
float bf16_dot_loop_avx512(int64_t iterations);  // vdpbf16ps chains, as fma_loop_avx512
#endif
// The peak rate of vdpbf16ps on `threads` threads, in GFLOP/s (4 FLOPs per
// lane: two multiplies, two adds), measured as measure_fma_peak_gflops
// measures the FMA's; 0 where the CPU has no AVX512-BF16. Beside the FMA
// peak it says whether the two products per lane can pay (`bench`).
double measure_bf16_dot_peak_gflops(int threads, int64_t iterations);
// The AMX kernel (gemm_kernel_amx.cpp): 32 x 32 blocks; A packed in chunks of
// 16 pairs x 32 rows, B as above, kq a multiple of 16. Each thread sets the
// tiles' shapes before its first call and releases them after its last.
#if defined(__x86_64__)
extern const PairKernel kAmxKernel;
void amx_configure_tiles();
void amx_release_tiles();
#endif

}  // namespace cpu
}  // namespace nc
