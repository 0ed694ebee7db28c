// casts.h — converting one element between dtypes, one rule for the CPU
// loops and the CUDA kernels. Float to int64 truncates toward zero, as C++
// does, where the value fits; C++ leaves NaN and values beyond int64's
// range undefined (UBSan reports them), so they are defined here: NaN
// becomes 0 and anything beyond the range the nearest end of it (the
// saturation CUDA's conversion instructions do).
#pragma once

#include <cstdint>

#include "tensor/host_device.h"

namespace nc {

NC_HOST_DEVICE inline int64_t float_to_int64(double v) {
    if (v != v) return 0;                                       // NaN
    if (v >= 9223372036854775808.0) return INT64_MAX;           // 2^63 and beyond (+inf)
    if (v < -9223372036854775808.0) return INT64_MIN;           // below -2^63 (-inf)
    return (int64_t)v;
}

// out = in as Out: a plain conversion, except float -> int64 (above).
template <typename Out, typename In>
NC_HOST_DEVICE inline Out convert(In v) {
    return (Out)v;
}
template <>
NC_HOST_DEVICE inline int64_t convert<int64_t, float>(float v) {
    return float_to_int64(v);
}
template <>
NC_HOST_DEVICE inline int64_t convert<int64_t, double>(double v) {
    return float_to_int64(v);
}

}  // namespace nc
