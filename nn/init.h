// init.h — parameter initialisation (in place, under no-grad).
#pragma once

#include "autograd/ops.h"

namespace nc {
namespace nn {

// Fills t with N(0, std^2) / U(low, high) draws from gen.
void normal_(const Tensor& t, double std, Generator& gen);
void uniform_(const Tensor& t, double low, double high, Generator& gen);
// Xavier/Glorot for a 2-D weight: uniform U(-b, b) with
// b = sqrt(6 / (fan_in + fan_out)), normal N(0, gain^2 2 / (fan_in + fan_out)).
void xavier_uniform_(const Tensor& w, Generator& gen);
void xavier_normal_(const Tensor& w, double gain, Generator& gen);

}  // namespace nn
}  // namespace nc
