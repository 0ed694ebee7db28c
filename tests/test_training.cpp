// End to end: a tiny GPT-2, Llama and ViT each drive the training loss near
// zero on a tiny data set with AdamW (the pipeline can learn).
#include "helpers.h"
#include "nn/models.h"
#include "optim/optimizer.h"

using namespace nc;
using namespace nc::nn;

template <typename Model, typename Input>
static double overfit(Model& model, const Input& input, const Tensor& targets, int steps) {
    optim::AdamW opt(optim::decay_groups(model, 0.0), 1e-2);
    double loss = 0;
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        Tensor l = cross_entropy(model.forward(input), targets);
        backward(l);
        opt.step();
        loss = l.item();
    }
    return loss;
}

TEST_CASE("overfit: GPT-2 and Llama memorize a batch of sequences", "[training]") {
    Tensor ids = raw::from_indices({1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 7, 6, 5, 4, 3, 2}, {2, 8});
    Tensor targets = raw::from_indices({2, 3, 4, 5, 6, 7, 8, 9, 8, 7, 6, 5, 4, 3, 2, 1}, {2, 8});
    Generator g1(1), g2(2);
    GPT2 gpt2(nc_test::tiny_config(gpt2_config()), g1);
    Llama llama(nc_test::tiny_config(llama_config()), g2);
    double a = overfit(gpt2, ids, targets, 150), b = overfit(llama, ids, targets, 150);
    INFO("gpt2 " << a << ", llama " << b);
    CHECK(a < 0.05);
    CHECK(b < 0.05);
}

TEST_CASE("overfit: ViT memorizes the labels of a few images", "[training]") {
    TransformerConfig c = vit_config();
    c.n_layer = 2;
    c.n_embd = 32;
    c.n_head = 2;
    c.image_size = 8;
    c.patch_size = 4;
    c.channels = 1;
    c.num_classes = 4;
    Generator gen(3);
    ViT vit(c, gen);
    Tensor images = raw::randn({8, 1, 8, 8}, gen);
    Tensor labels = raw::from_indices({0, 1, 2, 3, 3, 2, 1, 0}, {8});
    double loss = overfit(vit, images, labels, 150);
    INFO("vit " << loss);
    CHECK(loss < 0.05);
}
