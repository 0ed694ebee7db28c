// Your LayerNorm: replace the throw (see layer_norm.h), then run
//     make exercises
#include "exercises/03_layer_norm/layer_norm.h"

#include "autograd/ops.h"
#include "exercises/exercise.h"

namespace exercise {

nc::Tensor naive_layer_norm(const nc::Tensor& x, const nc::Tensor& gamma, const nc::Tensor& beta, double eps) {
    (void)x, (void)gamma, (void)beta, (void)eps;
    throw NotYet("write naive_layer_norm in exercises/03_layer_norm/layer_norm.cpp");
}

}  // namespace exercise
