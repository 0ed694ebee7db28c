// side.cpp — one side of the GEMM A/B comparison (gemm_ab.sh). Compiled
// twice: against an older revision's tensor/cpu with the namespace renamed
// (-Dnc=ncold -DAB_RUN=run_old), and against the working tree
// (-DAB_RUN=run_new), so that both versions live in one program.
#include <cstring>
#include <stdexcept>
#include <string>

#include "tensor/cpu/gemm.h"
#include "tensor/cpu/gemm_16bit.h"

namespace {

// The micro-kernel named `name` ("avx2", ...: simd_isa_name's names), or
// this CPU's best when `name` is empty. A name, not the enum, crosses
// between the two sides, whose enums live in different namespaces.
nc::cpu::SimdIsa isa_named(const char* name) {
    if (!name || !*name) return nc::cpu::best_simd_isa();
    for (nc::cpu::SimdIsa isa : nc::cpu::compiled_simd_isas())
        if (std::strcmp(nc::cpu::simd_isa_name(isa), name) == 0) return isa;
    throw std::runtime_error(std::string("gemm_ab: no micro-kernel named '") + name + "' in this build");
}

}  // namespace

// C = A B with A M x K and B K x N, either stored transposed (as a training
// step stores them: A^T for a weight gradient, B^T for x W^T), with the
// micro-kernel named `isa` (empty: the CPU's best).
void AB_RUN(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const float* a, const float* b,
            float* c, const char* isa) {
    nc::cpu::MatrixOperand<float> A{a, {0}, a_transposed ? 1 : K, a_transposed ? M : 1};
    nc::cpu::MatrixOperand<float> B{b, {0}, b_transposed ? 1 : N, b_transposed ? K : 1};
    nc::cpu::gemm(M, N, K, A, B, c, {0}, N, isa_named(isa));
}

// The same with 16-bit operands (their bits) and a float32 C, as matmul
// multiplies them in mixed precision: float16 always widens; bfloat16 takes
// the path matmul takes on this CPU, or widens when `widen` is set.
void AB_RUN16(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const uint16_t* a,
              const uint16_t* b, float* c, bool float16, bool widen, const char* isa) {
    nc::cpu::MatrixOperand<uint16_t> A{a, {0}, a_transposed ? 1 : K, a_transposed ? M : 1};
    nc::cpu::MatrixOperand<uint16_t> B{b, {0}, b_transposed ? 1 : N, b_transposed ? K : 1};
    const nc::DType dtype = float16 ? nc::kFloat16 : nc::kBFloat16;
    const nc::cpu::Gemm16Path path = widen ? nc::cpu::Gemm16Path::Widen : nc::cpu::best_gemm16_path(dtype);
    nc::cpu::gemm_16bit(M, N, K, dtype, A, B, c, {0}, N, path, /*accumulate=*/false, isa_named(isa));
}
