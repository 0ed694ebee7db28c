// sphere.h — the coefficients of the geodesic update (tensor/raw_nn.h):
// y = C(q) x + S(q) w on the sphere through x, used by the CPU and CUDA
// kernels alike. The derivation is in tutorial chapter 8.
#pragma once

#include <cmath>

#include "tensor/host_device.h"

namespace nc {

// C(q) = cos(sqrt q) and S(q) = sin(sqrt q)/sqrt q with S' = dS/dq. Both are
// entire functions of q = theta^2; near q = 0 the closed forms lose accuracy
// (0/0 in S, cancellation in S' = (C - S)/(2q)), so below q = 0.1 we use
// their Taylor series: C and S to q^5, S' to q^4. At q = 0.1 the first
// omitted terms are 2.1e-15 (C), 1.6e-16 (S) and 6e-14 relative (S').

struct SphereCoefficients {
    double C, S, dS;
};

NC_HOST_DEVICE inline SphereCoefficients sphere_coefficients(double q) {
    if (q < 0.1) {
        double C = 1 - q / 2 * (1 - q / 12 * (1 - q / 30 * (1 - q / 56 * (1 - q / 90))));
        double S = 1 - q / 6 * (1 - q / 20 * (1 - q / 42 * (1 - q / 72 * (1 - q / 110))));
        double dS = -1.0 / 6 + q / 60 - q * q / 1680 + q * q * q / 90720 - q * q * q * q / 7983360;
        return {C, S, dS};
    }
    double theta = sqrt(q);
    double C = cos(theta), S = sin(theta) / theta;
    return {C, S, (C - S) / (2 * q)};
}

}  // namespace nc
