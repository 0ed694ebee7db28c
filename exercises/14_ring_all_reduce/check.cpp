// The check of exercise 14: the ring all-reduce on 1, 2, 3 and 5 simulated
// ranks and buffers of 1, 7 and 12 numbers. Every rank's result against
// the float64 sum computed directly; the rounds (2 (N - 1)) and the numbers
// sent (2 (N - 1) S over all ranks, no rank more than 2 (N - 1) chunks of
// the largest size) counted by the network itself.
#include <cmath>
#include <string>
#include <vector>

#include "exercises/14_ring_all_reduce/ring_all_reduce.h"
#include "exercises/exercise.h"

int main() {
    return exercise::run("14 (ring all-reduce)", [] {
        for (int n : {1, 2, 3, 5})
            for (size_t S : {(size_t)1, (size_t)7, (size_t)12}) {
                std::string name = std::to_string(n) + " ranks, " + std::to_string(S) + " numbers";
                std::vector<std::vector<double>> buffers(n, std::vector<double>(S));
                std::vector<double> total(S, 0.0);
                for (int r = 0; r < n; ++r)
                    for (size_t i = 0; i < S; ++i) {
                        // Distinct, exactly representable values: 1000 r + i + 0.25 (r + 1).
                        buffers[r][i] = 1000.0 * r + (double)i + 0.25 * (r + 1);
                        total[i] += buffers[r][i];
                    }
                exercise::Ring ring(n);
                exercise::ring_all_reduce(buffers, ring);
                for (int r = 0; r < n; ++r) {
                    exercise::expect(buffers[r].size() == S, name + ": rank " + std::to_string(r) + "'s buffer changed length");
                    for (size_t i = 0; i < S; ++i)
                        exercise::expect_close(buffers[r][i], total[i], 1e-12,
                                               name + ": rank " + std::to_string(r) + ", number " + std::to_string(i));
                }
                exercise::expect(ring.rounds() == 2 * (n - 1), name + ": took " + std::to_string(ring.rounds()) +
                                                                   " rounds, the ring all-reduce takes 2 (N - 1) = " +
                                                                   std::to_string(2 * (n - 1)));
                size_t sent = 0, largest_chunk = (S + n - 1) / n;
                for (int r = 0; r < n; ++r) {
                    sent += ring.numbers_sent(r);
                    exercise::expect(ring.numbers_sent(r) <= 2 * (size_t)(n - 1) * largest_chunk,
                                     name + ": rank " + std::to_string(r) + " sent " + std::to_string(ring.numbers_sent(r)) +
                                         " numbers, more than 2 (N - 1) chunks");
                }
                exercise::expect(sent == 2 * (size_t)(n - 1) * S, name + ": the ranks sent " + std::to_string(sent) +
                                                                      " numbers in all, the ring sends 2 (N - 1) S = " +
                                                                      std::to_string(2 * (n - 1) * S));
            }
    });
}
