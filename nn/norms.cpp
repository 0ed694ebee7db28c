#include "nn/norms.h"

#include <cmath>

namespace nc {
namespace nn {

static void check_features(const Tensor& x, int64_t C, const char* layer) {
    if (x.dim() == 0 || x.size(-1) != C)
        fail(layer, "expects inputs [..., " + std::to_string(C) + "], got " + shape_str(x.shape()));
}

LayerNorm::LayerNorm(int64_t C, double eps_, bool affine, bool has_bias, Options opt) : eps(eps_) {
    if (affine) weight = register_parameter("weight", raw::ones({C}, opt.dtype, opt.device));
    if (affine && has_bias) bias = register_parameter("bias", raw::zeros({C}, opt.dtype, opt.device));
}

Tensor LayerNorm::forward(const Tensor& x) const {
    if (weight.defined()) check_features(x, weight.numel(), "LayerNorm");
    return layer_norm(x, weight, bias, eps);
}

RMSNorm::RMSNorm(int64_t C, double eps_, bool affine, Options opt) : eps(eps_) {
    if (affine) weight = register_parameter("weight", raw::ones({C}, opt.dtype, opt.device));
}

Tensor RMSNorm::forward(const Tensor& x) const {
    if (weight.defined()) check_features(x, weight.numel(), "RMSNorm");
    return rms_norm(x, weight, eps);
}

BatchNorm1d::BatchNorm1d(int64_t C, double eps_, double momentum_, Options opt) : eps(eps_), momentum(momentum_) {
    weight = register_parameter("weight", raw::ones({C}, opt.dtype, opt.device));
    bias = register_parameter("bias", raw::zeros({C}, opt.dtype, opt.device));
    running_mean = register_buffer("running_mean", raw::zeros({C}, opt.dtype, opt.device));
    running_var = register_buffer("running_var", raw::ones({C}, opt.dtype, opt.device));
    num_batches_tracked = register_buffer("num_batches_tracked", raw::zeros({}, kInt64, opt.device));
}

Tensor BatchNorm1d::forward(const Tensor& x) {
    int64_t C = weight.numel();
    if ((x.dim() != 2 && x.dim() != 3) || x.size(1) != C)
        fail("BatchNorm1d", "expects inputs [N, " + std::to_string(C) + "] or [N, " + std::to_string(C) +
                                ", L], got " + shape_str(x.shape()));
    // Statistics over every dim except the feature dim 1.
    std::vector<int64_t> dims = x.dim() == 2 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 2};
    Shape param_shape = x.dim() == 2 ? Shape{1, C} : Shape{1, C, 1};  // broadcasts over N (and L)
    Tensor mean, var;
    if (is_training()) {
        int64_t count = x.numel() / C;
        if (count < 2) fail("BatchNorm1d", "training needs more than one value per feature, got shape " + shape_str(x.shape()));
        mean = nc::mean(x, dims, /*keepdim=*/true);
        var = nc::var(x, dims, /*correction=*/0, /*keepdim=*/true);
        NoGradGuard no_grad;  // the running statistics are not part of the graph
        Tensor unbiased = raw::mul(raw::reshape(var, {C}), (double)count / (double)(count - 1));
        raw::copy_(running_mean, raw::add(raw::mul(running_mean, 1 - momentum), raw::mul(raw::reshape(mean, {C}), momentum)));
        raw::copy_(running_var, raw::add(raw::mul(running_var, 1 - momentum), raw::mul(unbiased, momentum)));
        raw::copy_(num_batches_tracked, raw::add(num_batches_tracked, raw::scalar(1, kInt64)));
    } else {
        mean = reshape(running_mean, param_shape);
        var = reshape(running_var, param_shape);
    }
    Tensor xh = (x - mean) * rsqrt(var + eps);
    return xh * reshape(weight, param_shape) + reshape(bias, param_shape);
}

DyT::DyT(int64_t C, double alpha0, bool has_bias, Options opt, double gamma0) {
    alpha = register_parameter("alpha", raw::full({1}, alpha0, opt.dtype, opt.device));
    weight = register_parameter("weight", raw::full({C}, gamma0, opt.dtype, opt.device));
    if (has_bias) bias = register_parameter("bias", raw::zeros({C}, opt.dtype, opt.device));
}

Tensor DyT::forward(const Tensor& x) const {
    check_features(x, weight.numel(), "DyT");
    // The saturation diagnostic looks at z = alpha x, outside the graph.
    if (track_) last_saturation_ = dyt_saturation(raw::mul(x.detach(), alpha.detach()), threshold_);
    return dyt(x, alpha, weight, bias);  // one fused op: weight * tanh(alpha x) + bias
}

void DyT::track_saturation(bool on, double threshold) {
    track_ = on;
    threshold_ = threshold;
}

double dyt_saturation(const Tensor& pre_activation, double threshold) {
    if (pre_activation.numel() == 0) fail("saturation", "got an empty tensor");
    Tensor beyond = raw::gt(raw::abs(pre_activation), raw::full({}, threshold, pre_activation.dtype(), pre_activation.device()));
    return raw::mean(beyond).item();
}

}  // namespace nn
}  // namespace nc
