// raw_nn.cpp — argument checks for the fused kernels, then one backend call.
#include "tensor/raw_nn.h"
#include "tensor/profile.h"

namespace nc {
namespace raw {

Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x); }
Tensor gelu(const Tensor& x, bool tanh_approximation) {
    return unary(tanh_approximation ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}
Tensor relu_backward(const Tensor& x, const Tensor& grad) { return binary(BinaryOp::ReluBackward, x, grad); }
Tensor silu_backward(const Tensor& x, const Tensor& grad) { return binary(BinaryOp::SiluBackward, x, grad); }
Tensor gelu_backward(const Tensor& x, const Tensor& grad, bool tanh_approximation) {
    return binary(tanh_approximation ? BinaryOp::GeluTanhBackward : BinaryOp::GeluBackward, x, grad);
}
Tensor swiglu(const Tensor& gate, const Tensor& up) { return binary(BinaryOp::SwiGLU, gate, up); }

// x as a contiguous [rows, C] matrix, C = the last dim.
static Tensor as_rows(const Tensor& x, const std::string& op) {
    if (x.dim() == 0) fail(op, "needs at least one dim (the features), got a scalar");
    if (!is_floating(x.dtype())) fail(op, std::string("needs a floating-point tensor, got ") + dtype_name(x.dtype()));
    int64_t C = x.size(-1);
    return view(contiguous(x), {C == 0 ? 0 : x.numel() / C, C});
}

// A per-feature parameter (gamma, beta) must be [C] with x's dtype and device.
static void check_feature_param(const Tensor& p, const Tensor& x, const char* name, const std::string& op) {
    if (!p.defined()) return;
    if (p.shape() != Shape{x.size(-1)})
        fail(op, std::string(name) + " has shape " + shape_str(p.shape()) + " but the input " + shape_str(x.shape()) +
                     " has " + std::to_string(x.size(-1)) + " features in its last dim");
    if (p.dtype() != x.dtype() || p.device() != x.device())
        fail(op, std::string(name) + " is " + dtype_name(p.dtype()) + " on " + p.device().str() + ", the input is " +
                     dtype_name(x.dtype()) + " on " + x.device().str());
}

static void check_same(const Tensor& a, const Tensor& b, const char* what, const std::string& op) {
    if (a.shape() != b.shape() || a.dtype() != b.dtype() || a.device() != b.device())
        fail(op, std::string(what) + ": shapes/dtypes " + shape_str(a.shape()) + " " + dtype_name(a.dtype()) + " and " +
                     shape_str(b.shape()) + " " + dtype_name(b.dtype()) + " must be equal");
}

NormForward layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
    Tensor rows = as_rows(x, "layer_norm");
    check_feature_param(gamma, x, "gamma", "layer_norm");
    check_feature_param(beta, x, "beta", "layer_norm");
    NormForward f{empty(x.shape(), x.dtype(), x.device()), empty({rows.size(0)}, x.dtype(), x.device()),
                  empty({rows.size(0)}, x.dtype(), x.device())};
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).layer_norm(rows, gamma, beta, eps, view(f.out, rows.shape()), f.mean, f.rstd);
    return f;
}

NormBackward layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 const NormForward& saved) {
    check_same(dy, x, "gradient and input", "layer_norm_backward");
    Tensor rows = as_rows(x, "layer_norm_backward");
    NormBackward g;
    g.dx = empty(x.shape(), x.dtype(), x.device());
    if (gamma.defined()) g.dgamma = empty(gamma.shape(), x.dtype(), x.device());
    if (beta.defined()) g.dbeta = empty(beta.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).layer_norm_backward(as_rows(dy, "layer_norm_backward"), rows, gamma, saved.mean,
                                                saved.rstd, view(g.dx, rows.shape()), g.dgamma, g.dbeta);
    return g;
}

NormForward rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
    Tensor rows = as_rows(x, "rms_norm");
    check_feature_param(gamma, x, "gamma", "rms_norm");
    NormForward f{empty(x.shape(), x.dtype(), x.device()), Tensor(), empty({rows.size(0)}, x.dtype(), x.device())};
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).rms_norm(rows, gamma, eps, view(f.out, rows.shape()), f.rstd);
    return f;
}

NormBackward rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormForward& saved) {
    check_same(dy, x, "gradient and input", "rms_norm_backward");
    Tensor rows = as_rows(x, "rms_norm_backward");
    NormBackward g;
    g.dx = empty(x.shape(), x.dtype(), x.device());
    if (gamma.defined()) g.dgamma = empty(gamma.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).rms_norm_backward(as_rows(dy, "rms_norm_backward"), rows, gamma, saved.rstd,
                                              view(g.dx, rows.shape()), g.dgamma);
    return g;
}

// Checks logits [..., V] against targets [...] and returns them as [N, V] and [N].
static void check_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
    Shape expected(logits.shape().begin(), logits.shape().end() - (logits.dim() ? 1 : 0));
    if (logits.dim() == 0 || targets.shape() != expected)
        fail("cross_entropy", "logits " + shape_str(logits.shape()) + " need targets of shape " + shape_str(expected) +
                                  " (one class index per row), got " + shape_str(targets.shape()));
    if (targets.dtype() != kInt64)
        fail("cross_entropy", std::string("targets must be int64 class indices, got ") + dtype_name(targets.dtype()));
    if (targets.device() != logits.device())
        fail("cross_entropy", "the targets are on " + targets.device().str() + " but the logits are on " +
                                  logits.device().str() + " (move one with .to())");
    // On the GPU the kernel checks the targets itself (reading them here would
    // make the op wait for the GPU) and reports a bad one at the next copy to
    // the host; see cuda/cuda_common.cuh.
    if (targets.device() != kCPU) return;
    int64_t V = logits.size(-1);
    for (int64_t t : targets.to_int_vector())
        if (t != ignore_index && (t < 0 || t >= V))
            fail("cross_entropy", "target " + std::to_string(t) + " is not a class index in [0, " + std::to_string(V) +
                                      ") (and not the ignore_index " + std::to_string(ignore_index) + ")");
}

CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
    check_cross_entropy(logits, targets, ignore_index);
    Tensor rows = as_rows(logits, "cross_entropy");
    CrossEntropyForward f{empty({rows.size(0)}, logits.dtype(), logits.device()),
                          empty({rows.size(0)}, logits.dtype(), logits.device())};
    ProfileScope scope(OpKind::Loss);
    backend_for(logits.device()).cross_entropy(rows, reshape(contiguous(targets), {rows.size(0)}), ignore_index,
                                               f.losses, f.logsumexp);
    return f;
}

Tensor cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                              const CrossEntropyForward& saved, int64_t ignore_index) {
    Tensor rows = as_rows(logits, "cross_entropy_backward");
    if (dlosses.numel() != rows.size(0))
        fail("cross_entropy_backward", "got " + std::to_string(dlosses.numel()) + " row gradients for " +
                                           std::to_string(rows.size(0)) + " rows");
    Tensor dlogits = empty(logits.shape(), logits.dtype(), logits.device());
    ProfileScope scope(OpKind::Loss);
    backend_for(logits.device()).cross_entropy_backward(reshape(contiguous(dlosses), {rows.size(0)}), rows,
                                                        reshape(contiguous(targets), {rows.size(0)}), saved.logsumexp,
                                                        ignore_index, view(dlogits, rows.shape()));
    return dlogits;
}

static void check_geodesic(const Tensor& x, const Tensor& u, const Tensor& alpha) {
    check_same(x, u, "point x and update u", "geodesic_update");
    if (alpha.numel() != 1 || alpha.dtype() != x.dtype() || alpha.device() != x.device())
        fail("geodesic_update", "the step size alpha must be one " + std::string(dtype_name(x.dtype())) +
                                    " number on " + x.device().str() + ", got shape " + shape_str(alpha.shape()) + " " +
                                    dtype_name(alpha.dtype()));
}

Tensor geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha) {
    check_geodesic(x, u, alpha);
    Tensor rows = as_rows(x, "geodesic_update");
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).geodesic_update(rows, as_rows(u, "geodesic_update"), contiguous(alpha),
                                            view(out, rows.shape()));
    return out;
}

GeodesicBackward geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha) {
    check_geodesic(x, u, alpha);
    check_same(dy, x, "gradient and point x", "geodesic_update_backward");
    Tensor rows = as_rows(x, "geodesic_update_backward");
    GeodesicBackward g{empty(x.shape(), x.dtype(), x.device()), empty(x.shape(), x.dtype(), x.device()), Tensor()};
    Tensor dalpha_rows = empty({rows.size(0)}, x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).geodesic_update_backward(as_rows(dy, "geodesic_update_backward"), rows,
                                                     as_rows(u, "geodesic_update_backward"), contiguous(alpha),
                                                     view(g.dx, rows.shape()), view(g.du, rows.shape()), dalpha_rows);
    g.dalpha = sum(dalpha_rows);
    return g;
}

// ---- Dynamic Tanh --------------------------------------------------------------------

static void check_dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias,
                      const std::string& op) {
    if (!weight.defined()) fail(op, "needs a weight [C]");
    check_feature_param(weight, x, "weight", op);
    check_feature_param(bias, x, "bias", op);
    if (!alpha.defined() || alpha.numel() != 1 || alpha.dtype() != x.dtype() || alpha.device() != x.device())
        fail(op, "alpha must be one " + std::string(dtype_name(x.dtype())) + " value on " + x.device().str() +
                     ", got " + (alpha.defined() ? shape_str(alpha.shape()) + " " + dtype_name(alpha.dtype()) : "none"));
}

Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias) {
    Tensor rows = as_rows(x, "dyt");
    check_dyt(x, alpha, weight, bias, "dyt");
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).dyt(rows, contiguous(alpha), contiguous(weight),
                                bias.defined() ? contiguous(bias) : Tensor(), view(out, rows.shape()));
    return out;
}

DyTBackward dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, bool has_bias) {
    check_same(dy, x, "gradient and input", "dyt_backward");
    Tensor rows = as_rows(x, "dyt_backward");
    check_dyt(x, alpha, weight, Tensor(), "dyt_backward");
    Tensor dy_rows = as_rows(dy, "dyt_backward");
    DyTBackward g;
    g.dx = empty(x.shape(), x.dtype(), x.device());
    Tensor dy_t = empty(rows.shape(), x.dtype(), x.device());  // dy tanh(alpha x), summed into dweight below
    Tensor dalpha_rows = empty({rows.size(0)}, x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).dyt_backward(dy_rows, rows, contiguous(alpha), contiguous(weight),
                                         view(g.dx, rows.shape()), dy_t, dalpha_rows);
    g.dalpha = reshape(sum(dalpha_rows), alpha.shape());
    g.dweight = sum(dy_t, {0});
    if (has_bias) g.dbias = sum(dy_rows, {0});
    return g;
}

// Leading dims of an attention operand flattened: [..., R, C] -> contiguous [N, R, C].
static Tensor as_batch(const Tensor& t) {
    return reshape(contiguous(t), {t.numel() == 0 ? 0 : t.numel() / (t.size(-2) * t.size(-1)), t.size(-2), t.size(-1)});
}

AttentionForward attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
    const std::string op = "attention";
    if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim())
        fail(op, "q, k, v need the same number of dims (at least 2), got " + shape_str(q.shape()) + ", " +
                     shape_str(k.shape()) + ", " + shape_str(v.shape()));
    Shape lead_q(q.shape().begin(), q.shape().end() - 2), lead_k(k.shape().begin(), k.shape().end() - 2),
        lead_v(v.shape().begin(), v.shape().end() - 2);
    if (lead_q != lead_k || lead_q != lead_v || q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
        fail(op, "shapes q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape()) +
                     " do not fit: need q [..., T, D], k [..., S, D], v [..., S, Dv]");
    if (causal && q.size(-2) > k.size(-2))
        fail(op, "causal attention needs at least as many keys as queries, got T=" + std::to_string(q.size(-2)) +
                     " and S=" + std::to_string(k.size(-2)));
    if (q.dtype() != k.dtype() || q.dtype() != v.dtype() || !is_floating(q.dtype()))
        fail(op, "q, k, v must share a floating dtype");
    Tensor qb = as_batch(q), kb = as_batch(k), vb = as_batch(v);
    int64_t N = qb.size(0), T = qb.size(1);
    Tensor out = empty({N, T, vb.size(2)}, q.dtype(), q.device());
    Tensor logsumexp = empty({N, T}, q.dtype(), q.device());
    ProfileScope scope(OpKind::Attention);
    backend_for(q.device()).attention(qb, kb, vb, causal, scale, out, logsumexp);
    Shape out_shape = lead_q;
    out_shape.insert(out_shape.end(), {T, vb.size(2)});
    return {view(out, out_shape), logsumexp};
}

AttentionBackward attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionForward& saved, bool causal, double scale) {
    if (dout.shape() != saved.out.shape())
        fail("attention_backward", "gradient " + shape_str(dout.shape()) + " does not match the output " +
                                       shape_str(saved.out.shape()));
    Tensor qb = as_batch(q), kb = as_batch(k), vb = as_batch(v);
    AttentionBackward g{empty(qb.shape(), q.dtype(), q.device()), empty(kb.shape(), q.dtype(), q.device()),
                        empty(vb.shape(), q.dtype(), q.device())};
    ProfileScope scope(OpKind::Attention);
    backend_for(q.device()).attention_backward(as_batch(dout), qb, kb, vb, as_batch(saved.out), saved.logsumexp,
                                               causal, scale, g.dq, g.dk, g.dv);
    return {view(g.dq, q.shape()), view(g.dk, k.shape()), view(g.dv, v.shape())};
}

void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step) {
    const std::string op = "adamw_update";
    size_t n = params.size();
    if (grads.size() != n || m.size() != n || v.size() != n || weight_decay.size() != n)
        fail(op, "needs one gradient, m, v and weight decay per parameter, got " + std::to_string(n) + " parameters");
    std::vector<Tensor> contiguous_grads;
    for (size_t i = 0; i < n; ++i) {
        const std::string which = "parameter " + std::to_string(i) + " " + shape_str(params[i].shape());
        if (!is_floating(params[i].dtype()) || params[i].dtype() != params[0].dtype() ||
            params[i].device() != params[0].device())
            fail(op, which + ": all parameters must share one floating dtype and device");
        if (!params[i].is_contiguous() || !m[i].is_contiguous() || !v[i].is_contiguous())
            fail(op, which + ": parameter and optimizer state must be contiguous (updated in place)");
        for (const Tensor* t : {&grads[i], &m[i], &v[i]})
            if (t->shape() != params[i].shape() || t->dtype() != params[i].dtype() || t->device() != params[i].device())
                fail(op, which + ": gradient/state " + shape_str(t->shape()) + " does not match it");
        contiguous_grads.push_back(contiguous(grads[i]));
    }
    if (n == 0) return;
    ProfileScope scope(OpKind::Optimizer);
    backend_for(params[0].device()).adamw_update(params, contiguous_grads, m, v, weight_decay, step);
}

}  // namespace raw
}  // namespace nc
