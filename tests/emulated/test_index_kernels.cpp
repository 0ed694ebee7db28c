// test_index_kernels.cpp — the GPU's index kernels (cuda/index_kernels.cuh:
// index_select, index_add, gather, scatter_add) in float32, float64 and
// int64, run on the CPU by the CUDA emulator (tests/cuda_emulator), against
// the definitions written as loops; duplicate indices must add up, and a
// bad index must be skipped and recorded.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "cuda/index_kernels.cuh"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;

const int64_t outer = 2, D = 5, L = 7, inner = 3;

// Distinct values of every dtype, exact in float: 1000 o + 100 d + i + 0.5 (or
// without the half for int64, and large for int64 so that adding them as
// doubles' bit patterns would show).
template <typename T>
T value_at(int64_t o, int64_t d, int64_t i) {
    if (sizeof(T) == 8 && T(0.5) == T(0)) return (T)((int64_t)1 << 40) + (T)(1000 * o + 100 * d + i);
    return (T)(1000 * o + 100 * d + i) + (T)0.5;
}

template <typename T>
void check_index_kernels(unsigned threads, Schedule schedule, bool one_bad_index) {
    INFO((sizeof(T) == 4 ? "float" : T(0.5) == T(0) ? "int64" : "double") << ", " << threads << " threads"
                                                                        << (one_bad_index ? ", one bad index" : ""));
    // A table [outer, D, inner] and picked values [outer, L, inner].
    std::vector<T> table(outer * D * inner), src(outer * L * inner);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t d = 0; d < D; ++d)
            for (int64_t i = 0; i < inner; ++i) table[(o * D + d) * inner + i] = value_at<T>(o, d, i);
    for (int64_t e = 0; e < outer * L * inner; ++e) src[e] = value_at<T>(0, e % 9, e % 4);
    std::vector<int64_t> index = {3, 0, 3, 4, 1, 3, 0};  // 3 three times, 0 twice
    std::vector<int64_t> index_per_element(outer * L * inner);
    for (int64_t e = 0; e < (int64_t)index_per_element.size(); ++e) index_per_element[e] = (e * 7 + 2) % D;
    const int64_t bad = D + 4;
    if (one_bad_index) index[5] = bad, index_per_element[10] = bad;
    auto ok = [&](int64_t k) { return k >= 0 && k < D; };

    const int64_t n = outer * L * inner;
    IndexErrorRecord record{kNoIndexError, 0, 0};
    std::vector<T> selected(n, (T)-1), gathered(n, (T)-1), added = table, scattered = table;
    cuda_emulator::launch(dim3(1), dim3(threads), schedule, index_select_kernel<T>, (const T*)table.data(),
                          (const int64_t*)index.data(), selected.data(), outer, D, L, inner, &record);
    cuda_emulator::launch(dim3(1), dim3(threads), schedule, index_add_kernel<T>, added.data(),
                          (const int64_t*)index.data(), (const T*)src.data(), outer, D, L, inner, &record);
    cuda_emulator::launch(dim3(1), dim3(threads), schedule, gather_kernel<T>, (const T*)table.data(),
                          (const int64_t*)index_per_element.data(), gathered.data(), outer, D, L, inner, &record);
    cuda_emulator::launch(dim3(1), dim3(threads), schedule, scatter_add_kernel<T>, scattered.data(),
                          (const int64_t*)index_per_element.data(), (const T*)src.data(), outer, D, L, inner, &record);

    std::vector<T> want_selected(n), want_gathered(n), want_added = table, want_scattered = table;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t i = 0; i < inner; ++i) {
                int64_t e = (o * L + l) * inner + i, k = index[l], ke = index_per_element[e];
                want_selected[e] = ok(k) ? table[(o * D + k) * inner + i] : T(0);
                want_gathered[e] = ok(ke) ? table[(o * D + ke) * inner + i] : T(0);
                if (ok(k)) want_added[(o * D + k) * inner + i] += src[e];
                if (ok(ke)) want_scattered[(o * D + ke) * inner + i] += src[e];
            }
    // Every value here is an integer or a half below 2^24 (float) or 2^53,
    // so the sums are exact in any order: the results must be equal.
    CHECK(selected == want_selected);
    CHECK(gathered == want_gathered);
    CHECK(added == want_added);
    CHECK(scattered == want_scattered);
    if (one_bad_index) {
        CHECK(record.op != kNoIndexError);  // the first kernel to meet a bad index
        CHECK(record.index == bad);
        CHECK(record.size == D);
    } else {
        CHECK(record.op == kNoIndexError);
    }
}

}  // namespace

TEST_CASE("emulated GPU: index_select, index_add, gather and scatter_add in every dtype", "[cuda-emulated][index]") {
    for (Schedule s : {Schedule::FirstThreadFirst, Schedule::LastThreadFirst})
        // One block as launched (blocks_for(42) = 1), and one of 32 threads,
        // so that each thread takes a second element in the grid-stride loop.
        for (unsigned threads : {(unsigned)kThreads, 32u})
            for (bool bad : {false, true}) {
                check_index_kernels<float>(threads, s, bad);
                check_index_kernels<double>(threads, s, bad);
                check_index_kernels<int64_t>(threads, s, bad);
            }
}
