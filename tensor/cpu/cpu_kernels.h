// cpu_kernels.h — how the CPU backend's table is filled: each kernel file
// adds its own entries by name (`table.layer_norm = layer_norm;` at the end
// of the file that defines it), so a kernel's signature is written once, in
// tensor/backend.h, and at its definition. cpu_backend.cpp calls them all.
#pragma once

#include "tensor/backend.h"
#include "tensor/cpu/allocator.h"  // allocate, deallocate, allocator_stats, reset_peak_bytes

namespace nc {
namespace cpu {

void add_elementwise(Backend& table);      // tensor/cpu/elementwise.cpp: fill, unary, binary, where, random
void add_reductions(Backend& table);       // tensor/cpu/reduce.cpp: reduce_rows, sum_columns, softmax_rows
void add_indexing(Backend& table);         // tensor/cpu/index.cpp: index_select, index_add, gather, scatter_add
void add_matmul(Backend& table);           // tensor/cpu/matmul.cpp (the GEMM: gemm.h)
// The fused ops, each beside its raw op in tensor/ops/<op>.cpp: one
// add_<name> per line of tensor/ops/ops.def (add_layer_norm, add_dyt, ...).
#define NC_FUSED_OP(name, Kernels) void add_##name(Backend& table);
#include "tensor/ops/ops.def"
#undef NC_FUSED_OP

// The tiled attention kernel's tile: queries and keys per tile, and the
// bands a tile on the causal diagonal is cut into (attention.cpp says why
// 128 and 32; chapter 9's picture of the tiling reads them from here).
constexpr int64_t kAttentionTileQueries = 128, kAttentionTileKeys = 128, kAttentionDiagonalBand = 32;

// Not in the table: the T x S-materializing attention (attention_reference.cpp)
// that tests compare the tiled kernel against. probs: [N, T, S].
void attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                         const Tensor& out, const Tensor& probs);
void attention_reference_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& probs, double scale, const Tensor& dq, const Tensor& dk,
                                  const Tensor& dv);

}  // namespace cpu
}  // namespace nc
