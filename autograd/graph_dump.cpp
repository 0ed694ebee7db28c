#include "autograd/graph_dump.h"

#include <fstream>
#include <sstream>
#include <unordered_map>

#include "autograd/engine.h"

namespace nc {

// The nodes and edges of root's graph, one statement a line, each id
// prefixed with `prefix`.
static std::string graph_body(const Tensor& root, const std::string& prefix) {
    std::ostringstream dot;
    std::unordered_map<const void*, std::string> ids;
    auto id_of = [&](const void* p) {
        auto it = ids.find(p);
        if (it != ids.end()) return it->second;
        std::string id = prefix + "n" + std::to_string(ids.size());
        ids[p] = id;
        return id;
    };
    auto leaf_label = [](const Tensor& t) {
        return (t.name().empty() ? std::string("leaf") : t.name()) + "\\n" + shape_str(t.shape());
    };

    if (root.is_leaf()) dot << "  " << id_of(root.impl()) << " [shape=box, label=\"" << leaf_label(root) << "\"];\n";
    for (Node* node : topological_order(root)) {
        dot << "  " << id_of(node) << " [label=\"" << node->name << "\\n" << shape_str(node->output_shape) << "\"];\n";
        for (const Tensor& input : node->inputs) {
            if (!input.defined()) continue;
            const void* source = input.grad_fn() ? (const void*)input.grad_fn().get() : (const void*)input.impl();
            if (!input.grad_fn())
                dot << "  " << id_of(source) << " [shape=box, label=\"" << leaf_label(input) << "\"];\n";
            dot << "  " << id_of(source) << " -> " << id_of(node) << ";\n";
        }
    }
    return dot.str();
}

std::string to_dot(const Tensor& root) {
    return "digraph autograd {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n" + graph_body(root, "") + "}\n";
}

std::string to_dot_cluster(const Tensor& root, const std::string& id_prefix, const std::string& label) {
    return "  subgraph cluster_" + id_prefix + " {\n    label=\"" + label + "\";\n" + graph_body(root, id_prefix) + "  }\n";
}

void write_dot(const Tensor& root, const std::string& path) {
    std::ofstream file(path);
    if (!file) throw Error("write_dot: cannot open '" + path + "' for writing");
    file << to_dot(root);
    if (!file) throw Error("write_dot: failed writing '" + path + "'");
}

}  // namespace nc
