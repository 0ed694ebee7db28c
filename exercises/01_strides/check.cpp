// The check of exercise 1: for real views of one storage, every element the
// library reads must be the storage element your element_offset names, your
// contiguous_strides must be the strides of fresh tensors, and your
// is_contiguous must agree with Tensor::is_contiguous.
#include <string>

#include "autograd/ops.h"
#include "exercises/01_strides/strides.h"
#include "exercises/exercise.h"

using namespace nc;

static std::string text(const Shape& s) { return shape_str(s); }

// Every multi-index of `shape`, in row-major order.
static std::vector<exercise::Sizes> indices(const Shape& shape) {
    std::vector<exercise::Sizes> all{exercise::Sizes(shape.size(), 0)};
    int64_t count = 1;
    for (int64_t n : shape) count *= n;
    if (count == 0) return {};
    for (int64_t e = 1; e < count; ++e) {
        exercise::Sizes next = all.back();
        for (size_t d = next.size(); d-- > 0;) {
            if (++next[d] < shape[d]) break;
            next[d] = 0;
        }
        all.push_back(next);
    }
    return all;
}

int main() {
    return exercise::run("1 (strides)", [] {
        Tensor base = reshape(arange(0, 120), {2, 3, 4, 5});
        std::vector<double> storage = base.to_vector();  // contiguous from offset 0: the storage itself
        struct Case {
            const char* what;
            Tensor view;
        };
        std::vector<Case> views = {
            {"the tensor itself", base},
            {"transpose(0, 3)", transpose(base, 0, 3)},
            {"permute {2, 0, 3, 1}", permute(base, {2, 0, 3, 1})},
            {"narrow(2, 1, 2)", narrow(base, 2, 1, 2)},
            {"narrow(3, 4, 1) (a size-1 last dim)", narrow(base, 3, 4, 1)},
            {"narrow(0, 1, 1) (a size-1 first dim)", narrow(base, 0, 1, 1)},
            {"narrow of a transpose", narrow(transpose(base, 1, 2), 2, 1, 2)},
            {"transpose(0, 1) of narrow(0, 1, 1) (a size-1 dim whose stride does not matter)",
             transpose(narrow(base, 0, 1, 1), 0, 1)},
            {"expand of [1, 3, 1, 5] to [4, 3, 6, 5]", expand(narrow(narrow(base, 0, 0, 1), 2, 2, 1), {4, 3, 6, 5})},
        };
        for (const Case& c : views) {
            std::vector<double> values = c.view.to_vector();
            std::vector<exercise::Sizes> all = indices(c.view.shape());
            for (size_t e = 0; e < all.size(); ++e) {
                int64_t at = exercise::element_offset(c.view.strides(), c.view.offset(), all[e]);
                exercise::expect(at >= 0 && at < (int64_t)storage.size() && storage[at] == values[e],
                                 std::string(c.what) + ": element " + text(all[e]) + " is " +
                                     exercise::number(values[e]) + ", but your offset " + std::to_string(at) +
                                     " names storage[" + std::to_string(at) + "]" +
                                     (at >= 0 && at < (int64_t)storage.size() ? " = " + exercise::number(storage[at]) : " (outside)"));
            }
            bool yours = exercise::is_contiguous(c.view.shape(), c.view.strides());
            exercise::expect(yours == c.view.is_contiguous(),
                             std::string(c.what) + " (shape " + text(c.view.shape()) + ", strides " +
                                 text(c.view.strides()) + "): is_contiguous says " + (yours ? "yes" : "no") +
                                 ", the library " + (c.view.is_contiguous() ? "yes" : "no"));
        }
        for (const Shape& shape : {Shape{7}, Shape{2, 3, 4}, Shape{1, 5}, Shape{4, 1, 3}, Shape{2, 3, 4, 5}}) {
            int64_t count = 1;
            for (int64_t n : shape) count *= n;
            Shape want = reshape(arange(0, (double)count), shape).strides();
            exercise::Sizes got = exercise::contiguous_strides(shape);
            exercise::expect(got == exercise::Sizes(want.begin(), want.end()),
                             "contiguous_strides(" + text(shape) + ") = " + text(Shape(got)) +
                                 ", a fresh tensor has " + text(want));
        }
    });
}
