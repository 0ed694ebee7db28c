// attention_time.cpp — times the CPU's tiled attention kernels, forward and
// backward, causal, on one shape: the numbers behind chapter 9's attention
// section. Build against the library and run:
//
//   make build/bench/attention_time      (`make` builds it too)
//   build/bench/attention_time 48 256 64     # heads (batch x heads), T, head size: the bench's `small`
//
// Prints the median of 30 runs of each and the rate of useful work: the
// causal half of Q K^T and P V forward, five such products backward.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/raw_ops.h"

using namespace nc;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
    long long N = argc == 4 ? std::atoll(argv[1]) : 0, T = argc == 4 ? std::atoll(argv[2]) : 0,
              D = argc == 4 ? std::atoll(argv[3]) : 0;
    if (N < 1 || T < 1 || D < 1) {
        std::fprintf(stderr, "usage: attention_time HEADS T HEAD_SIZE   (e.g. 48 256 64), all at least 1\n");
        return 2;
    }
    Generator gen(1);
    Tensor q = raw::randn({N, T, D}, gen), k = raw::randn({N, T, D}, gen), v = raw::randn({N, T, D}, gen);
    Tensor dout = raw::randn({N, T, D}, gen);
    Tensor out = raw::zeros({N, T, D}), lse = raw::zeros({N, T});
    Tensor dq = raw::zeros({N, T, D}), dk = raw::zeros({N, T, D}), dv = raw::zeros({N, T, D});
    const double scale = 1.0 / std::sqrt((double)D);
    std::vector<double> forward, backward;
    for (int i = 0; i < 30; ++i) {
        double start = now();
        cpu_backend().attention.forward(q, k, v, /*causal=*/true, scale, out, lse);
        forward.push_back(now() - start);
        start = now();
        cpu_backend().attention.backward(dout, q, k, v, out, lse, /*causal=*/true, scale, dq, dk, dv);
        backward.push_back(now() - start);
    }
    double product = 2.0 * (double)N * (double)T * (double)T * (double)D / 2;  // one causal T x T x D product
    double f = median(forward), b = median(backward);
    std::printf("heads %lld, T %lld, head size %lld, causal: forward %.2f ms (%.0f GFLOP/s of useful work), "
                "backward %.2f ms (%.0f GFLOP/s)\n",
                N, T, D, f * 1e3, 2 * product / f / 1e9, b * 1e3, 5 * product / b / 1e9);
    return 0;
}
