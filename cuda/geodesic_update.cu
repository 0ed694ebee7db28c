// geodesic_update.cu — GeoNorm's update on the sphere, on the GPU, forward
// and backward: the launches of geodesic_update_kernels.cuh's kernels (which
// explains them).
//
// Shapes: x, u, y, dy, dx, du [rows, d]; alpha [1]; dalpha_rows [rows].
#include <cmath>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/geodesic_update_kernels.cuh"

namespace nc {
namespace cuda {

namespace {

void geodesic_update(const Tensor& x, const Tensor& u, const Tensor& alpha, const Tensor& out) {
    int64_t rows = x.size(0), d = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        geodesic_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<float>(x), ptr_or_null<float>(u),
                                                                     ptr_or_null<float>(alpha), ptr_or_null<float>(out), rows, d);
    else
        geodesic_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(ptr_or_null<double>(x), ptr_or_null<double>(u),
                                                                     ptr_or_null<double>(alpha), ptr_or_null<double>(out), rows, d);
    check_launch("geodesic_kernel");
}

void geodesic_update_backward(const Tensor& dy, const Tensor& x, const Tensor& u, const Tensor& alpha,
                              const Tensor& dx, const Tensor& du, const Tensor& dalpha_rows) {
    int64_t rows = x.size(0), d = x.size(1);
    if (rows == 0) return;
    if (x.dtype() == kFloat32)
        geodesic_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<float>(dy), ptr_or_null<float>(x), ptr_or_null<float>(u), ptr_or_null<float>(alpha),
            ptr_or_null<float>(dx), ptr_or_null<float>(du), ptr_or_null<float>(dalpha_rows), rows, d);
    else
        geodesic_backward_kernel<<<row_blocks(rows), kThreads, 0, stream()>>>(
            ptr_or_null<double>(dy), ptr_or_null<double>(x), ptr_or_null<double>(u), ptr_or_null<double>(alpha),
            ptr_or_null<double>(dx), ptr_or_null<double>(du), ptr_or_null<double>(dalpha_rows), rows, d);
    check_launch("geodesic_backward_kernel");
}
}  // namespace

void add_geodesic_update(Backend& table) {
    table.geodesic_update = {geodesic_update, geodesic_update_backward};
}

}  // namespace cuda
}  // namespace nc
