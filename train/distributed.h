// distributed.h — data-parallel training over MPI (chapter 14).
//
// `mpirun -np N normcore train ...` starts N copies of the program (ranks).
// Each draws the same global batch of N x B examples from one seeded stream,
// trains on its own B of them (rank r: rows r*B .. r*B+B-1), and before
// every optimizer step the ranks average their gradients with MPI_Allreduce.
// Since every rank's loss is a mean over B examples, the mean of the N
// gradients is the gradient of the mean over all N x B: the step is the one
// a single process with batch N x B would take, and every rank applies it to
// identical weights, so they stay identical. Rank 0 alone writes files and
// prints.
//
// Built with Open MPI when the build finds `mpicxx` (make setup installs it);
// without it, a program started by mpirun with more than one rank refuses
// to run rather than train N unrelated copies.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/engine.h"
#include "tensor/tensor.h"

namespace nc {
namespace app {

struct Distributed {
    int rank = 0;
    int world = 1;
    int local_rank = 0;  // among the ranks on this machine (picks the GPU)
    bool root() const { return rank == 0; }
    bool active() const { return world > 1; }
};

// Joins the ranks when the program was started by mpirun (Open MPI's
// OMPI_COMM_WORLD_SIZE or a PMI launcher's PMI_SIZE is set); a plain start
// is rank 0 of 1 and calls no MPI at all.
Distributed start_distributed(int& argc, char**& argv);
void finish_distributed(const Distributed& d);
// Whether this build can run with more than one rank.
bool built_with_mpi();
// Makes this rank use GPU local_rank % (the machine's GPUs), before the
// first CUDA call (train --device cuda under mpirun). Returns the GPU's
// number, or -1 when there is none or no CUDA backend.
int choose_gpu(const Distributed& d);
// How the gradients travel: "NCCL, GPU to GPU", or "MPI through host memory".
std::string gradient_transport(const std::vector<Tensor>& params);

// The one collective the gradient averager needs: a buffer summed over the
// ranks, in place, started now and waited for later, so that backward can go
// on while the sum travels. MPI (MPI_Iallreduce on host memory) and NCCL (a
// sum between GPUs, on NCCL's stream) implement it in distributed.cpp; the
// tests give the averager a fake one whose ranks are threads of one process
// (tests/test_distributed.cpp). Every rank starts its sums in the same order
// and with the same sizes, as MPI requires of collectives.
class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int world() const = 0;
    // Where the buffers must live: host memory for MPI, the GPU for NCCL.
    virtual Device buffer_device() const { return kCPU; }
    // Starts replacing `buffer` (contiguous, float32 or float64) by its sum
    // over the ranks. `slot` names the sum for wait(); a slot is reused only
    // after its wait.
    virtual void start_sum(size_t slot, const Tensor& buffer) = 0;
    // Lets the sums in flight move on (Open MPI advances a non-blocking
    // collective only inside MPI calls).
    virtual void progress() {}
    // Returns once sum `slot` is complete in its buffer, for whatever reads
    // the buffer next (on a GPU: the work queued on the backend's stream).
    virtual void wait(size_t slot) = 0;
};

// The communicator for this run's ranks and parameters: NCCL when the build
// has it and every parameter is on the GPU, else MPI; none for one rank.
std::unique_ptr<Communicator> make_communicator(const Distributed& d, const std::vector<Tensor>& params);

// Every rank's gradients replaced by their mean over the ranks, started
// while backward is still running:
//
//     GradientAverager averager(dist, params);      // once: fixes the buckets
//     backward(loss, Tensor(), false, averager.on_leaf_ready());
//     averager.finish();                            // waits, stores the means
//
// The parameters are packed into buckets of about bucket_bytes, in reverse
// parameter order (the order backward completes them: the head first). When
// backward reports the last gradient of a bucket, its sum over the ranks
// starts at once and runs while backward works on the layers below; buckets
// start in the same fixed order on every rank, as MPI requires of collectives
// (a tied weight, complete last, holds its bucket and those behind it back).
// finish() divides each sum by the number of ranks: every rank's loss is a
// mean over its own rows, so the mean of the ranks' gradients is the
// gradient of the mean over all of them.
// Sums are in float32 for a float32 model, else double; a parameter that
// received no gradient counts as zeros. Gradients on a GPU are summed by
// NCCL between the GPUs when the build has it (cuda/multi_gpu.h), else
// staged through host memory. With gradient accumulation, pass on_leaf_ready() to
// the last micro-batch's backward only (the gradients are then totals).
// Without on_leaf_ready(), finish() does it all after backward: the
// baseline that the overlap is measured against (train --no-overlap).
class GradientAverager {
public:
    GradientAverager(const Distributed& d, std::vector<Tensor> params, size_t bucket_bytes = 4u << 20);
    // With a communicator of your own (null: one rank, nothing to do).
    GradientAverager(std::unique_ptr<Communicator> communicator, std::vector<Tensor> params,
                     size_t bucket_bytes = 4u << 20);
    ~GradientAverager();
    GradientAverager(const GradientAverager&) = delete;
    GradientAverager& operator=(const GradientAverager&) = delete;

    // The callback for backward(); empty when there is one rank.
    LeafReady on_leaf_ready();
    // Starts the buckets still waiting, waits for all of them and replaces
    // every gradient by the mean. Ready for the next step afterwards.
    void finish();

    size_t bucket_count() const;
    // Seconds spent since construction: packing during backward, and inside
    // finish() (the communication backward did not hide).
    double packing_seconds() const { return packing_seconds_; }
    double finish_seconds() const { return finish_seconds_; }

private:
    struct Bucket;
    bool active() const { return comm_ && comm_->world() > 1; }
    void ready(size_t param);
    void pack(size_t param);
    void start_ready_buckets();

    std::unique_ptr<Communicator> comm_;
    std::vector<Tensor> params_;
    bool float32_ = true;                         // reduce in float32 (else double)
    std::vector<Bucket> buckets_;                 // in the order they start
    std::vector<size_t> bucket_of_, offset_of_;   // per parameter
    std::unordered_map<const void*, size_t> index_of_;  // parameter impl -> index
    size_t next_to_start_ = 0;
    double packing_seconds_ = 0, finish_seconds_ = 0;
};

// The mean of x over the ranks (the logged training loss).
double average(const Distributed& d, double x);
// Whether every rank holds the same value (e.g. a checksum of its weights).
bool same_on_every_rank(const Distributed& d, double x);
// Ends every rank: prints the message (rank-tagged) and calls MPI_Abort, so
// no rank waits forever in a collective for one that failed.
[[noreturn]] void abort_all_ranks(const std::string& message);
// Whether MPI is up with more than one rank (main's error handler asks).
bool running_distributed();

}  // namespace app
}  // namespace nc
