// adamw_kernels.cuh — the AdamW update over every parameter in one
// launch (cuda/adamw.cu launches it; formula and raw op in
// tensor/ops/adamw.cpp). The host lists the parameters' pointers and sizes
// once per step (adamw_chunks), the table goes to the GPU, and each block
// takes chunks of the flat list of all elements. In a header of its own so
// that the CPU emulator (tests/cuda_emulator) runs this very kernel in CI.
//
// Shapes: params[i], grads[i], m[i], v[i] all of one shape per parameter.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tensor/backend.h"

namespace nc {
namespace cuda {

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

// The chunks of one step: every parameter cut into runs of 16,384 elements.
inline std::vector<ParamChunk> adamw_chunks(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                            const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                                            const std::vector<double>& weight_decay, double lr) {
    const int64_t kChunk = 16384;
    std::vector<ParamChunk> chunks;
    for (size_t t = 0; t < params.size(); ++t)
        for (int64_t b = 0; b < params[t].numel(); b += kChunk)
            chunks.push_back({params[t].raw_data(), m[t].raw_data(), v[t].raw_data(), grads[t].raw_data(), b,
                              std::min(params[t].numel(), b + kChunk), 1.0 - lr * weight_decay[t]});
    return chunks;
}

}  // namespace cuda
}  // namespace nc
