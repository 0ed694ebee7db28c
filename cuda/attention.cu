// attention.cu — scaled dot-product attention on the GPU with an online
// softmax (the algorithm of tensor/ops/attention.cpp and FlashAttention),
// forward and backward, never storing the T x S probabilities.
//
// Two versions. The *tiled* kernels (cuda/attention_tiled.cuh, where their
// algorithm is explained) run float32 with q and k 16, 32, 64 or 128 wide
// and v as wide or twice as wide: every head of the models here. The
// *simple* kernels below run everything else (float64, for gradcheck, and
// other widths), and they are the reference the parity tests compare the
// tiled ones with. NORMCORE_ATTENTION=simple in the environment makes
// every call simple.
//
// Shapes: q [N, T, D], k [N, S, D], v [N, S, Dv], out [N, T, Dv],
// logsumexp [N, T], with N = B H (batch times heads), once the views the
// table's entries receive are made into such blocks (below).
#include <cmath>
#include <cstdlib>
#include <string>

#include "cuda/attention_simple.cuh"
#include "cuda/attention_tiled.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace cuda {

namespace {

// ---- launching the tiled float32 kernels (cuda/attention_tiled.cuh) ----------------

// Whether q, k and v have widths the tiled kernels were compiled for (see
// the dispatch below) and NORMCORE_ATTENTION=simple was not asked for.
bool use_tiled(const Tensor& q, const Tensor& k, const Tensor& v) {
    const char* choice = std::getenv("NORMCORE_ATTENTION");
    if (choice && std::string(choice) == "simple") return false;
    int64_t D = q.size(2), Dv = v.size(2);
    bool widths = (D == 16 || D == 32 || D == 64 || D == 128) && (Dv == D || (Dv == 2 * D && Dv <= 128));
    return q.dtype() == kFloat32 && k.size(2) == D && widths;
}

// Forward reads matrix n of q, k, v at n times their first stride (tensor/ops/attention.h).
MatrixStrides batch_strides(const Tensor& q, const Tensor& k, const Tensor& v) {
    return {q.strides()[0], k.strides()[0], v.strides()[0]};
}

// A grid beyond CUDA's limits would be cut, silently, by the casts.
dim3 checked(const TiledGrid& grid, const char* kernel) {
    if (!grid.fits())
        throw Error(std::string("attention (CUDA): ") + kernel + " needs a grid of " + std::to_string(grid.columns) +
                    " x " + std::to_string(grid.rows) +
                    " blocks, beyond CUDA's 2^31 - 1 x 65535 (fewer batch x heads, or a shorter sequence)");
    return grid.dims();
}

template <int D, int Dv>
void launch_forward_tiled(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float scale, const Tensor& out,
                   const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1);
    dim3 grid = checked(forward_grid<D, Dv>(N, Tq), "attention_forward_tiled");
    attention_forward_tiled<D, Dv><<<grid, AttentionTiles<D, Dv>::forward_threads, 0, stream()>>>(
        static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
        static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
        static_cast<float*>(logsumexp.raw_data()), Tq, S, causal, scale, batch_strides(q, k, v));
    check_launch("attention_forward_tiled");
}

template <int D, int Dv>
void launch_backward_tiled(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& logsumexp, bool causal, float scale, const Tensor& dq, const Tensor& dk,
                    const Tensor& dv) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), rows = N * Tq;
    fill(dq, 0.0);
    if (N * S == 0) return;  // nothing to do (and no empty grid to launch)
    dim3 grid = checked(backward_grid<D, Dv>(N, S), "attention_backward_tiled");
    // D_i for every row, in a scratch buffer. Freeing it right after the
    // launches is safe: any later use of the block is queued behind them.
    float* dots = static_cast<float*>(allocate((size_t)rows * sizeof(float)));
    attention_row_dots<Dv><<<blocks_for(rows), kThreads, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(out.raw_data()), dots, rows);
    check_launch("attention_row_dots");
    attention_backward_tiled<D, Dv><<<grid, AttentionTiles<D, Dv>::backward_threads, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
        static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
        static_cast<const float*>(logsumexp.raw_data()), dots, static_cast<float*>(dq.raw_data()),
        static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()), Tq, S, causal, scale);
    deallocate(dots);
    check_launch("attention_backward_tiled");
}

// The widths the tiled kernels are compiled for: D = Dv (every head here)
// and Dv = 2 D (differential attention's sub-heads).
void run_forward_tiled(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float scale, const Tensor& out,
                     const Tensor& lse) {
    int64_t D = q.size(2), Dv = v.size(2);
    if (D == 16 && Dv == 16) return launch_forward_tiled<16, 16>(q, k, v, causal, scale, out, lse);
    if (D == 32 && Dv == 32) return launch_forward_tiled<32, 32>(q, k, v, causal, scale, out, lse);
    if (D == 64 && Dv == 64) return launch_forward_tiled<64, 64>(q, k, v, causal, scale, out, lse);
    if (D == 128 && Dv == 128) return launch_forward_tiled<128, 128>(q, k, v, causal, scale, out, lse);
    if (D == 16 && Dv == 32) return launch_forward_tiled<16, 32>(q, k, v, causal, scale, out, lse);
    if (D == 32 && Dv == 64) return launch_forward_tiled<32, 64>(q, k, v, causal, scale, out, lse);
    if (D == 64 && Dv == 128) return launch_forward_tiled<64, 128>(q, k, v, causal, scale, out, lse);
    throw Error("attention (CUDA): no tiled kernel for widths " + std::to_string(D) + " and " + std::to_string(Dv));
}

void run_backward_tiled(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& lse, bool causal, float scale, const Tensor& dq, const Tensor& dk,
                              const Tensor& dv) {
    int64_t D = q.size(2), Dv = v.size(2);
    if (D == 16 && Dv == 16) return launch_backward_tiled<16, 16>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 32 && Dv == 32) return launch_backward_tiled<32, 32>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 64 && Dv == 64) return launch_backward_tiled<64, 64>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 128 && Dv == 128) return launch_backward_tiled<128, 128>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 16 && Dv == 32) return launch_backward_tiled<16, 32>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 32 && Dv == 64) return launch_backward_tiled<32, 64>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    if (D == 64 && Dv == 128) return launch_backward_tiled<64, 128>(dout, q, k, v, out, lse, causal, scale, dq, dk, dv);
    throw Error("attention (CUDA): no tiled kernel for widths " + std::to_string(D) + " and " + std::to_string(Dv));
}

}  // namespace

static void attention_blocks(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                             const Tensor& out, const Tensor& logsumexp) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    if (N * Tq == 0) return;
    if (use_tiled(q, k, v)) return run_forward_tiled(q, k, v, causal, (float)scale, out, logsumexp);
    int blocks = (int)std::min<int64_t>(N * Tq, 65535);
    size_t shared = (size_t)Dv * sizeof(double);
    if (q.dtype() == kFloat32)
        attention_forward_kernel<<<blocks, kSimpleTile, shared, stream()>>>(
            static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
            static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
            static_cast<float*>(logsumexp.raw_data()), N, Tq, S, D, Dv, causal, scale, batch_strides(q, k, v));
    else
        attention_forward_kernel<<<blocks, kSimpleTile, shared, stream()>>>(
            static_cast<const double*>(q.raw_data()), static_cast<const double*>(k.raw_data()),
            static_cast<const double*>(v.raw_data()), static_cast<double*>(out.raw_data()),
            static_cast<double*>(logsumexp.raw_data()), N, Tq, S, D, Dv, causal, scale, batch_strides(q, k, v));
    check_launch("attention_forward_kernel");
}

static void attention_backward_blocks(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& out, const Tensor& logsumexp, bool causal, double scale,
                                      const Tensor& dq, const Tensor& dk, const Tensor& dv) {
    int64_t N = q.size(0), Tq = q.size(1), S = k.size(1), D = q.size(2), Dv = v.size(2);
    if (use_tiled(q, k, v))
        return run_backward_tiled(dout, q, k, v, out, logsumexp, causal, (float)scale, dq, dk, dv);
    fill(dq, 0.0);
    fill(dk, 0.0);
    fill(dv, 0.0);
    if (N * Tq == 0) return;
    int blocks = (int)std::min<int64_t>(N * Tq, 65535);
    if (q.dtype() == kFloat32)
        attention_backward_kernel<<<blocks, kSimpleTile, 0, stream()>>>(
            static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
            static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
            static_cast<const float*>(out.raw_data()), static_cast<const float*>(logsumexp.raw_data()),
            static_cast<float*>(dq.raw_data()), static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()),
            N, Tq, S, D, Dv, causal, scale);
    else
        attention_backward_kernel<<<blocks, kSimpleTile, 0, stream()>>>(
            static_cast<const double*>(dout.raw_data()), static_cast<const double*>(q.raw_data()),
            static_cast<const double*>(k.raw_data()), static_cast<const double*>(v.raw_data()),
            static_cast<const double*>(out.raw_data()), static_cast<const double*>(logsumexp.raw_data()),
            static_cast<double*>(dq.raw_data()), static_cast<double*>(dk.raw_data()),
            static_cast<double*>(dv.raw_data()), N, Tq, S, D, Dv, causal, scale);
    check_launch("attention_backward_kernel");
}

// The table's entries. The operands arrive as views (tensor/ops/attention.h);
// the kernels above read [N, R, C] blocks whose matrices are contiguous
// (forward: the matrices strides()[0] apart; backward: all contiguous), so
// raw::attention_matrices makes such a view, or a copy, and an output that
// is a view of something else is computed into a block of its own and
// copied into place. For GPT-2's packed q, k, v that is a copy of each
// operand and output: four forward, as before the CPU kernels learned to
// read views, but eight backward instead of four, since q, k, v and the
// output are copied again there. Row strides in the kernels themselves
// would save them all; that needs a GPU to measure.
static Tensor output_block(const Tensor& out) {
    int64_t N = 1;
    for (int64_t d = 0; d + 2 < out.dim(); ++d) N *= out.size(d);
    Shape shape{N, out.size(-2), out.size(-1)};
    return out.is_contiguous() ? raw::view(out, shape) : empty(shape, out.dtype(), out.device());
}
static void copy_back(const Tensor& out, const Tensor& block) {
    if (block.raw_data() != out.raw_data()) raw::copy_(out, raw::view(block, out.shape()));
}

static void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
                      const Tensor& logsumexp) {
    Tensor out_block = output_block(out);
    attention_blocks(raw::attention_matrices(q), raw::attention_matrices(k), raw::attention_matrices(v), causal, scale,
                     out_block, logsumexp);
    copy_back(out, out_block);
}

static void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                               const Tensor& logsumexp, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                               const Tensor& dv) {
    auto block = [](const Tensor& t) { return raw::contiguous(raw::attention_matrices(t)); };
    Tensor dq_block = output_block(dq), dk_block = output_block(dk), dv_block = output_block(dv);
    attention_backward_blocks(block(dout), block(q), block(k), block(v), block(out), logsumexp, causal, scale, dq_block,
                              dk_block, dv_block);
    copy_back(dq, dq_block);
    copy_back(dk, dk_block);
    copy_back(dv, dv_block);
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_attention(Backend& table) {
    table.attention = {attention, attention_backward};
}

}  // namespace cuda
}  // namespace nc
