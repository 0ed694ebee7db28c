// register_block.h — rung 3's kernel, which rung 4 reuses: a 4 x 16 block
// of C kept in registers while p runs.
#pragma once

#include <cstdint>

namespace ladder {

constexpr int64_t kRows = 4, kCols = 16;  // the block of C: 4 x 16 floats = 8 AVX2 or 4 AVX-512 registers

// C[i0 .. i0+4, j0 .. j0+16] += A[i0 .., p0 .. p1] B[p0 .. p1, j0 ..], for a
// whole block. The accumulators are a local array of fixed size, so the
// compiler keeps them in registers: per step p, one row of B (16 floats)
// is loaded once and used by 4 rows, and C is read and written once per
// block, not once per p.
inline void block_4x16(int64_t n, const float* A, const float* B, float* C, int64_t i0, int64_t j0, int64_t p0,
                       int64_t p1) {
    float c[kRows][kCols] = {};
    for (int64_t p = p0; p < p1; ++p) {
        const float* b = B + p * n + j0;
        for (int64_t r = 0; r < kRows; ++r) {
            float a = A[(i0 + r) * n + p];
#pragma omp simd
            for (int64_t s = 0; s < kCols; ++s) c[r][s] += a * b[s];
        }
    }
    for (int64_t r = 0; r < kRows; ++r)
        for (int64_t s = 0; s < kCols; ++s) C[(i0 + r) * n + j0 + s] += c[r][s];
}

// The edges, where fewer than 4 rows or 16 columns are left: plain loops.
inline void block_edge(int64_t n, const float* A, const float* B, float* C, int64_t i0, int64_t i1, int64_t j0,
                       int64_t j1, int64_t p0, int64_t p1) {
    for (int64_t i = i0; i < i1; ++i)
        for (int64_t p = p0; p < p1; ++p) {
            float a = A[i * n + p];
            for (int64_t j = j0; j < j1; ++j) C[i * n + j] += a * B[p * n + j];
        }
}

// Rows [i0, i1), columns [j0, j1), steps [p0, p1) of C += A B, in blocks.
inline void register_blocked(int64_t n, const float* A, const float* B, float* C, int64_t i0, int64_t i1,
                             int64_t j0, int64_t j1, int64_t p0, int64_t p1) {
    int64_t i_full = i0 + (i1 - i0) / kRows * kRows, j_full = j0 + (j1 - j0) / kCols * kCols;
    for (int64_t i = i0; i < i_full; i += kRows)
        for (int64_t j = j0; j < j_full; j += kCols) block_4x16(n, A, B, C, i, j, p0, p1);
    block_edge(n, A, B, C, i0, i_full, j_full, j1, p0, p1);  // the columns right of the blocks
    block_edge(n, A, B, C, i_full, i1, j0, j1, p0, p1);      // the rows below them
}

}  // namespace ladder
