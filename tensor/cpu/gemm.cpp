// gemm.cpp — a cache-blocked, register-blocked, multi-threaded GEMM.
//
// The textbook loop  for i, j, p: C[i][j] += A[i][p] * B[p][j]  is slow not
// because of the arithmetic but because of memory: every multiply-add loads
// two numbers. The structure below (after Goto & van de Geijn, "Anatomy of
// High-Performance Matrix Multiplication", 2008, and the BLIS papers) makes
// each loaded number serve many multiply-adds:
//
//   for each tile of C (kMC rows x kNC columns)       <- OpenMP splits tiles
//     for each slice of K (kKC long)
//       pack A[tile rows, slice] into panels of kMR rows   (fits in L2)
//       pack B[slice, tile cols] into panels of kNR cols   (one panel in L1)
//       for each kNR-column panel of B, for each kMR-row panel of A:
//         micro-kernel: a kMR x kNR block of C held in registers,
//                       updated with kKC rank-1 updates
//
// Packing copies the operands into the exact order the micro-kernel reads
// them (unit stride, zero-padded at the edges), which also is where any
// transposition is absorbed. The micro-kernel is plain C++ with compile-time
// sizes; with -O3 and -march=native the compiler keeps the kMR x kNR
// accumulator in vector registers and emits FMA instructions.
#include "tensor/cpu/gemm.h"

#include <algorithm>
#include <cmath>

namespace nc {
namespace cpu {

// Register block: kNR is two vector registers wide, kMR rows of accumulators.
// AVX-512 (32 registers): 12 x 32 floats = 24 zmm accumulators, leaving room
// for the two B vectors and the broadcast A value. (8 rows measured about
// 10-25% slower on the 2-core Sapphire Rapids machines; see the closing note
// of the engine issue.)
// AVX2 (16 registers): 6 x 16 floats = 12 ymm accumulators.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
constexpr int kRows = 12;
#else
constexpr int kVectorBytes = 32;
constexpr int kRows = 6;
#endif

template <typename T>
struct Blocking {
    static constexpr int kMR = kRows;
    static constexpr int kNR = 2 * kVectorBytes / (int)sizeof(T);
    static constexpr int64_t kKC = 256;              // K slice: A panel + B panel stay in cache
    static constexpr int64_t kMC = 16 * kRows;       // rows of C per tile
    static constexpr int64_t kNC = 8 * kNR;          // columns of C per tile
};

static inline float fused_multiply_add(float a, float b, float c) {
#ifdef __FMA__
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}
static inline double fused_multiply_add(double a, double b, double c) {
#ifdef __FMA__
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

// Packs rows [0, m) x cols [0, kc) of A (already offset to the tile) into
// panels of kMR rows: panel r holds A(r*kMR + i, p) at [r][p][i]. Rows past m
// are zero, so the micro-kernel never needs an edge case.
template <typename T>
static void pack_a(const T* A, int64_t rs, int64_t cs, int64_t m, int64_t kc, T* packed) {
    constexpr int MR = Blocking<T>::kMR;
    for (int64_t r = 0; r < m; r += MR) {
        T* panel = packed + r * kc;
        int64_t rows = std::min<int64_t>(MR, m - r);
        for (int64_t p = 0; p < kc; ++p) {
            for (int64_t i = 0; i < rows; ++i) panel[p * MR + i] = A[(r + i) * rs + p * cs];
            for (int64_t i = rows; i < MR; ++i) panel[p * MR + i] = T(0);
        }
    }
}

// Packs rows [0, kc) x cols [0, n) of B into panels of kNR columns:
// panel c holds B(p, c*kNR + j) at [c][p][j], zero-padded past n.
template <typename T>
static void pack_b(const T* B, int64_t rs, int64_t cs, int64_t kc, int64_t n, T* packed) {
    constexpr int NR = Blocking<T>::kNR;
    for (int64_t c = 0; c < n; c += NR) {
        T* panel = packed + c * kc;
        int64_t cols = std::min<int64_t>(NR, n - c);
        for (int64_t p = 0; p < kc; ++p) {
            const T* row = B + p * rs + c * cs;
            for (int64_t j = 0; j < cols; ++j) panel[p * NR + j] = row[j * cs];
            for (int64_t j = cols; j < NR; ++j) panel[p * NR + j] = T(0);
        }
    }
}

// C[0:m, 0:n] (+)= Apanel * Bpanel over kc: the kMR x kNR block of C lives in
// `acc` (registers) for the whole loop over p; each step is a rank-1 update.
template <typename T>
static void micro_kernel(int64_t kc, const T* __restrict a, const T* __restrict b, T* __restrict c, int64_t ldc,
                         int64_t m, int64_t n, bool accumulate) {
    constexpr int MR = Blocking<T>::kMR, NR = Blocking<T>::kNR;
    T acc[MR][NR] = {};
    for (int64_t p = 0; p < kc; ++p) {
        const T* bp = b + p * NR;
        for (int i = 0; i < MR; ++i) {
            T ai = a[p * MR + i];
            for (int j = 0; j < NR; ++j) acc[i][j] = fused_multiply_add(ai, bp[j], acc[i][j]);
        }
    }
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

template <typename T>
void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<T>& A, const MatrixOperand<T>& B, T* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride) {
    using Blk = Blocking<T>;
    int64_t batch = (int64_t)c_offsets.size();
    int64_t tiles_m = (M + Blk::kMC - 1) / Blk::kMC, tiles_n = (N + Blk::kNC - 1) / Blk::kNC;
    int64_t tiles = batch * tiles_m * tiles_n;
    bool parallel = (double)M * N * K * batch > 1e5;

#pragma omp parallel if (parallel)
    {
        // Each thread packs into its own buffers, allocated once per call.
        std::vector<T> a_packed(Blk::kMC * Blk::kKC), b_packed(Blk::kKC * Blk::kNC);
#pragma omp for schedule(dynamic)
        for (int64_t tile = 0; tile < tiles; ++tile) {
            int64_t bi = tile / (tiles_m * tiles_n);
            int64_t ic = (tile / tiles_n) % tiles_m * Blk::kMC;
            int64_t jc = tile % tiles_n * Blk::kNC;
            int64_t mc = std::min(Blk::kMC, M - ic), nc = std::min(Blk::kNC, N - jc);
            T* c_tile = C + c_offsets[bi] + ic * c_row_stride + jc;
            if (K == 0) {  // an empty sum: C = 0
                for (int64_t i = 0; i < mc; ++i) std::fill(c_tile + i * c_row_stride, c_tile + i * c_row_stride + nc, T(0));
                continue;
            }
            for (int64_t pc = 0; pc < K; pc += Blk::kKC) {
                int64_t kc = std::min(Blk::kKC, K - pc);
                pack_a(A.data + A.batch_offsets[bi] + ic * A.row_stride + pc * A.col_stride, A.row_stride,
                       A.col_stride, mc, kc, a_packed.data());
                pack_b(B.data + B.batch_offsets[bi] + pc * B.row_stride + jc * B.col_stride, B.row_stride,
                       B.col_stride, kc, nc, b_packed.data());
                for (int64_t jr = 0; jr < nc; jr += Blk::kNR)
                    for (int64_t ir = 0; ir < mc; ir += Blk::kMR)
                        micro_kernel<T>(kc, a_packed.data() + ir * kc, b_packed.data() + jr * kc,
                                        c_tile + ir * c_row_stride + jr, c_row_stride,
                                        std::min<int64_t>(Blk::kMR, mc - ir), std::min<int64_t>(Blk::kNR, nc - jr),
                                        /*accumulate=*/pc > 0);
            }
        }
    }
}

template <typename T>
void gemm_reference(int64_t M, int64_t N, int64_t K, const T* A, int64_t a_rs, int64_t a_cs, const T* B,
                    int64_t b_rs, int64_t b_cs, T* C, int64_t c_rs) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            T total = 0;
            for (int64_t p = 0; p < K; ++p) total += A[i * a_rs + p * a_cs] * B[p * b_rs + j * b_cs];
            C[i * c_rs + j] = total;
        }
}

template void gemm<float>(int64_t, int64_t, int64_t, const MatrixOperand<float>&, const MatrixOperand<float>&, float*,
                          const std::vector<int64_t>&, int64_t);
template void gemm<double>(int64_t, int64_t, int64_t, const MatrixOperand<double>&, const MatrixOperand<double>&,
                           double*, const std::vector<int64_t>&, int64_t);
template void gemm_reference<float>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t,
                                    int64_t, float*, int64_t);
template void gemm_reference<double>(int64_t, int64_t, int64_t, const double*, int64_t, int64_t, const double*,
                                     int64_t, int64_t, double*, int64_t);

}  // namespace cpu
}  // namespace nc
