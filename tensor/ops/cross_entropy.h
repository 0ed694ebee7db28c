// cross_entropy.h — softmax + cross-entropy as a fused op: the kernels every
// backend supplies (tensor/backend.h's Backend::cross_entropy), the raw ops,
// and the differentiable loss. All defined in cross_entropy.cpp (the CUDA
// kernels: cuda/cross_entropy.cu).
//
// Per row n: loss_n = logsumexp(logits_n) - logits_n[target_n], or 0 when
// target_n == ignore_index. logits: [N, V] (any leading dims flattened).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace nc {

// logits, dlogits: contiguous [N, V]; targets: int64 [N]; losses,
// logsumexp, dlosses: [N] (rows whose target is ignore_index get loss 0 and
// gradient 0). Backward: dlogits[n] = dlosses[n] (softmax(logits[n]) - onehot(targets[n])).
struct CrossEntropyKernels {
    void (*forward)(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                    const Tensor& logsumexp);
    void (*backward)(const Tensor& dlosses, const Tensor& logits, const Tensor& targets, const Tensor& logsumexp,
                     int64_t ignore_index, const Tensor& dlogits);
};

namespace raw {

struct CrossEntropyForward {
    Tensor losses;     // [N]
    Tensor logsumexp;  // [N], saved so backward needs no second pass for the max
};
CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index);
Tensor cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                              const CrossEntropyForward& saved, int64_t ignore_index);

}  // namespace raw

// Differentiable: the mean cross-entropy of logits [..., V] against int64
// targets [...], over the rows whose target is not ignore_index (0 if every
// row is ignored).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100);

}  // namespace nc
