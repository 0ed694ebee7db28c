// The check of exercise 7b: the patch embedding's three gradients against
// central finite differences of L = sum(de * e) in float64, e computed here
// by the convolution's definition, on three sizes.
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "exercises/07_patch_embedding_backward/patch_embedding_backward.h"
#include "exercises/exercise.h"

namespace {

struct Size {
    int64_t B, ch, H, p, C;
};

double loss(const Size& s, const std::vector<double>& images, const std::vector<double>& W,
            const std::vector<double>& bias, const std::vector<double>& de) {
    const int64_t g = s.H / s.p, N = g * g;
    double total = 0;
    for (int64_t b = 0; b < s.B; ++b)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t c = 0; c < s.C; ++c) {
                int64_t gy = n / g, gx = n % g;
                double e = bias[c];
                for (int64_t k = 0; k < s.ch; ++k)
                    for (int64_t dy = 0; dy < s.p; ++dy)
                        for (int64_t dx = 0; dx < s.p; ++dx)
                            e += W[((c * s.ch + k) * s.p + dy) * s.p + dx] *
                                 images[((b * s.ch + k) * s.H + gy * s.p + dy) * s.H + gx * s.p + dx];
                total += de[(b * N + n) * s.C + c] * e;
            }
    return total;
}

void check_gradient(const std::string& what, const std::vector<double>& got, std::vector<double>& values,
                    const std::function<double()>& f) {
    exercise::expect(got.size() == values.size(), what + ": expected " + std::to_string(values.size()) + " numbers, got " +
                                                      std::to_string(got.size()));
    // L is linear in each number: the central difference is exact up to rounding.
    for (size_t i = 0; i < values.size(); ++i)
        exercise::expect_close(got[i], exercise::central_difference(values[i], 1e-5, f), 1e-8,
                               what + "[" + std::to_string(i) + "]");
}

}  // namespace

int main() {
    return exercise::run("7b (patch embedding backward)", [] {
        std::mt19937 rng(77);
        std::normal_distribution<double> normal(0.0, 1.0);
        for (Size s : {Size{2, 1, 4, 4, 3}, Size{1, 2, 6, 3, 4}, Size{2, 3, 8, 2, 2}}) {
            const int64_t g = s.H / s.p;
            std::string where = "B=" + std::to_string(s.B) + " ch=" + std::to_string(s.ch) + " H=" + std::to_string(s.H) +
                                " p=" + std::to_string(s.p) + ": ";
            std::vector<double> images(s.B * s.ch * s.H * s.H), W(s.C * s.ch * s.p * s.p), bias(s.C), de(s.B * g * g * s.C);
            for (auto* v : {&images, &W, &bias, &de})
                for (double& x : *v) x = normal(rng);
            exercise::PatchEmbeddingGrads got = exercise::patch_embedding_backward(images, W, s.B, s.ch, s.H, s.p, s.C, de);
            auto f = [&] { return loss(s, images, W, bias, de); };
            check_gradient(where + "dimages", got.dimages, images, f);
            check_gradient(where + "dW", got.dW, W, f);
            check_gradient(where + "dbias", got.dbias, bias, f);
        }
    });
}
