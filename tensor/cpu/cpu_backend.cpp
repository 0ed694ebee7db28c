// cpu_backend.cpp — the CPU kernel table (memory comes from allocator.cpp).
#include <cstring>

#include "tensor/cpu/cpu_kernels.h"

namespace nc {

void cpu::copy_bytes(const void* src, void* dst, size_t nbytes) {
    if (nbytes > 0) std::memcpy(dst, src, nbytes);
}

const Backend& cpu_backend() {
    static const Backend table = {
        "cpu",
        cpu::allocate,
        cpu::deallocate,
        cpu::allocator_stats,
        cpu::reset_peak_bytes,
        cpu::copy_bytes,
        cpu::copy_bytes,
        cpu::fill,
        cpu::unary,
        cpu::binary,
        cpu::where,
        cpu::reduce_rows,
        cpu::sum_columns,
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
        cpu::dyt,
        cpu::dyt_backward,
        cpu::attention,
        cpu::attention_backward,
        cpu::adamw_update,
    };
    return table;
}

}  // namespace nc
