// side16.cpp — the 16-bit products' side of the GEMM A/B comparison
// (gemm_ab.sh), compiled like side.cpp (-DAB_RUN16=run16_old or _new).
// gemm_ab.sh compiles it only against a revision whose gemm_16bit() takes a
// micro-kernel; for older ones, side16_missing.cpp instead.
#include <string>

#include "bench/gemm_ab/isa_named.h"
#include "tensor/cpu/gemm_16bit.h"

// C = A B with 16-bit operands (their bits) and a float32 C, as matmul
// multiplies them in mixed precision: float16 (always widened) or bfloat16
// on the path named `path_name` (gemm16_path_name's names; main.cpp picks
// one for both sides), with the micro-kernel named `isa`.
void AB_RUN16(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const uint16_t* a,
              const uint16_t* b, float* c, bool float16, const char* path_name, const char* isa) {
    nc::cpu::MatrixOperand<uint16_t> A{a, {0}, a_transposed ? 1 : K, a_transposed ? M : 1};
    nc::cpu::MatrixOperand<uint16_t> B{b, {0}, b_transposed ? 1 : N, b_transposed ? K : 1};
    nc::cpu::Gemm16Path path = nc::cpu::Gemm16Path::Widen;
    for (nc::cpu::Gemm16Path p : {nc::cpu::Gemm16Path::Widen, nc::cpu::Gemm16Path::Bf16Dot, nc::cpu::Gemm16Path::Amx})
        if (std::string(nc::cpu::gemm16_path_name(p)) == path_name) path = p;
    nc::cpu::gemm_16bit(M, N, K, float16 ? nc::kFloat16 : nc::kBFloat16, A, B, c, {0}, N, path,
                        /*accumulate=*/false, isa_named(isa));
}
