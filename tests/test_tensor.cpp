// Tensors: creation, storage and strides, views, printing, the generator.
#include <random>

#include "helpers.h"

using namespace nc;
using nc_test::check_error;
using nc_test::check_values;

TEST_CASE("creation functions give the right shapes, dtypes and values", "[tensor]") {
    Tensor z = raw::zeros({2, 3});
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.strides() == Shape{3, 1});
    CHECK(z.dtype() == kFloat32);
    CHECK(z.device() == kCPU);
    check_values(z, {0, 0, 0, 0, 0, 0});
    check_values(raw::ones({2}, kFloat64), {1, 1});
    check_values(raw::full({3}, 2.5), {2.5, 2.5, 2.5});
    check_values(raw::arange(0, 5), {0, 1, 2, 3, 4});
    check_values(raw::arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75});
    check_values(raw::arange(5, 0, -2), {5, 3, 1});
    Tensor v = raw::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
    CHECK(v.dtype() == kFloat64);
    CHECK(v.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
    CHECK(raw::scalar(4.5).item() == 4.5);
    CHECK(raw::scalar(4.5).dim() == 0);
    Tensor idx = raw::from_indices({3, 1, 2}, {3});
    CHECK(idx.dtype() == kInt64);
    CHECK(idx.to_int_vector() == std::vector<int64_t>{3, 1, 2});
}

TEST_CASE("six-dimensional tensors work end to end", "[tensor]") {
    Tensor t = raw::reshape(raw::arange(0, 720), {2, 3, 4, 5, 1, 6});
    CHECK(t.dim() == 6);
    CHECK(t.strides() == Shape{360, 120, 30, 6, 6, 1});
    Tensor s = raw::sum(t, {1, 3});
    CHECK(s.shape() == Shape{2, 4, 1, 6});
    // Element [0, 0, 0, 0]: sum over i1 in 0..2, i3 in 0..4 of 120 i1 + 6 i3.
    double expected = 0;
    for (int i1 = 0; i1 < 3; ++i1)
        for (int i3 = 0; i3 < 5; ++i3) expected += 120 * i1 + 6 * i3;
    CHECK(s.to_vector()[0] == expected);
    check_error([] { raw::zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}); }, {"at most 8"});
}

// A Shape keeps up to kMaxDims numbers inside itself and moves them to the
// heap past that; either way it must act as the std::vector<int64_t> it
// replaced. Random edits, each applied to both, the two compared after each.
TEST_CASE("a Shape acts as a std::vector<int64_t>, inside and past kMaxDims", "[tensor][shape]") {
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        Shape shape;
        std::vector<int64_t> reference;
        for (int step = 0; step < 40; ++step) {
            int64_t value = (int64_t)rng() % 1000;
            size_t at = reference.empty() ? 0 : rng() % (reference.size() + 1);
            switch (rng() % 7) {
                case 0: shape.push_back(value); reference.push_back(value); break;
                case 1:
                    if (!reference.empty()) { shape.pop_back(); reference.pop_back(); }
                    break;
                case 2: {
                    size_t n = rng() % 12;
                    shape.resize(n, value);
                    reference.resize(n, value);
                    break;
                }
                case 3:  // insert returns where the new number is, as a vector's does
                    REQUIRE(shape.insert(shape.begin() + at, value) - shape.begin() == (std::ptrdiff_t)at);
                    reference.insert(reference.begin() + at, value);
                    break;
                case 4: {  // insert a run of the shape's own numbers
                    size_t n = std::min<size_t>(rng() % 4, reference.size());
                    shape.insert(shape.begin() + at, shape.begin(), shape.begin() + n);
                    std::vector<int64_t> run(reference.begin(), reference.begin() + n);
                    reference.insert(reference.begin() + at, run.begin(), run.end());
                    break;
                }
                case 5:
                    if (at < reference.size()) {
                        size_t n = std::min(reference.size() - at, (size_t)(rng() % 3));
                        REQUIRE(shape.erase(shape.begin() + at, shape.begin() + at + n) - shape.begin() ==
                                (std::ptrdiff_t)at);
                        reference.erase(reference.begin() + at, reference.begin() + at + n);
                    }
                    break;
                case 6: {  // a changed copy leaves the original alone; a move empties its source
                    Shape copy = shape;
                    if (!copy.empty()) copy[0] += 1;
                    CHECK((copy == shape) == reference.empty());
                    Shape moved = std::move(shape);
                    CHECK(shape.empty());
                    shape.push_back(value);  // usable after the move
                    CHECK(shape == Shape{value});
                    shape = std::move(moved);
                    CHECK(moved.empty());
                    break;
                }
            }
            REQUIRE(shape.size() == reference.size());
            REQUIRE(std::vector<int64_t>(shape) == reference);
            REQUIRE(shape == Shape(reference));
            if (!reference.empty()) REQUIRE(shape.back() == reference.back());
        }
    }
    CHECK(Shape{1, 2} != Shape{1, 2, 0});
    CHECK(Shape{1, 2} != Shape{1, 3});
    CHECK(Shape(3) == Shape{0, 0, 0});
    CHECK(Shape(10, 5) == Shape(std::vector<int64_t>(10, 5)));
}

TEST_CASE("views share storage and only change shape, strides and offset", "[tensor][views]") {
    Tensor a = raw::reshape(raw::arange(0, 6), {2, 3});  // [[0,1,2],[3,4,5]]
    Tensor t = raw::transpose(a, 0, 1);
    CHECK(t.shape() == Shape{3, 2});
    CHECK(t.strides() == Shape{1, 3});
    CHECK(!t.is_contiguous());
    CHECK(t.storage() == a.storage());
    check_values(t, {0, 3, 1, 4, 2, 5});

    Tensor row = raw::narrow(a, 0, 1, 1);
    CHECK(row.offset() == 3);
    check_values(row, {3, 4, 5});
    Tensor col = raw::narrow(a, 1, 2, 1);
    CHECK(col.offset() == 2);
    check_values(col, {2, 5});

    // Writing through a view changes the base: they are the same memory.
    raw::fill_(col, -1);
    check_values(a, {0, 1, -1, 3, 4, -1});

    Tensor p = raw::permute(raw::reshape(raw::arange(0, 24), {2, 3, 4}), {2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    CHECK(p.strides() == Shape{1, 12, 4});

    Tensor e = raw::expand(raw::from_vector(std::vector<float>{1, 2, 3}, {3}), {2, 3});
    CHECK(e.strides() == Shape{0, 1});
    check_values(e, {1, 2, 3, 1, 2, 3});

    Tensor u = raw::unsqueeze(a, 1);
    CHECK(u.shape() == Shape{2, 1, 3});
    CHECK(raw::squeeze(u, 1).shape() == Shape{2, 3});
    CHECK(raw::squeeze(raw::zeros({1, 2, 1})).shape() == Shape{2});
    CHECK(raw::squeeze(a, 0).shape() == Shape{2, 3});  // size 2: nothing to squeeze
}

TEST_CASE("reshape views when strides allow and copies otherwise; view refuses", "[tensor][views]") {
    Tensor a = raw::reshape(raw::arange(0, 12), {3, 4});
    Tensor r = raw::reshape(a, {2, -1});
    CHECK(r.shape() == Shape{2, 6});
    CHECK(r.storage() == a.storage());

    Tensor t = raw::transpose(a, 0, 1);  // [4, 3], not contiguous
    Tensor flat = raw::reshape(t, {12});
    CHECK(flat.storage() != a.storage());
    check_values(flat, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    check_error([&] { raw::view(t, {12}); }, {"view", "[4, 3]", "contiguous"});
    // Splitting a transposed dim can still be a view.
    Tensor split = raw::view(t, {2, 2, 3});
    CHECK(split.storage() == a.storage());
    check_values(split, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});

    Tensor c = raw::contiguous(t);
    CHECK(c.is_contiguous());
    CHECK(c.strides() == Shape{3, 1});
    check_values(c, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    check_error([&] { raw::reshape(a, {5, -1}); }, {"reshape", "[3, 4]", "[5, -1]"});
}

TEST_CASE("broadcasting follows NumPy's rules", "[tensor][broadcast]") {
    CHECK(broadcast_shapes({2, 1, 3}, {4, 1}, "t") == Shape{2, 4, 3});
    CHECK(broadcast_shapes({}, {5}, "t") == Shape{5});
    CHECK(broadcast_shapes({1}, {3, 1}, "t") == Shape{3, 1});
    check_error([] { broadcast_shapes({2, 3}, {4}, "add"); }, {"add", "[2, 3]", "[4]"});

    Tensor col = raw::reshape(raw::arange(0, 3), {3, 1});
    Tensor row = raw::arange(0, 4);
    Tensor outer = raw::mul(col, row);
    CHECK(outer.shape() == Shape{3, 4});
    check_values(outer, {0, 0, 0, 0, 0, 1, 2, 3, 0, 2, 4, 6});
}

TEST_CASE("dtype conversion and copies", "[tensor]") {
    Tensor a = raw::from_vector(std::vector<float>{1.5f, -2.25f}, {2});
    Tensor d = raw::to_dtype(a, kFloat64);
    CHECK(d.dtype() == kFloat64);
    check_values(d, {1.5, -2.25});
    check_values(raw::to_dtype(a, kInt64), {1, -2});
    Tensor c = raw::clone(a);
    raw::fill_(c, 0);
    check_values(a, {1.5, -2.25});  // the clone is independent
    Tensor dst = raw::zeros({2, 2});
    raw::copy_(dst, raw::from_vector(std::vector<float>{7, 8}, {2}));  // broadcast along rows
    check_values(dst, {7, 8, 7, 8});
    check_error([&] { raw::copy_(a, raw::zeros({3})); }, {"copy_", "[3]", "[2]"});
    // Float to int64 truncates toward zero; NaN gives 0 and values beyond
    // int64's range its nearest end (C++ leaves both undefined: tensor/casts.h).
    for (DType from : {kFloat32, kFloat64}) {
        Tensor odd = raw::to_dtype(raw::from_vector(std::vector<double>{NAN, INFINITY, -INFINITY, 1e30, -1e30, 2.7, -2.7},
                                                    {7}),
                                   from);
        Tensor ints = raw::to_dtype(odd, kInt64);
        const int64_t* got = static_cast<const int64_t*>(ints.raw_data());
        std::vector<int64_t> want = {0, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 2, -2};
        CHECK(std::vector<int64_t>(got, got + 7) == want);
    }
}

TEST_CASE("the generator is reproducible and thread-count independent", "[tensor][random]") {
    Generator g1(42), g2(42), g3(7);
    std::vector<double> a = raw::randn({1000}, g1).to_vector();
    std::vector<double> b = raw::randn({1000}, g2).to_vector();
    std::vector<double> c = raw::randn({1000}, g3).to_vector();
    CHECK(a == b);
    CHECK(a != c);
    // Drawing 600 then 400 gives the same stream as drawing 1000 at once.
    Generator g4(42);
    std::vector<double> first = raw::randn({600}, g4).to_vector();
    std::vector<double> second = raw::randn({400}, g4).to_vector();
    first.insert(first.end(), second.begin(), second.end());
    CHECK(first == a);
    // Moments of a large sample: mean ~ 0, var ~ 1 for randn; U(0,1) for rand.
    Generator g5(3);
    Tensor n = raw::randn({200000}, g5, kFloat64);
    CHECK(std::fabs(raw::mean(n).item()) < 0.01);
    CHECK(std::fabs(raw::var(n).item() - 1.0) < 0.02);
    Tensor u = raw::rand({200000}, g5, kFloat64);
    CHECK(std::fabs(raw::mean(u).item() - 0.5) < 0.01);
    CHECK(raw::max(u).item() < 1.0);
    CHECK(-raw::max(raw::neg(u)).item() >= 0.0);
    Tensor bern = raw::bernoulli({200000}, 0.3, g5);
    CHECK(std::fabs(raw::mean(bern).item() - 0.3) < 0.01);
    // The default generator can be re-seeded.
    manual_seed(5);
    std::vector<double> x = raw::rand({10}).to_vector();
    manual_seed(5);
    CHECK(raw::rand({10}).to_vector() == x);
}

TEST_CASE("philox matches the Random123 known-answer test", "[tensor][random]") {
    // Random123's kat_vectors: philox4x32-10 with counter = 0 and key = 0
    // gives 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
    std::array<uint32_t, 4> w = philox4x32(0, 0);
    CHECK(w[0] == 0x6627e8d5u);
    CHECK(w[1] == 0xe169c58du);
    CHECK(w[2] == 0xbc57ac4cu);
    CHECK(w[3] == 0x9b00dbd8u);
}

TEST_CASE("tensors print like PyTorch", "[tensor][print]") {
    Tensor a = raw::reshape(raw::arange(0, 6), {2, 3});
    CHECK(a.to_string() == "tensor([[0., 1., 2.],\n        [3., 4., 5.]])");
    Tensor f = raw::from_vector(std::vector<float>{1.5f, -2.0f, 0.25f}, {3});
    CHECK(f.to_string() == "tensor([ 1.5000, -2.0000,  0.2500])");
    CHECK(raw::scalar(3.0, kFloat64).to_string() == "tensor(3., dtype=float64)");
    CHECK(raw::from_indices({1, 20}, {2}).to_string() == "tensor([ 1, 20])");
    CHECK(raw::arange(0, 2000).to_string() == "tensor([   0.,    1.,    2., ..., 1997., 1998., 1999.])");
    Tensor big = raw::from_vector(std::vector<float>{1e-5f, 1.0f}, {2});
    CHECK(big.to_string() == "tensor([1.0000e-05, 1.0000e+00])");
    Tensor three = raw::reshape(raw::arange(0, 8), {2, 2, 2});
    CHECK(three.to_string() == "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])");
    Tensor p = raw::zeros({2});
    p.set_requires_grad(true);
    CHECK(p.to_string() == "tensor([0., 0.], requires_grad=True)");
}

TEST_CASE("item and accessors report misuse clearly", "[tensor][errors]") {
    check_error([] { raw::zeros({2, 2}).item(); }, {"item", "[2, 2]"});
    check_error([] { Tensor undefined; undefined.shape(); }, {"undefined"});
    check_error([] { raw::zeros({2}).size(3); }, {"dim 3", "out of range"});
    check_error([] { raw::from_indices({1}, {1}).set_requires_grad(true); }, {"floating", "int64"});
    check_error([] { raw::from_vector(std::vector<float>{1, 2, 3}, {2, 2}); }, {"from_vector", "3 values", "[2, 2]"});
    check_error([] { raw::zeros({2}).data<double>(); }, {"float32"});
}

TEST_CASE("devices: a CUDA tensor is refused clearly when no GPU can be used", "[tensor][errors]") {
    Device cuda{DeviceType::CUDA, 0};
    CHECK(cuda.str() == "cuda:0");
    std::string why;
    if (cuda_available(&why)) {
        SUCCEED("a GPU is usable here; tests/test_cuda.cpp covers it");
        return;
    }
    // Either the build has no CUDA backend or the machine has no usable GPU:
    // the message names the device and the reason.
    INFO(why);
    CHECK(!why.empty());
    check_error([&] { raw::zeros({2}, kFloat32, cuda); }, {"cuda:0", why});
    check_error([] { raw::to_device(raw::zeros({2}), Device{DeviceType::CUDA, 1}); }, {"cuda:1"});
}

TEST_CASE("the CPU backend's table has every entry; a table with one left out is refused", "[tensor][backend]") {
    CHECK_NOTHROW(require_complete(cpu_backend()));
    Backend missing = cpu_backend();
    missing.layer_norm.backward = nullptr;
    nc_test::check_error([&] { require_complete(missing); }, {"cpu backend", "empty", "add_"});
}
