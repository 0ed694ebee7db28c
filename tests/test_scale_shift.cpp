// scale_shift (tensor/ops/scale_shift.h), the README's worked example of a
// fused op: its forward against x s + b computed with plain tensor ops, its
// gradients against float64 finite differences (leading dims, a
// non-contiguous input), and its errors.
#include "helpers.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_gradcheck;
using nc_test::check_values;
using nc_test::leaf;
using V = std::vector<Tensor>;

TEST_CASE("scale_shift: y = x scale + shift over the last dim, its gradients, its errors", "[nn][scale_shift]") {
    Tensor x = leaf({2, 3, 5}, 1), scale = leaf({5}, 2), shift = leaf({5}, 3);
    check_values(scale_shift(x, scale, shift), raw::add(raw::mul(x, scale), shift).to_vector(), 1e-15);
    Tensor x32 = raw::to_dtype(x, kFloat32);
    check_values(raw::scale_shift(x32, raw::to_dtype(scale, kFloat32), raw::to_dtype(shift, kFloat32)),
                 raw::add(raw::mul(x, scale), shift).to_vector(), 1e-6);
    check_gradcheck([](const V& v) { return scale_shift(v[0], v[1], v[2]); }, {x, scale, shift});
    Tensor wide = leaf({5, 4}, 4);  // transposed: a non-contiguous [4, 5] input
    check_gradcheck([](const V& v) { return scale_shift(transpose(v[0], 0, 1), v[1], v[2]); }, {wide, scale, shift});
    check_error([&] { raw::scale_shift(x, leaf({4}, 5), shift); }, {"scale_shift", "scale", "[4]", "5 features"});
    check_error([&] { raw::scale_shift(x, scale, Tensor()); }, {"scale_shift", "needs a shift"});
}
