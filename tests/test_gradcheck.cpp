// A float64 finite-difference gradient check for every differentiable op,
// including broadcast and non-contiguous inputs.
#include "helpers.h"

using namespace nc;
using nc_test::check_gradcheck;
using nc_test::leaf;
using V = std::vector<Tensor>;

TEST_CASE("gradcheck: binary ops, same shapes and broadcast", "[gradcheck]") {
    Tensor a = leaf({3, 4}, 1), b = leaf({3, 4}, 2), row = leaf({4}, 3), col = leaf({3, 1}, 4);
    Tensor pos = leaf({3, 4}, 5, 0.3, 2.0), pos_row = leaf({4}, 6, 0.3, 2.0);
    check_gradcheck([](const V& x) { return add(x[0], x[1]); }, {a, b});
    check_gradcheck([](const V& x) { return add(x[0], x[1]); }, {a, row});
    check_gradcheck([](const V& x) { return sub(x[0], x[1]); }, {col, row});
    check_gradcheck([](const V& x) { return mul(x[0], x[1]); }, {a, b});
    check_gradcheck([](const V& x) { return mul(x[0], x[1]); }, {col, a});
    check_gradcheck([](const V& x) { return div(x[0], x[1]); }, {a, pos});
    check_gradcheck([](const V& x) { return div(x[0], x[1]); }, {a, pos_row});
    check_gradcheck([](const V& x) { return pow(x[0], x[1]); }, {pos, b});
    check_gradcheck([](const V& x) { return pow(x[0], x[1]); }, {pos, row});
    check_gradcheck([](const V& x) { return pow(x[0], 3.0); }, {a});
    check_gradcheck([](const V& x) { return pow(x[0], -0.5); }, {pos});
    check_gradcheck([](const V& x) { return maximum(x[0], x[1]); }, {a, b});
    check_gradcheck([](const V& x) { return minimum(x[0], x[1]); }, {a, row});
    check_gradcheck([](const V& x) { return x[0] * 2.0 + 1.0 - x[1] / 4.0; }, {a, b});
    check_gradcheck([](const V& x) { return 3.0 / x[0] - 1.0 * x[1]; }, {pos, b});
    check_gradcheck([](const V& x) { return -x[0]; }, {a});
}

TEST_CASE("gradcheck: unary ops", "[gradcheck]") {
    Tensor x = leaf({2, 5}, 7), pos = leaf({2, 5}, 8, 0.3, 2.0);
    check_gradcheck([](const V& v) { return neg(v[0]); }, {x});
    check_gradcheck([](const V& v) { return exp(v[0]); }, {x});
    check_gradcheck([](const V& v) { return log(v[0]); }, {pos});
    check_gradcheck([](const V& v) { return sqrt(v[0]); }, {pos});
    check_gradcheck([](const V& v) { return rsqrt(v[0]); }, {pos});
    check_gradcheck([](const V& v) { return tanh(v[0]); }, {x});
    check_gradcheck([](const V& v) { return sin(v[0]); }, {x});
    check_gradcheck([](const V& v) { return cos(v[0]); }, {x});
    check_gradcheck([](const V& v) { return abs(v[0]); }, {x});  // randn never hits 0
}

TEST_CASE("gradcheck: where sends gradients to the chosen branch", "[gradcheck]") {
    Tensor a = leaf({3, 4}, 9), b = leaf({4}, 10);
    Tensor cond = raw::gt(raw::randn({3, 4}), raw::scalar(0));
    check_gradcheck([cond](const V& v) { return where(cond, v[0], v[1]); }, {a, b});
}

TEST_CASE("gradcheck: reductions", "[gradcheck]") {
    Tensor x = leaf({2, 3, 4}, 11);
    check_gradcheck([](const V& v) { return sum(v[0]); }, {x});
    check_gradcheck([](const V& v) { return sum(v[0], {1}); }, {x});
    check_gradcheck([](const V& v) { return sum(v[0], {0, 2}, true); }, {x});
    check_gradcheck([](const V& v) { return mean(v[0], {2}); }, {x});
    check_gradcheck([](const V& v) { return mean(v[0], {0, 1}, true); }, {x});
    check_gradcheck([](const V& v) { return max(v[0], {1}); }, {x});
    check_gradcheck([](const V& v) { return max(v[0]); }, {x});
    check_gradcheck([](const V& v) { return var(v[0], {2}); }, {x});
    check_gradcheck([](const V& v) { return var(v[0], {0, 2}, 0, true); }, {x});
    // Reductions of a non-contiguous (transposed) input.
    check_gradcheck([](const V& v) { return sum(transpose(v[0], 0, 2), {1}); }, {x});
    check_gradcheck([](const V& v) { return var(permute(v[0], {2, 0, 1}), {0}); }, {x});
}

TEST_CASE("gradcheck: views, reshapes and joins", "[gradcheck]") {
    Tensor x = leaf({2, 3, 4}, 12), y = leaf({2, 2, 4}, 13), r = leaf({3, 1}, 14);
    check_gradcheck([](const V& v) { return reshape(v[0], {4, 6}); }, {x});
    check_gradcheck([](const V& v) { return view(v[0], {6, 4}); }, {x});
    check_gradcheck([](const V& v) { return reshape(transpose(v[0], 1, 2), {-1}); }, {x});  // copies
    check_gradcheck([](const V& v) { return permute(v[0], {1, 2, 0}); }, {x});
    check_gradcheck([](const V& v) { return transpose(v[0], 0, -1); }, {x});
    check_gradcheck([](const V& v) { return narrow(v[0], 2, 1, 2); }, {x});
    check_gradcheck([](const V& v) { return expand(v[0], {2, 3, 5}); }, {r});
    check_gradcheck([](const V& v) { return squeeze(unsqueeze(v[0], 1), 1); }, {x});
    check_gradcheck([](const V& v) { return squeeze(v[0]); }, {r});
    check_gradcheck([](const V& v) { return contiguous(transpose(v[0], 0, 1)); }, {x});
    check_gradcheck([](const V& v) { return flatten(v[0], 1); }, {x});
    check_gradcheck([](const V& v) { return cat({v[0], v[1]}, 1); }, {x, y});
    check_gradcheck([](const V& v) { return stack({v[0], v[0] * 2.0}, 1); }, {x});
    // A view used twice (overlapping slices): gradients must add up.
    check_gradcheck([](const V& v) { return narrow(v[0], 1, 0, 2) * narrow(v[0], 1, 1, 2); }, {x});
}

TEST_CASE("gradcheck: matmul, including batched broadcast and transposed operands", "[gradcheck]") {
    Tensor a = leaf({3, 4}, 15), b = leaf({4, 5}, 16), batched = leaf({2, 3, 4}, 17), vec = leaf({4}, 18);
    check_gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {a, b});
    check_gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {batched, b});
    check_gradcheck([](const V& v) { return matmul(transpose(v[1], 0, 1), transpose(v[0], 0, 1)); }, {a, b});
    check_gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {a, vec});
    check_gradcheck([](const V& v) { return matmul(v[1], v[0]); }, {b, vec});
    Tensor q = leaf({2, 1, 3, 4}, 19), k = leaf({3, 5, 4}, 20);
    check_gradcheck([](const V& v) { return matmul(v[0], transpose(v[1], -1, -2)); }, {q, k});
}

TEST_CASE("gradcheck: softmax, log_softmax and indexing", "[gradcheck]") {
    Tensor x = leaf({3, 5}, 21), w = leaf({6, 4}, 22);
    check_gradcheck([](const V& v) { return softmax(v[0], 1); }, {x});
    check_gradcheck([](const V& v) { return softmax(v[0], 0); }, {x});
    check_gradcheck([](const V& v) { return log_softmax(v[0], -1); }, {x});
    check_gradcheck([](const V& v) { return log_softmax(transpose(v[0], 0, 1), 1); }, {x});
    Tensor idx = raw::from_indices({4, 4, 0, 1, 2, 3}, {3, 2});
    check_gradcheck([idx](const V& v) { return gather(v[0], 1, idx); }, {x});
    Tensor rows = raw::from_indices({5, 0, 5, 2}, {4});
    check_gradcheck([rows](const V& v) { return index_select(v[0], 0, rows); }, {w});
    check_gradcheck([rows](const V& v) { return index_select(v[0], 1, raw::from_indices({3, 3}, {2})); }, {w});
    Tensor ids = raw::from_indices({1, 1, 5, 0, 2, 1}, {2, 3});
    check_gradcheck([ids](const V& v) { return embedding(v[0], ids); }, {w});
    // The cross-entropy pattern: -mean(gather(log_softmax(logits), targets)).
    Tensor targets = raw::from_indices({2, 0, 4}, {3, 1});
    check_gradcheck([targets](const V& v) { return -mean(gather(log_softmax(v[0], 1), 1, targets)); }, {x});
}

TEST_CASE("gradcheck catches a wrong gradient", "[gradcheck]") {
    // An op whose backward is off by a factor of 2: gradcheck must say so.
    auto wrong_square = [](const V& v) {
        const Tensor& x = v[0];
        return record("WrongSquare", raw::mul(x, x), {x},
                      [x](const Tensor& g) { return std::vector<Tensor>{raw::mul(g, x)}; });  // should be 2 g x
    };
    GradcheckResult r = gradcheck(wrong_square, {leaf({4}, 23)});
    INFO(r.report());
    CHECK(!r.passed);
    CHECK(r.worst.find("input 0") != std::string::npos);
    check_gradcheck([](const V& v) { return v[0] * v[0]; }, {leaf({4}, 23)});
}
