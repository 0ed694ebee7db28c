// rope.cpp — rotary position embeddings as one fused op (declared in rope.h,
// which has the formulas): the raw ops, the differentiable op and the CPU
// kernels, forward beside backward. The CUDA kernels are in cuda/rope.cu.
//
// Shapes: x, y, dy, dx [rows, D] with rows = N T, or [B, H, T, D] views
// (their rows found through tensor/matrix_layout.h); cos, sin [T, D].
#include "tensor/ops/rope.h"

#include "autograd/node.h"
#include "tensor/ops/heads_last.h"
#include "tensor/ops/rows.h"
#include "tensor/profile.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

// Checks x (or dy) against the tables.
static void check_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, const std::string& op) {
    if (!cos.defined() || !sin.defined()) fail(op, "needs its cos and sin tables");
    if (x.dim() < 2) fail(op, "needs [..., T, D] (positions, then the head's channels), got " + shape_str(x.shape()));
    check_rows_dtype(x, op);
    const int64_t T = x.size(-2), D = x.size(-1);
    if (D % 2 != 0) fail(op, "pairs channel i with channel i + D/2, so D must be even, got " + shape_str(x.shape()));
    for (const Tensor* table : {&cos, &sin}) {
        const char* name = table == &cos ? "cos" : "sin";
        if (table->shape() != Shape{T, D})
            fail(op, std::string("the ") + name + " table is " + shape_str(table->shape()) + " but the input " +
                         shape_str(x.shape()) + " needs [" + std::to_string(T) + ", " + std::to_string(D) + "]");
        if (table->dtype() != x.dtype() || table->device() != x.device())
            fail(op, std::string("the ") + name + " table is " + dtype_name(table->dtype()) + " on " +
                         table->device().str() + ", the input " + dtype_name(x.dtype()) + " on " + x.device().str());
    }
}

// An output the caller passed in: x's shape, dtype and device, contiguous
// or heads-last (heads_last.h: the layouts whose rows never overlap), and
// in storage of its own, as copy_ asks of its source (the loops promise
// the compiler, `omp simd`, and the threads each other, that no output
// overlaps an input another pair or row still reads).
static void check_output(const Tensor& out, const Tensor& x, const std::string& op) {
    if (out.shape() != x.shape() || out.dtype() != x.dtype() || out.device() != x.device())
        fail(op, "the output to write into is " + shape_str(out.shape()) + " " + dtype_name(out.dtype()) + " on " +
                     out.device().str() + ", it must be " + shape_str(x.shape()) + " " + dtype_name(x.dtype()) + " on " +
                     x.device().str());
    if (!out.is_contiguous() && !heads_last(out))
        fail(op, "the output to write into must be contiguous or [B, T, H, D] seen as [B, H, T, D], got strides " +
                     shape_str(out.strides()));
    if (out.storage() == x.storage())
        fail(op, "the output to write into overlaps the input's storage: give it a tensor of its own");
}

// The rotation of x (or its backward, of dy) through the backend, into `out`
// (check_output) or, when undefined, into a new contiguous tensor. A 4-D x
// [B, H, T, D] is read in place whatever its other strides, as long as its
// channels are contiguous (Llama's queries and keys, split into heads from
// their projections, heads_last.h); anything else as contiguous [rows, D].
static Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, Tensor out, const std::string& op,
                     bool backward) {
    check_rope(x, cos, sin, op);
    const int64_t D = x.size(-1), rows = D == 0 ? 0 : x.numel() / D;
    const bool in_place = x.dim() == 4 && x.strides()[3] == 1;
    const Tensor in = in_place ? x : as_rows(x, op);
    if (out.defined()) check_output(out, x, op);
    else out = empty(x.shape(), x.dtype(), x.device());
    const Tensor out_rows = out.dim() == 4 ? out : view(out, {rows, D});
    const RopeKernels& kernels = backend_for(x.device()).rope;
    ProfileScope scope(OpKind::Elementwise);
    (backward ? kernels.backward : kernels.forward)(in, contiguous(cos), contiguous(sin), out_rows);
    return out;
}

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) { return rotate(x, cos, sin, Tensor(), "rope", false); }

Tensor rope_backward(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx) {
    return rotate(dy, cos, sin, dx, "rope_backward", true);
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    if ((cos.defined() && cos.requires_grad()) || (sin.defined() && sin.requires_grad()))
        fail("rope", "the cos and sin tables are constants (built from the positions); these require a gradient");
    // Backward needs only the tables: dx = R^T dy. A heads-last x (a
    // projection's output split into heads, heads_last.h) is read in place
    // and gets its gradient in that layout, so that neither splitting the
    // heads nor merging their gradients copies; the rotated tensor itself
    // is contiguous, which attention reads at least as fast as heads-last
    // rows (heads-last queries and keys measured a few percent to 20%
    // slower, in noisy runs: bench/results/rope-views-2026-12-07.txt).
    const bool x_heads_last = heads_last(x);
    return record("Rope", raw::rope(x, cos, sin), {x}, [cos, sin, x_heads_last](const Tensor& g) {
        Tensor dx = x_heads_last ? empty_heads_last(g.shape(), g.dtype(), g.device()) : Tensor();
        return std::vector<Tensor>{raw::rope_backward(g, cos, sin, dx)};
    });
}

// ---- the CPU kernels, forward beside backward ------------------------------------

namespace cpu {

// One row, forward and backward, in the tensor's own dtype. `omp simd`
// tells the compiler the output does not overlap the input: left to itself
// GCC kept these loops scalar, and with the formulas in double (as
// scale_shift's are) it converted every number there and back; at
// [8192 rows, 32] (train's Llama) the forward took 101 us that way against
// 22 us now, where an addition of the same size takes 16 us.
template <typename T>
inline void rope_row(const T* x, const T* c, const T* s, int64_t h, T* y) {
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) {
        y[i] = rope_first(x[i], x[i + h], c[i], s[i]);
        y[i + h] = rope_second(x[i + h], x[i], c[i + h], s[i + h]);
    }
}

template <typename T>
inline void rope_row_backward(const T* dy, const T* c, const T* s, int64_t h, T* dx) {
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) {
        dx[i] = rope_first_dx(dy[i], dy[i + h], c[i], s[i + h]);
        dx[i + h] = rope_second_dx(dy[i + h], dy[i], c[i + h], s[i]);
    }
}

// Row r of `in` (x forward, dy backward) is position r % T, its table row;
// where it lies in `in` and in `out` is rope_row_start's (rope.h). Threads split
// the rows. `row` is rope_row or rope_row_backward.
template <typename T, typename Row>
static void for_each_row(const Tensor& in_tensor, const Tensor& cos_tensor, const Tensor& sin_tensor,
                         const Tensor& out_tensor, const Row& row) {
    const int64_t D = in_tensor.size(-1), positions = cos_tensor.size(0), rows = D == 0 ? 0 : in_tensor.numel() / D;
    const MatrixLayout in_at = rope_layout(in_tensor, positions), out_at = rope_layout(out_tensor, positions);
    const T *in = ptr_or_null<T>(in_tensor), *cos = ptr_or_null<T>(cos_tensor), *sin = ptr_or_null<T>(sin_tensor);
    T* out = mut_or_null<T>(out_tensor);
    parallel_for(rows, rows >= kParallelRows && rows * D >= kParallelMin, [&](int64_t r) {
        const int64_t t = r % positions;
        row(in + rope_row_start(in_at, positions, r), cos + t * D, sin + t * D, D / 2,
            out + rope_row_start(out_at, positions, r));
    });
}

template <typename T>
static void rope_typed(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
    for_each_row<T>(x, cos, sin, out, [](const T* x_row, const T* c, const T* s, int64_t h, T* y_row) {
        rope_row(x_row, c, s, h, y_row);
    });
}

template <typename T>
static void rope_backward_typed(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx) {
    for_each_row<T>(dy, cos, sin, dx, [](const T* dy_row, const T* c, const T* s, int64_t h, T* dx_row) {
        rope_row_backward(dy_row, c, s, h, dx_row);
    });
}

static void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
    if (x.dtype() == kFloat32) rope_typed<float>(x, cos, sin, out);
    else rope_typed<double>(x, cos, sin, out);
}

static void rope_backward(const Tensor& dy, const Tensor& cos, const Tensor& sin, const Tensor& dx) {
    if (dy.dtype() == kFloat32) rope_backward_typed<float>(dy, cos, sin, dx);
    else rope_backward_typed<double>(dy, cos, sin, dx);
}

void add_rope(Backend& table) { table.rope = {rope, rope_backward}; }

}  // namespace cpu
}  // namespace nc
