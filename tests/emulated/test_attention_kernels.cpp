// test_attention_kernels.cpp — the GPU's attention kernels, tiled
// (cuda/attention_tiled.cuh) and simple (cuda/attention_simple.cuh), run on
// the CPU by the CUDA emulator (tests/cuda_emulator), against attention
// written out the slow way in long double. This runs on every machine, GPU or not; on a GPU,
// tests/test_cuda.cpp checks the same kernels on the hardware.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
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

// Views (MatrixLayout, tensor/matrix_layout.h). `place` puts a [N, rows, width]
// batch at a layout in a buffer whose gaps are NaN, `take` reads it back.
// side_by_side: as the heads of GPT-2's [B, T, 3C] projection, the rows of
// a batch entry's heads interleaved (plus a gap after every row piece,
// every row and every batch entry); N = 4 is 2 batch entries of 2 heads.
// apart: whole matrices apart, their rows apart, as the first S positions
// of a key/value cache. A kernel that ignored a stride would read NaN or
// the wrong numbers, or write into a gap.
using nc::MatrixLayout;
using nc::contiguous_layout;
MatrixLayout side_by_side(int64_t N, int64_t rows, int64_t width) {
    const int64_t heads = N >= 4 && N % 2 == 0 ? N / 2 : std::max<int64_t>(1, N), row_stride = heads * (width + 1) + 3;
    return {heads, rows * row_stride + 7, width + 1, row_stride};
}
MatrixLayout apart(int64_t rows, int64_t width) { return {1, rows * (width + 2) + 5, 0, width + 2}; }

// Where row r of matrix n starts, written out here rather than taken from
// MatrixLayout::matrix, so that an error there cannot cancel out.
int64_t row_at(const MatrixLayout& at, int64_t n, int64_t r) {
    return (n / at.heads) * at.batch_stride + (n % at.heads) * at.head_stride + r * at.row_stride;
}
int64_t buffer_size(int64_t N, int64_t rows, int64_t width, const MatrixLayout& at) {
    int64_t size = 0;
    for (int64_t n = 0; n < N && rows > 0; ++n) size = std::max(size, row_at(at, n, rows - 1) + width);
    return size;
}
template <typename T>
std::vector<T> place(const std::vector<T>& batch, int64_t N, int64_t rows, int64_t width, const MatrixLayout& at) {
    std::vector<T> out(buffer_size(N, rows, width, at), (T)NAN);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < width; ++c) out[row_at(at, n, r) + c] = batch[(n * rows + r) * width + c];
    return out;
}
template <typename T>
std::vector<T> take(const std::vector<T>& placed, int64_t N, int64_t rows, int64_t width, const MatrixLayout& at) {
    std::vector<T> out(N * rows * width);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < width; ++c) out[(n * rows + r) * width + c] = placed[row_at(at, n, r) + c];
    return out;
}
// The gaps of a placed output are still NaN: nothing was written there.
template <typename T>
int64_t written_gaps(const std::vector<T>& placed, int64_t N, int64_t rows, int64_t width) {
    int64_t numbers = 0;
    for (T x : placed) numbers += !std::isnan(x);
    return numbers - N * rows * width;
}

// The gradients computed on views equal those computed on contiguous
// blocks, bit for bit, and nothing was written into the views' gaps.
template <typename T>
void check_view_gradients(const Shape& c, int64_t D, int64_t Dv, const nc::cuda::BackwardLayouts& at,
                          const std::array<std::vector<T>, 3>& viewed, const std::array<std::vector<T>, 3>& blocks) {
    CHECK(take(viewed[0], c.N, c.T, D, at.dq) == blocks[0]);
    CHECK(take(viewed[1], c.N, c.S, D, at.dk) == blocks[1]);
    CHECK(take(viewed[2], c.N, c.S, Dv, at.dv) == blocks[2]);
    CHECK(written_gaps(viewed[0], c.N, c.T, D) == 0);
    CHECK(written_gaps(viewed[1], c.N, c.S, D) == 0);
    CHECK(written_gaps(viewed[2], c.N, c.S, Dv) == 0);
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

    const ForwardLayouts blocks{contiguous_layout(c.T, D), contiguous_layout(c.S, D), contiguous_layout(c.S, Dv),
                                contiguous_layout(c.T, Dv)};
    std::vector<float> out(c.N * c.T * Dv, NAN), lse(c.N * c.T, NAN);
    cuda_emulator::launch(forward_grid<D, Dv>(c.N, c.T).dims(), Tiles::forward_threads, schedule,
                          attention_forward_tiled<D, Dv>, q.data(), k.data(), v.data(), out.data(), lse.data(), c.T,
                          c.S, c.causal, scale, blocks);
    check_close("out", out, r.out, r.out_size);
    std::vector<long double> lse_size(r.lse.size());
    for (size_t e = 0; e < lse_size.size(); ++e) lse_size[e] = 1 + std::fabs(r.lse[e]);
    check_close("logsumexp", lse, r.lse, lse_size);
    // The same batch as views: the same numbers, bit for bit.
    const ForwardLayouts views{side_by_side(c.N, c.T, D), apart(c.S, D), apart(c.S, Dv), side_by_side(c.N, c.T, Dv)};
    std::vector<float> q_view = place(q, c.N, c.T, D, views.q), k_view = place(k, c.N, c.S, D, views.k),
                       v_view = place(v, c.N, c.S, Dv, views.v), out_view(buffer_size(c.N, c.T, Dv, views.out), NAN),
                       lse_view(lse.size(), NAN);
    cuda_emulator::launch(forward_grid<D, Dv>(c.N, c.T).dims(), Tiles::forward_threads, schedule,
                          attention_forward_tiled<D, Dv>, q_view.data(), k_view.data(), v_view.data(), out_view.data(),
                          lse_view.data(), c.T, c.S, c.causal, scale, views);
    CHECK(take(out_view, c.N, c.T, Dv, views.out) == out);
    CHECK(written_gaps(out_view, c.N, c.T, Dv) == 0);
    CHECK(lse_view == lse);

    // dq starts at 0 (the kernel adds to it); dk and dv start as NaN, so a
    // row the kernel forgets to write shows.
    const BackwardLayouts grads{contiguous_layout(c.T, Dv), blocks.out, blocks.q, blocks.k,
                                blocks.v, contiguous_layout(c.T, D), blocks.k, blocks.v};
    std::vector<float> dots(c.N * c.T), dq(c.N * c.T * D, 0.0f), dk(c.N * c.S * D, NAN), dv(c.N * c.S * Dv, NAN);
    cuda_emulator::launch(dim3(2), dim3(64), schedule, attention_row_dots<Dv>, dout.data(), out.data(), dots.data(),
                          c.N * c.T, c.T, grads);
    cuda_emulator::launch(backward_grid<D, Dv>(c.N, c.S).dims(), Tiles::backward_threads, schedule,
                          attention_backward_tiled<D, Dv>, dout.data(), q.data(), k.data(), v.data(), lse.data(),
                          dots.data(), dq.data(), dk.data(), dv.data(), c.T, c.S, c.causal, scale, grads);
    check_close("dq", dq, r.dq, r.dq_size);
    check_close("dk", dk, r.dk, r.dk_size);
    check_close("dv", dv, r.dv, r.dv_size);
    // Backward on views: the same bits. For several heads and one schedule
    // only (the emulator's time; rows apart are in every shape above).
    if (schedule != Schedule::FirstThreadFirst || c.N < 2) return;
    const BackwardLayouts grad_views{side_by_side(c.N, c.T, Dv), views.out, views.q, views.k,
                                     views.v, side_by_side(c.N, c.T, D), apart(c.S, D), apart(c.S, Dv)};
    std::vector<float> dout_view = place(dout, c.N, c.T, Dv, grad_views.dout), dots_view(dots.size(), NAN);
    std::vector<float> dq_view = place(std::vector<float>(dq.size(), 0.0f), c.N, c.T, D, grad_views.dq);
    std::vector<float> dk_view(buffer_size(c.N, c.S, D, grad_views.dk), NAN),
        dv_view(buffer_size(c.N, c.S, Dv, grad_views.dv), NAN);
    cuda_emulator::launch(dim3(2), dim3(64), schedule, attention_row_dots<Dv>, dout_view.data(), out_view.data(),
                          dots_view.data(), c.N * c.T, c.T, grad_views);
    CHECK(dots_view == dots);
    cuda_emulator::launch(backward_grid<D, Dv>(c.N, c.S).dims(), Tiles::backward_threads, schedule,
                          attention_backward_tiled<D, Dv>, dout_view.data(), q_view.data(), k_view.data(),
                          v_view.data(), lse.data(), dots_view.data(), dq_view.data(), dk_view.data(),
                          dv_view.data(), c.T, c.S, c.causal, scale, grad_views);
    check_view_gradients<float>(c, D, Dv, grad_views, {dq_view, dk_view, dv_view}, {dq, dk, dv});
}

template <int D, int Dv>
void check_widths(const std::vector<Shape>& shapes) {
    for (const Shape& c : shapes)
        for (Schedule schedule : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) check_widths<D, Dv>(c, schedule);
}

}  // namespace

// Shapes: a partial tile, several tiles of queries and keys (the 64-key
// blocks of backward, the 32- and 64-key tiles of forward), one query,
// more keys than queries and more queries than keys. And, at one width
// (the kernels index every width alike), 2 batch entries of 2 heads: a
// batch stride and a head stride on views.
const std::vector<Shape> kTiledShapes = {{2, 70, 70, true}, {1, 130, 130, true}, {1, 1, 1, true},
                                         {1, 70, 70, false}, {1, 5, 97, false}, {1, 40, 9, true}};

TEST_CASE("emulated GPU: tiled attention equals attention in long double", "[cuda-emulated][attention]") {
    check_widths<16, 16>(kTiledShapes);
    check_widths<32, 32>(kTiledShapes);
    check_widths<32, 32>({{4, 20, 20, true}});
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
    const ForwardLayouts contiguous{contiguous_layout(c.T, D), contiguous_layout(c.S, D), contiguous_layout(c.S, Dv),
                                    contiguous_layout(c.T, Dv)};
    cuda_emulator::launch_with_shared(dim3(blocks), dim3(kSimpleTile), Dv * sizeof(double), schedule,
                                      attention_forward_kernel<T>, (const T*)q.data(), (const T*)k.data(),
                                      (const T*)v.data(), out.data(), lse.data(), c.N, c.T, c.S, (int64_t)D,
                                      (int64_t)Dv, c.causal, scale, contiguous);
    check_close("out", out, r.out, r.out_size);
    std::vector<long double> lse_size(r.lse.size());
    for (size_t e = 0; e < lse_size.size(); ++e) lse_size[e] = 1 + std::fabs(r.lse[e]);
    check_close("logsumexp", lse, r.lse, lse_size);
    // The same batch as views: the same numbers, bit for bit.
    const ForwardLayouts views{side_by_side(c.N, c.T, D), apart(c.S, D), apart(c.S, Dv), side_by_side(c.N, c.T, Dv)};
    std::vector<T> q_view = place(q, c.N, c.T, D, views.q), k_view = place(k, c.N, c.S, D, views.k),
                   v_view = place(v, c.N, c.S, Dv, views.v), out_view(buffer_size(c.N, c.T, Dv, views.out), (T)NAN),
                   lse_view(lse.size(), (T)NAN);
    cuda_emulator::launch_with_shared(dim3(blocks), dim3(kSimpleTile), Dv * sizeof(double), schedule,
                                      attention_forward_kernel<T>, (const T*)q_view.data(), (const T*)k_view.data(),
                                      (const T*)v_view.data(), out_view.data(), lse_view.data(), c.N, c.T, c.S,
                                      (int64_t)D, (int64_t)Dv, c.causal, scale, views);
    CHECK(take(out_view, c.N, c.T, Dv, views.out) == out);
    CHECK(written_gaps(out_view, c.N, c.T, Dv) == 0);
    CHECK(lse_view == lse);
    const BackwardLayouts grads{contiguous_layout(c.T, Dv), contiguous.out, contiguous.q, contiguous.k,
                                contiguous.v, contiguous_layout(c.T, D), contiguous.k, contiguous.v};
    std::vector<T> dq(c.N * c.T * D, 0), dk(c.N * c.S * D, 0), dv(c.N * c.S * Dv, 0);
    cuda_emulator::launch(dim3(blocks), dim3(kSimpleTile), schedule, attention_backward_kernel<T>, (const T*)dout.data(),
                          (const T*)q.data(), (const T*)k.data(), (const T*)v.data(), (const T*)out.data(),
                          (const T*)lse.data(), dq.data(), dk.data(), dv.data(), c.N, c.T, c.S, (int64_t)D, (int64_t)Dv,
                          c.causal, scale, grads);
    check_close("dq", dq, r.dq, r.dq_size);
    check_close("dk", dk, r.dk, r.dk_size);
    check_close("dv", dv, r.dv, r.dv_size);
    // Backward on views (as cuda/attention.cu launches it: the gradients
    // start at 0 where they lie), one schedule: the numbers the kernel's
    // atomic additions give in that order, bit for bit.
    if (schedule != Schedule::FirstThreadFirst) return;
    const BackwardLayouts grad_views{side_by_side(c.N, c.T, Dv), views.out, views.q, views.k,
                                     views.v, side_by_side(c.N, c.T, D), apart(c.S, D), apart(c.S, Dv)};
    std::vector<T> dout_view = place(dout, c.N, c.T, Dv, grad_views.dout);
    std::vector<T> dq_view = place(std::vector<T>(dq.size(), 0), c.N, c.T, D, grad_views.dq),
                   dk_view = place(std::vector<T>(dk.size(), 0), c.N, c.S, D, grad_views.dk),
                   dv_view = place(std::vector<T>(dv.size(), 0), c.N, c.S, Dv, grad_views.dv);
    cuda_emulator::launch(dim3(blocks), dim3(kSimpleTile), schedule, attention_backward_kernel<T>,
                          (const T*)dout_view.data(), (const T*)q_view.data(), (const T*)k_view.data(),
                          (const T*)v_view.data(), (const T*)out_view.data(), (const T*)lse.data(), dq_view.data(),
                          dk_view.data(), dv_view.data(), c.N, c.T, c.S, (int64_t)D, (int64_t)Dv, c.causal, scale,
                          grad_views);
    check_view_gradients<T>(c, D, Dv, grad_views, {dq_view, dk_view, dv_view}, {dq, dk, dv});
}

}  // namespace

// Widths the tiled kernels do not take (24, 40), float64 (gradcheck on the
// GPU), and more keys than a tile of 128.
TEST_CASE("emulated GPU: simple attention equals attention in long double", "[cuda-emulated][attention]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst}) {
        check_simple<double>({2, 20, 20, true}, 24, 40, s);
        check_simple<float>({4, 9, 11, true}, 24, 24, s);
        check_simple<double>({1, 3, 150, false}, 16, 16, s);
        check_simple<float>({1, 9, 140, false}, 24, 24, s);
        check_simple<float>({1, 140, 140, true}, 8, 12, s);
    }
}
