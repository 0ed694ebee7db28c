// Exercise 8 (chapter 8): the geodesic update by hand, from the textbook
// formula, for one vector.
//
// x moves on its sphere (radius |x|) in the direction of u's tangent part:
//
//     v     = u - (<u, x> / <x, x>) x          (v is orthogonal to x)
//     theta = a |v| / |x|                      (the angle turned)
//     y     = cos(theta) x + |x| sin(theta) v / |v|
//
// and y = x when v = 0 (u along x, or u = 0: nothing to turn towards).
// Plain loops over the vectors are enough. The check compares your y with
// the library's geodesic_update (autograd/ops_nn.h), which is written
// another way (C(q) x + S(q) a v with power series near q = 0, chapter 8),
// and checks |y| = |x|.
#pragma once

#include <vector>

namespace exercise {

std::vector<double> geodesic_step(const std::vector<double>& x, const std::vector<double>& u, double a);

}  // namespace exercise
