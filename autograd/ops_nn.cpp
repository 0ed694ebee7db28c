// ops_nn.cpp — activations and fused ops, each forward next to its backward.
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

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
    raw::NormForward f = raw::layer_norm(x, gamma, beta, eps);
    // The backward needs the statistics, not the output: capturing the output
    // would make it own its own node (a reference cycle that never frees).
    raw::NormForward saved{Tensor(), f.mean, f.rstd};
    // One backward kernel: dx = rstd (gh - mean(gh) - xh mean(gh xh)), gh = dy gamma.
    return record("LayerNorm", f.out, {x, gamma, beta}, [x, gamma, beta, saved](const Tensor& g) {
        raw::NormBackward d = raw::layer_norm_backward(raw::contiguous(g), x, gamma, beta, saved);
        return Grads{d.dx, d.dgamma, d.dbeta};
    });
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
    raw::NormForward f = raw::rms_norm(x, gamma, eps);
    raw::NormForward saved{Tensor(), Tensor(), f.rstd};  // not the output: see layer_norm
    // One backward kernel: dx = rstd (gh - xh mean(gh xh)), gh = dy gamma.
    return record("RmsNorm", f.out, {x, gamma}, [x, gamma, saved](const Tensor& g) {
        raw::NormBackward d = raw::rms_norm_backward(raw::contiguous(g), x, gamma, saved);
        return Grads{d.dx, d.dgamma};
    });
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
    raw::CrossEntropyForward f = raw::cross_entropy(logits, targets, ignore_index);
    // The mean runs over the rows that count (target != ignore_index); the
    // others contribute 0. Their number is counted where the targets live,
    // as a tensor: on a GPU, reading the targets on the host would make
    // every forward wait for the GPU. scale = 1 / max(counted, 1): with no
    // row counting, the sum is 0 and so is the loss.
    DType dtype = logits.dtype();
    Tensor ignored = raw::scalar((double)ignore_index, dtype, logits.device());
    Tensor one = raw::scalar(1.0, dtype, logits.device());
    Tensor counted = raw::sum(raw::ne(raw::to_dtype(targets, dtype), ignored));
    Tensor scale = raw::div(one, raw::maximum(counted, one));
    Tensor loss = raw::mul(raw::sum(f.losses), scale);
    // dL/dlogits_n = (g / counted) (softmax(logits_n) - onehot(t_n)); 0 for ignored rows.
    return record("CrossEntropy", loss, {logits}, [logits, targets, f, scale, ignore_index](const Tensor& g) {
        Tensor dlosses = raw::expand(raw::mul(g, scale), f.losses.shape());
        return Grads{raw::cross_entropy_backward(dlosses, logits, targets, f, ignore_index)};
    });
}

Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias) {
    bool has_bias = bias.defined();
    std::vector<Tensor> inputs = {x, alpha, weight};
    if (has_bias) inputs.push_back(bias);
    // One backward kernel gives dx, dalpha, dweight and dbias (formulas in tensor/ops/dyt.cpp).
    return record("DyT", raw::dyt(x, alpha, weight, bias), inputs, [x, alpha, weight, has_bias](const Tensor& g) {
        raw::DyTBackward d = raw::dyt_backward(raw::contiguous(g), x, alpha, weight, has_bias);
        Grads grads{d.dx, d.dalpha, d.dweight};
        if (has_bias) grads.push_back(d.dbias);
        return grads;
    });
}

Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha) {
    // Derivation: tutorials/08-geonorm.md. One backward kernel gives all three.
    return record("GeodesicUpdate", raw::geodesic_update(x, u, alpha), {x, u, alpha}, [x, u, alpha](const Tensor& g) {
        raw::GeodesicBackward d = raw::geodesic_update_backward(raw::contiguous(g), x, u, alpha);
        return Grads{d.dx, d.du, raw::reshape(d.dalpha, alpha.shape())};
    });
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
    if (q.dim() < 2) fail("attention", "q needs at least 2 dims [..., T, D], got " + shape_str(q.shape()));
    if (scale <= 0) scale = 1.0 / std::sqrt((double)q.size(-1));
    raw::AttentionForward f = raw::attention(q, k, v, causal, scale);
    // Saved for backward: the inputs, the output (a detached header: no cycle
    // through the node) and one log-sum-exp per query; no T x S matrix.
    raw::AttentionForward saved{f.out.detach(), f.logsumexp};
    // dV = P^T dO; dZ = P (dP - rowsum(dP P)) with dP = dO V^T; dQ = s dZ K; dK = s dZ^T Q.
    return record("Attention", f.out, {q, k, v}, [q, k, v, saved, causal, scale](const Tensor& g) {
        raw::AttentionBackward d = raw::attention_backward(raw::contiguous(g), q, k, v, saved, causal, scale);
        return Grads{d.dq, d.dk, d.dv};
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
