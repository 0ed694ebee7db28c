// Exercise 7b (chapter 7): the patch embedding's backward, derived by hand.
//
// A ViT's patch embedding is a convolution with a p x p kernel and stride
// p: for image b, patch (gy, gx) and output channel c,
//
//     e[b][gy g + gx][c] = bias[c] + sum_{k, dy, dx} W[c][k][dy][dx] images[b][k][gy p + dy][gx p + dx]
//
// with images [B, ch, H, H], W [C, ch, p, p], g = H / p, all row-major.
// Backward gets de = dL/de [B, N, C] (N = g g) and must return dimages,
// dW and dbias. Work out which terms each image pixel, each weight and
// each bias appears in. (Exercise 7 wrote this as patchify, then a
// product with W: the backward of a product you know from chapter 2, and
// the backward of patchify is the same movement of numbers run the other
// way, which convolution libraries call col2im.)
//
// Plain loops in double. The check compares your gradients with float64
// finite differences of the formula above, on sizes where H / p is 1, 2
// and 4.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

struct PatchEmbeddingGrads {
    std::vector<double> dimages;  // [B, ch, H, H]
    std::vector<double> dW;       // [C, ch, p, p]
    std::vector<double> dbias;    // [C]
};

PatchEmbeddingGrads patch_embedding_backward(const std::vector<double>& images, const std::vector<double>& W,
                                             int64_t B, int64_t ch, int64_t H, int64_t p, int64_t C,
                                             const std::vector<double>& de);

}  // namespace exercise
