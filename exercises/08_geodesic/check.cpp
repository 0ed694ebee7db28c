// The check of exercise 8: the textbook geodesic update against the
// library's geodesic_update (float64), on random vectors, small and large
// steps, a u with a tiny tangent part and a u exactly along x; and |y| = |x|.
#include <cmath>
#include <random>
#include <string>

#include "autograd/ops_nn.h"
#include "exercises/08_geodesic/geodesic.h"
#include "exercises/exercise.h"

using namespace nc;

static double norm(const std::vector<double>& v) {
    double total = 0;
    for (double e : v) total += e * e;
    return std::sqrt(total);
}

int main() {
    return exercise::run("8 (geodesic update)", [] {
        std::mt19937 rng(8);
        std::normal_distribution<double> normal(0.0, 1.0);
        const int64_t C = 16;
        auto random_vector = [&](double scale) {
            std::vector<double> v(C);
            for (double& e : v) e = scale * normal(rng);
            return v;
        };
        struct Case {
            std::string what;
            std::vector<double> x, u;
            double a;
        };
        std::vector<Case> cases;
        for (double a : {0.05, 0.5, 1.0, 3.0}) cases.push_back({"random x and u, a = " + exercise::number(a), random_vector(1), random_vector(1), a});
        std::vector<double> x = random_vector(2), along = x, nearly = x;
        for (double& e : along) e *= -0.7;                      // u exactly along x: v = 0
        std::vector<double> tiny = random_vector(1e-7);
        for (int64_t i = 0; i < C; ++i) nearly[i] = 0.3 * x[i] + tiny[i];  // a tangent part 1e-7 the size of x
        cases.push_back({"u along x (no tangent part)", x, along, 0.8});
        cases.push_back({"u with a tiny tangent part", x, nearly, 0.8});
        cases.push_back({"a = 0", x, random_vector(1), 0.0});
        // v exactly 0: u = 0, and u along an axis x lies on (c = 1.5 exactly).
        cases.push_back({"u = 0", x, std::vector<double>(C, 0.0), 0.8});
        std::vector<double> axis(C, 0.0), on_axis(C, 0.0);
        axis[3] = 2, on_axis[3] = 3;
        cases.push_back({"x and u on one axis", axis, on_axis, 0.8});
        for (const Case& c : cases) {
            std::vector<double> y = exercise::geodesic_step(c.x, c.u, c.a);
            exercise::expect(y.size() == c.x.size(), c.what + ": y must have x's " + std::to_string(C) + " values");
            std::vector<double> want = geodesic_update(raw::from_vector(c.x, {1, C}), raw::from_vector(c.u, {1, C}),
                                                       raw::full({}, c.a, kFloat64))
                                           .to_vector();
            for (int64_t i = 0; i < C; ++i)
                exercise::expect_close(y[i], want[i], 1e-12, c.what + ": y[" + std::to_string(i) + "] (the library's geodesic_update)");
            exercise::expect_close(norm(y), norm(c.x), 1e-12, c.what + ": |y| must equal |x|");
        }
    });
}
