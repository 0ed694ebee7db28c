// Chapter 9 — making it fast: from the triple loop to the packed micro-kernel,
// tiled attention, and a caching allocator. Built and run by `make test`;
// the walk-through is in 09-making-it-fast.md.
//
// Every fast version is checked against the naive result; the GFLOP/s it
// prints are for reading, never asserted (a shared machine is noisy).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "nn/models.h"
#include "tensor/cpu/allocator.h"
#include "tensor/cpu/cpu_kernels.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/gemv.h"
#include "tensor/raw_nn.h"
#include "tutorials/gemm_ladder/packing.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 9: expected %s\n", what);
        std::exit(1);
    }
}

// Best of `runs` timings of `body`, as GFLOP/s for a product of n^3 terms.
static double gflops(int64_t n, int runs, const std::function<void()>& body) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        auto start = std::chrono::steady_clock::now();
        body();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return 2.0 * (double)n * (double)n * (double)n / best / 1e9;
}

static double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (double)std::fabs(a[i] - b[i]));
    return worst;
}

// The picture tutorials/images/09-packing.png (make docs renders it with
// gnuplot): a small block of A and slice of B whose every element holds its
// own index, packed by the ladder's pack_A and pack_B (gemm_ladder/
// packing.h). Each element is labelled with the position it gets in the
// packed buffer and coloured by its panel, so the order the micro-kernel
// reads is the order of the numbers.
static void write_packing_picture(const char* path) {
    const int64_t mc = 6, kc = 8, nc = 12, mr = 3, nr = 4, n = 12;
    std::vector<float> index(n * n);
    for (int64_t e = 0; e < n * n; ++e) index[e] = (float)e;
    std::vector<float> a, b;
    ladder::pack_A(n, index.data(), 0, mc, 0, kc, mr, a);
    ladder::pack_B(n, index.data(), 0, kc, 0, nc, nr, b);
    std::ofstream gp(path);
    // For each operand, "column row panel position": where element (row,
    // column) of the block went in the packed buffer.
    auto block = [&](const char* name, const std::vector<float>& packed, int64_t panel_size) {
        gp << "$" << name << " << EOD\n";
        for (size_t position = 0; position < packed.size(); ++position) {
            int64_t e = (int64_t)packed[position];
            gp << e % n << " " << e / n << " " << (int64_t)position / (kc * panel_size) << " " << position << "\n";
        }
        gp << "EOD\n";
    };
    block("A", a, mr);
    block("B", b, nr);
    gp << "set terminal pngcairo size 1100,480 font 'monospace,10'\nset output out\nset termoption noenhanced\n"
          "set multiplot layout 1,2\nunset colorbox\nset yrange [] reverse\nset size ratio -1\nset tics out nomirror\n"
          "set palette defined (0 '#9ecae1', 1 '#fdd0a2', 2 '#c7e9c0', 3 '#dadaeb')\nset cbrange [0:3]\n"
          "set xlabel 'p (column of A)'\nset ylabel 'i (row of A)'\n"
          "set title 'block of A, 6 x 8: panels of mr = 3 rows'\n"
          "plot $A using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle, $A using 1:2:(sprintf('%d', $4)) with labels notitle\n"
          "set xlabel 'j (column of B)'\nset ylabel 'p (row of B)'\n"
          "set title 'slice of B, 8 x 12: panels of nr = 4 columns'\n"
          "plot $B using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle, $B using 1:2:(sprintf('%d', $4)) with labels notitle\n"
          "unset multiplot\n";
}

// The picture tutorials/images/09-attention-tiles.png: which scores of a
// causal T = S = 640 attention the tiled CPU kernel computes, tile by tile
// (kAttentionTileQueries x kAttentionTileKeys, tensor/cpu/cpu_kernels.h):
// tiles entirely in a query's future are never visited; a diagonal tile is
// computed in bands of kAttentionDiagonalBand queries, each over the keys
// its last query sees, and the future part of those masked.
static void write_attention_picture(const char* path) {
    const int64_t T = 640, cell = 8, Bq = cpu::kAttentionTileQueries, Bk = cpu::kAttentionTileKeys,
                  band = cpu::kAttentionDiagonalBand;
    std::ofstream gp(path);
    gp << "$scores << EOD\n";
    for (int64_t i = 0; i < T; i += cell)
        for (int64_t j = 0; j < T; j += cell) {
            int64_t band_end = (i / band + 1) * band;  // the queries up to here see keys < band_end
            int state = j >= std::min(T, band_end) ? 0 : j > i ? 1 : 2;  // skipped, computed and masked, used
            gp << j + cell / 2 << " " << i + cell / 2 << " " << state << "\n";
        }
    gp << "EOD\n$order << EOD\n";  // the order each query block visits its tiles
    for (int64_t i0 = 0; i0 < T; i0 += Bq)
        for (int64_t j0 = 0, visit = 1; j0 < std::min(T, i0 + Bq); j0 += Bk, ++visit)
            gp << j0 + Bk / 2 << " " << i0 + Bq / 2 << " " << visit << "\n";
    gp << "EOD\n";
    gp << "set terminal pngcairo size 620,600 font 'monospace,10'\nset output out\nset termoption noenhanced\n"
          "set size ratio -1\nset yrange [" << T << ":0]\nset xrange [0:" << T << "]\nunset colorbox\n"
          "set palette defined (0 'white', 1 '#fcbba1', 2 '#6baed6')\nset cbrange [0:2]\nset tics out nomirror\n"
          "set xtics " << Bk << "\nset ytics " << Bq << "\nset grid front lc rgb '#333333' lw 1\n"
          "set xlabel 'key j'\nset ylabel 'query i'\n"
          "set title 'causal attention, T = " << T << ", tiles of " << Bq << " x " << Bk << ", diagonal bands of " << band << "'\n"
          "plot $scores using 1:2:3 with image notitle, $order using 1:2:(sprintf('%d', $3)) with labels font ',14' notitle\n";
}

int main() {
    const int64_t n = 512;
    const int threads = omp_get_max_threads();
    Generator gen(9);
    Tensor a_t = raw::randn({n, n}, gen), b_t = raw::randn({n, n}, gen);
    std::vector<float> A(a_t.data<float>(), a_t.data<float>() + n * n);
    std::vector<float> B(b_t.data<float>(), b_t.data<float>() + n * n);
    std::vector<float> C_naive(n * n), C(n * n);

    // What the hardware can do: independent FMAs, no memory traffic at all.
    cpu::SimdIsa best = cpu::best_simd_isa();
    double peak1 = cpu::measure_fma_peak_gflops(best, 1, 20000000);
    double peak_all = cpu::measure_fma_peak_gflops(best, threads, 20000000);
    std::printf("FMA peak (%s): %.1f GFLOP/s on 1 thread, %.1f on %d\n\n", cpu::simd_isa_name(best), peak1, peak_all,
                threads);
    std::printf("%-44s %10s\n", "C = A B, 512 x 512 x 512, float32", "GFLOP/s");

    // Step 1: the textbook loop. The inner loop walks down a column of B:
    // a stride of n floats, a new cache line for every multiply-add.
    double g = gflops(n, 1, [&] {
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) {
                float total = 0;
                for (int64_t p = 0; p < n; ++p) total += A[i * n + p] * B[p * n + j];
                C_naive[i * n + j] = total;
            }
    });
    std::printf("%-44s %10.2f\n", "1. naive i-j-p (dot products)", g);

    // Step 2: swap the two inner loops. Now the inner loop runs along a row
    // of B and a row of C, both contiguous: the compiler vectorizes it.
    g = gflops(n, 3, [&] {
        std::fill(C.begin(), C.end(), 0.0f);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t p = 0; p < n; ++p) {
                float a = A[i * n + p];
                for (int64_t j = 0; j < n; ++j) C[i * n + j] += a * B[p * n + j];
            }
    });
    std::printf("%-44s %10.2f\n", "2. loop order i-p-j (vectorized rows)", g);
    expect(max_difference(C, C_naive) < 1e-3, "the reordered loop to agree with the naive one");

    // Steps 3-5: packing + cache blocking + a register-blocked micro-kernel
    // (tensor/cpu/gemm.cpp), one thread, with each micro-kernel this CPU has.
    cpu::MatrixOperand<float> a_op{A.data(), {0}, n, 1}, b_op{B.data(), {0}, n, 1};
    omp_set_num_threads(1);
    int step = 3;
    for (cpu::SimdIsa isa : cpu::compiled_simd_isas()) {
        char label[80];
        std::snprintf(label, sizeof label, "%d. packed, %s micro-kernel, 1 thread", step++, cpu::simd_isa_name(isa));
        if (!cpu::cpu_supports(isa)) {
            std::printf("%-44s %10s\n", label, "(no CPU support)");
            continue;
        }
        g = gflops(n, 5, [&] { cpu::gemm(n, n, n, a_op, b_op, C.data(), {0}, n, isa); });
        // Compared with the peak of the instructions it uses (the portable
        // kernel gets whatever the compiler's -march allows, so: the best).
        double isa_peak = isa == cpu::SimdIsa::Avx2 ? cpu::measure_fma_peak_gflops(isa, 1, 20000000) : peak1;
        std::printf("%-44s %10.2f  (%.0f%% of the %s 1-thread peak, %.0f)\n", label, g, 100 * g / isa_peak,
                    isa == cpu::SimdIsa::Avx2 ? "avx2" : cpu::simd_isa_name(best), isa_peak);
        expect(max_difference(C, C_naive) < 1e-3, "the packed GEMM to agree with the naive loop");
    }

    // Step 6: OpenMP over the strips of C, every thread with its own packing.
    omp_set_num_threads(threads);
    g = gflops(n, 5, [&] { cpu::gemm(n, n, n, a_op, b_op, C.data(), {0}, n, best); });
    std::printf("6. packed, %s, %d threads %*s %10.2f  (%.0f%% of peak)\n\n", cpu::simd_isa_name(best), threads,
                threads > 9 ? 16 : 17, "", g, 100 * g / peak_all);
    expect(max_difference(C, C_naive) < 1e-3, "the threaded GEMM to agree with the naive loop");

    // Tiled attention: the same outputs as the T x S-materializing reference,
    // but only one number per query is kept for backward.
    const int64_t heads = 4, T = 1024, D = 64;
    Tensor q = raw::randn({heads, T, D}, gen), k = raw::randn({heads, T, D}, gen), v = raw::randn({heads, T, D}, gen);
    double scale = 1.0 / std::sqrt((double)D);
    cpu::reset_peak_bytes();
    size_t before = cpu::allocator_stats().bytes_in_use;
    raw::AttentionForward tiled = raw::attention(q, k, v, /*causal=*/true, scale);
    size_t tiled_peak = cpu::allocator_stats().peak_bytes_in_use - before;
    cpu::reset_peak_bytes();
    before = cpu::allocator_stats().bytes_in_use;
    Tensor reference = raw::zeros({heads, T, D}), probs = raw::zeros({heads, T, T});
    cpu::attention_reference(q, k, v, true, scale, reference, probs);
    size_t reference_peak = cpu::allocator_stats().peak_bytes_in_use - before;
    double diff = raw::max(raw::abs(raw::sub(tiled.out, reference))).item();
    std::printf("attention, %lld heads x T=%lld x D=%lld, causal:\n", (long long)heads, (long long)T, (long long)D);
    std::printf("  tiled:     out + logsumexp %6.2f MiB (saved for backward: logsumexp [%lld, %lld])\n",
                (double)tiled_peak / 1048576.0, (long long)heads, (long long)T);
    std::printf("  reference: out + probs     %6.2f MiB (probs [%lld, %lld, %lld])\n",
                (double)reference_peak / 1048576.0, (long long)heads, (long long)T, (long long)T);
    std::printf("  largest difference of the outputs: %.2e\n\n", diff);
    expect(diff < 1e-5, "tiled attention to equal the reference");
    expect(reference_peak > 4 * tiled_peak, "the reference to need far more memory");

    // The caching allocator: the second identical computation is served
    // entirely from blocks the first one freed.
    auto work = [&] {
        Tensor a = raw::add(raw::randn({256, 256}, gen), 1.0), b = raw::randn({256, 256}, gen);
        raw::matmul(a, b);
    };
    work();
    AllocatorStats s1 = cpu::allocator_stats();
    work();
    AllocatorStats s2 = cpu::allocator_stats();
    std::printf("caching allocator: the repeated computation made %lld system allocations and reused %lld blocks\n",
                (long long)(s2.system_allocations - s1.system_allocations), (long long)(s2.cache_hits - s1.cache_hits));
    expect(s2.system_allocations == s1.system_allocations, "no new system allocation the second time");

    // Recomputing activations: the default GPT-2, one forward and backward
    // with every block's activations kept, then with each block keeping only
    // its input and running again during backward (autograd/checkpoint.h).
    nn::TransformerConfig cfg = nn::gpt2_config();
    cfg.n_embd = 128;
    const int64_t batch = 16, seq = 128;
    std::vector<int64_t> ids(batch * seq), next(batch * seq);
    for (int64_t i = 0; i < batch * seq; ++i) {
        ids[i] = (i * 31 + 7) % 256;
        next[i] = (i * 31 + 38) % 256;
    }
    Tensor tokens = raw::from_indices(ids, {batch, seq}), targets = raw::from_indices(next, {batch, seq});
    struct Measured {
        double activations_mib, ms;
        std::vector<std::vector<double>> grads;
    };
    auto one_step = [&](bool recompute, DType precision = kFloat32, Device device = kCPU) {
        Generator init(5);
        nn::GPT2 model(cfg, init, nn::Options{kFloat32, device});
        model.set_recompute(recompute);
        model.set_precision(precision);
        double param_bytes = 4.0 * (double)model.num_parameters();
        const Backend& memory = backend_for(device);
        memory.reset_peak_bytes();
        size_t before = memory.allocator_stats().bytes_in_use;
        auto t0 = std::chrono::steady_clock::now();
        backward(cross_entropy(model.forward(raw::to_device(tokens, device)), raw::to_device(targets, device)));
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // Above the weights: the gradients (one per parameter) and the rest.
        double above = (double)(memory.allocator_stats().peak_bytes_in_use - before) - param_bytes;
        Measured m{above / 1048576.0, ms, {}};
        if (device == kCPU)
            for (const Tensor& p : model.parameters()) m.grads.push_back(p.grad().to_vector());
        return m;
    };
    one_step(false);  // warm the allocator's cache and the threads
    Measured kept = one_step(false), recomputed = one_step(true);
    for (int again = 0; again < 2; ++again) {  // the time: the best of three
        kept.ms = std::min(kept.ms, one_step(false).ms);
        recomputed.ms = std::min(recomputed.ms, one_step(true).ms);
    }
    double worst = 0;
    for (size_t i = 0; i < kept.grads.size(); ++i)
        for (size_t j = 0; j < kept.grads[i].size(); ++j)
            worst = std::max(worst, std::fabs(kept.grads[i][j] - recomputed.grads[i][j]));
    std::printf("\nrecomputing activations, GPT-2 L=4 C=128 T=128, B=16, one forward and backward:\n");
    std::printf("  activations kept:       peak %6.1f MiB above the weights and their gradients\n", kept.activations_mib);
    std::printf("  activations recomputed: peak %6.1f MiB above the weights and their gradients\n",
                recomputed.activations_mib);
    std::printf("  largest difference of any gradient: %g\n", worst);
    std::printf("  time: kept %.0f ms, recomputed %.0f ms (%.2fx)\n", kept.ms, recomputed.ms, recomputed.ms / kept.ms);
    expect(worst == 0, "the same gradients, bit for bit, with recomputation");
    expect(recomputed.activations_mib * 2.5 < kept.activations_mib, "recomputation to cut the activations' memory");

    // The same forward and backward on the meta device: tensors with shapes
    // but no memory, kernels that do nothing, an allocator that only counts
    // (tensor/meta_backend.cpp). The peak comes out without the memory.
    Measured meta_kept = one_step(false, kFloat32, kMeta), meta_recomputed = one_step(true, kFloat32, kMeta);
    std::printf("\nthe same on the meta device (no memory, no arithmetic):\n");
    std::printf("  activations kept:       peak %6.1f MiB above the weights and their gradients\n", meta_kept.activations_mib);
    std::printf("  activations recomputed: peak %6.1f MiB above the weights and their gradients\n",
                meta_recomputed.activations_mib);
    std::printf("  time: %.1f ms and %.1f ms\n", meta_kept.ms, meta_recomputed.ms);
    // The CPU's GEMM takes its packing buffers, and the partial sums of a
    // weight gradient split along K, from the same allocator inside its
    // kernels, which the meta device does not run: at most the bound that
    // `normcore memory` states (about 2 MiB of it used here).
    const double scratch_mib = (double)cpu::packing_buffers_bound_bytes(omp_get_max_threads()) / (1 << 20);
    expect(std::fabs(meta_kept.activations_mib - kept.activations_mib) <= scratch_mib &&
               std::fabs(meta_recomputed.activations_mib - recomputed.activations_mib) <= scratch_mib,
           "the meta device's peak to be the CPU's but for the GEMM's scratch buffers");

    // 16-bit numbers: what bfloat16 and float16 keep of a float32 value.
    std::printf("\n%-12s %16s %16s %16s\n", "value", "float32", "bfloat16", "float16");
    for (double v : {1 + 1.0 / 256, 3.14159265358979, 1e-8, 70000.0}) {
        Tensor f = raw::full({1}, v);
        std::printf("%-12.9g %16.9g %16.9g %16.9g\n", v, f.item(), raw::to_dtype(raw::to_dtype(f, kBFloat16), kFloat32).item(),
                    raw::to_dtype(raw::to_dtype(f, kFloat16), kFloat32).item());
    }
    // The same step with bfloat16 operands (train --precision bf16): every
    // linear layer rounds its operands, every attention its q, k and v, and
    // both keep the 16-bit copies for backward.
    Measured bf16 = one_step(false, kBFloat16), bf16_recomputed = one_step(true, kBFloat16);
    double largest = 0, error = 0;
    for (size_t i = 0; i < kept.grads.size(); ++i)
        for (size_t j = 0; j < kept.grads[i].size(); ++j) {
            largest = std::max(largest, std::fabs(kept.grads[i][j]));
            error = std::max(error, std::fabs(kept.grads[i][j] - bf16.grads[i][j]));
        }
    for (int again = 0; again < 2; ++again) bf16.ms = std::min(bf16.ms, one_step(false, kBFloat16).ms);
    std::printf("\nbfloat16 operands, the same forward and backward:\n");
    std::printf("  activations kept:       peak %6.1f MiB above the weights and their gradients\n", bf16.activations_mib);
    std::printf("  activations recomputed: peak %6.1f MiB above the weights and their gradients\n",
                bf16_recomputed.activations_mib);
    std::printf("  largest difference from the float32 gradients: %.1e of the largest gradient\n", error / largest);
    std::printf("  time: float32 %.0f ms, bfloat16 operands %.0f ms (%.2fx)\n", kept.ms, bf16.ms, bf16.ms / kept.ms);
    expect(bf16.activations_mib < kept.activations_mib, "16-bit copies to take less memory than float32 activations");
    expect(error / largest < 0.05, "bfloat16 gradients within a few percent of float32's");

    // One row at a time (generating a token): x [1, 128] times the W^T of the
    // default model's first MLP layer, W [512, 128]. With one row the GEMM
    // reads W in place (gemv.h); two rows already go through packing, which
    // copies all of W before using each number of it twice.
    {
        const int64_t K = 128, N = 512;
        Tensor x_t = raw::randn({2, K}, gen), w_t = raw::randn({N, K}, gen);
        const float* x = x_t.data<float>();
        const float* w = w_t.data<float>();
        std::vector<float> y(2 * N), y_naive(2 * N, 0.0f);
        for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < N; ++j)
                for (int64_t p = 0; p < K; ++p) y_naive[i * N + j] += x[i * K + p] * w[j * K + p];
        cpu::MatrixOperand<float> x_op{x, {0}, K, 1}, wt_op{w, {0}, 1, K};  // W^T: B(p, j) = w[j K + p]
        omp_set_num_threads(1);
        auto microseconds = [](const std::function<void()>& body) {  // best of 5 rounds of 2000 calls
            double best = 1e30;
            for (int r = 0; r < 5; ++r) {
                auto start = std::chrono::steady_clock::now();
                for (int i = 0; i < 2000; ++i) body();
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            }
            return best / 2000 * 1e6;
        };
        double one = microseconds([&] { cpu::gemm(1, N, K, x_op, wt_op, y.data(), {0}, N, best); });
        expect(max_difference(std::vector<float>(y.begin(), y.begin() + N),
                              std::vector<float>(y_naive.begin(), y_naive.begin() + N)) < 1e-3,
               "the one-row product to agree with the naive loop");
        double two = microseconds([&] { cpu::gemm(2, N, K, x_op, wt_op, y.data(), {0}, N, best); });
        expect(max_difference(y, y_naive) < 1e-3, "the two-row product to agree with the naive loop");
        omp_set_num_threads(threads);
        double weight_bytes = (double)(N * K) * sizeof(float);
        std::printf("\none row times W^T, W [%lld, %lld], 1 thread:\n", (long long)N, (long long)K);
        std::printf("  1 row,  read in place:  %6.2f us (the weights at %.0f GB/s)\n", one, weight_bytes / one / 1e3);
        std::printf("  2 rows, packed GEMM:    %6.2f us (%.1fx the time of one row)\n", two, two / one);

        // The same 512 dot products taken in three ways (gemm_kernels.h's
        // dot_columns): one column after the other, four at a time (the
        // plain C++ kernel), and the CPU's own kernel, where gemv uses one:
        // sixteen at a time with AVX-512, four (with vector sums at the end)
        // with AVX2. Each sum is added in the one order of gemm_kernels.h
        // every time: the same bits.
        const cpu::DotColumnsFn portable = cpu::kPortableKernel.dot_columns;
        const cpu::DotColumnsFn cached = cpu::dot_kernel_for_cache();
        const cpu::DotColumnsFn own = cached != portable ? cached : nullptr;
        std::vector<float> y_one(N), y_four(N), y_own(N);
        double t_one = microseconds([&] { portable(K, x, w, K, N, y_one.data(), false, /*streaming=*/true); });
        double t_four = microseconds([&] { portable(K, x, w, K, N, y_four.data(), false, false); });
        expect(y_one == y_four, "both ways of taking the dot products to give the same bits");
        auto print_row = [](const std::string& label, double us) {
            std::printf("  %-28s %6.2f us\n", label.c_str(), us);
        };
        std::printf("the dot products, W in place, 1 thread:\n");
        print_row("one column at a time:", t_one);
        print_row("four at a time (C++):", t_four);
        if (own) {
            double t_own = microseconds([&] { own(K, x, w, K, N, y_own.data(), false, false); });
            expect(y_own == y_one, "the CPU's own kernel to give the same bits");
            const char* columns = best == cpu::SimdIsa::Avx512 ? "sixteen" : "four";
            print_row(std::string(columns) + " at a time (" + cpu::simd_isa_name(best) + "):", t_own);
        } else {
            std::printf("  the CPU's own kernel: not used here (the plain C++ kernel serves this CPU and build)\n");
        }
    }

    write_packing_picture("09-packing.gp");
    write_attention_picture("09-attention-tiles.gp");
    return 0;
}
