#include "train/train_step.h"

#include <cmath>

namespace nc {
namespace app {

const char* refusal_name(Refusal r) {
    switch (r) {
        case Refusal::Loss: return "training loss";
        case Refusal::GradNorm: return "gradient norm";
        case Refusal::None: break;
    }
    return "";
}

StepResult train_step(const TrainStep& s) {
    StepResult r;
    s.optimizer->zero_grad();
    std::vector<Tensor> losses;  // detached: the graphs go as soon as backward is done with them
    for (int64_t micro = 0; micro < s.accum; ++micro) {
        Tensor loss = s.loss();
        losses.push_back(loss.detach());
        // The gradients are totals only after the last micro-batch: that
        // backward alone reports them to the averager, which starts summing
        // a bucket across the ranks as soon as its gradients are final.
        bool last = micro + 1 == s.accum;
        LeafReady report = last && s.overlap && s.averager ? s.averager->on_leaf_ready() : nullptr;
        // The mean over micro-batches, times the loss scale when there is one
        // (a power of 2: exact in float32, undone exactly below).
        double factor = (s.scaler ? s.scaler->scale() : 1.0) / (double)s.accum;
        backward(factor != 1.0 ? loss * factor : loss, Tensor(), false, report);
    }
    // The ranks' mean: the gradient and loss of the whole N x B batch.
    if (s.averager) s.averager->finish();
    auto mean_loss = [&] {
        double sum = 0;
        for (const Tensor& loss : losses) sum += loss.item();
        sum /= (double)s.accum;
        return s.dist ? average(*s.dist, sum) : sum;
    };
    if (s.refuse_non_finite) {
        r.loss = mean_loss();
        // A NaN or Inf would spread into every weight at the update.
        if (!std::isfinite(r.loss)) {
            r.refused = Refusal::Loss;
            s.optimizer->zero_grad();
            return r;
        }
    }
    // The averaged gradients are the same on every rank, so every rank
    // skips the same steps.
    if (s.scaler && !s.scaler->unscale_and_update(s.params)) {
        if (!s.refuse_non_finite) r.loss = mean_loss();
        r.skipped = true;
        s.optimizer->zero_grad();
        return r;
    }
    if (s.before_clip) s.before_clip();
    if (s.measure_grad_norm) {
        r.grad_norm = optim::clip_grad_norm(s.params, s.grad_clip);
        if (!std::isfinite(r.grad_norm)) {
            r.refused = Refusal::GradNorm;
            s.optimizer->zero_grad();
            return r;
        }
    }
    if (s.before_update) s.before_update();
    s.optimizer->step();
    if (!s.refuse_non_finite) r.loss = mean_loss();
    return r;
}

}  // namespace app
}  // namespace nc
