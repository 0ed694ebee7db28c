// meta_backend.cpp — the "meta" device: tensors that have a shape, a dtype
// and strides but no memory behind them.
//
// Every kernel does nothing and the allocator hands out addresses nobody may
// read, counting the bytes as the CPU's caching allocator would (the same
// size classes, tensor/cpu/allocator.cpp). Running a model's training step
// on this device therefore goes through every allocation and free its ops
// make on a real device — the same ops, the same saved tensors, the same
// order — in milliseconds and without the memory. What it cannot see is
// scratch a kernel takes from the allocator for itself (the CPU GEMM's
// packing buffers), since its kernels do not run. `normcore memory` (train/
// memory_plan.h) predicts a run's peak that way, as PyTorch's "meta" device
// and fake tensors let it do.
//
// Reading a meta tensor from the host (item(), to_vector()) gives zeros: a
// dry run's loss is 0, its gradient norm 0, every check of them passes.
#include "tensor/meta_backend.h"

#include <cstring>
#include <map>
#include <mutex>

#include "tensor/backend.h"
#include "tensor/cpu/allocator.h"  // size_class

namespace nc {
namespace {

struct Ledger {
    std::mutex mutex;
    std::map<std::uintptr_t, size_t> live;  // block -> size class
    AllocatorStats stats;
    // Fake addresses, never reused, so a block's address names it for the
    // whole run (memory_plan.cpp matches a gradient to the block that made it).
    std::uintptr_t next = 1 << 20;
    bool recording = false;
    std::vector<MetaEvent> events;
};
Ledger& ledger() {
    static Ledger* l = new Ledger;  // never destroyed: tensors may be freed during static destruction
    return *l;
}

void* allocate(size_t nbytes) {
    size_t cls = cpu::size_class(nbytes);
    Ledger& l = ledger();
    std::lock_guard<std::mutex> lock(l.mutex);
    std::uintptr_t block = l.next;
    l.next += cls + 64;
    l.live[block] = cls;
    l.stats.handed_out(cls);
    l.stats.system_allocations++;
    if (l.recording) l.events.push_back({block, cls, true});
    return reinterpret_cast<void*>(block);
}

void deallocate(void* data) {
    if (!data) return;
    Ledger& l = ledger();
    std::lock_guard<std::mutex> lock(l.mutex);
    auto it = l.live.find(reinterpret_cast<std::uintptr_t>(data));
    if (it == l.live.end()) return;  // not a meta block: nothing of ours to free
    l.stats.bytes_in_use -= it->second;  // nothing is cached: the block is gone
    if (l.recording) l.events.push_back({it->first, it->second, false});
    l.live.erase(it);
}

AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(ledger().mutex);
    return ledger().stats;
}

void reset_peak() {
    std::lock_guard<std::mutex> lock(ledger().mutex);
    ledger().stats.reset_peak();
}

void read_zeros(const void*, void* host_dst, size_t nbytes) {
    if (nbytes > 0) std::memset(host_dst, 0, nbytes);
}
void write_nowhere(const void*, void*, size_t) {}

// Points a kernel slot at a function of the slot's own signature that does
// nothing (the parameter types are read off the slot, so every entry of
// every fused op needs one line).
template <typename... Args>
void do_nothing(void (*&slot)(Args...)) {
    slot = [](Args...) {};
}

}  // namespace

void start_meta_record() {
    std::lock_guard<std::mutex> lock(ledger().mutex);
    Ledger& l = ledger();
    l.recording = true;
    l.events.clear();
    // The record opens with what is already live, so that replaying it from
    // nothing gives the blocks in use at any point.
    for (const auto& [block, bytes] : l.live) l.events.push_back({block, bytes, true});
}

size_t meta_record_size() {
    std::lock_guard<std::mutex> lock(ledger().mutex);
    return ledger().events.size();
}

std::vector<MetaEvent> meta_record_since(size_t first) {
    std::lock_guard<std::mutex> lock(ledger().mutex);
    const std::vector<MetaEvent>& events = ledger().events;
    if (first >= events.size()) return {};
    return std::vector<MetaEvent>(events.begin() + (std::ptrdiff_t)first, events.end());
}

std::vector<MetaEvent> stop_meta_record() {
    std::lock_guard<std::mutex> lock(ledger().mutex);
    Ledger& l = ledger();
    l.recording = false;
    std::vector<MetaEvent> events;
    events.swap(l.events);
    return events;
}

const Backend& meta_backend() {
    static const Backend table = [] {
        Backend t{};
        t.name = "meta";
        t.allocate = allocate;
        t.deallocate = deallocate;
        t.allocator_stats = stats;
        t.reset_peak_bytes = reset_peak;
        t.copy_to_host = read_zeros;
        t.copy_from_host = write_nowhere;
        do_nothing(t.fill);
        do_nothing(t.unary);
        do_nothing(t.binary);
        do_nothing(t.where);
        do_nothing(t.reduce_rows);
        do_nothing(t.sum_columns);
        do_nothing(t.matmul);
        do_nothing(t.softmax_rows);
        do_nothing(t.index_select);
        do_nothing(t.index_add);
        do_nothing(t.gather);
        do_nothing(t.scatter_add);
        do_nothing(t.random);
        do_nothing(t.layer_norm.forward);
        do_nothing(t.layer_norm.backward);
        do_nothing(t.rms_norm.forward);
        do_nothing(t.rms_norm.backward);
        do_nothing(t.dyt.forward);
        do_nothing(t.dyt.backward);
        do_nothing(t.cross_entropy.forward);
        do_nothing(t.cross_entropy.backward);
        do_nothing(t.geodesic_update.forward);
        do_nothing(t.geodesic_update.backward);
        do_nothing(t.attention.forward);
        do_nothing(t.attention.backward);
        do_nothing(t.adamw.update);
        do_nothing(t.scale_shift.forward);
        do_nothing(t.scale_shift.backward);
        do_nothing(t.rope.forward);
        do_nothing(t.rope.backward);
        require_complete(t);  // a fused op added to ops.def needs its lines here too
        return t;
    }();
    return table;
}

}  // namespace nc
