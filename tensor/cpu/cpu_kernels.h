// cpu_kernels.h — the CPU backend's kernels, one per entry of Backend
// (tensor/backend.h documents what each receives). cpu_backend.cpp puts them
// in the table.
#pragma once

#include "tensor/backend.h"

namespace nc {
namespace cpu {

void* allocate(size_t nbytes);
void deallocate(void* data);
void fill(const Tensor& out, double value);
void unary(UnaryOp op, const Tensor& in, const Tensor& out);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
void reduce_rows(ReduceOp op, const Tensor& in, const Tensor& out);
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);
void softmax_rows(const Tensor& in, const Tensor& out, bool log);
void index_select(const Tensor& in, const Tensor& index, const Tensor& out);
void index_add(const Tensor& out, const Tensor& index, const Tensor& src);
void gather(const Tensor& in, const Tensor& index, const Tensor& out);
void scatter_add(const Tensor& out, const Tensor& index, const Tensor& src);
void random(RandomKind kind, uint64_t seed, uint64_t offset, double p, const Tensor& out);

}  // namespace cpu
}  // namespace nc
