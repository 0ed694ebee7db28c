#include "nn/layers.h"

#include <cmath>

#include "nn/init.h"

namespace nc {
namespace nn {

Linear::Linear(int64_t in, int64_t out, bool has_bias, Generator& gen, Options opt)
    : in_features(in), out_features(out) {
    if (in <= 0 || out <= 0)
        fail("Linear", "features must be positive, got in=" + std::to_string(in) + " out=" + std::to_string(out));
    double bound = 1.0 / std::sqrt((double)in);
    weight = register_parameter("weight", raw::zeros({out, in}, opt.dtype, opt.device));
    if (opt.random_init) uniform_(weight, -bound, bound, gen);
    if (has_bias) {
        bias = register_parameter("bias", raw::zeros({out}, opt.dtype, opt.device));
        if (opt.random_init) uniform_(bias, -bound, bound, gen);
    }
}

Tensor Linear::forward(const Tensor& x) const {
    if (x.dim() == 0 || x.size(-1) != in_features)
        fail("Linear", "expects inputs [..., " + std::to_string(in_features) + "], got " + shape_str(x.shape()));
    return linear(x, weight, bias, operand_dtype);
}

void set_linear_operand_dtype(Module& root, DType dtype) {
    if (auto* layer = dynamic_cast<Linear*>(&root)) layer->operand_dtype = dtype;
    for (const auto& child : root.children()) set_linear_operand_dtype(*child.second, dtype);
}

Embedding::Embedding(int64_t num, int64_t dim, Generator& gen, Options opt) {
    if (num <= 0 || dim <= 0)
        fail("Embedding", "sizes must be positive, got " + std::to_string(num) + " x " + std::to_string(dim));
    weight = register_parameter("weight", opt.random_init ? raw::randn({num, dim}, gen, opt.dtype, opt.device)
                                                          : raw::zeros({num, dim}, opt.dtype, opt.device));
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(weight, ids); }

Dropout::Dropout(double p_, uint64_t seed) : p(p_), gen_(seed) {
    if (!(p >= 0 && p < 1)) fail("Dropout", "probability p=" + std::to_string(p) + " must be in [0, 1)");
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training(), gen_); }

ActivationKind parse_activation(const std::string& name) {
    if (name == "gelu") return ActivationKind::Gelu;
    if (name == "gelu_tanh") return ActivationKind::GeluTanh;
    if (name == "relu") return ActivationKind::Relu;
    if (name == "silu") return ActivationKind::Silu;
    if (name == "tanh") return ActivationKind::Tanh;
    if (name == "identity") return ActivationKind::Identity;
    fail("activation", "unknown activation '" + name + "' (choose gelu, gelu_tanh, relu, silu, tanh or identity)");
}

Tensor activate(ActivationKind kind, const Tensor& x) {
    switch (kind) {
        case ActivationKind::Gelu: return gelu(x, /*tanh_approximation=*/false);
        case ActivationKind::GeluTanh: return gelu(x, /*tanh_approximation=*/true);
        case ActivationKind::Relu: return relu(x);
        case ActivationKind::Silu: return silu(x);
        case ActivationKind::Tanh: return tanh(x);
        case ActivationKind::Identity: return x;
    }
    return x;
}

}  // namespace nn
}  // namespace nc
