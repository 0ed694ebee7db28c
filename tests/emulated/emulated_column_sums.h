// emulated_column_sums.h — cuda/column_sums.cuh's two launches (partial
// sums per row chunk, then per column), on the CUDA emulator, with the
// same grids.
#pragma once

#include <cuda_runtime.h>  // the emulator's

#include <cmath>
#include <vector>

#include "cuda/reduce_kernels.cuh"

namespace nc_test {

// out[c] = sum_r term(r, c), as cuda::column_sums computes it on a GPU.
template <typename T, typename Term>
void emulated_column_sums(const Term& term, T* out, int64_t rows, int64_t cols, cuda_emulator::Schedule schedule) {
    using namespace nc::cuda;
    const int64_t chunks = column_chunks(rows, cols), per_chunk = (rows + chunks - 1) / chunks;
    const int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
    std::vector<double> partial(chunks * cols, NAN);
    cuda_emulator::launch(dim3((unsigned)tiles, (unsigned)chunks), dim3(kColumnTile, kRowLanes), schedule,
                          column_partials_kernel<Term>, term, partial.data(), rows, cols, per_chunk);
    cuda_emulator::launch(dim3(blocks_for(cols)), dim3(kThreads), schedule, column_finish_kernel<T>,
                          (const double*)partial.data(), out, chunks, cols);
}

}  // namespace nc_test
