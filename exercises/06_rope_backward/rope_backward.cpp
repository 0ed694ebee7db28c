// Your RoPE backward: replace the throw (see rope_backward.h), then run
//     make exercises
#include "exercises/06_rope_backward/rope_backward.h"

#include <cmath>

#include "exercises/exercise.h"

namespace exercise {

std::vector<double> rope_backward(const std::vector<double>& dy, int64_t T, int64_t D, double theta) {
    (void)dy, (void)T, (void)D, (void)theta;
    throw NotYet("derive and write RoPE's backward in exercises/06_rope_backward/rope_backward.cpp");
}

}  // namespace exercise
