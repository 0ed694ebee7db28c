// gemm_kernel_avx512.cpp — the 12 x 32 micro-kernel with AVX-512 intrinsics.
//
// AVX-512 has 32 vector registers of 16 floats. The accumulator block is
// 12 rows x 2 registers = 24 registers; each step p loads two B vectors
// (32 floats of one packed row) and, for each of the 12 rows, broadcasts one
// A value and issues two FMAs: 24 FMAs for 2 loads + 12 broadcasts, enough
// to keep both FMA ports busy (an FMA has ~4 cycles latency and the 24
// independent chains hide it). The last panel of a block with fewer rows
// runs a 4- or 8-row copy of the same loop (kernel_rows<ROWS>).
//
// Shapes: packed a [kc, 12], packed b [kc, 32] -> a 12 x 32 block of C (gemm.cpp);
// kernel_unpacked_a_avx512: up to 12 rows of a row-major or transposed A read in place instead.
//
// This file is compiled for AVX-512 whatever the build's -march says
// (the Makefile's flags for it), and its functions are only called after
// cpu_supports(SimdIsa::Avx512) checked the CPU at run time.
#if defined(__x86_64__) || defined(__i386__)  // x86 only: empty on other CPUs

#include <immintrin.h>

#include "tensor/cpu/gemm_kernels.h"

// The Makefile compiles this file alone with -mavx512f -mfma (any compiler, g++ or
// clang). So nothing from the standard library is used in it: an inline
// std:: function instantiated here would be compiled for this instruction
// set and could be picked by the linker for the whole program.
// GCC 12's own intrinsic headers trip -Wuninitialized (their "undefined"
// placeholder vectors); nothing in this file reads an uninitialized value.
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 12, NR = 32;

// The accumulators of a ROWS x NR block to C: only the first m rows and n
// columns exist in C at an edge.
template <int ROWS>
inline void store_block(__m512 (&acc)[ROWS][2], float* __restrict c, int64_t ldc, int m, int n, bool accumulate) {
    if (m == ROWS && n == NR) {  // a full block: straight from registers to C
        for (int i = 0; i < ROWS; ++i) {
            float* row = c + i * ldc;
            if (accumulate) {
                acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(row));
                acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(row + 16));
            }
            _mm512_storeu_ps(row, acc[i][0]);
            _mm512_storeu_ps(row + 16, acc[i][1]);
        }
        return;
    }
    alignas(64) float block[ROWS][NR];
    for (int i = 0; i < ROWS; ++i) {
        _mm512_store_ps(block[i], acc[i][0]);
        _mm512_store_ps(block[i] + 16, acc[i][1]);
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + block[i][j] : block[i][j];
}

// Asks for the C block's cache lines now; they arrive while we compute.
inline void prefetch_block(const float* c, int64_t ldc, int m) {
    for (int i = 0; i < m; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 16), _MM_HINT_T0);
    }
}

// The block's first ROWS rows (ROWS <= MR), from A values that sit side by
// side, a_step apart from one step p to the next: a packed panel (a_step =
// MR; it still holds MR values per step when ROWS < MR), or a transposed A
// read in place (a_step = its row length). The full kernel is ROWS = MR; the
// shorter ones serve the last panel of a block whose rows are not a multiple
// of MR (M = 1024 ends in a panel of 4 rows: computing 12 there was 0.8% of
// the product's work).
template <int ROWS>
void kernel_rows(int64_t kc, const float* __restrict a, int64_t a_step, const float* __restrict b,
                 float* __restrict c, int64_t ldc, int m, int n, bool accumulate) {
    __m512 acc[ROWS][2];
    for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    prefetch_block(c, ldc, m);
    for (int64_t p = 0; p < kc; ++p) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        for (int i = 0; i < ROWS; ++i) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += a_step;
        b += NR;
    }
    store_block<ROWS>(acc, c, ldc, m, n, accumulate);
}

void kernel_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int m, int n,
                   bool accumulate) {
    if (m <= 4) kernel_rows<4>(kc, a, MR, b, c, ldc, m, n, accumulate);
    else if (m <= 8) kernel_rows<8>(kc, a, MR, b, c, ldc, m, n, accumulate);
    else kernel_rows<MR>(kc, a, MR, b, c, ldc, m, n, accumulate);
}

// ROWS rows of A read in place (gemm_kernels.h). Transposed (a_rs = 1), the
// values of a step already sit side by side, as in a packed panel, only
// a_cs apart from one step to the next: kernel_rows with that step.
// Row-major (a_cs = 1), the broadcasts come from ROWS rows a_rs apart.
template <int ROWS>
void unpacked_rows(int64_t kc, const float* __restrict a, int64_t a_rs, int64_t a_cs, const float* __restrict b,
                   float* __restrict c, int64_t ldc, int n, bool accumulate) {
    if (a_cs != 1) return kernel_rows<ROWS>(kc, a, a_cs, b, c, ldc, ROWS, n, accumulate);
    __m512 acc[ROWS][2];
    for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    prefetch_block(c, ldc, ROWS);
    for (int64_t p = 0; p < kc; ++p) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        for (int i = 0; i < ROWS; ++i) {
            __m512 ai = _mm512_set1_ps(a[i * a_rs + p]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        b += NR;
    }
    store_block<ROWS>(acc, c, ldc, ROWS, n, accumulate);
}

// A panel of m <= MR rows read in place. The rows of a last, shorter panel
// are exactly m (a packed panel's zero rows do not exist here), so each m
// has its own copy of the loop; each row's multiply-adds are those of the
// packed kernel, in the same order.
void kernel_unpacked_a_avx512(int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, float* c,
                              int64_t ldc, int m, int n, bool accumulate) {
    switch (m) {
        case 1: return unpacked_rows<1>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 2: return unpacked_rows<2>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 3: return unpacked_rows<3>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 4: return unpacked_rows<4>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 5: return unpacked_rows<5>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 6: return unpacked_rows<6>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 7: return unpacked_rows<7>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 8: return unpacked_rows<8>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 9: return unpacked_rows<9>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 10: return unpacked_rows<10>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 11: return unpacked_rows<11>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        default: return unpacked_rows<MR>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
    }
}

// A 16 x 16 transpose in registers: four rounds of shuffles, each swapping
// ever larger sub-blocks (1 float, 2 floats, 4 floats, 8 floats) between
// pairs of rows. Afterwards r[j] holds a whole column of the input: column
// j with bits 0 and 1 of j swapped (round 2 pairs rows 0,2 and 1,3), i.e.
// 0, 2, 1, 3, 4, 6, 5, 7, ... (transposed_column below).
inline void transpose16_in_registers(__m512 (&r)[16]) {
    __m512 t[16];
    // Round 1: interleave floats of row pairs (0,1), (2,3), ...
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // Round 2: interleave pairs of floats of rows (0,2), (1,3), (4,6), ...
    for (int i = 0; i < 16; i += 4)
        for (int k = 0; k < 2; ++k) {
            __m512d a = _mm512_castps_pd(t[i + k]), b = _mm512_castps_pd(t[i + k + 2]);
            r[i + k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[i + k + 2] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    // Round 3: 128-bit lanes between rows (0,4), (1,5), ... (lanes 0,2 of a | 0,2 of b; 1,3 | 1,3).
    for (int i = 0; i < 16; i += 8)
        for (int k = 0; k < 4; ++k) {
            t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
            t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xdd);
        }
    // Round 4: the same between rows (0,8), (1,9), ...
    for (int k = 0; k < 8; ++k) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
    }
}
// Which column of the input r[j] holds after the transpose (its own inverse).
inline int transposed_column(int j) { return (j & ~3) | ((j & 1) << 1) | ((j >> 1) & 1); }

// Packing's transpose (gemm_kernels.h): rows past `rows` read as zero; only
// `width` floats of each output row are stored (a masked store).
void transpose16_avx512(const float* src, int64_t src_stride, int rows, float* dst, int64_t dst_stride, int width) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * src_stride) : _mm512_setzero_ps();
    transpose16_in_registers(r);
    const __mmask16 mask = (__mmask16)((1u << width) - 1);
    for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(dst + transposed_column(j) * dst_stride, mask, r[j]);
}

// COLUMNS (1 or 16) dot products in the order of gemm_kernels.h: one
// register of 16 partial sums per column, lane i taking k = i, i + 16, ...;
// the last K mod 16 terms come through a masked load, the lanes past K
// adding 0 x 0.
template <int COLUMNS>
inline void dot_columns_block(int64_t K, const float* __restrict a, const float* __restrict b, int64_t b_cs,
                              float* __restrict c, bool accumulate) {
    __m512 partial[COLUMNS];
    for (int j = 0; j < COLUMNS; ++j) partial[j] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        const __m512 ak = _mm512_loadu_ps(a + k);
        for (int j = 0; j < COLUMNS; ++j)
            partial[j] = _mm512_fmadd_ps(ak, _mm512_loadu_ps(b + j * b_cs + k), partial[j]);
    }
    if (k < K) {
        const __mmask16 mask = (__mmask16)((1u << (K - k)) - 1);
        const __m512 ak = _mm512_maskz_loadu_ps(mask, a + k);
        for (int j = 0; j < COLUMNS; ++j)
            partial[j] = _mm512_fmadd_ps(ak, _mm512_maskz_loadu_ps(mask, b + j * b_cs + k), partial[j]);
    }
    if constexpr (COLUMNS == 16) {
        // Transposed, one register holds partial i of all 16 columns (register
        // transposed_column(i)), so the 16 left-to-right sums take 16 vector
        // adds instead of 16 x 16 scalar ones.
        transpose16_in_registers(partial);
        __m512 sum = _mm512_setzero_ps();
        for (int i = 0; i < 16; ++i) sum = _mm512_add_ps(sum, partial[transposed_column(i)]);
        if (accumulate) sum = _mm512_add_ps(_mm512_loadu_ps(c), sum);
        _mm512_storeu_ps(c, sum);
    } else {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, partial[0]);
        float sum = 0;
        for (int i = 0; i < 16; ++i) sum += lanes[i];
        *c = accumulate ? *c + sum : sum;
    }
}

// Sixteen columns at a time: 16 independent chains of multiply-adds, each
// loaded piece of a used 16 times. A test program that put one row through
// the default model's 17 weight matrices (3.4 MB, read from the L3 cache)
// took 39 us a pass this way and 58 four columns at a time with a sum per
// column (bench/results/generate-dot16-2026-12-05.txt).
void dot_columns_avx512(int64_t K, const float* a, const float* b, int64_t b_cs, int64_t columns, float* c,
                        bool accumulate, bool streaming) {
    int64_t j = 0;
    for (; !streaming && j + 16 <= columns; j += 16) dot_columns_block<16>(K, a, b + j * b_cs, b_cs, c + j, accumulate);
    for (; j < columns; ++j) dot_columns_block<1>(K, a, b + j * b_cs, b_cs, c + j, accumulate);
}

}  // namespace

const MicroKernel kAvx512Kernel{SimdIsa::Avx512, MR, NR, kernel_avx512, transpose16_avx512, kernel_unpacked_a_avx512,
                                dot_columns_avx512};

float fma_loop_avx512(int64_t iterations) {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * (float)i);
    const __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(1e-5f);
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
    for (int i = 1; i < 12; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    float total = 0;
    for (float x : lanes) total += x;
    return total;
}

}  // namespace cpu
}  // namespace nc

#endif  // x86
