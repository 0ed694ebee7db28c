// gemm.h — the CPU matrix multiply: C = A B for a batch of matrices.
//
// A(i, p) is read at A + a_offset + i * a.row_stride + p * a.col_stride, and
// likewise for B, so transposed or sliced operands need no copy: the packing
// step reads them in whatever layout they have. C is written row-major with
// row stride c_row_stride (columns contiguous).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/cpu/allocator.h"
#include "tensor/cpu/gemm_kernels.h"

namespace nc {
namespace cpu {

template <typename T>
struct MatrixOperand {
    const T* data;
    std::vector<int64_t> batch_offsets;  // element offset of each batch's matrix
    int64_t row_stride, col_stride;
};

// The most the packing buffers of float32 (or 16-bit) products running on
// `threads` threads take from the caching allocator at once. They are no
// op's tensors, so a dry run on the meta device cannot see them; `normcore
// memory` states this bound beside its prediction for the CPU.
size_t packing_buffers_bound_bytes(int threads);

// Into how many parts of K a product of this shape is split (1: not split;
// gemm.cpp says when and why). Exposed for the tests.
int64_t k_split_parts(int64_t M, int64_t N, int64_t K, size_t element_bytes);

// float32 runs the micro-kernel of `isa` (tests pass each one the CPU
// supports; matmul passes best_simd_isa()); float64 always runs the plain one.
// C = A B, or C += A B when `accumulate`, or C = bias + A B with a `bias`
// of N values added to every row (a linear layer's; not together with
// `accumulate`). The bias gives the same bits as a C filled with it first
// and then accumulated into, without that separate pass over C.
void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<float>& A, const MatrixOperand<float>& B, float* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride, SimdIsa isa = best_simd_isa(),
          bool accumulate = false, const float* bias = nullptr);
void gemm(int64_t M, int64_t N, int64_t K, const MatrixOperand<double>& A, const MatrixOperand<double>& B, double* C,
          const std::vector<int64_t>& c_offsets, int64_t c_row_stride, bool accumulate = false,
          const double* bias = nullptr);

// The packing buffers of one thread's products, kept from one product to the
// next: each grows to the largest request it has served and goes back to
// the caching allocator with the object. A product takes its packed A and B
// blocks from the caching allocator otherwise, and the allocator has one
// lock: attention's two threads, each taking two blocks for every tile
// product (dozens per head, hundreds at T = 1024), spent much of their time
// waiting for each other there. With their own buffers, T = 128, D = 32
// (train's model, 64 heads) ran forward in 0.96 ms instead of 1.40 and
// backward in 1.42 instead of 2.50 (medians of alternating runs;
// bench/results/attention-packing-buffers-2026-12-05.txt).
template <typename T>
class PackingBuffers {
public:
    PackingBuffers() = default;
    ~PackingBuffers() {
        deallocate(a_);
        deallocate(b_);
    }
    PackingBuffers(const PackingBuffers&) = delete;
    PackingBuffers& operator=(const PackingBuffers&) = delete;
    // At least `count` values, 64-byte aligned (the micro-kernels' aligned loads).
    T* a(size_t count) { return grown(a_, a_count_, count); }
    T* b(size_t count) { return grown(b_, b_count_, count); }

private:
    static T* grown(T*& data, size_t& have, size_t need) {
        if (need > have) {
            deallocate(data);
            data = nullptr;  // if allocate throws, the destructor must not free it twice,
            have = 0;        // nor a later, smaller request get the null pointer
            data = static_cast<T*>(allocate(need * sizeof(T)));
            have = need;
        }
        return data;
    }
    T* a_ = nullptr;
    T* b_ = nullptr;
    size_t a_count_ = 0, b_count_ = 0;
};

// C = A B, or C += A B when `accumulate`, for one matrix, on the calling
// thread only, with the fastest micro-kernel: for the small products inside
// an already parallel loop (attention's tiles, through gemm_packed_b below). `buffers`: the
// calling thread's own packing buffers (nullptr: from the caching allocator).
void gemm_single_thread(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                        int64_t b_rs, int64_t b_cs, float* C, int64_t ldc, bool accumulate,
                        PackingBuffers<float>* buffers = nullptr);
void gemm_single_thread(int64_t M, int64_t N, int64_t K, const double* A, int64_t a_rs, int64_t a_cs,
                        const double* B, int64_t b_rs, int64_t b_cs, double* C, int64_t ldc, bool accumulate,
                        PackingBuffers<double>* buffers = nullptr);

// One B operand packed once for several products on the calling thread that
// read parts of it: C = A B(rows [k0, k0 + K), columns [0, N)). Attention's
// tiles need this: near the causal diagonal a tile is multiplied band by
// band (attention.cpp), and each band reads the same block of keys or values,
// which gemm_single_thread would pack again for every band.
//
// The products give the same bits as gemm_single_thread on the same part of
// B: the same micro-kernel runs over the same packed numbers. Where the
// packed panels cannot serve, gemm_packed_b calls gemm_single_thread on B
// in place: B deeper than one cache slice (kc) or wider than one strip (nc),
// empty, or packed for one-row products only (not packed at all); a
// one-row product (float32 runs it as gemv; float64 packs its own B, into
// the caching allocator's memory when the panels hold the thread's
// buffers, else into those buffers); an empty sum.
template <typename T>
struct PackedB {
    const T* data;  // B itself, read in place when the panels cannot serve
    int64_t row_stride, col_stride;
    const T* panels;                     // nullptr: not packed
    int64_t depth, width, panel_stride;  // rows and columns packed; distance between panels of nr columns
};
// Packs B (K x N, strided) into buffers.b(). A product of the same thread with
// these buffers between this and the last gemm_packed_b would overwrite it.
// max_rows: the most rows of A any of those products will have. With one
// row none reads the panels (float32 goes to gemv, which reads B in place
// when one of its strides is 1, as attention's always are; float64 packs B
// its own way), so nothing is packed. Generating a token attends with one
// query; packing its keys and values, copies no product then read, took
// about 18% of a token's time on a Zen 3 (36 of 194 us).
PackedB<float> pack_b_once(int64_t max_rows, int64_t K, int64_t N, const float* B, int64_t b_rs, int64_t b_cs,
                           PackingBuffers<float>& buffers);
PackedB<double> pack_b_once(int64_t max_rows, int64_t K, int64_t N, const double* B, int64_t b_rs, int64_t b_cs,
                            PackingBuffers<double>& buffers);
// C (+)= A B(rows [k0, k0 + K), columns [0, N)), with B packed by pack_b_once
// (packing A, when it must be, into buffers.a()).
void gemm_packed_b(int64_t M, int64_t N, int64_t k0, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
                   const PackedB<float>& b, float* C, int64_t ldc, bool accumulate, PackingBuffers<float>& buffers);
void gemm_packed_b(int64_t M, int64_t N, int64_t k0, int64_t K, const double* A, int64_t a_rs, int64_t a_cs,
                   const PackedB<double>& b, double* C, int64_t ldc, bool accumulate, PackingBuffers<double>& buffers);

// The textbook triple loop, kept as the reference the fast kernel is tested
// against (tests/test_matmul.cpp) and for reading.
template <typename T>
void gemm_reference(int64_t M, int64_t N, int64_t K, const T* A, int64_t a_rs, int64_t a_cs, const T* B,
                    int64_t b_rs, int64_t b_cs, T* C, int64_t c_rs);

}  // namespace cpu
}  // namespace nc
