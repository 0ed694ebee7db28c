// The CUDA backend against the CPU backend: every raw op, every fused op with
// its gradient, the optimizer, and a training step of each model, on the
// same random inputs. Without a usable GPU (or without the CUDA backend in
// this build) every case returns at once and one line says why, but one:
// opening cuBLAS needs only the library, and runs in every CUDA build.
#include <cstdlib>

#include "cuda_helpers.h"
#include "autograd/ops_nn.h"
#include "nn/models.h"
#include "nn/rope.h"
#include "optim/optimizer.h"
#include "tensor/raw_nn.h"
#include "tensor/ops/adamw.h"
#ifdef NORMCORE_CUDA
#include "cuda/cuda_kernels.h"
#endif

using namespace nc;
using nc_test::check_values;
using nc_test::gpu_or_skip;
using nc_test::kCuda;
using nc_test::on_gpu;
using nc_test::randn;

namespace {

// The GPU result equals the CPU result within a tolerance relative to the
// values' scale (float32 sums in a different order differ in the last bits).
void same(const Tensor& cpu, const Tensor& gpu, double tol = 1e-5) {
    REQUIRE(gpu.device() == kCuda);
    REQUIRE(cpu.shape() == gpu.shape());
    std::vector<double> expected = cpu.to_vector();
    double scale = 1;
    for (double v : expected) scale = std::max(scale, std::abs(v));
    check_values(gpu, expected, tol * scale);
}

// A tiny model of the family; ViTs on 8 x 8 one-channel images, 4 classes.
nn::TransformerConfig tiny_model_config(nn::Family family) {
    nn::TransformerConfig c = nc_test::tiny_config(family == nn::Family::GPT2    ? nn::gpt2_config()
                                                   : family == nn::Family::Llama ? nn::llama_config()
                                                                                 : nn::vit_config());
    c.image_size = 8, c.patch_size = 4, c.channels = 1, c.num_classes = 4;
    return c;
}

}  // namespace

// Needs no GPU: only the library. cuBLAS is not linked into the program
// (cuda/cublas_library.cuh); the backend opens it at its first product. This
// opens it the same way and finds every function the backend calls by name.
TEST_CASE("cuda: cuBLAS opens on demand, with every function the backend calls", "[cuda]") {
#ifdef NORMCORE_CUDA
    REQUIRE_NOTHROW(cuda::open_cublas());
#else
    WARN("skipping: this build has no CUDA backend (make CUDA=1)");
#endif
}

TEST_CASE("cuda: copies round-trip and random numbers equal the CPU's", "[cuda]") {
    if (!gpu_or_skip()) return;
    Tensor x = randn({3, 5}, 1);
    Tensor back = raw::to_device(on_gpu(x), kCPU);
    CHECK(back.to_vector() == x.to_vector());
    CHECK(raw::to_device(on_gpu(raw::transpose(x, 0, 1)), kCPU).to_vector() == raw::transpose(x, 0, 1).to_vector());
    for (DType dtype : {kFloat32, kFloat64}) {
        Generator a(7), b(7);
        same(raw::rand({1000}, a, dtype), raw::rand({1000}, b, dtype, kCuda), 0);
        same(raw::randn({1000}, a, dtype), raw::randn({1000}, b, dtype, kCuda), 1e-12);
        same(raw::bernoulli({1000}, 0.3, a, dtype), raw::bernoulli({1000}, 0.3, b, dtype, kCuda), 0);
    }
}

TEST_CASE("cuda: elementwise ops, broadcasting and strided views", "[cuda]") {
    if (!gpu_or_skip()) return;
    Tensor x = randn({4, 6}, 2), y = randn({6}, 3), pos = raw::add(raw::abs(x), 0.1);
    Tensor gx = on_gpu(x), gy = on_gpu(y), gpos = on_gpu(pos);
    for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Sin, UnaryOp::Cos, UnaryOp::Abs,
                       UnaryOp::Sign, UnaryOp::Relu, UnaryOp::Sigmoid, UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh}) {
        INFO(unary_op_name(op));
        same(raw::unary(op, x), raw::unary(op, gx));
    }
    same(raw::log(pos), raw::log(gpos));
    same(raw::sqrt(pos), raw::sqrt(gpos));
    same(raw::rsqrt(pos), raw::rsqrt(gpos));
    for (int op = (int)BinaryOp::Add; op <= (int)BinaryOp::SwiGLU; ++op) {
        BinaryOp b = (BinaryOp)op;
        INFO(binary_op_name(b));
        if (b == BinaryOp::Pow) same(raw::binary(b, pos, y), raw::binary(b, gpos, gy));
        else same(raw::binary(b, x, y), raw::binary(b, gx, gy));  // y broadcast along the rows
    }
    same(raw::add(raw::transpose(x, 0, 1), 1.0), raw::add(raw::transpose(gx, 0, 1), 1.0));
    Tensor zero = raw::full({}, 0.0), gzero = on_gpu(zero);
    same(raw::where(raw::gt(x, zero), x, y), raw::where(raw::gt(gx, gzero), gx, gy));
    same(raw::to_dtype(x, kFloat64), raw::to_dtype(gx, kFloat64));
    Tensor ids = raw::from_indices({1, 2, 3}, {3});
    same(raw::to_dtype(raw::add(ids, ids), kFloat32), raw::to_dtype(raw::add(on_gpu(ids), on_gpu(ids)), kFloat32), 0);
}

TEST_CASE("cuda: reductions, softmax and indexing", "[cuda]") {
    if (!gpu_or_skip()) return;
    Tensor x = randn({5, 7, 9}, 4), gx = on_gpu(x);
    same(raw::sum(x, {2}), raw::sum(gx, {2}));
    same(raw::sum(x, {0, 1}), raw::sum(gx, {0, 1}));  // the column-sum path
    same(raw::sum(x, {1}), raw::sum(gx, {1}));
    same(raw::max(x, {2}), raw::max(gx, {2}));
    CHECK(raw::argmax(x, 2).to_int_vector() == raw::argmax(gx, 2).to_int_vector());
    same(raw::softmax(x, -1), raw::softmax(gx, -1));
    same(raw::log_softmax(x, 1), raw::log_softmax(gx, 1));
    Tensor index = raw::from_indices({2, 0, 2, 4}, {4}), gindex = on_gpu(index);
    same(raw::index_select(x, 0, index), raw::index_select(gx, 0, gindex));
    same(raw::index_add({5, 7, 9}, 0, index, raw::index_select(x, 0, index)),
         raw::index_add({5, 7, 9}, 0, gindex, raw::index_select(gx, 0, gindex)));
    Tensor gather_index = raw::from_indices({0, 3, 3, 8, 1, 2}, {1, 1, 6});
    Tensor g_cpu = raw::gather(raw::narrow(raw::narrow(x, 0, 0, 1), 1, 0, 1), 2, gather_index);
    Tensor g_gpu = raw::gather(raw::narrow(raw::narrow(gx, 0, 0, 1), 1, 0, 1), 2, on_gpu(gather_index));
    same(g_cpu, g_gpu);
}

TEST_CASE("cuda: a bad index is reported at the next copy to the host, then forgotten", "[cuda][errors]") {
    if (!gpu_or_skip()) return;
    // The raw ops do not read GPU indices on the host (that would wait for the
    // GPU); the kernels skip and record a bad one, copy_to_host throws.
    Tensor gx = on_gpu(randn({5, 3}, 9));
    Tensor picked = raw::index_select(gx, 0, on_gpu(raw::from_indices({1, 7}, {2})));  // no wait, no error yet
    nc_test::check_error([&] { picked.to_vector(); }, {"index_select", "GPU", "index 7", "size 5"});
    // Reported once: the next copy succeeds, and good lookups work again.
    Tensor good = raw::index_select(gx, 0, on_gpu(raw::from_indices({4, 0}, {2})));
    same(raw::index_select(raw::to_device(gx, kCPU), 0, raw::from_indices({4, 0}, {2})), good);
    Tensor logits = on_gpu(randn({2, 4}, 10));
    nc_test::check_error(
        [&] { raw::cross_entropy(logits, on_gpu(raw::from_indices({1, 4}, {2})), -100).losses.to_vector(); },
        {"cross_entropy", "index 4", "size 4"});
    Tensor last_bad = raw::from_indices({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, -1}, {5, 3});
    nc_test::check_error([&] { raw::gather(gx, 1, on_gpu(last_bad)).to_vector(); }, {"gather", "index -1", "size 3"});
    // An index on the wrong device is caught on the host, at the op.
    nc_test::check_error([&] { raw::index_select(gx, 0, raw::from_indices({0}, {1})); }, {"index_select", "cpu", "cuda"});
}

TEST_CASE("cuda: the device allocator counts its memory", "[cuda][memory]") {
    if (!gpu_or_skip()) return;
    const Backend& gpu = backend_for(kCuda);
    gpu.reset_peak_bytes();
    AllocatorStats before = gpu.allocator_stats();
    {
        Tensor big = raw::zeros({1 << 20}, kFloat32, kCuda);  // 4 MiB
        AllocatorStats during = gpu.allocator_stats();
        CHECK(during.bytes_in_use >= before.bytes_in_use + (4u << 20));
        CHECK(during.peak_bytes_in_use >= during.bytes_in_use);
    }
    AllocatorStats after = gpu.allocator_stats();
    CHECK(after.bytes_in_use == before.bytes_in_use);
    CHECK(after.peak_bytes_in_use >= before.bytes_in_use + (4u << 20));
    CHECK(after.bytes_cached >= (4u << 20));  // kept for reuse, not cudaFree'd
    // The same size again comes from the cache.
    Tensor again = raw::zeros({1 << 20}, kFloat32, kCuda);
    CHECK(gpu.allocator_stats().cache_hits > after.cache_hits);
    CHECK(gpu.allocator_stats().system_allocations == after.system_allocations);
}

TEST_CASE("cuda: matmul in every layout, batched and broadcast (cuBLAS)", "[cuda]") {
    if (!gpu_or_skip()) return;
    Tensor a = randn({33, 17}, 5), b = randn({17, 20}, 6);
    Tensor ga = on_gpu(a), gb = on_gpu(b);
    same(raw::matmul(a, b), raw::matmul(ga, gb));
    Tensor at = raw::transpose(raw::contiguous(raw::transpose(a, 0, 1)), 0, 1);  // column-major storage
    Tensor bt = raw::transpose(raw::contiguous(raw::transpose(b, 0, 1)), 0, 1);
    same(raw::matmul(at, bt), raw::matmul(on_gpu(at), on_gpu(bt)));
    same(raw::matmul(a, bt), raw::matmul(ga, on_gpu(bt)));
    Tensor batch = randn({3, 4, 5, 17}, 7), weight = randn({17, 6}, 8);
    same(raw::matmul(batch, weight), raw::matmul(on_gpu(batch), on_gpu(weight)));  // broadcast weight
    Tensor v = randn({17}, 9);
    same(raw::matmul(a, v), raw::matmul(ga, on_gpu(v)));
    same(raw::matmul(raw::narrow(a, 1, 2, 10), raw::narrow(b, 0, 3, 10)),
         raw::matmul(raw::narrow(ga, 1, 2, 10), raw::narrow(gb, 0, 3, 10)));
    // linear: the bias is cuBLAS's starting C (beta = 1)
    Tensor w = randn({6, 17}, 10), bias = randn({6}, 11);
    same(raw::linear(batch, w, bias), raw::linear(on_gpu(batch), on_gpu(w), on_gpu(bias)));
    same(raw::linear(batch, w, Tensor()), raw::linear(on_gpu(batch), on_gpu(w), Tensor()));
}

// f on both devices: the outputs and the gradients of sum(f(x) * r) agree.
static void same_with_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                const std::vector<Tensor>& inputs, double tol = 1e-4) {
    std::vector<Tensor> cpu, gpu;
    for (const Tensor& x : inputs) {
        cpu.push_back(raw::clone(x).set_requires_grad(is_floating(x.dtype())));
        gpu.push_back(raw::clone(on_gpu(x)).set_requires_grad(is_floating(x.dtype())));
    }
    Tensor out_cpu = f(cpu), out_gpu = f(gpu);
    same(out_cpu, out_gpu, tol);
    Tensor r = randn(out_cpu.shape(), 99);
    backward(sum(out_cpu * r));
    backward(sum(out_gpu * on_gpu(r)));
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!cpu[i].requires_grad()) continue;
        INFO("gradient of input " << i);
        same(cpu[i].grad(), gpu[i].grad(), tol);
    }
}

TEST_CASE("cuda: fused ops and their backward passes", "[cuda]") {
    if (!gpu_or_skip()) return;
    same_with_gradients([](const std::vector<Tensor>& v) { return linear(v[0], v[1], v[2]); },
                        {randn({2, 5, 17}, 12), randn({6, 17}, 13), randn({6}, 14)});
    using V = std::vector<Tensor>;
    Tensor x = randn({6, 40}, 10), g = randn({40}, 11), b = randn({40}, 12);
    same_with_gradients([](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-5); }, {x, g, b});
    same_with_gradients([](const V& v) { return rms_norm(v[0], v[1], 1e-5); }, {x, g});
    same_with_gradients([](const V& v) { return gelu(v[0], true); }, {x});
    same_with_gradients([](const V& v) { return swiglu(v[0], v[1]); }, {x, randn({6, 40}, 13)});
    Tensor targets = raw::from_indices({1, 0, 39, 5, -100, 7}, {6});
    same_with_gradients([targets](const V& v) { return cross_entropy(v[0], raw::to_device(targets, v[0].device())); },
                        {x});
    Tensor u = randn({6, 40}, 14), alpha = raw::full({1}, 0.7);
    same_with_gradients([](const V& v) { return geodesic_update(v[0], v[1], v[2]); }, {x, u, alpha});
    same_with_gradients([](const V& v) { return dyt(v[0], v[1], v[2], v[3]); }, {x, alpha, g, b});
    same_with_gradients([](const V& v) { return dyt(v[0], v[1], v[2], Tensor()); }, {x, alpha, g});
    same_with_gradients([](const V& v) { return scale_shift(v[0], v[1], v[2]); }, {x, g, b});
    nn::RopeTables rope = nn::rope_tables(40, 16, 10000.0);  // constants: moved to the device inside
    same_with_gradients([rope](const V& v) {
        return nc::rope(v[0], raw::to_device(rope.cos, v[0].device()), raw::to_device(rope.sin, v[0].device()));
    }, {randn({2, 3, 40, 16}, 18)});
    for (bool causal : {true, false}) {
        INFO("causal " << causal);
        Tensor q = randn({2, 3, 70, 16}, 15), k = randn({2, 3, 70, 16}, 16), vv = randn({2, 3, 70, 8}, 17);
        same_with_gradients([causal](const V& v) { return scaled_dot_product_attention(v[0], v[1], v[2], causal); },
                            {q, k, vv});
        // Views in and out (GPT-2's packed q, k, v, its merged output, the
        // gradients in d(qkv)): the kernels read and write them in place
        // (cuda/attention_strides.cuh). And operands of 3 and 5 dims, which
        // raw::attention_grid views as [batch, heads, R, C].
        same_with_gradients([causal](const V& v) { return packed_qkv_attention(v[0], 3, causal); },
                            {randn({2, 70, 3 * 48}, 19)});
        // Mixed precision: contiguous 16-bit q, k, v, gradients into d(qkv)'s
        // views. The tolerance is bfloat16's (2^-8): the two devices' float32
        // outputs may round to neighbouring bfloat16 copies for backward.
        same_with_gradients([causal](const V& v) { return packed_qkv_attention(v[0], 3, causal, kBFloat16); },
                            {randn({2, 70, 3 * 48}, 19)}, 1e-2);
        same_with_gradients([causal](const V& v) { return scaled_dot_product_attention(v[0], v[1], v[2], causal); },
                            {randn({6, 33, 16}, 20), randn({6, 33, 16}, 21), randn({6, 33, 16}, 22)});
        same_with_gradients([causal](const V& v) { return scaled_dot_product_attention(v[0], v[1], v[2], causal); },
                            {randn({2, 2, 3, 33, 16}, 23), randn({2, 2, 3, 33, 16}, 24), randn({2, 2, 3, 33, 16}, 25)});
    }
}

TEST_CASE("cuda: the tiled attention kernels equal the CPU's and the simple kernels", "[cuda][attention]") {
    if (!gpu_or_skip()) return;
    // float32 with q and k 16, 32, 64 or 128 wide and v as wide or twice as
    // wide runs the tiled kernels (cuda/attention_tiled.cuh); sizes cover one
    // partial tile, several tiles, and a single query; non-causal also with
    // more keys than queries. tests/emulated/ runs the same kernels on the
    // CPU emulator, on every machine.
    using V = std::vector<Tensor>;
    struct Case {
        int64_t T, S, D, Dv;
        bool causal;
    };
    for (Case c : {Case{70, 70, 64, 64, true}, Case{130, 130, 32, 32, true}, Case{1, 1, 16, 16, true},
                   Case{70, 70, 64, 64, false}, Case{5, 97, 32, 32, false}, Case{33, 33, 16, 16, false},
                   Case{150, 150, 128, 128, true}, Case{70, 40, 128, 128, false}, Case{90, 90, 32, 64, true},
                   Case{70, 70, 64, 128, false}, Case{40, 40, 16, 32, true}}) {
        INFO("T=" << c.T << " S=" << c.S << " D=" << c.D << " Dv=" << c.Dv << " causal " << c.causal);
        Tensor q = randn({2, 3, c.T, c.D}, 30), k = randn({2, 3, c.S, c.D}, 31), v = randn({2, 3, c.S, c.Dv}, 32);
        bool causal = c.causal;
        auto attend = [causal](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal); };
        same_with_gradients(attend, {q, k, v});
        // The same on the GPU with the simple kernels.
        V tiled_in, simple_in;
        for (const Tensor& x : {q, k, v}) {
            tiled_in.push_back(raw::clone(on_gpu(x)).set_requires_grad(true));
            simple_in.push_back(raw::clone(on_gpu(x)).set_requires_grad(true));
        }
        Tensor r = on_gpu(randn({2, 3, c.T, c.Dv}, 33));
        Tensor tiled = attend(tiled_in);
        backward(sum(tiled * r));
        setenv("NORMCORE_ATTENTION", "simple", 1);
        Tensor simple = attend(simple_in);
        backward(sum(simple * r));
        unsetenv("NORMCORE_ATTENTION");
        same(raw::to_device(simple, kCPU), tiled, 1e-4);
        for (int i = 0; i < 3; ++i) same(raw::to_device(simple_in[i].grad(), kCPU), tiled_in[i].grad(), 1e-4);
    }
}

TEST_CASE("cuda: the fused AdamW step", "[cuda][optim]") {
    if (!gpu_or_skip()) return;
    Tensor p = randn({40000}, 20), grad = randn({40000}, 21);
    Tensor m = raw::zeros({40000}), v = raw::zeros({40000});
    Tensor gp = on_gpu(p), gg = on_gpu(grad), gm = on_gpu(m), gv = on_gpu(v);
    AdamWStep h{1e-2, 0.9, 0.95, 1e-8, 0.1, 0.05};
    raw::adamw_update({p}, {grad}, {m}, {v}, {0.1}, h);
    raw::adamw_update({gp}, {gg}, {gm}, {gv}, {0.1}, h);
    same(p, gp);
    same(m, gm);
    same(v, gv);
}

TEST_CASE("cuda: a training step of each model equals the CPU's", "[cuda][training]") {
    if (!gpu_or_skip()) return;
    for (nn::Family family : {nn::Family::GPT2, nn::Family::Llama, nn::Family::ViT}) {
        nn::TransformerConfig c = tiny_model_config(family);
        struct Built {
            std::shared_ptr<nn::TransformerModel> model;
            std::function<Tensor(const Tensor&)> forward;
        };
        auto build = [&](Generator& gen) -> Built {
            if (family == nn::Family::GPT2) {
                auto m = std::make_shared<nn::GPT2>(c, gen);
                return {m, [m](const Tensor& x) { return m->forward(x); }};
            }
            if (family == nn::Family::Llama) {
                auto m = std::make_shared<nn::Llama>(c, gen);
                return {m, [m](const Tensor& x) { return m->forward(x); }};
            }
            auto m = std::make_shared<nn::ViT>(c, gen);
            return {m, [m](const Tensor& x) { return m->forward(x); }};
        };
        Generator g1(3), g2(3);
        Built cpu = build(g1), gpu = build(g2);
        auto cpu_model = cpu.model, gpu_model = gpu.model;
        gpu_model->to(kCuda);
        Tensor input = family == nn::Family::ViT ? randn({4, 1, 8, 8}, 30)
                                                 : raw::from_indices({1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 7, 6, 5, 4, 3, 2}, {2, 8});
        Tensor targets = family == nn::Family::ViT ? raw::from_indices({0, 1, 2, 3}, {4})
                                                   : raw::from_indices({2, 3, 4, 5, 6, 7, 8, 9, 8, 7, 6, 5, 4, 3, 2, 1}, {2, 8});
        optim::AdamW cpu_opt(optim::decay_groups(*cpu_model, 0.1), 1e-2), gpu_opt(optim::decay_groups(*gpu_model, 0.1), 1e-2);
        for (int step = 0; step < 2; ++step) {
            cpu_opt.zero_grad();
            gpu_opt.zero_grad();
            Tensor cpu_loss = cross_entropy(cpu.forward(input), targets);
            Tensor gpu_loss = cross_entropy(gpu.forward(on_gpu(input)), on_gpu(targets));
            INFO("model family " << (int)family << " step " << step);
            CHECK(gpu_loss.item() == Approx(cpu_loss.item()).epsilon(1e-4));
            backward(cpu_loss);
            backward(gpu_loss);
            cpu_opt.step();
            gpu_opt.step();
        }
        auto cpu_params = cpu_model->named_parameters(), gpu_params = gpu_model->named_parameters();
        for (size_t i = 0; i < cpu_params.size(); ++i) {
            INFO(cpu_params[i].first);
            same(cpu_params[i].second, gpu_params[i].second, 1e-3);
        }
    }
}

// The aliasing rule on the GPU (tests/test_aliasing.cpp has the CPU side):
// forward passes of other shapes, B*T = 1 included, in training and eval
// mode, leave every weight bit-identical and a probe's logits unchanged,
// and the GPU's logits equal the CPU's.
TEST_CASE("cuda: forward passes never write the weights, and logits do not depend on earlier shapes",
          "[cuda][aliasing]") {
    if (!gpu_or_skip()) return;
    for (nn::Family family : {nn::Family::GPT2, nn::Family::Llama, nn::Family::ViT}) {
        nn::TransformerConfig c = tiny_model_config(family);
        c.dropout = 0.1;
        Generator g1(5), g2(5);
        std::shared_ptr<nn::TransformerModel> cpu_model = nn::make_model(c, g1), gpu_model = nn::make_model(c, g2);
        gpu_model->to(kCuda);
        auto forward = [](const nn::TransformerModel& m, const Tensor& x) { return m.forward(x); };
        auto input = [&](int64_t B, int64_t T, uint64_t seed) {
            if (family == nn::Family::ViT) return on_gpu(randn({B, 1, 8, 8}, seed));
            std::vector<int64_t> ids;
            for (int64_t i = 0; i < B * T; ++i) ids.push_back((int64_t)((seed + 7 * i) % c.vocab_size));
            return on_gpu(raw::from_indices(ids, {B, T}));
        };
        std::map<std::string, std::vector<double>> before;
        for (auto& [name, t] : gpu_model->state_dict()) before[name] = t.to_vector();
        gpu_model->eval();
        cpu_model->eval();
        Tensor probe = input(1, 3, 1);
        std::vector<double> first = forward(*gpu_model, probe).to_vector();
        same(forward(*cpu_model, raw::to_device(probe, kCPU)), forward(*gpu_model, probe), 1e-4);
        for (bool training : {true, false}) {
            gpu_model->train(training);
            for (int64_t T : {int64_t(1), int64_t(2), int64_t(7), c.block_size}) {
                forward(*gpu_model, input(1, T, 10 + T));
                forward(*gpu_model, input(2, T, 20 + T));
            }
        }
        gpu_model->eval();
        INFO("model family " << (int)family);
        CHECK(forward(*gpu_model, probe).to_vector() == first);
        for (auto& [name, t] : gpu_model->state_dict()) {
            INFO(name);
            CHECK(t.to_vector() == before.at(name));
        }
    }
}

// Review of the first GPU run (issue 17): int64 adds and AdamW's (1 - beta).
TEST_CASE("cuda: index_add and scatter_add on int64 data equal the CPU's", "[cuda][index]") {
    if (!gpu_or_skip()) return;
    Tensor src = raw::from_indices({1, -2, 3, 40000000000, 5, 6}, {3, 2});
    Tensor index = raw::from_indices({2, 0, 2}, {3});
    Tensor cpu = raw::index_add({4, 2}, 0, index, src);
    Tensor gpu = raw::index_add({4, 2}, 0, on_gpu(index), on_gpu(src));
    CHECK(gpu.to_int_vector() == cpu.to_int_vector());
    CHECK(cpu.to_int_vector() == std::vector<int64_t>{3, 40000000000, 0, 0, 6, 4, 0, 0});
    Tensor where = raw::from_indices({1, 0, 1, 1, 0, 0}, {3, 2});
    Tensor cpu_s = raw::scatter_add({3, 2}, 1, where, src);
    Tensor gpu_s = raw::scatter_add({3, 2}, 1, on_gpu(where), on_gpu(src));
    CHECK(gpu_s.to_int_vector() == cpu_s.to_int_vector());
}

TEST_CASE("cuda: AdamW's second moment with beta2 = 0.999 matches the CPU's to float32 rounding", "[cuda][optim]") {
    if (!gpu_or_skip()) return;
    Tensor p = randn({4096}, 30), grad = randn({4096}, 31);
    Tensor m = raw::zeros({4096}), v = raw::zeros({4096});
    Tensor gp = on_gpu(p), gg = on_gpu(grad), gm = on_gpu(m), gv = on_gpu(v);
    AdamWStep h{1e-3, 0.9, 0.999, 1e-8, 1.0 - 0.9, 1.0 - 0.999};
    for (int step = 0; step < 5; ++step) {
        raw::adamw_update({p}, {grad}, {m}, {v}, {0.0}, h);
        raw::adamw_update({gp}, {gg}, {gm}, {gv}, {0.0}, h);
    }
    // Per element, relative: (T)(1 - beta2) instead of T(1) - (T)beta2 was 1.3e-5 off.
    std::vector<double> a = v.to_vector(), b = gv.to_vector();
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
        worst = nc_test::worst_of(worst, std::abs(a[i] - b[i]) / std::max(1e-30, std::abs(a[i])));
    INFO("largest relative difference in v: " << worst);
    CHECK(worst < 1e-6);
}
