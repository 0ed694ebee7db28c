// The caching allocator: size classes, reuse of freed blocks, and a training
// step that, once warmed up, never goes back to the C library.
#include "helpers.h"
#include "nn/models.h"
#include "optim/optimizer.h"
#include "tensor/cpu/allocator.h"

using namespace nc;

TEST_CASE("size classes round up by at most a quarter", "[allocator]") {
    CHECK(cpu::size_class(0) == 64);
    CHECK(cpu::size_class(1) == 64);
    CHECK(cpu::size_class(65) == 128);
    CHECK(cpu::size_class(4096) == 4096);
    CHECK(cpu::size_class(4097) == 5120);  // 4096 + 1024
    CHECK(cpu::size_class(1000000) == 1048576);
    for (size_t n : {size_t(5000), size_t(70000), size_t(1234567), size_t(99999999)}) {
        size_t c = cpu::size_class(n);
        CHECK(c >= n);
        CHECK((double)c <= 1.25 * (double)n + 64);
        CHECK(c % 64 == 0);
    }
}

TEST_CASE("a freed block is handed out again without a system allocation", "[allocator]") {
    void* first = cpu::allocate(100000);
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    cpu::deallocate(first);
    AllocatorStats before = cpu::allocator_stats();
    void* second = cpu::allocate(99000);  // same size class as 100000
    AllocatorStats after = cpu::allocator_stats();
    CHECK(second == first);
    CHECK(after.system_allocations == before.system_allocations);
    CHECK(after.cache_hits == before.cache_hits + 1);
    CHECK(after.bytes_in_use == before.bytes_in_use + cpu::size_class(99000));
    cpu::deallocate(second);
    CHECK(cpu::allocator_stats().bytes_in_use == before.bytes_in_use);
}

TEST_CASE("peak bytes follow the largest live set and can be reset", "[allocator]") {
    cpu::reset_peak_bytes();
    size_t base = cpu::allocator_stats().bytes_in_use;
    {
        Tensor a = raw::zeros({1000, 1000});  // 4 MB
        Tensor b = raw::zeros({1000, 1000});
        CHECK(cpu::allocator_stats().peak_bytes_in_use >= base + 8000000);
    }
    CHECK(cpu::allocator_stats().bytes_in_use == base);
    CHECK(cpu::allocator_stats().peak_bytes_in_use >= base + 8000000);
    cpu::reset_peak_bytes();
    CHECK(cpu::allocator_stats().peak_bytes_in_use == base);
}

TEST_CASE("empty_cache gives the cached blocks back", "[allocator]") {
    { Tensor t = raw::zeros({300, 300}); }
    CHECK(cpu::allocator_stats().bytes_cached > 0);
    cpu::empty_cache();
    CHECK(cpu::allocator_stats().bytes_cached == 0);
}

TEST_CASE("a steady-state training step makes no system allocation", "[allocator][training]") {
    nn::TransformerConfig c = nc_test::tiny_config(nn::gpt2_config());
    Generator gen(5);
    nn::GPT2 model(c, gen);
    optim::AdamW opt(optim::decay_groups(model, 0.1), 1e-3);
    std::vector<int64_t> tokens(32);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = (int64_t)(i * 7 % 16);
    Tensor ids = raw::from_indices(tokens, {4, 8});
    std::rotate(tokens.begin(), tokens.begin() + 1, tokens.end());
    Tensor targets = raw::from_indices(tokens, {4, 8});
    auto step = [&] {
        opt.zero_grad();
        Tensor loss = cross_entropy(model.forward(ids), targets);
        backward(loss);
        opt.step();
    };
    step();  // the first steps fill the cache (and create the optimizer state)
    step();
    AllocatorStats before = cpu::allocator_stats();
    step();
    step();
    AllocatorStats after = cpu::allocator_stats();
    CHECK(after.system_allocations == before.system_allocations);
    CHECK(after.cache_hits > before.cache_hits + 100);  // it did allocate, from the cache
}
