// cpu_kernels.h — the CPU backend's kernels, one per entry of Backend
// (tensor/backend.h documents what each receives). cpu_backend.cpp puts them
// in the table.
#pragma once

#include "tensor/backend.h"
#include "tensor/cpu/allocator.h"  // allocate, deallocate

namespace nc {
namespace cpu {

// Host to host: a memcpy (the CPU's copy_to_host and copy_from_host).
void copy_bytes(const void* src, void* dst, size_t nbytes);
void fill(const Tensor& out, double value);
void unary(UnaryOp op, const Tensor& in, const Tensor& out);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
void reduce_rows(ReduceOp op, const Tensor& in, const Tensor& out);
void sum_columns(const Tensor& in, const Tensor& out);
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate);
void softmax_rows(const Tensor& in, const Tensor& out, bool log);
void index_select(const Tensor& in, const Tensor& index, const Tensor& out);
void index_add(const Tensor& out, const Tensor& index, const Tensor& src);
void gather(const Tensor& in, const Tensor& index, const Tensor& out);
void scatter_add(const Tensor& out, const Tensor& index, const Tensor& src);
void random(RandomKind kind, uint64_t seed, uint64_t offset, double p, const Tensor& out);
void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& rstd);
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta);
void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd);
void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma);
void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                   const Tensor& logsumexp);
void cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                            const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits);
void attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, const Tensor& out,
               const Tensor& logsumexp);
void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& logsumexp, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv);
void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& step);

void geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out);
void geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha,
                              const Tensor& dx, const Tensor& du, const Tensor& dalpha_rows);
void dyt(const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& bias, const Tensor& out);
void dyt_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& weight, const Tensor& dx,
                  const Tensor& dy_t, const Tensor& dalpha_rows);

// Not in the table: the T x S-materializing attention (attention_reference.cpp)
// that tests compare the tiled kernel against. probs: [N, T, S].
void attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                         const Tensor& out, const Tensor& probs);
void attention_reference_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& probs, double scale, const Tensor& dq, const Tensor& dk,
                                  const Tensor& dv);

}  // namespace cpu
}  // namespace nc
