#include "tensor/dtype.h"

#include "tensor/error.h"

namespace nc {

size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::Float32: return 4;
        case DType::Float64: return 8;
        case DType::Int64: return 8;
    }
    return 0;
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::Float32: return "float32";
        case DType::Float64: return "float64";
        case DType::Int64: return "int64";
    }
    return "?";
}

bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64; }

std::string Device::str() const {
    return type == DeviceType::CPU ? "cpu" : "cuda:" + std::to_string(index);
}

void fail(const std::string& op, const std::string& message) { throw Error(op + ": " + message); }

}  // namespace nc
