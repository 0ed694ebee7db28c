#include "optim/loss_scaler.h"

#include <cmath>
#include <string>

#include "autograd/mode.h"
#include "tensor/profile.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace optim {

LossScaler::LossScaler(double initial_scale, int64_t growth_interval, double growth, double backoff)
    : scale_(initial_scale), growth_interval_(growth_interval), growth_(growth), backoff_(backoff) {
    if (!(initial_scale > 0) || !std::isfinite(initial_scale) || growth_interval < 1 || !(growth > 1) ||
        !(backoff > 0 && backoff < 1))
        fail("LossScaler", "needs a finite scale > 0, a growth interval >= 1, growth > 1 and a back-off in (0, 1), got " +
                               std::to_string(initial_scale) + ", " + std::to_string(growth_interval) + ", " +
                               std::to_string(growth) + ", " + std::to_string(backoff));
}

bool all_gradients_finite(const std::vector<Tensor>& params) {
    NoGradGuard no_grad;
    Tensor total;
    for (const Tensor& p : params) {
        if (!p.grad().defined()) continue;
        Tensor zeros = raw::sum(raw::mul(p.grad(), 0.0));
        total = total.defined() ? raw::add(total, zeros) : zeros;
    }
    return !total.defined() || std::isfinite(total.item());
}

bool LossScaler::unscale_and_update(const std::vector<Tensor>& params) {
    NoGradGuard no_grad;
    ProfileScope scope(OpKind::Optimizer);
    bool finite = all_gradients_finite(params);
    if (!finite) {
        scale_ *= backoff_;
        good_in_a_row_ = 0;
        ++skipped_;
        return false;
    }
    for (const Tensor& p : params)
        if (p.grad().defined()) raw::copy_(p.grad(), raw::mul(p.grad(), 1.0 / scale_));
    if (++good_in_a_row_ >= growth_interval_) {
        scale_ *= growth_;
        good_in_a_row_ = 0;
    }
    return true;
}

void LossScaler::restore(double scale, int64_t good_in_a_row, int64_t skipped) {
    if (!(scale > 0) || !std::isfinite(scale) || good_in_a_row < 0 || skipped < 0)
        fail("LossScaler", "cannot restore scale " + std::to_string(scale) + " after " + std::to_string(good_in_a_row) +
                               " good steps and " + std::to_string(skipped) + " skipped");
    scale_ = scale;
    good_in_a_row_ = good_in_a_row;
    skipped_ = skipped;
}

}  // namespace optim
}  // namespace nc
