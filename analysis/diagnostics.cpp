#include "analysis/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/eigen.h"
#include "tensor/error.h"

namespace nc {
namespace diag {

namespace {

// The values of a 2-D tensor as float64 rows [r][c] on the host.
std::vector<double> host_matrix(const Tensor& t, const std::string& op, int64_t& rows, int64_t& cols) {
    if (t.dim() != 2) fail(op, "needs a 2-D matrix, got shape " + shape_str(t.shape()));
    rows = t.size(0);
    cols = t.size(1);
    return t.to_vector();
}

// G = X X^T for X [r, c] given row-major (r x r).
std::vector<double> gram_rows(const std::vector<double>& x, int64_t r, int64_t c) {
    std::vector<double> g(r * r, 0.0);
    for (int64_t i = 0; i < r; ++i)
        for (int64_t j = i; j < r; ++j) {
            double total = 0;
            for (int64_t k = 0; k < c; ++k) total += x[i * c + k] * x[j * c + k];
            g[i * r + j] = g[j * r + i] = total;
        }
    return g;
}

std::vector<double> transposed(const std::vector<double>& x, int64_t r, int64_t c) {
    std::vector<double> t(r * c);
    for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) t[j * r + i] = x[i * c + j];
    return t;
}

// Eigenvalues of the smaller Gram matrix of X (equal to the squared
// singular values), clamped at 0 (rounding can make tiny ones negative).
std::vector<double> gram_eigenvalues(const Tensor& t, const std::string& op) {
    int64_t r, c;
    std::vector<double> x = host_matrix(t, op, r, c);
    if (c < r) {
        x = transposed(x, r, c);
        std::swap(r, c);
    }
    std::vector<double> values = symmetric_eigen(gram_rows(x, r, c), r).values;
    for (double& v : values) v = std::max(v, 0.0);
    return values;
}

}  // namespace

std::vector<double> singular_values(const Tensor& matrix) {
    std::vector<double> values = gram_eigenvalues(matrix, "singular_values");
    std::vector<double> s;
    for (auto it = values.rbegin(); it != values.rend(); ++it) s.push_back(std::sqrt(*it));
    return s;
}

double effective_rank(const Tensor& matrix) {
    std::vector<double> s = singular_values(matrix);
    double total = 0;
    for (double v : s) total += v;
    if (total == 0) return 0;  // the zero matrix has no directions at all
    double entropy = 0;
    for (double v : s) {
        double p = v / total;
        if (p > 0) entropy -= p * std::log(p);
    }
    return std::exp(entropy);
}

PowerLawFit fit_power_law(std::vector<double> samples) {
    samples.erase(std::remove_if(samples.begin(), samples.end(), [](double x) { return !(x > 1e-5); }), samples.end());
    std::sort(samples.begin(), samples.end());
    int64_t n = (int64_t)samples.size();
    if (n < 2) fail("fit_power_law", "needs at least 2 positive samples above 1e-5, got " + std::to_string(n));
    PowerLawFit best;
    best.ks_distance = INFINITY;
    // Suffix sums of ln x make each candidate's MLE O(1); the KS scan is O(tail).
    std::vector<double> suffix_log(n + 1, 0.0);
    for (int64_t i = n - 1; i >= 0; --i) suffix_log[i] = suffix_log[i + 1] + std::log(samples[i]);
    for (int64_t j = 0; j + 1 < n; ++j) {
        double xmin = samples[j];
        if (j > 0 && samples[j - 1] == xmin) continue;  // the same candidate again
        int64_t tail = n - j;
        double log_sum = suffix_log[j] - (double)tail * std::log(xmin);  // sum_{i>=j} ln(x_i / xmin)
        if (log_sum <= 0) continue;
        double alpha = 1 + (double)tail / log_sum;
        double d = 0;
        for (int64_t i = j; i < n; ++i) {
            double model_cdf = 1 - std::pow(samples[i] / xmin, 1 - alpha);
            double data_cdf = (double)(i - j) / (double)tail;
            d = std::max(d, std::fabs(model_cdf - data_cdf));
        }
        if (d < best.ks_distance) {
            best.alpha = alpha;
            best.xmin = xmin;
            best.ks_distance = d;
            best.tail_count = tail;
            best.sigma = (alpha - 1) / std::sqrt((double)tail);
        }
    }
    if (!std::isfinite(best.ks_distance)) fail("fit_power_law", "all samples are equal: no power law to fit");
    return best;
}

PowerLawFit htsr_alpha(const Tensor& weight) { return fit_power_law(gram_eigenvalues(weight, "htsr_alpha")); }

double isometry_gap(const Tensor& representations, double eps) {
    int64_t n, d;
    std::vector<double> h = host_matrix(representations, "isometry", n, d);
    std::vector<double> values = symmetric_eigen(gram_rows(h, n, d), n).values;
    double scale = 0;
    for (double v : values) scale += std::max(v, 0.0);
    scale /= (double)n;
    if (scale == 0) fail("isometry", "all representations are zero: their Gram matrix has no spectrum");
    double mean = 0, mean_log = 0;
    for (double v : values) {
        double lambda = std::max(v, 0.0) + eps * scale;
        mean += lambda;
        mean_log += std::log(lambda);
    }
    mean /= (double)n;
    mean_log /= (double)n;
    return std::log(mean) - mean_log;
}

double isometry(const Tensor& representations, double eps) { return std::exp(-isometry_gap(representations, eps)); }

StreamStep stream_step(const Tensor& before, const Tensor& after) {
    int64_t n, d, n2, d2;
    std::vector<double> x = host_matrix(before, "stream_step", n, d), y = host_matrix(after, "stream_step", n2, d2);
    if (n != n2 || d != d2)
        fail("stream_step", "before and after must have the same shape, got [" + std::to_string(n) + ", " + std::to_string(d) +
                                "] and [" + std::to_string(n2) + ", " + std::to_string(d2) + "]");
    StreamStep out;
    for (int64_t i = 0; i < n; ++i) {
        double xy = 0, xx = 0, yy = 0, dd = 0;
        for (int64_t k = 0; k < d; ++k) {
            double a = x[i * d + k], b = y[i * d + k];
            xy += a * b, xx += a * a, yy += b * b, dd += (b - a) * (b - a);
        }
        double cosine = xx > 0 && yy > 0 ? std::max(-1.0, std::min(1.0, xy / std::sqrt(xx * yy))) : 1.0;
        out.angle += std::acos(cosine) / (double)n;
        out.relative_change += (xx > 0 ? std::sqrt(dd / xx) : 0.0) / (double)n;
    }
    return out;
}

double theorem1_margin(const Tensor& representations, bool unbiased, double eps) {
    int64_t n, d;
    std::vector<double> h = host_matrix(representations, "theorem1_margin", n, d);
    if (n < 2) fail("theorem1_margin", "needs at least 2 samples (a variance of their norms)");
    std::vector<double> unit(h.size());
    for (int64_t i = 0; i < n; ++i) {
        double total = 0;
        for (int64_t k = 0; k < d; ++k) total += h[i * d + k] * h[i * d + k];
        if (total == 0) fail("theorem1_margin", "sample " + std::to_string(i) + " is zero: it has no direction to normalize");
        for (int64_t k = 0; k < d; ++k) unit[i * d + k] = h[i * d + k] / std::sqrt(total);
    }
    Tensor normalized = raw::from_vector(unit, {n, d});
    double b = normalization_bias(representations);
    if (!unbiased) b *= (double)(n - 1) / (double)n;
    return -isometry_gap(normalized, eps) + isometry_gap(representations, eps) - std::log1p(b);
}

double normalization_bias(const Tensor& representations) {
    int64_t n, d;
    std::vector<double> h = host_matrix(representations, "normalization_bias", n, d);
    if (n < 2) fail("normalization_bias", "needs at least 2 samples (an unbiased variance)");
    std::vector<double> norms(n);
    for (int64_t i = 0; i < n; ++i) {
        double total = 0;
        for (int64_t k = 0; k < d; ++k) total += h[i * d + k] * h[i * d + k];
        norms[i] = std::sqrt(total / (double)d);  // RMS
    }
    double mean = 0;
    for (double v : norms) mean += v;
    mean /= (double)n;
    double var = 0;
    for (double v : norms) var += (v - mean) * (v - mean);
    var /= (double)(n - 1);
    return var / (mean * mean);
}

std::vector<std::pair<std::string, nn::DyT*>> dyt_layers(nn::Module& model, const std::string& prefix) {
    std::vector<std::pair<std::string, nn::DyT*>> found;
    if (auto* dyt = dynamic_cast<nn::DyT*>(&model)) found.push_back({prefix, dyt});
    for (const auto& [name, child] : model.children()) {
        auto below = dyt_layers(*child, prefix.empty() ? name : prefix + "." + name);
        found.insert(found.end(), below.begin(), below.end());
    }
    return found;
}

std::vector<double> held_out_saturation(const std::vector<std::pair<std::string, nn::DyT*>>& layers, int64_t batches,
                                        const std::function<void(int64_t)>& forward, double threshold) {
    if (batches <= 0) fail("held_out_saturation", "needs at least one held-out batch, got " + std::to_string(batches));
    std::vector<double> total(layers.size(), 0.0);
    for (const auto& [name, layer] : layers) layer->track_saturation(true, threshold);
    for (int64_t i = 0; i < batches; ++i) {
        forward(i);
        for (size_t l = 0; l < layers.size(); ++l) total[l] += layers[l].second->last_saturation() / (double)batches;
    }
    return total;
}

StreamSize stream_size(const Tensor& stream) {
    if (stream.dim() < 1 || stream.numel() == 0) fail("stream_size", "got an empty stream " + shape_str(stream.shape()));
    int64_t C = stream.size(-1), tokens = stream.numel() / C;
    std::vector<double> x = stream.to_vector(), mean(C, 0.0);
    double squares = 0;
    for (int64_t t = 0; t < tokens; ++t)
        for (int64_t c = 0; c < C; ++c) {
            double v = x[t * C + c];
            squares += v * v;
            mean[c] += v / (double)tokens;
        }
    double mean_squares = 0;
    for (double m : mean) mean_squares += m * m / (double)C;
    StreamSize s;
    s.rms = std::sqrt(squares / (double)x.size());
    s.common_share = s.rms > 0 ? std::sqrt(mean_squares) / s.rms : 0;
    return s;
}

double residual_ratio(const nn::ResidualTerm& term) {
    if (!term.branch.defined() || !term.stream.defined()) return NAN;
    int64_t C = term.stream.size(-1);
    if (term.branch.shape() != term.stream.shape())
        fail("residual_ratio", "the branch and the stream differ in shape: " + shape_str(term.branch.shape()) + " and " +
                                   shape_str(term.stream.shape()));
    std::vector<double> f = term.branch.to_vector(), x = term.stream.to_vector();
    int64_t tokens = C > 0 ? (int64_t)x.size() / C : 0;
    if (tokens == 0) return NAN;
    double total = 0;
    for (int64_t t = 0; t < tokens; ++t) {
        double ff = 0, xx = 0;
        for (int64_t k = 0; k < C; ++k) ff += f[t * C + k] * f[t * C + k], xx += x[t * C + k] * x[t * C + k];
        total += xx > 0 ? std::abs(term.branch_scale) * std::sqrt(ff) / (std::abs(term.stream_scale) * std::sqrt(xx)) : 0.0;
    }
    return total / (double)tokens;
}

std::vector<double> residual_ratios(const std::vector<nn::Block*>& blocks) {
    std::vector<double> out;
    for (const nn::Block* b : blocks) out.push_back(0.5 * (residual_ratio(b->attn_residual()) + residual_ratio(b->mlp_residual())));
    return out;
}

std::vector<nn::Block*> track_block_residuals(nn::Module& model, bool track) {
    std::vector<nn::Block*> found;
    if (auto* block = dynamic_cast<nn::Block*>(&model)) {
        block->track_residuals(track);
        found.push_back(block);
    }
    for (const auto& [name, child] : model.children()) {
        std::vector<nn::Block*> below = track_block_residuals(*child, track);
        found.insert(found.end(), below.begin(), below.end());
    }
    return found;
}

// The first dotted component of `name` that is a whole number, or -1.
static int64_t block_index(const std::string& name) {
    size_t start = 0;
    while (start <= name.size()) {
        size_t end = name.find('.', start);
        if (end == std::string::npos) end = name.size();
        std::string part = name.substr(start, end - start);
        if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return std::stoll(part);
        start = end + 1;
    }
    return -1;
}

std::vector<double> block_grad_norms(const nn::Module& model, int64_t n_blocks) {
    std::vector<double> squares(n_blocks, 0.0);
    for (const auto& [name, p] : model.named_parameters()) {
        int64_t block = block_index(name);
        if (block < 0 || block >= n_blocks || !p.grad().defined()) continue;
        squares[block] += raw::sum(raw::mul(p.grad(), p.grad())).item();
    }
    for (double& s : squares) s = std::sqrt(s);
    return squares;
}

BlockUpdates::BlockUpdates(const nn::Module& model, int64_t n_blocks) : n_blocks_(n_blocks) {
    for (const auto& [name, p] : model.named_parameters()) {
        int64_t block = block_index(name);
        if (block >= 0 && block < n_blocks) params_.push_back({block, p});
    }
}

void BlockUpdates::before_step() {
    saved_.clear();
    for (const auto& bp : params_) saved_.push_back(raw::clone(bp.second));
}

std::vector<double> BlockUpdates::after_step() {
    if (saved_.size() != params_.size()) fail("BlockUpdates", "after_step() without before_step()");
    std::vector<double> delta(n_blocks_, 0.0), weight(n_blocks_, 0.0);
    for (size_t i = 0; i < params_.size(); ++i) {
        Tensor d = raw::sub(params_[i].second, saved_[i]);
        delta[params_[i].first] += raw::sum(raw::mul(d, d)).item();
        weight[params_[i].first] += raw::sum(raw::mul(saved_[i], saved_[i])).item();
    }
    std::vector<double> out(n_blocks_);
    for (int64_t b = 0; b < n_blocks_; ++b) out[b] = weight[b] > 0 ? std::sqrt(delta[b] / weight[b]) : NAN;
    saved_.clear();
    return out;
}

SpikeDetector::SpikeDetector(int64_t window, double factor) : window_(window), factor_(factor) {
    if (window < 1 || !(factor > 0))
        fail("SpikeDetector", "needs a window of at least 1 and a positive factor, got " + std::to_string(window) +
                                  " and " + std::to_string(factor));
}

bool SpikeDetector::observe(double loss) {
    bool spike = false;
    if (!recent_.empty()) {
        std::vector<double> sorted(recent_.begin(), recent_.end());
        std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
        spike = loss > factor_ * sorted[sorted.size() / 2];
    }
    recent_.push_back(loss);
    if ((int64_t)recent_.size() > window_) recent_.pop_front();
    spikes_ += spike;
    return spike;
}

}  // namespace diag
}  // namespace nc
