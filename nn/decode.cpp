#include "nn/decode.h"

#include <algorithm>
#include <cmath>

#include "tensor/backend.h"
#include "tensor/ops/attention.h"
#include "tensor/ops/norms.h"
#include "tensor/ops/rope.h"
#include "tensor/profile.h"
#include "tensor/raw_ops.h"

namespace nc {
namespace nn {

namespace {

// The model's own head (untied), or nullptr when the logits come from the
// token table itself.
const Linear* head_of(const TransformerModel& model) {
    if (const auto* gpt2 = dynamic_cast<const GPT2*>(&model)) return gpt2->lm_head.get();
    if (const auto* llama = dynamic_cast<const Llama*>(&model)) return llama->lm_head.get();
    return nullptr;
}

// Every linear layer of the blocks, and the untied head, in no particular order.
std::vector<const Linear*> linear_layers(const TransformerModel& model) {
    std::vector<const Linear*> all;
    for (const auto& block : model.blocks()) {
        for (const auto& l : block->attn->linears()) all.push_back(l.get());
        for (const auto& l : {block->mlp.fc, block->mlp.up, block->mlp.proj})
            if (l) all.push_back(l.get());
    }
    if (const Linear* head = head_of(model)) all.push_back(head);
    return all;
}

// The step's views assume each weight, bias and table is one contiguous block.
bool all_contiguous(const TransformerModel& model) {
    for (const Tensor& p : model.parameters())
        if (!p.is_contiguous()) return false;
    return true;
}

// A header over `base`'s storage: `shape` and `strides` from `offset`
// elements past base's first one. The step's views are built from these
// once, so that each kernel reads and writes the buffers in place.
Tensor view_of(const Tensor& base, Shape shape, Shape strides, int64_t offset = 0) {
    return make_view(base, std::move(shape), std::move(strides), base.offset() + offset);
}

}  // namespace

std::string TokenDecoder::unsupported(const TransformerModel& model) {
    const TransformerConfig& c = model.config();
    if (c.family == Family::ViT) return "a ViT generates no text";
    if (c.placement != Placement::Pre) return "its norms are not placed before the sublayers (pre-norm)";
    if (c.norm == NormKind::DyT) return "its norms are Dynamic Tanh";
    if (c.attention != AttentionKind::Standard) return "its attention is differential";
    if (!c.causal) return "it is not causal";
    if (c.embed_scale0 > 0) return "its embeddings are scaled";
    if (c.dropout > 0 && model.is_training()) return "it is in training mode with dropout";
    if (!dynamic_cast<const GPT2*>(&model) && !dynamic_cast<const Llama*>(&model))
        return "it is neither a GPT2 nor a Llama model";
    // Mixed precision as set_precision sets it: every product and every
    // attention rounding to the model's one 16-bit format, or none.
    const DType operands = model.precision();
    for (const Linear* l : linear_layers(model))
        if (l->operand_dtype != operands) return "its products do not all round their operands as its precision says";
    for (const auto& block : model.blocks())
        if (block->attn->operand_dtype != operands)
            return "its attention does not round q, k and v as its precision says";
    if (model.blocks().empty()) return "it has no blocks";
    const Tensor& weight = model.blocks()[0]->mlp.fc->weight;  // the buffers take its dtype and device
    if (weight.dtype() != kFloat32 && weight.dtype() != kFloat64) return "its weights are neither float32 nor float64";
    if (operands != kFloat32 && weight.dtype() != kFloat32) return "it rounds weights that are not float32 to 16 bits";
    if (weight.device() != kCPU) return "it is not on the CPU";
    if (!all_contiguous(model)) return "a parameter is a view that is not contiguous";
    return "";
}

TokenDecoder::TokenDecoder(const TransformerModel& model, KVCache& cache)
    : model_(model), cache_(cache), cfg_(model.config()), operands_(model.precision()) {
    std::string why = unsupported(model);
    if (!why.empty()) fail("TokenDecoder", "this model has no one-token step: " + why);
    if (cache.layers.size() != model.blocks().size() || cache.batch != 1)
        fail("TokenDecoder", "the cache was made for another model or batch size (make it with make_cache(1))");
    const int64_t C = cfg_.n_embd, H = cfg_.n_head, Hkv = cfg_.kv_heads(), D = cfg_.head_dim();
    const int64_t qw = cfg_.query_width(), kw = cfg_.key_width();
    const DType dtype = model.blocks()[0]->mlp.fc->weight.dtype();
    const Device device = kCPU;
    const bool rounds = operands_ != kFloat32;
    auto buffer = [&](int64_t n) { return empty({1, n}, dtype, device); };
    // y = x W^T (+ b). With 16-bit operands W is rounded here, once, and x at
    // each step: linear() with an operand dtype (ops_linalg.cpp) rounds both
    // in every call, to the same numbers.
    // Products on the same x (Llama's q, k and v; SwiGLU's fc and up) share
    // one rounded copy of it, made by the first of them (`earlier`).
    auto row_linear_of = [&](const Tensor& x, const Tensor& weight, const Tensor& bias, const RowLinear* earlier) {
        RowLinear r;
        const int64_t N = weight.size(0), K = weight.size(1);
        r.x = x;
        const Tensor w = rounds ? raw::to_dtype(weight, operands_) : weight;
        r.w_t = view_of(w, {K, N}, {1, K});  // W^T, as raw::linear reads it
        r.bias = bias;  // [N] or undefined (contiguous: unsupported() refuses other models)
        r.y = buffer(N);
        if (rounds) {
            r.rounds_x = earlier == nullptr;
            r.x16 = earlier ? earlier->x16 : empty({1, K}, operands_, device);
        }
        return r;
    };
    auto row_linear = [&](const Tensor& x, const Linear& l, const RowLinear* earlier = nullptr) {
        return row_linear_of(x, l.weight, l.bias, earlier);
    };
    auto row_norm = [&](const Tensor& x, const std::shared_ptr<NormLayer>& layer) {
        RowNorm n;
        n.layer = layer.get();
        n.x = x;
        n.out = layer ? buffer(C) : x;  // no norm: the sublayer reads the stream itself
        n.mean = empty({1}, dtype, device);
        n.rstd = empty({1}, dtype, device);
        return n;
    };
    // A row of `heads` x D numbers from `offset` on, seen as [1, heads, 1, D]:
    // split_heads' view of one token (attention.cpp).
    auto heads = [&](const Tensor& row, int64_t offset, int64_t n_heads) {
        return view_of(row, {1, n_heads, 1, D}, {n_heads * D, D, D, 1}, offset);
    };

    if (const auto* gpt2 = dynamic_cast<const GPT2*>(&model)) {
        token_table_ = gpt2->wte->weight;
        if (gpt2->wpe) position_table_ = gpt2->wpe->weight;
    } else {
        const auto* llama = dynamic_cast<const Llama*>(&model);  // unsupported() checked it is one
        token_table_ = llama->embed_tokens->weight;
        if (llama->embed_positions) position_table_ = llama->embed_positions->weight;
    }
    stream_[0] = buffer(C);
    stream_[1] = buffer(C);

    // Each block reads stream_[0] and leaves its output there: the attention's
    // residual sum goes to stream_[1], the MLP's back to stream_[0].
    for (const auto& block : model.blocks()) {
        Layer L;
        L.norm_1 = row_norm(stream_[0], block->norm_1);
        std::vector<std::shared_ptr<Linear>> linears = block->attn->linears();  // [qkv, out] or [q, k, v, out]
        for (size_t i = 0; i + 1 < linears.size(); ++i)
            L.qkv.push_back(row_linear(L.norm_1.out, *linears[i], i > 0 ? &L.qkv[0] : nullptr));
        if (L.qkv.size() == 1) {
            const Tensor& fused = L.qkv[0].y;  // [q | k | v], GPT-2's c_attn
            L.q = heads(fused, 0, H);
            L.k = heads(fused, qw, Hkv);
            L.v = heads(fused, qw + kw, Hkv);
        } else {
            L.q = heads(L.qkv[0].y, 0, H);
            L.k = heads(L.qkv[1].y, 0, Hkv);
            L.v = heads(L.qkv[2].y, 0, Hkv);
        }
        if (cfg_.positions == Positions::Rope) {
            L.q_rotated = empty({1, H, 1, D}, dtype, device);
            L.k_rotated = empty({1, Hkv, 1, D}, dtype, device);
            L.q_rows = view_of(L.q, {H, D}, {D, 1});
            L.k_rows = view_of(L.k, {Hkv, D}, {D, 1});
            L.q_rotated_rows = view_of(L.q_rotated, {H, D}, {D, 1});
            L.k_rotated_rows = view_of(L.k_rotated, {Hkv, D}, {D, 1});
        }
        Tensor attention_out = buffer(C);
        L.heads_out = heads(attention_out, 0, H);  // [1, H, 1, D] over the [1, C] row the projection reads
        if (Hkv != H) {
            // Grouped-query attention: each key/value head serves g = H / Hkv
            // query heads, q heads h = i g .. i g + g - 1 for key/value head i.
            const int64_t g = H / Hkv;
            auto grouped = [&](const Tensor& t) { return view_of(t, {1, Hkv, g, 1, D}, {H * D, g * D, D, D, 1}); };
            L.q_grouped = grouped(cfg_.positions == Positions::Rope ? L.q_rotated : L.q);
            L.out_grouped = grouped(L.heads_out);
        }
        L.logsumexp = empty({H, 1}, dtype, device);
        if (rounds) {
            L.q16 = empty({1, H, 1, D}, operands_, device);
            L.k16 = empty({1, Hkv, 1, D}, operands_, device);
            L.v16 = empty({1, Hkv, 1, D}, operands_, device);
        }
        L.out = row_linear(attention_out, *linears.back());
        L.norm_2 = row_norm(stream_[1], block->norm_2);
        L.fc = row_linear(L.norm_2.out, *block->mlp.fc);
        if (block->mlp.swiglu) L.up = row_linear(L.norm_2.out, *block->mlp.up, &L.fc);
        L.hidden = buffer(block->mlp.fc->out_features);
        L.activation = block->mlp.gelu_tanh ? UnaryOp::GeluTanh : UnaryOp::Gelu;
        L.down = row_linear(L.hidden, *block->mlp.proj);
        layers_.push_back(std::move(L));
    }
    final_norm_ = row_norm(stream_[0], model.final_norm());
    if (const Linear* lm_head = head_of(model)) {
        head_ = row_linear(final_norm_.out, *lm_head);
    } else {  // tied: logits against the token table itself, without a bias
        head_ = row_linear_of(final_norm_.out, token_table_, Tensor(), nullptr);
    }
}

void TokenDecoder::run_linear(const RowLinear& l) const {
    const Backend& backend = backend_for(l.y.device());
    if (l.rounds_x) {
        ProfileScope scope(OpKind::Movement);
        backend.unary(UnaryOp::Copy, l.x, l.x16);  // a cast: rounds to 16 bits
    }
    ProfileScope scope(OpKind::Gemm, 2.0 * (double)l.w_t.size(0) * (double)l.w_t.size(1));
    backend.matmul(l.x16.defined() ? l.x16 : l.x, l.w_t, l.y, /*accumulate=*/false, l.bias);
}

void TokenDecoder::round_in_place(const Tensor& x, const Tensor& scratch) const {
    ProfileScope scope(OpKind::Movement);
    const Backend& backend = backend_for(x.device());
    backend.unary(UnaryOp::Copy, x, scratch);  // float32 -> 16 bits: rounds
    backend.unary(UnaryOp::Copy, scratch, x);  // and back: exact
}

void TokenDecoder::run_norm(const RowNorm& n) const {
    if (!n.layer) return;
    ProfileScope scope(OpKind::Norm);
    if (const auto* ln = dynamic_cast<const LayerNorm*>(n.layer))
        backend_for(n.x.device()).layer_norm.forward(n.x, ln->weight, ln->bias, ln->eps, n.out, n.mean, n.rstd);
    else {
        const auto& rms = dynamic_cast<const RMSNorm&>(*n.layer);
        backend_for(n.x.device()).rms_norm.forward(n.x, rms.weight, rms.eps, n.out, n.rstd);
    }
}

// The attention of one token (Attention::standard): its q and k turned by
// RoPE, its k and v appended to the cache, and q against every cached key.
void TokenDecoder::attend(Layer& L, int64_t index, int64_t position) {
    const Backend& backend = backend_for(L.q.device());
    const int64_t H = cfg_.n_head, Hkv = cfg_.kv_heads(), D = cfg_.head_dim();
    Tensor q = L.q, k = L.k;
    if (cfg_.positions == Positions::Rope) {
        // Every head at this position: the tables' row `position`.
        const RopeTables& all = cache_rope_tables(cache_, cfg_.rope_dim(), cfg_.rope_theta, L.q.dtype(), L.q.device());
        const Tensor cos = raw::narrow(all.cos, 0, position, 1), sin = raw::narrow(all.sin, 0, position, 1);
        ProfileScope scope(OpKind::Elementwise);
        backend.rope.forward(L.q_rows, cos, sin, L.q_rotated_rows);
        backend.rope.forward(L.k_rows, cos, sin, L.k_rotated_rows);
        q = L.q_rotated;
        k = L.k_rotated;
    }
    // Mixed precision's attention rounds q, k and v to 16 bits, and computes
    // in float32 on the rounded numbers (ops/attention.cpp); the keys and
    // values go into the cache rounded (Attention::use_cache).
    if (operands_ != kFloat32) {
        round_in_place(q, L.q16);
        round_in_place(k, L.k16);
        round_in_place(L.v, L.v16);
    }
    CachedKV cached = append_to_cache(cache_.layers[index], k, L.v, position, cache_.capacity);
    Tensor keys = cached.k, values = cached.v, out = L.heads_out;
    if (Hkv != H) {
        // The model's forward repeats each cached key/value head into a copy
        // for its g query heads; here they are seen g times through a stride
        // of 0, as [1, Hkv, g, S, D], against q and out as [1, Hkv, g, 1, D].
        const int64_t g = H / Hkv, S = keys.size(2);
        auto repeated = [&](const Tensor& t) {
            const Shape& s = t.strides();
            return view_of(t, {1, Hkv, g, S, D}, {s[0], s[1], 0, s[2], s[3]});
        };
        keys = repeated(keys);
        values = repeated(values);
        q = L.q_grouped;
        out = L.out_grouped;
    }
    // The first token of an empty cache attends causally, as the prompt's
    // tokens do; every later one sees all cached keys (Attention::use_cache).
    ProfileScope scope(OpKind::Attention);
    backend.attention.forward(q, keys, values, /*causal=*/position == 0, 1.0 / std::sqrt((double)D), out,
                              L.logsumexp);
}

std::vector<double> TokenDecoder::step(int64_t id) {
    if (is_grad_enabled()) fail("TokenDecoder", "generation records no graph: run it under NoGradGuard");
    // What the views were built on must still hold (decode.h); these are cheap to ask.
    if (model_.precision() != operands_ || (cfg_.dropout > 0 && model_.is_training()) || token_table_.device() != kCPU)
        fail("TokenDecoder", "the model changed since the decoder was made (its precision, training mode with "
                             "dropout, or device): make a new decoder");
    const int64_t V = cfg_.vocab_size, position = cache_.length;
    if (id < 0 || id >= V)
        fail("TokenDecoder", "token " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(V));
    if (position >= std::min(cache_.capacity, cfg_.block_size))
        fail("TokenDecoder", "position " + std::to_string(position) + " does not fit the block size of " +
                                 std::to_string(cfg_.block_size) + " positions (a cache holds at most that many)");
    const Backend& backend = backend_for(stream_[0].device());

    // The embedding: the token's row of the table, plus its position's row.
    const Tensor token_row = raw::narrow(token_table_, 0, id, 1);
    if (position_table_.defined()) {
        ProfileScope scope(OpKind::Elementwise);
        backend.binary(BinaryOp::Add, token_row, raw::narrow(position_table_, 0, position, 1), stream_[0]);
    } else {
        ProfileScope scope(OpKind::Movement);
        backend.unary(UnaryOp::Copy, token_row, stream_[0]);
    }

    for (size_t i = 0; i < layers_.size(); ++i) {
        Layer& L = layers_[i];
        // stream_[1] = stream_[0] + out(attention(norm_1(stream_[0])))
        run_norm(L.norm_1);
        for (const RowLinear& l : L.qkv) run_linear(l);
        attend(L, (int64_t)i, position);
        run_linear(L.out);
        {
            ProfileScope scope(OpKind::Elementwise);
            backend.binary(BinaryOp::Add, stream_[0], L.out.y, stream_[1]);
        }
        // stream_[0] = stream_[1] + down(act(fc(norm_2(stream_[1]))))
        run_norm(L.norm_2);
        run_linear(L.fc);
        if (L.up.y.defined()) {
            run_linear(L.up);
            ProfileScope scope(OpKind::Elementwise);
            backend.binary(BinaryOp::SwiGLU, L.fc.y, L.up.y, L.hidden);
        } else {
            ProfileScope scope(OpKind::Elementwise);
            backend.unary(L.activation, L.fc.y, L.hidden);
        }
        run_linear(L.down);
        ProfileScope scope(OpKind::Elementwise);
        backend.binary(BinaryOp::Add, stream_[1], L.down.y, stream_[0]);
    }
    run_norm(final_norm_);
    run_linear(head_);
    cache_.length += 1;
    return head_.y.to_vector();
}

}  // namespace nn
}  // namespace nc
