// adamw.cpp — the AdamW update, fused (declared in adamw.h): the raw op (checks, then one backend
// call, used by optim/optimizer.cpp) and the CPU kernel, one loop over every
// parameter. The CUDA kernel is in cuda/adamw.cu.
//
// Per element, with g the gradient (Loshchilov & Hutter 2019, Algorithm 2):
//   p <- p (1 - lr wd)                              decoupled weight decay
//   m <- b1 m + (1 - b1) g
//   v <- b2 v + (1 - b2) g^2
//   p <- p - (lr / c1) m / (sqrt(v / c2) + eps)     c = 1 - b^t, bias corrections
// Done as a chain of tensor ops this reads and writes p, m, v and temporaries
// about a dozen times; here each element is loaded once and stored once.
// All parameters are cut into chunks of one flat work list, so a model with
// many small tensors (biases, norm gains) still keeps every thread busy.
//
// Shapes: params[i], grads[i], m[i], v[i] all of one shape per parameter.
#include <cmath>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/ops/adamw.h"
#include "tensor/profile.h"
#include "tensor/raw_ops.h"

namespace nc {

// ---- the raw op: checks, then one backend call --------------------------------------

namespace raw {

void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step) {
    const std::string op = "adamw_update";
    size_t n = params.size();
    if (grads.size() != n || m.size() != n || v.size() != n || weight_decay.size() != n)
        fail(op, "needs one gradient, m, v and weight decay per parameter, got " + std::to_string(n) + " parameters");
    std::vector<Tensor> contiguous_grads;
    for (size_t i = 0; i < n; ++i) {
        const std::string which = "parameter " + std::to_string(i) + " " + shape_str(params[i].shape());
        check_compute_dtype(params[i].dtype(), "adamw");
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
    backend_for(params[0].device()).adamw.update(params, contiguous_grads, m, v, weight_decay, step);
}

}  // namespace raw

// ---- the CPU kernel ------------------------------------------------------------------

namespace cpu {

namespace {
struct Chunk {
    size_t tensor;
    int64_t begin, end;
};

template <typename T>
void adamw_typed(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& ms,
                 const std::vector<Tensor>& vs, const std::vector<double>& weight_decay, const AdamWStep& h) {
    const int64_t kChunk = 16384;
    std::vector<Chunk> chunks;
    for (size_t t = 0; t < params.size(); ++t)
        for (int64_t b = 0; b < params[t].numel(); b += kChunk)
            chunks.push_back({t, b, std::min(params[t].numel(), b + kChunk)});
    const T b1 = (T)h.beta1, b2 = (T)h.beta2, eps = (T)h.eps;
    const T step_size = (T)(h.lr / h.correction1), inv_c2 = (T)(1.0 / h.correction2);
#pragma omp parallel for schedule(static)
    for (size_t ci = 0; ci < chunks.size(); ++ci) {
        const Chunk& c = chunks[ci];
        T* p = static_cast<T*>(params[c.tensor].raw_data());
        const T* g = static_cast<const T*>(grads[c.tensor].raw_data());
        T* m = static_cast<T*>(ms[c.tensor].raw_data());
        T* v = static_cast<T*>(vs[c.tensor].raw_data());
        const T decay = (T)(1.0 - h.lr * weight_decay[c.tensor]);
        for (int64_t i = c.begin; i < c.end; ++i) {
            T gi = g[i];
            T mi = b1 * m[i] + (T(1) - b1) * gi;
            T vi = b2 * v[i] + (T(1) - b2) * gi * gi;
            m[i] = mi;
            v[i] = vi;
            p[i] = p[i] * decay - step_size * mi / (std::sqrt(vi * inv_c2) + eps);
        }
    }
}
}  // namespace

static void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                         const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                         const std::vector<double>& weight_decay, const AdamWStep& step) {
    if (params.empty()) return;
    if (params[0].dtype() == kFloat32) adamw_typed<float>(params, grads, m, v, weight_decay, step);
    else adamw_typed<double>(params, grads, m, v, weight_decay, step);
}

void add_adamw(Backend& table) { table.adamw = {adamw_update}; }

}  // namespace cpu
}  // namespace nc
