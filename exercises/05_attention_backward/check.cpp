// The check of exercise 5b: causal attention's dq, dk and dv against
// central finite differences of L = sum(dout * out) in float64 (out from
// the definition, written here), and against the library's fused kernel.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "exercises/05_attention_backward/attention_backward.h"
#include "exercises/exercise.h"
#include "tensor/ops/attention.h"
#include "tensor/random.h"
#include "tensor/raw_ops.h"

using namespace nc;

namespace {

double loss(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, int64_t T,
            int64_t D, int64_t Dv, double scale, const std::vector<double>& dout) {
    double total = 0;
    for (int64_t i = 0; i < T; ++i) {
        std::vector<double> w(i + 1);
        double sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
            double z = 0;
            for (int64_t d = 0; d < D; ++d) z += q[i * D + d] * k[j * D + d];
            sum += (w[j] = std::exp(scale * z));
        }
        for (int64_t j = 0; j <= i; ++j)
            for (int64_t e = 0; e < Dv; ++e) total += dout[i * Dv + e] * w[j] / sum * v[j * Dv + e];
    }
    return total;
}

}  // namespace

int main() {
    return exercise::run("5b (attention backward)", [] {
        Generator gen(5);
        const int64_t T = 6, D = 4, Dv = 3;
        const double scale = 0.5;
        std::vector<double> q = raw::randn({T, D}, gen, kFloat64).to_vector(), k = raw::randn({T, D}, gen, kFloat64).to_vector(),
                            v = raw::randn({T, Dv}, gen, kFloat64).to_vector(),
                            dout = raw::randn({T, Dv}, gen, kFloat64).to_vector();
        exercise::AttentionGrads g = exercise::attention_backward(q, k, v, T, D, Dv, scale, dout);
        exercise::expect(g.dq.size() == q.size() && g.dk.size() == k.size() && g.dv.size() == v.size(),
                         "dq, dk and dv must be shaped as q, k and v");
        auto f = [&] { return loss(q, k, v, T, D, Dv, scale, dout); };
        for (size_t i = 0; i < q.size(); ++i) exercise::expect_close(g.dq[i], exercise::central_difference(q[i], 1e-6, f), 1e-7, "dq[" + std::to_string(i) + "]");
        for (size_t i = 0; i < k.size(); ++i) exercise::expect_close(g.dk[i], exercise::central_difference(k[i], 1e-6, f), 1e-7, "dk[" + std::to_string(i) + "]");
        for (size_t i = 0; i < v.size(); ++i) exercise::expect_close(g.dv[i], exercise::central_difference(v[i], 1e-6, f), 1e-7, "dv[" + std::to_string(i) + "]");
        Tensor qt = raw::from_vector(q, {1, T, D}), kt = raw::from_vector(k, {1, T, D}), vt = raw::from_vector(v, {1, T, Dv});
        raw::AttentionForward fwd = raw::attention(qt, kt, vt, true, scale);
        raw::AttentionBackward lib = raw::attention_backward(raw::from_vector(dout, {1, T, Dv}), qt, kt, vt, fwd, true, scale);
        exercise::expect(exercise::largest_difference(g.dq, lib.dq.to_vector()) < 1e-12, "dq differs from the fused kernel's");
        exercise::expect(exercise::largest_difference(g.dk, lib.dk.to_vector()) < 1e-12, "dk differs from the fused kernel's");
        exercise::expect(exercise::largest_difference(g.dv, lib.dv.to_vector()) < 1e-12, "dv differs from the fused kernel's");
    });
}
