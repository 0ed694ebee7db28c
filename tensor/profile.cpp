#include "tensor/profile.h"

namespace nc {

namespace {
struct ProfileState {
    bool enabled = false;
    int depth = 0;  // open scopes; only depth 0 -> 1 starts a timer
    ProfileTotals totals;
};
ProfileState& state() {
    thread_local ProfileState s;
    return s;
}
}  // namespace

const char* op_kind_name(OpKind kind) {
    switch (kind) {
        case OpKind::Gemm: return "gemm";
        case OpKind::Attention: return "attention";
        case OpKind::Norm: return "norm";
        case OpKind::Elementwise: return "elementwise";
        case OpKind::Movement: return "movement";
        case OpKind::Loss: return "loss";
        case OpKind::Optimizer: return "optimizer";
    }
    return "?";
}

bool is_profiling() { return state().enabled; }
void set_profiling(bool enabled) { state().enabled = enabled; }
ProfileTotals profile_totals() { return state().totals; }
void reset_profile() { state().totals = ProfileTotals{}; }

ProfileScope::ProfileScope(OpKind kind, double flops, std::string gemm_shape)
    : kind_(kind), flops_(flops), gemm_shape_(std::move(gemm_shape)), entered_(false), timing_(false) {
    ProfileState& s = state();
    if (!s.enabled) return;
    entered_ = true;
    if (s.depth++ == 0) {
        timing_ = true;
        start_ = std::chrono::steady_clock::now();
    }
}

ProfileScope::~ProfileScope() {
    if (!entered_) return;
    ProfileState& s = state();
    --s.depth;
    if (!timing_) return;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    s.totals.seconds[(int)kind_] += seconds;
    s.totals.calls[(int)kind_] += 1;
    if (kind_ == OpKind::Gemm) s.totals.gemm_flops += flops_;
    if (!gemm_shape_.empty()) {
        GemmShapeTotals& shape = s.totals.gemm_shapes[gemm_shape_];
        shape.calls += 1;
        shape.seconds += seconds;
        shape.flops += flops_;
    }
}

}  // namespace nc
