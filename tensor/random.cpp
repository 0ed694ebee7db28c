#include "tensor/random.h"

namespace nc {

Generator& default_generator() {
    static Generator generator(0);
    return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t seed) {
    // Constants from the Philox paper (Random123).
    const uint32_t M0 = 0xD2511F53, M1 = 0xCD9E8D57;
    const uint32_t W0 = 0x9E3779B9, W1 = 0xBB67AE85;
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = (uint64_t)M0 * c0, p1 = (uint64_t)M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
        k0 += W0; k1 += W1;
    }
    return {c0, c1, c2, c3};
}

double uniform_from_bits(uint32_t hi, uint32_t lo) {
    // 53 random bits -> a double in [0, 1).
    uint64_t bits = ((uint64_t)hi << 21) ^ (lo >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace nc
