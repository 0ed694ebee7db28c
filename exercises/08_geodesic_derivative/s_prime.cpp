// Your S'(q): replace the throw (see s_prime.h), then run
//     make exercises
#include "exercises/08_geodesic_derivative/s_prime.h"

#include <cmath>

#include "exercises/exercise.h"

namespace exercise {

double s_prime(double q) {
    (void)q;
    throw NotYet("derive and write S'(q) in exercises/08_geodesic_derivative/s_prime.cpp");
}

}  // namespace exercise
