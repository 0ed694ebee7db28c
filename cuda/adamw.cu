// adamw.cu — the AdamW update over every parameter in one launch
// (formula and raw op in tensor/ops/adamw.cpp). The host lists the
// parameters' pointers and sizes once per step, copies that small table to
// the GPU, and each block takes chunks of the flat list of all elements.
//
// Shapes: params[i], grads[i], m[i], v[i] all of one shape per parameter.
#include <vector>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"

namespace nc {
namespace cuda {

namespace {

struct ParamChunk {
    void *p, *m, *v;
    const void* g;
    int64_t begin, end;  // element range of this chunk within the tensor
    double decay;        // 1 - lr * weight_decay
};

template <typename T>
__global__ void adamw_kernel(const ParamChunk* chunks, int64_t count, double beta1, double beta2, double eps,
                             double step_size, double inv_c2) {
    for (int64_t ci = blockIdx.x; ci < count; ci += gridDim.x) {
        ParamChunk c = chunks[ci];
        T *p = (T*)c.p, *m = (T*)c.m, *v = (T*)c.v;
        const T* g = (const T*)c.g;
        for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
            T gi = g[i];
            // (T(1) - b), as the CPU computes it: (T)(1 - b) rounds 1 - b in
            // double first, which in float32 with b = 0.999 differs by 1.3e-5
            // relative and lets v drift from the CPU's.
            T b1 = (T)beta1, b2 = (T)beta2;
            T mi = b1 * m[i] + (T(1) - b1) * gi;
            T vi = b2 * v[i] + (T(1) - b2) * gi * gi;
            m[i] = mi;
            v[i] = vi;
            p[i] = p[i] * (T)c.decay - (T)step_size * mi / (sqrt(vi * (T)inv_c2) + (T)eps);
        }
    }
}

}  // namespace

static void adamw_update(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                  const std::vector<Tensor>& v, const std::vector<double>& weight_decay, const AdamWStep& h) {
    const int64_t kChunk = 16384;
    std::vector<ParamChunk> chunks;
    for (size_t t = 0; t < params.size(); ++t)
        for (int64_t b = 0; b < params[t].numel(); b += kChunk)
            chunks.push_back({params[t].raw_data(), m[t].raw_data(), v[t].raw_data(), grads[t].raw_data(), b,
                              std::min(params[t].numel(), b + kChunk), 1.0 - h.lr * weight_decay[t]});
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
    table.adamw_update = adamw_update;
}

}  // namespace cuda
}  // namespace nc
