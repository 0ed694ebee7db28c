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
                     ", got " +
                     (alpha.defined() ? shape_str(alpha.shape()) + " " + dtype_name(alpha.dtype()) : "none"));
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
    Tensor dy_tanh = empty(rows.shape(), x.dtype(), x.device());  // dy tanh(alpha x), summed into dweight below
    Tensor dalpha_rows = empty({rows.size(0)}, x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).dyt.backward(dy_rows, rows, contiguous(alpha), contiguous(weight),
                                         view(grads.dx, rows.shape()), dy_tanh, dalpha_rows);
    grads.dalpha = reshape(sum(dalpha_rows), alpha.shape());
    grads.dweight = sum(dy_tanh, {0});
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
static void dyt_typed(const Tensor& x_tensor, const Tensor& alpha_tensor, const Tensor& weight_tensor,
                      const Tensor& bias_tensor, const Tensor& out_tensor) {
    int64_t rows = x_tensor.size(0), C = x_tensor.size(1);
    const T *x = ptr_or_null<T>(x_tensor), *w = ptr_or_null<T>(weight_tensor), *b = ptr_or_null<T>(bias_tensor);
    const T alpha = *ptr_or_null<T>(alpha_tensor);
    T* y = mut_or_null<T>(out_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * C >= kParallelMin, [&](int64_t r) {
        const T* xr = x + r * C;
        T* yr = y + r * C;
        if (b)
            for (int64_t i = 0; i < C; ++i) yr[i] = dyt_value(tanh_fast(alpha * xr[i]), w[i], b[i]);
        else
            for (int64_t i = 0; i < C; ++i) yr[i] = dyt_value(tanh_fast(alpha * xr[i]), w[i], T(0));
    });
}

template <typename T>
static void dyt_backward_typed(const Tensor& dy_tensor, const Tensor& x_tensor, const Tensor& alpha_tensor,
                               const Tensor& weight_tensor, const Tensor& dx_tensor, const Tensor& dy_tanh_tensor,
                               const Tensor& dalpha_tensor) {
    int64_t rows = x_tensor.size(0), C = x_tensor.size(1);
    const T *dy = ptr_or_null<T>(dy_tensor), *x = ptr_or_null<T>(x_tensor), *w = ptr_or_null<T>(weight_tensor);
    const T alpha = *ptr_or_null<T>(alpha_tensor);
    T *dx = mut_or_null<T>(dx_tensor), *dy_tanh_out = mut_or_null<T>(dy_tanh_tensor),
      *dalpha = mut_or_null<T>(dalpha_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * C >= kParallelMin, [&](int64_t r) {
        const T *dyr = dy + r * C, *xr = x + r * C;
        T *dxr = dx + r * C, *dy_tanh_row = dy_tanh_out + r * C;
        double dalpha_row = 0;
        // The row's share of dalpha in kSumLanes running sums (fast_math.h):
        // with one, each addition waited for the one before and the whole
        // loop, tanh included, ran one number at a time ([1024, 256]: 1.2 ms,
        // 0.4 ms in lanes; bench/results/row-sums-in-lanes-2026-12-06.txt).
#pragma omp simd simdlen(kSumLanes) reduction(+ : dalpha_row)
        for (int64_t i = 0; i < C; ++i) {
            T t = tanh_fast(alpha * xr[i]);
            T dz = dyt_dz(dyr[i], w[i], t);
            dxr[i] = alpha * dz;
            dy_tanh_row[i] = dyr[i] * t;
            dalpha_row += (double)dz * xr[i];
        }
        dalpha[r] = (T)dalpha_row;
    });
}

static void dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out) {
    if (x.dtype() == kFloat32) dyt_typed<float>(x, alpha, weight, bias, out);
    else dyt_typed<double>(x, alpha, weight, bias, out);
}

static void dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                  const Tensor& dy_tanh, const Tensor& dalpha_rows) {
    if (x.dtype() == kFloat32) dyt_backward_typed<float>(dy, x, alpha, weight, dx, dy_tanh, dalpha_rows);
    else dyt_backward_typed<double>(dy, x, alpha, weight, dx, dy_tanh, dalpha_rows);
}

void add_dyt(Backend& table) {
    table.dyt = {dyt, dyt_backward};
}

}  // namespace cpu
}  // namespace nc
