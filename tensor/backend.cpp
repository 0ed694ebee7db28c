#include "tensor/backend.h"

#include <cstdint>
#include <cstring>

namespace nc {

#ifdef NORMCORE_CUDA
const Backend& cuda_backend();        // cuda/cuda_backend.cu
bool cuda_device_usable(std::string* why);  // cuda/cuda_backend.cu
#endif

bool cuda_available(std::string* why) {
#ifdef NORMCORE_CUDA
    return cuda_device_usable(why);
#else
    if (why) *why = "normcore was built without the CUDA backend (no nvcc at build time, CUDA=0, or a debug/sanitizer build)";
    return false;
#endif
}

const Backend& backend_for(Device device) {
    if (device.type == DeviceType::CPU) return cpu_backend();
    if (device.type == DeviceType::Meta) return meta_backend();
    std::string why;
    if (!cuda_available(&why)) throw Error("device " + device.str() + ": " + why);
    if (device.index != 0) throw Error("device " + device.str() + ": only cuda:0 is supported");
#ifdef NORMCORE_CUDA
    return cuda_backend();
#else
    throw Error("device " + device.str() + ": " + why);
#endif
}

// A Backend holds a name and function pointers, nothing else (the
// static_assert checks the size fits), so its slots can be walked as
// pointer-sized words: a zero word is an entry nobody set.
void require_complete(const Backend& table) {
    static_assert(sizeof(Backend) % sizeof(void*) == 0, "Backend must hold only pointers");
    for (size_t slot = 0; slot < sizeof(Backend) / sizeof(void*); ++slot) {
        std::uintptr_t word = 0;
        std::memcpy(&word, reinterpret_cast<const char*>(&table) + slot * sizeof(void*), sizeof word);
        if (word == 0)
            throw Error(std::string("the ") + (table.name ? table.name : "unnamed") + " backend's table leaves entry " +
                        std::to_string(slot) + " of tensor/backend.h's Backend empty (a kernel file's add_ function "
                        "is missing or not called)");
    }
}

std::vector<int64_t> matrix_batch_offsets(const Tensor& t) {
    int64_t nbatch = t.dim() - 2;
    int64_t count = 1;
    for (int64_t d = 0; d < nbatch; ++d) count *= t.shape()[d];
    std::vector<int64_t> offsets(count);
    for (int64_t b = 0; b < count; ++b) {
        int64_t rest = b, offset = 0;
        for (int64_t d = nbatch - 1; d >= 0; --d) {
            offset += (rest % t.shape()[d]) * t.strides()[d];
            rest /= t.shape()[d];
        }
        offsets[b] = offset;
    }
    return offsets;
}

const char* unary_op_name(UnaryOp op) {
    static const char* names[] = {"copy", "neg",  "exp",     "log",  "sqrt", "rsqrt",    "tanh", "sin",
                                  "cos",  "abs",  "sign",    "relu", "sigmoid", "silu", "gelu", "gelu_tanh"};
    return names[(int)op];
}

const char* binary_op_name(BinaryOp op) {
    static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le",
                                  "gt",  "ge",  "relu_backward", "silu_backward", "gelu_backward",
                                  "gelu_tanh_backward", "swiglu"};
    return names[(int)op];
}

}  // namespace nc
