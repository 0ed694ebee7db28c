// cuda_kernels.h — how the CUDA backend's table is filled: as on the CPU
// (tensor/cpu/cpu_kernels.h), each kernel file adds its own entries by name
// at its end; cuda_backend.cu, which also owns memory and copies, calls them
// all. Same contract as the CPU backend: arguments are validated by the raw
// ops, all tensors live on the GPU.
#pragma once

#include "tensor/backend.h"

namespace nc {
namespace cuda {

// Device memory from the caching allocator (cuda_backend.cu), also the
// kernels' scratch space (column sums, reductions, attention).
void* allocate(size_t nbytes);
void deallocate(void* data);
// out[...] = value (elementwise.cu), also used by attention.cu to zero dq.
void fill(const Tensor& out, double value);

void add_elementwise(Backend& table);      // elementwise.cu: fill, unary, binary, where, random
void add_reductions(Backend& table);       // reduce.cu: reduce_rows, sum_columns, softmax_rows
void add_indexing(Backend& table);         // index.cu: index_select, index_add, gather, scatter_add
void add_matmul(Backend& table);           // matmul.cu (cuBLAS)
void add_norms(Backend& table);            // norms.cu: layer_norm, rms_norm (+ backward)
void add_dyt(Backend& table);              // dyt.cu
void add_cross_entropy(Backend& table);    // cross_entropy.cu
void add_geodesic_update(Backend& table);  // geodesic_update.cu
void add_attention(Backend& table);        // attention.cu
void add_adamw(Backend& table);            // adamw.cu

}  // namespace cuda
}  // namespace nc
