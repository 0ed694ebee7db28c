// gemv.h — C = A B when A has a single row: a vector times a matrix.
//
// Generating text feeds one token at a time, so every linear layer then
// multiplies one row x [1, K] by its weight, and attention multiplies one
// query by the cached keys and values. The blocked GEMM (gemm.cpp) would
// first copy B into packed panels; that copy pays off when each packed
// number serves many rows of A, but with one row each number of B is used
// once, and copying it costs more than using it. So here B is read once, in
// the layout it already has:
//
//   - each column of B contiguous along k (b_rs == 1): the W of x W^T, as
//     nn::Linear stores its weight [out, in], and the keys of q K^T:
//         c[n] = dot(a, B[:, n])                 (a dot product per column)
//   - each row of B contiguous along n (b_cs == 1): the values of p V:
//         c[:] = sum_k a[k] B[k, :]              (a sum of scaled rows)
//
// Any other layout returns false, and the caller packs as usual.
//
// The sums run in a different order than the blocked GEMM's (vector lanes
// of a dot product added at the end), so results agree to rounding, not to
// the bit: a cached generation step and the uncached forward of the same
// text can differ in the last bits of a logit.
#pragma once

#include <cstdint>

#include "tensor/cpu/gemm_kernels.h"
#include "tensor/dtype.h"

namespace nc {
namespace cpu {

// c[n] (+)= sum_k a[k * a_cs] * B[k * b_rs + n * b_cs] for n < N, when B's
// layout is one of the two above; `allow_threads` = false keeps the work on
// the calling thread. Returns false (and writes nothing) otherwise.
bool gemv(int64_t N, int64_t K, const float* a, int64_t a_cs, const float* B, int64_t b_rs, int64_t b_cs, float* c,
          bool accumulate, bool allow_threads);

// The same product with a and B holding 16-bit numbers (`dtype`: bfloat16
// or float16, as their bits) and c float32: mixed precision's one-row
// product (generating with --precision bf16 or fp16), which streams half
// the bytes of a float32 weight. Only the dot-product layout (b_rs == 1);
// any other returns false. Each number of B is widened to float32 where
// the dot_columns_16bit kernel reads it, and the sums run in gemv's order,
// so c holds the bits gemv gives for the widened a and B (a product of two
// 16-bit numbers is exact in float32, bfloat16's extremes aside: only the
// sums round).
bool gemv_16bit(int64_t N, int64_t K, DType dtype, const uint16_t* a, int64_t a_cs, const uint16_t* B, int64_t b_rs,
                int64_t b_cs, float* c, bool accumulate, bool allow_threads);

// The dot_columns kernel (gemm_kernels.h) gemv uses while B sits in the
// cache: the CPU's own (sixteen columns at a time on AVX-512) or the plain
// C++ one. From memory it always streams with the plain C++ one.
DotColumnsFn dot_kernel_for_cache();

}  // namespace cpu
}  // namespace nc
