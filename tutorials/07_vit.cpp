// Chapter 7 — the Vision Transformer. Built and run by `make test`: patches,
// a class token, bidirectional attention, and a few training steps on a
// synthetic two-class image task (horizontal vs vertical stripes).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "nn/models.h"

using namespace nc;
using namespace nc::nn;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 7: expected %s\n", what);
        std::exit(1);
    }
}

// B images [1, 8, 8]: class 0 has horizontal stripes, class 1 vertical, plus noise.
static void make_batch(int64_t B, Generator& gen, Tensor& images, Tensor& labels) {
    std::vector<double> pixels(B * 64);
    std::vector<int64_t> classes(B);
    std::vector<double> noise = raw::randn({B * 64}, gen, kFloat64).to_vector();
    std::vector<double> phase = raw::rand({B}, gen, kFloat64).to_vector();
    for (int64_t b = 0; b < B; ++b) {
        classes[b] = b % 2;
        int offset = phase[b] < 0.5 ? 0 : 1;
        for (int r = 0; r < 8; ++r)
            for (int c = 0; c < 8; ++c) {
                int line = classes[b] == 0 ? r : c;
                pixels[b * 64 + r * 8 + c] = ((line + offset) % 2 ? 1.0 : -1.0) + 0.3 * noise[b * 64 + r * 8 + c];
            }
    }
    images = raw::to_dtype(raw::from_vector(pixels, {B, 1, 8, 8}), kFloat32);
    labels = raw::from_indices(classes, {B});
}

int main() {
    TransformerConfig cfg = vit_config();
    cfg.n_layer = 2;
    cfg.n_embd = 32;
    cfg.n_head = 4;
    cfg.image_size = 8;
    cfg.patch_size = 4;
    cfg.channels = 1;
    cfg.num_classes = 2;
    Generator gen(0);
    ViT model(cfg, gen);
    for (auto& [name, p] : model.named_parameters())
        if (name.find("layer.1.") == std::string::npos) std::printf("  %-58s %s\n", name.c_str(), shape_str(p.shape()).c_str());

    Generator data(1);
    Tensor images, labels;
    make_batch(16, data, images, labels);
    Tensor patches = model.patchify(images);
    std::printf("images %s -> patches %s (4 patches of 1 x 4 x 4 pixels)\n", shape_str(images.shape()).c_str(),
                shape_str(patches.shape()).c_str());
    expect(patches.shape() == Shape({16, 4, 16}), "patches [B, N, ch*p*p]");
    // Patch 1 is the top-right 4 x 4 block of the image.
    double top_right = raw::sum(raw::narrow(raw::narrow(raw::narrow(images, 0, 0, 1), 2, 0, 4), 3, 4, 4)).item();
    double patch1 = raw::sum(raw::narrow(raw::narrow(patches, 0, 0, 1), 1, 1, 1)).item();
    expect(std::fabs(top_right - patch1) < 1e-4, "patch 1 to be the top-right block");

    Tensor logits = model.forward(images);
    std::printf("logits %s; the head starts at zero, so the first loss is log 2 = %.4f: %.4f\n",
                shape_str(logits.shape()).c_str(), std::log(2.0), cross_entropy(logits, labels).item());
    expect(std::fabs(cross_entropy(logits, labels).item() - std::log(2.0)) < 1e-6, "a zero head: loss log 2");

    double last_acc = 0;
    for (int step = 1; step <= 40; ++step) {
        make_batch(16, data, images, labels);
        model.zero_grad();
        Tensor out = model.forward(images);
        Tensor loss = cross_entropy(out, labels);
        backward(loss);
        NoGradGuard no_grad;
        for (const Tensor& p : model.parameters()) raw::copy_(p, raw::sub(p, raw::mul(p.grad(), 0.1)));
        last_acc = raw::mean(raw::to_dtype(raw::eq(raw::argmax(out, 1), labels), kFloat64)).item();
        if (step % 10 == 0) std::printf("step %2d  loss %.4f  batch accuracy %.2f\n", step, loss.item(), last_acc);
    }
    // Held-out batch.
    make_batch(64, data, images, labels);
    double acc = raw::mean(raw::to_dtype(raw::eq(raw::argmax(model.forward(images), 1), labels), kFloat64)).item();
    std::printf("accuracy on 64 new images: %.3f\n", acc);
    expect(acc > 0.9, "the ViT to tell stripes apart");
    std::cout << "chapter 7: all checks passed\n";
    return 0;
}
