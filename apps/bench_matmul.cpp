// bench_matmul — GFLOP/s of normcore's CPU matmul (float32) on square and
// transformer-shaped products, with 1 thread and with 2 threads.
//
//   make bench            (or build/bench_matmul [repeats])
//
// A product of [M, K] by [K, N] costs 2 M N K floating-point operations
// (one multiply and one add per term). Each shape is run once to warm up,
// then timed over `repeats` runs; the best run is reported, which is the
// usual convention for throughput (other processes only ever slow us down).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tensor/raw_ops.h"

using namespace nc;

static double best_seconds(const Tensor& a, const Tensor& b, int repeats) {
    raw::matmul(a, b);  // warm-up: page in memory, start the thread pool
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        auto start = std::chrono::steady_clock::now();
        Tensor c = raw::matmul(a, b);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, s);
    }
    return best;
}

int main(int argc, char** argv) {
    int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
    if (repeats < 1) {
        std::fprintf(stderr, "bench_matmul: repeats must be a positive integer, got '%s'\n", argv[1]);
        return 1;
    }
    struct Shape3 { int64_t M, K, N; const char* label; };
    const Shape3 shapes[] = {
        {512, 512, 512, "square"},
        {1024, 1024, 1024, "square"},
        {1024, 768, 3072, "MLP up: C=768 -> 4C"},
        {1024, 3072, 768, "MLP down: 4C -> C=768"},
        {1024, 256, 768, "QKV: C=256 -> 3C"},
        {1024, 256, 1024, "MLP up: C=256 -> 4C"},
        {1024, 1024, 256, "MLP down: 4C -> C=256"},
    };
    int max_threads = omp_get_max_threads();
    std::printf("normcore matmul benchmark (float32, best of %d runs)\n", repeats);
    std::printf("%-18s %-24s %14s %14s %8s\n", "M x K x N", "kind", "1 thread", "2 threads", "speedup");
    Generator gen(0);
    for (const Shape3& s : shapes) {
        Tensor a = raw::randn({s.M, s.K}, gen), b = raw::randn({s.K, s.N}, gen);
        double flops = 2.0 * (double)s.M * (double)s.N * (double)s.K;
        omp_set_num_threads(1);
        double g1 = flops / best_seconds(a, b, repeats) / 1e9;
        omp_set_num_threads(std::min(2, max_threads));
        double g2 = flops / best_seconds(a, b, repeats) / 1e9;
        char dims[64];
        std::snprintf(dims, sizeof dims, "%lld x %lld x %lld", (long long)s.M, (long long)s.K, (long long)s.N);
        std::printf("%-18s %-24s %8.1f GF/s %8.1f GF/s %7.2fx\n", dims, s.label, g1, g2, g2 / g1);
    }
    omp_set_num_threads(max_threads);
    return 0;
}
