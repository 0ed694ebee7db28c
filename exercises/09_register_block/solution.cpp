// The reference solution of exercise 9 is rung 3 of the ladder
// (tutorials/gemm_ladder/register_block.h), so the two cannot disagree.
#include "exercises/09_register_block/register_block.h"
#include "tutorials/gemm_ladder/register_block.h"

namespace exercise {

void multiply_register_blocked(int64_t n, const float* A, const float* B, float* C) {
    for (int64_t e = 0; e < n * n; ++e) C[e] = 0;
    ladder::register_blocked(n, A, B, C, 0, n, 0, n, 0, n);
}

}  // namespace exercise
