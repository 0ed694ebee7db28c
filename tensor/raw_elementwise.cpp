// raw_elementwise.cpp — creation, copies and elementwise math.
//
// The pattern of every op here: check arguments, work out the output shape
// (broadcasting binary ops), allocate the output, call one backend kernel.
#include <cmath>

#include "tensor/profile.h"
#include "tensor/raw_nn.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace raw {

static void check_same_device(const Tensor& a, const Tensor& b, std::string_view op) {
    if (a.device() != b.device())
        fail(op, "tensors are on different devices (" + a.device().str() + " and " + b.device().str() + ")");
}

static void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
    if (a.dtype() != b.dtype())
        fail(op, std::string("dtypes differ: ") + dtype_name(a.dtype()) + " " + shape_str(a.shape()) + " and " +
                     dtype_name(b.dtype()) + " " + shape_str(b.shape()) + "; convert one with to_dtype");
}

static void check_floating(const Tensor& t, std::string_view op) {
    check_compute_dtype(t.dtype(), op);
    if (!is_floating(t.dtype()))
        fail(op, std::string("needs a floating-point tensor, got ") + dtype_name(t.dtype()) + " " +
                     shape_str(t.shape()));
}

// ---- creation ----------------------------------------------------------------

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
    Tensor t = empty(shape, dtype, device);
    ProfileScope scope(OpKind::Elementwise);
    backend_for(device).fill(t, value);
    return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }

Tensor arange(double start, double end, double step, DType dtype, Device device) {
    if (step == 0) fail("arange", "step must be non-zero");
    int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((end - start) / step));
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = start + (double)i * step;
    return to_device(to_dtype(from_vector(values, {n}), dtype), device);
}

// Copies host values into a new CPU tensor of the given dtype.
template <typename T>
static Tensor from_host(const std::vector<T>& values, const Shape& shape, DType dtype, const std::string& op) {
    check_ndim(shape, op);
    if ((int64_t)values.size() != shape_numel(shape))
        fail(op, "got " + std::to_string(values.size()) + " values for shape " + shape_str(shape) + " (" +
                     std::to_string(shape_numel(shape)) + " elements)");
    Tensor t = empty(shape, dtype, kCPU);
    std::copy(values.begin(), values.end(), static_cast<T*>(t.raw_data()));
    return t;
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape, Device device) {
    return to_device(from_host(values, shape, kFloat32, "from_vector"), device);
}
Tensor from_vector(const std::vector<double>& values, const Shape& shape, Device device) {
    return to_device(from_host(values, shape, kFloat64, "from_vector"), device);
}
Tensor from_indices(const std::vector<int64_t>& values, const Shape& shape, Device device) {
    return to_device(from_host(values, shape, kInt64, "from_indices"), device);
}

static Tensor random_tensor(RandomKind kind, const Shape& shape, double p, Generator& gen, DType dtype,
                            Device device, const std::string& op) {
    check_compute_dtype(dtype, op);
    if (!is_floating(dtype)) fail(op, std::string("needs a floating dtype, got ") + dtype_name(dtype));
    Tensor t = empty(shape, dtype, device);
    uint64_t first = gen.advance((uint64_t)t.numel());
    ProfileScope scope(OpKind::Elementwise);
    backend_for(device).random(kind, gen.seed(), first, p, t);
    return t;
}

Tensor rand(const Shape& shape, Generator& gen, DType dtype, Device device) {
    return random_tensor(RandomKind::Uniform, shape, 0, gen, dtype, device, "rand");
}
Tensor randn(const Shape& shape, Generator& gen, DType dtype, Device device) {
    return random_tensor(RandomKind::Normal, shape, 0, gen, dtype, device, "randn");
}
Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype, Device device) {
    if (!(p >= 0 && p <= 1)) fail("bernoulli", "probability p=" + std::to_string(p) + " is not in [0, 1]");
    return random_tensor(RandomKind::Bernoulli, shape, p, gen, dtype, device, "bernoulli");
}

// ---- copies ------------------------------------------------------------------

void copy_(const Tensor& dst, const Tensor& src_in) {
    // Across devices (loading CPU weights into a model on the GPU) the source
    // travels first; then it is an ordinary copy on the destination's device.
    Tensor src = src_in.device() == dst.device() ? src_in : to_device(src_in, dst.device());
    Shape shape = broadcast_shapes(dst.shape(), src.shape(), "copy_");
    if (shape != dst.shape())
        fail("copy_", "source shape " + shape_str(src.shape()) + " does not broadcast to destination shape " +
                          shape_str(dst.shape()));
    // A source in the destination's own storage (x[1:] = x[:-1]) would be
    // read after parts of it were overwritten: copy it out first, so the
    // result is that of copying the old values. The very same view is a no-op.
    if (src.storage() == dst.storage()) {
        if (src.offset() == dst.offset() && src.shape() == dst.shape() && src.strides() == dst.strides()) return;
        src = clone(src);
    }
    ProfileScope scope(OpKind::Movement);
    backend_for(dst.device()).unary(UnaryOp::Copy, expand(src, dst.shape()), dst);
}

void fill_(const Tensor& dst, double value) {
    ProfileScope scope(OpKind::Elementwise);
    backend_for(dst.device()).fill(dst, value);
}

Tensor clone(const Tensor& t) {
    Tensor out = empty(t.shape(), t.dtype(), t.device());
    ProfileScope scope(OpKind::Movement);
    backend_for(t.device()).unary(UnaryOp::Copy, t, out);
    return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor to_dtype(const Tensor& t, DType dtype) {
    if (t.dtype() == dtype) return t;
    Tensor out = empty(t.shape(), dtype, t.device());
    ProfileScope scope(OpKind::Movement);
    backend_for(t.device()).unary(UnaryOp::Copy, t, out);
    return out;
}

// Host <-> device: the source made contiguous on its own device, then one
// copy of its bytes through the non-CPU side's backend.
Tensor to_device(const Tensor& t, Device device) {
    if (t.device() == device) return t;
    if (t.device().type != DeviceType::CPU && device.type != DeviceType::CPU)
        fail("to_device", "copies between " + t.device().str() + " and " + device.str() + " go through the CPU");
    Tensor src = contiguous(t);
    Tensor dst = empty(t.shape(), t.dtype(), device);
    size_t nbytes = (size_t)t.numel() * dtype_size(t.dtype());
    ProfileScope scope(OpKind::Movement);
    if (device.type == DeviceType::CPU)
        backend_for(src.device()).copy_to_host(src.raw_data(), dst.raw_data(), nbytes);
    else
        backend_for(device).copy_from_host(src.raw_data(), dst.raw_data(), nbytes);
    return dst;
}

// ---- elementwise ---------------------------------------------------------------

Tensor unary(UnaryOp op, const Tensor& x) {
    if (op != UnaryOp::Copy) check_floating(x, unary_op_name(op));
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    ProfileScope scope(OpKind::Elementwise);
    backend_for(x.device()).unary(op, x, out);
    return out;
}

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::Rsqrt, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
    std::string_view name = binary_op_name(op);  // measured once, not per check
    check_same_device(a, b, name);
    check_same_dtype(a, b, name);
    check_compute_dtype(a.dtype(), name);
    bool integer_ok = op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
                      (op >= BinaryOp::Maximum && op <= BinaryOp::Ge);
    if (!integer_ok) check_floating(a, name);
    Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
    check_ndim(shape, name);
    Tensor out = empty(shape, a.dtype(), a.device());
    ProfileScope scope(OpKind::Elementwise);
    // An operand that already has the output's shape goes as it is; only a
    // broadcast one needs the view (a new tensor header each).
    backend_for(a.device()).binary(op, a.shape() == shape ? a : expand(a, shape),
                                   b.shape() == shape ? b : expand(b, shape), out);
    return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Minimum, a, b); }
Tensor add(const Tensor& a, double b) { return add(a, scalar(b, a.dtype(), a.device())); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar(b, a.dtype(), a.device())); }
Tensor pow(const Tensor& a, double b) { return pow(a, scalar(b, a.dtype(), a.device())); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    check_same_device(cond, a, "where");
    check_same_device(a, b, "where");
    check_same_dtype(a, b, "where");
    check_compute_dtype(a.dtype(), "where");
    Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
    Tensor out = empty(shape, a.dtype(), a.device());
    // The condition is read as the values' dtype, so any numeric mask works.
    Tensor c = to_dtype(cond, a.dtype());
    ProfileScope scope(OpKind::Elementwise);
    backend_for(a.device()).where(expand(c, shape), expand(a, shape), expand(b, shape), out);
    return out;
}

bool all_finite(const Tensor& t) {
    if (is_16bit_float(t.dtype())) return all_finite(to_dtype(t, kFloat32));  // exact: every 16-bit value is a float
    if (!is_floating(t.dtype()) || t.numel() == 0) return true;
    // x - x is 0 for finite x and NaN for NaN or +-Inf; the sum propagates NaN.
    return std::isfinite(sum(sub(t, t)).item());
}

// The activations and their one-pass backwards (tensor/raw_nn.h).
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


}  // namespace raw
}  // namespace nc
