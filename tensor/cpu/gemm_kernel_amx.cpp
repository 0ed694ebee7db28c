// gemm_kernel_amx.cpp — the 32 x 32 bfloat16 micro-kernel on AMX tiles.
//
// AMX (Advanced Matrix Extensions, Intel Sapphire Rapids and later) adds
// eight tile registers of up to 16 rows x 64 bytes and one instruction,
// tdpbf16ps, that multiplies whole tiles:
//
//   C[i][j] += sum_q A[i][2q] B[q][2j] + A[i][2q+1] B[q][2j+1]
//
// with C a 16 x 16 tile of float32, A 16 rows x 32 bfloat16 (16 pairs of K)
// and B 16 pair-rows x 16 columns (one pair of K per column and row): 16 x 16
// x 32 = 8,192 multiply-adds per instruction, where an AVX-512 FMA does 16.
// The B tile is exactly the pair layout of gemm_16bit.cpp (16 columns of a
// 32-column panel, 128 bytes apart); A is packed 16 pairs per row, 32 rows
// per chunk of K (gemm_16bit.cpp's pack_a_amx).
//
// The block: four C tiles (rows 0-15 / 16-31 x columns 0-15 / 16-31), two A
// tiles and two B tiles, per 32 steps of K: 2 + 2 loads and 4 tile products.
//
// Tiles must be configured (their shapes) on each thread before use, and
// Linux hands out the tile state only to a process that asked for it
// (arch_prctl ARCH_REQ_XCOMP_PERM); cpu_supports(Gemm16Path::Amx, ...) asks.
//
// Compiled alone with -mamx-tile -mamx-bf16 (the Makefile); uses nothing
// from the standard library, like the other kernel files.
#if defined(__x86_64__)  // x86-64 only: empty on other CPUs

#include <immintrin.h>

#include "tensor/cpu/gemm_16bit.h"

namespace nc {
namespace cpu {

namespace {
constexpr int MR = 32, NR = 32;

// The tile configuration's memory layout (Intel SDM, LDTILECFG).
struct alignas(64) TileConfig {
    unsigned char palette = 1, start_row = 0, reserved[14] = {};
    unsigned short colsb[16] = {};  // bytes per row of each tile
    unsigned char rows[16] = {};
};

void amx_kernel(int64_t kq, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, int m, int n,
                bool accumulate) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    // kq is a multiple of 16 (the packing pads K with zero pairs).
    for (int64_t q = 0; q < kq; q += 16) {
        const uint32_t* a_chunk = a + q * MR;  // 32 rows x 16 pairs
        _tile_loadd(4, a_chunk, 64);            // rows 0-15
        _tile_loadd(5, a_chunk + 16 * 16, 64);  // rows 16-31
        _tile_loadd(6, b + q * NR, NR * 4);      // pairs q..q+15 of columns 0-15
        _tile_loadd(7, b + q * NR + 16, NR * 4); // ... of columns 16-31
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    alignas(64) float block[MR][NR];
    _tile_stored(0, &block[0][0], NR * 4);
    _tile_stored(1, &block[0][16], NR * 4);
    _tile_stored(2, &block[16][0], NR * 4);
    _tile_stored(3, &block[16][16], NR * 4);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + block[i][j] : block[i][j];
}

}  // namespace

void amx_configure_tiles() {
    TileConfig config;
    for (int t = 0; t < 8; ++t) {
        config.rows[t] = 16;
        config.colsb[t] = 64;
    }
    // GCC's _tile_loadconfig does not tell the compiler that it reads the
    // struct, and at -O3 the stores above were dropped as dead (the tiles
    // then had no shape and ldtilecfg faulted). An empty asm that "uses" the
    // struct and clobbers memory keeps them.
    __asm__ __volatile__("" : : "r"(&config) : "memory");
    _tile_loadconfig(&config);
}

void amx_release_tiles() { _tile_release(); }

const PairKernel kAmxKernel{MR, NR, amx_kernel};

}  // namespace cpu
}  // namespace nc

#endif  // x86-64
