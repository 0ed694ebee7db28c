// main.cpp — GEMM A/B: an older revision's GEMM against the working tree's,
// in one program, on a machine whose speed changes from minute to minute.
//
// Timing the two versions in separate runs compares two stretches of time
// as much as two programs (on a shared VM, products slow down by 30% for
// minutes at a time). Here every round times one call of each, in
// alternating order, each right after an untimed warm-up call, and the
// speedup is taken per round, from two calls a few milliseconds apart; the
// median of those ratios is what to read. The best and the median rate of
// each side are printed too.
//
// Warm operands flatter a product: inside a training step a weight
// gradient reads activations written long before, from L3 or memory. With
// GEMM_AB_EVICT_MB=N set, both cores read an N MiB buffer between the
// warm-up call and the timed one (8: out of L2; 256: out of L3 as well).
// Reads, not writes: written lines would have to go back to memory during
// the timed call.
//
// Usage (through gemm_ab.sh): gemm_ab ROUNDS MxKxN:LAYOUT ...   (LAYOUT NN, NT, TN)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

void run_old(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const float* a, const float* b,
             float* c);
void run_new(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const float* a, const float* b,
             float* c);

namespace {

volatile float evict_sink;  // keeps the eviction reads from being optimized away

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Buffer {  // 64-byte aligned, like normcore's tensors
    explicit Buffer(size_t n) : data(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {}
    ~Buffer() { std::free(data); }
    float* data;
};

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[(size_t)(q * (double)(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: gemm_ab ROUNDS MxKxN:LAYOUT ...  (e.g. 60 1024x1024x256:TN)\n");
        return 2;
    }
    int rounds = std::atoi(argv[1]);
    if (rounds < 1) {
        std::fprintf(stderr, "gemm_ab: ROUNDS must be at least 1, got '%s'\n", argv[1]);
        return 2;
    }
    const char* evict_env = std::getenv("GEMM_AB_EVICT_MB");
    const long evict_mb = evict_env ? std::atol(evict_env) : 0;
    if (evict_mb < 0 || evict_mb > 4096) {
        std::fprintf(stderr, "gemm_ab: GEMM_AB_EVICT_MB must be 0 to 4096 (MiB), got '%s'\n", evict_env);
        return 2;
    }
    const size_t evict_floats = (size_t)evict_mb * (1 << 20) / sizeof(float);
    Buffer evict(evict_floats + 1);
    std::fill(evict.data, evict.data + evict_floats + 1, 1.0f);
    if (evict_floats) std::printf("(operands evicted before each timed call: %ld MiB read)\n", evict_mb);
    std::printf("%-20s %-6s %24s %24s %9s\n", "M x K x N", "layout", "old GF/s best / median", "new GF/s best / median",
                "new/old");
    for (int i = 2; i < argc; ++i) {
        long long M = 0, K = 0, N = 0;
        char layout[3] = {0};
        if (std::sscanf(argv[i], "%lldx%lldx%lld:%2s", &M, &K, &N, layout) != 4 || M < 1 || K < 1 || N < 1 ||
            (layout[0] != 'N' && layout[0] != 'T') || (layout[1] != 'N' && layout[1] != 'T')) {
            std::fprintf(stderr, "gemm_ab: cannot read shape '%s' (expected like 1024x1024x256:TN)\n", argv[i]);
            return 2;
        }
        bool at = layout[0] == 'T', bt = layout[1] == 'T';
        Buffer a(M * K), b(K * N), c(M * N);
        std::mt19937 gen(1);
        std::normal_distribution<float> normal;
        for (long long j = 0; j < M * K; ++j) a.data[j] = normal(gen);
        for (long long j = 0; j < K * N; ++j) b.data[j] = normal(gen);
        auto time_one = [&](auto run) {
            run(M, N, K, at, bt, a.data, b.data, c.data);  // warm-up: caches, thread pool
            float lines = 0;
#pragma omp parallel for schedule(static) reduction(+ : lines)
            for (size_t j = 0; j < evict_floats; j += 16) lines += evict.data[j];  // one read per cache line
            evict_sink = lines;
            double start = now();
            run(M, N, K, at, bt, a.data, b.data, c.data);
            return now() - start;
        };
        std::vector<double> old_rate, new_rate, speedup;
        double flop = 2.0 * (double)M * (double)N * (double)K;
        for (int r = 0; r < rounds; ++r) {
            double t_old, t_new;
            if (r % 2 == 0) {
                t_old = time_one(run_old);
                t_new = time_one(run_new);
            } else {
                t_new = time_one(run_new);
                t_old = time_one(run_old);
            }
            old_rate.push_back(flop / t_old / 1e9);
            new_rate.push_back(flop / t_new / 1e9);
            speedup.push_back(t_old / t_new);
        }
        char dims[64];
        std::snprintf(dims, sizeof dims, "%lld x %lld x %lld", M, K, N);
        std::printf("%-20s %-6s %13.1f / %8.1f %13.1f / %8.1f %9.3f\n", dims, layout, percentile(old_rate, 1.0),
                    percentile(old_rate, 0.5), percentile(new_rate, 1.0), percentile(new_rate, 0.5),
                    percentile(speedup, 0.5));
    }
    return 0;
}
