// The op profiler (tensor/profile.h): kernels are timed by kind, nested
// scopes count once, and nothing is recorded while profiling is off.
#include "helpers.h"
#include "optim/optimizer.h"
#include "tensor/profile.h"

using namespace nc;

TEST_CASE("the profiler sorts kernel time by kind and counts GEMM FLOPs", "[profile]") {
    Tensor a = raw::ones({8, 16}), b = raw::ones({16, 4});
    reset_profile();
    raw::matmul(a, b);  // profiling off: nothing recorded
    CHECK(profile_totals().calls[(int)OpKind::Gemm] == 0);

    set_profiling(true);
    raw::matmul(a, b);
    raw::add(a, a);
    raw::contiguous(raw::transpose(a, 0, 1));
    {
        // The optimizer's own elementwise ops count as "optimizer", once.
        ProfileScope outer(OpKind::Optimizer);
        raw::mul(a, 2.0);
    }
    set_profiling(false);
    ProfileTotals t = profile_totals();
    CHECK(t.calls[(int)OpKind::Gemm] == 1);
    CHECK(t.gemm_flops == 2.0 * 8 * 4 * 16);
    CHECK(t.calls[(int)OpKind::Elementwise] == 1);  // the add (the mul ran inside the optimizer scope)
    CHECK(t.calls[(int)OpKind::Movement] == 1);     // the transposed copy
    CHECK(t.calls[(int)OpKind::Optimizer] == 1);
    for (int k = 0; k < kOpKinds; ++k) CHECK(t.seconds[k] >= 0);
    CHECK(std::string(op_kind_name(OpKind::Attention)) == "attention");
    reset_profile();
    CHECK(profile_totals().calls[(int)OpKind::Gemm] == 0);
}

TEST_CASE("the profiler keeps each GEMM shape and layout apart", "[profile]") {
    Tensor a = raw::ones({8, 16}), b = raw::ones({16, 4}), w = raw::ones({4, 16});
    Tensor batched = raw::ones({3, 8, 16});
    reset_profile();
    set_profiling(true);
    raw::matmul(a, b);
    raw::matmul(a, b);
    raw::matmul(raw::transpose(raw::ones({16, 8}), 0, 1), b);  // A^T B: a weight gradient's layout
    raw::linear(batched, w, Tensor());                          // x W^T over all 24 rows
    raw::matmul(batched, raw::ones({3, 16, 4}));
    set_profiling(false);
    const auto& shapes = profile_totals().gemm_shapes;
    REQUIRE(shapes.size() == 4);
    CHECK(shapes.at("8 x 16 x 4 NN").calls == 2);
    CHECK(shapes.at("8 x 16 x 4 NN").flops == 2 * 2.0 * 8 * 16 * 4);
    CHECK(shapes.at("8 x 16 x 4 TN").calls == 1);
    CHECK(shapes.at("24 x 16 x 4 NT").calls == 1);
    CHECK(shapes.at("3 x 8 x 16 x 4 NN").flops == 2.0 * 3 * 8 * 16 * 4);
    for (const auto& [label, t] : shapes) CHECK(t.seconds >= 0);
    reset_profile();
    CHECK(profile_totals().gemm_shapes.empty());
}
