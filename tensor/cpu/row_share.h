// row_share.h — how the threads of one GEMM split the rows of C between
// them (gemm.cpp, when all threads work on one product).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace nc {
namespace cpu {

// Micro-panels [first, last) of the rows (a micro-panel: mr rows).
struct PanelRange {
    int64_t first = 0, last = 0;
    bool empty() const { return first == last; }
};

// One thread's share of the rows of C for one K slice: the micro-panels
// [front, back) nobody has taken yet. The owner takes from the front, up to
// a cache block's worth at a time but no more than half of what is left, so
// that near the end the pieces get small; a thread that has finished its
// own share takes small pieces from the back of the others'.
//
// Why not a fixed equal split: on a shared machine one core is often
// slower for a while, and the other then waited for it, 5-15% of the time
// at M = 1024, N = 256, K = 1024. Why not a dynamic schedule of all the
// rows: a thread's rows of C should stay in its own L2 from one slice to
// the next (moving every row between cores cost 2-3%). Here panels change
// hands only when the speeds differ, and then only the last few. Measured
// by alternating the two versions call by call: in quiet stretches no
// difference, in slow ones the median product 4-18% faster.
class RowShare {
public:
    void reset(int64_t front, int64_t back) {
        std::lock_guard<std::mutex> hold(lock_);
        front_ = front, back_ = back;
    }
    // The owner's next piece: at most `most`, at least `least` (if that many
    // are left), otherwise half of what is left.
    PanelRange take_front(int64_t most, int64_t least) {
        std::lock_guard<std::mutex> hold(lock_);
        int64_t count = std::min(back_ - front_, std::max(least, std::min(most, (back_ - front_) / 2)));
        PanelRange r{front_, front_ + count};
        front_ = r.last;
        return r;
    }
    // A helper's piece: the last `count` (or fewer, if fewer are left).
    PanelRange take_back(int64_t count) {
        std::lock_guard<std::mutex> hold(lock_);
        PanelRange r{std::max(front_, back_ - count), back_};
        back_ = r.first;
        return r;
    }

private:
    std::mutex lock_;
    int64_t front_ = 0, back_ = 0;
};

}  // namespace cpu
}  // namespace nc
