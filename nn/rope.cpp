#include "nn/rope.h"

#include <cmath>

namespace nc {
namespace nn {

RopeTables rope_tables(int64_t T, int64_t D, double theta, DType dtype, Device device) {
    if (D % 2 != 0) fail("rope", "the head size must be even, got " + std::to_string(D));
    std::vector<double> angles(T * D);
    for (int64_t m = 0; m < T; ++m)
        for (int64_t i = 0; i < D / 2; ++i) {
            double f = std::pow(theta, -2.0 * (double)i / (double)D);
            angles[m * D + i] = angles[m * D + i + D / 2] = (double)m * f;  // cat(f, f)
        }
    Tensor a = raw::to_device(raw::to_dtype(raw::from_vector(angles, {T, D}), dtype), device);
    return {raw::cos(a), raw::sin(a)};
}

Tensor apply_rope(const Tensor& x, const RopeTables& tables) { return rope(x, tables.cos, tables.sin); }

}  // namespace nn
}  // namespace nc
