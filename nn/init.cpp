#include "nn/init.h"

namespace nc {
namespace nn {

void normal_(const Tensor& t, double std, Generator& gen) {
    raw::copy_(t, raw::mul(raw::randn(t.shape(), gen, t.dtype(), t.device()), std));
}

void uniform_(const Tensor& t, double low, double high, Generator& gen) {
    raw::copy_(t, raw::add(raw::mul(raw::rand(t.shape(), gen, t.dtype(), t.device()), high - low), low));
}

}  // namespace nn
}  // namespace nc
