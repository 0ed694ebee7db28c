// attention.cpp — scaled dot-product attention, fused (declared in
// attention.h): the raw ops (checks, then one backend call), the
// differentiable op, and the CPU kernels, forward beside backward. The CUDA
// kernels are in cuda/attention.cu.
//
// q: [..., T, D], k: [..., S, D], v: [..., S, Dv] with the same leading dims
// (N when flattened). P = softmax(scale q k^T) over S, keys j > i masked when
// causal; out = P v: [..., T, Dv].
//
// The CPU kernel works in tiles with an online
// softmax (the FlashAttention algorithm: Dao et al. 2022, and FlashAttention-2,
// Dao 2023), forward and backward. The T x S probability matrix is never
// stored: memory is O(T) per head (one log-sum-exp per query) instead of
// O(T S). attention_reference.cpp is the simple version this is tested against.
//
// Forward, for a block of Br queries, visiting keys Bc at a time (eq. numbers
// from the FlashAttention-2 paper, Algorithm 1):
//   s_ij   = scale <q_i, k_j>                      (masked: j > i when causal)
//   m_i'   = max(m_i, max_j s_ij)                  running row maximum
//   p_ij   = exp(s_ij - m_i')
//   l_i'   = exp(m_i - m_i') l_i + sum_j p_ij      running denominator
//   o_i'   = exp(m_i - m_i') o_i + sum_j p_ij v_j  running numerator
// and at the end out_i = o_i / l_i, L_i = m_i + log l_i (the log-sum-exp).
// Rescaling by exp(m_i - m_i') whenever the maximum grows keeps every
// exponent <= 0 (no overflow) and makes the result exact, not approximate.
//
// Backward recomputes p_ij = exp(s_ij - L_i) tile by tile (Algorithm 2):
//   D_i   = <dout_i, out_i>                        (= sum_j p_ij dp_ij)
//   dv_j += p_ij dout_i
//   dp_ij = <dout_i, v_j>
//   ds_ij = p_ij (dp_ij - D_i)                     softmax backward
//   dq_i += scale ds_ij k_j,    dk_j += scale ds_ij q_i
//
// Every product of two tiles (Q K^T, P V, and the five of backward) is a
// small GEMM on the calling thread (gemm_packed_b, gemm.h: the operand the
// tile's bands share packed once, below): the same
// packed micro-kernel as the big matrix multiplies (the best the CPU has:
// AVX-512, AVX2 or NEON, chosen at run time), or, for a tile of one query
// (generating a token), the unpacked one-row product of gemv.h. Threads split
// the (batch x head, query block) pairs forward and the batch x heads backward.
//
// Shapes: q [..., T, D], k [..., S, D], v [..., S, Dv], out [..., T, Dv]
// with the same leading dims, N matrices each (N = B H, batch times
// heads), any of them a view (attention.h); logsumexp [N, T].
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/node.h"
#include "tensor/cpu/allocator.h"
#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/fast_math.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"
#include "tensor/ops/heads_last.h"
#include "tensor/profile.h"
#include "tensor/raw_nn.h"

namespace nc {

// ---- the raw ops: checks, outputs, one backend call ----------------------------

namespace raw {

// An operand as the kernels take it (attention.h): [..., R, C] with unit
// steps along each row, the rows and the matrices any distance apart. A
// view is passed as it is: the heads of GPT-2's [B, T, 3C] projection
// seen as [B, H, T, D], or the first S positions of the key/value cache
// [B, H, capacity, D]. Only a tensor whose rows are not contiguous (a
// transposed one) is copied.
static bool has_contiguous_rows(const Tensor& t) { return t.size(-1) <= 1 || t.strides()[t.dim() - 1] == 1; }
static Tensor rows_contiguous(const Tensor& t) { return has_contiguous_rows(t) ? t : contiguous(t); }

// An output the caller passed in must have exactly the expected shape, the
// dtype and device of the inputs, and contiguous rows that do not overlap
// (threads write different rows at once).
static void check_output(const Tensor& t, const Shape& shape, const Tensor& q, const char* name, const std::string& op) {
    if (t.shape() != shape || t.dtype() != q.dtype() || t.device() != q.device())
        fail(op, std::string("the ") + name + " to write into is " + shape_str(t.shape()) + " " + dtype_name(t.dtype()) +
                     " on " + t.device().str() + ", it must be " + shape_str(shape) + " " + dtype_name(q.dtype()) +
                     " on " + q.device().str());
    if (!has_contiguous_rows(t) || (t.size(-2) > 1 && t.strides()[t.dim() - 2] < t.size(-1)))
        fail(op, std::string("the ") + name + " to write into needs contiguous rows that do not overlap, got strides " +
                     shape_str(t.strides()));
}

Tensor attention_grid(const Tensor& t) {
    if (t.dim() < 2) fail("attention", "an operand needs at least 2 dims [..., R, C], got " + shape_str(t.shape()));
    if (t.dim() == 4) return t;
    if (t.dim() == 3) return unsqueeze(t, 0);
    if (t.dim() == 2) return unsqueeze(unsqueeze(t, 0), 0);
    int64_t outer = 1;
    for (int64_t d = 0; d + 3 < t.dim(); ++d) outer *= t.size(d);
    return reshape(t, {outer, t.size(-3), t.size(-2), t.size(-1)});  // a view when the leading dims merge
}

AttentionForward attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                           const Tensor& out_into) {
    const std::string op = "attention";
    if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim())
        fail(op, "q, k, v need the same number of dims (at least 2), got " + shape_str(q.shape()) + ", " +
                     shape_str(k.shape()) + ", " + shape_str(v.shape()));
    // The leading (batch) dims of q, k and v must agree.
    auto same_lead = [&](const Tensor& t) {
        return std::equal(q.shape().begin(), q.shape().end() - 2, t.shape().begin());
    };
    if (!same_lead(k) || !same_lead(v) || q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
        fail(op, "shapes q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape()) +
                     " do not fit: need q [..., T, D], k [..., S, D], v [..., S, Dv]");
    if (causal && q.size(-2) > k.size(-2))
        fail(op, "causal attention needs at least as many keys as queries, got T=" + std::to_string(q.size(-2)) +
                     " and S=" + std::to_string(k.size(-2)));
    if (q.dtype() != k.dtype() || q.dtype() != v.dtype() || !(is_floating(q.dtype()) || is_16bit_float(q.dtype())))
        fail(op, std::string("q, k, v must share a floating dtype, got ") + dtype_name(q.dtype()) + ", " +
                     dtype_name(k.dtype()) + ", " + dtype_name(v.dtype()));
    // 16-bit operands (mixed precision): the kernels compute in float32, so
    // the 16-bit numbers are widened (exactly) and the float32 kernel runs;
    // out and logsumexp are float32, as a 16-bit matmul's product is. What
    // the 16 bits save is what the differentiable op keeps for backward.
    if (is_16bit_float(q.dtype()))
        return attention(to_dtype(q, kFloat32), to_dtype(k, kFloat32), to_dtype(v, kFloat32), causal, scale, out_into);
    Shape out_shape = q.shape();  // [..., T, Dv]
    out_shape.back() = v.size(-1);
    if (out_into.defined()) check_output(out_into, out_shape, q, "output", op);
    Tensor out = out_into.defined() ? out_into : empty(out_shape, q.dtype(), q.device());
    int64_t N = 1;  // the matrices: the leading dims' product
    for (int64_t d = 0; d + 2 < q.dim(); ++d) N *= q.size(d);
    Tensor logsumexp = empty({N, q.size(-2)}, q.dtype(), q.device());
    ProfileScope scope(OpKind::Attention);
    backend_for(q.device()).attention.forward(rows_contiguous(q), rows_contiguous(k), rows_contiguous(v), causal, scale,
                                              out, logsumexp);
    return {out, logsumexp};
}

AttentionBackward attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionForward& saved, bool causal, double scale,
                                     const AttentionBackward& into) {
    if (dout.shape() != saved.out.shape())
        fail("attention_backward", "gradient " + shape_str(dout.shape()) + " does not match the output " +
                                       shape_str(saved.out.shape()));
    if (dout.dtype() != product_dtype(q.dtype()) || dout.device() != q.device())
        fail("attention_backward", std::string("the gradient is ") + dtype_name(dout.dtype()) + " on " + dout.device().str() +
                                       ", the inputs " + dtype_name(q.dtype()) + " on " + q.device().str());
    // 16-bit operands, and an output kept in 16 bits: widened, as forward
    // widens them; the gradients are float32.
    auto widened = [](const Tensor& t) { return is_16bit_float(t.dtype()) ? to_dtype(t, kFloat32) : t; };
    if (is_16bit_float(q.dtype()) || is_16bit_float(saved.out.dtype()))
        return attention_backward(dout, widened(q), widened(k), widened(v), {widened(saved.out), saved.logsumexp},
                                  causal, scale, into);
    // The gradients: the caller's views (all three or none), else new tensors.
    const bool given = into.dq.defined() || into.dk.defined() || into.dv.defined();
    if (given) {
        if (!into.dq.defined() || !into.dk.defined() || !into.dv.defined())
            fail("attention_backward", "writes dq, dk and dv into given tensors only when all three are given");
        check_output(into.dq, q.shape(), q, "dq", "attention_backward");
        check_output(into.dk, k.shape(), q, "dk", "attention_backward");
        check_output(into.dv, v.shape(), q, "dv", "attention_backward");
    }
    AttentionBackward grads = given ? into
                                    : AttentionBackward{empty(q.shape(), q.dtype(), q.device()),
                                                        empty(k.shape(), q.dtype(), q.device()),
                                                        empty(v.shape(), q.dtype(), q.device())};
    ProfileScope scope(OpKind::Attention);
    backend_for(q.device()).attention.backward(rows_contiguous(dout), rows_contiguous(q), rows_contiguous(k),
                                               rows_contiguous(v), rows_contiguous(saved.out), saved.logsumexp, causal,
                                               scale, grads.dq, grads.dk, grads.dv);
    return grads;
}

}  // namespace raw

// ---- the differentiable op: the forward, recorded with its backward ----------------

using Grads = std::vector<Tensor>;

// Where a 4-D product [B, H, T, Dv] is written: into a [B, T, H, Dv]
// tensor, seen as [B, H, T, Dv] (the kernels take views, attention.h), so
// that merging the heads back, transpose(1, 2) and reshape to [B, T, H Dv],
// is a view and not a copy; its gradient then comes back in that layout
// too, again a view. Other ranks: undefined (raw::attention allocates).
// With gradient_like below, Llama's step makes two copies of a [B, T, C]
// tensor fewer per layer, and its peak memory is 4 MiB lower for train's
// model; no change in step time could be measured on a 2-core Zen 3
// (bench/results/attention-output-layout-2026-12-07.txt). The layout and
// the check for it are in heads_last.h; the output has the dtype a product
// of q's dtype has.
static Tensor output_heads_last(const Tensor& q, const Tensor& v) {
    if (q.dim() != 4 || v.dim() != 4) return Tensor();
    return empty_heads_last({q.size(0), q.size(1), q.size(2), v.size(3)}, product_dtype(q.dtype()), q.device());
}

// The gradient of an input, laid out as the input is: heads last for a
// heads-last input, so that splitting the heads stays a view on the way
// back too (the gradient of Llama's v, split from its projection); else
// contiguous (q and k, which RoPE hands over contiguous).
static Tensor gradient_like(const Tensor& t) {
    if (!heads_last(t)) return empty(t.shape(), product_dtype(t.dtype()), t.device());
    return empty_heads_last(t.shape(), product_dtype(t.dtype()), t.device());
}
static raw::AttentionBackward gradients_like(const Tensor& q, const Tensor& k, const Tensor& v) {
    return {gradient_like(q), gradient_like(k), gradient_like(v)};
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
    if (q.dim() < 2) fail("attention", "q needs at least 2 dims [..., T, D], got " + shape_str(q.shape()));
    if (scale <= 0) scale = 1.0 / std::sqrt((double)q.size(-1));
    raw::AttentionForward f = raw::attention(q, k, v, causal, scale, output_heads_last(q, v));
    // Saved for backward: the inputs, the output (a detached header: no cycle
    // through the node) and one log-sum-exp per query; no T x S matrix.
    raw::AttentionForward saved{f.out.detach(), f.logsumexp};
    // dV = P^T dO; dZ = P (dP - rowsum(dP P)) with dP = dO V^T; dQ = s dZ K; dK = s dZ^T Q.
    return record("Attention", f.out, {q, k, v}, [q, k, v, saved, causal, scale](const Tensor& g) {
        raw::AttentionBackward d = raw::attention_backward(g, q, k, v, saved, causal, scale, gradients_like(q, k, v));
        return Grads{d.dq, d.dk, d.dv};
    });
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                                    DType operand_dtype) {
    if (!is_16bit_float(operand_dtype)) return scaled_dot_product_attention(q, k, v, causal, scale);
    if (q.dtype() != kFloat32)
        fail("attention", std::string("rounds float32 operands to bfloat16 or float16, got ") + dtype_name(q.dtype()) +
                              " operands and " + dtype_name(operand_dtype));
    if (q.dim() < 2) fail("attention", "q needs at least 2 dims [..., T, D], got " + shape_str(q.shape()));
    if (scale <= 0) scale = 1.0 / std::sqrt((double)q.size(-1));
    // Mixed precision, as linear's (ops_linalg.cpp): q, k and v rounded to
    // 16 bits, scores, softmax and P V in float32 (a product of two 16-bit
    // numbers is exact in float32), out float32. Backward keeps the 16-bit
    // q, k, v and a 16-bit copy of out (for D_i = <dout_i, out_i>): half the
    // bytes of the float32 op's saved tensors. The roundings' gradient is
    // taken as 1 (straight-through), and D_i from the rounded out differs
    // from the exact one by a relative 2^-9 (bfloat16) at most, the size of
    // the operands' own rounding.
    Tensor q16 = raw::to_dtype(q, operand_dtype), k16 = raw::to_dtype(k, operand_dtype),
           v16 = raw::to_dtype(v, operand_dtype);
    raw::AttentionForward f = raw::attention(q16, k16, v16, causal, scale, output_heads_last(q, v));
    raw::AttentionForward saved{raw::to_dtype(f.out, operand_dtype), f.logsumexp};
    return record("Attention", f.out, {q, k, v}, [q16, k16, v16, saved, causal, scale](const Tensor& g) {
        raw::AttentionBackward d =
            raw::attention_backward(g, q16, k16, v16, saved, causal, scale, gradients_like(q16, k16, v16));
        return Grads{d.dq, d.dk, d.dv};
    });
}

// The [B, T, H, D] columns [which C, which C + C) of a [B, T, 3C] tensor
// (which = 0, 1, 2: q, k, v), as [B, H, T, D]; C = H D.
static Tensor qkv_heads_view(const Tensor& t, int64_t which, int64_t heads) {
    const int64_t B = t.size(0), T = t.size(1), C = t.size(2) / 3;
    return raw::transpose(raw::view(raw::narrow(t, 2, which * C, C), {B, T, heads, C / heads}), 1, 2);
}

static void check_packed_qkv(const Tensor& qkv, int64_t heads) {
    if (qkv.dim() != 3 || heads <= 0 || qkv.size(2) % (3 * heads) != 0)
        fail("attention", "packed q, k, v need [B, T, 3 H D] with " + std::to_string(heads) + " heads, got " +
                              shape_str(qkv.shape()));
}

// GPT-2's attention reads q, k and v from one projection, qkv [B, T, 3C]
// with C = H D. Taken apart as three narrow() views, each view's backward
// builds a zero [B, T, 3C] gradient and copies its third into it, and
// autograd then adds the three: about eleven passes' worth of memory
// traffic over a [B, T, 3C] tensor (three zero fills, three copies of a
// third, two additions) to assemble one gradient. Here the three gradients
// are written into one d(qkv): train's default model took about 5% less
// time per step (bench/results/packed-qkv-2026-12-04.txt). The numbers are
// the same to the last bit (adding a zero is exact); the kernels are
// those above.
//
// Nor is anything copied to split or merge the heads: the kernels, CPU
// and CUDA, take views (attention.h), so q, k and v are read where the
// projection wrote them, the output is written straight into the
// [B, T, C] layout the next projection reads, and backward reads the
// gradient in that layout and writes d(qkv) in place. On the CPU, copying
// q, k, v, the output, its gradient and the three gradients cost eight
// passes over a [B, T, C] tensor per layer
// (bench/results/attention-views-2026-12-06.txt).
Tensor packed_qkv_attention(const Tensor& qkv, int64_t heads, bool causal) {
    return packed_qkv_attention(qkv, heads, causal, kFloat32);
}

// Mixed precision (operand_dtype bfloat16 or float16) works as
// scaled_dot_product_attention's 16-bit op on the three parts: q, k and v
// rounded into 16-bit [B, H, T, D] tensors, which backward keeps beside a
// 16-bit copy of the output (the raw ops widen them, exactly, for the
// float32 kernels); the same numbers as that op, to the last bit, with
// d(qkv) written in one piece as above.
Tensor packed_qkv_attention(const Tensor& qkv, int64_t heads, bool causal, DType operand_dtype) {
    check_packed_qkv(qkv, heads);
    const bool rounded = is_16bit_float(operand_dtype);
    if (rounded && qkv.dtype() != kFloat32)
        fail("attention", std::string("rounds float32 operands to bfloat16 or float16, got ") +
                              dtype_name(qkv.dtype()) + " operands and " + dtype_name(operand_dtype));
    const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, D = C / heads;
    const double scale = 1.0 / std::sqrt((double)D);
    auto heads_view = [heads](const Tensor& t, int64_t which) { return qkv_heads_view(t, which, heads); };
    // q, k and v as the kernels read them and backward keeps them: views of
    // qkv itself (detached: no graph; nothing in the library changes it in
    // place), or their 16-bit roundings.
    const Tensor inputs = qkv.detach();
    auto operand = [&](int64_t which) {
        Tensor part = heads_view(inputs, which);
        return rounded ? raw::to_dtype(part, operand_dtype) : part;
    };
    const Tensor q = operand(0), k = operand(1), v = operand(2);
    Tensor y = empty({B, T, C}, product_dtype(qkv.dtype()), qkv.device());  // 16-bit q, k, v give float32 (raw::attention)
    Tensor y_heads = raw::transpose(raw::view(y, {B, T, heads, D}), 1, 2);  // [B, H, T, D], a view of y
    raw::AttentionForward f = raw::attention(q, k, v, causal, scale, y_heads);
    // The output for backward: a detached view of y (capturing y would make
    // it own its own node), or its 16-bit rounding.
    raw::AttentionForward saved{rounded ? raw::to_dtype(y_heads, operand_dtype) : y_heads.detach(), f.logsumexp};
    return record("PackedQKVAttention", y, {qkv}, [q, k, v, saved, causal, scale, heads_view, B, T, heads, D](const Tensor& g) {
        Tensor dout = raw::transpose(raw::reshape(g, {B, T, heads, D}), 1, 2);  // a view when g is contiguous
        Tensor dqkv = empty({B, T, 3 * heads * D}, g.dtype(), g.device());
        raw::attention_backward(dout, q, k, v, saved, causal, scale,
                                {heads_view(dqkv, 0), heads_view(dqkv, 1), heads_view(dqkv, 2)});
        return Grads{dqkv};
    });
}

// ---- the CPU kernels --------------------------------------------------------------

namespace cpu {

namespace {

// Tiles of 128 x 128: every tile product is a small GEMM that packs both
// its operands, and at 64 x 64 that packing (plus the per-call set-up) cost
// as much as a third of the arithmetic. At T = 256 (the bench's `small`,
// 48 heads, D = 64, causal) 128 x 128 tiles took forward + backward from
// 17.2 to 14.6 ms, and at T = 1024 (12 heads) from 59 to 44 ms, although
// the diagonal tiles (before the bands below) wasted more work on masked
// keys; at T = 128 the two sizes were even.
constexpr int64_t kBlockQ = kAttentionTileQueries;  // Br: queries per tile (cpu_kernels.h)
constexpr int64_t kBlockK = kAttentionTileKeys;     // Bc: keys per tile

// The length a row's softmax loops run over: its `visible` keys rounded up
// to a multiple of 16 (a whole AVX-512 vector of floats, two AVX2 or four
// NEON ones), at most the tile's `keys`. A loop whose length is not a
// multiple of the vector ends in a remainder loop, one key at a time.
inline int64_t vector_width(int64_t visible, int64_t keys) { return std::min(keys, (visible + 15) / 16 * 16); }

// The keys a query block [i0, i1) can see end before this index.
inline int64_t key_end(bool causal, int64_t i1, int64_t S) { return causal ? std::min(S, i1) : S; }
// Within a tile, query i sees keys j <= i when causal.
inline int64_t visible_in_tile(bool causal, int64_t i, int64_t j0, int64_t j1) {
    return causal ? std::max<int64_t>(0, std::min(j1, i + 1) - j0) : j1 - j0;
}

// A tile that the causal diagonal crosses (its first query cannot see all
// its keys) is multiplied in bands of kBand queries, each band over only the
// keys its last query sees, or in bands of kBand keys, each over only the
// queries that see its first key. In a 128 x 128 diagonal tile the products
// then skip 6 of its 16 blocks of 32 x 32 (37.5%), all of them masked. Each
// sum is the whole tile's less terms that were exact zeros (a masked
// probability times a finite value), so the results are the same to the
// last bit (band_length below keeps that true). At T = 128 (D = 32), where
// every tile is diagonal, forward took 11.6% less time and backward 14.2% less; at
// T = 256 (D = 64) 9.4% and 11.2%; at T = 1024 4.9% and 6.1% (medians of 3
// rounds). Bands of 16 were slower than whole tiles at T = 128 (more calls,
// each packing its operands), bands of 64 a little slower than 32 at every T
// (bench/results/attention-diagonal-bands-2026-12-05.txt).
constexpr int64_t kBand = kAttentionDiagonalBand;
inline bool crossed_by_diagonal(bool causal, int64_t i0, int64_t j0, int64_t bc) { return causal && i0 + 1 - j0 < bc; }

// The length of the band that starts at `start` of `total`: kBand, or
// what is left; a last piece of one joins the band before it, since a
// product of one row runs as gemv (gemm.cpp), which adds in another order
// than the micro-kernel, and the bits would then depend on the banding.
inline int64_t band_length(int64_t start, int64_t total, int64_t band) {
    const int64_t left = total - start;
    return left <= band + 1 ? left : band;
}

// f(r0, rows, keys) for each band of the tile's query rows [r0, r0 + rows),
// which see at most the tile's keys [0, keys).
template <typename F>
void for_each_query_band(bool causal, int64_t i0, int64_t br, int64_t j0, int64_t bc, const F& f) {
    const int64_t band = crossed_by_diagonal(causal, i0, j0, bc) ? kBand : br;
    for (int64_t r0 = 0, rows; r0 < br; r0 += rows) {
        rows = band_length(r0, br, band);
        f(r0, rows, causal ? std::clamp<int64_t>(i0 + r0 + rows - j0, 0, bc) : bc);  // query i sees keys <= i
    }
}

// f(c0, cols, first) for each band of the tile's keys [c0, c0 + cols),
// which only its query rows [first, br) see.
template <typename F>
void for_each_key_band(bool causal, int64_t i0, int64_t br, int64_t j0, int64_t bc, const F& f) {
    const int64_t band = crossed_by_diagonal(causal, i0, j0, bc) ? kBand : bc;
    for (int64_t c0 = 0, cols; c0 < bc; c0 += cols) {
        cols = band_length(c0, bc, band);
        f(c0, cols, causal ? std::clamp<int64_t>(j0 + c0 - i0, 0, br) : 0);  // key j: queries >= j
    }
}

// Every tile product below packs the operand its bands share once
// (pack_b_once, gemm.h) and multiplies each band by its part of it; packed
// again for each band, the keys of a 128-key diagonal tile were copied 2.5
// times over (32 + 64 + 96 + 128 rows).

// scores[r][c] = <q_{i0+r}, k_{j0+c}> for a br x bc tile (unscaled): Q_tile K_tile^T,
// with K^T read through strides (B(d, c) = k[(j0 + c) k_rs + d]), band by band:
// the scores a band's queries cannot see are left unwritten.
template <typename T>
void tile_scores(bool causal, const T* q, int64_t q_rs, int64_t i0, int64_t br, const T* k, int64_t k_rs, int64_t j0,
                 int64_t bc, int64_t D, T* scores, PackingBuffers<T>& packing) {
    const PackedB<T> keys_t = pack_b_once(br, D, bc, k + j0 * k_rs, 1, k_rs, packing);  // K_tile^T: D x bc
    for_each_query_band(causal, i0, br, j0, bc, [&](int64_t r0, int64_t rows, int64_t keys) {
        gemm_packed_b(rows, keys, 0, D, q + (i0 + r0) * q_rs, q_rs, 1, keys_t, scores + r0 * bc, bc,
                      /*accumulate=*/false, packing);
    });
}

// The matrices of an operand (attention.h): matrix n starts at
// data + offsets[n], its rows row_stride apart.
template <typename T>
struct Matrices {
    T* data;
    std::vector<int64_t> offsets;
    int64_t row_stride;
    T* matrix(int64_t n) const { return data + offsets[n]; }
};
template <typename T>
Matrices<T> matrices_of(const Tensor& t) {
    return {static_cast<T*>(t.raw_data()), matrix_batch_offsets(t), t.strides()[t.dim() - 2]};
}

template <typename T>
void attention_typed(const Tensor& q_tensor, const Tensor& k_tensor, const Tensor& v_tensor, bool causal,
                     double scale_d, const Tensor& out_tensor, const Tensor& lse_tensor) {
    const Matrices<const T> qm = matrices_of<const T>(q_tensor), km = matrices_of<const T>(k_tensor),
                            vm = matrices_of<const T>(v_tensor);
    const Matrices<T> outm = matrices_of<T>(out_tensor);
    const int64_t N = (int64_t)qm.offsets.size(), Tq = q_tensor.size(-2), S = k_tensor.size(-2), D = q_tensor.size(-1),
                  Dv = v_tensor.size(-1);
    T* lse_all = static_cast<T*>(lse_tensor.raw_data());
    const int64_t q_blocks = (Tq + kBlockQ - 1) / kBlockQ;

    // Each thread's tiles: the scores, the output sums, each row's running
    // max and sum, and the softmax step's new max and loop length per row;
    // and its own packing buffers for the tile products (gemm.h says why).
    struct Tiles {
        ScratchBuffer<T> scores, acc, row_max, row_sum, new_max;
        ScratchBuffer<int64_t> width;
        PackingBuffers<T> packing;
    };
    auto make_tiles = [&] {
        return Tiles{ScratchBuffer<T>(kBlockQ * kBlockK), ScratchBuffer<T>(kBlockQ * Dv), ScratchBuffer<T>(kBlockQ),
                     ScratchBuffer<T>(kBlockQ), ScratchBuffer<T>(kBlockQ), ScratchBuffer<int64_t>(kBlockQ),
                     PackingBuffers<T>()};
    };
    // One task per (head n, query block qb).
    parallel_for_dynamic(N * q_blocks, N * Tq * S * D >= kParallelMin, make_tiles, [&](int64_t task, Tiles& tiles) {
        const int64_t n = task / q_blocks, qb = task % q_blocks;
        // The scale in the task's own frame: read through the lambda's
        // reference capture, it is a load through a pointer that the stores
        // into the scores might alias, and GCC redid it for every key (the
        // forward took 12% longer).
        const T scale = (T)scale_d;
        ScratchBuffer<T>& scores = tiles.scores;
        ScratchBuffer<T>& acc = tiles.acc;
        ScratchBuffer<T>& row_max = tiles.row_max;
        ScratchBuffer<T>& row_sum = tiles.row_sum;
        ScratchBuffer<T>& new_max = tiles.new_max;
        ScratchBuffer<int64_t>& width = tiles.width;
        const T *q = qm.matrix(n), *k = km.matrix(n), *v = vm.matrix(n);  // views (attention.h)
        const int64_t q_rs = qm.row_stride, k_rs = km.row_stride, v_rs = vm.row_stride;
        const int64_t i0 = qb * kBlockQ, i1 = std::min(Tq, i0 + kBlockQ), br = i1 - i0;
        std::fill(acc.data(), acc.data() + br * Dv, T(0));
        std::fill(row_max.data(), row_max.data() + br, -INFINITY);
        std::fill(row_sum.data(), row_sum.data() + br, T(0));
        for (int64_t j0 = 0; j0 < key_end(causal, i1, S); j0 += kBlockK) {
            const int64_t j1 = std::min(S, j0 + kBlockK), bc = j1 - j0;
            tile_scores(causal, q, q_rs, i0, br, k, k_rs, j0, bc, D, scores.data(), tiles.packing);
            // The softmax step, in three passes over the tile's rows: each
            // pass's rows are independent of one another, so the CPU works on
            // several at once (row by row, each step waited for the one
            // before it). Row r is processed over its visible keys rounded up
            // to whole vectors (vector_width), the keys it cannot see in that
            // width set to -inf, whose exponential is 0.
            // Pass 1: the scaled scores, and each row's new running maximum.
            for (int64_t r = 0; r < br; ++r) {
                const int64_t visible = visible_in_tile(causal, i0 + r, j0, j1), w = vector_width(visible, bc);
                T* s = scores.data() + r * bc;  // scores, then probabilities (unnormalized)
                for (int64_t c = 0; c < w; ++c) s[c] = c < visible ? scale * s[c] : T(-INFINITY);
                std::fill(s + w, s + bc, T(0));  // p = 0 for the keys beyond the width
                width[r] = w;
                new_max[r] = max_of(s, w, row_max[r]);
            }
            // Pass 2: p_ij = exp(s_ij - m_i').
            for (int64_t r = 0; r < br; ++r) {
                T* s = scores.data() + r * bc;
                const T m = new_max[r];
                for (int64_t c = 0; c < width[r]; ++c) s[c] = exp_fast(s[c] - m);
            }
            // Pass 3: the running sums l_i' and the rescaled o_i.
            for (int64_t r = 0; r < br; ++r) {
                if (width[r] == 0) continue;  // every key of this tile is in this query's future
                T rescale = exp_fast(row_max[r] - new_max[r]);  // exp(-inf) = 0 on the first tile
                row_sum[r] = rescale * row_sum[r] + sum_of(scores.data() + r * bc, width[r]);
                row_max[r] = new_max[r];
                T* o = acc.data() + r * Dv;
                for (int64_t e = 0; e < Dv; ++e) o[e] *= rescale;
            }
            // o += P_tile V_tile, band by band: each band's keys are the first rows of V_tile.
            const PackedB<T> values = pack_b_once(br, bc, Dv, v + j0 * v_rs, v_rs, 1, tiles.packing);
            for_each_query_band(causal, i0, br, j0, bc, [&](int64_t r0, int64_t rows, int64_t keys) {
                gemm_packed_b(rows, Dv, 0, keys, scores.data() + r0 * bc, bc, 1, values, acc.data() + r0 * Dv, Dv,
                              /*accumulate=*/true, tiles.packing);
            });
        }
        for (int64_t r = 0; r < br; ++r) {
            T* o = outm.matrix(n) + (i0 + r) * outm.row_stride;
            const T* a = acc.data() + r * Dv;
            // l = 0 only when a row sees no key at all (S = 0): out = 0.
            T inv = row_sum[r] > 0 ? T(1) / row_sum[r] : T(0);
            for (int64_t e = 0; e < Dv; ++e) o[e] = a[e] * inv;
            lse_all[n * Tq + i0 + r] = row_max[r] + std::log(row_sum[r]);
        }
    });
}

template <typename T>
void attention_backward_typed(const Tensor& dout_tensor, const Tensor& q_tensor, const Tensor& k_tensor,
                              const Tensor& v_tensor, const Tensor& out_tensor, const Tensor& lse_tensor, bool causal,
                              double scale_d, const Tensor& dq_tensor, const Tensor& dk_tensor,
                              const Tensor& dv_tensor) {
    const Matrices<const T> doutm = matrices_of<const T>(dout_tensor), qm = matrices_of<const T>(q_tensor),
                            km = matrices_of<const T>(k_tensor), vm = matrices_of<const T>(v_tensor),
                            outm = matrices_of<const T>(out_tensor);
    const Matrices<T> dqm = matrices_of<T>(dq_tensor), dkm = matrices_of<T>(dk_tensor), dvm = matrices_of<T>(dv_tensor);
    const int64_t N = (int64_t)qm.offsets.size(), Tq = q_tensor.size(-2), S = k_tensor.size(-2), D = q_tensor.size(-1),
                  Dv = v_tensor.size(-1);
    const T* lse_all = static_cast<const T*>(lse_tensor.raw_data());

    // One thread per (batch, head): dk and dv of a head collect contributions
    // from all its query blocks, so no two threads ever write the same row.
    struct Tiles {
        ScratchBuffer<T> p, dp, delta;
        PackingBuffers<T> packing;
    };
    auto make_tiles = [&] {
        return Tiles{ScratchBuffer<T>(kBlockQ * kBlockK), ScratchBuffer<T>(kBlockQ * kBlockK), ScratchBuffer<T>(kBlockQ),
                     PackingBuffers<T>()};
    };
    parallel_for_dynamic(N, N * Tq * S * D >= kParallelMin, make_tiles, [&](int64_t n, Tiles& tiles) {
        const T scale = (T)scale_d;  // in the task's own frame, as in forward
        ScratchBuffer<T>& p = tiles.p;
        ScratchBuffer<T>& dp = tiles.dp;
        ScratchBuffer<T>& delta = tiles.delta;
        // Each matrix where it lies (attention.h), and the distance between its rows.
        const T *q = qm.matrix(n), *k = km.matrix(n), *v = vm.matrix(n), *dout = doutm.matrix(n), *out = outm.matrix(n);
        const T* lse = lse_all + n * Tq;
        T *dq = dqm.matrix(n), *dk = dkm.matrix(n), *dv = dvm.matrix(n);
        const int64_t q_rs = qm.row_stride, k_rs = km.row_stride, v_rs = vm.row_stride, dout_rs = doutm.row_stride,
                      out_rs = outm.row_stride, dq_rs = dqm.row_stride, dk_rs = dkm.row_stride, dv_rs = dvm.row_stride;
        auto zero_rows = [](T* m, int64_t rs, int64_t first, int64_t last, int64_t width) {
            for (int64_t r = first; r < last; ++r) std::fill(m + r * rs, m + r * rs + width, T(0));
        };
        // No gradient is zeroed first: the first product into a tile writes
        // it and the later ones add to it (zeroing dq, dk and dv took about
        // 5% of backward's time at T = 128, D = 32). The first into dq's
        // block is its first key tile; the first into a key tile's dk and dv
        // is the first query block that reaches it (j0 < key_end(causal, i1,
        // S) grows with i1).
        for (int64_t i0 = 0; i0 < Tq; i0 += kBlockQ) {
            const int64_t i1 = std::min(Tq, i0 + kBlockQ), br = i1 - i0;
            for (int64_t r = 0; r < br; ++r) delta[r] = dot_of(dout + (i0 + r) * dout_rs, out + (i0 + r) * out_rs, Dv);
            if (key_end(causal, i1, S) == 0) zero_rows(dq, dq_rs, i0, i1, D);  // no keys (S = 0): dq = 0
            for (int64_t j0 = 0; j0 < key_end(causal, i1, S); j0 += kBlockK) {
                const int64_t j1 = std::min(S, j0 + kBlockK), bc = j1 - j0;
                const bool add_to_dq = j0 > 0, add_to_dk_dv = i0 > 0 && j0 < key_end(causal, i0, S);
                // p_ij = exp(scale s_ij - L_i), 0 where masked.
                tile_scores(causal, q, q_rs, i0, br, k, k_rs, j0, bc, D, p.data(), tiles.packing);
                for (int64_t r = 0; r < br; ++r) {
                    const int64_t visible = visible_in_tile(causal, i0 + r, j0, j1);
                    T* pr = p.data() + r * bc;
                    const T shift = lse[i0 + r];
                    for (int64_t c = 0; c < visible; ++c) pr[c] = exp_fast(scale * pr[c] - shift);
                    std::fill(pr + visible, pr + bc, T(0));
                }
                // dp = dout_tile V_tile^T, band by band (like the scores)
                const PackedB<T> values_t = pack_b_once(br, Dv, bc, v + j0 * v_rs, 1, v_rs, tiles.packing);
                for_each_query_band(causal, i0, br, j0, bc, [&](int64_t r0, int64_t rows, int64_t keys) {
                    gemm_packed_b(rows, keys, 0, Dv, dout + (i0 + r0) * dout_rs, dout_rs, 1, values_t,
                                  dp.data() + r0 * bc, bc, false, tiles.packing);
                });
                // ds = scale p (dp - D), in place of dp (the scale of s = scale q.k folded in);
                // 0 where masked, where dp was not computed.
                for (int64_t r = 0; r < br; ++r) {
                    const int64_t visible = visible_in_tile(causal, i0 + r, j0, j1);
                    const T* pr = p.data() + r * bc;
                    T* dsr = dp.data() + r * bc;
                    const T d = delta[r];
                    for (int64_t c = 0; c < visible; ++c) dsr[c] = scale * pr[c] * (dsr[c] - d);
                    std::fill(dsr + visible, dsr + bc, T(0));
                }
                // dv_tile += P^T dout_tile and dk_tile += dS^T q_tile, by bands of keys
                // (a band's queries are the last rows of the tile's dout and q);
                // dq_tile += dS k_tile, by bands of queries.
                const PackedB<T> dout_tile = pack_b_once(bc, br, Dv, dout + i0 * dout_rs, dout_rs, 1, tiles.packing);
                for_each_key_band(causal, i0, br, j0, bc, [&](int64_t c0, int64_t cols, int64_t first) {
                    gemm_packed_b(cols, Dv, first, br - first, p.data() + first * bc + c0, 1, bc, dout_tile,
                                  dv + (j0 + c0) * dv_rs, dv_rs, add_to_dk_dv, tiles.packing);
                });
                const PackedB<T> q_tile = pack_b_once(bc, br, D, q + i0 * q_rs, q_rs, 1, tiles.packing);
                for_each_key_band(causal, i0, br, j0, bc, [&](int64_t c0, int64_t cols, int64_t first) {
                    gemm_packed_b(cols, D, first, br - first, dp.data() + first * bc + c0, 1, bc, q_tile,
                                  dk + (j0 + c0) * dk_rs, dk_rs, add_to_dk_dv, tiles.packing);
                });
                const PackedB<T> keys = pack_b_once(br, bc, D, k + j0 * k_rs, k_rs, 1, tiles.packing);
                for_each_query_band(causal, i0, br, j0, bc, [&](int64_t r0, int64_t rows, int64_t visible) {
                    gemm_packed_b(rows, D, 0, visible, dp.data() + r0 * bc, bc, 1, keys, dq + (i0 + r0) * dq_rs, dq_rs,
                                  add_to_dq, tiles.packing);
                });
            }
        }
        // Keys no query block reached (causal with S > T, or T = 0) get no gradient.
        const int64_t reached = Tq == 0 ? 0 : std::min(S, (key_end(causal, Tq, S) + kBlockK - 1) / kBlockK * kBlockK);
        zero_rows(dk, dk_rs, reached, S, D);
        zero_rows(dv, dv_rs, reached, S, Dv);
    });
}

}  // namespace

static void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                      const Tensor& out, const Tensor& logsumexp) {
    if (q.dtype() == kFloat32) attention_typed<float>(q, k, v, causal, scale, out, logsumexp);
    else attention_typed<double>(q, k, v, causal, scale, out, logsumexp);
}

static void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& out, const Tensor& logsumexp, bool causal, double scale, const Tensor& dq,
                               const Tensor& dk, const Tensor& dv) {
    if (q.dtype() == kFloat32)
        attention_backward_typed<float>(dout, q, k, v, out, logsumexp, causal, scale, dq, dk, dv);
    else
        attention_backward_typed<double>(dout, q, k, v, out, logsumexp, causal, scale, dq, dk, dv);
}

void add_attention(Backend& table) {
    table.attention = {attention, attention_backward};
}

}  // namespace cpu
}  // namespace nc
