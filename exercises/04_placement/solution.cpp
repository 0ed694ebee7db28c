// The reference solution of exercise 4 (make test checks it with check.cpp).
#include "autograd/ops.h"
#include "exercises/04_placement/placement.h"

namespace exercise {

using namespace nc;

Tensor sandwich_step(const Tensor& x, const Sublayer& F, const nn::NormLayer& N, const nn::NormLayer& N_out) {
    return x + N_out.forward(F(N.forward(x)));
}

Tensor deepnorm_step(const Tensor& x, const Sublayer& F, const nn::NormLayer& N, double alpha) {
    return N.forward(x * alpha + F(x));
}

// alpha has shape [1] and broadcasts over every element of F(x).
Tensor rezero_step(const Tensor& x, const Sublayer& F, const Tensor& alpha) { return x + F(x) * alpha; }

}  // namespace exercise
