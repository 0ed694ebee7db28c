// ops_nn.cpp — activations and dropout, each forward next to its backward
// (the fused ops: tensor/ops/<op>.cpp).
#include "autograd/ops_nn.h"

#include <cmath>

namespace nc {

using Grads = std::vector<Tensor>;

Tensor relu(const Tensor& x) {
    return record("Relu", raw::relu(x), {x},
                  [x](const Tensor& g) { return Grads{raw::relu_backward(x, g)}; });
}

Tensor sigmoid(const Tensor& x) {
    // s' = s (1 - s)
    Tensor s = raw::sigmoid(x);
    return record("Sigmoid", s, {x}, [s = s.detach()](const Tensor& g) {
        return Grads{raw::mul(g, raw::mul(s, raw::add(raw::neg(s), 1.0)))};
    });
}

Tensor silu(const Tensor& x) {
    return record("Silu", raw::silu(x), {x},
                  [x](const Tensor& g) { return Grads{raw::silu_backward(x, g)}; });
}

Tensor gelu(const Tensor& x, bool tanh_approximation) {
    return record(tanh_approximation ? "GeluTanh" : "Gelu", raw::gelu(x, tanh_approximation), {x},
                  [x, tanh_approximation](const Tensor& g) {
                      return Grads{raw::gelu_backward(x, g, tanh_approximation)};
                  });
}

Tensor swiglu(const Tensor& gate, const Tensor& up) {
    // y = silu(a) b  =>  dy/db = silu(a) and dy/da = b silu'(a):
    //   d_up = g silu(gate) (the forward op again, on g), d_gate = silu_backward(gate, g up).
    return record("SwiGLU", raw::swiglu(gate, up), {gate, up}, [gate, up](const Tensor& g) {
        return Grads{raw::sum_to(raw::silu_backward(gate, raw::mul(g, up)), gate.shape()),
                     raw::sum_to(raw::swiglu(gate, g), up.shape())};
    });
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
    if (!(p >= 0 && p < 1)) fail("dropout", "probability p=" + std::to_string(p) + " must be in [0, 1)");
    if (!training || p == 0) return x;
    // keep ~ Bernoulli(1 - p), scaled so E[output] = x; the backward of the
    // multiply sends gradients only through the kept elements.
    Tensor keep = raw::mul(raw::bernoulli(x.shape(), 1 - p, gen, x.dtype(), x.device()), 1.0 / (1 - p));
    return mul(x, keep);
}

}  // namespace nc
