// The reference solution of exercise 7 (make test checks it with check.cpp).
#include "exercises/07_patchify/patchify.h"

namespace exercise {

std::vector<double> patchify(const std::vector<double>& images, int64_t B, int64_t ch, int64_t H, int64_t p) {
    const int64_t g = H / p, N = g * g, K = ch * p * p;
    std::vector<double> tokens(B * N * K);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t gy = 0; gy < g; ++gy)
            for (int64_t gx = 0; gx < g; ++gx)
                for (int64_t k = 0; k < ch; ++k)
                    for (int64_t dy = 0; dy < p; ++dy)
                        for (int64_t dx = 0; dx < p; ++dx)
                            tokens[(b * N + gy * g + gx) * K + (k * p + dy) * p + dx] =
                                images[((b * ch + k) * H + gy * p + dy) * H + gx * p + dx];
    return tokens;
}

}  // namespace exercise
