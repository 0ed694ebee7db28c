// tensor.h — the Tensor handle.
//
// A Tensor is a cheap handle (one shared_ptr) to a TensorImpl, which holds
//   - the view:  shape, strides and offset (in elements) into a Storage,
//   - the type:  dtype and device,
//   - autograd:  requires_grad, the accumulated grad, and grad_fn (the graph
//                node that produced it; empty for leaves).
// Copying a Tensor copies the handle, never the data: `Tensor b = a;` makes b
// the same tensor as a. Use raw::clone for a deep copy.
//
// The operations on tensors are free functions: the differentiable ones
// (add, matmul, sum, ...) in autograd/ops.h, the raw ones that never record
// a graph in tensor/raw_ops.h.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace nc {

struct Node;  // autograd/node.h: one recorded op in the graph
struct TensorImpl;
class Tensor;

// A gradient hook sees the gradient flowing into a tensor during backward.
// It may return a replacement gradient, or an undefined Tensor to keep it.
using GradHook = std::function<Tensor(const Tensor& grad)>;

class Tensor {
public:
    Tensor() = default;  // an undefined tensor (like None)
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    bool defined() const { return impl_ != nullptr; }

    // --- view and type ---------------------------------------------------
    const Shape& shape() const;
    const Shape& strides() const;
    int64_t offset() const;
    int64_t dim() const;
    int64_t size(int64_t dim) const;  // negative dims count from the end
    int64_t numel() const;
    DType dtype() const;
    Device device() const;
    bool is_contiguous() const;
    const std::shared_ptr<Storage>& storage() const;

    // Pointer to the first element of this view (storage + offset).
    void* raw_data() const;
    // Typed pointer; throws if T does not match the dtype. CPU tensors only.
    template <typename T>
    T* data() const;

    // Moves this tensor's values to `device` in place: every handle to it
    // (a layer's member and its module's registry, tied weights) then sees
    // them there. Its gradient is dropped. A leaf only (parameters, buffers).
    void move_to_(Device device) const;

    // --- values to the host -------------------------------------------------
    double item() const;                   // one-element tensor -> number
    std::vector<double> to_vector() const;  // all elements in row-major order
    std::vector<int64_t> to_int_vector() const;
    std::string to_string() const;          // PyTorch-style printing

    // --- autograd ----------------------------------------------------------
    bool requires_grad() const;
    // Marks a leaf as a parameter/input whose gradient we want. Returns *this.
    Tensor& set_requires_grad(bool requires);
    Tensor grad() const;            // accumulated gradient, undefined until backward
    void set_grad(const Tensor& grad) const;
    void zero_grad() const;         // drops the gradient (sets it to undefined)
    const std::shared_ptr<Node>& grad_fn() const;
    bool is_leaf() const { return grad_fn() == nullptr; }
    // A new tensor sharing storage, cut off from the graph.
    Tensor detach() const;
    // An optional name, shown in graph dumps ("x", "wte.weight").
    const std::string& name() const;
    Tensor& set_name(const std::string& name);

    TensorImpl* impl() const { return impl_.get(); }
    const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
    bool same(const Tensor& other) const { return impl_ == other.impl_; }

private:
    const TensorImpl& checked() const;
    std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
    Shape shape;
    Shape strides;
    int64_t offset = 0;
    DType dtype = DType::Float32;
    Device device;
    std::shared_ptr<Storage> storage;

    // autograd state
    bool requires_grad = false;
    Tensor grad;                    // accumulated by backward() for leaves
    std::shared_ptr<Node> grad_fn;  // the op that produced this tensor
    std::vector<GradHook> hooks;    // leaf hooks (non-leaf hooks live on grad_fn)
    std::string name;
};

template <> float* Tensor::data<float>() const;
template <> double* Tensor::data<double>() const;
template <> int64_t* Tensor::data<int64_t>() const;

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Builds a tensor header over existing storage (used by views).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);
// Allocates an uninitialized contiguous tensor.
Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);

}  // namespace nc
