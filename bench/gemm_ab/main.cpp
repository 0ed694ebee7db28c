// main.cpp — GEMM A/B: an older revision's GEMM against the working tree's,
// in one program, on a machine whose speed changes from minute to minute.
//
// Timing the two versions in separate runs compares two stretches of time
// as much as two programs (on a shared VM, products slow down by 30% for
// minutes at a time). Here every round times one call of each, in
// alternating order, each right after an untimed warm-up call, and the
// speedup is taken per round, from two calls a few milliseconds apart; the
// median of those ratios is what to read, beside their middle half (25th
// to 75th percentile). The best and the median rate of each side are
// printed too.
//
// Warm operands flatter a product: inside a training step a weight
// gradient reads activations written long before, from L3 or memory. With
// GEMM_AB_EVICT_MB=N set, both cores read an N MiB buffer between the
// warm-up call and the timed one (8: out of L2; 256: out of L3 as well).
// Reads, not writes: written lines would have to go back to memory during
// the timed call.
//
// A shape may name a precision after its layout: MxKxN:LAYOUT:fp16 times
// float16 operands (always widened to float32), :bf16 bfloat16 on the path
// matmul takes on this CPU (AMX, AVX512-BF16 or widened; the new side's
// choice, for both sides), :bf16w bfloat16 widened; float32 without one.
// The 16-bit operands are the same normal numbers rounded (tensor/half.h),
// the result float32.
//
// GEMM_AB_ISA names the micro-kernel both sides run (avx2, avx512, portable,
// neon; default: the CPU's best).
//
// Usage (through gemm_ab.sh): gemm_ab ROUNDS MxKxN:LAYOUT[:PRECISION] ...   (LAYOUT NN, NT, TN)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "bench/gemm_ab/isa_named.h"
#include "tensor/cpu/gemm_16bit.h"
#include "tensor/half.h"

void run_old(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const float* a, const float* b,
             float* c, const char* isa);
void run_new(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const float* a, const float* b,
             float* c, const char* isa);
void run16_old(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const uint16_t* a,
               const uint16_t* b, float* c, bool float16, const char* path_name, const char* isa);
void run16_new(int64_t M, int64_t N, int64_t K, bool a_transposed, bool b_transposed, const uint16_t* a,
               const uint16_t* b, float* c, bool float16, const char* path_name, const char* isa);

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

// One shape to compare: M x K x N, the layout, and the precision ("" for
// float32, else fp16, bf16 or bf16w).
struct Shape {
    long long M, K, N;
    bool a_transposed, b_transposed;
    std::string layout, precision;
};

// "MxKxN:LAYOUT" or "MxKxN:LAYOUT:PRECISION", all of it (nothing after).
bool read_shape(const char* text, Shape& shape) {
    char layout[3] = {0}, precision[8] = {0};
    int end = -1;
    if (std::sscanf(text, "%lldx%lldx%lld:%2[NT]%n", &shape.M, &shape.K, &shape.N, layout, &end) != 4 || end < 0)
        return false;
    if (text[end] == ':') {
        int more = -1;
        if (std::sscanf(text + end + 1, "%7[a-z0-9]%n", precision, &more) != 1 || more < 0) return false;
        end += 1 + more;
    }
    shape.layout = layout;
    shape.precision = precision;
    shape.a_transposed = layout[0] == 'T';
    shape.b_transposed = layout[1] == 'T';
    const std::string& p = shape.precision;
    return text[end] == '\0' && shape.M > 0 && shape.K > 0 && shape.N > 0 && shape.layout.size() == 2 &&
           (p.empty() || p == "fp16" || p == "bf16" || p == "bf16w");
}

int compare(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr,
                     "usage: gemm_ab ROUNDS MxKxN:LAYOUT[:fp16|bf16|bf16w] ...  (e.g. 60 1024x1024x256:TN)\n");
        return 2;
    }
    int rounds = std::atoi(argv[1]);
    if (rounds < 1) {
        std::fprintf(stderr, "gemm_ab: ROUNDS must be at least 1, got '%s'\n", argv[1]);
        return 2;
    }
    std::vector<Shape> shapes;
    bool any_16bit = false, any_bf16 = false;
    for (int i = 2; i < argc; ++i) {
        Shape shape;
        if (!read_shape(argv[i], shape)) {
            std::fprintf(stderr,
                         "gemm_ab: cannot read shape '%s' (expected like 1024x1024x256:TN, or with :fp16, :bf16 or "
                         ":bf16w after the layout)\n",
                         argv[i]);
            return 2;
        }
        any_16bit = any_16bit || !shape.precision.empty();
        any_bf16 = any_bf16 || shape.precision == "bf16";
        shapes.push_back(shape);
    }
    const char* evict_env = std::getenv("GEMM_AB_EVICT_MB");
    const long evict_mb = evict_env ? std::atol(evict_env) : 0;
    if (evict_mb < 0 || evict_mb > 4096) {
        std::fprintf(stderr, "gemm_ab: GEMM_AB_EVICT_MB must be 0 to 4096 (MiB), got '%s'\n", evict_env);
        return 2;
    }
    // GEMM_AB_ISA=avx2 (or portable, avx512, neon): that micro-kernel on both
    // sides instead of the CPU's best, to time what a CPU without AVX-512
    // runs. Checked here, before any timing (the old side may still lack it).
    const char* isa_env = std::getenv("GEMM_AB_ISA");
    const char* isa = isa_env ? isa_env : "";
    isa_named(isa);
    if (*isa) std::printf("(micro-kernel: %s)\n", isa);
    // bfloat16 on matmul's path: the new side's choice, for both sides.
    const std::string best16 = nc::cpu::gemm16_path_name(nc::cpu::best_gemm16_path(nc::kBFloat16));
    if (any_bf16) std::printf("(bf16: the %s path on both sides)\n", best16.c_str());
    const size_t evict_floats = (size_t)evict_mb * (1 << 20) / sizeof(float);
    Buffer evict(evict_floats + 1);
    std::fill(evict.data, evict.data + evict_floats + 1, 1.0f);
    if (evict_floats) std::printf("(operands evicted before each timed call: %ld MiB read)\n", evict_mb);
    // The layout column widens to hold a precision when a shape names one.
    const int kind_width = any_16bit ? 12 : 6;
    std::printf("%-20s %-*s %24s %24s %9s %13s\n", "M x K x N", kind_width, "layout", "old GF/s best / median",
                "new GF/s best / median", "new/old", "middle half");
    for (const Shape& shape : shapes) {
        const long long M = shape.M, K = shape.K, N = shape.N;
        const bool at = shape.a_transposed, bt = shape.b_transposed, sixteen = !shape.precision.empty();
        Buffer a(M * K), b(K * N), c(M * N);
        std::mt19937 gen(1);
        std::normal_distribution<float> normal;
        for (long long j = 0; j < M * K; ++j) a.data[j] = normal(gen);
        for (long long j = 0; j < K * N; ++j) b.data[j] = normal(gen);
        // The 16-bit operands: the same numbers rounded.
        const bool float16 = shape.precision == "fp16";
        const std::string path = shape.precision == "bf16" ? best16 : "widen to float32";
        std::vector<uint16_t> a16(sixteen ? M * K : 0), b16(sixteen ? K * N : 0);
        for (size_t j = 0; j < a16.size(); ++j)
            a16[j] = float16 ? nc::to_float16(a.data[j]).bits : nc::to_bfloat16(a.data[j]).bits;
        for (size_t j = 0; j < b16.size(); ++j)
            b16[j] = float16 ? nc::to_float16(b.data[j]).bits : nc::to_bfloat16(b.data[j]).bits;
        auto call = [&](bool old_side) {
            if (sixteen)
                (old_side ? run16_old : run16_new)(M, N, K, at, bt, a16.data(), b16.data(), c.data, float16,
                                                   path.c_str(), isa);
            else
                (old_side ? run_old : run_new)(M, N, K, at, bt, a.data, b.data, c.data, isa);
        };
        auto time_one = [&](bool old_side) {
            call(old_side);  // warm-up: caches, thread pool
            float lines = 0;
#pragma omp parallel for schedule(static) reduction(+ : lines)
            for (size_t j = 0; j < evict_floats; j += 16) lines += evict.data[j];  // one read per cache line
            evict_sink = lines;
            double start = now();
            call(old_side);
            return now() - start;
        };
        std::vector<double> old_rate, new_rate, speedup;
        double flop = 2.0 * (double)M * (double)N * (double)K;
        for (int r = 0; r < rounds; ++r) {
            double t_old, t_new;
            if (r % 2 == 0) {
                t_old = time_one(true);
                t_new = time_one(false);
            } else {
                t_new = time_one(false);
                t_old = time_one(true);
            }
            old_rate.push_back(flop / t_old / 1e9);
            new_rate.push_back(flop / t_new / 1e9);
            speedup.push_back(t_old / t_new);
        }
        char dims[64];
        std::snprintf(dims, sizeof dims, "%lld x %lld x %lld", M, K, N);
        const std::string kind = shape.layout + (sixteen ? " " + shape.precision : "");
        // The middle half of the per-round ratios (25th to 75th percentile):
        // how far one round's comparison can be trusted.
        std::printf("%-20s %-*s %13.1f / %8.1f %13.1f / %8.1f %9.3f %6.3f-%6.3f\n", dims, kind_width, kind.c_str(),
                    percentile(old_rate, 1.0), percentile(old_rate, 0.5), percentile(new_rate, 1.0),
                    percentile(new_rate, 0.5), percentile(speedup, 0.5), percentile(speedup, 0.25),
                    percentile(speedup, 0.75));
    }
    return 0;
}

int main(int argc, char** argv) {
    try {
        return compare(argc, argv);
    } catch (const std::exception& e) {  // an unknown micro-kernel, or one this CPU cannot run
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}
