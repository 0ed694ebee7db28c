#include "apps/train_step.h"

#include <cmath>

namespace nc {
namespace app {

StepResult train_step(const TrainStep& s) {
    StepResult r;
    s.optimizer->zero_grad();
    double loss_sum = 0;
    for (int64_t micro = 0; micro < s.accum; ++micro) {
        Tensor loss = s.loss();
        loss_sum += loss.item();
        // The gradients are totals only after the last micro-batch: that
        // backward alone reports them to the averager, which starts summing
        // a bucket across the ranks as soon as its gradients are final.
        bool last = micro + 1 == s.accum;
        LeafReady report = last && s.overlap && s.averager ? s.averager->on_leaf_ready() : nullptr;
        backward(s.accum > 1 ? loss * (1.0 / (double)s.accum) : loss,  // the mean over micro-batches
                 Tensor(), false, report);
    }
    // The ranks' mean: the gradient and loss of the whole N x B batch.
    if (s.averager) s.averager->finish();
    r.loss = loss_sum / (double)s.accum;
    if (s.dist) r.loss = average(*s.dist, r.loss);
    // A NaN or Inf would spread into every weight at the update.
    if (!std::isfinite(r.loss)) {
        r.refused = "training loss";
        s.optimizer->zero_grad();
        return r;
    }
    if (s.before_clip) s.before_clip();
    if (s.measure_grad_norm) {
        r.grad_norm = optim::clip_grad_norm(s.params, s.grad_clip);
        if (!std::isfinite(r.grad_norm)) {
            r.refused = "gradient norm";
            s.optimizer->zero_grad();
            return r;
        }
    }
    if (s.before_update) s.before_update();
    s.optimizer->step();
    return r;
}

}  // namespace app
}  // namespace nc
