// End to end: a tiny GPT-2, Llama and ViT each drive the training loss near
// zero on a tiny data set with AdamW (the pipeline can learn).
#include "helpers.h"
#include "nn/models.h"
#include "train/train_step.h"
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

// train's step (train/train_step.h) against a hand-written step: the same
// weights after two micro-batches of one example each as after one step on
// both examples (the gradient of the mean), the global norm clipped, and a
// non-finite loss refused with nothing updated.
TEST_CASE("train_step: accumulation gives the mean's gradient, clipping bounds the norm, a NaN loss is refused",
          "[training]") {
    using nc::app::TrainStep;
    Tensor x = raw::from_vector(std::vector<double>{1, 2, -1, 0.5}, {2, 2});
    Tensor y = raw::from_vector(std::vector<double>{0.5, -1}, {2, 1});
    auto fresh = [] { return raw::from_vector(std::vector<double>{0.3, -0.2}, {2, 1}).set_requires_grad(true); };
    // The reference: one SGD step of lr 0.1 on mean((x w - y)^2) over both rows,
    // written out: w - 0.1 * 2/N x^T (x w - y).
    std::vector<double> w0 = {0.3, -0.2}, expected(2);
    std::vector<double> xs = {1, 2, -1, 0.5}, ys = {0.5, -1};
    for (int j = 0; j < 2; ++j) {
        double g = 0;
        for (int i = 0; i < 2; ++i) g += 2.0 / 2 * xs[i * 2 + j] * (xs[i * 2] * w0[0] + xs[i * 2 + 1] * w0[1] - ys[i]);
        expected[j] = w0[j] - 0.1 * g;
    }
    Tensor w = fresh();
    optim::SGD sgd({{{w}}}, 0.1);
    int64_t row = 0;
    TrainStep step;
    step.loss = [&] {
        Tensor r = matmul(raw::narrow(x, 0, row, 1), w) - raw::narrow(y, 0, row, 1);
        row = (row + 1) % 2;
        return mean(r * r);
    };
    step.params = {w};
    step.optimizer = &sgd;
    step.accum = 2;
    nc::app::StepResult r = train_step(step);
    CHECK(r.refused == app::Refusal::None);
    nc_test::check_values(w, expected, 1e-12);
    CHECK(std::isfinite(r.grad_norm));

    // Clipping: a tiny bound makes the update lr * bound long. (The loss
    // reads `w`, which now names fresh weights.)
    w = fresh();
    optim::SGD sgd2({{{w}}}, 1.0);
    step.params = {w};
    step.optimizer = &sgd2;
    step.grad_clip = 1e-3;
    r = train_step(step);
    double moved = std::hypot(w.to_vector()[0] - 0.3, w.to_vector()[1] + 0.2);
    CHECK(r.grad_norm > 1e-3);
    CHECK(moved == Approx(1e-3).epsilon(1e-4));

    // A NaN loss: refused, the weights untouched, the gradients cleared.
    Tensor w3 = fresh();
    optim::SGD sgd3({{{w3}}}, 0.1);
    TrainStep bad;
    bad.loss = [&] { return mean(matmul(x, w3)) * NAN; };
    bad.params = {w3};
    bad.optimizer = &sgd3;
    r = train_step(bad);
    CHECK(r.refused == app::Refusal::Loss);
    CHECK(std::string(app::refusal_name(r.refused)) == "training loss");
    nc_test::check_values(w3, {0.3, -0.2}, 0);
    CHECK((!w3.grad().defined() || raw::sum(raw::abs(w3.grad())).item() == 0));
}
