// packing.h — rungs 5-7: copy the blocks of A and B into the order the
// micro-kernel reads them, add a finished block of C back, and the loops
// that walk the blocks (rungs 5 and 6 share them; rung 7 threads them).
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

// A micro-kernel: one mr x nr block of C, stored densely into `block`, from
// a packed panel of A (kc x mr) and one of B (kc x nr).
using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, float* block);

// C[i0 .. i0+mc, j0 .. j0+nc] += packed A block x packed B slice: every
// mr x nr block of it by the micro-kernel, into `block` (mr nr floats) and
// then into C.
inline void multiply_panels(int64_t n, float* C, const std::vector<float>& a, const std::vector<float>& b, int64_t i0,
                            int64_t mc, int64_t j0, int64_t nc, int64_t kc, int64_t mr, int64_t nr, MicroKernel kernel,
                            float* block) {
    for (int64_t i = 0; i < mc; i += mr)
        for (int64_t j = 0; j < nc; j += nr) {
            kernel(kc, &a[i / mr * kc * mr], &b[j / nr * kc * nr], block);
            add_block(n, C, i0 + i, j0 + j, block, nr, std::min(mr, mc - i), std::min(nr, nc - j));
        }
}

// Rungs 5 and 6: C = A B on one core. For each strip of nc columns and
// slice of kc steps, B's piece is packed once (it stays in L2); for each
// block of mc rows, A's piece is packed (it stays in L1/L2) and multiplied
// with it panel by panel.
inline void multiply_packed(int64_t n, const float* A, const float* B, float* C, MicroKernel kernel, int64_t mr,
                            int64_t nr, int64_t mc, int64_t kc = 256, int64_t nc = 1024) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    std::vector<float> a, b, block(mr * nr);
    for (int64_t j0 = 0; j0 < n; j0 += nc)
        for (int64_t p0 = 0; p0 < n; p0 += kc) {
            int64_t nc_here = std::min(nc, n - j0), kc_here = std::min(kc, n - p0);
            pack_B(n, B, p0, kc_here, j0, nc_here, nr, b);
            for (int64_t i0 = 0; i0 < n; i0 += mc) {
                int64_t mc_here = std::min(mc, n - i0);
                pack_A(n, A, i0, mc_here, p0, kc_here, mr, a);
                multiply_panels(n, C, a, b, i0, mc_here, j0, nc_here, kc_here, mr, nr, kernel, block.data());
            }
        }
}

}  // namespace ladder
