// cpu_backend.cpp — memory for CPU tensors, and the CPU kernel table.
#include <cstdlib>
#include <new>

#include "tensor/cpu/cpu_kernels.h"

namespace nc {
namespace cpu {

// 64-byte alignment: one cache line, and the width of an AVX-512 register.
void* allocate(size_t nbytes) {
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw Error("cpu allocate: out of memory allocating " + std::to_string(nbytes) + " bytes");
    return p;
}

void deallocate(void* data) { std::free(data); }

}  // namespace cpu

const Backend& cpu_backend() {
    static const Backend table = {
        "cpu",
        cpu::allocate,
        cpu::deallocate,
        cpu::fill,
        cpu::unary,
        cpu::binary,
        cpu::where,
        cpu::reduce_rows,
        cpu::matmul,
        cpu::softmax_rows,
        cpu::index_select,
        cpu::index_add,
        cpu::gather,
        cpu::scatter_add,
        cpu::random,
        cpu::layer_norm,
        cpu::layer_norm_backward,
        cpu::rms_norm,
        cpu::rms_norm_backward,
        cpu::cross_entropy,
        cpu::cross_entropy_backward,
        cpu::geodesic_update,
        cpu::geodesic_update_backward,
        cpu::attention,
        cpu::attention_backward,
    };
    return table;
}

}  // namespace nc
