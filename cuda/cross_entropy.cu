// cross_entropy.cu — softmax + cross-entropy on the GPU, forward and
// backward: the launches of cross_entropy_kernels.cuh's kernels (which
// explains them).
//
// Shapes: logits, dlogits [N, V]; targets, losses, logsumexp, dlosses [N].
#include <cmath>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/cross_entropy_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, const Tensor& losses,
                   const Tensor& logsumexp) {
    int64_t N = logits.size(0), V = logits.size(1);
    if (N == 0) return;
    const int64_t* t = static_cast<const int64_t*>(targets.raw_data());
    if (logits.dtype() == kFloat32)
        cross_entropy_kernel<<<row_blocks(N), kThreads, 0, stream()>>>(ptr_or_null<float>(logits), t, ignore_index,
                                                                       ptr_or_null<float>(losses), ptr_or_null<float>(logsumexp), N, V,
                                                                       index_error_record());
    else
        cross_entropy_kernel<<<row_blocks(N), kThreads, 0, stream()>>>(ptr_or_null<double>(logits), t, ignore_index,
                                                                       ptr_or_null<double>(losses), ptr_or_null<double>(logsumexp), N, V,
                                                                       index_error_record());
    check_launch("cross_entropy_kernel");
}

void cross_entropy_backward(const Tensor& dlosses, const Tensor& logits, const Tensor& targets,
                            const Tensor& logsumexp, int64_t ignore_index, const Tensor& dlogits) {
    int64_t N = logits.size(0), V = logits.size(1);
    if (N * V == 0) return;
    const int64_t* t = static_cast<const int64_t*>(targets.raw_data());
    if (logits.dtype() == kFloat32)
        cross_entropy_backward_kernel<<<blocks_for(N * V), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dlosses), ptr_or_null<float>(logits), t, ptr_or_null<float>(logsumexp), ignore_index,
            ptr_or_null<float>(dlogits), N, V);
    else
        cross_entropy_backward_kernel<<<blocks_for(N * V), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dlosses), ptr_or_null<double>(logits), t, ptr_or_null<double>(logsumexp), ignore_index,
            ptr_or_null<double>(dlogits), N, V);
    check_launch("cross_entropy_backward_kernel");
}
}  // namespace

void add_cross_entropy(Backend& table) {
    table.cross_entropy = {cross_entropy, cross_entropy_backward};
}

}  // namespace cuda
}  // namespace nc
