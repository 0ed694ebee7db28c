// norms.cu — LayerNorm and RMSNorm on the GPU, forward and backward: the
// launches of norms_kernels.cuh's kernels (which explains them), and the
// parameter gradients as column sums (column_sums.cuh).
//
// Shapes as on the CPU: x, y, dy, dx [rows, C]; gamma, beta [C]; mean, rstd [rows].
#include <cmath>

#include "cuda/column_sums.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/norms_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

// Both norms through the same two kernels; an undefined `mean` means RMSNorm.
template <typename T>
void norm_forward_typed(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                        const Tensor& mean, const Tensor& rstd) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0) return;
    norm_forward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<T>(x), ptr_or_null<T>(gamma),
                                                                     ptr_or_null<T>(beta), eps, ptr_or_null<T>(out),
                                                                     ptr_or_null<T>(mean), ptr_or_null<T>(rstd), rows, C);
    check_launch("norm_forward_kernel");
}

template <typename T>
void norm_backward_typed(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    int64_t rows = x.size(0), C = x.size(1);
    if (rows == 0 || C == 0) return;
    norm_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
        ptr_or_null<T>(dy), ptr_or_null<T>(x), ptr_or_null<T>(gamma), ptr_or_null<T>(mean), ptr_or_null<T>(rstd),
        ptr_or_null<T>(dx), rows, C);
    check_launch("norm_backward_kernel");
    if (dgamma.defined())
        column_sums(NormGammaTerm<T>{ptr_or_null<T>(dy), ptr_or_null<T>(x), ptr_or_null<T>(mean), ptr_or_null<T>(rstd), C},
                    ptr_or_null<T>(dgamma), rows, C, "norm_param_grads (dgamma)");
    if (dbeta.defined())
        column_sums(MatrixEntry<T>{ptr_or_null<T>(dy), C}, ptr_or_null<T>(dbeta), rows, C, "norm_param_grads (dbeta)");
}

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& rstd) {
    if (x.dtype() == kFloat32) norm_forward_typed<float>(x, gamma, beta, eps, out, mean, rstd);
    else norm_forward_typed<double>(x, gamma, beta, eps, out, mean, rstd);
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    if (x.dtype() == kFloat32) norm_backward_typed<float>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    else norm_backward_typed<double>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

// RMSNorm: the same kernels with no mean (and no beta).
void rms_norm(const Tensor& x, const Tensor& gamma, double eps, const Tensor& out, const Tensor& rstd) {
    layer_norm(x, gamma, Tensor(), eps, out, Tensor(), rstd);
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dgamma) {
    layer_norm_backward(dy, x, gamma, Tensor(), rstd, dx, dgamma, Tensor());
}
}  // namespace

void add_layer_norm(Backend& table) { table.layer_norm = {layer_norm, layer_norm_backward}; }
void add_rms_norm(Backend& table) { table.rms_norm = {rms_norm, rms_norm_backward}; }

}  // namespace cuda
}  // namespace nc
