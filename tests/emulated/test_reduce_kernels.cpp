// test_reduce_kernels.cpp — the GPU's reduction kernels
// (cuda/reduce_kernels.cuh: row sums, the chunked full sum, max/argmax,
// softmax, column sums), run on the CPU by the CUDA emulator
// (tests/cuda_emulator) with the grids cuda/reduce.cu and
// cuda/column_sums.cuh launch, against sums in long double and the CPU's
// argmax rule written out as a scan.
#include <cuda_runtime.h>  // the emulator's, found first (-Itests/cuda_emulator)

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cuda/reduce_kernels.cuh"
#include "tests/emulated/emulated_column_sums.h"
#include "tests/emulated/emulated_helpers.h"

namespace {

using cuda_emulator::Schedule;
using namespace nc::cuda;

const Schedule kSchedules[] = {Schedule::FirstThreadFirst, Schedule::LastThreadFirst};

using nc_test::check_within;
using nc_test::normal;

// Row sums of x [rows, n] in long double, and each row's sum of |x|.
void row_sums(const std::vector<double>& x, int64_t rows, int64_t n, std::vector<long double>& sum,
              std::vector<double>& size) {
    sum.assign(rows, 0), size.assign(rows, 0);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) sum[r] += x[r * n + i], size[r] += std::fabs(x[r * n + i]);
}

// The sums run in double and are stored as T: one rounding to T plus n
// double roundings, each at most 2^-53 of the terms' size.
template <typename T>
std::vector<double> sum_tolerance(const std::vector<long double>& sum, const std::vector<double>& size, int64_t n) {
    double unit = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
    std::vector<double> tol(sum.size());
    for (size_t r = 0; r < sum.size(); ++r) tol[r] = unit * std::fabs((double)sum[r]) + (n + 1) * 0x1p-53 * size[r] + 1e-300;
    return tol;
}

template <typename T>
void check_row_sums(int64_t rows, int64_t n, unsigned grid, Schedule schedule) {
    INFO("rows " << rows << ", n " << n << ", grid " << grid << ", " << (sizeof(T) == 4 ? "float" : "double"));
    std::vector<T> x = normal<T>(rows * n, 5, 0.3);
    std::vector<T> out(rows, (T)NAN);
    cuda_emulator::launch(dim3(grid), dim3(kThreads), schedule, sum_rows_kernel<T, T>, (const T*)x.data(), out.data(), rows, n);
    std::vector<long double> want;
    std::vector<double> size;
    row_sums(std::vector<double>(x.begin(), x.end()), rows, n, want, size);
    check_within("row sum", out, want, sum_tolerance<T>(want, size, n));
}

}  // namespace

TEST_CASE("emulated GPU: row sums, one block per row", "[cuda-emulated][reduce]") {
    for (Schedule s : kSchedules) {
        check_row_sums<float>(5, 1000, row_blocks(5), s);
        check_row_sums<float>(5, 1000, 2, s);  // fewer blocks than rows: each block takes several
        check_row_sums<double>(3, 7, row_blocks(3), s);  // a row shorter than the block
        check_row_sums<float>(2, 0, row_blocks(2), s);  // empty rows sum to 0
    }
}

TEST_CASE("emulated GPU: the full sum of a long row, in chunks", "[cuda-emulated][reduce]") {
    // reduce.cu cuts rows of kLongRow elements or more into row_chunks(n)
    // chunks when there are fewer than kFewRows rows.
    for (Schedule s : kSchedules)
        for (int64_t n : {kLongRow + 1, 3 * kChunkElements}) {
            const int64_t rows = 2, chunks = row_chunks(n), per_chunk = (n + chunks - 1) / chunks;
            INFO("n " << n << ", " << chunks << " chunks");
            std::vector<float> x = normal<float>(rows * n, 6, 0.3);
            std::vector<double> partial(rows * chunks, NAN);
            std::vector<float> out(rows, NAN);
            cuda_emulator::launch(dim3((unsigned)chunks, rows), dim3(kThreads), s, sum_row_chunks_kernel<float>, x.data(),
                                  partial.data(), n, per_chunk);
            cuda_emulator::launch(dim3(row_blocks(rows)), dim3(kThreads), s, sum_rows_kernel<double, float>,
                                  (const double*)partial.data(), out.data(), rows, chunks);
            std::vector<long double> want;
            std::vector<double> size;
            row_sums(std::vector<double>(x.begin(), x.end()), rows, n, want, size);
            check_within("full sum", out, want, sum_tolerance<float>(want, size, n));
        }
}

TEST_CASE("emulated GPU: max and argmax keep the CPU's first-NaN, first-maximum rule", "[cuda-emulated][reduce]") {
    const int64_t n = 1000;
    std::vector<std::vector<double>> rows;
    rows.push_back(normal<double>(n, 7));  // one maximum somewhere
    std::vector<double> ties(n, 1.0);
    ties[300] = ties[700] = 2.0;  // the first of two equal maxima
    rows.push_back(ties);
    std::vector<double> nans = normal<double>(n, 8);
    nans[900] = nans[500] = NAN;  // the first NaN beats every number
    nans[10] = INFINITY;
    rows.push_back(nans);
    rows.push_back(std::vector<double>(n, -INFINITY));  // all equal: element 0
    std::vector<double> last = normal<double>(n, 9);
    last[n - 1] = 100;  // past the last full stride of the block
    rows.push_back(last);
    std::vector<double> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    const int64_t count = (int64_t)rows.size();
    // The CPU's answer, as a left-to-right scan.
    std::vector<int64_t> want(count);
    for (int64_t r = 0; r < count; ++r) {
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i) {
            double v = rows[r][i], b = rows[r][best];
            if (std::isnan(b)) break;
            if (std::isnan(v) || v > b) best = i;
        }
        want[r] = best;
    }
    for (Schedule s : kSchedules)
        for (unsigned grid : {(unsigned)row_blocks(count), 2u}) {
            INFO("grid " << grid);
            std::vector<double> max(count, 0);
            std::vector<int64_t> arg(count, -1);
            cuda_emulator::launch(dim3(grid), dim3(kThreads), s, max_rows_kernel<double>, flat.data(), max.data(),
                                  arg.data(), count, n);
            for (int64_t r = 0; r < count; ++r) {
                INFO("row " << r);
                CHECK(arg[r] == want[r]);
                double expected = rows[r][want[r]];
                CHECK((std::isnan(expected) ? std::isnan(max[r]) : max[r] == expected));
            }
            // A row shorter than the block: most threads hold only element 0.
            std::vector<float> shorty = {1.0f, 3.0f, 3.0f};
            float short_max = 0;
            int64_t short_arg = -1;
            cuda_emulator::launch(dim3(1), dim3(kThreads), s, max_rows_kernel<float>, shorty.data(), &short_max,
                                  &short_arg, (int64_t)1, (int64_t)3);
            CHECK(short_arg == 1);
            CHECK(short_max == 3.0f);
        }
}

TEST_CASE("emulated GPU: softmax and log-softmax rows equal long double", "[cuda-emulated][reduce]") {
    for (Schedule s : kSchedules)
        for (int64_t n : {(int64_t)1000, (int64_t)5})
            for (bool log_softmax : {false, true}) {
                const int64_t rows = 3;
                INFO("n " << n << (log_softmax ? ", log-softmax" : ", softmax"));
                std::vector<float> x = normal<float>(rows * n, 10);
                for (float& v : x) v *= 4;  // logits of a few units, as a model's
                std::vector<float> y(rows * n, NAN);
                cuda_emulator::launch(dim3(row_blocks(rows)), dim3(kThreads), s, softmax_rows_kernel<float>, x.data(),
                                      y.data(), rows, n, log_softmax);
                std::vector<long double> want(rows * n);
                std::vector<double> tol(rows * n);
                for (int64_t r = 0; r < rows; ++r) {
                    long double m = -INFINITY, total = 0;
                    for (int64_t i = 0; i < n; ++i) m = std::max(m, (long double)x[r * n + i]);
                    for (int64_t i = 0; i < n; ++i) total += std::exp((long double)x[r * n + i] - m);
                    for (int64_t i = 0; i < n; ++i) {
                        long double shifted = x[r * n + i] - m - std::log(total);
                        want[r * n + i] = log_softmax ? shifted : std::exp(shifted);
                        // float's exp of a float exponent: a few ulp, plus the
                        // exponent's own rounding to float (|x - m| ulp).
                        double ulp = 0x1p-24 * (4 + std::fabs((double)shifted));
                        tol[r * n + i] = log_softmax ? ulp * (1 + std::fabs((double)m)) : ulp * (double)std::exp(shifted);
                    }
                }
                check_within("softmax", y, want, tol);
            }
}

TEST_CASE("emulated GPU: column sums in two passes", "[cuda-emulated][reduce]") {
    struct Size {
        int64_t rows, cols;
    };
    for (Schedule s : kSchedules)
        for (Size z : {Size{300, 70}, Size{5, 3}, Size{1000, 33}, Size{0, 4}}) {
            INFO("rows " << z.rows << ", cols " << z.cols << ", " << column_chunks(z.rows, z.cols) << " chunks");
            std::vector<float> x = normal<float>(z.rows * z.cols, 11, 0.3);
            std::vector<float> out(z.cols, NAN);
            nc_test::emulated_column_sums(MatrixEntry<float>{x.data(), z.cols}, out.data(), z.rows, z.cols, s);
            std::vector<long double> want(z.cols, 0);
            std::vector<double> size(z.cols, 0);
            for (int64_t r = 0; r < z.rows; ++r)
                for (int64_t c = 0; c < z.cols; ++c) want[c] += x[r * z.cols + c], size[c] += std::fabs(x[r * z.cols + c]);
            check_within("column sum", out, want,
                         sum_tolerance<float>(want, size, z.rows));
        }
}
