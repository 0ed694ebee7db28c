#include "nn/placement.h"

#include <cmath>

#include "nn/init.h"

namespace nc {
namespace nn {

static Tensor norm(const NormLayer* n, const Tensor& x) { return n ? n->forward(x) : x; }

// Keeps one sublayer's terms when asked; returns the branch.
static const Tensor& keep(ResidualTerm* kept, const Tensor& branch, const Tensor& stream, double branch_scale,
                          double stream_scale) {
    if (kept) *kept = {branch.detach(), stream.detach(), branch_scale, stream_scale};
    return branch;
}

Tensor residual_step(Placement placement, const Tensor& x, const Sublayer& s, ResidualTerm* kept) {
    switch (placement) {
        case Placement::Pre: return x + keep(kept, s.drop(s.apply(norm(s.norm, x))), x, 1, 1);
        case Placement::Post: return norm(s.norm, x + keep(kept, s.drop(s.apply(x)), x, 1, 1));
        case Placement::Sandwich: return x + keep(kept, s.drop(norm(s.norm_out, s.apply(norm(s.norm, x)))), x, 1, 1);
        case Placement::DeepNorm: return norm(s.norm, x * s.alpha + keep(kept, s.drop(s.apply(x)), x, 1, s.alpha));
        case Placement::GeoNorm: {
            // The geodesic update replaces "add, then normalize": x stays on its sphere.
            Tensor a = reshape(s.step, {});
            double scale = kept ? s.step.item() : 1;
            Tensor u = keep(kept, bound_angle(x, s.drop(s.apply(norm(s.norm, x))), a, s.max_angle), x, scale, 1);
            return geodesic_update(x, u, a);
        }
    }
    return x;
}

bool has_sublayer_norms(const TransformerConfig& cfg) {
    return cfg.placement != Placement::GeoNorm || cfg.geo_sublayer_norm;
}
bool has_output_norms(Placement p) { return p == Placement::Sandwich; }
bool has_final_norm(Placement p) { return p == Placement::Pre || p == Placement::Sandwich || p == Placement::GeoNorm; }

double deepnorm_alpha(int64_t n_layer) { return std::pow(2.0 * (double)n_layer, 0.25); }
double deepnorm_beta(int64_t n_layer) { return std::pow(8.0 * (double)n_layer, -0.25); }

void deepnorm_init_(const std::vector<Tensor>& query_key, const std::vector<Tensor>& value_out_ffn, int64_t n_layer,
                    Generator& gen) {
    NoGradGuard no_grad;
    double beta = deepnorm_beta(n_layer);
    for (const Tensor& w : query_key) xavier_normal_(w, 1.0, gen);
    for (const Tensor& w : value_out_ffn) xavier_normal_(w, beta, gen);
}

double geonorm_step(Decay decay, double a, int64_t k, int64_t L) {
    switch (decay) {
        case Decay::None: return a;
        case Decay::Harmonic: return a / (double)(k + 1);
        case Decay::Sqrt: return a / std::sqrt((double)(k + 1));
        case Decay::Linear: return a * (double)(L - k) / (double)L;
    }
    return a;
}

double geonorm_radius(const TransformerConfig& cfg) {
    return cfg.geo_radius > 0 ? cfg.geo_radius : std::sqrt((double)cfg.n_embd);
}

Tensor project_to_sphere(const Tensor& x, double radius) { return x * rsqrt(sum(x * x, {-1}, true)) * radius; }

// Nothing else stops theta from reaching pi/2, where cos(theta) = 0 and the
// update forgets x (and its gradient stops flowing back through x), or from
// wrapping around the sphere. m tanh(theta / m) is unchanged for small
// angles, never more than m, and smooth (a hard clamp would zero the
// gradient wherever it bites). P_x is linear, so scaling u by r scales theta
// by r: r = tanh(t) / t, t = theta / m.
Tensor bound_angle(const Tensor& x, const Tensor& u, const Tensor& step, double m) {
    if (m <= 0) return u;
    Tensor s = sum(x * x, {-1}, true);                 // |x|^2
    Tensor v = u - x * (sum(u * x, {-1}, true) / s);  // P_x(u), the tangent part
    // t = theta / m; the 1e-12 keeps sqrt's derivative finite when v = 0.
    Tensor t = sqrt(sum(v * v, {-1}, true) / s + 1e-12) * abs(step) * (1.0 / m);
    // tanh(t)/t -> 1 as t -> 0; shifting t by 1e-6 avoids 0/0 and changes r by < 1e-12.
    Tensor shifted = t + 1e-6;
    return u * (tanh(shifted) / shifted);
}

}  // namespace nn
}  // namespace nc
