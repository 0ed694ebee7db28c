// cuda_backend.cu — the CUDA backend's table, its stream and cuBLAS handle,
// error checking, host <-> device copies, and device memory.
//
// Memory: cudaMalloc is slow (it may synchronize the device), so freed blocks
// are cached by size class exactly like the CPU allocator does
// (tensor/cpu/allocator.h), and handed out again. Never managed memory.
// Because all work runs in order on one stream, a block freed by the host
// can be reused by the next kernel at once: any kernel still reading it was
// queued earlier and finishes first.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cublas_library.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "tensor/cpu/allocator.h"  // size_class

namespace nc {

namespace cuda {

void check(cudaError_t status, const char* call) {
    if (status != cudaSuccess)
        throw Error(std::string("CUDA: ") + call + " failed: " + cudaGetErrorString(status) + " (" +
                    cudaGetErrorName(status) + ")");
}

void check_cublas(cublasStatus_t status, const char* call) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw Error(std::string("cuBLAS: ") + call + " failed with status " + std::to_string((int)status));
}

// NORMCORE_CUDA_SYNC=1: wait for every kernel right after its launch, so a
// fault is reported under the name of the kernel that made it (without it,
// it surfaces at a later synchronization, under another op's name). Slow;
// for debugging (chapter 10).
bool sync_after_launch() {
    static const bool on = [] {
        const char* v = std::getenv("NORMCORE_CUDA_SYNC");
        return v && std::string(v) == "1";
    }();
    return on;
}

void check_launch(const char* kernel) {
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        throw Error(std::string("CUDA: launching ") + kernel + " failed: " + cudaGetErrorString(status));
    if (sync_after_launch()) {
        status = cudaStreamSynchronize(stream());
        if (status != cudaSuccess)
            throw Error(std::string("CUDA: kernel ") + kernel + " failed while running: " + cudaGetErrorString(status) +
                        " (NORMCORE_CUDA_SYNC=1)");
        throw_recorded_index_error();
    }
}

cudaStream_t stream() {
    static cudaStream_t s = [] {
        cudaStream_t created;
        check(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return created;
    }();
    return s;
}

cublasHandle_t cublas() {
    static cublasHandle_t handle = [] {
        const CublasLibrary& lib = cublas_library();  // opened here, at the first product
        cublasHandle_t created;
        check_cublas(lib.create(&created), "cublasCreate");
        check_cublas(lib.set_stream(created, stream()), "cublasSetStream");
        // Exact float32 products by default. NORMCORE_TF32=1 lets cuBLAS use
        // TF32 tensor cores (Ampere and later): inputs rounded to 10 mantissa
        // bits, several times faster, results no longer equal the CPU's.
        const char* tf32 = std::getenv("NORMCORE_TF32");
        bool use_tf32 = tf32 && std::string(tf32) == "1";
        check_cublas(lib.set_math_mode(created, use_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                     "cublasSetMathMode");
        return created;
    }();
    return handle;
}

// ---- memory ----------------------------------------------------------------------

namespace {
struct DeviceCache {
    std::mutex mutex;
    std::map<size_t, std::vector<void*>> free_blocks;  // size class -> blocks
    std::map<void*, size_t> live;                      // block -> its size class
    AllocatorStats stats;                              // the CPU allocator's counters, for device memory
};
DeviceCache& device_cache() {
    static DeviceCache* c = new DeviceCache;  // never destroyed (tensors may die during exit)
    return *c;
}
}  // namespace

void* allocate(size_t nbytes) {
    size_t cls = cpu::size_class(nbytes);
    DeviceCache& c = device_cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        auto it = c.free_blocks.find(cls);
        if (it != c.free_blocks.end() && !it->second.empty()) {
            void* p = it->second.back();
            it->second.pop_back();
            c.live[p] = cls;
            c.stats.reused(cls);
            c.stats.handed_out(cls);
            return p;
        }
    }
    void* p = nullptr;
    cudaError_t status = cudaMalloc(&p, cls);
    if (status == cudaErrorMemoryAllocation) {
        // Give the cached blocks back and try once more before failing.
        cudaGetLastError();
        std::lock_guard<std::mutex> lock(c.mutex);
        for (auto& [size, blocks] : c.free_blocks)
            for (void* b : blocks) cudaFree(b);
        c.free_blocks.clear();
        c.stats.bytes_cached = 0;
        status = cudaMalloc(&p, cls);
    }
    if (status != cudaSuccess)
        throw Error("cuda allocate: cudaMalloc of " + std::to_string(nbytes) + " bytes failed: " +
                    cudaGetErrorString(status));
    std::lock_guard<std::mutex> lock(c.mutex);
    c.live[p] = cls;
    c.stats.system_allocations++;
    c.stats.handed_out(cls);
    return p;
}

void deallocate(void* data) {
    if (!data) return;
    DeviceCache& c = device_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.live.find(data);
    if (it == c.live.end()) return;  // not ours (cannot happen through Storage)
    c.free_blocks[it->second].push_back(data);
    c.stats.returned(it->second);
    c.live.erase(it);
}

AllocatorStats allocator_stats() {
    std::lock_guard<std::mutex> lock(device_cache().mutex);
    return device_cache().stats;
}

void reset_peak_bytes() {
    std::lock_guard<std::mutex> lock(device_cache().mutex);
    device_cache().stats.reset_peak();
}

// ---- indices out of range (cuda_common.cuh) ---------------------------------------

namespace {
struct MappedRecord {
    IndexErrorRecord* host;    // what the host reads
    IndexErrorRecord* device;  // the same memory, as the kernels address it
};
MappedRecord& mapped_record() {
    static MappedRecord record = [] {
        MappedRecord r{};
        check(cudaHostAlloc((void**)&r.host, sizeof(IndexErrorRecord), cudaHostAllocMapped), "cudaHostAlloc (index record)");
        *r.host = IndexErrorRecord{kNoIndexError, 0, 0};
        check(cudaHostGetDevicePointer((void**)&r.device, r.host, 0), "cudaHostGetDevicePointer (index record)");
        return r;
    }();
    return record;
}

const char* index_op_name(int op) {
    switch (op) {
        case kIndexSelectOp: return "index_select";
        case kIndexAddOp: return "index_add";
        case kGatherOp: return "gather";
        case kScatterAddOp: return "scatter_add";
        case kCrossEntropyOp: return "cross_entropy";
        default: return "an indexing op";
    }
}
}  // namespace

IndexErrorRecord* index_error_record() { return mapped_record().device; }

void throw_recorded_index_error() {
    IndexErrorRecord* record = mapped_record().host;
    if (record->op == kNoIndexError) return;
    IndexErrorRecord seen = *record;
    *record = IndexErrorRecord{kNoIndexError, 0, 0};  // the next error gets reported too
    throw Error(std::string(index_op_name(seen.op)) + " (on the GPU): index " + std::to_string(seen.index) +
                " is out of range for a dim of size " + std::to_string(seen.size) +
                "; it was skipped, so results computed since that op are wrong (the GPU reports bad indices "
                "at the next copy to the host, not at the op)");
}

// ---- copies ----------------------------------------------------------------------

void copy_to_host(const void* device_src, void* host_dst, size_t nbytes) {
    if (nbytes == 0) return;
    check(cudaMemcpyAsync(host_dst, device_src, nbytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync (to host)");
    // The host reads the values next: this is where the device is waited for,
    // and so where errors the kernels recorded come out.
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    throw_recorded_index_error();
}

void copy_from_host(const void* host_src, void* device_dst, size_t nbytes) {
    if (nbytes == 0) return;
    // From pageable memory, cudaMemcpyAsync returns once the bytes are in a
    // staging buffer (CUDA's "API synchronization behavior"), so the host
    // buffer may be freed as soon as we return, and nothing needs to wait for
    // the GPU here. Index errors wait for the next copy to the host.
    check(cudaMemcpyAsync(device_dst, host_src, nbytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync (to device)");
}

}  // namespace cuda

namespace {
// One thread writes one value: if this cannot run, no kernel of this build can.
__global__ void probe_kernel(int* flag) { *flag = 42; }
}  // namespace

bool cuda_device_usable(std::string* why) {
    static std::string reason;
    static const bool usable = [] {
        int count = 0;
        cudaError_t status = cudaGetDeviceCount(&count);
        if (status != cudaSuccess) {
            // What a user needs first: there is no GPU. The driver's words follow.
            reason = std::string("no GPU was found (the CUDA runtime says: ") + cudaGetErrorString(status) + ")";
            cudaGetLastError();  // clear it
            return false;
        }
        if (count == 0) {
            reason = "no GPU was found (the CUDA runtime sees no devices)";
            return false;
        }
        // A GPU older than the fat binary's oldest architecture, or a driver
        // too old for its PTX, fails every launch with "no kernel image":
        // find out now, with one tiny kernel, and say which GPU it is.
        cudaDeviceProp prop;
        std::string gpu = cudaGetDeviceProperties(&prop, 0) == cudaSuccess
                              ? std::string(prop.name) + ", compute capability " + std::to_string(prop.major) + "." +
                                    std::to_string(prop.minor)
                              : std::string("device 0");
        int* flag = nullptr;
        int value = 0;
        cudaError_t err = cudaMalloc(&flag, sizeof(int));
        if (err == cudaSuccess) {
            probe_kernel<<<1, 1>>>(flag);
            err = cudaGetLastError();
            if (err == cudaSuccess) err = cudaDeviceSynchronize();
            if (err == cudaSuccess) err = cudaMemcpy(&value, flag, sizeof(int), cudaMemcpyDeviceToHost);
            cudaFree(flag);
        }
        if (err != cudaSuccess || value != 42) {
            reason = "the GPU (" + gpu + ") cannot run this build's kernels: " +
                     (err != cudaSuccess ? std::string(cudaGetErrorString(err)) : std::string("the probe kernel wrote nothing")) +
                     " (rebuild with CUDA_ARCHS set to this GPU's compute capability x10)";
            cudaGetLastError();
            return false;
        }
        return true;
    }();
    if (!usable && why) *why = reason;
    return usable;
}

const Backend& cuda_backend() {
    static const Backend table = [] {
        Backend t{};
        t.name = "cuda";
        t.allocate = cuda::allocate;
        t.deallocate = cuda::deallocate;
        t.allocator_stats = cuda::allocator_stats;
        t.reset_peak_bytes = cuda::reset_peak_bytes;
        t.copy_to_host = cuda::copy_to_host;
        t.copy_from_host = cuda::copy_from_host;
        cuda::add_elementwise(t);
        cuda::add_reductions(t);
        cuda::add_indexing(t);
        cuda::add_matmul(t);
#define NC_FUSED_OP(name, Kernels) cuda::add_##name(t);  // every fused op (tensor/ops/ops.def)
#include "tensor/ops/ops.def"
#undef NC_FUSED_OP
        require_complete(t);
        return t;
    }();
    return table;
}

}  // namespace nc
