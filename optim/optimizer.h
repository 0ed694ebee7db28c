// optimizer.h — SGD and AdamW, learning-rate schedules, gradient clipping.
//
// An optimizer holds parameter groups (each with its own weight decay, so
// norms, biases and embeddings can be left undecayed) and per-parameter state
// (momentum buffers, Adam moments). step() updates the parameters in place
// from their .grad() under no-grad, using raw ops, so it runs on any device.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/module.h"

namespace nc {
namespace optim {

struct ParamGroup {
    std::vector<Tensor> params;
    double weight_decay = 0;
};

class Optimizer {
public:
    virtual ~Optimizer() = default;
    virtual void step() = 0;
    void zero_grad();
    void set_lr(double lr) { lr_ = lr; }
    double lr() const { return lr_; }
    int64_t steps_taken() const { return step_; }
    // The state a checkpoint saves ("exp_avg.<group>.<index>", ...), and its
    // restoration (shapes must match).
    virtual std::map<std::string, Tensor> state() const = 0;
    virtual void load_state(const std::map<std::string, Tensor>& state) = 0;

protected:
    Optimizer(std::vector<ParamGroup> groups, double lr);
    std::vector<ParamGroup> groups_;
    double lr_;
    int64_t step_ = 0;
};

// SGD with momentum mu, optional Nesterov, and L2 weight decay (PyTorch's):
//   g = grad + wd p;  b = mu b + g;  p -= lr (nesterov ? g + mu b : b)
class SGD : public Optimizer {
public:
    SGD(std::vector<ParamGroup> groups, double lr, double momentum = 0, bool nesterov = false);
    void step() override;
    std::map<std::string, Tensor> state() const override;
    void load_state(const std::map<std::string, Tensor>& state) override;

private:
    double momentum_;
    bool nesterov_;
    std::vector<std::vector<Tensor>> buffers_;  // [group][param], undefined until first step
};

// AdamW (Loshchilov & Hutter 2019), with bias correction and decoupled decay:
//   p -= lr wd p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
class AdamW : public Optimizer {
public:
    AdamW(std::vector<ParamGroup> groups, double lr, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8);
    void step() override;
    std::map<std::string, Tensor> state() const override;
    void load_state(const std::map<std::string, Tensor>& state) override;

private:
    double beta1_, beta2_, eps_;
    std::vector<std::vector<Tensor>> m_, v_;
};

// Two groups: the weights of Linear layers (decayed) and the rest (not
// decayed): norms' gains, biases, embedding tables, learned positions and
// class tokens, and a tied head, which is the token table (minGPT's rule;
// timm's for ViT, whose patch projection is a Linear and is decayed).
std::vector<ParamGroup> decay_groups(const nn::Module& model, double weight_decay);

// Scales all gradients so their global L2 norm is at most max_norm; returns
// the norm before clipping. max_norm <= 0 only measures.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

enum class Schedule { Constant, Cosine, Linear };
Schedule parse_schedule(const std::string& s);
// The learning rate at step (0-based) of total: linear warmup from 0 over
// `warmup` steps, then constant, cosine decay to min_ratio * lr, or linear
// decay to min_ratio * lr at the last step.
double learning_rate(Schedule schedule, double lr, int64_t step, int64_t total, int64_t warmup, double min_ratio = 0.1);

}  // namespace optim
}  // namespace nc
