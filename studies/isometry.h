// isometry.h — `normcore experiment isometry`: deep MLPs at
// initialization (Joudaki, Daneshmand & Bach, 2023): how fast a batch's Gram
// matrix becomes isometric with depth, per activation, with LayerNorm,
// BatchNorm or no norm, next to the rate predicted from each activation's
// Hermite coefficients. Unlike the other studies it trains nothing, so it
// runs in this process.
//
// This header and isometry_networks.cpp hold the networks and what is
// measured on them; isometry.cpp runs the study and reports it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nc {
namespace app {
namespace isometry {

// ---- the activations and their Hermite coefficients ------------------------------

struct Activation {
    std::string name;
    std::function<double(double)> scalar;              // for the Gaussian integrals
    std::function<Tensor(const Tensor&)> on_tensor;    // for the network at initialization
    std::function<Tensor(const Tensor&)> on_graph;     // the same with autograd, for training
};

std::vector<Activation> activations();

// beta0 = c1^2 / sum_{k>=1} c_k^2 with c0 = E[s(x)], c1 = E[x s(x)] and
// sum_{k>=1} c_k^2 = E[s(x)^2] - c0^2 (normalized Hermite basis). 1 for a
// linear activation, smaller the more nonlinear it is.
double hermite_beta0(const Activation& a);

// ---- the networks at initialization ------------------------------------------------

struct Scale {
    int64_t width, depth, batch, seeds;
};

// Per layer 0..depth, one value per seed, of what the study measures at a
// layer whose input is h (the rows are the batch's samples):
//   gap         -log I of h itself, the point this study measured first;
//   gap_normed  -log I of LN(h) (centred, divided by the RMS): the point the
//               authors measure, whose recursion is h <- LN(act(W h));
//   bias        the normalization bias of h;
//   margin      Theorem 1's margin on the centred h (diag::theorem1_margin:
//               >= 0 where normalizing raised I by at least 1 + bias),
//               with the unbiased and the biased variance in the bias.
struct Curve {
    std::vector<std::vector<double>> gap, gap_normed, bias, margin, margin_biased;
};

// Layer l: h <- act(W norm(h)), W ~ N(0, 1/width) (the authors' training
// notebook order: Norm -> Linear -> activation). The input batch is made
// nearly degenerate (its top singular direction boosted), so it starts far
// from isometry. `full`: all five measures, else only the gap.
Curve isometry_curve(const Activation& act, const std::string& norm, const Scale& s, uint64_t seed, bool full = true);

std::vector<double> seed_means(const std::vector<std::vector<double>>& per_layer);
// Standard error over seeds (the protocol's; 0 for one seed).
double standard_error(const std::vector<double>& xs);
// The level a curve settles at: the mean of its last tenth (at least 3 layers).
double curve_floor(const std::vector<double>& gap);
// The measured decay per layer: exp of the least-squares slope of
// log(gap - floor) against depth over the layers still well above the floor
// (isometry_networks.cpp says why); NaN with fewer than 3 such layers.
double measured_rate(const std::vector<double>& gap);

// ---- does isometry at initialization predict training? -------------------------
//
// The reviewers' question. Deep MLPs on Fashion-MNIST (784 standardized
// pixels, [Norm -> Linear -> activation] x depth, a linear head to the 10
// classes; weights N(0, 1/fan_in) and SGD at lr 0.01 with batches of 100,
// the authors' training notebook): each network's isometry gap at
// initialization, at its last hidden layer on the first min(100, width / 2)
// images (fewer samples than dimensions, or the Gram matrix is singular),
// against its loss on 1,000 test images after a fixed number of steps.
struct TrainScale {
    int64_t width, steps, seeds, train_images;
    std::vector<int64_t> depths;
};

struct TrainedNet {
    std::string activation, norm;
    int64_t depth = 0;
    double gap_at_init = 0, test_loss = NAN;
    bool diverged = false;  // a non-finite training loss stopped it
};

TrainedNet train_mlp(const Activation& act, const std::string& norm, int64_t depth, const TrainScale& s, const Tensor& images,
                     const Tensor& labels, const Tensor& test_images, const Tensor& test_labels, uint64_t seed);

// Pixels standardized over the whole set, flattened to [N, 784].
Tensor standardized(const Tensor& images);

}  // namespace isometry
}  // namespace app
}  // namespace nc
