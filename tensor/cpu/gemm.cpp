// gemm.cpp — a cache-blocked, register-blocked, multi-threaded GEMM.
//
// The textbook loop  for i, j, p: C[i][j] += A[i][p] * B[p][j]  is slow not
// because of the arithmetic but because of memory: every multiply-add loads
// two numbers. The structure below (after Goto & van de Geijn, "Anatomy of
// High-Performance Matrix Multiplication", 2008, and the BLIS papers) makes
// each loaded number serve many multiply-adds:
//
//   for each strip of C's columns (nc wide)
//     for each slice of K (kc long)
//       pack B[slice, strip] into panels of nr columns       (in L2)
//       for each block of mc rows                 <- OpenMP splits the rows
//         pack A[rows, slice] into panels of mr rows
//         for each mr-row panel of A, for each nr-column panel of B:
//           micro-kernel: an mr x nr block of C held in registers,
//                         updated with kc rank-1 updates
//
// Packing copies the operands into the exact order the micro-kernel reads
// them (unit stride, zero-padded at the edges), which also is where any
// transposition is absorbed. The micro-kernels (gemm_kernel_*.cpp) are
// chosen at run time: AVX-512, AVX2 or plain C++.
//
// Tutorial chapter 9 (tutorials/09-making-it-fast.md) climbs to this from the
// triple loop one program per rung (tutorials/gemm_ladder/), with the GFLOP/s
// of each.
//
// Shapes: C [M, N] (+)= A [M, K] B [K, N], each a strided view (MatrixOperand).
#include "tensor/cpu/gemm.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemv.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/row_share.h"
#include "tensor/cpu/split_k.h"
#include "tensor/error.h"

namespace nc {
namespace cpu {

namespace {

int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }
int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

// Cache blocking, for a micro-kernel of mr x nr:
//   kc: the K slice. One A micro-panel (kc x mr floats, 12 KiB for AVX-512)
//       stays in L1 while the B micro-panels of the strip stream past it
//       from L2; C's block then moves along a row of C, which the hardware
//       prefetcher follows (walking B panels outermost, with C's blocks going
//       down a column, was 3% slower on 1024-column strips).
//   mc x kc: the packed A block (144 rows: 144 KiB), in L2.
//   kc x nc: the packed B block, in L2 as well (1024 columns: 1 MiB). Wide
//       strips mean A is packed fewer times (once per strip); a sweep of
//       nc in {512, 1024, 2048} and mc in {144, 288, 576} differed by under 2%,
//       and of kc in {128, 192, 256, 320}, 256 was best.
struct Blocking {
    int64_t kc, mc, nc;
};
Blocking blocking_for(int mr, int nr) { return {256, round_up(144, mr), round_up(1024, nr)}; }

// At most this many micro-panels of rows (22: 264 rows for AVX-512's kernel of
// 12 rows, 132 for AVX2's of 6), the threads of a product share its columns,
// not its rows (blocked_loops). On a 2-core AMD EPYC (Zen 5, AVX-512), 2
// threads, warm operands, against sharing the rows: 64 x 128 x 384 NT (a
// 64-token prompt through the default model's qkv projection) from 140 to
// 206-223 GFLOP/s, where one thread alone ran 186; 64 x 768 x 2304 NT (GPT-2
// 124M's) from 173-179 to 281-282; 128 x 1024 x 1024 NT from 255 to 293-302;
// 256 rows -3% to +21%. With the limit at 1024 rows, products of 384 and 512
// rows ran 4-9% slower with column strips than with shared rows (one shape of
// 384 rows 1-5% faster), 768 and 1024 rows even
// (bench/results/gemm-few-rows-column-strips-2026-12-05.txt). With the limit
// at 256 rows for AVX2 too, on a 2-core Zen 3, products of 192 and 256 rows
// ran up to 17% faster warm (256 x 1024 x 1024 TN, the tiny model's MLP weight
// gradient) and 23% faster cold with shared rows, those of 96 and 128 rows
// within -11% to +9% either way
// (bench/results/gemm-few-rows-avx2-2026-12-07.txt). Counted in rows the two
// machines' limits differ by the kernel's height; counted in panels they agree
// (both sides measured place it between 22 and 31 panels on both machines; 22
// is the lowest), so the limit is in panels. (The 8-row NEON, portable and
// float64 kernels' 176 rows were not measured.)
constexpr int64_t kFewRowPanels = 22;

// Packed A micro-panels (kc x mr values each) sit one cache line further
// apart than they need to. With kc = 256 and mr = 12, back-to-back panels
// would start exactly 12 KiB apart, a multiple of 4 KiB: the same offset in
// every panel then falls in the same L1 cache set (L1 picks the set from
// address bits 6-11), and packing a transposed A, which writes to all the
// panels of a block in turn, keeps evicting its own half-written lines (L1
// has 12 ways). With the extra line, packing a block that sits in L2 went
// from 24 to 34 GB/s (a loop packing one 144 x 256 block again and again).
template <typename T>
int64_t a_panel_stride(int64_t kc, int mr) { return kc * mr + 64 / (int64_t)sizeof(T); }

// Steps p .. p + steps - 1 of every panel of a transposed A: values r ..
// r+MR-1 of stored row p + q go to step q of panel r / MR (panels are
// panel_stride apart). Four steps at a time, panel by panel, so that each
// panel gets 4 * MR contiguous values at once: walking one step across all
// the panels wrote a 48-byte piece to each panel in turn, and the stores,
// each waiting for its own line, ran at 20 GB/s against 34 (the same loop).
// With MR known when compiling, each piece is a couple of vector moves
// (std::copy_n called memmove for each dozen floats, 8% of a weight-gradient
// GEMM's time).
template <int MR, typename T>
void scatter_rows(const T* rows, int64_t cs, int steps, int64_t m, int64_t panel_stride, T* out) {
    int64_t r = 0;
    for (; r + MR <= m; r += MR, out += panel_stride)
        for (int q = 0; q < steps; ++q)
            std::memcpy(out + q * MR, rows + q * cs + r, MR * sizeof(T));  // a fixed size: inlined as vector moves
    if (r < m)  // the zero-padded edge
        for (int q = 0; q < steps; ++q)
            for (int i = 0; i < MR; ++i) out[q * MR + i] = r + i < m ? rows[q * cs + r + i] : T(0);
}

// Packs rows [0, m) x cols [0, kc) of A (already offset to the block) into
// panels of mr rows: panel r holds A(r*mr + i, p) at [r][p][i]. Rows past m
// are zero, so the micro-kernel never needs an edge case. The writes are
// sequential; the reads are mr streams (A row-major) or one contiguous run
// of mr values per p (A transposed, rs == 1).
template <typename T>
void pack_a(const T* A, int64_t rs, int64_t cs, int64_t m, int64_t kc, int mr, T* packed, Transpose16Fn transpose) {
    const int64_t panel_stride = a_panel_stride<T>(kc, mr);
    if (rs == 1 && cs != 1) {
        // A transposed (a weight gradient dY^T X): step p of every panel is a
        // piece of row p of the stored matrix. Walking p outermost (four
        // steps at a time) reads each stored row once, contiguously, for the
        // whole block (panel by panel it would touch kc rows, often in kc
        // different pages, per panel).
        constexpr int kSteps = 4;  // 4 steps of 12 floats: 192 contiguous bytes per panel
        for (int64_t p = 0; p < kc; p += kSteps) {
            const T* rows = A + p * cs;
            int steps = (int)std::min<int64_t>(kSteps, kc - p);
            // Runs of a few hundred bytes in many rows are too short for the
            // hardware prefetcher to follow: ask for the rows 8 steps ahead
            // now (into L2). Worth 2% of a weight-gradient GEMM.
            for (int q = 0; q < steps && p + q + 8 < kc; ++q)
                for (int64_t i = 0; i < m; i += 64 / (int64_t)sizeof(T))
                    __builtin_prefetch(rows + (q + 8) * cs + i, 0, 2);
            T* out = packed + p * mr;
            switch (mr) {  // the kernels' mr values, so that the copies have a fixed width
                case 6: scatter_rows<6>(rows, cs, steps, m, panel_stride, out); break;
                case 8: scatter_rows<8>(rows, cs, steps, m, panel_stride, out); break;
                case 12: scatter_rows<12>(rows, cs, steps, m, panel_stride, out); break;
                default:
                    for (int q = 0; q < steps; ++q)
                        for (int64_t i = 0; i < round_up(m, mr); ++i)
                            out[i / mr * panel_stride + q * mr + i % mr] = i < m ? rows[q * cs + i] : T(0);
            }
        }
        return;
    }
    for (int64_t r = 0; r < m; r += mr) {
        T* panel = packed + r / mr * panel_stride;
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
            // (A row-major B, cs = 1, goes to pack_b_rows instead.)
            for (int64_t j = 0; j < cols; ++j) out[j] = row[j * cs];
            for (int64_t j = cols; j < nr; ++j) out[j] = T(0);
        }
    }
}

Transpose16Fn transpose_of(const MicroKernel& kernel) { return kernel.transpose16; }
Transpose16Fn transpose_of(const MicroKernelDouble&) { return nullptr; }
MicroKernelUnpackedAFn unpacked_a_of(const MicroKernel& kernel) { return kernel.run_unpacked_a; }
MicroKernelUnpackedAFn unpacked_a_of(const MicroKernelDouble&) { return nullptr; }

// The operands are described by pointers, so the single-matrix entry below
// needs no vectors: matrix b of the batch starts at data + batch_offsets[b].
template <typename T>
struct Operand {
    const T* data;
    const int64_t* batch_offsets;
    int64_t row_stride, col_stride;
};

// One product, described once for the loops below.
template <typename T, typename Kernel>
struct GemmProblem {
    int64_t M, N, K;
    Operand<T> A, B;
    T* C;
    const int64_t* c_offsets;
    int64_t ldc;
    const Kernel& kernel;
    Blocking blk;
    bool accumulate;
    PackingBuffers<T>* buffers = nullptr;  // the caller's own, for a product on one thread (nullptr: allocate)
    // A row of N values that every row of C starts from (a linear layer's
    // bias), or nullptr; never together with `accumulate`. Each block of C
    // gets it just before its first product, while the block is in L1
    // (start_from_bias), so the bias costs no pass of its own over C.
    const T* bias = nullptr;
};

// C's block (rows x columns at c, row stride ldc) set to the bias's
// columns [j0, j0 + columns): what the first product then adds to. The
// sums are the ones a C filled with the bias beforehand would get.
template <typename T>
void start_from_bias(const T* bias, int64_t j0, int64_t rows, int64_t columns, T* c, int64_t ldc) {
    for (int64_t i = 0; i < rows; ++i) std::memcpy(c + i * ldc, bias + j0, columns * sizeof(T));
}

// The size of one thread's packed A block: at most mc rows, slices of at
// most kc_max.
template <typename T, typename Kernel>
int64_t a_block_size(const GemmProblem<T, Kernel>& g, int64_t kc_max) {
    return ceil_div(std::min(g.blk.mc, g.M), g.kernel.mr) * a_panel_stride<T>(kc_max, g.kernel.mr);
}

// Rows [p_begin, p_end) of B(slice pc, columns [jc, jc + n)) of matrix bi,
// a row-major B (col_stride 1), packed as pack_b packs it: panel c (columns
// c..c+nr-1) at b_packed + c kc, its row p at + p nr, zeros past column n.
//
// Row by row across all the panels, the reads run along whole rows of B,
// one stream. Panel by panel they would step down a strip nr numbers wide,
// into a new 4 KiB region every few rows for a wide B, which (our reading)
// the hardware prefetcher follows poorly. It matters when B comes from
// memory, as a step's activations do: warm operands made train's weight
// gradients 14-18% faster than cold ones, and packing by rows took
// 128 x 2048 x 512 from 138-142 to 152-157 GFLOP/s inside the step
// (bench/results/pack-b-rows-2026-12-05.txt).
template <typename T, typename Kernel>
void pack_b_rows(const GemmProblem<T, Kernel>& g, int64_t bi, int64_t pc, int64_t kc, int64_t jc, int64_t n,
                 int64_t p_begin, int64_t p_end, T* b_packed) {
    assert(g.B.col_stride == 1);
    const int nr = g.kernel.nr;
    const T* B = g.B.data + g.B.batch_offsets[bi] + pc * g.B.row_stride + jc;
    for (int64_t p = p_begin; p < p_end; ++p) {
        const T* row = B + p * g.B.row_stride;
        // The row 8 rows ahead is asked for now (into L2), as pack_a does for
        // a transposed A: with a strip a few hundred columns wide each row is
        // a short run the hardware prefetcher barely starts on before it
        // ends. Inside a training step, where the activations come from
        // memory, the weight gradients of the tiny model's widest layer
        // (256 x 1024 x 1024 TN) went from 262-268 to 271-281 GFLOP/s; warm
        // products ran within a few percent of before, either way
        // (bench/results/pack-b-prefetch-2026-12-06.txt).
        if (p + 8 < kc)
            for (int64_t j = 0; j < n; j += 64 / (int64_t)sizeof(T)) __builtin_prefetch(row + 8 * g.B.row_stride + j, 0, 2);
        for (int64_t c = 0; c < n; c += nr) {
            int64_t cols = std::min<int64_t>(nr, n - c);
            T* out = b_packed + c * kc + p * nr;
            for (int64_t j = 0; j < cols; ++j) out[j] = row[c + j];
            for (int64_t j = cols; j < nr; ++j) out[j] = T(0);
        }
    }
}

// Where the threads pack one B block together, each piece is this many rows
// of B across all the panels: with nr = 32 (AVX-512), 16 rows of a panel
// are 2 KiB, so two threads never write the same cache line.
constexpr int64_t kPackRowsPerPiece = 16;

// Panel `panel` of B(slice pc, columns [jc, jc + n)) of matrix bi, for a B
// that is not row-major (x W^T's transposed weight, a strided view).
template <typename T, typename Kernel>
void pack_b_panel(const GemmProblem<T, Kernel>& g, int64_t bi, int64_t pc, int64_t kc, int64_t jc, int64_t n,
                  int64_t panel, T* b_packed) {
    const int nr = g.kernel.nr;
    const int64_t c = panel * nr;
    const T* B = g.B.data + g.B.batch_offsets[bi] + pc * g.B.row_stride + (jc + c) * g.B.col_stride;
    pack_b(B, g.B.row_stride, g.B.col_stride, kc, std::min<int64_t>(nr, n - c), nr, b_packed + c * kc,
           transpose_of(g.kernel));
}

// B(slice pc, columns [jc, jc + n)) of matrix bi, packed whole.
template <typename T, typename Kernel>
void pack_b_block(const GemmProblem<T, Kernel>& g, int64_t bi, int64_t pc, int64_t kc, int64_t jc, int64_t n,
                  T* b_packed) {
    if (g.B.col_stride == 1) return pack_b_rows(g, bi, pc, kc, jc, n, 0, kc, b_packed);
    for (int64_t panel = 0; panel < ceil_div(n, (int64_t)g.kernel.nr); ++panel)
        pack_b_panel(g, bi, pc, kc, jc, n, panel, b_packed);
}

// C(rows [row_begin, row_end), columns [jc, jc + n)) (+)= A(those rows, slice
// pc) B_packed, for a B block already packed: A is packed mc rows at a time
// into this thread's a_packed, then the micro-kernel walks the block. B's
// panels lie b_panel_stride apart: kc nr, as pack_b packs them, unless the
// block is a part of a larger one packed once (pack_b_once).
template <typename T, typename Kernel>
void multiply_rows(const GemmProblem<T, Kernel>& g, int64_t bi, int64_t pc, int64_t kc, int64_t jc, int64_t n,
                   int64_t row_begin, int64_t row_end, const T* b_packed, int64_t b_panel_stride, T* a_packed) {
    const int mr = g.kernel.mr, nr = g.kernel.nr;
    T* c_strip = g.C + g.c_offsets[bi] + jc;
    // Later K slices add to the earlier ones; the first adds to the bias.
    const bool bias_first = g.bias && pc == 0, accumulate = g.accumulate || pc > 0 || bias_first;
    // A row-major or transposed A can be read in place, panels of mr rows
    // at a time, a last, shorter one included (gemm_kernels.h). Worth it
    // when each panel serves few B panels, so that packing would copy A for
    // little reuse: attention's tile products, x W^T and d(x) = d(y) W of a
    // layer 128 wide, and with AVX-512 its weight gradient d(y)^T x. With
    // wide outputs packing pays: from rows 4 KiB apart (K = 1024) the
    // in-place reads also fight over the same L1 cache sets, and
    // 1024 x 1024 x 1024 fell from 89.5% to 81.2% of the peak in one
    // alternating pair, and from 82.1% to 76.9% in another
    // (bench/results/gemm-a-in-place-2026-12-05.txt).
    //   - A row-major: each step reads one value from each of mr rows, mr
    //     streams the prefetcher follows. In place for outputs up to 128
    //     columns (8 panels for AVX2, 4 for AVX-512): with AVX2, whose panels
    //     are half as wide, 2048 x 128 x 128 and 2048 x 512 x 128 ran 6-15%
    //     faster in place than packed, 256 columns no faster with cold operands
    //     (bench/results/gemm-a-in-place-avx2-2026-12-07.txt).
    //   - A transposed: each step reads its mr values from another row, at
    //     least one new cache line every step. In place for at most 4 B panels:
    //     with 8 (AVX2, 128 columns), 512 x 2048 x 128 TN ran 5-10% slower.
    const bool a_in_place = (g.A.col_stride == 1 && n <= 128) || (g.A.row_stride == 1 && n <= 4 * nr);
    MicroKernelUnpackedAFn unpacked = a_in_place ? unpacked_a_of(g.kernel) : nullptr;
    for (int64_t ic = row_begin; ic < row_end; ic += g.blk.mc) {
        int64_t mc = std::min(g.blk.mc, row_end - ic);
        const T* a_block = g.A.data + g.A.batch_offsets[bi] + ic * g.A.row_stride + pc * g.A.col_stride;
        if (!unpacked) pack_a(a_block, g.A.row_stride, g.A.col_stride, mc, kc, mr, a_packed, transpose_of(g.kernel));
        for (int64_t ir = 0; ir < mc; ir += mr)
            for (int64_t jr = 0; jr < n; jr += nr) {
                T* c = c_strip + (ic + ir) * g.ldc + jr;
                const int rows = (int)std::min<int64_t>(mr, mc - ir), columns = (int)std::min<int64_t>(nr, n - jr);
                const T* b_panel = b_packed + jr / nr * b_panel_stride;
                if (bias_first) start_from_bias(g.bias, jc + jr, rows, columns, c, g.ldc);
                if constexpr (std::is_same_v<T, float>) {
                    if (unpacked) {
                        unpacked(kc, a_block + ir * g.A.row_stride, g.A.row_stride, g.A.col_stride, b_panel, c, g.ldc,
                                 rows, columns, accumulate);
                        continue;
                    }
                }
                g.kernel.run(kc, a_packed + ir / mr * a_panel_stride<T>(kc, mr), b_panel, c, g.ldc, rows, columns,
                             accumulate);
            }
    }
}

template <typename T, typename Kernel>
void blocked_loops(const GemmProblem<T, Kernel>& g, int64_t batch, bool allow_threads);

}  // namespace

// How many parts K is split into for a product with a long K and few rows:
// a weight gradient dW = dy^T x, summed over every token of the batch
// (K = B T = 2048 for an output of 128 x 128 in train's default model).
// Cut by rows, such a product leaves each thread a few micro-panels and a
// barrier per K slice; cut by K, each part is a whole product of its own,
// and the parts' outputs are added at the end. The count depends on the
// shape only, never on the number of threads, so that on a given CPU the
// sums, and the results, are the same whatever the thread count (the
// micro-kernel, picked by the CPU's instruction set, still sets the bits).
// The rule: K of at least 1024 and at least 4 times the output's longer
// side, or K of at least 2048 and at least 4 times its rows M alone; 2
// parts, or 4 from K = 2048 on (each at least 512 long), halved while their
// outputs would not fit in kSplitKScratchBytes (8 MiB: GPT-2 124M's
// 768 x 768 weight gradients go in 2 parts; packing_buffers_bound_bytes
// counts them). An even count keeps 2 or 4 threads equally busy; on more
// than 4 cores these products use 4 of them. The row-shared way waits at
// every K slice for the slower thread, and on this machine, whenever
// another guest slowed one core, the small model's weight gradients
// (384 x 2048 x 384 TN and its like, which the 8 MiB limit and the second
// clause let split) fell from 84% of the peak to 60-72% that way, while
// split they stayed at 74-85% (bench/results/split-k-few-rows-2026-12-05.txt).
constexpr size_t kSplitKScratchBytes = size_t(8) << 20;
int64_t k_split_parts(int64_t M, int64_t N, int64_t K, size_t element_bytes) {
    const bool short_sides = K >= 1024 && K >= 4 * std::max(M, N), few_rows = K >= 2048 && K >= 4 * M;
    if (!short_sides && !few_rows) return 1;
    int64_t parts = K >= 2048 ? 4 : 2;
    while (parts > 1 && (size_t)(parts * M * N) * element_bytes > kSplitKScratchBytes) parts /= 2;
    return parts;
}

namespace {

// C (+)= A B as k_split_parts() parts along K (split_k.h): each part the
// blocked loops below on one thread, into its own buffer.
template <typename T, typename Kernel>
void gemm_split_k(const GemmProblem<T, Kernel>& g) {
    static const int64_t zero_offset = 0;
    auto multiply_part = [&](int64_t k0, int64_t k1, T* out) {
        GemmProblem<T, Kernel> part{g.M, g.N, k1 - k0,
                                    Operand<T>{g.A.data + g.A.batch_offsets[0] + k0 * g.A.col_stride, &zero_offset,
                                               g.A.row_stride, g.A.col_stride},
                                    Operand<T>{g.B.data + g.B.batch_offsets[0] + k0 * g.B.row_stride, &zero_offset,
                                               g.B.row_stride, g.B.col_stride},
                                    out, &zero_offset, g.N, g.kernel, g.blk, false};
        blocked_loops(part, 1, /*allow_threads=*/false);
    };
    split_k(g.M, g.N, g.K, k_split_parts(g.M, g.N, g.K, sizeof(T)), multiply_part, g.C + g.c_offsets[0], g.ldc,
            g.accumulate, g.bias);
}

// The blocked loops around a micro-kernel (MicroKernel or MicroKernelDouble).
//
// A task is one strip of nc columns of one matrix of the batch. There are
// two ways to spread tasks over threads:
//
//   many tasks (batched attention products, wide outputs): each thread takes
//     whole tasks and packs its own B block for each, no synchronization;
//   few tasks (one big product, the usual case in a Linear layer): all the
//     threads work on one task at a time. Per K slice they first pack the
//     B block together, once, into a shared buffer, wait for each other, then
//     split the rows (row_share.h), each packing its own A. (Letting each
//     thread pack the whole B block for its rows cost ~10% at M = 1024.)
//
// Both cut K into equal slices and N into equal strips (see below).
//
// `accumulate` adds to C instead of overwriting it; `allow_threads` = false
// keeps everything on the calling thread (inside an already parallel loop).
template <typename T, typename Kernel>
void blocked_loops(const GemmProblem<T, Kernel>& g, int64_t batch, bool allow_threads) {
    const int mr = g.kernel.mr, nr = g.kernel.nr;
    const Blocking& blk = g.blk;
    if (g.K == 0) {  // an empty sum: C = 0, or the bias (or C unchanged when accumulating)
        if (g.accumulate) return;
        for (int64_t bi = 0; bi < batch; ++bi) {
            if (g.bias) start_from_bias(g.bias, 0, g.M, g.N, g.C + g.c_offsets[bi], g.ldc);
            else
                for (int64_t i = 0; i < g.M; ++i) std::fill_n(g.C + g.c_offsets[bi] + i * g.ldc, g.N, T(0));
        }
        return;
    }
    bool parallel = allow_threads && (double)g.M * g.N * g.K * batch > 1e5;
    if (parallel && batch == 1 && k_split_parts(g.M, g.N, g.K, sizeof(T)) > 1) {
        gemm_split_k(g);
        return;
    }
    int threads = parallel ? omp_get_max_threads() : 1;
    // Columns are cut into strips of equal width (a multiple of nr), at most
    // nc: 1152 = 576 + 576 rather than 1024 + 128.
    int64_t strips = ceil_div(g.N, blk.nc), strip_width = round_up(ceil_div(g.N, strips), nr);
    // A product with few rows (kFewRowPanels) and too few strips for every
    // thread to take two is cut into narrower strips instead, 2 per thread
    // where the columns allow strips of 2 nr: each thread then packs its own
    // strips of B and all of A (small, the rows being few), and no thread
    // waits for another. Shared by rows, a 64-row product gives each thread
    // 3 micro-panels and a barrier per K slice.
    // Kept only if every thread then has a strip: else the rows are shared
    // as before, over the strips of at most nc (narrower ones would only
    // add barriers).
    const bool few_rows = ceil_div(g.M, mr) <= kFewRowPanels;
    if (threads > 1 && few_rows && batch * strips < 2 * threads) {
        const int64_t narrow = std::max(strips, std::min<int64_t>(ceil_div(2 * threads, batch), ceil_div(g.N, 2 * nr)));
        const int64_t narrow_width = round_up(ceil_div(g.N, narrow), nr);
        if (batch * ceil_div(g.N, narrow_width) >= threads) {
            strip_width = narrow_width;
            strips = ceil_div(g.N, strip_width);
        }
    }
    int64_t tasks = batch * strips;
    // K is cut into slices of equal length, at most kc: 384 = 192 + 192, not
    // 256 + 128 (a short slice pays the same C traffic for half the work).
    int64_t slices = ceil_div(g.K, blk.kc), kc_max = ceil_div(g.K, slices);
    int64_t nc_max = strip_width;

    if (threads == 1 || tasks >= 2 * threads || (few_rows && tasks >= threads)) {
        auto multiply_strip = [&](int64_t task, T* a_packed, T* b_packed) {
            int64_t bi = task / strips, jc = task % strips * strip_width, n = std::min(strip_width, g.N - jc);
            for (int64_t s = 0; s < slices; ++s) {
                int64_t pc = s * g.K / slices, kc = (s + 1) * g.K / slices - pc;
                pack_b_block(g, bi, pc, kc, jc, n, b_packed);
                multiply_rows(g, bi, pc, kc, jc, n, 0, g.M, b_packed, kc * nr, a_packed);
            }
        };
        if (threads == 1 && g.buffers) {  // the caller's own buffers (gemm.h)
            T* a_packed = g.buffers->a(a_block_size(g, kc_max));
            T* b_packed = g.buffers->b(kc_max * nc_max);
            for (int64_t task = 0; task < tasks; ++task) multiply_strip(task, a_packed, b_packed);
            return;
        }
        // Each thread packs into its own buffers (from the caching
        // allocator, so a training step does not go back to malloc for
        // them), sized for this product: a 64 x 64 attention tile needs
        // 16 KiB, not 1 MiB.
        struct Packed {
            ScratchBuffer<T> a, b;
        };
        parallel_for_dynamic(
            tasks, threads > 1,
            [&] { return Packed{ScratchBuffer<T>(a_block_size(g, kc_max)), ScratchBuffer<T>(kc_max * nc_max)}; },
            [&](int64_t task, Packed& packed) { multiply_strip(task, packed.a.data(), packed.b.data()); });
        return;
    }

    // Few tasks. Per K slice, the threads first pack the B block together,
    // once, into a shared buffer, and wait for each other; then they split
    // the rows (see RowShare): each thread starts on its own equal share,
    // the same rows in every slice, so its part of C stays in its L2 from
    // one slice to the next, and a thread that runs out of rows takes the
    // last pieces of another's share.
    // Pieces of rows: an owner takes at most a cache block (mc rows) at a
    // time; a helper takes 4 micro-panels (48 rows for AVX-512).
    const int64_t panels = ceil_div(g.M, mr), block_panels = std::max<int64_t>(1, blk.mc / mr), helper_panels = 4;
    // Two B buffers, used by turns: a thread done with its rows of slice s
    // packs its share of slice s + 1 into the other buffer while the rest still
    // read slice s from this one, so each slice needs one barrier, not two.
    // The row shares have two tables for the same reason.
    ScratchBuffer<T> b_even(kc_max * nc_max), b_odd(kc_max * nc_max);
    std::vector<RowShare> shares_even(threads), shares_odd(threads);
#pragma omp parallel
    {
        ScratchBuffer<T> a_packed(a_block_size(g, kc_max));
        const int me = omp_get_thread_num(), team = omp_get_num_threads();
        const int64_t my_first = me * panels / team, my_last = (me + 1) * panels / team;
        shares_even[me].reset(my_first, my_last);
#pragma omp barrier
        // Every thread walks the same tasks and slices. The barrier at the
        // end of the packing loop keeps anyone from reading a half-packed B;
        // no one can repack a buffer (or reset a share) still in use, since
        // that would mean passing the previous slice's packing barrier,
        // which every thread reaches only after finishing all its rows of
        // the slice before.
        int64_t turn = 0;
        for (int64_t task = 0; task < tasks; ++task) {
            int64_t bi = task / strips, jc = task % strips * strip_width, n = std::min(strip_width, g.N - jc);
            for (int64_t s = 0; s < slices; ++s, ++turn) {
                int64_t pc = s * g.K / slices, kc = (s + 1) * g.K / slices - pc;
                T* b_shared = turn % 2 == 0 ? b_even.data() : b_odd.data();
                std::vector<RowShare>& shares = turn % 2 == 0 ? shares_even : shares_odd;
                // Shared out by rows of B where it is row-major, else by panels.
                if (g.B.col_stride == 1) {
#pragma omp for schedule(dynamic)
                    for (int64_t p = 0; p < kc; p += kPackRowsPerPiece)
                        pack_b_rows(g, bi, pc, kc, jc, n, p, std::min<int64_t>(kc, p + kPackRowsPerPiece), b_shared);
                } else {
#pragma omp for schedule(dynamic)
                    for (int64_t panel = 0; panel < ceil_div(n, nr); ++panel)
                        pack_b_panel(g, bi, pc, kc, jc, n, panel, b_shared);
                }
                (turn % 2 == 0 ? shares_odd : shares_even)[me].reset(my_first, my_last);  // for the next slice
                auto multiply_panels = [&](PanelRange range) {
                    multiply_rows(g, bi, pc, kc, jc, n, range.first * mr, std::min(g.M, range.last * mr), b_shared,
                                  kc * nr, a_packed.data());
                };
                RowShare& mine = shares[me];
                for (PanelRange r = mine.take_front(block_panels, helper_panels); !r.empty();
                     r = mine.take_front(block_panels, helper_panels))
                    multiply_panels(r);
                for (int k = 1; k < team; ++k) {
                    RowShare& other = shares[(me + k) % team];
                    for (PanelRange r = other.take_back(helper_panels); !r.empty(); r = other.take_back(helper_panels))
                        multiply_panels(r);
                }
            }
        }
    }
}

template <typename T, typename Kernel>
void gemm_blocked(int64_t M, int64_t N, int64_t K, const Operand<T>& A, const Operand<T>& B, T* C,
                  const int64_t* c_offsets, int64_t batch, int64_t ldc, const Kernel& kernel, bool allow_threads,
                  bool accumulate, PackingBuffers<T>* buffers = nullptr, const T* bias = nullptr) {
    const Blocking blk = blocking_for(kernel.mr, kernel.nr);
    GemmProblem<T, Kernel> g{M, N, K, A, B, C, c_offsets, ldc, kernel, blk, accumulate, buffers, bias};
    blocked_loops(g, batch, allow_threads);
}

template <typename T>
Operand<T> operand(const MatrixOperand<T>& m) { return {m.data, m.batch_offsets.data(), m.row_stride, m.col_stride}; }

// A product with one row of A (generating a token) needs no packing: gemv.h
// reads B in place when its layout allows, one matrix of the batch at a time.
bool one_row_layout(const MatrixOperand<float>& B) { return B.row_stride == 1 || B.col_stride == 1; }
void one_row_products(int64_t N, int64_t K, const MatrixOperand<float>& A, const MatrixOperand<float>& B, float* C,
                      const std::vector<int64_t>& c_offsets, bool accumulate, bool allow_threads) {
    for (size_t bi = 0; bi < c_offsets.size(); ++bi)
        gemv(N, K, A.data + A.batch_offsets[bi], A.col_stride, B.data + B.batch_offsets[bi], B.row_stride,
             B.col_stride, C + c_offsets[bi], accumulate, allow_threads);
}

}  // namespace

size_t packing_buffers_bound_bytes(int threads) {
    // The widest micro-kernel's mr and nr (32), and a cache line of padding
    // per packed panel, bound any kernel's blocks; the 16-bit paths use the
    // same blocking with words no wider than a float.
    Blocking most = blocking_for(32, 32);
    size_t a_block = size_class((size_t)(most.mc + 32) * (size_t)(most.kc + 16) * sizeof(float));
    size_t b_block = size_class((size_t)most.kc * (size_t)(most.nc + 32) * sizeof(float));
    // Many tasks: every thread its own A and B; few tasks: each thread its
    // A, and two shared B blocks used by turns (blocked_loops above); a
    // product split along K: each thread its A and B, and the parts' outputs.
    return (size_t)threads * a_block + (size_t)std::max(threads, 2) * b_block + size_class(kSplitKScratchBytes);
}

void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<float>& A, const MatrixOperand<float>& B, float* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride, SimdIsa isa, bool accumulate,
          const float* bias) {
    if (!cpu_supports(isa))
        throw Error(std::string("gemm: this CPU does not support the ") + simd_isa_name(isa) + " micro-kernel");
    assert(!(bias && accumulate));
    if (M == 1 && one_row_layout(B)) {
        if (bias)  // one row per matrix: the bias first, then the dot products added to it
            for (int64_t offset : c_offsets) start_from_bias(bias, 0, 1, N, C + offset, N);
        one_row_products(N, K, A, B, C, c_offsets, accumulate || bias, /*allow_threads=*/true);
        return;
    }
    gemm_blocked(M, N, K, operand(A), operand(B), C, c_offsets.data(), (int64_t)c_offsets.size(), c_row_stride,
                 micro_kernel_for(isa), /*allow_threads=*/true, accumulate, /*buffers=*/(PackingBuffers<float>*)nullptr,
                 bias);
}

void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<double>& A, const MatrixOperand<double>& B, double* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride, bool accumulate, const double* bias) {
    assert(!(bias && accumulate));
    gemm_blocked(M, N, K, operand(A), operand(B), C, c_offsets.data(), (int64_t)c_offsets.size(), c_row_stride,
                 kDoubleKernel, /*allow_threads=*/true, accumulate, /*buffers=*/(PackingBuffers<double>*)nullptr, bias);
}

void gemm_single_thread(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                        int64_t b_rs, int64_t b_cs, float* C, int64_t ldc, bool accumulate,
                        PackingBuffers<float>* buffers) {
    if (M == 1 && gemv(N, K, A, a_cs, B, b_rs, b_cs, C, accumulate, /*allow_threads=*/false)) return;
    const int64_t zero = 0;
    gemm_blocked<float>(M, N, K, {A, &zero, a_rs, a_cs}, {B, &zero, b_rs, b_cs}, C, &zero, 1, ldc,
                        micro_kernel_for(best_simd_isa()), /*allow_threads=*/false, accumulate, buffers);
}

void gemm_single_thread(int64_t M, int64_t N, int64_t K, const double* A, int64_t a_rs, int64_t a_cs,
                        const double* B, int64_t b_rs, int64_t b_cs, double* C, int64_t ldc, bool accumulate,
                        PackingBuffers<double>* buffers) {
    const int64_t zero = 0;
    gemm_blocked<double>(M, N, K, {A, &zero, a_rs, a_cs}, {B, &zero, b_rs, b_cs}, C, &zero, 1, ldc, kDoubleKernel,
                         /*allow_threads=*/false, accumulate, buffers);
}

namespace {

// pack_b_once and gemm_packed_b for either kernel. The checks mirror
// blocked_loops: there a product with K within one slice (kc) and N within
// one strip (nc) packs B whole, as here, then runs multiply_rows over all
// its rows, as gemm_packed_b does.
template <typename T, typename Kernel>
PackedB<T> pack_b_once_with(int64_t max_rows, int64_t K, int64_t N, const T* B, int64_t b_rs, int64_t b_cs,
                            const Kernel& kernel, PackingBuffers<T>& buffers) {
    PackedB<T> packed{B, b_rs, b_cs, nullptr, K, N, 0};
    const Blocking blk = blocking_for(kernel.mr, kernel.nr);
    // gemm_packed_b then calls gemm_single_thread
    if (max_rows <= 1 || K == 0 || K > blk.kc || N > blk.nc) return packed;
    const int64_t zero = 0;
    GemmProblem<T, Kernel> g{0, N, K, {nullptr, &zero, 0, 0}, {B, &zero, b_rs, b_cs}, nullptr, &zero, 0, kernel, blk,
                             false, &buffers};
    T* panels = buffers.b(K * round_up(N, kernel.nr));
    pack_b_block(g, 0, 0, K, 0, N, panels);
    packed.panels = panels;
    packed.panel_stride = K * kernel.nr;
    return packed;
}

template <typename T, typename Kernel>
void gemm_packed_b_with(int64_t M, int64_t N, int64_t k0, int64_t K, const T* A, int64_t a_rs, int64_t a_cs,
                        const PackedB<T>& b, T* C, int64_t ldc, bool accumulate, const Kernel& kernel,
                        PackingBuffers<T>& buffers) {
    assert(k0 >= 0 && k0 + K <= b.depth && N <= b.width);
    if (!b.panels || M == 1 || K == 0) {
        // Not packed, or a product that does not use packed panels: on B in
        // place (with no buffers of its own when they hold the panels).
        gemm_single_thread(M, N, K, A, a_rs, a_cs, b.data + k0 * b.row_stride, b.row_stride, b.col_stride, C, ldc,
                           accumulate, b.panels ? nullptr : &buffers);
        return;
    }
    const int64_t zero = 0;
    GemmProblem<T, Kernel> g{M, N, K, {A, &zero, a_rs, a_cs}, {nullptr, &zero, 0, 0}, C, &zero, ldc, kernel,
                             blocking_for(kernel.mr, kernel.nr), accumulate, &buffers};
    multiply_rows(g, 0, 0, K, 0, N, 0, M, b.panels + k0 * kernel.nr, b.panel_stride, buffers.a(a_block_size(g, K)));
}

}  // namespace

PackedB<float> pack_b_once(int64_t max_rows, int64_t K, int64_t N, const float* B, int64_t b_rs, int64_t b_cs,
                           PackingBuffers<float>& buffers) {
    return pack_b_once_with(max_rows, K, N, B, b_rs, b_cs, micro_kernel_for(best_simd_isa()), buffers);
}
PackedB<double> pack_b_once(int64_t max_rows, int64_t K, int64_t N, const double* B, int64_t b_rs, int64_t b_cs,
                            PackingBuffers<double>& buffers) {
    return pack_b_once_with(max_rows, K, N, B, b_rs, b_cs, kDoubleKernel, buffers);
}
void gemm_packed_b(int64_t M, int64_t N, int64_t k0, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
                   const PackedB<float>& b, float* C, int64_t ldc, bool accumulate, PackingBuffers<float>& buffers) {
    gemm_packed_b_with(M, N, k0, K, A, a_rs, a_cs, b, C, ldc, accumulate, micro_kernel_for(best_simd_isa()), buffers);
}
void gemm_packed_b(int64_t M, int64_t N, int64_t k0, int64_t K, const double* A, int64_t a_rs, int64_t a_cs,
                   const PackedB<double>& b, double* C, int64_t ldc, bool accumulate, PackingBuffers<double>& buffers) {
    gemm_packed_b_with(M, N, k0, K, A, a_rs, a_cs, b, C, ldc, accumulate, kDoubleKernel, buffers);
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
