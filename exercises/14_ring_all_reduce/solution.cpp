// A reference solution of exercise 14. Chunk c of a buffer is numbers
// [c S / N, (c + 1) S / N).
//
// Reduce-scatter, rounds k = 0 .. N - 2: rank r sends chunk (r - k) mod N
// and adds what it receives, chunk (r - 1 - k) mod N, to its own. Rank r's
// chunk (r - k - 1) then holds k + 2 ranks' terms, so after N - 1 rounds
// rank r holds chunk (r + 1) mod N summed over all N ranks.
//
// All-gather, rounds k = 0 .. N - 2: rank r sends chunk (r + 1 - k) mod N,
// which it has finished, and stores what it receives, chunk (r - k) mod N,
// in place. After N - 1 rounds every rank has every finished chunk.
//
// Each rank sends N - 1 chunks in each phase: 2 (N - 1) S / N numbers.
#include "exercises/14_ring_all_reduce/ring_all_reduce.h"

namespace exercise {

void ring_all_reduce(std::vector<std::vector<double>>& buffers, Ring& ring) {
    const int n = ring.size();
    const size_t S = buffers.empty() ? 0 : buffers[0].size();
    auto begin = [&](int c) { return (size_t)c * S / n; };
    auto chunk = [&](int r, int c) {
        return std::vector<double>(buffers[r].begin() + begin(c), buffers[r].begin() + begin(c + 1));
    };
    auto mod = [&](int a) { return ((a % n) + n) % n; };
    for (int k = 0; k < n - 1; ++k) {  // reduce-scatter
        for (int r = 0; r < n; ++r) ring.send(r, chunk(r, mod(r - k)));
        std::vector<std::vector<double>> got = ring.deliver();
        for (int r = 0; r < n; ++r) {
            int c = mod(r - 1 - k);
            for (size_t i = 0; i < got[r].size(); ++i) buffers[r][begin(c) + i] += got[r][i];
        }
    }
    for (int k = 0; k < n - 1; ++k) {  // all-gather
        for (int r = 0; r < n; ++r) ring.send(r, chunk(r, mod(r + 1 - k)));
        std::vector<std::vector<double>> got = ring.deliver();
        for (int r = 0; r < n; ++r) {
            int c = mod(r - k);
            for (size_t i = 0; i < got[r].size(); ++i) buffers[r][begin(c) + i] = got[r][i];
        }
    }
}

}  // namespace exercise
