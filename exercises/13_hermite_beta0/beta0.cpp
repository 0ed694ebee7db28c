// Your beta0: replace the throw (see beta0.h), then run
//     make exercises
// The check compares it with closed forms for x, ReLU, sin and x^2.
#include "exercises/13_hermite_beta0/beta0.h"

#include <cmath>

#include "exercises/exercise.h"

namespace exercise {

double beta0(const std::function<double(double)>& activation) {
    (void)activation;
    throw NotYet("write beta0 in exercises/13_hermite_beta0/beta0.cpp");
}

}  // namespace exercise
