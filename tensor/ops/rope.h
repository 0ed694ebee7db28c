// rope.h — rotary position embeddings (RoPE; Su et al. 2021) as one fused
// op, in Hugging Face's pairing: channel i of a head vector of size D turns
// with channel i + h, h = D/2. Declared here: its kernels' signatures, its
// formula (shared by the CPU loop and the CUDA kernel), its raw ops and its
// differentiable op. Defined in rope.cpp; the CUDA kernels in cuda/rope.cu.
// nn/rope.h builds the tables and applies them to queries and keys.
//
// At position t, with c = cos[t] and s = sin[t] (tables [T, D]; nn/rope.h
// fills both halves of a row with the same angles), for i < h:
//   y_i     = x_i c_i         - x_{i+h} s_i
//   y_{i+h} = x_{i+h} c_{i+h} + x_i s_{i+h}
// Each pair (x_i, x_{i+h}) is turned by a 2 x 2 rotation R, so the backward
// of y = R x is dx = R^T dy, the rotation by the opposite angle:
//   dx_i     = dy_i c_i         + dy_{i+h} s_{i+h}
//   dx_{i+h} = dy_{i+h} c_{i+h} - dy_i s_i
// Written as ops (x cos + cat(-x2, x1) sin: two narrows, a negation, a cat,
// two products and a sum), forward and backward made about a dozen passes
// over x; fused, one each way.
#pragma once

#include "tensor/host_device.h"
#include "tensor/matrix_layout.h"
#include "tensor/tensor.h"

namespace nc {

// The backend entry Backend::rope. x, out, dy, dx: either contiguous
// [rows, D] with rows = N T (N matrices of T positions: row r is position
// r % T), or [B, H, T, D] with the channels contiguous and any other strides
// (a projection's output split into heads, [B, T, H, D] seen as
// [B, H, T, D], read and written in place: rope_layout below); cos, sin:
// contiguous [T, D]; D even.
struct RopeKernels {
    void (*forward)(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out);
    void (*backward)(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx);
};

// The formulas, written once for both backends: the first and the second
// channel of a pair, forward and backward. `partner` is the other channel's
// value; backward's `sin_partner` is the sine at the other channel.
template <typename T>
NC_HOST_DEVICE inline T rope_first(T x, T partner, T cos, T sin) {
    return x * cos - partner * sin;
}
template <typename T>
NC_HOST_DEVICE inline T rope_second(T x, T partner, T cos, T sin) {
    return x * cos + partner * sin;
}
template <typename T>
NC_HOST_DEVICE inline T rope_first_dx(T dy, T dy_partner, T cos, T sin_partner) {
    return dy * cos + dy_partner * sin_partner;
}
template <typename T>
NC_HOST_DEVICE inline T rope_second_dx(T dy, T dy_partner, T cos, T sin_partner) {
    return dy * cos - dy_partner * sin_partner;
}

// Where row r of an operand starts, r = n T + t counting the rows of its
// matrices in order (n = b H + h of [B, H, T, D]; for [rows, D], n = r / T):
// in matrix n's layout (tensor/matrix_layout.h), t rows further. Shared by
// the CPU loop and the CUDA kernels, so that both read a view the same way.
NC_HOST_DEVICE inline int64_t rope_row_start(const MatrixLayout& at, int64_t positions, int64_t r) {
    return at.matrix(r / positions) + r % positions * at.row_stride;
}
// An operand's layout: [B, H, T, D] with its own strides, or contiguous
// [rows, D] as rows / T matrices of T rows.
inline MatrixLayout rope_layout(const Tensor& t, int64_t positions) {
    return t.dim() == 4 ? matrix_layout_of(t) : contiguous_layout(positions, t.size(-1));
}

namespace raw {

// x: [..., T, D], float32 or float64; cos, sin: [T, D] of x's dtype and
// device. Returns y of x's shape, contiguous. A 4-D x [B, H, T, D] with
// contiguous channels is read in place, whatever its other strides.
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin);
// dy: [..., T, D] -> dx of dy's shape: the rotation by the opposite angle,
// written into `dx` when given (dy's shape, dtype and device, contiguous or
// heads-last, apart from dy: the differentiable op gives a heads-last x its
// gradient heads last), else into a new contiguous tensor.
Tensor rope_backward(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx = Tensor());

}  // namespace raw

// Differentiable in x; the tables are constants (built from positions, never
// learned), and tables that require a gradient are refused.
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace nc
