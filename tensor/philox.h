// philox.h — Philox-4x32-10 and the conversion of its words into uniform,
// normal and Bernoulli values, shared by the CPU and the CUDA backends.
//
// When nvcc compiles this header the functions are __host__ __device__, so
// a GPU kernel draws exactly the numbers the CPU draws for the same (seed,
// counter): a tensor's random values do not depend on the device.
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor/host_device.h"

namespace nc {

enum class RandomKind { Uniform, Normal, Bernoulli };

struct PhiloxWords {
    uint32_t w[4];
};

// Ten rounds of the Philox bijection on the counter, keyed by the seed.
// Constants from the Philox paper (Salmon et al., SC 2011; Random123).
NC_HOST_DEVICE inline PhiloxWords philox_words(uint64_t counter, uint64_t seed) {
    const uint32_t M0 = 0xD2511F53, M1 = 0xCD9E8D57;
    const uint32_t W0 = 0x9E3779B9, W1 = 0xBB67AE85;
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = (uint64_t)M0 * c0, p1 = (uint64_t)M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += W0;
        k1 += W1;
    }
    return {{c0, c1, c2, c3}};
}

// 53 random bits -> a double in [0, 1).
NC_HOST_DEVICE inline double uniform53(uint32_t hi, uint32_t lo) {
    uint64_t bits = ((uint64_t)hi << 21) ^ (lo >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// One value from its counter's words. float uses 24 bits for the uniform
// (every float in [0, 1) that is a multiple of 2^-24), double 53. Normal uses
// Box-Muller: z = sqrt(-2 ln u1) cos(2 pi u2), u1 = 1 - u in (0, 1].
template <typename T>
NC_HOST_DEVICE inline T random_value(RandomKind kind, const PhiloxWords& words, double p) {
    const uint32_t* w = words.w;
    double u = sizeof(T) == 4 ? (double)(w[0] >> 8) * (1.0 / 16777216.0) : uniform53(w[0], w[1]);
    switch (kind) {
        case RandomKind::Uniform: return (T)u;
        case RandomKind::Bernoulli: return u < p ? T(1) : T(0);
        case RandomKind::Normal: {
            double u1 = 1.0 - u;
            double u2 = uniform53(w[2], w[3]);
            return (T)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    }
    return T(0);
}

}  // namespace nc
