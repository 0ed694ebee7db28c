// Rung 4: cache blocking. The same register blocks, visited in an order
// that keeps what they reuse in a cache: K is cut into slices of kc steps
// and the rows into blocks of mc, so that the piece of B a slice touches
// (kc x nc floats) stays in L2 while every row block passes over it, and
// one block's A (mc x kc) stays in L1/L2 while it meets every column.
//
// What is left: the blocks still read A and B where they lie, with strides
// of n floats between rows, so each block's data is scattered over many
// pages and cache sets, and the edges need their own loops.
#include <algorithm>

#include "tutorials/gemm_ladder/ladder.h"
#include "tutorials/gemm_ladder/register_block.h"

constexpr int64_t kc = 256, mc = 64, nc = 1024;

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    for (int64_t j0 = 0; j0 < n; j0 += nc)
        for (int64_t p0 = 0; p0 < n; p0 += kc)
            for (int64_t i0 = 0; i0 < n; i0 += mc)
                ladder::register_blocked(n, A, B, C, i0, std::min(i0 + mc, n), j0, std::min(j0 + nc, n), p0,
                                         std::min(p0 + kc, n));
}

int main(int argc, char** argv) { return ladder::run(argc, argv, "4. cache blocking", multiply); }
