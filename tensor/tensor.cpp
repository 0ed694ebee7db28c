#include "tensor/tensor.h"

#include <cstdint>

#include "tensor/raw_ops.h"

namespace nc {

const TensorImpl& Tensor::checked() const {
    if (!impl_) throw Error("tensor: this tensor is undefined (default-constructed, or a gradient not yet computed)");
    return *impl_;
}

const Shape& Tensor::shape() const { return checked().shape; }
const Shape& Tensor::strides() const { return checked().strides; }
int64_t Tensor::offset() const { return checked().offset; }
int64_t Tensor::dim() const { return (int64_t)checked().shape.size(); }
int64_t Tensor::size(int64_t d) const { return shape()[normalize_dim(d, dim(), "size")]; }
int64_t Tensor::numel() const { return shape_numel(shape()); }
DType Tensor::dtype() const { return checked().dtype; }
Device Tensor::device() const { return checked().device; }
const std::shared_ptr<Storage>& Tensor::storage() const { return checked().storage; }

bool Tensor::is_contiguous() const {
    const TensorImpl& t = checked();
    int64_t expected = 1;
    for (int64_t i = (int64_t)t.shape.size() - 1; i >= 0; --i) {
        if (t.shape[i] == 1) continue;  // the stride of a size-1 dim never matters
        if (t.strides[i] != expected) return false;
        expected *= t.shape[i];
    }
    return true;
}

void* Tensor::raw_data() const {
    const TensorImpl& t = checked();
    return static_cast<char*>(t.storage->data) + t.offset * (int64_t)dtype_size(t.dtype);
}

template <>
float* Tensor::data<float>() const {
    if (dtype() != kFloat32) fail("data<float>", std::string("tensor has dtype ") + dtype_name(dtype()));
    if (device() != kCPU) fail("data<float>", "tensor is on " + device().str() + ": host code cannot read it (use to_device(t, kCPU) or to_vector())");
    return static_cast<float*>(raw_data());
}
template <>
double* Tensor::data<double>() const {
    if (dtype() != kFloat64) fail("data<double>", std::string("tensor has dtype ") + dtype_name(dtype()));
    if (device() != kCPU) fail("data<double>", "tensor is on " + device().str() + ": host code cannot read it (use to_device(t, kCPU) or to_vector())");
    return static_cast<double*>(raw_data());
}
template <>
int64_t* Tensor::data<int64_t>() const {
    if (dtype() != kInt64) fail("data<int64_t>", std::string("tensor has dtype ") + dtype_name(dtype()));
    if (device() != kCPU) fail("data<int64_t>", "tensor is on " + device().str() + ": host code cannot read it (use to_device(t, kCPU) or to_vector())");
    return static_cast<int64_t*>(raw_data());
}

void Tensor::move_to_(Device device) const {
    const TensorImpl& t = checked();
    if (t.device == device) return;
    if (t.grad_fn) fail("move_to_", "only leaf tensors (parameters, buffers) can move in place; use to_device(t, device)");
    Tensor moved = raw::to_device(raw::contiguous(*this), device);
    TensorImpl& impl = *impl_;
    impl.storage = moved.impl()->storage;
    impl.strides = moved.strides();
    impl.offset = 0;
    impl.device = device;
    impl.grad = Tensor();
}

double Tensor::item() const {
    if (numel() != 1) fail("item", "needs a tensor with exactly one element, got shape " + shape_str(shape()));
    return to_vector()[0];
}

std::vector<double> Tensor::to_vector() const {
    // Bring the values to the CPU, contiguous and as float64, then copy out.
    Tensor t = raw::contiguous(raw::to_dtype(raw::to_device(*this, kCPU), kFloat64));
    const double* p = t.data<double>();
    return std::vector<double>(p, p + t.numel());
}

std::vector<int64_t> Tensor::to_int_vector() const {
    Tensor t = raw::contiguous(raw::to_dtype(raw::to_device(*this, kCPU), kInt64));
    const int64_t* p = t.data<int64_t>();
    return std::vector<int64_t>(p, p + t.numel());
}

bool Tensor::requires_grad() const { return checked().requires_grad; }

Tensor& Tensor::set_requires_grad(bool requires) {
    if (requires && !is_floating(dtype()))
        fail("set_requires_grad", std::string("only floating-point tensors can require grad, this one is ") +
                                      dtype_name(dtype()));
    if (!requires && grad_fn())
        fail("set_requires_grad", "cannot turn off requires_grad on a non-leaf tensor; use detach() instead");
    impl_->requires_grad = requires;
    return *this;
}

Tensor Tensor::grad() const { return checked().grad; }

void Tensor::set_grad(const Tensor& grad) const {
    checked();
    if (grad.defined() && grad.shape() != shape())
        fail("set_grad", "gradient shape " + shape_str(grad.shape()) + " does not match tensor shape " +
                             shape_str(shape()));
    impl_->grad = grad;
}

void Tensor::zero_grad() const { checked(); impl_->grad = Tensor(); }

const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked().grad_fn; }

Tensor Tensor::detach() const { return make_view(*this, shape(), strides(), offset()); }

const std::string& Tensor::name() const { return checked().name; }

Tensor& Tensor::set_name(const std::string& name) {
    checked();
    impl_->name = name;
    return *this;
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = std::move(shape);
    impl->strides = std::move(strides);
    impl->offset = offset;
    impl->dtype = base.dtype();
    impl->device = base.device();
    impl->storage = base.storage();
    return Tensor(impl);
}

Tensor empty(const Shape& shape, DType dtype, Device device) {
    check_ndim(shape, "empty");
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    impl->dtype = dtype;
    impl->device = device;
    // Never allocate zero bytes: keeps data pointers valid for empty tensors.
    size_t numel = (size_t)shape_numel(shape), nbytes = 0;
    if (__builtin_mul_overflow(numel, dtype_size(dtype), &nbytes))
        fail("empty", "shape " + shape_str(shape) + " needs more bytes than memory can address");
    nbytes = std::max<size_t>(1, nbytes);
    impl->storage = std::make_shared<Storage>(nbytes, device);
    return Tensor(impl);
}

}  // namespace nc
