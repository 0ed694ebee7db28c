// Your geodesic update: replace the throw (see geodesic.h), then
//     make exercises
#include "exercises/08_geodesic/geodesic.h"

#include "exercises/exercise.h"

namespace exercise {

std::vector<double> geodesic_step(const std::vector<double>& x, const std::vector<double>& u, double a) {
    (void)x, (void)u, (void)a;
    throw NotYet("write geodesic_step in exercises/08_geodesic/geodesic.cpp");
}

}  // namespace exercise
