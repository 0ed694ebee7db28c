// The data-parallel gradient averager (train/distributed.h) without MPI: its
// ranks are threads of this process, joined by a fake communicator that
// sums each bucket over them as MPI_Allreduce would. Every rank must end
// with the mean of the ranks' gradients, computed here from the gradients
// themselves: a sum instead of a mean, a mean taken twice, a bucket packed at
// the wrong offset or a stale bucket all fail it. (tests/mpi_test.sh runs
// the real thing under mpirun.)
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "train/distributed.h"
#include "helpers.h"

using namespace nc;
using nc_test::check_error;

namespace {

// Ranks as threads. The k-th sum each rank starts is the same collective on
// every rank (MPI's rule: same order, same size); once all have started it,
// the first rank to wait for it adds the ranks' buffers, in rank order, and
// writes the total into each of them.
class ThreadWorld {
public:
    explicit ThreadWorld(int world) : world_(world), started_(world) {}
    int world() const { return world_; }

    void start(int rank, size_t slot, const Tensor& buffer) {
        std::lock_guard<std::mutex> lock(mutex_);
        started_[rank].push_back({slot, buffer});
        changed_.notify_all();
    }

    void wait(int rank, size_t slot) {
        std::unique_lock<std::mutex> lock(mutex_);
        // This rank's latest sum in that slot.
        size_t k = started_[rank].size();
        while (k > 0 && started_[rank][k - 1].slot != slot) --k;
        if (k == 0) throw Error("fake world: rank " + std::to_string(rank) + " waits for slot " +
                                std::to_string(slot) + ", which it never started");
        size_t call = k - 1;
        // A rank that never starts its part would hang MPI; here it fails.
        auto everyone_started = [&] {
            for (const auto& calls : started_)
                if (calls.size() <= call) return false;
            return true;
        };
        if (!changed_.wait_for(lock, std::chrono::seconds(20), everyone_started))
            throw Error("fake world: rank " + std::to_string(rank) + " waited 20 s for the other ranks' sum number " +
                        std::to_string(call));
        if (reduced_.size() <= call) reduced_.resize(call + 1, false);
        if (reduced_[call]) return;
        reduced_[call] = true;
        const Call& first = started_[0][call];
        std::vector<double> total(first.buffer.numel(), 0.0);
        for (int r = 0; r < world_; ++r) {
            const Call& c = started_[r][call];
            if (c.slot != first.slot || c.buffer.numel() != first.buffer.numel() || c.buffer.dtype() != first.buffer.dtype())
                throw Error("fake world: sum number " + std::to_string(call) + " differs between rank 0 and rank " +
                            std::to_string(r) + " (slot or size)");
            std::vector<double> values = c.buffer.to_vector();
            for (size_t i = 0; i < values.size(); ++i) total[i] += values[i];
        }
        for (int r = 0; r < world_; ++r) {
            const Tensor& buffer = started_[r][call].buffer;
            raw::copy_(buffer, raw::to_dtype(raw::from_vector(total, buffer.shape()), buffer.dtype()));
        }
    }

private:
    struct Call {
        size_t slot;
        Tensor buffer;
    };
    int world_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::vector<Call>> started_;  // per rank, in the order started
    std::vector<bool> reduced_;               // per collective
};

class FakeCommunicator : public app::Communicator {
public:
    FakeCommunicator(ThreadWorld& world, int rank) : world_(world), rank_(rank) {}
    int world() const override { return world_.world(); }
    void start_sum(size_t slot, const Tensor& buffer) override { world_.start(rank_, slot, buffer); }
    void wait(size_t slot) override { world_.wait(rank_, slot); }

private:
    ThreadWorld& world_;
    int rank_;
};

const std::vector<Shape> kShapes = {{5, 3}, {7}, {4, 4}, {2}, {3, 2}};

// Rank r's gradient of parameter j at step s: values that differ by rank,
// parameter, element and step (none of them a power of two apart).
std::vector<double> gradient_values(int rank, size_t j, int step) {
    Generator gen(1000 * (uint64_t)step + 10 * (uint64_t)j + (uint64_t)rank + 1);
    Tensor g = raw::add(raw::randn(kShapes[j], gen, kFloat64), 0.3 * (rank + 1));
    return g.to_vector();
}

// Parameter 1 gets no gradient on rank 1 (backward never reached it there):
// it counts as zeros in the mean, at every step.
bool has_gradient(int rank, size_t j) { return !(rank == 1 && j == 1); }

struct RankResult {
    std::vector<std::vector<std::vector<double>>> grads;  // [step][param] after finish()
    size_t buckets = 0;
    std::string error;
};

// One rank's two steps: set the gradients, report them in backward's order
// (last parameter first) when overlapping, finish.
RankResult run_rank(ThreadWorld& world, int rank, DType dtype, bool overlap, size_t bucket_bytes) {
    RankResult result;
    try {
        std::vector<Tensor> params;
        for (const Shape& shape : kShapes) {
            Tensor p = raw::zeros(shape, dtype);
            p.set_requires_grad(true);
            params.push_back(p);
        }
        app::GradientAverager averager(std::make_unique<FakeCommunicator>(world, rank), params, bucket_bytes);
        result.buckets = averager.bucket_count();
        for (int step = 0; step < 2; ++step) {
            for (size_t j = 0; j < params.size(); ++j) {
                params[j].zero_grad();
                if (has_gradient(rank, j))
                    params[j].set_grad(raw::to_dtype(raw::from_vector(gradient_values(rank, j, step), kShapes[j]), dtype));
            }
            if (overlap) {
                LeafReady report = averager.on_leaf_ready();
                for (size_t j = params.size(); j-- > 0;)
                    if (has_gradient(rank, j)) report(params[j]);
            }
            averager.finish();
            result.grads.emplace_back();
            for (const Tensor& p : params) result.grads.back().push_back(p.grad().to_vector());
        }
    } catch (const std::exception& e) {
        result.error = e.what();
    }
    return result;
}

}  // namespace

TEST_CASE("GradientAverager: every rank ends with the mean of the ranks' gradients", "[distributed][threads]") {
    for (int world : {2, 3})
        for (DType dtype : {kFloat32, kFloat64})
            for (bool overlap : {true, false}) {
                INFO(world << " ranks, " << dtype_name(dtype) << (overlap ? ", reported during backward" : ", after it"));
                ThreadWorld fake(world);
                // 64 bytes: a few parameters per bucket, so that offsets inside a bucket matter.
                size_t bucket_bytes = 64;
                std::vector<RankResult> results(world);
                std::vector<std::thread> threads;
                for (int r = 0; r < world; ++r)
                    threads.emplace_back([&, r] { results[r] = run_rank(fake, r, dtype, overlap, bucket_bytes); });
                for (std::thread& t : threads) t.join();
                for (int r = 0; r < world; ++r) {
                    INFO("rank " << r);
                    REQUIRE(results[r].error == "");
                    CHECK(results[r].buckets >= 3);
                }
                // The mean, from the gradients themselves, in double.
                double tol = dtype == kFloat32 ? 1e-6 : 1e-14;
                double worst = 0;
                for (int step = 0; step < 2; ++step)
                    for (size_t j = 0; j < kShapes.size(); ++j) {
                        std::vector<double> mean((size_t)shape_numel(kShapes[j]), 0.0);
                        for (int r = 0; r < world; ++r)
                            if (has_gradient(r, j)) {
                                std::vector<double> g = gradient_values(r, j, step);
                                for (size_t e = 0; e < g.size(); ++e) mean[e] += g[e] / world;
                            }
                        for (int r = 0; r < world; ++r)
                            for (size_t e = 0; e < mean.size(); ++e)
                                worst = nc_test::worst_of(worst, std::fabs(results[r].grads[step][j][e] - mean[e]) /
                                                            std::max(1.0, std::fabs(mean[e])));
                    }
                CHECK(worst <= tol);
            }
}

TEST_CASE("GradientAverager: one rank changes nothing; a gradient reported twice in a step is an error",
          "[distributed][errors]") {
    Tensor p = raw::zeros({3}, kFloat64);
    p.set_requires_grad(true);
    p.set_grad(raw::from_vector(std::vector<double>{1, -2, 3}, {3}));
    app::GradientAverager alone(nullptr, {p});
    CHECK(!alone.on_leaf_ready());
    alone.finish();
    CHECK(p.grad().to_vector() == std::vector<double>{1, -2, 3});

    ThreadWorld fake(2);
    Tensor q = raw::zeros({3}, kFloat64);
    q.set_requires_grad(true);
    app::GradientAverager averager(std::make_unique<FakeCommunicator>(fake, 0), {p, q});
    LeafReady report = averager.on_leaf_ready();
    report(q);
    check_error([&] { report(q); }, {"data parallel", "reported twice in one step"});
}
