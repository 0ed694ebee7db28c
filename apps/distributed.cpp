#include "apps/distributed.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tensor/error.h"
#include "tensor/raw_ops.h"

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

static void sum_in_place(std::vector<float>& buffer) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), (int)buffer.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce of the gradients");
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
static void sum_in_place(std::vector<double>&) {}
static void sum_in_place(std::vector<float>&) {}
double average(const Distributed&, double x) { return x; }
bool same_on_every_rank(const Distributed&, double) { return true; }

#endif

// One bucket's gradients, packed into one buffer of T (float or double),
// summed over the ranks, divided by their number, and set back.
template <typename T>
static void reduce_bucket(const Distributed& d, const std::vector<Tensor>& params, const std::vector<size_t>& members,
                          DType dtype) {
    size_t count = 0;
    for (size_t m : members) count += (size_t)params[m].numel();
    std::vector<T> buffer(count, T(0));  // a parameter without a gradient sends zeros
    size_t offset = 0;
    for (size_t m : members) {
        const Tensor& p = params[m];
        if (p.grad().defined()) {
            Tensor g = raw::contiguous(raw::to_dtype(raw::to_device(p.grad(), kCPU), dtype));
            std::memcpy(buffer.data() + offset, g.data<T>(), sizeof(T) * (size_t)p.numel());
        }
        offset += (size_t)p.numel();
    }
    sum_in_place(buffer);
    offset = 0;
    for (size_t m : members) {
        const Tensor& p = params[m];
        Tensor mean = empty(p.shape(), dtype);
        T* out = mean.data<T>();
        for (int64_t k = 0; k < p.numel(); ++k) out[k] = buffer[offset + (size_t)k] / (T)d.world;
        offset += (size_t)p.numel();
        p.set_grad(raw::to_device(raw::to_dtype(mean, p.dtype()), p.device()));
    }
}

double average_gradients(const Distributed& d, const std::vector<Tensor>& params, size_t bucket_bytes) {
    if (!d.active()) return 0;
    auto start = std::chrono::steady_clock::now();
    // float32 models reduce in float32 (the sum of two ranks' floats is
    // exact to rounding, whatever the order); anything else in double.
    bool all_float = true;
    for (const Tensor& p : params) all_float &= p.dtype() == kFloat32;
    size_t element = all_float ? sizeof(float) : sizeof(double);
    size_t per_bucket = std::max<size_t>(1, bucket_bytes / element);
    // Buckets in reverse parameter order: the last layers' gradients are the
    // first that backward completes.
    size_t i = params.size();
    while (i > 0) {
        std::vector<size_t> members;
        size_t count = 0;
        while (i > 0 && (members.empty() || count + (size_t)params[i - 1].numel() <= per_bucket)) {
            --i;
            members.push_back(i);
            count += (size_t)params[i].numel();
        }
        if (all_float) reduce_bucket<float>(d, params, members, kFloat32);
        else reduce_bucket<double>(d, params, members, kFloat64);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace app
}  // namespace nc
