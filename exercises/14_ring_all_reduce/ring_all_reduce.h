// Exercise 14 (chapter 14): the ring all-reduce, on a simulated network.
//
// N ranks each hold S numbers; afterwards every rank must hold the
// element-wise sum over all ranks. The ranks sit in a ring and may only
// talk to a neighbour: in each *round* every rank may send one message,
// to the rank on its right ((r + 1) % N), and then all messages arrive
// at once. The class Ring below is that network; it counts the rounds and
// the numbers each rank sends.
//
// The naive way (pass whole buffers around the ring, N - 1 rounds) sends
// (N - 1) S numbers from every rank. The ring all-reduce sends
// 2 (N - 1) / N x S, which stays below 2 S whatever N is: cut each buffer into N
// chunks; in N - 1 rounds of *reduce-scatter* each rank passes one chunk
// to the right and adds the chunk it receives to its own copy, so that at
// the end each rank holds one chunk summed over all ranks; in N - 1 rounds
// of *all-gather* the finished chunks travel once around the ring. Work
// out which chunk rank r sends in round k (draw N = 3 on paper), then
// write it. S need not be a multiple of N: chunk c is numbers
// [c S / N, (c + 1) S / N), which may be empty when S < N (an empty message
// is still a message: it counts as the rank's one send of the round).
//
// The check runs N = 1, 2, 3 and 5 on S = 1, 7 and 12, and wants the sums
// (against float64 totals), 2 (N - 1) rounds, and 2 (N - 1) S numbers sent
// in all.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace exercise {

class Ring {
public:
    explicit Ring(int ranks) : inbox_(ranks), outbox_(ranks), sent_(ranks, 0) {}
    int size() const { return (int)inbox_.size(); }

    // Rank `from` sends `values` to rank (from + 1) % N in this round.
    void send(int from, std::vector<double> values) {
        if (from < 0 || from >= size()) throw std::runtime_error("send: there is no rank " + std::to_string(from));
        if (sending_[from])
            throw std::runtime_error("send: rank " + std::to_string(from) + " sent twice in round " +
                                     std::to_string(rounds_ + 1) + " (one message per rank per round)");
        sending_[from] = true;
        sent_[from] += values.size();
        outbox_[from] = std::move(values);
    }
    // Ends the round. Returns, for each rank r, what rank (r - 1 + N) % N
    // sent to it (empty if it sent nothing).
    std::vector<std::vector<double>> deliver() {
        int n = size();
        for (int r = 0; r < n; ++r) inbox_[(r + 1) % n] = std::move(outbox_[r]);
        outbox_.assign(n, {});
        sending_.assign(n, false);
        ++rounds_;
        return inbox_;
    }
    int rounds() const { return rounds_; }
    size_t numbers_sent(int rank) const { return sent_.at(rank); }

private:
    std::vector<std::vector<double>> inbox_, outbox_;
    std::vector<size_t> sent_;
    std::vector<bool> sending_ = std::vector<bool>(inbox_.size(), false);
    int rounds_ = 0;
};

// buffers[r] is rank r's buffer; all have the same length. Afterwards every
// buffer holds the element-wise sum over the ranks. Move numbers between
// ranks only through `ring` (send, then deliver, once per round).
void ring_all_reduce(std::vector<std::vector<double>>& buffers, Ring& ring);

}  // namespace exercise
