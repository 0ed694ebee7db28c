// gemv.cpp — the one-row product of gemv.h, B read in place.
//
// Both loops are plain C++ with `omp simd`, which lets the compiler use the
// vector width of the build's -march (16 floats on AVX-512, 8 on AVX2, 4 on
// NEON) and, for the dot products, reorder each sum into one partial sum
// per vector lane, added up at the end. (Writing the vectors out by hand,
// with the lanes added in halves, measured no faster.)
#include "tensor/cpu/gemv.h"

#include <algorithm>
#include <vector>

#include <omp.h>

#include "tensor/cpu/parallel.h"

namespace nc {
namespace cpu {

namespace {

// Below this many multiply-adds one thread finishes before a team of
// threads would have started (waking them costs a few microseconds): every
// product of the default model (C = 128, at most 128 x 512 = 65,536)
// stays on one thread; every weight product of GPT-2 124M (the smallest,
// 768 x 768, is 589,824) is split. parallel.h's element threshold times 4
// (2^17): a multiply-add streams one weight, and two threads only paid
// from about twice the default model's largest product on.
constexpr int64_t kGemvParallelMin = 4 * kParallelMin;

void write(float* c, float sum, bool accumulate) { *c = accumulate ? *c + sum : sum; }

// A B of more bytes than this is taken to come from memory, not from the
// cache (1 MiB: the L2 cache of one core here; laptop cores have 0.5-2 MiB).
constexpr int64_t kFromMemoryBytes = int64_t(1) << 20;

// c[n] (+)= dot(a, B[:, n]) for first <= n < last, B's columns contiguous
// (column n starts at B + n * b_cs). Which order pays depends on where B is:
//  - in the cache (the default model's weights, a short cache of keys): the
//    sums' latency limits, so four columns at a time, four independent
//    chains of multiply-adds, each loaded piece of a used four times;
//  - in memory (GPT-2 124M's weights): the reading limits. A weight
//    matrix's columns lie end to end, and one column after the other reads
//    B as one sequential stream, which the hardware prefetcher serves best;
//    four columns at a time are four short streams. With the weights in
//    2 MiB-aligned blocks (allocator.cpp), four columns at a time read GPT-2
//    124M's weights at 30-36 GB/s, one at a time at 55-56 (with 64-byte
//    alignment both read about 32), while in the cache one column at a time
//    takes 1.4x as long (bench/results/gemv-stream-2026-12-05.txt).
// Both orders add each sum's terms the same way (one partial sum per vector
// lane, added up at the end): built here, they give the same bits for K
// from 17 to 3072.
void dot_columns(int64_t first, int64_t last, int64_t K, const float* a, const float* B, int64_t b_cs, float* c,
                 bool accumulate, bool from_memory) {
    int64_t n = first;
    for (; !from_memory && n + 4 <= last; n += 4) {
        const float *w0 = B + n * b_cs, *w1 = w0 + b_cs, *w2 = w1 + b_cs, *w3 = w2 + b_cs;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
        for (int64_t k = 0; k < K; ++k) {
            s0 += a[k] * w0[k];
            s1 += a[k] * w1[k];
            s2 += a[k] * w2[k];
            s3 += a[k] * w3[k];
        }
        write(c + n, s0, accumulate);
        write(c + n + 1, s1, accumulate);
        write(c + n + 2, s2, accumulate);
        write(c + n + 3, s3, accumulate);
    }
    for (; n < last; ++n) {
        const float* w = B + n * b_cs;
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t k = 0; k < K; ++k) s += a[k] * w[k];
        write(c + n, s, accumulate);
    }
}

// c[first:last] (+)= sum_k a[k] B[k, first:last], B's rows contiguous (row k
// starts at B + k * b_rs). The columns go in pieces of 1024 so that the
// piece of c being summed into stays in the L1 cache across all k.
void scaled_rows(int64_t first, int64_t last, int64_t K, const float* a, int64_t a_cs, const float* B, int64_t b_rs,
                 float* c, bool accumulate) {
    constexpr int64_t kPiece = 1024;
    for (int64_t j0 = first; j0 < last; j0 += kPiece) {
        int64_t width = std::min(kPiece, last - j0);
        float* out = c + j0;
        if (!accumulate) std::fill_n(out, width, 0.0f);
        for (int64_t k = 0; k < K; ++k) {
            const float ak = a[k * a_cs], *row = B + k * b_rs + j0;
#pragma omp simd
            for (int64_t j = 0; j < width; ++j) out[j] += ak * row[j];
        }
    }
}

}  // namespace

bool gemv(int64_t N, int64_t K, const float* a, int64_t a_cs, const float* B, int64_t b_rs, int64_t b_cs, float* c,
          bool accumulate, bool allow_threads) {
    const bool columns_contiguous = b_rs == 1, rows_contiguous = b_cs == 1;
    if (!columns_contiguous && !rows_contiguous) return false;
    // The dot products want a contiguous a too; a strided one (rare: a
    // transposed activation) is copied first, K numbers.
    std::vector<float> a_copy;
    if (columns_contiguous && a_cs != 1) {
        a_copy.resize(K);
        for (int64_t k = 0; k < K; ++k) a_copy[k] = a[k * a_cs];
        a = a_copy.data();
    }
    const bool from_memory = N * K * (int64_t)sizeof(float) > kFromMemoryBytes;
    auto columns = [&](int64_t first, int64_t last) {
        if (columns_contiguous)
            dot_columns(first, last, K, a, B, b_cs, c, accumulate, from_memory);
        else
            scaled_rows(first, last, K, a, a_cs, B, b_rs, c, accumulate);
    };
    const int threads = allow_threads && N * K >= kGemvParallelMin ? omp_get_max_threads() : 1;
    if (threads == 1) {  // no parallel region at all: even an inactive one costs ~0.3 us
        columns(0, N);
        return true;
    }
#pragma omp parallel num_threads(threads)
    {
        // Each thread takes an equal run of columns, cut at multiples of 16
        // (when c is 64-byte aligned, as a fresh tensor is: whole cache
        // lines, so no two threads write the same line).
        const int me = omp_get_thread_num(), team = omp_get_num_threads();
        auto boundary = [&](int t) { return t == team ? N : N * t / team / 16 * 16; };
        columns(boundary(me), boundary(me + 1));
    }
    return true;
}

}  // namespace cpu
}  // namespace nc
