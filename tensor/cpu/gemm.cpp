// gemm.cpp — a cache-blocked, register-blocked, multi-threaded GEMM.
//
// The textbook loop  for i, j, p: C[i][j] += A[i][p] * B[p][j]  is slow not
// because of the arithmetic but because of memory: every multiply-add loads
// two numbers. The structure below (after Goto & van de Geijn, "Anatomy of
// High-Performance Matrix Multiplication", 2008, and the BLIS papers) makes
// each loaded number serve many multiply-adds:
//
//   for each tile of C (kMC rows x kNC columns)       <- OpenMP splits tiles
//     for each slice of K (kKC long)
//       pack A[tile rows, slice] into panels of kMR rows   (fits in L2)
//       pack B[slice, tile cols] into panels of kNR cols   (one panel in L1)
//       for each kNR-column panel of B, for each kMR-row panel of A:
//         micro-kernel: a kMR x kNR block of C held in registers,
//                       updated with kKC rank-1 updates
//
// Packing copies the operands into the exact order the micro-kernel reads
// them (unit stride, zero-padded at the edges), which also is where any
// transposition is absorbed. The micro-kernels (gemm_kernel_*.cpp) are
// chosen at run time: AVX-512, AVX2 or plain C++.
//
// Tutorial chapter 9 (tutorials/09-making-it-fast.md) builds this up step by
// step from the triple loop, with the GFLOP/s of each step.
#include "tensor/cpu/gemm.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include <omp.h>

#include "tensor/cpu/allocator.h"
#include "tensor/error.h"

namespace nc {
namespace cpu {

namespace {

// Cache blocking, for a micro-kernel of mr x nr:
//   kc: the K slice. The B micro-panel (kc x nr floats, 32 KiB for AVX-512)
//       stays in L1 while every A micro-panel of the block streams past it.
//   mc x kc: the packed A block, in L2 (144 rows: 144 KiB).
//   kc x nc: the packed B block, in L2 as well (1024 columns: 1 MiB). Wide
//       strips mean A is packed fewer times (once per strip); a sweep of
//       nc in {512, 1024, 2048} and mc in {144, 288, 576} differed by under 2%.
struct Blocking {
    int64_t kc, mc, nc;
};
Blocking blocking_for(int mr, int nr) { return {256, (144 + mr - 1) / mr * mr, (1024 + nr - 1) / nr * nr}; }

// Packs rows [0, m) x cols [0, kc) of A (already offset to the block) into
// panels of mr rows: panel r holds A(r*mr + i, p) at [r][p][i]. Rows past m
// are zero, so the micro-kernel never needs an edge case. The writes are
// sequential; the reads are mr streams (A row-major) or one contiguous run
// of mr values per p (A transposed, rs == 1).
template <typename T>
void pack_a(const T* A, int64_t rs, int64_t cs, int64_t m, int64_t kc, int mr, T* packed, Transpose16Fn transpose) {
    if (rs == 1 && cs != 1) {
        // A transposed (a weight gradient dY^T X): step p of every panel is a
        // piece of row p of the stored matrix. Walking p outermost reads each
        // stored row once, contiguously, for the whole block (panel by panel
        // it would touch kc rows, often in kc different pages, per panel).
        for (int64_t p = 0; p < kc; ++p) {
            const T* row = A + p * cs;
            for (int64_t r = 0; r < m; r += mr) {
                int64_t rows = std::min<int64_t>(mr, m - r);
                T* out = packed + r * kc + p * mr;
                std::copy_n(row + r, rows, out);
                std::fill(out + rows, out + mr, T(0));
            }
        }
        return;
    }
    for (int64_t r = 0; r < m; r += mr) {
        T* panel = packed + r * kc;
        const T* block = A + r * rs;
        int64_t rows = std::min<int64_t>(mr, m - r);
        int64_t p = 0;
        if constexpr (std::is_same_v<T, float>) {
            // Row-major A: the panel is the block transposed, 16 values of p
            // at a time through the kernel's in-register transpose.
            if (transpose && cs == 1 && mr <= 16)
                for (; p + 16 <= kc; p += 16) transpose(block + p, rs, (int)rows, panel + p * mr, mr, mr);
        }
        for (; p < kc; ++p) {
            T* out = panel + p * mr;
            for (int64_t i = 0; i < rows; ++i) out[i] = block[i * rs + p * cs];
            for (int64_t i = rows; i < mr; ++i) out[i] = T(0);
        }
    }
}

// Packs rows [0, kc) x cols [0, n) of B into panels of nr columns:
// panel c holds B(p, c*nr + j) at [c][p][j], zero-padded past n.
template <typename T>
void pack_b(const T* B, int64_t rs, int64_t cs, int64_t kc, int64_t n, int nr, T* packed, Transpose16Fn transpose) {
    for (int64_t c = 0; c < n; c += nr) {
        T* panel = packed + c * kc;
        int64_t cols = std::min<int64_t>(nr, n - c);
        if constexpr (std::is_same_v<T, float>) {
            if (transpose && rs == 1 && cs != 1 && nr % 16 == 0) {
                // x W^T: 16 rows of W (columns j of B) by 16 values of p at a
                // time, transposed in registers; columns past n come out 0.
                int64_t full = kc / 16 * 16;
                for (int64_t j0 = 0; j0 < nr; j0 += 16) {
                    int rows = (int)std::max<int64_t>(0, std::min<int64_t>(16, cols - j0));
                    for (int64_t p = 0; p < full; p += 16)
                        transpose(B + (c + j0) * cs + p, cs, rows, panel + p * nr + j0, nr, 16);
                }
                for (int64_t p = full; p < kc; ++p)
                    for (int64_t j = 0; j < nr; ++j) panel[p * nr + j] = j < cols ? B[(c + j) * cs + p] : T(0);
                continue;
            }
        }
        if (rs == 1 && cs != 1) {
            // B is a transposed row-major matrix (x W^T in a Linear layer):
            // B(p, j) = W[j][p]. Walk W's rows 16 values (a cache line) at a
            // time so both the reads and the scattered writes stay in L1.
            for (int64_t p0 = 0; p0 < kc; p0 += 16) {
                int64_t p1 = std::min<int64_t>(kc, p0 + 16);
                for (int64_t j = 0; j < cols; ++j) {
                    const T* w_row = B + (c + j) * cs;
                    for (int64_t p = p0; p < p1; ++p) panel[p * nr + j] = w_row[p];
                }
                for (int64_t p = p0; p < p1; ++p)
                    for (int64_t j = cols; j < nr; ++j) panel[p * nr + j] = T(0);
            }
            continue;
        }
        for (int64_t p = 0; p < kc; ++p) {
            const T* row = B + p * rs + c * cs;
            T* out = panel + p * nr;
            if (cs == 1) {  // row-major B: a plain copy the compiler vectorizes
                for (int64_t j = 0; j < cols; ++j) out[j] = row[j];
            } else {
                for (int64_t j = 0; j < cols; ++j) out[j] = row[j * cs];
            }
            for (int64_t j = cols; j < nr; ++j) out[j] = T(0);
        }
    }
}

Transpose16Fn transpose_of(const MicroKernel& kernel) { return kernel.transpose16; }
Transpose16Fn transpose_of(const MicroKernelDouble&) { return nullptr; }

// The blocked loops around a micro-kernel (MicroKernel or MicroKernelDouble).
//
// Work is split into items: one batch matrix, one strip of nc columns of C,
// and one range of rows. Each thread packs the strip's B block once per K
// slice and reuses it for all its rows (BLIS's loop order). Rows are split
// further only when there are too few strips to keep every thread busy.
// `accumulate` adds to C instead of overwriting it; `allow_threads` = false
// keeps everything on the calling thread (inside an already parallel loop).
//
// The operands are described by pointers, so the single-matrix entry below
// needs no vectors: matrix b of the batch starts at data + batch_offsets[b].
int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

template <typename T>
struct Operand {
    const T* data;
    const int64_t* batch_offsets;
    int64_t row_stride, col_stride;
};

template <typename T, typename Kernel>
void gemm_blocked(int64_t M, int64_t N, int64_t K, const Operand<T>& A, const Operand<T>& B, T* C,
                  const int64_t* c_offsets, int64_t batch, int64_t ldc, const Kernel& kernel, bool allow_threads,
                  bool accumulate) {
    const int mr = kernel.mr, nr = kernel.nr;
    const Blocking blk = blocking_for(mr, nr);
    bool parallel = allow_threads && (double)M * N * K * batch > 1e5;
    int threads = parallel ? omp_get_max_threads() : 1;

    int64_t strips = (N + blk.nc - 1) / blk.nc;
    int64_t row_groups = 1;  // ranges of rows per strip, each a multiple of mr rows
    while (batch * strips * row_groups < 2 * threads && (M + row_groups * 2 - 1) / (row_groups * 2) >= 2 * mr)
        row_groups *= 2;
    int64_t rows_per_group = ((M + row_groups - 1) / row_groups + mr - 1) / mr * mr;
    row_groups = (M + rows_per_group - 1) / rows_per_group;
    int64_t items = batch * strips * row_groups;

#pragma omp parallel if (parallel && items > 1)
    {
        // Each thread packs into its own buffers (from the caching allocator,
        // so a training step does not go back to malloc for them).
        // Sized for this product, not the largest block (a 64 x 64 attention
        // tile needs 16 KiB, not 1 MiB).
        ScratchBuffer<T> a_packed(std::min(blk.mc, round_up(M, mr)) * std::min(blk.kc, K)),
            b_packed(std::min(blk.kc, K) * std::min(blk.nc, round_up(N, nr)));
#pragma omp for schedule(dynamic)
        for (int64_t item = 0; item < items; ++item) {
            int64_t bi = item / (strips * row_groups);
            int64_t jc = (item / row_groups) % strips * blk.nc;
            int64_t row_begin = item % row_groups * rows_per_group;
            int64_t row_end = std::min(M, row_begin + rows_per_group);
            int64_t nc = std::min(blk.nc, N - jc);
            T* c_strip = C + c_offsets[bi] + jc;
            if (K == 0) {  // an empty sum: C = 0 (or C unchanged when accumulating)
                if (accumulate) continue;
                for (int64_t i = row_begin; i < row_end; ++i) std::fill(c_strip + i * ldc, c_strip + i * ldc + nc, T(0));
                continue;
            }
            for (int64_t pc = 0; pc < K; pc += blk.kc) {
                int64_t kc = std::min(blk.kc, K - pc);
                pack_b(B.data + B.batch_offsets[bi] + pc * B.row_stride + jc * B.col_stride, B.row_stride,
                       B.col_stride, kc, nc, nr, b_packed.data(), transpose_of(kernel));
                for (int64_t ic = row_begin; ic < row_end; ic += blk.mc) {
                    int64_t mc = std::min(blk.mc, row_end - ic);
                    pack_a(A.data + A.batch_offsets[bi] + ic * A.row_stride + pc * A.col_stride, A.row_stride,
                           A.col_stride, mc, kc, mr, a_packed.data(), transpose_of(kernel));
                    for (int64_t jr = 0; jr < nc; jr += nr)
                        for (int64_t ir = 0; ir < mc; ir += mr)
                            kernel.run(kc, a_packed.data() + ir * kc, b_packed.data() + jr * kc,
                                       c_strip + (ic + ir) * ldc + jr, ldc, (int)std::min<int64_t>(mr, mc - ir),
                                       (int)std::min<int64_t>(nr, nc - jr), /*accumulate=*/accumulate || pc > 0);
                }
            }
        }
    }
}

template <typename T>
Operand<T> operand(const MatrixOperand<T>& m) { return {m.data, m.batch_offsets.data(), m.row_stride, m.col_stride}; }

}  // namespace

void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<float>& A, const MatrixOperand<float>& B, float* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride, SimdIsa isa, bool accumulate) {
    if (!cpu_supports(isa))
        throw Error(std::string("gemm: this CPU does not support the ") + simd_isa_name(isa) + " micro-kernel");
    gemm_blocked(M, N, K, operand(A), operand(B), C, c_offsets.data(), (int64_t)c_offsets.size(), c_row_stride,
                 micro_kernel_for(isa), /*allow_threads=*/true, accumulate);
}

void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<double>& A, const MatrixOperand<double>& B, double* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride, bool accumulate) {
    gemm_blocked(M, N, K, operand(A), operand(B), C, c_offsets.data(), (int64_t)c_offsets.size(), c_row_stride,
                 kDoubleKernel, /*allow_threads=*/true, accumulate);
}

void gemm_single_thread(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                        int64_t b_rs, int64_t b_cs, float* C, int64_t ldc, bool accumulate) {
    const int64_t zero = 0;
    gemm_blocked<float>(M, N, K, {A, &zero, a_rs, a_cs}, {B, &zero, b_rs, b_cs}, C, &zero, 1, ldc,
                        micro_kernel_for(best_simd_isa()), /*allow_threads=*/false, accumulate);
}

void gemm_single_thread(int64_t M, int64_t N, int64_t K, const double* A, int64_t a_rs, int64_t a_cs,
                        const double* B, int64_t b_rs, int64_t b_cs, double* C, int64_t ldc, bool accumulate) {
    const int64_t zero = 0;
    gemm_blocked<double>(M, N, K, {A, &zero, a_rs, a_cs}, {B, &zero, b_rs, b_cs}, C, &zero, 1, ldc, kDoubleKernel,
                         /*allow_threads=*/false, accumulate);
}

template <typename T>
void gemm_reference(int64_t M, int64_t N, int64_t K, const T* A, int64_t a_rs, int64_t a_cs, const T* B,
                    int64_t b_rs, int64_t b_cs, T* C, int64_t c_rs) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            T total = 0;
            for (int64_t p = 0; p < K; ++p) total += A[i * a_rs + p * a_cs] * B[p * b_rs + j * b_cs];
            C[i * c_rs + j] = total;
        }
}

template void gemm_reference<float>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t,
                                    int64_t, float*, int64_t);
template void gemm_reference<double>(int64_t, int64_t, int64_t, const double*, int64_t, int64_t, const double*,
                                     int64_t, int64_t, double*, int64_t);

}  // namespace cpu
}  // namespace nc
