// Chapter 10 — the CUDA backend. Built and run by `make test`; the text is
// in 10-cuda.md. The first part runs anywhere: it checks, on the CPU, the
// column-major trick the cuBLAS matmul rests on. The second part runs only
// when a GPU is usable, and says so when it is not.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "autograd/ops_nn.h"
#include "tensor/backend.h"
#include "tensor/raw_nn.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 10: expected %s\n", what);
        std::exit(1);
    }
}

// A textbook column-major GEMM, as BLAS defines it: C = A B with
// A(i, p) = a[i + p * lda], B(p, j) = b[p + j * ldb], C(i, j) = c[i + j * ldc].
static void gemm_column_major(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                              int ldc) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            float total = 0;
            for (int p = 0; p < k; ++p) total += a[i + p * lda] * b[p + j * ldb];
            c[i + j * ldc] = total;
        }
}

// Milliseconds per call of `run`, the best of 5 rounds of 10 calls. GPU
// work is queued, so each round ends by reading one number back
// (`finish`), which waits for everything queued before it.
static double milliseconds(const std::function<void()>& run, const std::function<void()>& finish) {
    run();
    finish();  // the first call pays for allocations and module loading
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
        auto start = std::chrono::steady_clock::now();
        for (int call = 0; call < 10; ++call) run();
        finish();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10);
    }
    return best * 1e3;
}

// Runs `body` with the environment variable `name` set to `value` (or
// unset, for nullptr): how the backend's kernel versions are chosen.
static void with_env(const char* name, const char* value, const std::function<void()>& body) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    body();
    unsetenv(name);
}

// Two versions each of the full reduction and of attention, checked against
// the CPU in float64 and timed: the "versions beside a checker" of the text.
static void compare_versions(const Device& cuda) {
    Generator gen(10);
    std::printf("\n%-56s %10s %12s\n", "kernel version (checked against the CPU, float64)", "ms / call", "error");

    // The full sum of GPT-2's embedding gradient, 38.6M floats. Rounding
    // allows about n 2^-53 of sum |x| in double; the result is stored as a
    // float, so 2^-24 of it too.
    Tensor x = raw::randn({50257 * 768}, gen);
    double want = raw::sum(raw::to_dtype(x, kFloat64)).item(), size = raw::sum(raw::abs(raw::to_dtype(x, kFloat64))).item();
    Tensor x_gpu = raw::to_device(x, cuda);
    for (const char* version : {"rows", (const char*)nullptr}) {
        Tensor total;
        double ms = 0;
        with_env("NORMCORE_REDUCTION", version, [&] {
            ms = milliseconds([&] { total = raw::sum(x_gpu); }, [&] { total.item(); });
        });
        double error = std::fabs(total.item() - want);
        std::printf("%-56s %10.3f %12.2e\n", version ? "sum, v1: one block of 256 threads" : "sum, v2: up to 1,024 chunks, then their sums",
                    ms, error / size);
        expect(error <= 1e-6 * size, "the GPU's sum to match the CPU's float64 sum");
    }

    // Causal attention, 12 heads x T = 1024 x D = 64, forward and backward.
    const int64_t H = 12, T = 1024, D = 64;
    Tensor q = raw::randn({H, T, D}, gen), k = raw::randn({H, T, D}, gen), v = raw::randn({H, T, D}, gen);
    Tensor dout = raw::randn({H, T, D}, gen);
    const double scale = 1.0 / std::sqrt((double)D);
    auto f64 = [](const Tensor& t) { return raw::to_dtype(t, kFloat64); };
    raw::AttentionForward ref = raw::attention(f64(q), f64(k), f64(v), true, scale);
    raw::AttentionBackward ref_grads = raw::attention_backward(f64(dout), f64(q), f64(k), f64(v), ref, true, scale);
    Tensor qg = raw::to_device(q, cuda), kg = raw::to_device(k, cuda), vg = raw::to_device(v, cuda),
           dg = raw::to_device(dout, cuda);
    auto largest_error = [&](const Tensor& got, const Tensor& reference) {
        return raw::max(raw::abs(raw::sub(f64(raw::to_device(got, kCPU)), reference))).item() /
               raw::max(raw::abs(reference)).item();
    };
    for (const char* version : {"simple", (const char*)nullptr}) {
        raw::AttentionForward fwd;
        raw::AttentionBackward grads;
        double ms = 0;
        with_env("NORMCORE_ATTENTION", version, [&] {
            ms = milliseconds(
                [&] {
                    fwd = raw::attention(qg, kg, vg, true, scale);
                    grads = raw::attention_backward(dg, qg, kg, vg, fwd, true, scale);
                },
                [&] { raw::sum(grads.dk).item(); });
        });
        double error = std::max({largest_error(fwd.out, ref.out), largest_error(grads.dq, ref_grads.dq),
                                 largest_error(grads.dk, ref_grads.dk), largest_error(grads.dv, ref_grads.dv)});
        std::printf("%-56s %10.3f %12.2e\n",
                    version ? "attention fwd+bwd, simple: a block per query row" : "attention fwd+bwd, tiled: 64 queries / 32 keys a block",
                    ms, error);
        expect(error < 1e-4, "the GPU's attention and its gradients to match the CPU's float64 ones");
    }
}

int main() {
    // 1. Row-major memory read column-major is the transpose. So to get the
    //    row-major C = A B (M x N) from a column-major library we ask it for
    //    C^T = B^T A^T (N x M): pass B's memory as the first operand, A's as
    //    the second, with leading dimensions N and K, and C's memory comes
    //    out row-major without any copy.
    const int M = 3, K = 4, N = 2;
    std::vector<float> A(M * K), B(K * N), C(M * N), expected(M * N, 0.0f);
    for (int i = 0; i < M * K; ++i) A[i] = (float)(i + 1);
    for (int i = 0; i < K * N; ++i) B[i] = (float)(i % 3) - 1.0f;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int p = 0; p < K; ++p) expected[i * N + j] += A[i * K + p] * B[p * N + j];
    gemm_column_major(N, M, K, B.data(), N, A.data(), K, C.data(), N);  // C^T = B^T A^T
    std::printf("row-major C = A B through a column-major GEMM of C^T = B^T A^T:\n");
    for (int i = 0; i < M; ++i) std::printf("  %6.1f %6.1f   (expected %6.1f %6.1f)\n", C[i * N], C[i * N + 1],
                                            expected[i * N], expected[i * N + 1]);
    expect(C == expected, "the column-major trick to give the row-major product");

    // 2. On a GPU, if there is one.
    std::string why;
    if (!cuda_available(&why)) {
        std::printf("\nno GPU here (%s): the CUDA part of this chapter is skipped.\n", why.c_str());
        std::printf("chapter 10: all checks passed\n");
        return 0;
    }
    const Device cuda{DeviceType::CUDA, 0};
    Generator gen(10);
    Tensor x = raw::randn({4, 64}, gen), g = raw::ones({64}), b = raw::zeros({64});
    Tensor on_cpu = layer_norm(x, g, b);
    Tensor on_gpu = layer_norm(raw::to_device(x, cuda), raw::to_device(g, cuda), raw::to_device(b, cuda));
    std::printf("\nLayerNorm of a [4, 64] tensor on %s: largest difference from the CPU %.2e\n",
                on_gpu.device().str().c_str(),
                raw::max(raw::abs(raw::sub(on_cpu, raw::to_device(on_gpu, kCPU)))).item());
    expect(raw::max(raw::abs(raw::sub(on_cpu, raw::to_device(on_gpu, kCPU)))).item() < 1e-5,
           "the GPU's LayerNorm to match the CPU's");
    compare_versions(cuda);
    std::printf("chapter 10: all checks passed\n");
    return 0;
}
