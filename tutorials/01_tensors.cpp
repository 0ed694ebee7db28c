// Chapter 1 — tensors: storage, strides, views, broadcasting.
// Built and run by `make test`; run it yourself with build/tutorials/01_tensors.
// Every claim the chapter makes is checked here with `expect`, so if the
// library changes behaviour this program fails instead of silently lying.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "autograd/ops.h"

using namespace nc;

static void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "tutorial 1: expected %s\n", what);
        std::exit(1);
    }
}

static void describe(const char* name, const Tensor& t) {
    std::cout << name << ": shape " << shape_str(t.shape()) << ", strides " << shape_str(t.strides()) << ", offset "
              << t.offset() << (t.is_contiguous() ? ", contiguous" : ", not contiguous") << "\n";
}

// The pictures tutorials/images/01-strides.png and 01-expand.png (make docs
// renders them with Graphviz): a storage, and each cell of some views of it
// joined to the element of storage it reads, offset + i stride[0] + j
// stride[1], from the tensors' own strides. `base` is contiguous from offset
// 0: its values are the storage, in order.
struct PictureView {
    const char *id, *name;
    Tensor view;
    const char* colour;
};
static void write_views_picture(const char* path, const Tensor& base, const std::vector<PictureView>& views) {
    std::ofstream dot(path);
    std::vector<double> values = base.to_vector();
    dot << "digraph strides {\n  node [shape=plaintext, fontname=\"monospace\"];\n  nodesep=0.6; ranksep=1.2;\n";
    dot << "  storage [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"8\"><tr>";
    for (size_t k = 0; k < values.size(); ++k)
        dot << "<td port=\"s" << k << "\">" << values[k] << "<br/><font point-size=\"9\">[" << k << "]</font></td>";
    dot << "</tr><tr><td colspan=\"" << values.size() << "\">storage: " << values.size() << " floats</td></tr></table>>];\n";
    for (const PictureView& p : views) {
        const Tensor& v = p.view;
        dot << "  " << p.id << " [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"8\" color=\""
            << p.colour << "\"><tr><td colspan=\"" << v.size(1) << "\">" << p.name << " " << shape_str(v.shape())
            << "<br/>strides " << shape_str(v.strides()) << "</td></tr>";
        std::string arrows;  // each cell to the element of storage it reads
        for (int64_t i = 0; i < v.size(0); ++i) {
            dot << "<tr>";
            for (int64_t j = 0; j < v.size(1); ++j) {
                int64_t k = v.offset() + i * v.strides()[0] + j * v.strides()[1];
                dot << "<td port=\"c" << i << j << "\">" << values[k] << "<br/><font point-size=\"9\">at [" << k
                    << "]</font></td>";
                arrows += "  " + std::string(p.id) + ":c" + std::to_string(i) + std::to_string(j) + ":s -> storage:s" +
                          std::to_string(k) + ":n [color=\"" + p.colour + "\"];\n";
            }
            dot << "</tr>";
        }
        dot << "</table>>];\n" << arrows;
    }
    dot << "}\n";
}

int main() {
    // --- 1. A tensor is a view of a flat block of memory ----------------------
    Tensor a = reshape(arange(0, 6), {2, 3});
    std::cout << "a =\n" << a << "\n";
    describe("a", a);
    expect(a.strides() == Shape({3, 1}), "row-major strides [3, 1]");

    // --- 2. Views share storage --------------------------------------------------
    Tensor t = transpose(a, 0, 1);
    describe("a^T", t);
    std::cout << "a^T =\n" << t << "\n";
    expect(t.storage() == a.storage(), "transpose to share storage");
    expect(t.strides() == Shape({1, 3}), "transposed strides [1, 3]");
    write_views_picture("01-strides.dot", a, {{"a", "a", a, "#1f5fa8"}, {"at", "a^T", t, "#b8422e"}});

    Tensor col = narrow(a, 1, 2, 1);  // column 2
    describe("column 2 of a", col);
    expect(col.offset() == 2, "the column to start at offset 2");
    raw::fill_(col, -1);  // writing through the view changes a
    std::cout << "after filling column 2 with -1, a =\n" << a << "\n";
    expect(a.to_vector()[5] == -1, "a[1][2] to be -1 after writing through the view");

    Tensor one_row = reshape(arange(0, 3), {1, 3});
    Tensor e = expand(one_row, {4, 3});
    describe("expanded row", e);
    expect(e.strides()[0] == 0, "stride 0 on the expanded dim");
    expect(e.storage() == one_row.storage(), "expand to share storage (no copy)");
    write_views_picture("01-expand.dot", one_row, {{"e", "expand(row, [4, 3])", e, "#2e7d32"}});

    // --- 3. contiguous() copies only when it must -------------------------------
    Tensor c = contiguous(t);
    describe("contiguous(a^T)", c);
    expect(c.storage() != a.storage(), "contiguous of a transpose to be a copy");
    expect(contiguous(a).storage() == a.storage(), "contiguous of a contiguous tensor to be free");
    Tensor r = reshape(a, {3, 2});
    expect(r.storage() == a.storage(), "reshape of a contiguous tensor to be a view");

    // --- 4. Broadcasting -----------------------------------------------------------
    Tensor column = reshape(arange(1, 4), {3, 1});  // [3, 1]
    Tensor row = arange(10, 50, 10);                // [4]
    Tensor table = column * row;                    // [3, 4]
    std::cout << "[3, 1] * [4] ->\n" << table << "\n";
    expect(table.shape() == Shape({3, 4}), "broadcast shape [3, 4]");
    expect(table.to_vector()[11] == 120, "table[2][3] = 3 * 40");

    // --- 5. Bad shapes are errors that say what is wrong ---------------------------
    try {
        add(zeros({2, 3}), zeros({4}));
        expect(false, "an error for [2, 3] + [4]");
    } catch (const Error& err) {
        std::cout << "error: " << err.what() << "\n";
    }

    // --- 6. Reproducible random numbers -----------------------------------------
    Generator gen(42);
    Tensor noise = randn({2, 3}, gen);
    std::cout << "randn with seed 42 =\n" << noise << "\n";
    Generator again(42);
    expect(randn({2, 3}, again).to_vector() == noise.to_vector(), "the same seed to give the same numbers");
    // --- 7. Half-size numbers: bfloat16 keeps float32's range, float16 its digits ---
    Tensor values = from_vector(std::vector<float>{3.14159265f, 70000.0f, 1e-6f}, {3});
    std::cout << "float32  " << values << "\n";
    std::cout << "bfloat16 " << raw::to_dtype(values, kBFloat16) << "\n";
    std::cout << "float16  " << raw::to_dtype(values, kFloat16) << "\n";
    expect(std::isinf(raw::to_dtype(values, kFloat16).to_vector()[1]), "70000 to overflow float16");
    expect(raw::to_dtype(values, kBFloat16).to_vector()[1] == 70144, "70000 to round to 70144 in bfloat16");
    std::cout << "chapter 1: all checks passed\n";
    return 0;
}
