// emulator.cpp — the scheduler behind cuda_runtime.h: each CUDA thread of a
// block is a fiber with its own stack; one OS thread runs them in turn,
// switching only where a CUDA thread would wait (a barrier, a shuffle).
#include "cuda_runtime.h"

#include <ucontext.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace cuda_emulator {

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace {

constexpr int kWarpSize = 32;
// Kernels keep a few hundred bytes per thread; the sanitizers' red zones
// and glibc's math functions need more. Untouched pages cost nothing.
constexpr size_t kStackBytes = 256 * 1024;

enum class State { Runnable, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
    ucontext_t context;
    char* stack = nullptr;  // kStackBytes
    uint3 index;
    int warp = 0, lane = 0;
    State state = State::Runnable;
    long shuffles = 0;  // how many this thread has made
};

struct Block {
    const std::function<void()>* body = nullptr;
    std::vector<Fiber> fibers;
    ucontext_t scheduler;
    int current = -1;
    std::vector<uint64_t> slots;  // 2 x kWarpSize per warp: what each lane offers a shuffle
    std::vector<unsigned char> shared;  // the dynamic shared memory
    std::string error;            // the first misuse a thread made (reported after the launch)
};

Block* running = nullptr;

#if defined(__SANITIZE_ADDRESS__)
// The scheduler's stack, as AddressSanitizer needs to be told at each
// switch (it follows the stacks only if every switch is announced). Even
// so it prints, once, "ASan doesn't fully support makecontext/swapcontext
// functions and may produce false positives": with the switches announced
// it has reported none here.
const void* scheduler_stack = nullptr;
size_t scheduler_stack_size = 0;
#endif

// Scheduler -> thread t, until that thread waits or ends.
void resume(Block& b, int t) {
    b.current = t;
    threadIdx = b.fibers[t].index;
#if defined(__SANITIZE_ADDRESS__)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, b.fibers[t].stack, kStackBytes);
    swapcontext(&b.scheduler, &b.fibers[t].context);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
    swapcontext(&b.scheduler, &b.fibers[t].context);
#endif
}

// Thread -> scheduler (for good when the thread has ended).
void yield_to_scheduler(bool ended) {
    Fiber& f = running->fibers[running->current];
#if defined(__SANITIZE_ADDRESS__)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(ended ? nullptr : &fake_stack, scheduler_stack, scheduler_stack_size);
    swapcontext(&f.context, &running->scheduler);
    __sanitizer_finish_switch_fiber(fake_stack, &scheduler_stack, &scheduler_stack_size);
#else
    (void)ended;
    swapcontext(&f.context, &running->scheduler);
#endif
}

Fiber& me() { return running->fibers[running->current]; }

// Back to the scheduler, which resumes this thread when its barrier passes.
void wait_at(State barrier) {
    me().state = barrier;
    yield_to_scheduler(false);
}

void fiber_main() {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &scheduler_stack, &scheduler_stack_size);
#endif
    (*running->body)();
    me().state = State::Done;
    yield_to_scheduler(true);
}

void note_error(const std::string& what) {
    if (running->error.empty()) running->error = what;
}

// Releases a barrier every live thread waits at: the block's, or one warp's.
// Returns false if none can pass.
bool release_barriers(Block& b, int warps) {
    bool any_live = false, all_at_block = true;
    for (const Fiber& f : b.fibers)
        if (f.state != State::Done) {
            any_live = true;
            all_at_block = all_at_block && f.state == State::AtBlockBarrier;
        }
    if (!any_live) return false;
    if (all_at_block) {
        for (Fiber& f : b.fibers)
            if (f.state == State::AtBlockBarrier) f.state = State::Runnable;
        return true;
    }
    bool released = false;
    for (int w = 0; w < warps; ++w) {
        bool live = false, all_at_warp = true;
        for (const Fiber& f : b.fibers)
            if (f.warp == w && f.state != State::Done) {
                live = true;
                all_at_warp = all_at_warp && f.state == State::AtWarpBarrier;
            }
        if (live && all_at_warp) {
            for (Fiber& f : b.fibers)
                if (f.warp == w) f.state = f.state == State::AtWarpBarrier ? State::Runnable : f.state;
            released = true;
        }
    }
    return released;
}

std::string describe_deadlock(const Block& b) {
    int at_block = 0, at_warp = 0;
    for (const Fiber& f : b.fibers) {
        at_block += f.state == State::AtBlockBarrier;
        at_warp += f.state == State::AtWarpBarrier;
    }
    return "emulated kernel deadlocked in block (" + std::to_string(blockIdx.x) + ", " + std::to_string(blockIdx.y) +
           "): " + std::to_string(at_block) + " threads wait at __syncthreads and " + std::to_string(at_warp) +
           " at a warp shuffle, and neither can pass (a barrier inside a branch not every thread takes?)";
}

void run_block(Block& b, unsigned threads, Schedule schedule) {
    int warps = (int)((threads + kWarpSize - 1) / kWarpSize);
    for (unsigned t = 0; t < threads; ++t) {
        Fiber& f = b.fibers[t];
        f.index = {t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
        f.warp = (int)(t / kWarpSize);
        f.lane = (int)(t % kWarpSize);
        f.state = State::Runnable;
        f.shuffles = 0;
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack;
        f.context.uc_stack.ss_size = kStackBytes;
        f.context.uc_link = nullptr;
        makecontext(&f.context, fiber_main, 0);
    }
    while (true) {
        for (unsigned k = 0; k < threads; ++k) {
            int t = schedule == Schedule::FirstThreadFirst ? (int)k : (int)(threads - 1 - k);
            if (b.fibers[t].state == State::Runnable) resume(b, t);
        }
        bool all_done = true;
        for (const Fiber& f : b.fibers) all_done = all_done && f.state == State::Done;
        if (all_done) return;
        if (!release_barriers(b, warps)) throw std::runtime_error(describe_deadlock(b));
    }
}

}  // namespace

void syncthreads() { wait_at(State::AtBlockBarrier); }

void* dynamic_shared_bytes() {
    if (running->shared.empty()) note_error("emulated kernel: dynamic shared memory used, but the launch gave none");
    return running->shared.data();
}

int lane_id() { return me().lane; }

// Two banks of slots per warp, used by alternate shuffles, so that one
// barrier per shuffle is enough: a lane that has read and goes on to the
// next shuffle writes the other bank, and cannot come back to this one
// before every lane has passed the next barrier, that is, has read here.
uint64_t exchange_in_warp(unsigned mask, uint64_t value, int source) {
    if (mask != 0xffffffffu) note_error("emulated kernel: a shuffle with a partial mask (the emulator knows only full warps)");
    Fiber& f = me();
    uint64_t* slots = &running->slots[((size_t)f.warp * 2 + f.shuffles % 2) * kWarpSize];
    ++f.shuffles;
    slots[f.lane] = value;
    wait_at(State::AtWarpBarrier);  // every lane has offered its value
    size_t source_thread = (size_t)f.warp * kWarpSize + (size_t)source;
    if (source < 0 || source >= kWarpSize || source_thread >= running->fibers.size() ||
        running->fibers[source_thread].state == State::Done) {
        note_error("emulated kernel: a shuffle read lane " + std::to_string(source) +
                   ", which does not exist or has returned");
        return value;
    }
    return slots[source];
}

void run_grid(dim3 grid, dim3 block, size_t shared_bytes, Schedule schedule, const std::function<void()>& body) {
    if (running) throw std::logic_error("emulated kernel: a launch inside a launch");
    unsigned threads = block.x * block.y * block.z;
    if (threads == 0 || threads > 1024)
        throw std::runtime_error("emulated launch: " + std::to_string(threads) +
                                 " threads per block; CUDA allows 1 to 1024");
    Block b;
    b.body = &body;
    b.fibers.resize(threads);
    // The stacks are kept from launch to launch: fresh ones (128 MiB for
    // 512 threads) for every launch cost more time than the kernels take.
    static std::vector<std::unique_ptr<char[]>> stacks;
    while (stacks.size() < threads) stacks.emplace_back(new char[kStackBytes]);
    for (unsigned t = 0; t < threads; ++t) b.fibers[t].stack = stacks[t].get();
    b.slots.assign((size_t)(threads + kWarpSize - 1) / kWarpSize * 2 * kWarpSize, 0);
    gridDim = grid;
    blockDim = block;
    running = &b;
    try {
        for (unsigned z = 0; z < grid.z; ++z)
            for (unsigned y = 0; y < grid.y; ++y)
                for (unsigned x = 0; x < grid.x; ++x) {
                    blockIdx = {x, y, z};
                    b.shared.assign(shared_bytes, 0xff);
                    run_block(b, threads, schedule);
                    if (!b.error.empty()) throw std::runtime_error(b.error);
                }
    } catch (...) {
        running = nullptr;
        throw;
    }
    running = nullptr;
}

}  // namespace cuda_emulator
