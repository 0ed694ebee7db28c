// multi_gpu.h — what data-parallel training needs from the GPUs (chapter 14):
// each rank picks its own GPU, and, when the build has NCCL, the ranks sum
// gradient buckets directly between GPUs instead of through host memory.
//
// NCCL (NVIDIA's collective library) moves the bytes over NVLink or PCIe
// and the network without staging them in host memory, and runs the sum as
// kernels on a stream of its own, so it overlaps the rest of backward. The
// ranks find each other with an id that rank 0 makes and MPI broadcasts.
// Built when make finds nccl.h in the CUDA toolkit (NCCL=1 insists); Debian
// has no NCCL package, so this path compiles in CI but has not run here.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace nc {
namespace cuda {

// Makes GPU number local_rank % (the GPUs this machine has) the one this
// process uses; call before any other CUDA call. Returns its number, or -1
// when the build has no CUDA backend or the machine no GPU.
int select_device_for_rank(int local_rank);

// The functions below exist only in a build with NCCL (NORMCORE_NCCL);
// train/distributed.cpp calls them only there.
//
// The id rank 0 makes for the group (NCCL's 128 opaque bytes).
std::string nccl_make_id();
// Joins this rank to the group named by id (every rank calls it, once).
void nccl_join(const std::string& id, int rank, int world);
// Queues the sum of t over the ranks, in place: t is contiguous, float32 or
// float64, on the GPU. The sum starts once the work queued on the backend's
// stream so far (the gradients' packing) is done, on NCCL's own stream.
void nccl_sum_(const Tensor& t);
// Makes the backend's stream wait for every sum queued so far (no host wait).
void nccl_wait_on_stream();
// Leaves the group (at the end of the run).
void nccl_leave();

}  // namespace cuda
}  // namespace nc
