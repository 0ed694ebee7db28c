// Exercise 9 (chapter 9): one rung of the GEMM ladder, the register block.
//
// Write C = A B for row-major n x n float32 matrices the way rung 3 of
// tutorials/gemm_ladder does: for each 4 x 16 block of C, keep the 64 sums
// in a local array `float c[4][16]` while p runs from 0 to n, so that per
// step p you load one row of 16 values of B, broadcast 4 values of A, and
// do 64 multiply-adds; write the block to C once, at the end. Handle the
// edges (n not a multiple of 4 or 16) with plain loops.
//
// The check compares every element with a float64 product, for sizes that
// are and are not multiples of the block, and prints how fast your version
// runs beside rung 2's loop order (i-p-j); it asserts only the values.
#pragma once

#include <cstdint>

namespace exercise {

void multiply_register_blocked(int64_t n, const float* A, const float* B, float* C);

}  // namespace exercise
