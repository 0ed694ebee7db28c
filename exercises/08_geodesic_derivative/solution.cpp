// A reference solution of exercise 8b.
//
// Closed form: with r = sqrt q, dr/dq = 1 / (2r), and
//   d/dr (sin r / r) = (r cos r - sin r) / r^2,  so
//   S'(q) = (r cos r - sin r) / (2 r^3) = (cos r - sin r / r) / (2q) = (C - S) / (2q).
// Near q = 0, C and S are both about 1 - q/6... and their difference,
// about -q/3, comes from subtracting two numbers near 1: its relative error
// is about 1e-16 / q, and q = 0 divides by zero.
//
// Series: sin r / r = sum_k (-1)^k r^(2k) / (2k+1)! = sum_k (-1)^k q^k / (2k+1)!,
// so S'(q) = sum_{k>=1} (-1)^k k q^(k-1) / (2k+1)!.
// Below q = 0.1 the terms through q^6 (k = 7) leave an omitted term of
// 8 q^7 / 17! = 2.3e-21 relative to |S'| = 1/6: far below double's 1e-16,
// and above 0.1 the closed form's cancellation costs about 1e-16 / 0.1 / 3
// relative, a few units in the last place.
#include "exercises/08_geodesic_derivative/s_prime.h"

#include <cmath>

namespace exercise {

double s_prime(double q) {
    if (q >= 0.1) {
        double r = std::sqrt(q);
        return (std::cos(r) - std::sin(r) / r) / (2 * q);
    }
    // Horner's rule on sum_{k=1..7} (-1)^k k q^(k-1) / (2k+1)!.
    double factorial[16] = {1};
    for (int i = 1; i < 16; ++i) factorial[i] = factorial[i - 1] * i;
    double sum = 0;
    for (int k = 7; k >= 1; --k) sum = sum * q + (k % 2 ? -1.0 : 1.0) * k / factorial[2 * k + 1];
    return sum;
}

}  // namespace exercise
