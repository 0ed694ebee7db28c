// casts.h — converting one element between dtypes, one rule for the CPU
// loops and the CUDA kernels. Float to int64 truncates toward zero, as C++
// does, where the value fits; C++ leaves NaN and values beyond int64's
// range undefined (UBSan reports them), so they are defined here: NaN
// becomes 0 and anything beyond the range the nearest end of it (the
// saturation CUDA's conversion instructions do).
#pragma once

#include <cstdint>

#include "tensor/half.h"
#include "tensor/host_device.h"

namespace nc {

NC_HOST_DEVICE inline int64_t float_to_int64(double v) {
    if (v != v) return 0;                                       // NaN
    if (v >= 9223372036854775808.0) return INT64_MAX;           // 2^63 and beyond (+inf)
    if (v < -9223372036854775808.0) return INT64_MIN;           // below -2^63 (-inf)
    return (int64_t)v;
}

// out = in as Out: a plain conversion, except float -> int64 (above) and
// the 16-bit formats (tensor/half.h), which convert through float.
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

// The 16-bit formats: to them through float (rounding to nearest even,
// tensor/half.h), from them through float (exact; to int64 then as float
// converts). from_float<T> is the one rounding step.
template <typename Out>
NC_HOST_DEVICE inline Out from_float(float v) {
    return (Out)v;
}
template <>
NC_HOST_DEVICE inline BFloat16 from_float<BFloat16>(float v) {
    return to_bfloat16(v);
}
template <>
NC_HOST_DEVICE inline Float16 from_float<Float16>(float v) {
    return to_float16(v);
}
template <>
NC_HOST_DEVICE inline BFloat16 convert<BFloat16, float>(float v) {
    return from_float<BFloat16>((float)v);
}
template <>
NC_HOST_DEVICE inline float convert<float, BFloat16>(BFloat16 v) {
    return convert<float, float>(to_float(v));
}
template <>
NC_HOST_DEVICE inline BFloat16 convert<BFloat16, double>(double v) {
    return from_float<BFloat16>((float)v);
}
template <>
NC_HOST_DEVICE inline double convert<double, BFloat16>(BFloat16 v) {
    return convert<double, float>(to_float(v));
}
template <>
NC_HOST_DEVICE inline BFloat16 convert<BFloat16, int64_t>(int64_t v) {
    return from_float<BFloat16>((float)v);
}
template <>
NC_HOST_DEVICE inline int64_t convert<int64_t, BFloat16>(BFloat16 v) {
    return convert<int64_t, float>(to_float(v));
}
template <>
NC_HOST_DEVICE inline Float16 convert<Float16, float>(float v) {
    return from_float<Float16>((float)v);
}
template <>
NC_HOST_DEVICE inline float convert<float, Float16>(Float16 v) {
    return convert<float, float>(to_float(v));
}
template <>
NC_HOST_DEVICE inline Float16 convert<Float16, double>(double v) {
    return from_float<Float16>((float)v);
}
template <>
NC_HOST_DEVICE inline double convert<double, Float16>(Float16 v) {
    return convert<double, float>(to_float(v));
}
template <>
NC_HOST_DEVICE inline Float16 convert<Float16, int64_t>(int64_t v) {
    return from_float<Float16>((float)v);
}
template <>
NC_HOST_DEVICE inline int64_t convert<int64_t, Float16>(Float16 v) {
    return convert<int64_t, float>(to_float(v));
}
template <>
NC_HOST_DEVICE inline BFloat16 convert<BFloat16, Float16>(Float16 v) {
    return to_bfloat16(to_float(v));
}
template <>
NC_HOST_DEVICE inline Float16 convert<Float16, BFloat16>(BFloat16 v) {
    return to_float16(to_float(v));
}

}  // namespace nc
