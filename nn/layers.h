// layers.h — the basic layers: Linear, Embedding, Dropout, activations, Identity.
//
// Shapes use llm.c's letters: B batch, T time (sequence), C channels,
// V vocabulary. Every layer works on any leading dims: [..., C].
#pragma once

#include "autograd/ops_nn.h"
#include "nn/module.h"

namespace nc {
namespace nn {

struct Options {
    DType dtype = kFloat32;
    Device device = kCPU;
    // false: no random numbers drawn; what would be drawn starts at zero
    // (constants such as a norm's gain of 1 are set as usual). For a model
    // whose weights are loaded right after (--init, --resume; loading sets
    // every parameter or fails): GPT-2 124M's random init draws 163M
    // normal numbers, about 6 s on 2 cores, all overwritten by the file.
    bool random_init = true;
    // The options of a model whose weights are loaded right after it is built.
    static Options for_loading() {
        Options opt;
        opt.random_init = false;
        return opt;
    }
};

// y = x W^T + b with W: [out, in] (PyTorch's layout), b: [out].
// Init as PyTorch: W, b ~ U(-1/sqrt(in), 1/sqrt(in)); models re-initialise.
class Linear : public Module {
public:
    Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen, Options opt = {});
    Tensor forward(const Tensor& x) const;  // [..., in] -> [..., out]
    Tensor weight, bias;                    // bias undefined when bias = false
    int64_t in_features, out_features;
    // Mixed precision: x and W are rounded to this dtype for the product
    // (bfloat16 or float16; float32: not rounded). See linear() in autograd/ops.h.
    DType operand_dtype = kFloat32;
};

// Sets operand_dtype on every Linear in `root` and below it.
void set_linear_operand_dtype(Module& root, DType dtype);

// Rows of weight [num, dim] picked by int64 ids: [...] -> [..., dim]. Init N(0, 1).
class Embedding : public Module {
public:
    Embedding(int64_t num_embeddings, int64_t dim, Generator& gen, Options opt = {});
    Tensor forward(const Tensor& ids) const;
    Tensor weight;
};

// Zeroes elements with probability p in training mode (scaling the rest by
// 1/(1-p)); the identity in eval mode. Draws from its own generator.
class Dropout : public Module {
public:
    explicit Dropout(double p, uint64_t seed = 0);
    Tensor forward(const Tensor& x);
    double p;

private:
    Generator gen_;
};

enum class ActivationKind { Gelu, GeluTanh, Relu, Silu, Tanh, Identity };
ActivationKind parse_activation(const std::string& name);  // "gelu", "gelu_tanh", "relu", "silu", "tanh", "identity"
Tensor activate(ActivationKind kind, const Tensor& x);

class Activation : public Module {
public:
    explicit Activation(ActivationKind kind) : kind(kind) {}
    Tensor forward(const Tensor& x) const { return activate(kind, x); }
    ActivationKind kind;
};

class Identity : public Module {
public:
    Tensor forward(const Tensor& x) const { return x; }
};

}  // namespace nn
}  // namespace nc
