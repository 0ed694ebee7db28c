#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>

#include "nn/layers.h"
#include "tensor/profile.h"
#include "tensor/ops/adamw.h"

namespace nc {
namespace optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr) : groups_(std::move(groups)), lr_(lr) {
    for (const ParamGroup& g : groups_)
        for (const Tensor& p : g.params)
            if (!p.requires_grad() || !p.is_leaf()) fail("optimizer", "every parameter must be a leaf that requires grad");
}

void Optimizer::zero_grad() {
    for (ParamGroup& g : groups_)
        for (Tensor& p : g.params) p.zero_grad();
}

// Saved state entries are named "<kind>.<group>.<index>".
static std::string key(const char* kind, size_t g, size_t i) {
    return std::string(kind) + "." + std::to_string(g) + "." + std::to_string(i);
}

static void load_into(std::vector<std::vector<Tensor>>& slots, const std::vector<ParamGroup>& groups, const char* kind,
                      const std::map<std::string, Tensor>& state) {
    for (size_t g = 0; g < groups.size(); ++g)
        for (size_t i = 0; i < groups[g].params.size(); ++i) {
            auto it = state.find(key(kind, g, i));
            if (it == state.end()) {
                slots[g][i] = Tensor();
                continue;
            }
            if (it->second.shape() != groups[g].params[i].shape())
                fail("optimizer state", key(kind, g, i) + " has shape " + shape_str(it->second.shape()) +
                                            ", the parameter " + shape_str(groups[g].params[i].shape()));
            // A fresh copy on the parameter's device (a checkpoint is read on the CPU).
            slots[g][i] = raw::clone(raw::to_device(it->second, groups[g].params[i].device()));
        }
}

static std::vector<std::vector<Tensor>> empty_slots(const std::vector<ParamGroup>& groups) {
    std::vector<std::vector<Tensor>> slots;
    for (const ParamGroup& g : groups) slots.emplace_back(g.params.size());
    return slots;
}

// ---- SGD ---------------------------------------------------------------------------

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool nesterov)
    : Optimizer(std::move(groups), lr), momentum_(momentum), nesterov_(nesterov), buffers_(empty_slots(groups_)) {
    if (nesterov && momentum <= 0) fail("SGD", "Nesterov momentum needs momentum > 0");
}

void SGD::step() {
    NoGradGuard no_grad;
    ProfileScope scope(OpKind::Optimizer);
    ++step_;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const ParamGroup& group = groups_[gi];
        for (size_t i = 0; i < group.params.size(); ++i) {
            const Tensor& p = group.params[i];
            if (!p.grad().defined()) continue;
            Tensor g = p.grad();
            if (group.weight_decay != 0) g = raw::add(g, raw::mul(p, group.weight_decay));
            Tensor update = g;
            if (momentum_ != 0) {
                Tensor& b = buffers_[gi][i];
                b = b.defined() ? raw::add(raw::mul(b, momentum_), g) : raw::clone(g);
                update = nesterov_ ? raw::add(g, raw::mul(b, momentum_)) : b;
            }
            raw::copy_(p, raw::sub(p, raw::mul(update, lr_)));
        }
    }
}

std::map<std::string, Tensor> SGD::state() const {
    std::map<std::string, Tensor> s;
    for (size_t g = 0; g < buffers_.size(); ++g)
        for (size_t i = 0; i < buffers_[g].size(); ++i)
            if (buffers_[g][i].defined()) s[key("momentum_buffer", g, i)] = buffers_[g][i];
    s["step"] = raw::full({}, (double)step_, kInt64);
    return s;
}

void SGD::load_state(const std::map<std::string, Tensor>& state) {
    load_into(buffers_, groups_, "momentum_buffer", state);
    auto it = state.find("step");
    step_ = it == state.end() ? 0 : (int64_t)it->second.item();
}

// ---- AdamW -------------------------------------------------------------------------

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, double beta1, double beta2, double eps)
    : Optimizer(std::move(groups), lr), beta1_(beta1), beta2_(beta2), eps_(eps), m_(empty_slots(groups_)),
      v_(empty_slots(groups_)) {
    if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
        fail("AdamW", "betas must be in [0, 1), got " + std::to_string(beta1) + " and " + std::to_string(beta2));
}

void AdamW::step() {
    NoGradGuard no_grad;
    ProfileScope scope(OpKind::Optimizer);
    ++step_;
    AdamWStep h{lr_, beta1_, beta2_, eps_, 1 - std::pow(beta1_, (double)step_), 1 - std::pow(beta2_, (double)step_)};
    // Every parameter with a gradient goes into one fused update
    // (tensor/ops/adamw.cpp has the formula).
    std::vector<Tensor> params, grads, ms, vs;
    std::vector<double> decays;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const ParamGroup& group = groups_[gi];
        for (size_t i = 0; i < group.params.size(); ++i) {
            const Tensor& p = group.params[i];
            if (!p.grad().defined()) continue;
            if (!m_[gi][i].defined()) {
                m_[gi][i] = raw::zeros_like(p);
                v_[gi][i] = raw::zeros_like(p);
            }
            params.push_back(p);
            grads.push_back(p.grad());
            ms.push_back(m_[gi][i]);
            vs.push_back(v_[gi][i]);
            decays.push_back(group.weight_decay);
        }
    }
    raw::adamw_update(params, grads, ms, vs, decays, h);
}

std::map<std::string, Tensor> AdamW::state() const {
    std::map<std::string, Tensor> s;
    for (size_t g = 0; g < m_.size(); ++g)
        for (size_t i = 0; i < m_[g].size(); ++i)
            if (m_[g][i].defined()) {
                s[key("exp_avg", g, i)] = m_[g][i];
                s[key("exp_avg_sq", g, i)] = v_[g][i];
            }
    s["step"] = raw::full({}, (double)step_, kInt64);
    return s;
}

void AdamW::load_state(const std::map<std::string, Tensor>& state) {
    load_into(m_, groups_, "exp_avg", state);
    load_into(v_, groups_, "exp_avg_sq", state);
    auto it = state.find("step");
    step_ = it == state.end() ? 0 : (int64_t)it->second.item();
}

// ---- groups, clipping, schedules --------------------------------------------------------

// The weights of every Linear layer at or below `module`.
static void collect_linear_weights(const nn::Module& module, std::vector<const TensorImpl*>& out) {
    if (auto* linear = dynamic_cast<const nn::Linear*>(&module)) out.push_back(linear->weight.impl());
    for (const auto& child : module.children()) collect_linear_weights(*child.second, out);
}

std::vector<ParamGroup> decay_groups(const nn::Module& model, double weight_decay) {
    // Decided by what a tensor does, not by its name: a name test ("embed")
    // also caught ViT's patch projection, a Linear that must be decayed.
    std::vector<const TensorImpl*> linear_weights;
    collect_linear_weights(model, linear_weights);
    ParamGroup decayed{{}, weight_decay}, plain{{}, 0.0};
    for (auto& [name, p] : model.named_parameters()) {
        bool linear = std::find(linear_weights.begin(), linear_weights.end(), p.impl()) != linear_weights.end();
        (linear ? decayed : plain).params.push_back(p);
    }
    return {decayed, plain};
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    NoGradGuard no_grad;
    ProfileScope scope(OpKind::Optimizer);
    // The squares are summed where the gradients live, and only the total is
    // read on the host: one wait for the GPU per step, not one per parameter.
    Tensor total;
    for (const Tensor& p : params) {
        if (!p.grad().defined()) continue;
        Tensor squares = raw::sum(raw::mul(p.grad(), p.grad()));
        squares = raw::to_dtype(squares, kFloat64);  // summed in float64, as the host loop did
        total = total.defined() ? raw::add(total, squares) : squares;
    }
    double norm = total.defined() ? std::sqrt(total.item()) : 0.0;
    if (max_norm > 0 && norm > max_norm) {
        double scale = max_norm / (norm + 1e-6);
        for (const Tensor& p : params)
            if (p.grad().defined()) raw::copy_(p.grad(), raw::mul(p.grad(), scale));
    }
    return norm;
}

Schedule parse_schedule(const std::string& s) {
    if (s == "constant") return Schedule::Constant;
    if (s == "cosine") return Schedule::Cosine;
    if (s == "linear") return Schedule::Linear;
    fail("schedule", "unknown schedule '" + s + "' (choose constant, cosine or linear)");
}

double learning_rate(Schedule schedule, double lr, int64_t step, int64_t total, int64_t warmup, double min_ratio) {
    if (warmup > 0 && step < warmup) return lr * (double)(step + 1) / (double)warmup;
    if (schedule == Schedule::Constant) return lr;
    int64_t span = std::max<int64_t>(1, total - 1 - warmup);
    double progress = std::min(1.0, (double)(step - warmup) / (double)span);  // 0 -> 1 after warmup
    double floor = min_ratio * lr;
    if (schedule == Schedule::Cosine) return floor + 0.5 * (lr - floor) * (1 + std::cos(M_PI * progress));
    return lr - (lr - floor) * progress;
}

}  // namespace optim
}  // namespace nc
