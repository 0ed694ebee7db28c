// random.h — a seeded, reproducible random number generator.
//
// normcore uses Philox-4x32-10 (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011), a *counter-based* generator: the random bits
// for element e are a pure function of (seed, counter = offset + e). So a
// tensor's values do not depend on the number of threads, and the CUDA
// backend can produce the very same stream. A Generator only remembers its
// seed and how many counters it has used.
#pragma once

#include <array>
#include <cstdint>

namespace nc {

class Generator {
public:
    explicit Generator(uint64_t seed = 0) : seed_(seed) {}
    void manual_seed(uint64_t seed) { seed_ = seed; offset_ = 0; }
    uint64_t seed() const { return seed_; }
    uint64_t offset() const { return offset_; }
    void set_offset(uint64_t offset) { offset_ = offset; }
    // Reserves n counters and returns the first: the caller owns [first, first+n).
    uint64_t advance(uint64_t n) { uint64_t first = offset_; offset_ += n; return first; }

private:
    uint64_t seed_;
    uint64_t offset_ = 0;
};

// The process-wide generator used when none is passed (seed 0 at start).
Generator& default_generator();
void manual_seed(uint64_t seed);

// Philox-4x32-10: four 32-bit random words for one 64-bit counter.
std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t seed);

}  // namespace nc
