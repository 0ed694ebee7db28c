// profile.h — where the time of a training step goes, by kind of op.
//
// Off by default. When on (set_profiling(true), as `normcore bench` and
// `normcore train --profile` do), every call from a raw op into a backend
// kernel is timed and its seconds added to its kind's total. Scopes nest:
// only the outermost one counts, so the optimizer's elementwise ops count
// as "optimizer", not twice. Time outside every scope (the autograd engine's
// own bookkeeping, allocation, Python-free glue) is what remains of the wall
// clock; `bench` reports it as "other".
//
// Like grad mode this is a per-thread switch, and the totals are per thread
// (ops are issued by one thread; the kernels' OpenMP workers are inside).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace nc {

enum class OpKind { Gemm, Attention, Norm, Elementwise, Movement, Loss, Optimizer };
constexpr int kOpKinds = 7;
// "gemm", "attention", "norm", "elementwise" (math, reductions, softmax,
// random), "movement" (copies, index/gather/scatter), "loss", "optimizer".
const char* op_kind_name(OpKind kind);

// The GEMMs of one shape and layout: how often they ran, for how long.
struct GemmShapeTotals {
    int64_t calls = 0;
    double seconds = 0, flops = 0;
};

struct ProfileTotals {
    std::array<double, kOpKinds> seconds{};
    std::array<int64_t, kOpKinds> calls{};
    double gemm_flops = 0;  // 2 M N K summed over matmuls, for GFLOP/s in the step
    // By shape, "M x K x N" and layout (NN, NT = A B^T, TN = A^T B, TT), with
    // "batch x " in front for batched products: which GEMMs are slow.
    std::map<std::string, GemmShapeTotals> gemm_shapes;
};

bool is_profiling();
void set_profiling(bool enabled);
ProfileTotals profile_totals();
void reset_profile();

// RAII: times its lifetime as one call of `kind` (when profiling and not
// already inside another scope). A GEMM also passes its FLOPs and its shape
// label (the key of ProfileTotals::gemm_shapes; built only when profiling is on).
class ProfileScope {
public:
    explicit ProfileScope(OpKind kind, double flops = 0, std::string gemm_shape = std::string());
    ~ProfileScope();
    ProfileScope(const ProfileScope&) = delete;
    ProfileScope& operator=(const ProfileScope&) = delete;

private:
    OpKind kind_;
    double flops_;
    std::string gemm_shape_;
    bool entered_;  // profiling was on when the scope opened (it counts in depth)
    bool timing_;   // the outermost scope: its time is recorded
    std::chrono::steady_clock::time_point start_;
};

}  // namespace nc
