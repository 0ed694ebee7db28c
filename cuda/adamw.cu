// adamw.cu — the AdamW update over every parameter in one launch on the
// GPU: the table of chunks copied to the device and the launch of
// adamw_kernels.cuh's kernel (which explains it).
//
// Shapes: params[i], grads[i], m[i], v[i] all of one shape per parameter.
#include <vector>

#include "cuda/adamw_kernels.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

static void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& h) {
    std::vector<ParamChunk> chunks = adamw_chunks(params, grads, m, v, weight_decay, h.lr);
    if (chunks.empty()) return;
    // The table lives in device memory from the caching allocator; the copy
    // from pageable host memory returns once the host buffer has been read.
    size_t nbytes = chunks.size() * sizeof(ParamChunk);
    void* table = allocate(nbytes);
    check(cudaMemcpyAsync(table, chunks.data(), nbytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync (adamw table)");
    int blocks = (int)std::min<size_t>(chunks.size(), 65535);
    double step_size = h.lr / h.correction1, inv_c2 = 1.0 / h.correction2;
    if (params[0].dtype() == kFloat32)
        adamw_kernel<float><<<blocks, kThreads, 0, stream()>>>((const ParamChunk*)table, (int64_t)chunks.size(), h.beta1,
                                                               h.beta2, h.eps, step_size, inv_c2);
    else
        adamw_kernel<double><<<blocks, kThreads, 0, stream()>>>((const ParamChunk*)table, (int64_t)chunks.size(), h.beta1,
                                                                h.beta2, h.eps, step_size, inv_c2);
    check_launch("adamw_kernel");
    deallocate(table);  // reused only by work queued after this kernel on the same stream
}

// The table entries of this file (cuda/cuda_backend.cu).
void add_adamw(Backend& table) {
    table.adamw = {adamw_update};
}

}  // namespace cuda
}  // namespace nc
