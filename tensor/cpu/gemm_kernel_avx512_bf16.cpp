// gemm_kernel_avx512_bf16.cpp — the 12 x 32 bfloat16 micro-kernel on
// AVX512-BF16.
//
// vdpbf16ps (_mm512_dpbf16_ps) reads each 32-bit lane of its two inputs as a
// pair of bfloat16 and adds both products to the float32 lane of the
// accumulator: acc[j] += a[2j] b[2j] + a[2j+1] b[2j+1]. So the operands are
// packed in pairs along K (gemm_16bit.cpp): one register of B holds 16
// columns x 2 steps, one broadcast of A holds one row's 2 steps, and the
// block's 24 accumulators (12 rows x 2 registers) advance two steps of K per
// instruction, where the float32 kernel's FMA advances one. The structure is
// gemm_kernel_avx512.cpp's; only the step is a pair.
//
// The instruction treats bfloat16 subnormals as zero and rounds its sums to
// nearest even whatever the rounding mode (Intel's definition of VDPBF16PS);
// tests/test_gemm_16bit.cpp's tolerance is the float32 sum's, which covers it.
//
// Shapes: packed a [kq, 12] pairs, packed b [kq, 32] pairs -> a 12 x 32 block of C.
//
// Compiled alone with -mavx512f -mavx512bf16 (the Makefile), called only
// after cpu_supports(Gemm16Path::Bf16Dot, ...) asked the CPU; like the other
// kernel files it uses nothing from the standard library.
#if defined(__x86_64__) || defined(__i386__)  // x86 only: empty on other CPUs

#include <immintrin.h>

#include "tensor/cpu/gemm_16bit.h"

#pragma GCC diagnostic ignored "-Wuninitialized"

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 12, NR = 32;

// 16 lanes of pairs as the bfloat16 vector type the instruction takes.
inline __m512bh as_pairs(__m512i v) { return (__m512bh)v; }

template <int ROWS>
void pair_kernel_rows(int64_t kq, const uint32_t* __restrict a, const uint32_t* __restrict b, float* __restrict c,
                      int64_t ldc, int m, int n, bool accumulate) {
    __m512 acc[ROWS][2];
    for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int i = 0; i < m; ++i) {
        _mm_prefetch((const char*)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (int64_t q = 0; q < kq; ++q) {
        __m512bh b0 = as_pairs(_mm512_load_si512(b)), b1 = as_pairs(_mm512_load_si512(b + 16));
        for (int i = 0; i < ROWS; ++i) {
            __m512bh ai = as_pairs(_mm512_set1_epi32((int)a[i]));
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
        a += MR;
        b += NR;
    }
    if (m == ROWS && n == NR) {
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

void pair_kernel_avx512_bf16(int64_t kq, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, int m, int n,
                             bool accumulate) {
    if (m <= 4) pair_kernel_rows<4>(kq, a, b, c, ldc, m, n, accumulate);
    else if (m <= 8) pair_kernel_rows<8>(kq, a, b, c, ldc, m, n, accumulate);
    else pair_kernel_rows<MR>(kq, a, b, c, ldc, m, n, accumulate);
}

}  // namespace

const PairKernel kAvx512Bf16Kernel{MR, NR, pair_kernel_avx512_bf16};

// fma_loop_avx512's twin: 12 independent chains of vdpbf16ps, each adding
// two products per lane, so the instruction's issue rate is all it measures.
float bf16_dot_loop_avx512(int64_t iterations) {
    __m512 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * (float)i);
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-6f), _mm512_set1_ps(-1e-6f));
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
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
