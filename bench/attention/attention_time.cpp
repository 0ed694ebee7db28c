// attention_time.cpp — times the CPU's tiled attention kernels, forward and
// backward, causal, on one shape: the numbers behind chapter 9's attention
// section. Build against the library and run:
//
//   make build/bench/attention_time      (`make` builds it too)
//   build/bench/attention_time 48 256 64            # heads (batch x heads), T, head size: the bench's `small`
//   build/bench/attention_time 64 128 32 --views 4  # and in GPT-2's layout, 4 heads per sequence
//
// Prints the median of 30 runs of each and the rate of useful work: the
// causal half of Q K^T and P V forward, five such products backward.
//
// With --views H the HEADS matrices are also laid out as a GPT-2 block
// hands them over: HEADS / H sequences of H heads, q, k and v views into
// one [B, T, 3 H D] projection (rows 3 H D numbers apart), the output and
// its gradient [B, T, H, D] seen as [B, H, T, D] ("heads last"), the three
// gradients views into one [B, T, 3 H D] tensor. The two layouts are timed
// in turn, in alternating order, and their ratio printed: what strided
// operands cost the kernels. The views' strides are checked, and their
// results must equal the contiguous ones bit for bit. (With --views the
// contiguous runs share the caches with the view runs between them, so
// their times are not quite those of a run without it.)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/cpu/cpu_kernels.h"
#include "tensor/ops/heads_last.h"
#include "tensor/raw_ops.h"

using namespace nc;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One layout's operands: q, k, v, the output's gradient, and where the
// output, the log-sum-exp and the three gradients go.
struct Operands {
    Tensor q, k, v, dout, out, lse, dq, dk, dv;
};

// Every matrix contiguous: [N, T, D] each.
Operands contiguous_operands(long long N, long long T, long long D, Generator& gen) {
    return {raw::randn({N, T, D}, gen), raw::randn({N, T, D}, gen), raw::randn({N, T, D}, gen),
            raw::randn({N, T, D}, gen), raw::zeros({N, T, D}), raw::zeros({N, T}),
            raw::zeros({N, T, D}), raw::zeros({N, T, D}), raw::zeros({N, T, D})};
}

// GPT-2's layout (see the top of the file), B sequences of H heads, holding
// the same numbers as `contiguous` (N = B H matrices).
Operands gpt2_view_operands(long long B, long long H, long long T, long long D, const Operands& contiguous) {
    const long long C = H * D;
    // As packed_qkv_attention (tensor/ops/attention.cpp) takes them apart:
    // the [B, T, H, D] columns [which C, which C + C) of [B, T, 3C], as [B, H, T, D].
    auto heads_view = [&](const Tensor& qkv, long long which) {
        return raw::transpose(raw::view(raw::narrow(qkv, 2, which * C, C), {B, T, H, D}), 1, 2);
    };
    auto as_heads = [&](const Tensor& t) { return raw::view(t, {B, H, T, D}); };  // [N, T, D] -> [B, H, T, D]
    Tensor qkv = raw::zeros({B, T, 3 * C}), dqkv = raw::zeros({B, T, 3 * C});
    // The output and its gradient heads last, as the library lays them out (heads_last.h).
    const Shape heads{B, H, T, D};
    Operands o{heads_view(qkv, 0), heads_view(qkv, 1), heads_view(qkv, 2),
               empty_heads_last(heads, kFloat32, kCPU), empty_heads_last(heads, kFloat32, kCPU),
               raw::zeros({B * H, T}),
               heads_view(dqkv, 0), heads_view(dqkv, 1), heads_view(dqkv, 2)};
    raw::copy_(o.q, as_heads(contiguous.q));
    raw::copy_(o.k, as_heads(contiguous.k));
    raw::copy_(o.v, as_heads(contiguous.v));
    raw::copy_(o.dout, as_heads(contiguous.dout));
    return o;
}

// The layout itself, checked: the bit-for-bit comparison below would also
// pass on tensors that are merely distinct, so the strides are asserted
// too (rows 3C apart for q, k, v and their gradients, C apart for the
// output and its gradient).
bool has_gpt2_strides(const Operands& o, long long B, long long H, long long T, long long D) {
    const long long C = H * D;
    const std::vector<int64_t> packed{T * 3 * C, D, 3 * C, 1};
    auto strides = [](const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); };
    for (const Tensor* t : {&o.q, &o.k, &o.v, &o.dq, &o.dk, &o.dv})
        if (strides(*t) != packed) return false;
    return heads_last(o.out) && heads_last(o.dout) && (B * H) == o.lse.size(0);
}

// Whether two float32 tensors of the same numel hold the same bits,
// element by element in their logical order.
bool same_bits(const Tensor& a, const Tensor& b) {
    const Tensor x = raw::contiguous(a), y = raw::contiguous(b);
    return x.numel() == y.numel() && std::memcmp(x.raw_data(), y.raw_data(), (size_t)x.numel() * sizeof(float)) == 0;
}

struct Times {
    std::vector<double> forward, backward;
};

void time_once(const Operands& o, double scale, Times& times) {
    double start = now();
    cpu_backend().attention.forward(o.q, o.k, o.v, /*causal=*/true, scale, o.out, o.lse);
    times.forward.push_back(now() - start);
    start = now();
    cpu_backend().attention.backward(o.dout, o.q, o.k, o.v, o.out, o.lse, /*causal=*/true, scale, o.dq, o.dk, o.dv);
    times.backward.push_back(now() - start);
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "attention_time: %s\n"
                 "usage: attention_time HEADS T HEAD_SIZE [--views HEADS_PER_SEQUENCE]   (e.g. 48 256 64, or\n"
                 "       64 128 32 --views 4). HEADS counts every matrix (sequences x heads); with --views\n"
                 "       they are split into sequences of HEADS_PER_SEQUENCE heads, which must divide HEADS\n",
                 why);
    return 2;
}

// A whole number from 1 to 2^20 written in full ("64"), else 0.
long long count_of(const char* text) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && n >= 1 && n <= (1 << 20) ? n : 0;
}

int run(int argc, char** argv) {
    if (argc != 4 && argc != 6) return usage("expected 3 numbers, then optionally --views and a number");
    const long long N = count_of(argv[1]), T = count_of(argv[2]), D = count_of(argv[3]);
    if (N == 0 || T == 0 || D == 0)
        return usage("HEADS, T and HEAD_SIZE must be whole numbers from 1 to 1048576, in that order");
    long long H = 0;
    if (argc == 6) {
        if (std::string(argv[4]) != "--views") return usage((std::string("unknown flag '") + argv[4] + "'").c_str());
        H = count_of(argv[5]);
        if (H == 0 || N % H != 0) return usage("--views needs a whole number of heads per sequence that divides HEADS");
    }
    Generator gen(1);
    const Operands contiguous = contiguous_operands(N, T, D, gen);
    const Operands views = H > 0 ? gpt2_view_operands(N / H, H, T, D, contiguous) : Operands{};
    if (H > 0 && !has_gpt2_strides(views, N / H, H, T, D)) {
        std::fprintf(stderr, "attention_time: the view operands do not have GPT-2's strides\n");
        return 1;
    }
    const double scale = 1.0 / std::sqrt((double)D);
    Times contiguous_times, view_times;
    for (int i = 0; i < 30; ++i) {
        // In turn, the order alternating: a shared machine's slow stretch
        // then falls on both layouts alike.
        if (H > 0 && i % 2 == 1) time_once(views, scale, view_times);
        time_once(contiguous, scale, contiguous_times);
        if (H > 0 && i % 2 == 0) time_once(views, scale, view_times);
    }
    const double product = 2.0 * (double)N * (double)T * (double)T * (double)D / 2;  // one causal T x T x D product
    const double f = median(contiguous_times.forward), b = median(contiguous_times.backward);
    std::printf("heads %lld, T %lld, head size %lld, causal: forward %.2f ms (%.0f GFLOP/s of useful work), "
                "backward %.2f ms (%.0f GFLOP/s)\n",
                N, T, D, f * 1e3, 2 * product / f / 1e9, b * 1e3, 5 * product / b / 1e9);
    if (H > 0) {
        // The kernels read the views in place with the same arithmetic, so
        // the results must agree to the bit: a check that they read and
        // write the strided rows as they should.
        const Shape heads{N / H, H, T, D};
        for (const auto& [name, plain, view] : {std::tuple{"out", contiguous.out, views.out},
                                                std::tuple{"dq", contiguous.dq, views.dq},
                                                std::tuple{"dk", contiguous.dk, views.dk},
                                                std::tuple{"dv", contiguous.dv, views.dv}})
            if (!same_bits(raw::view(plain, heads), view)) {
                std::fprintf(stderr, "attention_time: %s differs between the contiguous and the view layout\n", name);
                return 1;
            }
        const double fv = median(view_times.forward), bv = median(view_times.backward);
        std::printf("as GPT-2's views (%lld sequences x %lld heads): forward %.2f ms (%.2fx the contiguous time), "
                    "backward %.2f ms (%.2fx); the same bits\n",
                    N / H, H, fv * 1e3, fv / f, bv * 1e3, bv / b);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {  // a library error (the library's messages name the op)
        std::fprintf(stderr, "attention_time: %s\n", e.what());
        return 1;
    }
}
