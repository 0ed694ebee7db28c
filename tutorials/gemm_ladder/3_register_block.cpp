// Rung 3: a block of C in registers (register_block.h). Rung 2 loaded and
// stored C at every FMA; here a 4 x 16 block of C stays in registers for
// all n steps of p, and each row of B it loads serves 4 rows of A. Per step
// p: 4 broadcasts of A, 1 row of B, 64 multiply-adds.
//
// What is left: the block reads a 16-column strip of B from top to bottom,
// all n rows of it, and the next block reads it again; for large n the
// strip no longer fits in L1, and B comes from L2 or further each time.
#include "tutorials/gemm_ladder/ladder.h"
#include "tutorials/gemm_ladder/register_block.h"

static void multiply(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    ladder::register_blocked(n, A, B, C, 0, n, 0, n, 0, n);
}

int main(int argc, char** argv) { return ladder::run(argc, argv, "3. register block 4 x 16", multiply); }
