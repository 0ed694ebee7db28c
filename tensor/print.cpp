// print.cpp — printing tensors the way PyTorch does:
//
//   tensor([[ 1.0000, -2.5000],
//           [ 3.0000,  4.0000]])
//
// One number format is chosen for the whole tensor (so columns line up):
// whole numbers print as "3.", ordinary values with 4 decimals, and values
// spanning a very wide range in scientific notation. Large tensors are
// summarized with "..." keeping 3 entries at each end of every dim.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "tensor/raw_ops.h"

namespace nc {

namespace {

enum class NumberStyle { Integer, WholeFloat, Fixed, Scientific };

struct Formatter {
    NumberStyle style = NumberStyle::Fixed;
    size_t width = 0;

    std::string format(double v) const {
        char buf[64];
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        switch (style) {
            case NumberStyle::Integer: std::snprintf(buf, sizeof buf, "%lld", (long long)v); break;
            case NumberStyle::WholeFloat: std::snprintf(buf, sizeof buf, "%.0f.", v); break;
            case NumberStyle::Fixed: std::snprintf(buf, sizeof buf, "%.4f", v); break;
            case NumberStyle::Scientific: std::snprintf(buf, sizeof buf, "%.4e", v); break;
        }
        return buf;
    }
    std::string padded(double v) const {
        std::string s = format(v);
        return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
    }
};

constexpr int64_t kSummarizeAbove = 1000;  // elements
constexpr int64_t kEdgeItems = 3;

// The indices of a dim that get printed; -1 marks the "..." gap.
std::vector<int64_t> shown_indices(int64_t size, bool summarize) {
    std::vector<int64_t> idx;
    if (summarize && size > 2 * kEdgeItems) {
        for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
        idx.push_back(-1);
        for (int64_t i = size - kEdgeItems; i < size; ++i) idx.push_back(i);
    } else {
        for (int64_t i = 0; i < size; ++i) idx.push_back(i);
    }
    return idx;
}

void collect(const std::vector<double>& values, const Shape& shape, int64_t dim, int64_t base, bool summarize,
             std::vector<double>& shown) {
    if (dim == (int64_t)shape.size()) { shown.push_back(values[base]); return; }
    int64_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
    for (int64_t i : shown_indices(shape[dim], summarize))
        if (i >= 0) collect(values, shape, dim + 1, base + i * stride, summarize, shown);
}

Formatter choose_format(const std::vector<double>& shown, DType dtype) {
    Formatter f;
    if (dtype == kInt64) {
        f.style = NumberStyle::Integer;
    } else {
        bool all_whole = true;
        double max_abs = 0, min_abs = INFINITY;
        for (double v : shown) {
            if (!std::isfinite(v)) continue;
            if (v != std::round(v)) all_whole = false;
            double a = std::fabs(v);
            max_abs = std::max(max_abs, a);
            if (a > 0) min_abs = std::min(min_abs, a);
        }
        if (all_whole) f.style = max_abs > 1e8 ? NumberStyle::Scientific : NumberStyle::WholeFloat;
        else if (max_abs > 1e8 || (min_abs < 1e-4) || (min_abs < INFINITY && max_abs / min_abs > 1000))
            f.style = NumberStyle::Scientific;
        else f.style = NumberStyle::Fixed;
    }
    for (double v : shown) f.width = std::max(f.width, f.format(v).size());
    return f;
}

void write(std::ostream& os, const std::vector<double>& values, const Shape& shape, int64_t dim, int64_t base,
           bool summarize, const Formatter& f, int indent) {
    if (dim == (int64_t)shape.size()) { os << f.padded(values[base]); return; }
    int64_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
    bool last_dim = dim == (int64_t)shape.size() - 1;
    // Between sub-blocks of a 3-D tensor PyTorch leaves blank lines: one fewer
    // newline than the number of dims below.
    std::string between = last_dim ? ", " : "," + std::string(shape.size() - dim - 1, '\n') +
                                                std::string(indent + dim + 1, ' ');
    os << "[";
    bool first = true;
    for (int64_t i : shown_indices(shape[dim], summarize)) {
        if (!first) os << between;
        first = false;
        if (i < 0) os << "...";
        else write(os, values, shape, dim + 1, base + i * stride, summarize, f, indent);
    }
    os << "]";
}

}  // namespace

std::string Tensor::to_string() const {
    if (!defined()) return "tensor(undefined)";
    std::vector<double> values = to_vector();
    bool summarize = numel() > kSummarizeAbove;
    std::vector<double> shown;
    collect(values, shape(), 0, 0, summarize, shown);
    Formatter f = choose_format(shown, dtype());
    std::ostringstream os;
    os << "tensor(";
    if (numel() == 0) os << "[]";
    else write(os, values, shape(), 0, 0, summarize, f, (int)std::string("tensor(").size());
    if (numel() == 0 && dim() > 1) os << ", size=" << shape_str(shape());
    // As PyTorch prints: the dtype unless it is the default float32 (or int64, which the numbers show).
    if (dtype() == kFloat64 || is_16bit_float(dtype())) os << ", dtype=" << dtype_name(dtype());
    if (dtype() == kInt64 && numel() == 0) os << ", dtype=int64";
    if (device() != kCPU) os << ", device='" << device().str() << "'";
    if (requires_grad()) os << ", requires_grad=True";
    os << ")";
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace nc
