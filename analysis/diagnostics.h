// diagnostics.h — the measurements the normalization studies use (each
// function's formula is written beside it, the sources in
// tutorials/reference.md, sections 6-8; chapters 11-13 use them), usable on
// any tensor during or after training. All are computed in float64 on the
// CPU (GPU tensors are copied over first).
#pragma once

#include <functional>

#include <cstdint>
#include <deque>
#include <vector>

#include "nn/block.h"
#include "nn/module.h"
#include "nn/norms.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace diag {

// Singular values of a 2-D matrix, descending: the square roots of the
// eigenvalues of the smaller Gram matrix (A^T A or A A^T).
std::vector<double> singular_values(const Tensor& matrix);

// Effective rank (Roy & Vetterli 2007): p_i = s_i / sum_j s_j over the
// singular values, erank = exp(-sum_i p_i ln p_i). 1 <= erank <= rank;
// a rank-k matrix with k equal singular values has erank k.
double effective_rank(const Tensor& matrix);

// A power law p(x) ~ x^-alpha for x >= xmin fitted to samples: for every
// candidate xmin (each sample), alpha by maximum likelihood (Hill), and the
// Kolmogorov-Smirnov distance D between the fit and the data above xmin;
// the xmin with the smallest D wins (Clauset, Shalizi & Newman 2009).
struct PowerLawFit {
    double alpha = 0, xmin = 0, ks_distance = 0;
    int64_t tail_count = 0;  // samples >= xmin
    double sigma = 0;        // (alpha - 1) / sqrt(tail_count)
};
PowerLawFit fit_power_law(std::vector<double> samples);

// Heavy-tailed self-regularization alpha of a weight matrix (Martin &
// Mahoney; WeightWatcher): the power-law fit to the eigenvalues of W^T W
// (squared singular values), eigenvalues <= 1e-5 dropped.
PowerLawFit htsr_alpha(const Tensor& weight);

// Isometry of a batch's representations h [n, d] (Joudaki et al. 2023):
// G = h h^T, I = geometric mean / arithmetic mean of G's eigenvalues, in
// (0, 1], 1 iff G is proportional to the identity. eps times the mean
// eigenvalue is added to every eigenvalue (the authors add an absolute 1e-8;
// relative, the measure stays scale-free even when deep networks without
// normalization shrink their activations towards 0).
double isometry(const Tensor& representations, double eps = 1e-8);
// -log I = log(mean lambda) - mean(log lambda) >= 0.
double isometry_gap(const Tensor& representations, double eps = 1e-8);
// Var(norms) / mean(norms)^2 of the per-sample RMS norms (unbiased variance).
double normalization_bias(const Tensor& representations);
// Theorem 1 of Joudaki et al. (2023): dividing every sample (row) of h by its
// norm raises the isometry by at least the factor 1 + b, b the normalization
// bias of h: I(normalized) >= (1 + b) I(h). Returns the margin
//   log I(normalized) - log I(h) - log(1 + b),
// >= 0 where the inequality holds. With unit rows G' = D^-1 G D^-1 (D the
// norms), so I(G') / I(G) = mean(n^2) / geomean(n^2) exactly; AM-GM makes
// that at least mean(n^2) / mean(n)^2 = 1 + b with b's *biased* variance.
// `unbiased` uses normalization_bias's unbiased one, as the authors' code does.
double theorem1_margin(const Tensor& representations, bool unbiased = true, double eps = 1e-12);

// What one block did to the residual stream, from its tokens before and
// after it ([n, d] each, row i the same token): the mean angle by which the
// tokens turned, arccos(<x, y> / (|x| |y|)) in radians, and the mean relative
// change |y - x| / |x|. For Pre-Norm the change is the block's own output,
// so that is ||F(x)|| / ||x||; for GeoNorm the angle is the geodesic step.
struct StreamStep {
    double angle = 0, relative_change = 0;
};
StreamStep stream_step(const Tensor& before, const Tensor& after);

// The size of the residual stream x ([..., C]) and how much of it is the
// same for every token: rms = sqrt(mean x^2) over all entries, and
// common_share = rms(m) / rms(x) with m the mean over tokens of x (a C-vector).
// common_share is 1 when every token carries the same vector, and about
// 1 / sqrt(tokens) for independent random tokens. A DyT language model that
// stops learning has a stream that is almost all common part, growing until
// the DyT layers above it saturate (tutorials/12-dyt-and-saturation.md).
struct StreamSize {
    double rms = 0, common_share = 0;
};
StreamSize stream_size(const Tensor& stream);

// The residual contribution of each block during training, from the terms a
// tracked forward kept (Block::track_residuals): for each of the block's two
// sublayers the mean over tokens of ||F(x)|| / ||x||, F(x) what the
// sublayer adds and x the stream term it is added to, as the placement
// scales them (DeepNorm: F / (alpha x); GeoNorm: a_k F / x, the length of
// the step before the exponential map, whose tangent part is the angle
// turned). The two sublayers' values are averaged. NaN for a block whose
// terms are missing (tracking off or no forward yet).
std::vector<double> residual_ratios(const std::vector<nn::Block*>& blocks);
double residual_ratio(const nn::ResidualTerm& term);  // one sublayer's
// Every transformer block under `model`, in registration order, with
// residual tracking switched to `track`.
std::vector<nn::Block*> track_block_residuals(nn::Module& model, bool track);

// DyT saturation: nn::dyt_saturation (nn/norms.h), which each DyT layer
// records when its tracking is on.
// Every DyT layer under `model` with its dotted name, in registration order
// (to switch on their saturation tracking, nn/norms.h).
std::vector<std::pair<std::string, nn::DyT*>> dyt_layers(nn::Module& model, const std::string& prefix = "");
// Each layer's saturation on held-out data: forward(i) runs the model on
// held-out batch i (of `batches`, all the same size) and the layers' tracked
// saturations are averaged over the batches. Tracking is switched on at
// `threshold` for the call and left on (the training steps read it too).
// The DyT study measures saturation this way, on sequences no step trains
// on, at the calibration step and at the end.
std::vector<double> held_out_saturation(const std::vector<std::pair<std::string, nn::DyT*>>& layers, int64_t batches,
                                        const std::function<void(int64_t)>& forward,
                                        double threshold = nn::kDytSaturationThreshold);

// L2 norm of the gradients of each block's parameters, block i being every
// parameter whose dotted name has the integer i as a component ("h.3.",
// "model.layers.3.", "vit.encoder.layer.3."). Parameters without a block
// (embeddings, final norm, head) are left out. Call between backward() and
// the optimizer step; parameters without a gradient count as 0.
std::vector<double> block_grad_norms(const nn::Module& model, int64_t n_blocks);

// The relative update of each block in one optimizer step,
// ||W_after - W_before|| / ||W_before||, over all of the block's parameters
// at once (blocks as in block_grad_norms). This, not the gradient, is what
// moves the weights: AdamW divides each gradient by its own running RMS, so
// equal gradients across depth can give unequal updates and back.
class BlockUpdates {
public:
    BlockUpdates(const nn::Module& model, int64_t n_blocks);
    void before_step();               // copies the blocks' parameters
    std::vector<double> after_step();  // the relative updates since before_step()

private:
    std::vector<std::pair<int64_t, Tensor>> params_;  // (block, parameter)
    std::vector<Tensor> saved_;
    int64_t n_blocks_;
};

// Loss spikes: a loss is a spike when it exceeds `factor` times the median
// of the losses before it, the last `window` of them. The verdict starts at
// the second loss (median of one), so the first steps, where an unstable
// run fails, are watched too; while the loss falls fast the median lags
// above it, which makes early verdicts cautious rather than noisy.
class SpikeDetector {
public:
    SpikeDetector(int64_t window = 50, double factor = 1.5);
    bool observe(double loss);  // true: this loss is a spike
    int64_t spikes() const { return spikes_; }

private:
    int64_t window_;
    double factor_;
    std::deque<double> recent_;
    int64_t spikes_ = 0;
};

}  // namespace diag
}  // namespace nc
