// init.h — parameter initialisation (in place, under no-grad).
#pragma once

#include "autograd/ops.h"

namespace nc {
namespace nn {

// Fills t with N(0, std^2) / U(low, high) draws from gen.
void normal_(const Tensor& t, double std, Generator& gen);
void uniform_(const Tensor& t, double low, double high, Generator& gen);

}  // namespace nn
}  // namespace nc
