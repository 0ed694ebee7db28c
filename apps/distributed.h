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

#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nc {
namespace app {

struct Distributed {
    int rank = 0;
    int world = 1;
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

// Every rank's gradients replaced by their mean over the ranks. The
// gradients are packed into buckets of about bucket_bytes, in reverse
// parameter order (the order backward completes them: the head first), one
// MPI_Allreduce per bucket (in float32 for a float32 model, else double); a
// parameter without a gradient counts as zeros. Gradients on a GPU are
// staged through host memory. Returns the seconds spent, packing and
// waiting for the slowest rank included.
double average_gradients(const Distributed& d, const std::vector<Tensor>& params, size_t bucket_bytes = 4u << 20);
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
