#include "tensor/random.h"

#include "tensor/philox.h"

namespace nc {

Generator& default_generator() {
    static Generator generator(0);
    return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t seed) {
    PhiloxWords r = philox_words(counter, seed);
    return {r.w[0], r.w[1], r.w[2], r.w[3]};
}

}  // namespace nc
