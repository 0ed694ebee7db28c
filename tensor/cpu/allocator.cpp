// allocator.cpp — size-class free lists in front of aligned_alloc.
//
// Each block carries a 64-byte header in front of the pointer we hand out,
// holding its size class, so deallocate() knows which list it goes back to.
// A mutex makes it safe to call from any thread (the GEMM allocates packing
// buffers inside OpenMP regions); it is taken once per tensor, not per element.
//
// Under AddressSanitizer the cached blocks are "poisoned", so a use after
// free is still reported even though the memory stays with us.
#include "tensor/cpu/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/error.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>  // madvise
#endif

namespace nc {
namespace cpu {

namespace {
constexpr size_t kHeader = 64;

// Marks a cached block as off-limits for AddressSanitizer (no-ops otherwise).
// (Unused by the exact allocator, which caches nothing.)
[[maybe_unused]] void poison(void* p, size_t n) {
#if defined(__SANITIZE_ADDRESS__)
    __asan_poison_memory_region(p, n);
#else
    (void)p, (void)n;
#endif
}
void unpoison(void* p, size_t n) {
#if defined(__SANITIZE_ADDRESS__)
    __asan_unpoison_memory_region(p, n);
#else
    (void)p, (void)n;
#endif
}

struct Cache {
    std::mutex mutex;
    std::map<size_t, std::vector<void*>> free_blocks;  // size class -> blocks (user pointers)
    AllocatorStats stats;
};
Cache& cache() {
    static Cache* c = new Cache;  // never destroyed: tensors may be freed during static destruction
    return *c;
}
size_t& header_size_class(void* user) { return *reinterpret_cast<size_t*>(static_cast<char*>(user) - kHeader); }
}  // namespace

size_t size_class(size_t nbytes) {
    if (nbytes <= 4096) return nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
    size_t power = 4096;
    while (power * 2 < nbytes) power *= 2;  // power < nbytes <= 2 power
    size_t quarter = power / 4;
    return (nbytes + quarter - 1) / quarter * quarter;
}

#ifdef NORMCORE_EXACT_ALLOCATOR
// The fuzz build (make fuzz): every block is exactly what was asked for and
// goes back to the system at once, so AddressSanitizer sees a read one byte
// past a tensor, or after it was freed, instead of landing in a rounded-up
// or cached block. The statistics are kept as usual.
void* allocate(size_t nbytes) {
    size_t cls = size_class(nbytes);
    Cache& c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.stats.handed_out(cls);
        c.stats.system_allocations++;
    }
    void* raw = nullptr;
    if (posix_memalign(&raw, 64, kHeader + nbytes) != 0) {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.stats.bytes_in_use -= cls;
        throw Error("cpu allocate: out of memory allocating " + std::to_string(nbytes) + " bytes");
    }
    void* user = static_cast<char*>(raw) + kHeader;
    header_size_class(user) = cls;
    return user;
}

void deallocate(void* user) {
    if (!user) return;
    size_t cls = header_size_class(user);
    {
        std::lock_guard<std::mutex> lock(cache().mutex);
        cache().stats.returned(cls);
    }
    std::free(static_cast<char*>(user) - kHeader);
}
#else
namespace {
// A new block from the system. One of 4 MiB or more starts on a 2 MiB
// boundary, and on Linux asks for transparent huge pages (madvise: a hint,
// ignored where they are off): with 4 KiB pages, streaming a large weight
// matrix misses the TLB every 4 KiB, and generating with GPT-2 124M, which
// reads every weight once per token, ran at 59-81 tokens/s against 95-96
// with huge pages (bench/results/gemv-stream-2026-12-05.txt). Only the
// whole 2 MiB pages are advised: the block's last bytes (a size class of
// 4 MiB plus the 64-byte header spill past a boundary) stay on small pages,
// so touching them does not bring in 2 MiB nobody asked for.
constexpr size_t kHugePage = size_t(2) << 20, kHugeMin = size_t(4) << 20;
char* system_block(size_t bytes) {
#if defined(__linux__)
    if (bytes >= kHugeMin) {
        void* raw = nullptr;
        if (posix_memalign(&raw, kHugePage, bytes) != 0) return nullptr;
        madvise(raw, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
        return static_cast<char*>(raw);
    }
#endif
    return static_cast<char*>(std::aligned_alloc(64, bytes));
}
}  // namespace

void* allocate(size_t nbytes) {
    size_t cls = size_class(nbytes);
    Cache& c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.stats.handed_out(cls);
        auto it = c.free_blocks.find(cls);
        if (it != c.free_blocks.end() && !it->second.empty()) {
            void* user = it->second.back();
            it->second.pop_back();
            c.stats.reused(cls);
            unpoison(static_cast<char*>(user) - kHeader, kHeader + cls);
            return user;
        }
        c.stats.system_allocations++;
    }
    char* raw = system_block(kHeader + cls);
    if (!raw) {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.stats.bytes_in_use -= cls;
        throw Error("cpu allocate: out of memory allocating " + std::to_string(nbytes) + " bytes");
    }
    void* user = raw + kHeader;
    header_size_class(user) = cls;
    return user;
}

void deallocate(void* user) {
    if (!user) return;
    size_t cls = header_size_class(user);
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.returned(cls);
    c.free_blocks[cls].push_back(user);
    poison(static_cast<char*>(user) - kHeader, kHeader + cls);
}
#endif

AllocatorStats allocator_stats() {
    std::lock_guard<std::mutex> lock(cache().mutex);
    return cache().stats;
}

void reset_peak_bytes() {
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().stats.reset_peak();
}

void empty_cache() {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto& [cls, blocks] : c.free_blocks)
        for (void* user : blocks) {
            char* raw = static_cast<char*>(user) - kHeader;
            unpoison(raw, kHeader + cls);
            std::free(raw);
        }
    c.free_blocks.clear();
    c.stats.bytes_cached = 0;
}

}  // namespace cpu
}  // namespace nc
