// side16_missing.cpp — the 16-bit side for an old revision whose 16-bit
// GEMM gemm_ab cannot call (none, or gemm_16bit() without the micro-kernel
// argument, before commit ab1e1d0): a 16-bit shape is then an error that
// says so. float32 shapes still compare.
#include <cstdint>
#include <stdexcept>

void AB_RUN16(int64_t, int64_t, int64_t, bool, bool, const uint16_t*, const uint16_t*, float*, bool, const char*,
              const char*) {
    throw std::runtime_error(
        "gemm_ab: the old revision's 16-bit GEMM cannot be called from here (it predates gemm_16bit()'s micro-kernel "
        "argument, commit ab1e1d0): compare float32 shapes only");
}
