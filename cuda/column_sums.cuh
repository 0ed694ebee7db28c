// column_sums.cuh — out[c] = sum over rows r of term(r, c), for a [rows,
// cols] grid of terms: the column sums of a matrix (a bias gradient) and the
// norms' gamma and beta gradients (sum_r dy xhat, sum_r dy).
// Launches the two passes of reduce_kernels.cuh (column_partials_kernel,
// column_finish_kernel), which explains them, with a scratch buffer between.
#pragma once

#include <algorithm>
#include <string>

#include "cuda/cuda_common.cuh"
#include "cuda/cuda_kernels.h"
#include "cuda/reduce_kernels.cuh"
#include "tensor/error.h"

namespace nc {
namespace cuda {

// out[c] = sum_r term(r, c). `name` names the kernels in launch errors.
template <typename T, typename Term>
void column_sums(const Term& term, T* out, int64_t rows, int64_t cols, const char* name) {
    if (cols == 0) return;
    int64_t chunks = column_chunks(rows, cols);
    int64_t per_chunk = (rows + chunks - 1) / chunks;
    int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
    if (tiles > 0x7fffffff) throw Error(std::string(name) + ": " + std::to_string(cols) + " columns are too many for one grid");
    // Freeing the scratch right after the launches is safe: any later use
    // of the block is queued behind them on the one stream.
    double* partial = static_cast<double*>(allocate((size_t)(chunks * cols) * sizeof(double)));
    column_partials_kernel<<<dim3((unsigned)tiles, (unsigned)chunks), dim3(kColumnTile, kRowLanes), 0, stream()>>>(
        term, partial, rows, cols, per_chunk);
    check_launch(name);
    column_finish_kernel<<<blocks_for(cols), kThreads, 0, stream()>>>(partial, out, chunks, cols);
    check_launch(name);
    deallocate(partial);
}

}  // namespace cuda
}  // namespace nc
