// multi_gpu.cu — see multi_gpu.h.
#include "cuda/multi_gpu.h"

#include <cstring>

#include "cuda/cuda_common.cuh"

#ifdef NORMCORE_NCCL
#include <nccl.h>
#endif

namespace nc {
namespace cuda {

int select_device_for_rank(int local_rank) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();  // clear the error: the CPU path goes on without a GPU
        return -1;
    }
    int device = local_rank % count;
    check(cudaSetDevice(device), "cudaSetDevice (choosing this rank's GPU)");
    return device;
}

#ifdef NORMCORE_NCCL

static void check_nccl(ncclResult_t status, const char* call) {
    if (status != ncclSuccess)
        throw Error(std::string("NCCL: ") + call + " failed: " + ncclGetErrorString(status));
}

namespace {
// The group this rank belongs to, NCCL's stream, and the event that marks
// the end of the sums queued so far. One per process, made by nccl_join.
struct NcclGroup {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t packed = nullptr, summed = nullptr;
};
NcclGroup& group() {
    static NcclGroup g;
    return g;
}
}  // namespace

std::string nccl_make_id() {
    ncclUniqueId id;
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    return std::string(id.internal, sizeof(id.internal));
}

void nccl_join(const std::string& id, int rank, int world) {
    ncclUniqueId unique;
    if (id.size() != sizeof(unique.internal)) throw Error("NCCL: the group id has the wrong size");
    std::memcpy(unique.internal, id.data(), sizeof(unique.internal));
    NcclGroup& g = group();
    check_nccl(ncclCommInitRank(&g.comm, world, unique, rank), "ncclCommInitRank");
    check(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (NCCL's stream)");
    check(cudaEventCreateWithFlags(&g.packed, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&g.summed, cudaEventDisableTiming), "cudaEventCreate");
}

void nccl_sum_(const Tensor& t) {
    NcclGroup& g = group();
    if (!g.comm) throw Error("NCCL: nccl_sum_ before nccl_join");
    if (t.device().type != DeviceType::CUDA || !t.is_contiguous() || !is_floating(t.dtype()))
        throw Error("NCCL: nccl_sum_ needs a contiguous float tensor on the GPU, got " + shape_str(t.shape()) + " " +
                    dtype_name(t.dtype()) + " on " + t.device().str());
    // NCCL's stream waits for the backend's stream to have written t; the
    // backend's stream goes on with backward meanwhile.
    check(cudaEventRecord(g.packed, stream()), "cudaEventRecord");
    check(cudaStreamWaitEvent(g.stream, g.packed, 0), "cudaStreamWaitEvent");
    check_nccl(ncclAllReduce(t.raw_data(), t.raw_data(), (size_t)t.numel(),
                             t.dtype() == kFloat32 ? ncclFloat32 : ncclFloat64, ncclSum, g.comm, g.stream),
               "ncclAllReduce");
}

void nccl_wait_on_stream() {
    NcclGroup& g = group();
    if (!g.comm) return;
    check(cudaEventRecord(g.summed, g.stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream(), g.summed, 0), "cudaStreamWaitEvent");
}

void nccl_leave() {
    NcclGroup& g = group();
    if (!g.comm) return;
    check(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize (NCCL's stream)");
    ncclCommDestroy(g.comm);
    cudaEventDestroy(g.packed);
    cudaEventDestroy(g.summed);
    cudaStreamDestroy(g.stream);
    g = NcclGroup{};
}

#endif

}  // namespace cuda
}  // namespace nc
