// scale_shift.cpp — y = x scale + shift per feature (declared in
// scale_shift.h, which has the formulas): the raw ops, the differentiable
// op and the CPU kernels, forward beside backward. The README's "Adding a
// fused op" walks through this file; the CUDA kernels are in
// cuda/scale_shift.cu.
//
// Shapes: x, y, dy, dx [rows, C]; scale, shift [C].

#include "autograd/node.h"
#include "tensor/ops/rows.h"
#include "tensor/ops/scale_shift.h"
#include "tensor/profile.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

static void check_scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift, const std::string& op) {
    if (!scale.defined()) fail(op, "needs a scale [C]");
    check_feature_param(scale, x, "scale", op);
    check_feature_param(shift, x, "shift", op);
}

Tensor scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift) {
    Tensor rows = as_rows(x, "scale_shift");
    if (!shift.defined()) fail("scale_shift", "needs a shift [C]");
    check_scale_shift(x, scale, shift, "scale_shift");
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).scale_shift.forward(rows, contiguous(scale), contiguous(shift), view(out, rows.shape()));
    return out;
}

ScaleShiftBackward scale_shift_backward(const Tensor& dy, const Tensor& x, const Tensor& scale) {
    check_same(dy, x, "gradient and input", "scale_shift_backward");
    Tensor rows = as_rows(x, "scale_shift_backward");
    check_scale_shift(x, scale, Tensor(), "scale_shift_backward");
    Tensor dy_rows = as_rows(dy, "scale_shift_backward");
    ScaleShiftBackward grads;
    grads.dx = empty(x.shape(), x.dtype(), x.device());
    Tensor dy_x = empty(rows.shape(), x.dtype(), x.device());  // dy x, summed over rows into dscale
    ProfileScope scope(OpKind::Norm);
    backend_for(x.device()).scale_shift.backward(dy_rows, rows, contiguous(scale), view(grads.dx, rows.shape()), dy_x);
    grads.dscale = sum(dy_x, {0});
    grads.dshift = sum(dy_rows, {0});
    return grads;
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

Tensor scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift) {
    // Backward needs x and scale, not the output (capturing the output would
    // make it own its own node: a reference cycle, see layer_norm).
    return record("ScaleShift", raw::scale_shift(x, scale, shift), {x, scale, shift},
                  [x, scale](const Tensor& g) {
                      raw::ScaleShiftBackward d = raw::scale_shift_backward(raw::contiguous(g), x, scale);
                      return std::vector<Tensor>{d.dx, d.dscale, d.dshift};
                  });
}

// ---- the CPU kernels, forward beside backward ------------------------------------

namespace cpu {

template <typename T>
static void scale_shift_typed(const Tensor& x_tensor, const Tensor& scale_tensor, const Tensor& shift_tensor,
                              const Tensor& out_tensor) {
    int64_t rows = x_tensor.size(0), C = x_tensor.size(1);
    const T *x = ptr_or_null<T>(x_tensor), *scale = ptr_or_null<T>(scale_tensor), *shift = ptr_or_null<T>(shift_tensor);
    T* y = mut_or_null<T>(out_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * C >= kParallelMin, [&](int64_t r) {
        for (int64_t i = 0; i < C; ++i) y[r * C + i] = (T)scale_shift_value(x[r * C + i], scale[i], shift[i]);
    });
}

template <typename T>
static void scale_shift_backward_typed(const Tensor& dy_tensor, const Tensor& x_tensor, const Tensor& scale_tensor,
                                       const Tensor& dx_tensor, const Tensor& dy_x_tensor) {
    int64_t rows = x_tensor.size(0), C = x_tensor.size(1);
    const T *dy = ptr_or_null<T>(dy_tensor), *x = ptr_or_null<T>(x_tensor), *scale = ptr_or_null<T>(scale_tensor);
    T *dx = mut_or_null<T>(dx_tensor), *dy_x = mut_or_null<T>(dy_x_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * C >= kParallelMin, [&](int64_t r) {
        for (int64_t i = 0; i < C; ++i) {
            int64_t e = r * C + i;
            dx[e] = (T)scale_shift_dx(dy[e], scale[i]);
            dy_x[e] = dy[e] * x[e];
        }
    });
}

static void scale_shift(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& out) {
    if (x.dtype() == kFloat32) scale_shift_typed<float>(x, scale, shift, out);
    else scale_shift_typed<double>(x, scale, shift, out);
}

static void scale_shift_backward(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& dx,
                                 const Tensor& dy_x) {
    if (x.dtype() == kFloat32) scale_shift_backward_typed<float>(dy, x, scale, dx, dy_x);
    else scale_shift_backward_typed<double>(dy, x, scale, dx, dy_x);
}

void add_scale_shift(Backend& table) { table.scale_shift = {scale_shift, scale_shift_backward}; }

}  // namespace cpu
}  // namespace nc
