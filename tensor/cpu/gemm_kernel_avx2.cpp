// gemm_kernel_avx2.cpp — the 6 x 16 micro-kernel with AVX2 + FMA intrinsics
// (and F16C's float16 conversion for the 16-bit dot products).
//
// AVX2 has 16 vector registers of 8 floats: 6 rows x 2 registers = 12
// accumulators, 2 for the B row, 1 for the broadcast A value, the classic
// Haswell sgemm shape. Each step p loads two B vectors and, for each of the
// 6 rows, broadcasts one A value and issues two FMAs: 12 FMAs for 2 loads
// + 6 broadcasts, and 12 independent chains to hide an FMA's latency. The
// file has the same parts as the AVX-512 one (gemm_kernel_avx512.cpp),
// narrower: shorter last panels, A read in place, packing's transpose, and
// the dot products of one-row products (four columns at a time, not 16).
// The loops repeat the AVX-512 file's on another vector type: each file is
// compiled alone for its instruction set.
//
// Shapes: packed a [kc, 6], packed b [kc, 16] -> a 6 x 16 block of C (gemm.cpp);
// kernel_unpacked_a_avx2: up to 6 rows of a row-major or transposed A read in place instead.
//
// Compiled for AVX2 whatever the build's -march says; only called after
// cpu_supports(SimdIsa::Avx2).
#if defined(__x86_64__) || defined(__i386__)  // x86 only: empty on other CPUs

#include <immintrin.h>

#include "tensor/cpu/gemm_kernels.h"

// The Makefile compiles this file alone with -mavx2 -mfma -mf16c (any compiler,
// g++ or clang). So nothing from the standard library is used in it: an inline
// std:: function instantiated here would be compiled for this instruction
// set and could be picked by the linker for the whole program.

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 6, NR = 16;

// The first `lanes` floats of v to dst (lanes <= 8), in pieces of 4, 2
// and 1: no masked store (vmaskmovps), which is slow on AMD's Zen cores
// (packing through masked stores took 9% of train's step on a Zen 3).
inline void store_lanes(float* dst, __m256 v, int lanes) {
    if (lanes == 8) return _mm256_storeu_ps(dst, v);
    __m128 part = _mm256_castps256_ps128(v);
    if (lanes >= 4) {
        _mm_storeu_ps(dst, part);
        part = _mm256_extractf128_ps(v, 1);
        dst += 4;
        lanes -= 4;
    }
    if (lanes >= 2) {
        _mm_storel_pi((__m64*)dst, part);
        part = _mm_movehl_ps(part, part);
        dst += 2;
        lanes -= 2;
    }
    if (lanes == 1) _mm_store_ss(dst, part);
}

// The accumulators of a ROWS x NR block to C: only the first m rows and n
// columns exist in C at an edge.
template <int ROWS>
inline void store_block(__m256 (&acc)[ROWS][2], float* __restrict c, int64_t ldc, int m, int n, bool accumulate) {
    if (m == ROWS && n == NR) {  // a full block: straight from registers to C
        for (int i = 0; i < ROWS; ++i) {
            float* row = c + i * ldc;
            if (accumulate) {
                acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(row));
                acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(row + 8));
            }
            _mm256_storeu_ps(row, acc[i][0]);
            _mm256_storeu_ps(row + 8, acc[i][1]);
        }
        return;
    }
    // An edge: through memory, indexing acc only with constants (a loop
    // over i < m would keep acc in memory during the whole kernel).
    alignas(32) float block[ROWS][NR];
    for (int i = 0; i < ROWS; ++i) {
        _mm256_store_ps(block[i], acc[i][0]);
        _mm256_store_ps(block[i] + 8, acc[i][1]);
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + block[i][j] : block[i][j];
}

// The block's first ROWS rows (ROWS <= MR), from A values that sit side by
// side, a_step apart from one step p to the next: a packed panel (a_step =
// MR; it still holds MR values per step when ROWS < MR), or a transposed A
// read in place (a_step = its row length). The full kernel is ROWS = MR; the
// shorter ones serve a last panel of fewer rows, which need not compute the
// packed panel's rows of zeros.
template <int ROWS>
void kernel_rows(int64_t kc, const float* __restrict a, int64_t a_step, const float* __restrict b,
                 float* __restrict c, int64_t ldc, int m, int n, bool accumulate) {
    __m256 acc[ROWS][2];
    for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    // An empty K, apart, for the compiler's sake: where the loop below might
    // run zero times, GCC 12 at -O3 (-fpeel-loops, which -O2 lacks) kept the
    // accumulators in memory as well as in registers and stored all 12 of
    // them at every step p (12 stores per 12 FMAs, where a core does one
    // 32-byte store a cycle): 1024 x 1024 x 1024 ran at 31% of the FMA peak
    // on a Zen 3. (The AVX-512 kernel's loop never had the stores.)
    if (kc < 1) return store_block<ROWS>(acc, c, ldc, m, n, accumulate);
    for (int64_t p = 0; p < kc; ++p) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        for (int i = 0; i < ROWS; ++i) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += a_step;
        b += NR;
    }
    store_block<ROWS>(acc, c, ldc, m, n, accumulate);
}

void kernel_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int m, int n,
                 bool accumulate) {
    if (m <= 2) kernel_rows<2>(kc, a, MR, b, c, ldc, m, n, accumulate);
    else if (m <= 4) kernel_rows<4>(kc, a, MR, b, c, ldc, m, n, accumulate);
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
    __m256 acc[ROWS][2];
    for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    if (kc < 1) return store_block<ROWS>(acc, c, ldc, ROWS, n, accumulate);  // (kernel_rows)
    for (int64_t p = 0; p < kc; ++p) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        for (int i = 0; i < ROWS; ++i) {
            __m256 ai = _mm256_broadcast_ss(a + i * a_rs + p);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        b += NR;
    }
    store_block<ROWS>(acc, c, ldc, ROWS, n, accumulate);
}

// A panel of m <= MR rows read in place: exactly m rows, each with the
// multiply-adds of the packed kernel, in the same order.
void kernel_unpacked_a_avx2(int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, float* c,
                            int64_t ldc, int m, int n, bool accumulate) {
    switch (m) {
        case 1: return unpacked_rows<1>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 2: return unpacked_rows<2>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 3: return unpacked_rows<3>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 4: return unpacked_rows<4>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        case 5: return unpacked_rows<5>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
        default: return unpacked_rows<MR>(kc, a, a_rs, a_cs, b, c, ldc, n, accumulate);
    }
}

// An 8 x 8 transpose in registers: three rounds of shuffles, each swapping
// ever larger sub-blocks (1 float, 2 floats, 4 floats) between pairs of
// rows. Afterwards r[j] holds column j of the input.
inline void transpose8_in_registers(__m256 (&r)[8]) {
    __m256 t[8];
    // Round 1: interleave floats of row pairs (0,1), (2,3), ...
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // r0[2] r1[2] r0[3] r1[3] | r0[6] ...
    }
    // Round 2: pairs of floats between rows (0,2), (1,3), (4,6), (5,7).
    for (int i = 0; i < 8; i += 4)
        for (int k = 0; k < 2; ++k) {
            r[i + 2 * k] = _mm256_shuffle_ps(t[i + k], t[i + k + 2], 0x44);      // low pairs
            r[i + 2 * k + 1] = _mm256_shuffle_ps(t[i + k], t[i + k + 2], 0xee);  // high pairs
        }
    // Now r[i + c] (i = 0 or 4, c < 4) holds column c of rows i..i+3 in its
    // lower 128 bits and column c + 4 in its upper ones. Round 3: the
    // 128-bit halves between rows (0,4), (1,5), ...
    for (int c = 0; c < 4; ++c) {
        t[c] = _mm256_permute2f128_ps(r[c], r[c + 4], 0x20);
        t[c + 4] = _mm256_permute2f128_ps(r[c], r[c + 4], 0x31);
    }
    for (int j = 0; j < 8; ++j) r[j] = t[j];
}

// Packing's transpose (gemm_kernels.h), as four 8 x 8 blocks: rows past
// `rows` read as zero; only `width` floats of each output row are stored.
void transpose16_avx2(const float* src, int64_t src_stride, int rows, float* dst, int64_t dst_stride, int width) {
    for (int i0 = 0; i0 < 16 && i0 < width; i0 += 8) {
        const int lanes = width - i0 < 8 ? width - i0 : 8;  // lanes i0 + l of an output row exist for l < width - i0
        for (int p0 = 0; p0 < 16; p0 += 8) {
            __m256 r[8];
            for (int l = 0; l < 8; ++l)
                r[l] = i0 + l < rows ? _mm256_loadu_ps(src + (i0 + l) * src_stride + p0) : _mm256_setzero_ps();
            transpose8_in_registers(r);
            for (int j = 0; j < 8; ++j) store_lanes(dst + (p0 + j) * dst_stride + i0, r[j], lanes);
        }
    }
}

// The lanes i of the 16 partial sums lie in two registers, lanes 0-7 and
// 8-15. lanes_below(r) is the mask of lanes l < r of one of them.
inline __m256i lanes_below(int r) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// How the dot products read 8 numbers of B as 8 floats: load(p), and
// load_first(p, count), the first `count` of them (any int: below 1 none,
// above 8 all) and zeros in the other lanes.
struct Float32Lanes {  // float32: the numbers themselves (masked *loads* are not slow on Zen)
    static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
    static __m256 load_first(const float* p, int count) { return _mm256_maskload_ps(p, lanes_below(count)); }
};
// 16-bit numbers, widened as they are loaded; the partial load goes through
// a zeroed copy (a masked 16-bit load needs AVX-512).
template <typename Widen>
__m256 load_first_16bit(const uint16_t* p, int count) {
    alignas(16) uint16_t part[8] = {};
    for (int i = 0; i < count && i < 8; ++i) part[i] = p[i];
    return Widen::load(part);
}
struct BFloat16Lanes {  // a bfloat16 is the top half of a float32: shift its bits up
    static __m256 load(const uint16_t* p) {
        const __m256i bits = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(bits, 16));
    }
    static __m256 load_first(const uint16_t* p, int count) { return load_first_16bit<BFloat16Lanes>(p, count); }
};
struct Float16Lanes {  // F16C's conversion, exact (vcvtph2ps)
    static __m256 load(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static __m256 load_first(const uint16_t* p, int count) { return load_first_16bit<Float16Lanes>(p, count); }
};

// COLUMNS (1 or 4) dot products in the order of gemm_kernels.h: 16
// partial sums per column in two registers, lane i taking k = i, i + 16,
// ...; the last K mod 16 terms come through partial loads, the lanes past
// K adding 0 x 0. B's numbers are read through `Lanes` (above).
template <int COLUMNS, typename Lanes, typename Stored>
inline void dot_columns_block(int64_t K, const float* __restrict a, const Stored* __restrict b, int64_t b_cs,
                              float* __restrict c, bool accumulate) {
    __m256 partial[COLUMNS][2];
    for (int j = 0; j < COLUMNS; ++j) partial[j][0] = partial[j][1] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        const __m256 a0 = _mm256_loadu_ps(a + k), a1 = _mm256_loadu_ps(a + k + 8);
        for (int j = 0; j < COLUMNS; ++j) {
            partial[j][0] = _mm256_fmadd_ps(a0, Lanes::load(b + j * b_cs + k), partial[j][0]);
            partial[j][1] = _mm256_fmadd_ps(a1, Lanes::load(b + j * b_cs + k + 8), partial[j][1]);
        }
    }
    if (k < K) {
        const int rest = (int)(K - k);
        const __m256 a0 = Float32Lanes::load_first(a + k, rest), a1 = Float32Lanes::load_first(a + k + 8, rest - 8);
        for (int j = 0; j < COLUMNS; ++j) {
            partial[j][0] = _mm256_fmadd_ps(a0, Lanes::load_first(b + j * b_cs + k, rest), partial[j][0]);
            partial[j][1] = _mm256_fmadd_ps(a1, Lanes::load_first(b + j * b_cs + k + 8, rest - 8), partial[j][1]);
        }
    }
    if constexpr (COLUMNS == 4) {
        // The left-to-right sums of the four columns side by side, in one
        // register of 4 floats: four lanes i at a time, the 4 x 4 block
        // (column j, lane i0 + q) transposed so that register q holds lane
        // i0 + q of every column, then added in order. 16 vector adds
        // instead of 4 x 16 scalar ones, each waiting for the one before.
        __m128 sum = _mm_setzero_ps();
        for (int half = 0; half < 2; ++half)
            for (int upper = 0; upper < 2; ++upper) {
                __m128 r[4];
                for (int j = 0; j < 4; ++j)
                    r[j] = upper ? _mm256_extractf128_ps(partial[j][half], 1) : _mm256_castps256_ps128(partial[j][half]);
                const __m128 t0 = _mm_unpacklo_ps(r[0], r[1]), t1 = _mm_unpackhi_ps(r[0], r[1]);
                const __m128 t2 = _mm_unpacklo_ps(r[2], r[3]), t3 = _mm_unpackhi_ps(r[2], r[3]);
                sum = _mm_add_ps(sum, _mm_movelh_ps(t0, t2));  // lane i0 of columns 0..3
                sum = _mm_add_ps(sum, _mm_movehl_ps(t2, t0));  // lane i0 + 1
                sum = _mm_add_ps(sum, _mm_movelh_ps(t1, t3));  // lane i0 + 2
                sum = _mm_add_ps(sum, _mm_movehl_ps(t3, t1));  // lane i0 + 3
            }
        if (accumulate) sum = _mm_add_ps(_mm_loadu_ps(c), sum);
        _mm_storeu_ps(c, sum);
    } else {
        alignas(32) float lanes[16];
        _mm256_store_ps(lanes, partial[0][0]);
        _mm256_store_ps(lanes + 8, partial[0][1]);
        float sum = 0;
        for (int i = 0; i < 16; ++i) sum += lanes[i];
        *c = accumulate ? *c + sum : sum;
    }
}

// Four columns at a time from the cache (four independent pairs of chains;
// each loaded piece of a used four times), or one after the other when
// streaming B from memory (one sequential read).
template <typename Lanes, typename Stored>
void dot_columns_with(int64_t K, const float* a, const Stored* b, int64_t b_cs, int64_t columns, float* c,
                      bool accumulate, bool streaming) {
    int64_t j = 0;
    for (; !streaming && j + 4 <= columns; j += 4)
        dot_columns_block<4, Lanes>(K, a, b + j * b_cs, b_cs, c + j, accumulate);
    for (; j < columns; ++j) dot_columns_block<1, Lanes>(K, a, b + j * b_cs, b_cs, c + j, accumulate);
}
void dot_columns_avx2(int64_t K, const float* a, const float* b, int64_t b_cs, int64_t columns, float* c,
                      bool accumulate, bool streaming) {
    dot_columns_with<Float32Lanes>(K, a, b, b_cs, columns, c, accumulate, streaming);
}
// B in 16 bits (mixed precision's generation). Two chains of 8 lanes per
// column: on a Zen 4, a plain C++ loop that GCC compiled this way streamed
// GPT-2 124M's bfloat16 weights faster than AVX-512 code with one chain of
// 16 lanes (two chains of 16 would add in another order than float32's),
// so AVX-512 CPUs run this kernel too (gemv.cpp;
// bench/results/generate-16bit-2026-12-07.txt).
void dot_columns_16bit_avx2(int64_t K, const float* a, const uint16_t* b, int64_t b_cs, int64_t columns,
                            bool bfloat16, float* c, bool accumulate, bool streaming) {
    if (bfloat16) dot_columns_with<BFloat16Lanes>(K, a, b, b_cs, columns, c, accumulate, streaming);
    else dot_columns_with<Float16Lanes>(K, a, b, b_cs, columns, c, accumulate, streaming);
}
}  // namespace

const MicroKernel kAvx2Kernel{SimdIsa::Avx2, MR, NR, kernel_avx2, transpose16_avx2, kernel_unpacked_a_avx2,
                              dot_columns_avx2, dot_columns_16bit_avx2};

float fma_loop_avx2(int64_t iterations) {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * (float)i);
    const __m256 scale = _mm256_set1_ps(0.9999f), shift = _mm256_set1_ps(1e-5f);
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], scale, shift);
    for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    float total = 0;
    for (float x : lanes) total += x;
    return total;
}

}  // namespace cpu
}  // namespace nc

#endif  // x86
