#include "nn/init.h"

#include <cmath>

namespace nc {
namespace nn {

void normal_(const Tensor& t, double std, Generator& gen) {
    raw::copy_(t, raw::mul(raw::randn(t.shape(), gen, t.dtype(), t.device()), std));
}

void uniform_(const Tensor& t, double low, double high, Generator& gen) {
    raw::copy_(t, raw::add(raw::mul(raw::rand(t.shape(), gen, t.dtype(), t.device()), high - low), low));
}

void xavier_uniform_(const Tensor& w, Generator& gen) {
    double bound = std::sqrt(6.0 / (double)(w.size(0) + w.size(1)));
    uniform_(w, -bound, bound, gen);
}

void xavier_normal_(const Tensor& w, double gain, Generator& gen) {
    normal_(w, gain * std::sqrt(2.0 / (double)(w.size(0) + w.size(1))), gen);
}

}  // namespace nn
}  // namespace nc
