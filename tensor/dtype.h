// dtype.h — the element types a tensor can hold, and the device it lives on.
//
// float32 is the working type everywhere. float64 exists on the CPU so that
// gradients can be checked by finite differences without round-off swamping
// the result. int64 holds indices (embedding ids, argmax results, gather).
// bfloat16 and float16 (tensor/half.h) hold numbers in half the bytes:
// they are stored, converted, printed, saved and loaded; matmul and linear
// multiply them (into float32), every other op computes on them after a
// cast to float32 (check_compute_dtype says so).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nc {

enum class DType { Float32, Float64, Int64, BFloat16, Float16 };

constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kBFloat16 = DType::BFloat16;
constexpr DType kFloat16 = DType::Float16;

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "float32", "float64", "int64", "bfloat16", "float16"
// The floating dtypes ops compute in: float32 and float64.
bool is_floating(DType dtype);
bool is_16bit_float(DType dtype);  // bfloat16, float16
// An op that computes refuses a 16-bit tensor with one clear error naming
// the op and how to cast (`op`: "matmul", ...).
void check_compute_dtype(DType dtype, std::string_view op);
// The dtype of a matrix product of two `dtype` operands: 16-bit numbers
// multiply into float32 (every product is exact there), the others keep theirs.
DType product_dtype(DType dtype);

// Meta: tensors with a shape, a dtype and strides but no memory; its
// kernels do nothing and its allocator only counts (tensor/meta_backend.cpp).
// `normcore memory` runs a training step there to predict a run's memory.
enum class DeviceType { CPU, CUDA, Meta };

struct Device {
    DeviceType type = DeviceType::CPU;
    int index = 0;

    bool operator==(const Device& other) const { return type == other.type && index == other.index; }
    bool operator!=(const Device& other) const { return !(*this == other); }
    std::string str() const;  // "cpu", "cuda:0" or "meta"
};

const Device kCPU{DeviceType::CPU, 0};
const Device kMeta{DeviceType::Meta, 0};

}  // namespace nc
