#include "autograd/gradcheck.h"

#include <cmath>
#include <cstdio>

#include "autograd/ops.h"

namespace nc {

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    for (size_t k = 0; k < inputs.size(); ++k) {
        const Tensor& x = inputs[k];
        if (!x.requires_grad()) continue;
        if (x.dtype() != kFloat64 || x.device() != kCPU || !x.is_contiguous() || !x.is_leaf())
            fail("gradcheck", "input " + std::to_string(k) + " (" + shape_str(x.shape()) + ", " +
                                  dtype_name(x.dtype()) + ") must be a contiguous float64 CPU leaf tensor");
    }

    // The scalar we differentiate: L = sum(f(x) * R).
    Tensor out = fn(inputs);
    if (out.dtype() != kFloat64) fail("gradcheck", "the function must return float64, got " + std::string(dtype_name(out.dtype())));
    Generator gen(options.seed);
    Tensor projection = raw::randn(out.shape(), gen, kFloat64);
    auto loss_of = [&](const Tensor& y) { return raw::sum(raw::mul(y, projection)).item(); };

    // Analytic gradients, computed on a clean slate then restored.
    std::vector<Tensor> saved_grads;
    for (const Tensor& x : inputs) {
        saved_grads.push_back(x.grad());
        if (x.requires_grad()) x.zero_grad();
    }
    if (!out.requires_grad()) fail("gradcheck", "the function's output does not depend on any input that requires grad");
    backward(sum(mul(out, projection)));
    std::vector<Tensor> analytic;
    for (size_t k = 0; k < inputs.size(); ++k) {
        analytic.push_back(inputs[k].grad());
        inputs[k].set_grad(saved_grads[k]);
    }

    GradcheckResult result;
    double worst_ratio = -1;
    NoGradGuard no_grad;
    for (size_t k = 0; k < inputs.size(); ++k) {
        const Tensor& x = inputs[k];
        if (!x.requires_grad()) continue;
        double* values = x.data<double>();
        std::vector<double> grad = analytic[k].defined() ? analytic[k].to_vector() : std::vector<double>(x.numel(), 0.0);
        std::vector<int64_t> checked;
        int64_t n = x.numel(), limit = options.max_elements_per_input;
        if (limit > 0 && n > limit) {
            // One element from each of `limit` equal stretches of the tensor.
            std::vector<double> u = raw::rand({limit}, gen, kFloat64).to_vector();
            for (int64_t j = 0; j < limit; ++j) checked.push_back(std::min(n - 1, (int64_t)((j + u[j]) * (double)n / (double)limit)));
        } else {
            for (int64_t i = 0; i < n; ++i) checked.push_back(i);
        }
        for (int64_t i : checked) {
            double original = values[i];
            values[i] = original + options.eps;
            double plus = loss_of(fn(inputs));
            values[i] = original - options.eps;
            double minus = loss_of(fn(inputs));
            values[i] = original;
            double numeric = (plus - minus) / (2 * options.eps);
            double error = std::fabs(grad[i] - numeric);
            double allowed = options.atol + options.rtol * std::fabs(numeric);
            result.max_error = std::max(result.max_error, error);
            if (error > allowed) result.passed = false;
            if (error / allowed > worst_ratio) {
                worst_ratio = error / allowed;
                char buf[256];
                std::snprintf(buf, sizeof buf, "input %zu %s, element %lld: analytic %.10g, numeric %.10g, error %.3g (allowed %.3g)",
                              k, shape_str(x.shape()).c_str(), (long long)i, grad[i], numeric, error, allowed);
                result.worst = buf;
            }
        }
    }
    return result;
}

}  // namespace nc
