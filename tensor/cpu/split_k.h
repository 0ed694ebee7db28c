// split_k.h — one product computed as parts along K, then added up.
//
// A weight gradient dW = dy^T x sums over every token of the batch: K is
// long (2048 tokens in train's model) while the output is small (128 x 128).
// Cut by rows, such a product leaves each thread a few micro-panels and a
// barrier per K slice. Cut by K, each part
//
//     part_p = A[:, K_p] B[K_p, :]     (K_p: steps [p K / parts, (p + 1) K / parts))
//
// is a whole product of its own, on one thread, with no one to wait for;
// at the end C (+)= ((part_0 + part_1) + part_2) + part_3, always in that
// order, so the result's bits depend on the shape and the micro-kernel,
// never on how many threads ran the parts. How many parts a shape gets is
// k_split_parts's rule (gemm.h); gemm.cpp (float32, float64) and
// gemm_16bit.cpp (16-bit operands, float32 result) both split through here.
#pragma once

#include <cstdint>

#include "tensor/cpu/allocator.h"

namespace nc {
namespace cpu {

// C (+)= A B, M x N (row stride ldc), as `parts` parts along K.
// multiply_part(k0, k1, out) must write A[:, k0:k1] B[k0:k1, :] into out
// (M x N, row stride N) on the calling thread. With a `bias` (N values,
// not together with `accumulate`) every row of C starts from it.
//
// Both loops share one parallel region: with a second region, whose start
// costs, and with one thread adding up a small output alone while the other
// waited, 128 x 2048 x 128 TN ran 7% slower on its own, though inside
// train's step the gain was within the noise
// (bench/results/split-k-few-rows-2026-12-05.txt).
template <typename T, typename MultiplyPart>
void split_k(int64_t M, int64_t N, int64_t K, int64_t parts, const MultiplyPart& multiply_part, T* C, int64_t ldc,
             bool accumulate, const T* bias) {
    const int64_t MN = M * N;
    ScratchBuffer<T> partial(parts * MN);
    auto add_up_row = [&](int64_t i) {
        T* sum = partial.data() + i * N;
        for (int64_t p = 1; p < parts; ++p) {
            const T* row = partial.data() + p * MN + i * N;
#pragma omp simd
            for (int64_t j = 0; j < N; ++j) sum[j] += row[j];
        }
        T* c = C + i * ldc;
        if (bias) {
#pragma omp simd
            for (int64_t j = 0; j < N; ++j) c[j] = bias[j] + sum[j];
            return;
        }
#pragma omp simd
        for (int64_t j = 0; j < N; ++j) c[j] = accumulate ? c[j] + sum[j] : sum[j];
    };
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t p = 0; p < parts; ++p) multiply_part(p * K / parts, (p + 1) * K / parts, partial.data() + p * MN);
        // (the loop's closing barrier: every part is done before any row is added)
#pragma omp for schedule(static)
        for (int64_t i = 0; i < M; ++i) add_up_row(i);
    }
}

}  // namespace cpu
}  // namespace nc
