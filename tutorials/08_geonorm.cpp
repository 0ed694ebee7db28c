// Chapter 8 — GeoNorm: the geodesic update on the sphere.
// Built and run by `make test`; the derivation is in 08-geonorm.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "autograd/gradcheck.h"
#include "autograd/ops_nn.h"
#include "tensor/sphere.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 8: expected %s\n", what);
        std::exit(1);
    }
}

static double dot(const Tensor& a, const Tensor& b) { return raw::sum(raw::mul(a, b)).item(); }
static double norm(const Tensor& a) { return std::sqrt(dot(a, a)); }

// The picture tutorials/images/08-sphere.png (make docs renders it with
// gnuplot): in three dimensions, where a sphere can be drawn, a point x on
// the unit sphere, a sublayer's output u, its tangent part v = P_x(u), the
// geodesic the library's geodesic_update moves x along as the step grows,
// and Post-Norm's "add, then normalize" for the same steps.
static void write_sphere_picture(const char* path) {
    // gnuplot's `set view 50, 20` looks at the sphere from e; h runs left to
    // right across the picture and w upwards. The great circle's plane is
    // tilted 45 degrees from facing us (its normal n between e and w), so it
    // shows as an ellipse; x starts 0.6 rad before the circle's point
    // nearest to us, and u is the circle's direction there plus a part
    // along x, which the projection removes.
    const double rx = 50 * M_PI / 180, rz = 20 * M_PI / 180, c = std::sqrt(0.5);
    const double e[3] = {std::sin(rx) * std::sin(rz), -std::sin(rx) * std::cos(rz), std::cos(rx)};
    const double h[3] = {std::cos(rz), std::sin(rz), 0.0};
    const double w[3] = {-std::cos(rx) * std::sin(rz), std::cos(rx) * std::cos(rz), std::sin(rx)};
    std::vector<double> xs(3), us(3);
    for (int i = 0; i < 3; ++i) {
        double nearest = c * e[i] - c * w[i];  // e minus its part along n = c e + c w, normalized
        xs[i] = std::cos(0.6) * nearest - std::sin(0.6) * h[i];
        us[i] = std::sin(0.6) * nearest + std::cos(0.6) * h[i] + 0.6 * xs[i];
    }
    Tensor x = raw::from_vector(xs, {1, 3}), u = raw::from_vector(us, {1, 3});
    Tensor v = raw::sub(u, raw::mul(x, dot(u, x) / dot(x, x)));
    auto row = [](const Tensor& t) {
        std::vector<double> c = t.to_vector();
        return std::to_string(c[0]) + " " + std::to_string(c[1]) + " " + std::to_string(c[2]);
    };
    std::ofstream gp(path);
    gp << "# the data: written by tutorials/08_geonorm.cpp from geodesic_update's outputs\n$geodesic << EOD\n";
    for (int i = 0; i <= 60; ++i) gp << row(geodesic_update(x, u, raw::full({}, 0.025 * i, kFloat64))) << "\n";
    gp << "EOD\n$postnorm << EOD\n";
    for (int i = 0; i <= 60; ++i) {
        Tensor added = raw::add(x, raw::mul(u, 0.025 * i));
        gp << row(raw::mul(added, 1.0 / norm(added))) << "\n";
    }
    gp << "EOD\n$marks << EOD\n";  // a = 0.25, 0.5, ..., 1.5 on both paths
    for (int i = 1; i <= 6; ++i) {
        Tensor added = raw::add(x, raw::mul(u, 0.25 * i));
        gp << row(geodesic_update(x, u, raw::full({}, 0.25 * i, kFloat64))) << " " << row(raw::mul(added, 1.0 / norm(added)))
           << "\n";
    }
    gp << "EOD\n$x << EOD\n" << row(x) << "\nEOD\n";
    gp << "$arrows << EOD\n" << row(x) << " " << row(u) << "\n" << row(x) << " " << row(v) << "\nEOD\n";
    gp << "set terminal pngcairo size 800,760 font 'monospace,11'\nset output out\nset termoption noenhanced\n"
          "set view 50, 20, 1.3\nset view equal xyz\nunset border\nunset tics\nset key top right\n"
          "set parametric\nset urange [0:2*pi]\nset vrange [-pi/2:pi/2]\nset isosamples 25, 13\nset hidden3d\n"
          "set title 'one u, growing steps a: geodesic update and add-then-normalize'\n"
          "splot cos(u)*cos(v), sin(u)*cos(v), sin(v) lc rgb '#cccccc' notitle, \\\n"
          "  $geodesic using 1:2:3 with lines lw 3 lc rgb '#b8422e' title 'geodesic_update(x, u, a), a = 0 .. 1.5', \\\n"
          "  $postnorm using 1:2:3 with lines lw 2 dt 2 lc rgb '#555555' title 'normalize(x + a u), a = 0 .. 1.5', \\\n"
          "  $arrows using 1:2:3:4:5:6 every ::0::0 with vectors lw 2 lc rgb '#1f5fa8' title 'u', \\\n"
          "  $arrows using 1:2:3:4:5:6 every ::1::1 with vectors lw 2 lc rgb '#2a9d3a' title 'v = P_x(u), tangent', \\\n"
          "  $marks using 1:2:3 with points pt 7 ps 1 lc rgb '#b8422e' title 'a = 0.25, 0.5, ..., 1.5', \\\n"
          "  $marks using 4:5:6 with points pt 6 ps 1.2 lc rgb '#555555' notitle, \\\n"
          "  $x using 1:2:3 with points pt 7 ps 1.5 lc rgb 'black' title 'x'\n";
}

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
    // 6. The derivative S'(q) the backward pass uses, on both sides of the
    //    switch, against a long-double reference: its Taylor series to
    //    q^19, exact to long double's precision at q = 0.1. The closed form
    //    (C - S)/(2q) is evaluated on the series side too, to show how the
    //    two compare at the switch.
    auto reference_dS = [](long double q) {
        long double sum = 0, power = 1, factorial = 6;  // q^(k-1) and (2k+1)! for k = 1
        for (int k = 1; k <= 20; ++k) {
            sum += (k % 2 ? -1 : 1) * k * power / factorial;
            power *= q;
            factorial *= (long double)(2 * k + 2) * (2 * k + 3);
        }
        return sum;
    };
    for (double q : {0.1 * (1 - 1e-9), 0.1 * (1 + 1e-9)}) {
        long double exact = reference_dS(q);
        double used = sphere_coefficients(q).dS;
        double closed = (std::cos(std::sqrt(q)) - std::sin(std::sqrt(q)) / std::sqrt(q)) / (2 * q);
        double used_error = std::fabs((double)((used - exact) / exact));
        double closed_error = std::fabs((double)((closed - exact) / exact));
        std::printf("S'(%.10f): the kernel's %s off by %.1e relative; the closed form there off by %.1e\n", q,
                    q < 0.1 ? "series" : "closed form", used_error, closed_error);
        expect(used_error < 1e-13, "S' accurate to 1e-13 on both sides of the switch");
    }
    write_sphere_picture("08-sphere.gp");
    std::cout << "chapter 8: all checks passed\n";
    return 0;
}
