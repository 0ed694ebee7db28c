// The check of exercise 7: your tokens against the library's ViT::patchify,
// and, times a Conv2d weight [C, ch, p, p] flattened, against the stride-p
// convolution computed directly (how a ViT's patch embedding is defined).
#include <random>
#include <string>

#include "exercises/07_patchify/patchify.h"
#include "exercises/exercise.h"
#include "nn/models.h"

using namespace nc;

int main() {
    return exercise::run("7 (patchify)", [] {
        std::mt19937 rng(7);
        std::normal_distribution<double> normal(0.0, 1.0);
        struct Size {
            int64_t B, ch, H, p;
        };
        for (Size s : {Size{2, 1, 28, 7}, Size{3, 3, 12, 4}, Size{1, 2, 8, 8}}) {
            const int64_t g = s.H / s.p, N = g * g, K = s.ch * s.p * s.p, C = 5;
            std::string where = "[" + std::to_string(s.B) + ", " + std::to_string(s.ch) + ", " + std::to_string(s.H) +
                                ", " + std::to_string(s.H) + "] images, p = " + std::to_string(s.p);
            std::vector<double> images(s.B * s.ch * s.H * s.H);
            for (double& v : images) v = normal(rng);
            std::vector<double> tokens = exercise::patchify(images, s.B, s.ch, s.H, s.p);
            exercise::expect((int64_t)tokens.size() == s.B * N * K,
                             where + ": expected " + std::to_string(s.B * N * K) + " values ([B, N, ch p p]), got " +
                                 std::to_string(tokens.size()));

            // The library's patchify, on a ViT of this image size.
            nn::TransformerConfig cfg = nn::vit_config();
            cfg.image_size = s.H, cfg.patch_size = s.p, cfg.channels = s.ch;
            cfg.n_layer = 1, cfg.n_embd = 8, cfg.n_head = 2;
            Generator gen(7);
            nn::ViT vit(cfg, gen, {kFloat64, kCPU});
            std::vector<double> library = vit.patchify(raw::from_vector(images, {s.B, s.ch, s.H, s.H})).to_vector();
            exercise::expect(exercise::largest_difference(tokens, library) == 0,
                             where + ": your tokens differ from ViT::patchify's by " +
                                 exercise::number(exercise::largest_difference(tokens, library)));

            // tokens x W^T against the convolution with W as a [C, ch, p, p] kernel, stride p.
            std::vector<double> W(C * K);
            for (double& v : W) v = normal(rng);
            for (int64_t b = 0; b < s.B; ++b)
                for (int64_t gy = 0; gy < g; ++gy)
                    for (int64_t gx = 0; gx < g; ++gx)
                        for (int64_t c = 0; c < C; ++c) {
                            double conv = 0, product = 0;
                            for (int64_t k = 0; k < s.ch; ++k)
                                for (int64_t dy = 0; dy < s.p; ++dy)
                                    for (int64_t dx = 0; dx < s.p; ++dx)
                                        conv += W[((c * s.ch + k) * s.p + dy) * s.p + dx] *
                                                images[((b * s.ch + k) * s.H + gy * s.p + dy) * s.H + gx * s.p + dx];
                            for (int64_t e = 0; e < K; ++e) product += tokens[(b * N + gy * g + gx) * K + e] * W[c * K + e];
                            exercise::expect_close(product, conv, 1e-12,
                                                   where + ": image " + std::to_string(b) + ", patch (" + std::to_string(gy) +
                                                       ", " + std::to_string(gx) + "), channel " + std::to_string(c) +
                                                       " of the patch embedding (the direct convolution)");
                        }
        }
    });
}
