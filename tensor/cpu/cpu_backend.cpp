// cpu_backend.cpp — the CPU kernel table: memory from allocator.cpp, and
// every kernel file's entries (cpu_kernels.h says which file adds which).
#include <cstring>

#include "tensor/cpu/cpu_kernels.h"

namespace nc {

// Host to host: a memcpy (the CPU's copy_to_host and copy_from_host).
static void copy_bytes(const void* src, void* dst, size_t nbytes) {
    if (nbytes > 0) std::memcpy(dst, src, nbytes);
}

const Backend& cpu_backend() {
    static const Backend table = [] {
        Backend t{};
        t.name = "cpu";
        t.allocate = cpu::allocate;
        t.deallocate = cpu::deallocate;
        t.allocator_stats = cpu::allocator_stats;
        t.reset_peak_bytes = cpu::reset_peak_bytes;
        t.copy_to_host = copy_bytes;
        t.copy_from_host = copy_bytes;
        cpu::add_elementwise(t);
        cpu::add_reductions(t);
        cpu::add_indexing(t);
        cpu::add_matmul(t);
#define NC_FUSED_OP(name, Kernels) cpu::add_##name(t);  // every fused op (tensor/ops/ops.def)
#include "tensor/ops/ops.def"
#undef NC_FUSED_OP
        require_complete(t);
        return t;
    }();
    return table;
}

}  // namespace nc
