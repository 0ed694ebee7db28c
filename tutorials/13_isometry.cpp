// Chapter 13 — isometry at initialization. Built and run by `make test`;
// the text is in 13-isometry-at-init.md. A small version of
// `normcore experiment isometry`: one batch through a deep random MLP, the
// Gram matrix's isometry measured at every layer.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "analysis/diagnostics.h"
#include "tensor/raw_nn.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 13: expected %s\n", what);
        std::exit(1);
    }
}


// The isometry gap -log I of the layer inputs for `depth` layers of
// h <- act(LN(h) W), W ~ N(0, 1/width), from a batch that shares one big direction.
static std::vector<double> gaps(bool relu, bool normalize, int64_t depth) {
    const int64_t width = 128, batch = 8;
    Generator gen(13);
    // Two draws from one generator, in two statements: as arguments of one
    // call their order would be the compiler's choice (g++ and clang differ).
    Tensor shared = raw::randn({1, width}, gen, kFloat64);
    Tensor h = raw::add(raw::randn({batch, width}, gen, kFloat64), raw::mul(shared, 5.0));
    std::vector<double> out;
    for (int64_t l = 0; l <= depth; ++l) {
        out.push_back(diag::isometry_gap(h));
        // LayerNorm without affine (no gamma, beta): centre each sample, divide by its RMS.
        Tensor z = normalize ? raw::layer_norm(h, Tensor(), Tensor(), 1e-5).out : h;
        Tensor w = raw::mul(raw::randn({width, width}, gen, kFloat64), 1.0 / std::sqrt((double)width));
        h = raw::matmul(z, w);
        if (relu) h = raw::relu(h);
    }
    return out;
}

int main() {
    // The isometry of a Gram matrix: geometric over arithmetic mean of its eigenvalues.
    Tensor orthogonal = raw::from_vector(std::vector<double>{2, 0, 0, 0, 2, 0}, {2, 3});
    Tensor parallel = raw::from_vector(std::vector<double>{1, 1, 0, 2, 2, 0}, {2, 3});
    std::printf("isometry of orthogonal rows: %.4f, of parallel rows: %.2e\n", diag::isometry(orthogonal),
                diag::isometry(parallel));
    expect(std::fabs(diag::isometry(orthogonal) - 1) < 1e-6, "orthogonal rows of equal length to be isometric");
    expect(diag::isometry(parallel) < 1e-3, "parallel rows to be far from isometric");

    const int64_t depth = 30;
    std::vector<double> ln_relu = gaps(true, true, depth), ln_linear = gaps(false, true, depth);
    std::printf("\n%6s %18s %18s\n", "layer", "LN + ReLU gap", "LN + identity gap");
    for (int64_t l = 0; l <= depth; l += 5) std::printf("%6lld %18.4f %18.4f\n", (long long)l, ln_relu[l], ln_linear[l]);
    // With a nonlinearity the gap shrinks layer after layer (the batch
    // decorrelates); a linear network only mixes the directions it has.
    expect(ln_relu[depth] < 0.2 * ln_relu[0], "LayerNorm + ReLU to shrink the isometry gap with depth");
    expect(ln_linear[depth] > 0.5 * ln_linear[0], "a linear network to keep most of its gap");
    std::printf("\nchapter 13: all checks passed\n");
    return 0;
}
