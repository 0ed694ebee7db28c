// Exercise 7 (chapter 7): cutting images into patch tokens by hand.
//
// images: B images of ch channels, each H x H, row-major [B, ch, H, H].
// With patches of p x p (H a multiple of p) there are g = H / p patches per
// side and N = g * g per image, in row-major order (patch row gy, then
// column gx: n = gy g + gx). Each patch becomes one token of ch p p values,
// flattened as (channel, row within the patch, column within the patch):
//
//   tokens[b][gy g + gx][k p p + dy p + dx] = images[b][k][gy p + dy][gx p + dx]
//
// Return the tokens, row-major [B, N, ch p p]. Plain loops are enough.
//
// That order is not a free choice: it is the order of a Conv2d kernel's
// weights [C, ch, p, p] flattened, which is how a ViT's patch embedding is
// stored (Hugging Face's ViTPatchEmbeddings is a Conv2d with stride p). The
// check multiplies your tokens by such a weight and compares the result with
// the convolution computed directly, and with the library's ViT::patchify.
#pragma once

#include <cstdint>
#include <vector>

namespace exercise {

std::vector<double> patchify(const std::vector<double>& images, int64_t B, int64_t ch, int64_t H, int64_t p);

}  // namespace exercise
