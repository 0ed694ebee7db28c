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
// Opens cuBLAS now if it is not open yet (cublas_library.cu; the backend
// opens it at its first product). Throws nc::Error naming the library file
// when it cannot be opened or lacks a function the backend calls.
void open_cublas();

void add_elementwise(Backend& table);      // elementwise.cu: fill, unary, binary, where, random
void add_reductions(Backend& table);       // reduce.cu: reduce_rows, sum_columns, softmax_rows
void add_indexing(Backend& table);         // index.cu: index_select, index_add, gather, scatter_add
void add_matmul(Backend& table);           // matmul.cu (cuBLAS)
// The fused ops, each in cuda/<op>.cu: one add_<name> per line of
// tensor/ops/ops.def (add_layer_norm, add_dyt, ...).
#define NC_FUSED_OP(name, Kernels) void add_##name(Backend& table);
#include "tensor/ops/ops.def"
#undef NC_FUSED_OP

}  // namespace cuda
}  // namespace nc
