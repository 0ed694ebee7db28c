#include "tensor/backend.h"

namespace nc {

const Backend& backend_for(Device device) {
    if (device.type == DeviceType::CPU) return cpu_backend();
    // The CUDA backend (cuda/) is not part of this build yet.
    throw Error("device " + device.str() + ": normcore was built without the CUDA backend");
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
