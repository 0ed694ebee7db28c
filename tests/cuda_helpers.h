// cuda_helpers.h — what the CUDA parity tests share (test_cuda.cpp,
// test_cuda_shapes.cpp): the device, the skip without a GPU, seeded inputs.
#pragma once

#include "helpers.h"

namespace nc_test {

inline const nc::Device kCuda{nc::DeviceType::CUDA, 0};

// Whether a GPU can run the tests; the first time there is none, one
// warning says why and every case returns at once.
inline bool gpu_or_skip() {
    static bool warned = false;
    std::string why;
    if (nc::cuda_available(&why)) return true;
    if (!warned) WARN("skipping the CUDA parity tests: " << why);
    warned = true;
    return false;
}

inline nc::Tensor on_gpu(const nc::Tensor& t) { return nc::raw::to_device(t, kCuda); }

// Standard normal values from a seeded generator.
inline nc::Tensor randn(const nc::Shape& shape, uint64_t seed) {
    nc::Generator gen(seed);
    return nc::raw::randn(shape, gen);
}

}  // namespace nc_test
