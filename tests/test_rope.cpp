// RoPE as one fused op (tensor/ops/rope.h): its forward against
// x cos + cat(-x2, x1) sin written with plain tensor ops, its backward
// against float64 finite differences (leading dims, a transposed input, the
// key/value cache's tables that start at a later position, tables whose
// halves differ), and its errors.
#include "helpers.h"
#include "nn/rope.h"
#include "tensor/profile.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_gradcheck;
using nc_test::check_values;
using nc_test::leaf;
using V = std::vector<Tensor>;

namespace {

// The definition, with plain ops (no fused kernel): x cos + rotate_half(x) sin.
Tensor rope_by_ops(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    int64_t D = x.size(-1);
    Tensor x1 = raw::narrow(x, -1, 0, D / 2), x2 = raw::narrow(x, -1, D / 2, D / 2);
    return raw::add(raw::mul(x, cos), raw::mul(raw::cat({raw::neg(x2), x1}, -1), sin));
}

}  // namespace

TEST_CASE("rope: the fused op equals x cos + rotate_half(x) sin, forward and backward", "[nn][rope]") {
    nn::RopeTables t = nn::rope_tables(5, 8, 10000.0, kFloat64);
    Tensor x = leaf({2, 3, 5, 8}, 1);
    check_values(rope(x, t.cos, t.sin), rope_by_ops(x, t.cos, t.sin).to_vector(), 1e-15);
    check_gradcheck([t](const V& v) { return rope(v[0], t.cos, t.sin); }, {x});
    // Queries as attention makes them: [B, T, H, D] seen as [B, H, T, D].
    Tensor heads_last = leaf({2, 5, 3, 8}, 2);
    check_values(rope(transpose(heads_last, 1, 2), t.cos, t.sin),
                 rope_by_ops(raw::contiguous(raw::transpose(heads_last, 1, 2)), t.cos, t.sin).to_vector(), 1e-15);
    check_gradcheck([t](const V& v) { return rope(transpose(v[0], 1, 2), t.cos, t.sin); }, {heads_last});
    // The cache's tables for positions 7..9 of a longer table (a view), and
    // tables whose two halves differ, where the backward's sines come from
    // the other channel of each pair (rope.h).
    nn::RopeTables long_t = nn::rope_tables(12, 8, 500.0, kFloat64);
    Tensor later_cos = raw::narrow(long_t.cos, 0, 7, 3), later_sin = raw::narrow(long_t.sin, 0, 7, 3);
    Tensor y3 = leaf({4, 3, 8}, 3);
    check_values(rope(y3, later_cos, later_sin), rope_by_ops(y3, later_cos, later_sin).to_vector(), 1e-15);
    Tensor odd_cos = leaf({3, 8}, 4).detach(), odd_sin = leaf({3, 8}, 5).detach();
    check_values(rope(y3, odd_cos, odd_sin), rope_by_ops(y3, odd_cos, odd_sin).to_vector(), 1e-15);
    check_gradcheck([odd_cos, odd_sin](const V& v) { return rope(v[0], odd_cos, odd_sin); }, {y3});
    // float32: within float32 rounding of the float64 values.
    Tensor x32 = raw::to_dtype(x, kFloat32);
    check_values(raw::rope(x32, raw::to_dtype(t.cos, kFloat32), raw::to_dtype(t.sin, kFloat32)),
                 rope_by_ops(x, t.cos, t.sin).to_vector(), 1e-6);
    // Rotations keep lengths: |rope(x)| = |x| row by row.
    Tensor y = raw::rope(x, t.cos, t.sin);
    check_values(raw::sum(raw::mul(y, y), {-1}), raw::sum(raw::mul(x, x), {-1}).to_vector(), 1e-13);
}

TEST_CASE("rope: bad inputs get one clear error", "[nn][rope][errors]") {
    nn::RopeTables t = nn::rope_tables(5, 8, 10000.0, kFloat64);
    check_error([&] { raw::rope(leaf({5, 7}, 1), raw::narrow(t.cos, 1, 0, 7), raw::narrow(t.sin, 1, 0, 7)); },
                {"rope", "even", "[5, 7]"});
    check_error([&] { raw::rope(leaf({2, 4, 8}, 1), t.cos, t.sin); }, {"rope", "cos table", "[5, 8]", "[4, 8]"});
    check_error([&] { raw::rope(leaf({8}, 1), t.cos, t.sin); }, {"rope", "[..., T, D]", "[8]"});
    check_error([&] { raw::rope(raw::to_dtype(leaf({5, 8}, 1), kFloat32), t.cos, t.sin); },
                {"rope", "float64", "float32"});
    check_error([&] { raw::rope(leaf({5, 8}, 1), t.cos, Tensor()); }, {"rope", "cos and sin tables"});
    Tensor learned = raw::clone(t.cos).set_requires_grad(true);
    check_error([&] { rope(leaf({5, 8}, 1), learned, t.sin); }, {"rope", "constants", "require a gradient"});
    check_error([&] { raw::rope_backward(leaf({2, 5, 6}, 1), t.cos, t.sin); }, {"rope_backward", "[5, 6]"});
    // An output to write the gradient into: the wrong shape, a layout whose
    // rows are neither contiguous nor heads last, or dy itself.
    Tensor dy = leaf({2, 3, 5, 8}, 6).detach();
    check_error([&] { raw::rope_backward(dy, t.cos, t.sin, empty({2, 3, 5, 6}, kFloat64)); },
                {"rope_backward", "output", "[2, 3, 5, 6]", "[2, 3, 5, 8]"});
    check_error([&] { raw::rope_backward(dy, t.cos, t.sin, raw::transpose(empty({3, 2, 5, 8}, kFloat64), 0, 1)); },
                {"rope_backward", "contiguous", "strides"});
    check_error([&] { raw::rope_backward(dy, t.cos, t.sin, dy); }, {"rope_backward", "overlaps"});
}

// Llama's path through a layer's attention: q and k split into heads from
// their projections, rotated, then attention, then the heads merged. RoPE
// reads the heads-last layout in place (writing contiguous rotated heads
// for attention) and writes q's and k's gradients heads
// last, so nothing is copied forward, and in backward only the three
// leaves' gradients are (as with attention alone, test_nn_ops.cpp); the
// same bits as rotating contiguous copies.
TEST_CASE("rope on heads split from projections copies nothing, forward or backward", "[nn][rope][attention]") {
    const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
    auto heads = [&](const Tensor& t) { return transpose(view(t, {B, T, H, D}), 1, 2); };
    for (DType dtype : {kFloat32, kFloat64}) {
        INFO(dtype_name(dtype));
        nn::RopeTables t = nn::rope_tables(T, D, 10000.0, dtype);
        Generator gen(71);
        Tensor dy = raw::to_dtype(raw::randn({B, T, C}, gen), dtype);
        std::vector<Tensor> viewed, copied;
        for (int i = 0; i < 3; ++i) {
            Tensor x = raw::to_dtype(raw::randn({B, T, C}, gen), dtype);
            viewed.push_back(raw::clone(x).set_requires_grad(true));
            copied.push_back(raw::clone(x).set_requires_grad(true));
        }
        reset_profile();
        set_profiling(true);
        Tensor q = rope(heads(viewed[0]), t.cos, t.sin), k = rope(heads(viewed[1]), t.cos, t.sin);
        CHECK(q.is_contiguous());
        Tensor merged = reshape(transpose(scaled_dot_product_attention(q, k, heads(viewed[2]), true), 1, 2), {B, T, C});
        CHECK(profile_totals().calls[(int)OpKind::Movement] == 0);
        backward(sum(merged * dy));
        set_profiling(false);
        CHECK(profile_totals().calls[(int)OpKind::Movement] == 3);  // the three leaves' gradients
        reset_profile();
        auto apart = [&](const Tensor& x) { return contiguous(heads(x)); };
        Tensor q2 = rope(apart(copied[0]), t.cos, t.sin), k2 = rope(apart(copied[1]), t.cos, t.sin);
        Tensor y2 = scaled_dot_product_attention(q2, k2, apart(copied[2]), true);
        Tensor merged2 = reshape(contiguous(transpose(y2, 1, 2)), {B, T, C});
        backward(sum(merged2 * dy));
        CHECK(q.to_vector() == q2.to_vector());
        CHECK(merged.to_vector() == merged2.to_vector());
        for (int i = 0; i < 3; ++i) CHECK(viewed[i].grad().to_vector() == copied[i].grad().to_vector());
    }
}
