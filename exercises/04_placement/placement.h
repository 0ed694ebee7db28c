// Exercise 4 (chapter 4): placements by hand, and one of your own.
//
// F is a sublayer (attention or MLP), N and N_out norms, x the stream.
// Write, from autograd ops (autograd/ops.h) and the norms' forward():
//
//   sandwich   x + N_out(F(N(x)))
//   deepnorm   N(alpha x + F(x))
//
// They must equal nn::residual_step (nn/placement.cpp), values and
// gradients. Then a placement that nn/placement.h does not have, ReZero
// (Bachlechner et al. 2020):
//
//   rezero     x + alpha F(x),    alpha a learnable scalar, shape [1], that starts at 0
//
// With no norm anywhere, a ReZero network is the identity at initialization
// (every block returns x exactly), and alpha's gradient is sum(F(x) * dy):
// each block opens its branch only as fast as training asks it to.
#pragma once

#include <functional>

#include "nn/norms.h"

namespace exercise {

using Sublayer = std::function<nc::Tensor(const nc::Tensor&)>;

nc::Tensor sandwich_step(const nc::Tensor& x, const Sublayer& F, const nc::nn::NormLayer& N,
                         const nc::nn::NormLayer& N_out);
nc::Tensor deepnorm_step(const nc::Tensor& x, const Sublayer& F, const nc::nn::NormLayer& N, double alpha);
nc::Tensor rezero_step(const nc::Tensor& x, const Sublayer& F, const nc::Tensor& alpha);

}  // namespace exercise
