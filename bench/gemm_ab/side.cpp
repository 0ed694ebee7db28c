// side.cpp — one side of the GEMM A/B comparison (gemm_ab.sh). Compiled
// twice: against an older revision's tensor/cpu with the namespace renamed
// (-Dnc=ncold -DAB_RUN=run_old), and against the working tree
// (-DAB_RUN=run_new), so that both versions live in one program. It uses
// only what revisions long past already had (gemm() with a micro-kernel
// argument, simd_isa_name), so that gemm_ab.sh can go back to them; the
// 16-bit products are in side16.cpp.
#include "bench/gemm_ab/isa_named.h"
#include "tensor/cpu/gemm.h"

// C = A B with A M x K and B K x N, either stored transposed (as a training
// step stores them: A^T for a weight gradient, B^T for x W^T), with the
// micro-kernel named `isa` (empty: the CPU's best).
void AB_RUN(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const float* a, const float* b,
            float* c, const char* isa) {
    nc::cpu::MatrixOperand<float> A{a, {0}, a_transposed ? 1 : K, a_transposed ? M : 1};
    nc::cpu::MatrixOperand<float> B{b, {0}, b_transposed ? 1 : N, b_transposed ? K : 1};
    nc::cpu::gemm(M, N, K, A, B, c, {0}, N, isa_named(isa));
}
