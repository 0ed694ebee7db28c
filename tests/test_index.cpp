// softmax, log_softmax, gather, index_select, embedding, cat, stack.
#include "helpers.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;

TEST_CASE("softmax and log_softmax along any dim", "[softmax]") {
    Tensor x = raw::from_vector(std::vector<double>{1, 2, 3, 1, 1, 1}, {2, 3});
    double z = std::exp(1) + std::exp(2) + std::exp(3);
    check_values(raw::softmax(x, 1), {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z, 1 / 3., 1 / 3., 1 / 3.}, 1e-12);
    check_values(raw::log_softmax(x, -1), {1 - std::log(z), 2 - std::log(z), 3 - std::log(z), -std::log(3), -std::log(3),
                                           -std::log(3)},
                 1e-12);
    // Along dim 0: columns [1,1] -> 1/2, [2,1] and [3,1].
    double s2 = 1 / (1 + std::exp(-1)), s3 = 1 / (1 + std::exp(-2));
    check_values(raw::softmax(x, 0), {0.5, s2, s3, 0.5, 1 - s2, 1 - s3}, 1e-12);
    // Huge logits do not overflow (the max is subtracted first).
    Tensor big = raw::from_vector(std::vector<float>{1000, 1000}, {2});
    check_values(raw::softmax(big, 0), {0.5, 0.5});
}

TEST_CASE("gather, index_select and embedding pick the right elements", "[index]") {
    Tensor x = raw::reshape(raw::arange(0, 12, 1, kFloat64), {3, 4});  // x[i][j] = 4i + j
    Tensor idx = raw::from_indices({3, 0, 1, 1, 2, 2}, {3, 2});
    Tensor g = raw::gather(x, 1, idx);
    CHECK(g.shape() == Shape{3, 2});
    check_values(g, {3, 0, 5, 5, 10, 10});
    Tensor rows = raw::index_select(x, 0, raw::from_indices({2, 0, 2}, {3}));
    check_values(rows, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
    Tensor cols = raw::index_select(x, 1, raw::from_indices({1}, {1}));
    check_values(cols, {1, 5, 9});
    Tensor ids = raw::from_indices({1, 2, 1, 0}, {2, 2});
    Tensor e = embedding(x, ids);
    CHECK(e.shape() == Shape{2, 2, 4});
    check_values(raw::narrow(e, 0, 1, 1), {4, 5, 6, 7, 0, 1, 2, 3});
    // The reverses accumulate over repeated indices.
    Tensor added = raw::index_add({3, 2}, 0, raw::from_indices({1, 1, 0}, {3}), raw::ones({3, 2}, kFloat64));
    check_values(added, {1, 1, 2, 2, 0, 0});
    Tensor scattered = raw::scatter_add({2, 3}, 1, raw::from_indices({0, 0, 2, 1}, {2, 2}), raw::ones({2, 2}, kFloat64));
    check_values(scattered, {2, 0, 0, 0, 1, 1});
}

TEST_CASE("cat and stack", "[join]") {
    Tensor a = raw::reshape(raw::arange(0, 4), {2, 2});
    Tensor b = raw::reshape(raw::arange(4, 10), {2, 3});
    Tensor c = raw::cat({a, b}, 1);
    CHECK(c.shape() == Shape{2, 5});
    check_values(c, {0, 1, 4, 5, 6, 2, 3, 7, 8, 9});
    check_values(raw::cat({a, raw::transpose(a, 0, 1)}, 0), {0, 1, 2, 3, 0, 2, 1, 3});
    Tensor s = raw::stack({a, a}, 0);
    CHECK(s.shape() == Shape{2, 2, 2});
    Tensor s1 = raw::stack({a, raw::add(a, 10.0)}, 2);
    CHECK(s1.shape() == Shape{2, 2, 2});
    check_values(s1, {0, 10, 1, 11, 2, 12, 3, 13});
}

TEST_CASE("index ops reject bad indices", "[index][errors]") {
    Tensor x = raw::zeros({3, 4});
    check_error([&] { raw::index_select(x, 0, raw::from_indices({3}, {1})); }, {"index_select", "index 3", "size 3"});
    check_error([&] { raw::index_select(x, 0, raw::from_vector(std::vector<float>{0}, {1})); }, {"int64", "float32"});
    check_error([&] { raw::gather(x, 1, raw::from_indices({0, 1}, {2, 1})); }, {"gather", "[2, 1]", "[3, 4]"});
    check_error([&] { embedding(x, raw::from_indices({-1}, {1})); }, {"index -1"});
    check_error([&] { raw::cat({x, raw::zeros({3, 5})}, 0); }, {"cat", "[3, 5]", "[3, 4]"});
    check_error([&] { raw::stack({x, raw::zeros({3, 5})}, 0); }, {"stack", "[3, 5]"});
}

TEST_CASE("index_add and scatter_add add int64 data exactly", "[index]") {
    Tensor src = raw::from_indices({1, -2, 3, 40000000000, 5, 6}, {3, 2});
    CHECK(raw::index_add({4, 2}, 0, raw::from_indices({2, 0, 2}, {3}), src).to_int_vector() ==
          std::vector<int64_t>{3, 40000000000, 0, 0, 6, 4, 0, 0});
    CHECK(raw::scatter_add({3, 2}, 1, raw::from_indices({1, 0, 1, 1, 0, 0}, {3, 2}), src).to_int_vector() ==
          std::vector<int64_t>{-2, 1, 0, 40000000003, 11, 0});
}
