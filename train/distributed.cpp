#include "train/distributed.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tensor/error.h"
#include "tensor/raw_ops.h"

#ifdef NORMCORE_CUDA
#include "cuda/multi_gpu.h"
#endif

#ifdef NORMCORE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (the C++ bindings are deprecated, and warn)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace nc {
namespace app {

// The world size the launcher announced, or 0 when no launcher started us.
static int launcher_world_size() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* v = std::getenv(name)) return std::atoi(v);
    return 0;
}

bool built_with_mpi() {
#ifdef NORMCORE_MPI
    return true;
#else
    return false;
#endif
}

int choose_gpu(const Distributed& d) {
#ifdef NORMCORE_CUDA
    return cuda::select_device_for_rank(d.local_rank);
#else
    (void)d;
    return -1;
#endif
}

// Whether the buckets live on the GPU and NCCL sums them: a build with NCCL,
// and every parameter on the GPU.
static bool use_nccl(const std::vector<Tensor>& params) {
#ifdef NORMCORE_NCCL
    if (params.empty()) return false;
    for (const Tensor& p : params)
        if (p.device().type != DeviceType::CUDA) return false;
    return true;
#else
    (void)params;
    return false;
#endif
}

std::string gradient_transport(const std::vector<Tensor>& params) {
    if (use_nccl(params)) return "NCCL, GPU to GPU";
    bool on_gpu = !params.empty() && params[0].device().type == DeviceType::CUDA;
    return on_gpu ? "MPI through host memory (this build has no NCCL)" : "MPI";
}

#ifdef NORMCORE_MPI

Distributed start_distributed(int& argc, char**& argv) {
    Distributed d;
    if (launcher_world_size() == 0) return d;
    MPI_Init(&argc, &argv);
    // Errors come back as return codes (checked below), not as aborts deep
    // inside MPI, so a failing rank can say what failed.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d.world);
    // The ranks that share this machine (its memory), numbered from 0.
    MPI_Comm here;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d.rank, MPI_INFO_NULL, &here);
    MPI_Comm_rank(here, &d.local_rank);
    MPI_Comm_free(&here);
    return d;
}

void finish_distributed(const Distributed& d) {
    int up = 0;
    MPI_Initialized(&up);
    if (up) MPI_Finalize();
}

bool running_distributed() {
    int up = 0, down = 0, world = 1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (!up || down) return false;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    return world > 1;
}

[[noreturn]] void abort_all_ranks(const std::string& message) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "normcore: rank %d: %s; stopping every rank\n", rank, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);  // MPI_Abort does not return
}

static void check_mpi(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    abort_all_ranks(std::string(what) + " failed: " + std::string(text, length));
}

static void sum_in_place(std::vector<double>& buffer) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), (int)buffer.size(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
}

double average(const Distributed& d, double x) {
    if (!d.active()) return x;
    std::vector<double> v{x};
    sum_in_place(v);
    return v[0] / d.world;
}

bool same_on_every_rank(const Distributed& d, double x) {
    if (!d.active()) return true;
    double low = x, high = x;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce (min)");
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce (max)");
    return low == high;
}

// MPI_Iallreduce on host memory: one request per slot.
class MpiCommunicator : public Communicator {
public:
    explicit MpiCommunicator(int world) : world_(world) {}
    int world() const override { return world_; }
    void start_sum(size_t slot, const Tensor& buffer) override {
        if (slot >= requests_.size()) requests_.resize(slot + 1, MPI_REQUEST_NULL);
        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer.raw_data(), (int)buffer.numel(),
                                 buffer.dtype() == kFloat32 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                 &requests_[slot]),
                  "MPI_Iallreduce of the gradients");
    }
    void progress() override {
        for (MPI_Request& request : requests_) {
            int done = 0;
            if (request != MPI_REQUEST_NULL)
                check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test of a gradient bucket");
        }
    }
    void wait(size_t slot) override {
        check_mpi(MPI_Wait(&requests_.at(slot), MPI_STATUS_IGNORE), "MPI_Wait for a gradient bucket");
    }

private:
    int world_;
    std::vector<MPI_Request> requests_;
};

#ifdef NORMCORE_NCCL
// NCCL's sum between the GPUs: queued on NCCL's stream, and the backend's
// stream made to wait for it (no host wait).
class NcclCommunicator : public Communicator {
public:
    NcclCommunicator(const Distributed& d, Device device) : world_(d.world), device_(device) {
        // Rank 0 makes the group's id, MPI hands it to the others.
        std::string id = d.root() ? cuda::nccl_make_id() : std::string();
        id.resize(128);
        check_mpi(MPI_Bcast(&id[0], (int)id.size(), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast of NCCL's id");
        cuda::nccl_join(id, d.rank, d.world);
    }
    ~NcclCommunicator() override { cuda::nccl_leave(); }
    int world() const override { return world_; }
    Device buffer_device() const override { return device_; }
    void start_sum(size_t, const Tensor& buffer) override {
        cuda::nccl_sum_(buffer);
        stream_waits_ = false;
    }
    void wait(size_t) override {
        // One stream wait covers every sum queued so far.
        if (!stream_waits_) cuda::nccl_wait_on_stream();
        stream_waits_ = true;
    }

private:
    int world_;
    Device device_;
    bool stream_waits_ = true;
};
#endif

std::unique_ptr<Communicator> make_communicator(const Distributed& d, const std::vector<Tensor>& params) {
    if (!d.active()) return nullptr;
#ifdef NORMCORE_NCCL
    if (use_nccl(params)) return std::make_unique<NcclCommunicator>(d, params[0].device());
#endif
    return std::make_unique<MpiCommunicator>(d.world);
}

#else  // no MPI in this build: one rank

Distributed start_distributed(int&, char**&) {
    if (launcher_world_size() > 1)
        throw Error("this normcore was built without MPI, so it cannot run as " + std::to_string(launcher_world_size()) +
                    " ranks (make setup installs Open MPI; then rebuild)");
    return Distributed{};
}
void finish_distributed(const Distributed&) {}
bool running_distributed() { return false; }
[[noreturn]] void abort_all_ranks(const std::string& message) {
    std::fprintf(stderr, "normcore: error: %s\n", message.c_str());
    std::exit(1);
}
double average(const Distributed&, double x) { return x; }
bool same_on_every_rank(const Distributed&, double) { return true; }
std::unique_ptr<Communicator> make_communicator(const Distributed&, const std::vector<Tensor>&) { return nullptr; }

#endif

// ---- the gradient averager ----

struct GradientAverager::Bucket {
    std::vector<size_t> members;  // parameter indices
    size_t count = 0;             // elements
    size_t ready = 0;             // members packed in this step
    std::vector<char> packed;     // per member
    Tensor sum;                   // [count] in float32 or float64, where the communicator sums
    bool started = false;
};

GradientAverager::GradientAverager(const Distributed& d, std::vector<Tensor> params, size_t bucket_bytes)
    : GradientAverager(make_communicator(d, params), std::move(params), bucket_bytes) {}

GradientAverager::GradientAverager(std::unique_ptr<Communicator> communicator, std::vector<Tensor> params,
                                   size_t bucket_bytes)
    : comm_(std::move(communicator)), params_(std::move(params)) {
    if (!active()) return;
    // float32 models reduce in float32 (the sum of two ranks' floats is
    // exact to rounding, whatever the order); anything else in double.
    for (const Tensor& p : params_) float32_ &= p.dtype() == kFloat32;
    size_t per_bucket = std::max<size_t>(1, bucket_bytes / (float32_ ? sizeof(float) : sizeof(double)));
    bucket_of_.assign(params_.size(), 0);
    offset_of_.assign(params_.size(), 0);
    // Reverse parameter order: the last layers' gradients are the first
    // that backward completes.
    size_t i = params_.size();
    while (i > 0) {
        Bucket bucket;
        while (i > 0 && (bucket.members.empty() || bucket.count + (size_t)params_[i - 1].numel() <= per_bucket)) {
            --i;
            bucket_of_[i] = buckets_.size();
            offset_of_[i] = bucket.count;
            bucket.members.push_back(i);
            bucket.count += (size_t)params_[i].numel();
        }
        bucket.packed.assign(bucket.members.size(), 0);
        bucket.sum = raw::zeros({(int64_t)bucket.count}, float32_ ? kFloat32 : kFloat64, comm_->buffer_device());
        buckets_.push_back(std::move(bucket));
    }
    for (size_t k = 0; k < params_.size(); ++k) index_of_[params_[k].impl()] = k;
}

GradientAverager::~GradientAverager() = default;

size_t GradientAverager::bucket_count() const { return buckets_.size(); }

LeafReady GradientAverager::on_leaf_ready() {
    if (!active()) return nullptr;
    return [this](const Tensor& leaf) {
        auto it = index_of_.find(leaf.impl());
        if (it != index_of_.end()) ready(it->second);  // a leaf that is no parameter is none of ours
    };
}

// Parameter k's gradient is final: copy it into its bucket, and start every
// bucket, in order, that is now complete.
void GradientAverager::ready(size_t k) {
    auto start_time = std::chrono::steady_clock::now();
    pack(k);
    start_ready_buckets();
    packing_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
}

// Copies parameter k's gradient (or zeros, when it has none) into its bucket.
void GradientAverager::pack(size_t k) {
    Bucket& bucket = buckets_[bucket_of_[k]];
    size_t member = 0;
    while (bucket.members[member] != k) ++member;
    if (bucket.packed[member] || bucket.started)
        throw Error("data parallel: the gradient of parameter " + std::to_string(k) + " was reported twice in one "
                    "step (pass on_leaf_ready() to one backward per step, the last micro-batch's)");
    const Tensor& p = params_[k];
    // copy_ moves a GPU gradient to a host bucket; with NCCL both are on
    // the GPU and the copy is queued on the backend's stream like any op.
    Tensor slot = raw::narrow(bucket.sum, 0, (int64_t)offset_of_[k], p.numel());
    if (p.grad().defined()) raw::copy_(slot, raw::to_dtype(raw::reshape(p.grad(), {p.numel()}), slot.dtype()));
    else raw::fill_(slot, 0);
    bucket.packed[member] = 1;
    ++bucket.ready;
}

void GradientAverager::start_ready_buckets() {
    while (next_to_start_ < buckets_.size() &&
           buckets_[next_to_start_].ready == buckets_[next_to_start_].members.size()) {
        buckets_[next_to_start_].started = true;
        comm_->start_sum(next_to_start_, buckets_[next_to_start_].sum);
        ++next_to_start_;
    }
    comm_->progress();
}

void GradientAverager::finish() {
    if (!active()) return;
    auto start_time = std::chrono::steady_clock::now();
    // What backward did not report (no gradient reached it, or no callback
    // was passed) is packed now: its gradient, or zeros.
    for (Bucket& bucket : buckets_)
        for (size_t m = 0; m < bucket.members.size(); ++m)
            if (!bucket.packed[m]) pack(bucket.members[m]);
    start_ready_buckets();
    for (size_t b = 0; b < buckets_.size(); ++b) {
        Bucket& bucket = buckets_[b];
        comm_->wait(b);
        // The sum over the ranks, divided by their number: the mean.
        Tensor ranks = raw::scalar((double)comm_->world(), bucket.sum.dtype(), bucket.sum.device());
        for (size_t k : bucket.members) {
            const Tensor& p = params_[k];
            Tensor sum = raw::narrow(bucket.sum, 0, (int64_t)offset_of_[k], p.numel());
            Tensor mean = raw::reshape(raw::div(sum, ranks), p.shape());
            p.set_grad(raw::to_device(raw::to_dtype(mean, p.dtype()), p.device()));
        }
        bucket.ready = 0;
        bucket.started = false;
        std::fill(bucket.packed.begin(), bucket.packed.end(), 0);
    }
    next_to_start_ = 0;
    finish_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
}

}  // namespace app
}  // namespace nc
