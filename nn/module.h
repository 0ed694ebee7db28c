// module.h — nn::Module: a named tree of parameters, buffers and submodules.
//
// A layer is a Module that registers its tensors by name in its constructor:
//
//   Linear(int64_t in, int64_t out) {
//       weight = register_parameter("weight", ...);
//       bias = register_parameter("bias", ...);
//   }
//
// and a model registers its layers as submodules ("transformer", "h.0", ...),
// so named_parameters() yields Hugging Face-style dotted names such as
// "h.0.attn.c_attn.weight". The registered tensor and the member are the same
// tensor (a Tensor is a handle), so load_state_dict copies values *into*
// them: never assign a new tensor to a registered member.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"

namespace nc {
namespace nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
public:
    virtual ~Module() = default;

    // Parameters (trainable, requires_grad) of this module and all below it,
    // in registration order, each once even if registered twice (tied weights).
    NamedTensors named_parameters() const;
    std::vector<Tensor> parameters() const;
    // Buffers: state that is saved but not trained (BatchNorm running stats).
    NamedTensors named_buffers() const;
    // Every parameter and buffer under every name it was registered with.
    std::map<std::string, Tensor> state_dict() const;
    // Copies values in by name. Shape or dtype mismatches, missing and
    // unexpected names are all listed in one error, and nothing is copied.
    void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

    // Moves every parameter and buffer (of this module and all below it) to
    // `device`, in place, so the layers' handles and any optimizer built
    // afterwards see them there. Returns *this for chaining.
    Module& to(Device device);
    Device device() const;  // of the first parameter (kCPU when there is none)

    int64_t num_parameters() const;  // elements, tied weights counted once
    void zero_grad();
    void train(bool on = true);      // also sets every submodule
    void eval() { train(false); }
    bool is_training() const { return training_; }

    // The direct submodules, by name.
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

protected:
    Tensor register_parameter(const std::string& name, Tensor tensor);
    Tensor register_buffer(const std::string& name, Tensor tensor);
    template <typename M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        add_child(name, module);
        return module;
    }

private:
    void add_child(const std::string& name, std::shared_ptr<Module> module);
    void collect(const std::string& prefix, bool parameters, NamedTensors& out) const;

    NamedTensors parameters_;
    NamedTensors buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

// A module that only groups others under a name (ViT's "attention.output.dense").
class Group : public Module {
public:
    template <typename M>
    std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> module) {
        return register_module(name, module);
    }
    Tensor add_parameter(const std::string& name, Tensor tensor) { return register_parameter(name, tensor); }
};

// An ordered list of submodules named "0", "1", ... (GPT-2's "h.0", "h.1").
class ModuleList : public Module {
public:
    template <typename M>
    std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
        modules_.push_back(module);
        return register_module(std::to_string(modules_.size() - 1), module);
    }
    size_t size() const { return modules_.size(); }
    const std::shared_ptr<Module>& operator[](size_t i) const { return modules_.at(i); }

private:
    std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace nn
}  // namespace nc
