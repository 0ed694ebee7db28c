// Chapter 8 — GeoNorm: the geodesic update on the sphere.
// Built and run by `make test`; the derivation is in 08-geonorm.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "autograd/gradcheck.h"
#include "autograd/ops_nn.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 8: expected %s\n", what);
        std::exit(1);
    }
}

static double dot(const Tensor& a, const Tensor& b) { return raw::sum(raw::mul(a, b)).item(); }
static double norm(const Tensor& a) { return std::sqrt(dot(a, a)); }

int main() {
    const int64_t d = 8;
    Generator gen(0);
    // A residual-stream vector on the sphere of radius sqrt(d), as after the
    // embedding projection, and an update direction from a sublayer.
    Tensor e = raw::randn({1, d}, gen, kFloat64);
    Tensor x = raw::mul(e, std::sqrt((double)d) / norm(e));
    Tensor u = raw::randn({1, d}, gen, kFloat64);
    std::printf("|x| = %.6f (sqrt(d) = %.6f)\n", norm(x), std::sqrt((double)d));

    // 1. The tangent part of u: v = u - (<u,x>/<x,x>) x is orthogonal to x.
    Tensor v = raw::sub(u, raw::mul(x, dot(u, x) / dot(x, x)));
    std::printf("<v, x> = %.2e  (v is tangent to the sphere at x)\n", dot(v, x));
    expect(std::fabs(dot(v, x)) < 1e-12, "v orthogonal to x");

    // 2. Moving along the great circle: the angle travelled is alpha |v| / |x|,
    //    and the radius never changes.
    std::printf("%8s %12s %14s %12s\n", "alpha", "|y|/|x|", "angle(x,y)", "alpha|v|/|x|");
    for (double alpha : {0.25, 0.5, 1.0, 2.0}) {
        Tensor y = geodesic_update(x, u, raw::full({}, alpha, kFloat64));
        double angle = std::acos(std::max(-1.0, std::min(1.0, dot(x, y) / (norm(x) * norm(y)))));
        double theta = alpha * norm(v) / norm(x);
        std::printf("%8.2f %12.9f %14.9f %12.9f\n", alpha, norm(y) / norm(x), angle, theta);
        expect(std::fabs(norm(y) / norm(x) - 1) < 1e-12, "|y| = |x|");
        if (theta < M_PI) expect(std::fabs(angle - theta) < 1e-9, "the angle travelled to be alpha |v| / |x|");
    }

    // 3. Compare: Post-Norm's "add, then normalize" also stays on the sphere,
    //    but its step is not along the great circle by a controlled angle.
    Tensor post = raw::mul(raw::add(x, u), std::sqrt((double)d) / norm(raw::add(x, u)));
    std::printf("post-norm step angle: %.6f rad for the same u\n",
                std::acos(dot(x, post) / (norm(x) * norm(post))));

    // 4. The hand-derived backward pass against float64 finite differences,
    //    including a tangent part that is tiny or exactly zero.
    for (double scale : {1.0, 1e-3, 1e-6, 0.0}) {
        Tensor uu = raw::add(raw::mul(x, 0.3), raw::mul(v, scale));  // |v'| = scale |v|
        Tensor xs = raw::clone(x).set_requires_grad(true);
        uu.set_requires_grad(true);
        Tensor alpha = raw::full({}, 0.7, kFloat64).set_requires_grad(true);
        GradcheckResult r = gradcheck(
            [](const std::vector<Tensor>& in) { return geodesic_update(in[0], in[1], in[2]); }, {xs, uu, alpha});
        std::printf("tangent scale %-6g %s\n", scale, r.report().c_str());
        expect(r.passed, "gradcheck to pass");
    }

    // 5. Below q = theta^2 = 0.1 the kernel uses Taylor series for C(q) and
    //    S(q); above it, cos and sin. Both sides agree with the textbook
    //    formula cos(theta) x + |x| sin(theta) v/|v| to rounding.
    double alpha_at_switch = std::sqrt(0.1) * norm(x) / norm(v);
    for (double side : {1 - 1e-9, 1 + 1e-9}) {
        double alpha = alpha_at_switch * side, theta = alpha * norm(v) / norm(x);
        Tensor y = geodesic_update(x, u, raw::full({}, alpha, kFloat64));
        Tensor textbook = raw::add(raw::mul(x, std::cos(theta)), raw::mul(v, norm(x) * std::sin(theta) / norm(v)));
        double diff = norm(raw::sub(y, textbook)) / norm(x);
        std::printf("q = %.10f (%s): relative difference to the textbook form %.1e\n", theta * theta,
                    side < 1 ? "series" : "closed form", diff);
        expect(diff < 1e-14, "series and closed form to agree with the textbook exp map");
    }
    std::cout << "chapter 8: all checks passed\n";
    return 0;
}
