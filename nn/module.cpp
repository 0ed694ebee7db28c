#include "nn/module.h"

#include <unordered_set>

namespace nc {
namespace nn {

static void check_name(const std::string& name, const std::string& what) {
    if (name.empty() || name.find('.') != std::string::npos)
        fail("Module::register_" + what, "name '" + name + "' must be non-empty and contain no '.'");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
    check_name(name, "parameter");
    if (!tensor.is_leaf()) fail("Module::register_parameter", "parameter '" + name + "' must be a leaf tensor");
    tensor.set_requires_grad(true);
    if (tensor.name().empty()) tensor.set_name(name);
    parameters_.push_back({name, tensor});
    return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
    check_name(name, "buffer");
    buffers_.push_back({name, tensor});
    return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
    check_name(name, "module");
    if (!module) fail("Module::register_module", "submodule '" + name + "' is null");
    children_.push_back({name, std::move(module)});
}

void Module::collect(const std::string& prefix, bool parameters, NamedTensors& out) const {
    for (const auto& [name, t] : parameters ? parameters_ : buffers_) out.push_back({prefix + name, t});
    for (const auto& [name, child] : children_) child->collect(prefix + name + ".", parameters, out);
}

NamedTensors Module::named_parameters() const {
    NamedTensors all, unique;
    collect("", true, all);
    std::unordered_set<TensorImpl*> seen;
    for (auto& entry : all)
        if (seen.insert(entry.second.impl()).second) unique.push_back(entry);
    return unique;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& entry : named_parameters()) out.push_back(entry.second);
    return out;
}

NamedTensors Module::named_buffers() const {
    NamedTensors out;
    collect("", false, out);
    return out;
}

std::map<std::string, Tensor> Module::state_dict() const {
    NamedTensors all;
    collect("", true, all);
    collect("", false, all);
    return std::map<std::string, Tensor>(all.begin(), all.end());
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
    std::map<std::string, Tensor> mine = state_dict();
    std::string problems;
    for (const auto& [name, target] : mine) {
        auto it = state.find(name);
        if (it == state.end()) {
            if (strict) problems += "\n  missing: " + name + " " + shape_str(target.shape());
            continue;
        }
        const Tensor& value = it->second;
        if (value.shape() != target.shape() || value.dtype() != target.dtype())
            problems += "\n  mismatch: " + name + " expects " + shape_str(target.shape()) + " " +
                        dtype_name(target.dtype()) + ", got " + shape_str(value.shape()) + " " + dtype_name(value.dtype());
    }
    if (strict)
        for (const auto& [name, value] : state)
            if (!mine.count(name)) problems += "\n  unexpected: " + name + " " + shape_str(value.shape());
    if (!problems.empty()) fail("load_state_dict", "the state does not fit this module:" + problems);
    NoGradGuard no_grad;
    for (const auto& [name, target] : mine) {
        auto it = state.find(name);
        if (it != state.end()) raw::copy_(target, it->second);
    }
}

int64_t Module::num_parameters() const {
    int64_t n = 0;
    for (auto& entry : named_parameters()) n += entry.second.numel();
    return n;
}

Module& Module::to(Device device) {
    for (auto& entry : named_parameters()) entry.second.move_to_(device);
    for (auto& entry : named_buffers()) entry.second.move_to_(device);
    return *this;
}

Device Module::device() const {
    NamedTensors params = named_parameters();
    return params.empty() ? kCPU : params.front().second.device();
}

void Module::zero_grad() {
    for (auto& entry : named_parameters()) entry.second.zero_grad();
}

void Module::train(bool on) {
    training_ = on;
    for (auto& entry : children_) entry.second->train(on);
}

}  // namespace nn
}  // namespace nc
