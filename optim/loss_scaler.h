// loss_scaler.h — dynamic loss scaling for float16 training (Micikevicius et
// al. 2018, "Mixed Precision Training", section 3.2).
//
// float16's smallest normal is 2^-14 and its subnormals stop at 2^-24: many
// gradients of a language model are smaller, and rounding the incoming
// gradient to float16 in a linear layer's backward (autograd/ops.h) would
// turn them into 0. So backward runs on loss x S instead of the loss, which
// multiplies every gradient by S and lifts them into float16's range; the
// weights' float32 gradients are divided by S again before the update.
//
// S is chosen on the fly: too large and a gradient passes 65504 and becomes
// inf. Each step checks every gradient; one inf or NaN means the step is
// skipped (no update) and S halves ("backs off"); after `growth_interval`
// steps in a row without one, S doubles. bfloat16 has float32's exponent
// range and needs none of this.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace nc {
namespace optim {

class LossScaler {
public:
    // PyTorch's GradScaler defaults: S = 2^16, x2 after 2000 good steps, x0.5 on an overflow.
    explicit LossScaler(double initial_scale = 65536.0, int64_t growth_interval = 2000, double growth = 2.0,
                        double backoff = 0.5);
    double scale() const { return scale_; }
    // Divides every defined gradient by S in place and says whether they
    // are all finite; then updates S (back off, or count towards growth).
    // false: the caller must skip the step (the gradients are garbage).
    bool unscale_and_update(const std::vector<Tensor>& params);
    int64_t skipped_steps() const { return skipped_; }
    int64_t good_steps_in_a_row() const { return good_in_a_row_; }
    // A resumed run continues with the scale and count it saved.
    void restore(double scale, int64_t good_in_a_row, int64_t skipped);

private:
    double scale_;
    int64_t growth_interval_;
    double growth_, backoff_;
    int64_t good_in_a_row_ = 0, skipped_ = 0;
};

// Whether every element of every defined gradient is finite: one device
// reduction, one number read on the host (x * 0 is 0 for finite x, NaN for
// inf and NaN, so the sum of g * 0 over all gradients is 0 exactly when all
// are finite, and no large value can overflow it).
bool all_gradients_finite(const std::vector<Tensor>& params);

}  // namespace optim
}  // namespace nc
