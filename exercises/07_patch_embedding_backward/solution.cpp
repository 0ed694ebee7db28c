// A reference solution of exercise 7b. Each output e[b][n][c] is a sum of
// products, and the patches do not overlap (stride = kernel size), so:
//   dimages[b][k][gy p + dy][gx p + dx] = sum_c de[b][n][c] W[c][k][dy][dx]    (one patch n per pixel)
//   dW[c][k][dy][dx]  = sum_{b, n} de[b][n][c] images[b][k][gy p + dy][gx p + dx]
//   dbias[c]          = sum_{b, n} de[b][n][c]
// that is, dpatches = de W then col2im, dW = de^T patches, dbias = column sums.
#include "exercises/07_patch_embedding_backward/patch_embedding_backward.h"

namespace exercise {

PatchEmbeddingGrads patch_embedding_backward(const std::vector<double>& images, const std::vector<double>& W,
                                             int64_t B, int64_t ch, int64_t H, int64_t p, int64_t C,
                                             const std::vector<double>& de) {
    const int64_t g = H / p, N = g * g;
    PatchEmbeddingGrads out{std::vector<double>(images.size(), 0.0), std::vector<double>(W.size(), 0.0),
                            std::vector<double>(C, 0.0)};
    for (int64_t b = 0; b < B; ++b)
        for (int64_t gy = 0; gy < g; ++gy)
            for (int64_t gx = 0; gx < g; ++gx)
                for (int64_t c = 0; c < C; ++c) {
                    double grad = de[(b * N + gy * g + gx) * C + c];
                    out.dbias[c] += grad;
                    for (int64_t k = 0; k < ch; ++k)
                        for (int64_t dy = 0; dy < p; ++dy)
                            for (int64_t dx = 0; dx < p; ++dx) {
                                int64_t pixel = ((b * ch + k) * H + gy * p + dy) * H + gx * p + dx;
                                int64_t weight = ((c * ch + k) * p + dy) * p + dx;
                                out.dimages[pixel] += grad * W[weight];
                                out.dW[weight] += grad * images[pixel];
                            }
                }
    return out;
}

}  // namespace exercise
