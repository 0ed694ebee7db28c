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
// Shapes: q [..., T, D], k [..., S, D], v [..., S, Dv], out [..., T, Dv]
// with the same leading dims, logsumexp [N, T] (N: the leading dims'
// product, batch times heads). The operands are views (tensor/ops/attention.h),
// and the kernels read and write them where they lie, each described by
// a MatrixLayout (tensor/matrix_layout.h).
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
    int64_t D = q.size(-1), Dv = v.size(-1);
    bool widths = (D == 16 || D == 32 || D == 64 || D == 128) && (Dv == D || (Dv == 2 * D && Dv <= 128));
    return q.dtype() == kFloat32 && k.size(-1) == D && widths;
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
    int64_t N = logsumexp.size(0), Tq = q.size(2), S = k.size(2);
    dim3 grid = checked(forward_grid<D, Dv>(N, Tq), "attention_forward_tiled");
    attention_forward_tiled<D, Dv><<<grid, AttentionTiles<D, Dv>::forward_threads, 0, stream()>>>(
        static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
        static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
        static_cast<float*>(logsumexp.raw_data()), Tq, S, causal, scale,
        ForwardLayouts{matrix_layout_of(q), matrix_layout_of(k), matrix_layout_of(v), matrix_layout_of(out)});
    check_launch("attention_forward_tiled");
}

template <int D, int Dv>
void launch_backward_tiled(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& logsumexp, bool causal, float scale, const Tensor& dq, const Tensor& dk,
                    const Tensor& dv) {
    int64_t N = logsumexp.size(0), Tq = q.size(2), S = k.size(2), rows = N * Tq;
    fill(dq, 0.0);
    if (N * S == 0) return;  // nothing to do (and no empty grid to launch)
    dim3 grid = checked(backward_grid<D, Dv>(N, S), "attention_backward_tiled");
    // D_i for every row, in a scratch buffer. Freeing it right after the
    // launches is safe: any later use of the block is queued behind them.
    float* dots = static_cast<float*>(allocate((size_t)std::max<int64_t>(1, rows) * sizeof(float)));
    const BackwardLayouts at{matrix_layout_of(dout), matrix_layout_of(out), matrix_layout_of(q),
                             matrix_layout_of(k),    matrix_layout_of(v),   matrix_layout_of(dq),
                             matrix_layout_of(dk),   matrix_layout_of(dv)};
    if (rows > 0) {
        attention_row_dots<Dv><<<blocks_for(rows), kThreads, 0, stream()>>>(
            static_cast<const float*>(dout.raw_data()), static_cast<const float*>(out.raw_data()), dots, rows, Tq, at);
        check_launch("attention_row_dots");
    }
    attention_backward_tiled<D, Dv><<<grid, AttentionTiles<D, Dv>::backward_threads, 0, stream()>>>(
        static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
        static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
        static_cast<const float*>(logsumexp.raw_data()), dots, static_cast<float*>(dq.raw_data()),
        static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()), Tq, S, causal, scale, at);
    deallocate(dots);
    check_launch("attention_backward_tiled");
}

// The widths the tiled kernels are compiled for: D = Dv (every head here)
// and Dv = 2 D (differential attention's sub-heads).
void run_forward_tiled(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float scale, const Tensor& out,
                     const Tensor& lse) {
    int64_t D = q.size(-1), Dv = v.size(-1);
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
    int64_t D = q.size(-1), Dv = v.size(-1);
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

// The forward and backward on operands already [batch, heads, R, C] (raw::attention_grid).
static void attention_grid(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                           const Tensor& out, const Tensor& logsumexp) {
    int64_t N = logsumexp.size(0), Tq = q.size(2), S = k.size(2), D = q.size(3), Dv = v.size(3);
    if (N * Tq == 0) return;
    if (use_tiled(q, k, v)) return run_forward_tiled(q, k, v, causal, (float)scale, out, logsumexp);
    int blocks = (int)std::min<int64_t>(N * Tq, 65535);
    size_t shared = (size_t)Dv * sizeof(double);
    ForwardLayouts at{matrix_layout_of(q), matrix_layout_of(k), matrix_layout_of(v), matrix_layout_of(out)};
    if (q.dtype() == kFloat32)
        attention_forward_kernel<<<blocks, kSimpleTile, shared, stream()>>>(
            static_cast<const float*>(q.raw_data()), static_cast<const float*>(k.raw_data()),
            static_cast<const float*>(v.raw_data()), static_cast<float*>(out.raw_data()),
            static_cast<float*>(logsumexp.raw_data()), N, Tq, S, D, Dv, causal, scale, at);
    else
        attention_forward_kernel<<<blocks, kSimpleTile, shared, stream()>>>(
            static_cast<const double*>(q.raw_data()), static_cast<const double*>(k.raw_data()),
            static_cast<const double*>(v.raw_data()), static_cast<double*>(out.raw_data()),
            static_cast<double*>(logsumexp.raw_data()), N, Tq, S, D, Dv, causal, scale, at);
    check_launch("attention_forward_kernel");
}

static void attention_backward_grid(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& out, const Tensor& logsumexp, bool causal, double scale,
                                    const Tensor& dq, const Tensor& dk, const Tensor& dv) {
    int64_t N = logsumexp.size(0), Tq = q.size(2), S = k.size(2), D = q.size(3), Dv = v.size(3);
    if (use_tiled(q, k, v))
        return run_backward_tiled(dout, q, k, v, out, logsumexp, causal, (float)scale, dq, dk, dv);
    fill(dq, 0.0);
    fill(dk, 0.0);
    fill(dv, 0.0);
    if (N * Tq == 0) return;
    int blocks = (int)std::min<int64_t>(N * Tq, 65535);
    const BackwardLayouts at{matrix_layout_of(dout), matrix_layout_of(out), matrix_layout_of(q),
                             matrix_layout_of(k),    matrix_layout_of(v),   matrix_layout_of(dq),
                             matrix_layout_of(dk),   matrix_layout_of(dv)};
    if (q.dtype() == kFloat32)
        attention_backward_kernel<<<blocks, kSimpleTile, 0, stream()>>>(
            static_cast<const float*>(dout.raw_data()), static_cast<const float*>(q.raw_data()),
            static_cast<const float*>(k.raw_data()), static_cast<const float*>(v.raw_data()),
            static_cast<const float*>(out.raw_data()), static_cast<const float*>(logsumexp.raw_data()),
            static_cast<float*>(dq.raw_data()), static_cast<float*>(dk.raw_data()), static_cast<float*>(dv.raw_data()),
            N, Tq, S, D, Dv, causal, scale, at);
    else
        attention_backward_kernel<<<blocks, kSimpleTile, 0, stream()>>>(
            static_cast<const double*>(dout.raw_data()), static_cast<const double*>(q.raw_data()),
            static_cast<const double*>(k.raw_data()), static_cast<const double*>(v.raw_data()),
            static_cast<const double*>(out.raw_data()), static_cast<const double*>(logsumexp.raw_data()),
            static_cast<double*>(dq.raw_data()), static_cast<double*>(dk.raw_data()),
            static_cast<double*>(dv.raw_data()), N, Tq, S, D, Dv, causal, scale, at);
    check_launch("attention_backward_kernel");
}

// The table's entries receive views [..., R, C] (tensor/ops/attention.h).
// raw::attention_grid views each as [batch, heads, R, C] (a copy only where
// more than two leading dims do not merge: no model here makes such a
// view), and the kernels read and write the operands where they lie:
// GPT-2's packed q, k and v, its output inside the merged [B, T, C] and
// the gradients inside d(qkv) cost no copy. An output that cannot be
// viewed so is computed into a block of its own and copied into place.
static Tensor output_grid(const Tensor& out) {
    if (out.dim() <= 4) return raw::attention_grid(out);  // always a view
    Shape grid{1, 1, out.size(-2), out.size(-1)};
    for (int64_t d = 0; d + 3 < out.dim(); ++d) grid[0] *= out.size(d);
    grid[1] = out.size(-3);
    return empty(grid, out.dtype(), out.device());
}
static void copy_back(const Tensor& out, const Tensor& grid) {
    if (grid.raw_data() != out.raw_data() && out.numel() > 0) raw::copy_(out, raw::view(grid, out.shape()));
}

static void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
                      const Tensor& logsumexp) {
    Tensor out_grid = output_grid(out);
    attention_grid(raw::attention_grid(q), raw::attention_grid(k), raw::attention_grid(v), causal, scale, out_grid,
                   logsumexp);
    copy_back(out, out_grid);
}

static void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                               const Tensor& logsumexp, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                               const Tensor& dv) {
    Tensor dq_grid = output_grid(dq), dk_grid = output_grid(dk), dv_grid = output_grid(dv);
    attention_backward_grid(raw::attention_grid(dout), raw::attention_grid(q), raw::attention_grid(k),
                            raw::attention_grid(v), raw::attention_grid(out), logsumexp, causal, scale, dq_grid,
                            dk_grid, dv_grid);
    copy_back(dq, dq_grid);
    copy_back(dk, dk_grid);
    copy_back(dv, dv_grid);
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_attention(Backend& table) {
    table.attention = {attention, attention_backward};
}

}  // namespace cuda
}  // namespace nc
