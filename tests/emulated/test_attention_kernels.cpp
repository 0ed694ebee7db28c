// test_attention_kernels.cpp — the GPU's attention kernels, tiled
// (cuda/attention_tiled.cuh) and simple (cuda/attention_simple.cuh), run on
// the CPU by the CUDA emulator (tests/cuda_emulator), against attention
// written out the slow way in long double. This runs on every machine, GPU or not; on a GPU,
// tests/test_cuda.cpp checks the same kernels on the hardware.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda/attention_simple.cuh"
#include "cuda/attention_tiled.cuh"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;

struct Shape {
    int64_t N, T, S;
    bool causal;
};

// Attention in long double, and beside every result the sum of its terms'
// sizes (|a| + |b| + ...), which bounds float32's rounding error.
struct Reference {
    std::vector<long double> out, lse, dq, dk, dv;
    std::vector<long double> out_size, dq_size, dk_size, dv_size;
};

template <typename Value>
Reference attention_the_slow_way(const Shape& c, int D, int Dv, const std::vector<Value>& q,
                                 const std::vector<Value>& k, const std::vector<Value>& v,
                                 const std::vector<Value>& dout, long double scale) {
    Reference r;
    const int64_t N = c.N, T = c.T, S = c.S;
    r.out.assign(N * T * Dv, 0), r.out_size.assign(N * T * Dv, 0), r.lse.assign(N * T, 0);
    r.dq.assign(N * T * D, 0), r.dq_size.assign(N * T * D, 0);
    r.dk.assign(N * S * D, 0), r.dk_size.assign(N * S * D, 0);
    r.dv.assign(N * S * Dv, 0), r.dv_size.assign(N * S * Dv, 0);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < T; ++i) {
            int64_t keys = c.causal ? std::min(i + 1, S) : S;
            // P_ij = softmax_j(scale q_i . k_j), over the visible keys.
            std::vector<long double> s(keys), p(keys), dp(keys);
            long double max = -INFINITY, total = 0;
            for (int64_t j = 0; j < keys; ++j) {
                long double dot = 0;
                for (int d = 0; d < D; ++d) dot += (long double)q[(n * T + i) * D + d] * k[(n * S + j) * D + d];
                s[j] = scale * dot;
                max = std::max(max, s[j]);
            }
            for (int64_t j = 0; j < keys; ++j) total += p[j] = std::exp(s[j] - max);
            for (int64_t j = 0; j < keys; ++j) p[j] /= total;
            r.lse[n * T + i] = max + std::log(total);
            // out_i = sum_j P_ij v_j;  dP_ij = dout_i . v_j;  dS = P (dP - dout_i . out_i).
            for (int e = 0; e < Dv; ++e)
                for (int64_t j = 0; j < keys; ++j) {
                    long double term = p[j] * v[(n * S + j) * Dv + e];
                    r.out[(n * T + i) * Dv + e] += term;
                    r.out_size[(n * T + i) * Dv + e] += std::fabs(term);
                }
            long double row_dot = 0;
            for (int e = 0; e < Dv; ++e) row_dot += (long double)dout[(n * T + i) * Dv + e] * r.out[(n * T + i) * Dv + e];
            for (int64_t j = 0; j < keys; ++j) {
                long double dot = 0, dot_size = 0;
                for (int e = 0; e < Dv; ++e) {
                    long double term = (long double)dout[(n * T + i) * Dv + e] * v[(n * S + j) * Dv + e];
                    dot += term;
                    dot_size += std::fabs(term);
                }
                long double ds = p[j] * (dot - row_dot), ds_size = p[j] * (dot_size + std::fabs(row_dot));
                for (int d = 0; d < D; ++d) {
                    long double kd = k[(n * S + j) * D + d], qd = q[(n * T + i) * D + d];
                    r.dq[(n * T + i) * D + d] += scale * ds * kd;
                    r.dq_size[(n * T + i) * D + d] += scale * ds_size * std::fabs(kd);
                    r.dk[(n * S + j) * D + d] += scale * ds * qd;
                    r.dk_size[(n * S + j) * D + d] += scale * ds_size * std::fabs(qd);
                }
                for (int e = 0; e < Dv; ++e) {
                    long double g = dout[(n * T + i) * Dv + e];
                    r.dv[(n * S + j) * Dv + e] += p[j] * g;
                    r.dv_size[(n * S + j) * Dv + e] += p[j] * std::fabs(g);
                }
            }
        }
    return r;
}

// Every element within 1e-5 of its terms' size (float32 carries 6e-8
// relative per operation; a wrong element is off by about its size).
// (For float64, 1e-12.)
template <typename T>
void check_close(const char* what, const std::vector<T>& got, const std::vector<long double>& want,
                 const std::vector<long double>& size) {
    std::vector<double> tol(size.size());
    for (size_t e = 0; e < size.size(); ++e) tol[e] = (sizeof(T) == 4 ? 1e-5 : 1e-12) * (double)size[e] + 1e-300;
    nc_test::check_within(what, got, want, tol);
}

// The matrices of a [N, rows, width] batch copied `gap` elements apart, the
// gaps NaN: how forward finds the first S positions of a key/value cache
// (its matrices strides()[0] apart, not rows * width). A kernel that
// ignored the distance would read NaN or the wrong matrix.
template <typename T>
std::vector<T> spread(const std::vector<T>& batch, int64_t N, int64_t matrix, int64_t gap) {
    std::vector<T> out(N * (matrix + gap), (T)NAN);
    for (int64_t n = 0; n < N; ++n)
        std::copy(batch.begin() + n * matrix, batch.begin() + (n + 1) * matrix, out.begin() + n * (matrix + gap));
    return out;
}

template <int D, int Dv>
void check_widths(const Shape& c, Schedule schedule) {
    using namespace nc::cuda;
    using Tiles = AttentionTiles<D, Dv>;
    INFO("D " << D << ", Dv " << Dv << ", N " << c.N << ", T " << c.T << ", S " << c.S << (c.causal ? ", causal" : "")
              << (schedule == Schedule::FirstThreadFirst ? ", thread 0 first" : ", last thread first"));
    const float scale = 1.0f / std::sqrt((float)D);
    std::vector<float> q = nc_test::normal<float>(c.N * c.T * D, 1), k = nc_test::normal<float>(c.N * c.S * D, 2);
    std::vector<float> v = nc_test::normal<float>(c.N * c.S * Dv, 3);
    std::vector<float> dout = nc_test::normal<float>(c.N * c.T * Dv, 4);
    Reference r = attention_the_slow_way(c, D, Dv, q, k, v, dout, scale);

    std::vector<float> out(c.N * c.T * Dv, NAN), lse(c.N * c.T, NAN);
    cuda_emulator::launch(forward_grid<D, Dv>(c.N, c.T).dims(), Tiles::forward_threads, schedule,
                          attention_forward_tiled<D, Dv>, q.data(), k.data(), v.data(), out.data(), lse.data(), c.T,
                          c.S, c.causal, scale, MatrixStrides{c.T * D, c.S * D, c.S * Dv});
    check_close("out", out, r.out, r.out_size);
    std::vector<long double> lse_size(r.lse.size());
    for (size_t e = 0; e < lse_size.size(); ++e) lse_size[e] = 1 + std::fabs(r.lse[e]);
    check_close("logsumexp", lse, r.lse, lse_size);
    // The same batch with the matrices apart: the same numbers, bit for bit.
    std::vector<float> q_apart = spread(q, c.N, c.T * D, 5), k_apart = spread(k, c.N, c.S * D, 3 * D),
                       v_apart = spread(v, c.N, c.S * Dv, 7), out_apart(out.size(), NAN), lse_apart(lse.size(), NAN);
    cuda_emulator::launch(forward_grid<D, Dv>(c.N, c.T).dims(), Tiles::forward_threads, schedule,
                          attention_forward_tiled<D, Dv>, q_apart.data(), k_apart.data(), v_apart.data(),
                          out_apart.data(), lse_apart.data(), c.T, c.S, c.causal, scale,
                          MatrixStrides{c.T * D + 5, c.S * D + 3 * D, c.S * Dv + 7});
    CHECK(out_apart == out);
    CHECK(lse_apart == lse);

    // dq starts at 0 (the kernel adds to it); dk and dv start as NaN, so a
    // row the kernel forgets to write shows.
    std::vector<float> dots(c.N * c.T), dq(c.N * c.T * D, 0.0f), dk(c.N * c.S * D, NAN), dv(c.N * c.S * Dv, NAN);
    cuda_emulator::launch(dim3(2), dim3(64), schedule, attention_row_dots<Dv>, dout.data(), out.data(), dots.data(),
                          c.N * c.T);
    cuda_emulator::launch(backward_grid<D, Dv>(c.N, c.S).dims(), Tiles::backward_threads, schedule,
                          attention_backward_tiled<D, Dv>, dout.data(), q.data(), k.data(), v.data(), lse.data(),
                          dots.data(), dq.data(), dk.data(), dv.data(), c.T, c.S, c.causal, scale);
    check_close("dq", dq, r.dq, r.dq_size);
    check_close("dk", dk, r.dk, r.dk_size);
    check_close("dv", dv, r.dv, r.dv_size);
}

template <int D, int Dv>
void check_widths(const std::vector<Shape>& shapes) {
    for (const Shape& c : shapes)
        for (Schedule schedule : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) check_widths<D, Dv>(c, schedule);
}

}  // namespace

// Shapes: a partial tile, several tiles of queries and keys (the 64-key
// blocks of backward, the 32- and 64-key tiles of forward), one query,
// more keys than queries and more queries than keys.
const std::vector<Shape> kTiledShapes = {{2, 70, 70, true}, {1, 130, 130, true}, {1, 1, 1, true},
                                         {1, 70, 70, false}, {1, 5, 97, false}, {1, 40, 9, true}};

TEST_CASE("emulated GPU: tiled attention equals attention in long double", "[cuda-emulated][attention]") {
    check_widths<16, 16>(kTiledShapes);
    check_widths<32, 32>(kTiledShapes);
    check_widths<64, 64>(kTiledShapes);
    check_widths<16, 32>(kTiledShapes);
    check_widths<32, 64>(kTiledShapes);
}

// The widest tiles, the same code with larger constants, take most of the
// emulator's time (a minute under the sanitizers): [slow], so the release
// suite runs them and the sanitizer pass checks the narrower ones. Without
// the 130 x 130 shape (half of their 41 s in the release suite): at these
// widths (AttentionTiles<128, 128>: 64 queries and 32 keys a forward tile,
// 32 keys and 16 rows a backward one) 70 x 70 already spans more than one
// tile in every direction, the last one partial.
const std::vector<Shape> kWideTiledShapes = {{2, 70, 70, true}, {1, 1, 1, true}, {1, 70, 70, false},
                                             {1, 5, 97, false}, {1, 40, 9, true}};

TEST_CASE("emulated GPU: tiled attention at head size 128 equals attention in long double",
          "[cuda-emulated][attention][slow]") {
    check_widths<128, 128>(kWideTiledShapes);
    check_widths<64, 128>(kWideTiledShapes);
}

namespace {

// The simple kernels, launched as cuda/attention.cu launches them: one
// block of kSimpleTile threads per (batch x head, query row), the forward
// with Dv doubles of dynamic shared memory; dq, dk and dv start at 0.
template <typename T>
void check_simple(const Shape& c, int D, int Dv, Schedule schedule) {
    using namespace nc::cuda;
    INFO("simple, D " << D << ", Dv " << Dv << ", N " << c.N << ", T " << c.T << ", S " << c.S
                      << (c.causal ? ", causal" : "") << (sizeof(T) == 4 ? ", float" : ", double")
                      << (schedule == Schedule::FirstThreadFirst ? ", thread 0 first" : ", last thread first"));
    const double scale = 1.0 / std::sqrt((double)D);
    auto as_T = [](const std::vector<float>& x) { return std::vector<T>(x.begin(), x.end()); };
    std::vector<T> q = as_T(nc_test::normal<float>(c.N * c.T * D, 5)), k = as_T(nc_test::normal<float>(c.N * c.S * D, 6));
    std::vector<T> v = as_T(nc_test::normal<float>(c.N * c.S * Dv, 7)), dout = as_T(nc_test::normal<float>(c.N * c.T * Dv, 8));
    Reference r = attention_the_slow_way(c, D, Dv, q, k, v, dout, (long double)scale);
    std::vector<T> out(c.N * c.T * Dv, (T)NAN), lse(c.N * c.T, (T)NAN);
    const unsigned blocks = (unsigned)std::min<int64_t>(c.N * c.T, 65535);
    cuda_emulator::launch_with_shared(dim3(blocks), dim3(kSimpleTile), Dv * sizeof(double), schedule,
                                      attention_forward_kernel<T>, (const T*)q.data(), (const T*)k.data(),
                                      (const T*)v.data(), out.data(), lse.data(), c.N, c.T, c.S, (int64_t)D,
                                      (int64_t)Dv, c.causal, scale, MatrixStrides{c.T * D, c.S * D, c.S * Dv});
    check_close("out", out, r.out, r.out_size);
    std::vector<long double> lse_size(r.lse.size());
    for (size_t e = 0; e < lse_size.size(); ++e) lse_size[e] = 1 + std::fabs(r.lse[e]);
    check_close("logsumexp", lse, r.lse, lse_size);
    // The same batch with the matrices apart: the same numbers, bit for bit.
    std::vector<T> q_apart = spread(q, c.N, c.T * D, 5), k_apart = spread(k, c.N, c.S * D, 3 * D),
                   v_apart = spread(v, c.N, c.S * Dv, 7), out_apart(out.size(), (T)NAN), lse_apart(lse.size(), (T)NAN);
    cuda_emulator::launch_with_shared(dim3(blocks), dim3(kSimpleTile), Dv * sizeof(double), schedule,
                                      attention_forward_kernel<T>, (const T*)q_apart.data(), (const T*)k_apart.data(),
                                      (const T*)v_apart.data(), out_apart.data(), lse_apart.data(), c.N, c.T, c.S,
                                      (int64_t)D, (int64_t)Dv, c.causal, scale,
                                      MatrixStrides{c.T * D + 5, c.S * D + 3 * D, c.S * Dv + 7});
    CHECK(out_apart == out);
    CHECK(lse_apart == lse);
    std::vector<T> dq(c.N * c.T * D, 0), dk(c.N * c.S * D, 0), dv(c.N * c.S * Dv, 0);
    cuda_emulator::launch(dim3(blocks), dim3(kSimpleTile), schedule, attention_backward_kernel<T>, (const T*)dout.data(),
                          (const T*)q.data(), (const T*)k.data(), (const T*)v.data(), (const T*)out.data(),
                          (const T*)lse.data(), dq.data(), dk.data(), dv.data(), c.N, c.T, c.S, (int64_t)D, (int64_t)Dv,
                          c.causal, scale);
    check_close("dq", dq, r.dq, r.dq_size);
    check_close("dk", dk, r.dk, r.dk_size);
    check_close("dv", dv, r.dv, r.dv_size);
}

}  // namespace

// Widths the tiled kernels do not take (24, 40), float64 (gradcheck on the
// GPU), and more keys than a tile of 128.
TEST_CASE("emulated GPU: simple attention equals attention in long double", "[cuda-emulated][attention]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_simple<double>({2, 20, 20, true}, 24, 40, s);
        check_simple<double>({1, 3, 150, false}, 16, 16, s);
        check_simple<float>({1, 9, 140, false}, 24, 24, s);
        check_simple<float>({1, 140, 140, true}, 8, 12, s);
    }
}
