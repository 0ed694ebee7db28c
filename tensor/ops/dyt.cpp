// dyt.cpp — Dynamic Tanh (Zhu et al. 2025), fused (declared in dyt.h): the
// raw ops, the differentiable op, and the CPU kernels, forward beside
// backward. The CUDA kernels are in cuda/dyt.cu.
//
// y = weight * tanh(alpha x) + bias over the last dim of x, in one pass
// (weight, bias: [C], bias optional; alpha: one element). Backward
// recomputes t = tanh(alpha x) from x. The formulas are dyt.h's (shared
// with the CUDA kernels); tanh_fast is vectorizable in float32 (and
// std::tanh in float64), so the forward is one streaming pass.
//
// Shapes: x, y, dy, dx [rows, C]; weight, bias [C]; alpha [1].

#include <cmath>

#include "tensor/cpu/fast_math.h"
#include "tensor/ops/rows.h"
#include "tensor/profile.h"
#include "autograd/node.h"
#include "tensor/raw_nn.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

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
    backend_for(x.device()).dyt.forward(rows, contiguous(alpha), contiguous(weight),
                                bias.defined() ? contiguous(bias) : Tensor(), view(out, rows.shape()));
    return out;
}

DyTBackward dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, bool has_bias) {
    check_same(dy, x, "gradient and input", "dyt_backward");
    Tensor rows = as_rows(x, "dyt_backward");
    check_dyt(x, alpha, weight, Tensor(), "dyt_backward");
    Tensor dy_rows = as_rows(dy, "dyt_backward");
    DyTBackward grads;
    grads.dx = empty(x.shape(), x.dtype(), x.device());
    Tensor dy_t = empty(rows.shape(), x.dtype(), x.device());  // dy tanh(alpha x), summed into dweight below
    Tensor dalpha_rows = empty({rows.size(0)}, x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).dyt.backward(dy_rows, rows, contiguous(alpha), contiguous(weight),
                                         view(grads.dx, rows.shape()), dy_t, dalpha_rows);
    grads.dalpha = reshape(sum(dalpha_rows), alpha.shape());
    grads.dweight = sum(dy_t, {0});
    if (has_bias) grads.dbias = sum(dy_rows, {0});
    return grads;
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

using Grads = std::vector<Tensor>;

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

// ---- the CPU kernels, forward beside backward ------------------------------------

namespace cpu {

template <typename T>
static void dyt_typed(const Tensor& x_t, const Tensor& alpha_t, const Tensor& weight_t, const Tensor& bias_t,
                      const Tensor& out_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *x = ptr_or_null<T>(x_t), *w = ptr_or_null<T>(weight_t), *b = ptr_or_null<T>(bias_t);
    const T alpha = *ptr_or_null<T>(alpha_t);
    T* y = mut_or_null<T>(out_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * C;
        T* yr = y + r * C;
        if (b)
            for (int64_t i = 0; i < C; ++i) yr[i] = dyt_value(tanh_fast(alpha * xr[i]), w[i], b[i]);
        else
            for (int64_t i = 0; i < C; ++i) yr[i] = dyt_value(tanh_fast(alpha * xr[i]), w[i], T(0));
    }
}

template <typename T>
static void dyt_backward_typed(const Tensor& dy_t, const Tensor& x_t, const Tensor& alpha_t, const Tensor& weight_t,
                               const Tensor& dx_t, const Tensor& dyt_t, const Tensor& dalpha_t) {
    int64_t rows = x_t.size(0), C = x_t.size(1);
    const T *dy = ptr_or_null<T>(dy_t), *x = ptr_or_null<T>(x_t), *w = ptr_or_null<T>(weight_t);
    const T alpha = *ptr_or_null<T>(alpha_t);
    T *dx = mut_or_null<T>(dx_t), *dy_tanh = mut_or_null<T>(dyt_t), *dalpha = mut_or_null<T>(dalpha_t);
#pragma omp parallel for schedule(static) if (rows >= kParallelRows && rows * C >= 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const T *dyr = dy + r * C, *xr = x + r * C;
        T *dxr = dx + r * C, *dy_tanh_r = dy_tanh + r * C;
        double dalpha_row = 0;
        for (int64_t i = 0; i < C; ++i) {
            T t = tanh_fast(alpha * xr[i]);
            T dz = dyt_dz(dyr[i], w[i], t);
            dxr[i] = alpha * dz;
            dy_tanh_r[i] = dyr[i] * t;
            dalpha_row += (double)dz * xr[i];
        }
        dalpha[r] = (T)dalpha_row;
    }
}

static void dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out) {
    if (x.dtype() == kFloat32) dyt_typed<float>(x, alpha, weight, bias, out);
    else dyt_typed<double>(x, alpha, weight, bias, out);
}

static void dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                  const Tensor& dy_t, const Tensor& dalpha_rows) {
    if (x.dtype() == kFloat32) dyt_backward_typed<float>(dy, x, alpha, weight, dx, dy_t, dalpha_rows);
    else dyt_backward_typed<double>(dy, x, alpha, weight, dx, dy_t, dalpha_rows);
}

void add_dyt(Backend& table) {
    table.dyt = {dyt, dyt_backward};
}

}  // namespace cpu
}  // namespace nc
