// decode.h — the one-token step of generation on buffers made once
// (chapter 5, "One token without new tensors").
//
// With the key/value cache (kv_cache.h), each step of generation feeds one
// token through the model. Through the model's own forward, every op of
// that step builds tensor headers (an output, views of it, a reshape) and
// asks the allocator for memory: some 250 headers and 70 allocations a
// token for the default model, whose products on one row of numbers take
// only a few microseconds each, so the bookkeeping cost about a third of
// the token's time.
//
// TokenDecoder does the same step, kernel by kernel, on buffers and views
// it builds once, when it is made: the residual stream, each layer's norm
// output, q, k and v, the attention output, the MLP's hidden row, the
// logits, and the views the kernels read them through. A step then only
// writes numbers into them. The headers it still makes are the views whose
// place moves with the token: the token's row of the embedding table, its
// position's rows (learned positions, RoPE), and the cache's keys and
// values, which grow by one position a token.
//
// It calls the same backend kernels, on the same numbers, in the same
// order as Block::forward with placement pre (nn/placement.cpp), so its
// logits and the keys and values it caches are the model's own to the last
// bit (tests/test_decode.cpp checks this for every kind of model it takes).
// It takes the pre-norm GPT-2 and Llama models, the ones generation is for:
// LayerNorm, RMSNorm or no norm; learned, rotary or no positions; GELU or
// SwiGLU; grouped-query attention; with or without biases and a tied head;
// float32 or float64 weights, on the CPU; full-precision products, or mixed
// precision's 16-bit ones on float32 weights (set_precision, below). For
// any other model (post-norm, DyT, differential attention, scaled
// embeddings, dropout in training mode, ...) `unsupported` says why, and
// generate_tokens takes the model's forward instead.
//
// Mixed precision (bfloat16 or float16 operands): the model's forward
// rounds every weight to 16 bits in every product, for one token as for a
// batch; here each weight is rounded once, when the decoder is made, into a
// 16-bit copy (half the weights' bytes more memory), and a token's products
// read those copies: half the bytes a float32 weight streams. The row going
// into each product is rounded as the model rounds it, and q, k and v as
// its attention rounds them (the cache holds k and v rounded), so the
// logits are still the model's own to the bit.
//
// The decoder reads the weights where they lie when it is made: after the
// model moves to another device, changes its precision or goes into
// training mode with dropout, a step refuses to run (make a new decoder).
// New values in the same weights (an optimizer step, loading a file) are
// seen in float32; with 16-bit operands the copies keep the old ones, so
// make a new decoder after changing the weights. It keeps no residual terms
// for diagnostics (Block::track_residuals), which only training's forward
// needs.
//
// Use, under NoGradGuard, with a cache that already holds the prompt:
//   TokenDecoder decoder(model, cache);
//   std::vector<double> logits = decoder.step(next_id);  // cache.length grows by one
#pragma once

#include <string>
#include <vector>

#include "nn/models.h"
#include "tensor/backend.h"  // UnaryOp

namespace nc {
namespace nn {

class TokenDecoder {
public:
    // Why `model` has no one-token step here, or "" when it has one.
    static std::string unsupported(const TransformerModel& model);

    // The model and the cache it fills (model.make_cache(1)); both must
    // outlive the decoder. The cache may be reset and refilled through the
    // model's forward between steps.
    TokenDecoder(const TransformerModel& model, KVCache& cache);
    // A copy would share the buffers and write over the other's numbers.
    TokenDecoder(const TokenDecoder&) = delete;
    TokenDecoder& operator=(const TokenDecoder&) = delete;

    // Feeds token `id` at position cache.length, appends its keys and values
    // to the cache, and returns its logits [vocab].
    std::vector<double> step(int64_t id);

private:
    // y = x W^T (+ b) for one row, as raw::linear computes it: one matmul
    // call, the bias handed to it.
    struct RowLinear {
        Tensor x, w_t, bias, y;  // x [1, K], w_t [K, N] (the weight transposed: a view), bias [N] or undefined, y [1, N]
        Tensor x16;              // 16-bit operands: x rounded, [1, K]; w_t is then a view of the 16-bit copy
        bool rounds_x = false;   // whether this product rounds x into x16 (not when an earlier one on the same x did)
    };
    // out = norm(x) over one row of C numbers.
    struct RowNorm {
        const NormLayer* layer = nullptr;  // LayerNorm or RMSNorm; nullptr: no norm (out is x)
        Tensor x, out, mean, rstd;         // [1, C], [1, C], [1], [1]
    };
    struct Layer {
        RowNorm norm_1, norm_2;
        std::vector<RowLinear> qkv;  // GPT-2: one fused projection; Llama: q, k and v
        RowLinear out, fc, up, down;  // up only for SwiGLU
        Tensor q, k, v;              // this token's heads, [1, H, 1, D] and [1, Hkv, 1, D] (views)
        Tensor q_rotated, k_rotated;  // RoPE's outputs (rotary positions only), the same shapes
        Tensor q_rows, k_rows, q_rotated_rows, k_rotated_rows;  // the same as rows [heads, D], RoPE's layout
        Tensor heads_out;            // the attention's output heads, a view of out.x
        Tensor q_grouped, out_grouped;  // grouped-query attention: q and heads_out as [1, Hkv, H / Hkv, 1, D]
        Tensor logsumexp;            // [H, 1], which the attention kernel writes too
        Tensor q16, k16, v16;        // 16-bit operands: where q, k and v are rounded, the shapes of q and k
        Tensor hidden;               // the MLP's activation: GELU(fc) or SwiGLU(fc, up), [1, hidden]
        UnaryOp activation = UnaryOp::GeluTanh;  // GELU's form (MlpLayers::gelu_tanh)
    };

    void run_linear(const RowLinear& l) const;
    void run_norm(const RowNorm& n) const;
    void attend(Layer& layer, int64_t index, int64_t position);
    // x = its value rounded to 16 bits (operands_), through `scratch` of x's shape.
    void round_in_place(const Tensor& x, const Tensor& scratch) const;

    const TransformerModel& model_;  // asked at each step whether it changed (see above)
    KVCache& cache_;
    TransformerConfig cfg_;
    DType operands_ = kFloat32;  // the products' operands: kFloat32, or mixed precision's kBFloat16 or kFloat16
    Tensor token_table_, position_table_;  // [V, C], [block, C] (learned positions) or undefined
    Tensor stream_[2];                     // the residual stream [1, C]: the step alternates between the two
    std::vector<Layer> layers_;
    RowNorm final_norm_;
    RowLinear head_;
};

}  // namespace nn
}  // namespace nc
