// placement.h — where the norms sit around a block's residual additions
// (tutorial 4; GeoNorm: tutorials 8 and 11; the formulas, constants and
// sources: tutorials/reference.md, sections 2 and 3). Everything a placement decides
// lives here: the wiring of each sublayer, DeepNorm's constants and its
// initialization rule, GeoNorm's sphere, step schedule and angle bound.
// Block (block.h) holds the layers and calls residual_step twice; the models
// (models.h) ask for the final norm, the sphere and the init rule.
//
// For one sublayer F (the attention or the MLP) and the stream x:
//
//   pre        x + F(N(x))                       (+ a final norm after the last block)
//   post       N(x + F(x))
//   sandwich   x + N_out(F(N(x)))                (+ a final norm)
//   deepnorm   N(alpha x + F(x)),   alpha = (2L)^(1/4)
//   geonorm    geo(x, F(x), a_k)                 (+ a final norm)
//
// N is the configured norm (layernorm, rmsnorm, dyt, or none = identity with
// no parameters). geo is the geodesic update (autograd/ops_nn.h): x moves on
// its sphere by the exponential map, with the step a_k of block k's decay
// schedule. Residual dropout applies to what F adds, after N_out.
#pragma once

#include <functional>

#include "nn/config.h"
#include "nn/norms.h"

namespace nc {
namespace nn {

// What one sublayer added to the stream in a tracked forward (train
// --diagnostics; analysis/diagnostics.h, residual_ratio), detached, with the
// scalars the placement multiplies them by (DeepNorm's alpha on the stream,
// GeoNorm's step a_k on the update before the exponential map).
struct ResidualTerm {
    Tensor branch, stream;
    double branch_scale = 1, stream_scale = 1;
};

// The layers and scalars a placement puts around one sublayer.
struct Sublayer {
    std::function<Tensor(const Tensor&)> apply;  // F
    std::function<Tensor(const Tensor&)> drop;   // residual dropout (the identity outside training)
    const NormLayer* norm = nullptr;             // N (nullptr: none)
    const NormLayer* norm_out = nullptr;         // sandwich's N_out
    double alpha = 1;                            // deepnorm's alpha
    Tensor step;                                 // geonorm's a_k, shape [1]
    double max_angle = 0;                        // geonorm's angle bound (0: none), see bound_angle
};

// One residual step of the table above. kept: when non-null, receives the
// sublayer's terms (ResidualTerm).
Tensor residual_step(Placement placement, const Tensor& x, const Sublayer& sublayer, ResidualTerm* kept = nullptr);

// Which norms a block has. Pre, post, sandwich and deepnorm: one per
// sublayer; geonorm none, unless its sublayers read the stream through the
// norm (geo_sublayer_norm). Sandwich adds one on each sublayer's output.
bool has_sublayer_norms(const TransformerConfig& cfg);
bool has_output_norms(Placement placement);
// Pre, sandwich and geonorm leave the stream unnormalized, so the model ends
// with a norm; post and deepnorm end with one already.
bool has_final_norm(Placement placement);

// DeepNet (Wang et al. 2022) for a single stack of L layers (decoder-only,
// or encoder-only): alpha = (2L)^(1/4) on the residual, beta = (8L)^(-1/4)
// on the initialization of v, out, fc1 and fc2.
double deepnorm_alpha(int64_t n_layer);
double deepnorm_beta(int64_t n_layer);
// DeepNet's initialization (Algorithm 1): every matrix Xavier-normal; the
// query and key projections with gain 1, the value and output projections
// and both FFN matrices (SwiGLU's gate and up both play fc1) with gain beta.
// It replaces the family's own scheme (GPT-2's 1/sqrt(2L) included).
void deepnorm_init_(const std::vector<Tensor>& query_key, const std::vector<Tensor>& value_out_ffn, int64_t n_layer,
                    Generator& gen);

// GeoNorm's step for block k (0-based) of L: none a, harmonic a/(k+1),
// sqrt a/sqrt(k+1), linear a (L-k)/L.
double geonorm_step(Decay decay, double a, int64_t k, int64_t L);
// The sphere GeoNorm's stream lives on: radius cfg.geo_radius, or sqrt(C).
double geonorm_radius(const TransformerConfig& cfg);
// Onto the sphere: r x / |x| per token (exact: no epsilon, no gain).
Tensor project_to_sphere(const Tensor& x, double radius);
// The geodesic update turns x by theta = a |P_x(u)| / |x|. With
// max_angle = m > 0 the direction u is rescaled per token so that the angle
// becomes m tanh(theta / m), never more than m; m = 0 returns u.
Tensor bound_angle(const Tensor& x, const Tensor& u, const Tensor& step, double max_angle);

}  // namespace nn
}  // namespace nc
