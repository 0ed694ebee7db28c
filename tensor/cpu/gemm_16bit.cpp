// gemm_16bit.cpp — the blocked loops of gemm.cpp for 16-bit operands and a
// float32 result (see gemm_16bit.h for what is exact and why).
//
// The loop nest is gemm.cpp's: strips of nc columns, slices of kc steps of
// K, the B block packed once per slice by all threads together, rows in
// blocks of mc spread over the threads, each packing its own A block, and
// the micro-kernel walking the block. What differs is packing, which is also
// where the 16 bits are read:
//
//   Widen path: A(i, p) and B(p, j) are converted to float32 as they are
//     packed, into the float32 kernel's layout ([kc][mr] and [kc][nr]).
//   Pair path: two neighbouring steps of K share one 32-bit word, the even
//     step in the low half ([kc/2][mr] and [kc/2][nr] words), the layout
//     vdpbf16ps reads; an odd last step is paired with a zero.
//
// Products with few rows and a long K are split along K by gemm.cpp's rule
// and loop (split_k.h). The row-sharing refinements of gemm.cpp
// (row_share.h) and its narrow column strips for few rows are left out:
// this file keeps the plain two-barrier form of the same idea.
#include "tensor/cpu/gemm_16bit.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include <omp.h>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemm_kernels.h"
#include "tensor/cpu/gemv.h"
#include "tensor/cpu/split_k.h"
#include "tensor/error.h"
#include "tensor/half.h"

namespace nc {
namespace cpu {

const char* gemm16_path_name(Gemm16Path path) {
    switch (path) {
        case Gemm16Path::Bf16Dot: return "AVX512-BF16";
        case Gemm16Path::Amx: return "AMX";
        case Gemm16Path::Widen: break;
    }
    return "widen to float32";
}

// AMX needs the CPU (CPUID leaf 7: AMX-TILE is bit 24 of EDX, AMX-BF16 bit
// 22) and the operating system's permission: Linux saves the 8 KiB of tile
// state only for a process that asked (ARCH_REQ_XCOMP_PERM for the tile
// data, feature 18); without it the first tile instruction kills the
// process. Asked once, the first time anyone wants to know.
#if defined(__x86_64__) || defined(__i386__)
static bool amx_usable() {
#if defined(__x86_64__) && defined(__linux__)
    static const bool usable = [] {
        unsigned eax, ebx, ecx, edx;
        if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
        if (!(edx & (1u << 24)) || !(edx & (1u << 22))) return false;
        const long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
        return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
    }();
    return usable;
#else
    return false;
#endif
}
#endif

bool cpu_supports(Gemm16Path path, DType dtype) {
    if (dtype != kBFloat16 && dtype != kFloat16) return false;
    if (path == Gemm16Path::Widen) return true;
    if (dtype != kBFloat16) return false;  // the pair paths multiply bfloat16 only; float16 widens
#if defined(__x86_64__) || defined(__i386__)
    if (path == Gemm16Path::Bf16Dot) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    return amx_usable();
#else
    return false;
#endif
}

bool bf16_dot_pays() {
    static const bool pays = [] {
        if (!cpu_supports(Gemm16Path::Bf16Dot, kBFloat16)) return false;
        // The ratio is far from the threshold on the CPUs measured (0.5 on a
        // Sapphire Rapids-class Xeon, 1.8-2.1 on a Zen 4), so short loops
        // decide it: about 0.35 ms each on the Zen 4, the best of 3 (a loop
        // the scheduler interrupted reads slow), 2.1-2.4 ms in all. Loops
        // five times as long took 10.5 ms, which the first bfloat16 product
        // of every process paid: a sixth of the time of 512 tokens from
        // train's model (bench/results/bf16-probe-2026-12-07.txt).
        measure_bf16_dot_peak_gflops(1, 50000);  // wakes the clocks and the vector units
        double dot = 0, fma = 0;
        for (int round = 0; round < 3; ++round) {
            dot = std::max(dot, measure_bf16_dot_peak_gflops(1, 100000));
            fma = std::max(fma, measure_fma_peak_gflops(SimdIsa::Avx512, 1, 100000));
        }
        return dot > 1.25 * fma;
    }();
    return pays;
}

bool takes_gemv_16bit(int64_t M, const MatrixOperand<uint16_t>& B) { return M == 1 && B.row_stride == 1; }

Gemm16Path best_gemm16_path(DType dtype) {
    if (cpu_supports(Gemm16Path::Amx, dtype)) return Gemm16Path::Amx;
    if (cpu_supports(Gemm16Path::Bf16Dot, dtype) && bf16_dot_pays()) return Gemm16Path::Bf16Dot;
    return Gemm16Path::Widen;
}

// n 16-bit numbers in a row, widened: out[k] = the value of x[k]. One loop
// per format, so that each loop is free to become vector code (widen()
// tests the format inside every conversion). Only bfloat16's was timed
// (bench/results/bf16-pair-packing-2026-12-07.txt, section 6).
void widen_run(const uint16_t* x, int64_t n, DType dtype, float* out) {
    if (dtype == kBFloat16)
        for (int64_t k = 0; k < n; ++k) out[k] = to_float(BFloat16{x[k]});
    else
        for (int64_t k = 0; k < n; ++k) out[k] = to_float(Float16{x[k]});
}

namespace {

int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }
int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

// One matrix of 16-bit numbers: element (r, c) at data[r * rs + c * cs].
struct Matrix16 {
    const uint16_t* data;
    int64_t rs, cs;
    uint16_t at(int64_t r, int64_t c) const { return data[r * rs + c * cs]; }
    Matrix16 shifted(int64_t r, int64_t c) const { return {data + r * rs + c * cs, rs, cs}; }
};

float widen(uint16_t bits, DType dtype) {
    return dtype == kBFloat16 ? to_float(BFloat16{bits}) : to_float(Float16{bits});
}

// Words per packed row or column for kc steps of K: one per step widened,
// one per pair, and for AMX pairs padded to whole tiles of 16 pairs.
int64_t words_for(Gemm16Path path, int64_t kc) {
    if (path == Gemm16Path::Widen) return kc;
    if (path == Gemm16Path::Bf16Dot) return ceil_div(kc, 2);
    return round_up(ceil_div(kc, 2), 16);
}

// ---- widen: float32 panels ----------------------------------------------------

// N numbers, a whole panel's rows (the micro-kernel's mr: 12 for AVX-512,
// 6 for AVX2, 8 for NEON and the portable one) in one step of a transposed
// A: with the count known when compiling, the conversion becomes vector
// code. widen_run's vector loop takes 16 at a time (AVX-512), so runs of 12
// went through its scalar remainder, which for float16 is a branchy
// conversion per value. With N = 12, float16 weight gradients ran 6-27%
// faster, bfloat16 widened 5-9% (alternating calls on a Zen 4;
// bench/results/widen-12-float16-2026-12-07.txt).
template <int N>
void widen_panel_step(const uint16_t* x, DType dtype, float* out) {
    if (dtype == kBFloat16)
        for (int k = 0; k < N; ++k) out[k] = to_float(BFloat16{x[k]});
    else
        for (int k = 0; k < N; ++k) out[k] = to_float(Float16{x[k]});
}

// One step of a panel of a transposed A: `rows` values at x widened into
// out[0, rows), zeros up to mr.
void widen_step(const uint16_t* x, int64_t rows, int mr, DType dtype, float* out) {
    if (rows == mr) {
        switch (mr) {  // the kernels' mr values
            case 6: return widen_panel_step<6>(x, dtype, out);
            case 8: return widen_panel_step<8>(x, dtype, out);
            case 12: return widen_panel_step<12>(x, dtype, out);
        }
    }
    widen_run(x, rows, dtype, out);
    std::fill(out + rows, out + mr, 0.0f);
}

// Where K runs along the stored rows (a row-major A, the W of x W^T), a
// panel is the transpose of those rows: 16 steps of each of up to 16 rows
// are widened into a block, which the float32 kernel's in-register
// transpose (Transpose16Fn, gemm_kernels.h) writes into the panel. Element
// by element, each value landed a panel's width after the last, one at a
// time (bench/results/bf16-pair-packing-2026-12-07.txt, section 6).
void widen_transposed(const uint16_t* first_row, int64_t row_stride, int rows, DType dtype, Transpose16Fn transpose,
                      float* dst, int64_t dst_stride, int width) {
    alignas(64) float block[16 * 16];
    for (int i = 0; i < rows; ++i) widen_run(first_row + i * row_stride, 16, dtype, block + i * 16);
    transpose(block, 16, rows, dst, dst_stride, width);
}

// rows [0, m) x steps [0, kc) of A into panels of mr rows: panel r holds
// A(r*mr + i, p) at [p][i], rows past m zero.
void pack_a(const Matrix16& A, int64_t m, int64_t kc, int mr, DType dtype, float* out, Transpose16Fn transpose) {
    for (int64_t r = 0; r < m; r += mr) {
        float* panel = out + r / mr * kc * mr;
        const int64_t rows = std::min<int64_t>(mr, m - r);
        int64_t p = 0;
        if (A.rs == 1 && A.cs != 1) {
            // A transposed (G^T in dW = G^T X): step p of the panel is a run
            // of stored row p.
            for (; p < kc; ++p) widen_step(A.data + r + p * A.cs, rows, mr, dtype, panel + p * mr);
        } else if (A.cs == 1 && transpose && mr <= 16) {
            for (; p + 16 <= kc; p += 16)
                widen_transposed(A.data + r * A.rs + p, A.rs, (int)rows, dtype, transpose, panel + p * mr, mr, mr);
        }
        // What is left, value by value, row by row: contiguous reads when A
        // is row-major (all of it on a CPU whose kernel has no transpose).
        const int64_t p_left = p;
        for (int64_t i = 0; i < mr; ++i)
            for (p = p_left; p < kc; ++p) panel[p * mr + i] = i < rows ? widen(A.at(r + i, p), dtype) : 0.0f;
    }
}

// steps [0, kc) x columns [0, n) of B into panels of nr columns: panel c
// holds B(p, c*nr + j) at [p][j], columns past n zero.
void pack_b(const Matrix16& B, int64_t kc, int64_t n, int nr, DType dtype, float* out, Transpose16Fn transpose) {
    for (int64_t c = 0; c < n; c += nr) {
        float* panel = out + c * kc;
        const int64_t cols = std::min<int64_t>(nr, n - c);
        int64_t p = 0;
        if (B.rs == 1 && transpose && nr % 16 == 0) {
            // B = W^T (a Linear's weight): 16 columns (rows of W) by 16 steps
            // at a time; columns past n come out 0.
            for (; p + 16 <= kc; p += 16)
                for (int64_t j0 = 0; j0 < nr; j0 += 16) {
                    const int rows = (int)std::clamp<int64_t>(cols - j0, 0, 16);  // none: 16 columns of zeros
                    const uint16_t* first = rows > 0 ? B.data + (c + j0) * B.cs + p : B.data;  // never past B
                    widen_transposed(first, B.cs, rows, dtype, transpose, panel + p * nr + j0, nr, 16);
                }
        } else if (B.cs == 1) {
            // Row-major B (dX = G W, the X of G^T X): step p is a run of row p.
            for (; p < kc; ++p) {
                widen_run(B.data + p * B.rs + c, cols, dtype, panel + p * nr);
                std::fill(panel + p * nr + cols, panel + (p + 1) * nr, 0.0f);
            }
        }
        // What is left, value by value, in the order B is stored: column by
        // column for W^T (a row of W), row by row otherwise (all of it on a
        // CPU whose kernel has no transpose).
        const int64_t p_left = p;
        auto value = [&](int64_t q, int64_t j) { return j < cols ? widen(B.at(q, c + j), dtype) : 0.0f; };
        if (B.rs == 1) {
            for (int64_t j = 0; j < nr; ++j)
                for (int64_t q = p_left; q < kc; ++q) panel[q * nr + j] = value(q, j);
        } else {
            for (int64_t q = p_left; q < kc; ++q)
                for (int64_t j = 0; j < nr; ++j) panel[q * nr + j] = value(q, j);
        }
    }
}

// ---- pairs: two bfloat16 per word ---------------------------------------------

// Steps 2q and 2q+1 of a row (or column) as one word; past kc, a zero.
uint32_t pair(uint16_t even, uint16_t odd) { return (uint32_t)even | ((uint32_t)odd << 16); }

// Where K runs along the stored rows (A row-major, or the W of x W^T), the
// pairs of a row are already the words it is stored as: pair q of a row
// starting at x is the 32 bits at x + 2q. A panel of such pairs is then
// the transpose of a block of 32-bit words, and the float32 kernel's
// in-register transpose (Transpose16Fn, gemm_kernels.h) does it 16 x 16,
// moving each word as a float's bits (it only moves them, never computes
// with them). Rows must start on whole words and lie a whole number of
// words apart (handed over as arrays of 4-byte words: the unaligned loads
// would not need it, the pointer type does); otherwise the word-by-word
// loops below run. Pair q's two halves sit as pair() puts them, step 2q in
// the low half, because x86 is little-endian. Packed word by word, the
// pairs took 11.6% of the samples of a run of train's GPT-2 step in
// bfloat16 on a Zen 4, over 40% of what its pair kernel took; with the
// transpose, 7.8% (bench/results/bf16-pair-packing-2026-12-07.txt).
bool whole_words(const uint16_t* first_row, int64_t row_stride) {
    return row_stride % 2 == 0 && reinterpret_cast<uintptr_t>(first_row) % sizeof(uint32_t) == 0;
}
const float* as_words(const uint16_t* x) { return reinterpret_cast<const float*>(x); }
float* as_words(uint32_t* x) { return reinterpret_cast<float*>(x); }

void pack_a(const Matrix16& A, int64_t m, int64_t kc, int mr, DType, uint32_t* out, Transpose16Fn transpose) {
    const int64_t kq = ceil_div(kc, 2), whole = kc / 2;  // whole: pairs with both steps inside kc
    for (int64_t r = 0; r < m; r += mr) {
        uint32_t* panel = out + r / mr * kq * mr;
        const int64_t rows = std::min<int64_t>(mr, m - r);
        const uint16_t* first = A.data + r * A.rs;
        int64_t q = 0;
        if (A.cs == 1 && transpose && mr <= 16 && whole_words(first, A.rs)) {
            // Row-major A (x in x W^T): row i's pairs are its stored words.
            for (; q + 16 <= whole; q += 16)
                transpose(as_words(first + 2 * q), A.rs / 2, (int)rows, as_words(panel + q * mr), mr, mr);
        } else if (A.rs == 1) {
            // A transposed (G^T in dW = G^T X): steps 2q and 2q+1 are two
            // stored rows, interleaved element by element, the panel's rows
            // innermost, so that both stored rows are read in order and the
            // panel written in order (word by word, each word took its halves
            // from two rows K apart and landed mr words after the last).
            for (; q < whole; ++q) {
                const uint16_t *even = A.data + r + 2 * q * A.cs, *odd = even + A.cs;
                uint32_t* out_q = panel + q * mr;
                if (mr == 12 && rows == 12) {
                    // A whole panel of the AVX512-BF16 kernel's 12 rows: with
                    // the count known when compiling, this loop becomes vector
                    // code; with `rows` it stayed twelve scalar moves, and the
                    // tiny model's 1024 x 1024 x 256 TN ran at 1.65-1.69x the
                    // float32 rate instead of 1.87-1.91x (results file above).
                    for (int i = 0; i < 12; ++i) out_q[i] = pair(even[i], odd[i]);
                    continue;
                }
                for (int64_t i = 0; i < rows; ++i) out_q[i] = pair(even[i], odd[i]);
                for (int64_t i = rows; i < mr; ++i) out_q[i] = 0u;
            }
        }
        for (; q < kq; ++q)  // what is left, word by word
            for (int64_t i = 0; i < mr; ++i)
                panel[q * mr + i] =
                    i < rows ? pair(A.at(r + i, 2 * q), 2 * q + 1 < kc ? A.at(r + i, 2 * q + 1) : uint16_t(0)) : 0u;
    }
}

// `kq` words per column: ceil(kc / 2) pairs, then zero pairs (AMX pads to 16).
void pack_b(const Matrix16& B, int64_t kc, int64_t n, int nr, int64_t kq, uint32_t* out, Transpose16Fn transpose) {
    for (int64_t c = 0; c < n; c += nr) {
        uint32_t* panel = out + c * kq;
        int64_t cols = std::min<int64_t>(nr, n - c);
        auto word = [&](int64_t q, int64_t j) {
            if (j >= cols || 2 * q >= kc) return 0u;
            return pair(B.at(2 * q, c + j), 2 * q + 1 < kc ? B.at(2 * q + 1, c + j) : uint16_t(0));
        };
        const int64_t whole = kc / 2;  // pairs with both steps inside kc
        if (B.rs == 1 && transpose && nr % 16 == 0 && whole_words(B.data + c * B.cs, B.cs)) {
            // B = W^T (a Linear's weight): column j is row j of W, whose pairs
            // are its stored words (above), 16 columns by 16 pairs at a time.
            const uint16_t* first = B.data + c * B.cs;
            int64_t q = 0;
            for (; q + 16 <= whole; q += 16)
                for (int64_t j0 = 0; j0 < nr; j0 += 16) {
                    const int rows = (int)std::clamp<int64_t>(cols - j0, 0, 16);  // columns past n come out 0
                    const uint16_t* from = rows > 0 ? first + j0 * B.cs + 2 * q : first;  // never past B
                    transpose(as_words(from), B.cs / 2, rows, as_words(panel + q * nr + j0), nr, 16);
                }
            for (; q < kq; ++q)
                for (int64_t j = 0; j < nr; ++j) panel[q * nr + j] = word(q, j);
        } else if (B.rs == 1) {
            // The same, word by word: a pair of steps is one 32-bit load (low
            // half first: x86 is little-endian).
            for (int64_t j = 0; j < nr; ++j) {
                if (j >= cols) {
                    for (int64_t q = 0; q < kq; ++q) panel[q * nr + j] = 0u;
                    continue;
                }
                const uint16_t* column = B.data + (c + j) * B.cs;
                for (int64_t q = 0; q < whole; ++q) std::memcpy(&panel[q * nr + j], column + 2 * q, 4);
                for (int64_t q = whole; q < kq; ++q) panel[q * nr + j] = word(q, j);
            }
        } else if (B.cs == 1) {
            // Row-major B (dX = G W): steps 2q and 2q+1 are two stored rows,
            // interleaved element by element.
            for (int64_t q = 0; q < kq; ++q) {
                uint32_t* out_row = panel + q * nr;
                if (q < whole && cols == nr) {
                    const uint16_t *even = B.data + 2 * q * B.rs + c, *odd = even + B.rs;
                    for (int64_t j = 0; j < nr; ++j) out_row[j] = pair(even[j], odd[j]);
                } else {
                    for (int64_t j = 0; j < nr; ++j) out_row[j] = word(q, j);
                }
            }
        } else {
            for (int64_t q = 0; q < kq; ++q)
                for (int64_t j = 0; j < nr; ++j) panel[q * nr + j] = word(q, j);
        }
    }
}

// AMX's A: chunks of 16 pairs, each chunk the mr = 32 rows' 16 words in a
// row (a tile row is one row of A, 64 bytes): chunk k holds pair q = 16k + w
// of row i at [k][i][w]; zero past m rows and past kc.
void pack_a_amx(const Matrix16& A, int64_t m, int64_t kc, int mr, int64_t kq, uint32_t* out) {
    const int64_t whole = kc / 2;  // pairs with both steps inside kc
    for (int64_t r = 0; r < m; r += mr) {
        uint32_t* panel = out + r / mr * kq * mr;
        int64_t rows = std::min<int64_t>(mr, m - r);
        auto word = [&](int64_t i, int64_t q) {
            if (i >= rows || 2 * q >= kc) return 0u;
            return pair(A.at(r + i, 2 * q), 2 * q + 1 < kc ? A.at(r + i, 2 * q + 1) : uint16_t(0));
        };
        auto at = [&](int64_t i, int64_t q) -> uint32_t& { return panel[q / 16 * 16 * mr + i * 16 + q % 16]; };
        if (A.cs == 1) {
            // Row-major A (x in x W^T): a row's 16 pairs of a chunk are 64
            // contiguous bytes, copied as they are.
            for (int64_t i = 0; i < mr; ++i) {
                int64_t q = 0;
                if (i < rows)
                    for (; q + 16 <= whole; q += 16) std::memcpy(&at(i, q), A.data + (r + i) * A.rs + 2 * q, 64);
                for (; q < kq; ++q) at(i, q) = word(i, q);
            }
        } else if (A.rs == 1) {
            // A transposed (G^T in dW = G^T X): steps 2q and 2q+1 are two
            // stored rows, interleaved element by element.
            for (int64_t q = 0; q < kq; ++q) {
                if (q < whole && rows == mr) {
                    const uint16_t *even = A.data + 2 * q * A.cs + r, *odd = even + A.cs;
                    for (int64_t i = 0; i < mr; ++i) at(i, q) = pair(even[i], odd[i]);
                } else {
                    for (int64_t i = 0; i < mr; ++i) at(i, q) = word(i, q);
                }
            }
        } else {
            for (int64_t i = 0; i < mr; ++i)
                for (int64_t q = 0; q < kq; ++q) at(i, q) = word(i, q);
        }
    }
}

// The kernel of each path, through one name.
struct Kernels {
    MicroKernel widened;  // the float32 kernel of this CPU
    PairKernel pairs;     // AVX512-BF16 (only when the pair path runs)
};
void run_kernel(const Kernels& k, int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int m, int n,
                bool accumulate) {
    k.widened.run(kc, a, b, c, ldc, m, n, accumulate);
}
void run_kernel(const Kernels& k, int64_t words, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, int m,
                int n, bool accumulate) {
    k.pairs.run(words, a, b, c, ldc, m, n, accumulate);
}

struct Problem16;
void pack_a_block(const Problem16& g, const Matrix16& A, int64_t m, int64_t kc, int64_t words, float* out);
void pack_a_block(const Problem16& g, const Matrix16& A, int64_t m, int64_t kc, int64_t words, uint32_t* out);
void pack_b_block(const Problem16& g, const Matrix16& B, int64_t kc, int64_t n, int64_t words, float* out);
void pack_b_block(const Problem16& g, const Matrix16& B, int64_t kc, int64_t n, int64_t words, uint32_t* out);

struct Problem16 {
    int64_t M, N, K;
    DType dtype;
    const MatrixOperand<uint16_t>& A;
    const MatrixOperand<uint16_t>& B;
    float* C;
    const std::vector<int64_t>& c_offsets;
    int64_t ldc;
    bool accumulate;
    Kernels kernels;
    Gemm16Path path;
    int mr, nr;
};

// Packing for the path: widened floats, or pairs in the kernel's layout.
void pack_a_block(const Problem16& g, const Matrix16& A, int64_t m, int64_t kc, int64_t, float* out) {
    pack_a(A, m, kc, g.mr, g.dtype, out, g.kernels.widened.transpose16);
}
void pack_a_block(const Problem16& g, const Matrix16& A, int64_t m, int64_t kc, int64_t words, uint32_t* out) {
    if (g.path == Gemm16Path::Amx) pack_a_amx(A, m, kc, g.mr, words, out);
    else pack_a(A, m, kc, g.mr, g.dtype, out, g.kernels.widened.transpose16);
}
void pack_b_block(const Problem16& g, const Matrix16& B, int64_t kc, int64_t n, int64_t, float* out) {
    pack_b(B, kc, n, g.nr, g.dtype, out, g.kernels.widened.transpose16);
}
void pack_b_block(const Problem16& g, const Matrix16& B, int64_t kc, int64_t n, int64_t words, uint32_t* out) {
    pack_b(B, kc, n, g.nr, words, out, g.kernels.widened.transpose16);
}

template <typename W>
void blocked_loops_16bit(const Problem16& g, bool allow_threads);

// A product with few rows and a long K (a weight gradient) as parts along
// K, by gemm.cpp's rule (k_split_parts) and through the same loop
// (split_k.h): each part the blocked loops below, on one thread. Shared by
// rows instead, train's 128 x 2048 x 128 TN left each of two threads 5 or 6
// micro-panels and two barriers per K slice: split, it went from 133 to 172
// GFLOP/s widened (faster in all 8 alternating pairs of runs on a Zen 4) and
// from 287 to 357 on AVX512-BF16 (medians; faster in 7 of the 8 pairs)
// (bench/results/gemm16-split-k-2026-12-07.txt).
template <typename W>
void split_k_16bit(const Problem16& g) {
    auto multiply_part = [&](int64_t k0, int64_t k1, float* out) {
        const MatrixOperand<uint16_t> A{g.A.data + g.A.batch_offsets[0] + k0 * g.A.col_stride, {0}, g.A.row_stride,
                                        g.A.col_stride};
        const MatrixOperand<uint16_t> B{g.B.data + g.B.batch_offsets[0] + k0 * g.B.row_stride, {0}, g.B.row_stride,
                                        g.B.col_stride};
        const std::vector<int64_t> c_offsets{0};
        const Problem16 part{g.M, g.N, k1 - k0, g.dtype, A, B, out, c_offsets, g.N, false, g.kernels, g.path, g.mr, g.nr};
        blocked_loops_16bit<W>(part, /*allow_threads=*/false);
    };
    split_k(g.M, g.N, g.K, k_split_parts(g.M, g.N, g.K, sizeof(float)), multiply_part, g.C + g.c_offsets[0], g.ldc,
            g.accumulate, (const float*)nullptr);
}

// W: the packed word, float (widen) or uint32_t (pairs). `allow_threads` =
// false keeps everything on the calling thread (a part of split_k_16bit).
template <typename W>
void blocked_loops_16bit(const Problem16& g, bool allow_threads) {
    const int mr = g.mr, nr = g.nr;
    const int64_t kc_max = 256, nc_max = round_up(1024, nr), mc_max = round_up(144, mr);
    const int64_t batch = (int64_t)g.c_offsets.size();
    const bool parallel = allow_threads && (double)g.M * g.N * g.K * batch > 1e5;
    if (parallel && batch == 1 && k_split_parts(g.M, g.N, g.K, sizeof(float)) > 1) return split_k_16bit<W>(g);
    const int threads = parallel ? omp_get_max_threads() : 1;
    // Rows in blocks of at most mc, and at least one block per thread when
    // the rows allow it (a 64-row product should not leave a core idle).
    const int64_t blocks = std::max(ceil_div(g.M, mc_max), std::min<int64_t>(threads, ceil_div(g.M, mr)));
    const int64_t mc = round_up(ceil_div(g.M, blocks), mr);
    ScratchBuffer<W> b_packed((size_t)(words_for(g.path, kc_max) * std::min(nc_max, round_up(g.N, nr))));
#pragma omp parallel if (parallel)
    {
#if defined(__x86_64__)
        if (g.path == Gemm16Path::Amx) amx_configure_tiles();  // the tiles' shapes, on this thread
#endif
        ScratchBuffer<W> a_packed((size_t)(words_for(g.path, kc_max) * mc));
        for (int64_t bi = 0; bi < batch; ++bi) {
            const Matrix16 A{g.A.data + g.A.batch_offsets[bi], g.A.row_stride, g.A.col_stride};
            const Matrix16 B{g.B.data + g.B.batch_offsets[bi], g.B.row_stride, g.B.col_stride};
            for (int64_t jc = 0; jc < g.N; jc += nc_max) {
                const int64_t n = std::min(nc_max, g.N - jc);
                for (int64_t pc = 0; pc < g.K; pc += kc_max) {  // kc_max is even: only the last slice can be odd
                    const int64_t kc = std::min(kc_max, g.K - pc), words = words_for(g.path, kc);
                    const bool accumulate = g.accumulate || pc > 0;
#pragma omp for schedule(static)
                    for (int64_t c = 0; c < ceil_div(n, nr); ++c)
                        pack_b_block(g, B.shifted(pc, jc + c * nr), kc, std::min<int64_t>(nr, n - c * nr), words,
                                     b_packed.data() + c * nr * words);
                    // (the loop's barrier: B is packed before anyone reads it)
#pragma omp for schedule(dynamic)
                    for (int64_t block = 0; block < ceil_div(g.M, mc); ++block) {
                        const int64_t ic = block * mc, m = std::min(mc, g.M - ic);
                        pack_a_block(g, A.shifted(ic, pc), m, kc, words, a_packed.data());
                        for (int64_t ir = 0; ir < m; ir += mr)
                            for (int64_t jr = 0; jr < n; jr += nr)
                                run_kernel(g.kernels, words, a_packed.data() + ir * words, b_packed.data() + jr * words,
                                           g.C + g.c_offsets[bi] + (ic + ir) * g.ldc + jc + jr, g.ldc,
                                           (int)std::min<int64_t>(mr, m - ir), (int)std::min<int64_t>(nr, n - jr),
                                           accumulate);
                    }
                    // (and this one: nobody repacks B while another still reads it)
                }
            }
        }
#if defined(__x86_64__)
        if (g.path == Gemm16Path::Amx) amx_release_tiles();
#endif
    }
}

}  // namespace

void gemm_16bit(int64_t M, int64_t N, int64_t K, DType dtype, const MatrixOperand<uint16_t>& A,
                const MatrixOperand<uint16_t>& B, float* C, const std::vector<int64_t>& c_offsets,
                int64_t c_row_stride, Gemm16Path path, bool accumulate, SimdIsa isa) {
    if (dtype != kBFloat16 && dtype != kFloat16)
        throw Error(std::string("gemm_16bit: operands must be bfloat16 or float16, got ") + dtype_name(dtype));
    if (!cpu_supports(path, dtype))
        throw Error(std::string("gemm_16bit: this CPU cannot multiply ") + dtype_name(dtype) + " on the " +
                    gemm16_path_name(path) + " path");
    if (!cpu_supports(isa))
        throw Error(std::string("gemm_16bit: this CPU cannot run the ") + simd_isa_name(isa) + " micro-kernel");
    if (K == 0) {  // an empty sum: C = 0 (or unchanged)
        if (!accumulate)
            for (int64_t offset : c_offsets)
                for (int64_t i = 0; i < M; ++i) std::fill_n(C + offset + i * c_row_stride, N, 0.0f);
        return;
    }
    // One row of A (generating a token): gemv.h reads B in place, 16 bits a
    // number, where the packing below would first copy all of it, widened.
    // It widens whatever `path` says (B is read once; pairs would not pay).
    if (takes_gemv_16bit(M, B)) {
        for (size_t bi = 0; bi < c_offsets.size(); ++bi)
            gemv_16bit(N, K, dtype, A.data + A.batch_offsets[bi], A.col_stride, B.data + B.batch_offsets[bi],
                       B.row_stride, B.col_stride, C + c_offsets[bi], accumulate, /*allow_threads=*/true);
        return;
    }
    Kernels kernels{micro_kernel_for(isa), PairKernel{}};
#if defined(__x86_64__) || defined(__i386__)
    if (path == Gemm16Path::Bf16Dot) kernels.pairs = kAvx512Bf16Kernel;
#endif
#if defined(__x86_64__)
    if (path == Gemm16Path::Amx) kernels.pairs = kAmxKernel;
#endif
    const bool pairs = path != Gemm16Path::Widen;
    Problem16 g{M,     N,          K,       dtype,
                A,     B,          C,       c_offsets,
                c_row_stride,      accumulate,
                kernels,           path,
                pairs ? kernels.pairs.mr : kernels.widened.mr,
                pairs ? kernels.pairs.nr : kernels.widened.nr};
    if (pairs) blocked_loops_16bit<uint32_t>(g, /*allow_threads=*/true);
    else blocked_loops_16bit<float>(g, /*allow_threads=*/true);
}

double measure_bf16_dot_peak_gflops(int threads, int64_t iterations) {
#if defined(__x86_64__) || defined(__i386__)
    if (!cpu_supports(Gemm16Path::Bf16Dot, kBFloat16)) return 0;
    // 12 chains x 16 lanes x 4 FLOPs (two multiplies, two adds) per iteration per thread.
    return time_register_loop_gflops(bf16_dot_loop_avx512, threads, iterations, 4.0 * 12 * 16);
#else
    (void)threads, (void)iterations;
    return 0;
#endif
}

}  // namespace cpu
}  // namespace nc
