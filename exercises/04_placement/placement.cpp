// Your placements: replace the throws (see placement.h), then
//     make exercises
#include "exercises/04_placement/placement.h"

#include "autograd/ops.h"
#include "exercises/exercise.h"

namespace exercise {

using namespace nc;

Tensor sandwich_step(const Tensor& x, const Sublayer& F, const nn::NormLayer& N, const nn::NormLayer& N_out) {
    (void)x, (void)F, (void)N, (void)N_out;
    throw NotYet("write sandwich_step in exercises/04_placement/placement.cpp");
}

Tensor deepnorm_step(const Tensor& x, const Sublayer& F, const nn::NormLayer& N, double alpha) {
    (void)x, (void)F, (void)N, (void)alpha;
    throw NotYet("write deepnorm_step in exercises/04_placement/placement.cpp");
}

Tensor rezero_step(const Tensor& x, const Sublayer& F, const Tensor& alpha) {
    (void)x, (void)F, (void)alpha;
    throw NotYet("write rezero_step in exercises/04_placement/placement.cpp");
}

}  // namespace exercise
