#include "tensor/dtype.h"

#include "tensor/error.h"

namespace nc {

size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::Float32: return 4;
        case DType::Float64: return 8;
        case DType::Int64: return 8;
        case DType::BFloat16: return 2;
        case DType::Float16: return 2;
    }
    return 0;
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::Float32: return "float32";
        case DType::Float64: return "float64";
        case DType::Int64: return "int64";
        case DType::BFloat16: return "bfloat16";
        case DType::Float16: return "float16";
    }
    return "?";
}

bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64; }

bool is_16bit_float(DType dtype) { return dtype == DType::BFloat16 || dtype == DType::Float16; }

void check_compute_dtype(DType dtype, std::string_view op) {
    if (is_16bit_float(dtype))
        fail(op, std::string("got a ") + dtype_name(dtype) + " tensor; " + dtype_name(dtype) +
                     " holds numbers, ops compute in float32 or float64: cast with to_dtype(t, kFloat32) first");
}

DType product_dtype(DType dtype) { return is_16bit_float(dtype) ? kFloat32 : dtype; }

std::string Device::str() const {
    switch (type) {
        case DeviceType::CPU: return "cpu";
        case DeviceType::Meta: return "meta";
        case DeviceType::CUDA: break;
    }
    return "cuda:" + std::to_string(index);
}

void fail(std::string_view op, const std::string& message) { throw Error(std::string(op) + ": " + message); }

}  // namespace nc
