// Chapter 10 — the CUDA backend. Built and run by `make test`; the text is
// in 10-cuda.md. The first part runs anywhere: it checks, on the CPU, the
// column-major trick the cuBLAS matmul rests on. The second part runs only
// when a GPU is usable, and says so when it is not.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "autograd/ops_nn.h"
#include "tensor/backend.h"

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
    std::printf("chapter 10: all checks passed\n");
    return 0;
}
