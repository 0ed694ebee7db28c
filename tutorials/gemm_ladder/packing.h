// packing.h — rungs 5-7: copy the blocks of A and B into the order the
// micro-kernel reads them, and add a finished block of C back.
//
// Packed B: the slice B[p0 .. p0+kc, j0 .. j0+nc] as panels of nr columns,
// each panel kc rows of nr contiguous floats: panel q holds
// B[p][j0 + q nr + s] at b[q kc nr + (p - p0) nr + s].
// Packed A: the block A[i0 .. i0+mc, p0 .. p0+kc] as panels of mr rows, each
// panel kc columns of mr contiguous floats: a[q kc mr + (p - p0) mr + r].
// Both are padded with zeros to whole panels, so the kernel never meets an
// edge: the padding's products are zero and its results are never stored.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ladder {

inline int64_t panels(int64_t size, int64_t panel) { return (size + panel - 1) / panel; }

inline void pack_B(int64_t n, const float* B, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int64_t nr,
                   std::vector<float>& b) {
    b.assign(panels(nc, nr) * kc * nr, 0.0f);
    for (int64_t q = 0; q < panels(nc, nr); ++q)
        for (int64_t p = 0; p < kc; ++p)
            for (int64_t s = 0; s < nr && q * nr + s < nc; ++s) b[(q * kc + p) * nr + s] = B[(p0 + p) * n + j0 + q * nr + s];
}

inline void pack_A(int64_t n, const float* A, int64_t i0, int64_t mc, int64_t p0, int64_t kc, int64_t mr,
                   std::vector<float>& a) {
    a.assign(panels(mc, mr) * kc * mr, 0.0f);
    for (int64_t q = 0; q < panels(mc, mr); ++q)
        for (int64_t p = 0; p < kc; ++p)
            for (int64_t r = 0; r < mr && q * mr + r < mc; ++r) a[(q * kc + p) * mr + r] = A[(i0 + q * mr + r) * n + p0 + p];
}

// C[i0 .., j0 ..] += the rows x cols corner of an mr x nr block (rows <= mr
// and cols <= nr are what is left of C there).
inline void add_block(int64_t n, float* C, int64_t i0, int64_t j0, const float* block, int64_t nr, int64_t rows,
                      int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t s = 0; s < cols; ++s) C[(i0 + r) * n + j0 + s] += block[r * nr + s];
}

}  // namespace ladder
