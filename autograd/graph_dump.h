// graph_dump.h — the recorded graph as a Graphviz DOT file.
//
//   write_dot(loss, "graph.dot");   then:   dot -Tpng graph.dot -o graph.png
//
// Ops are ellipses labelled with the node name and output shape; leaves that
// require grad are boxes labelled with their name (set_name) and shape.
// Arrows point from inputs to the op that used them, in forward direction.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace nc {

std::string to_dot(const Tensor& root);
void write_dot(const Tensor& root, const std::string& path);
// The same graph as a labelled cluster to put inside a larger digraph, its
// node ids prefixed with `id_prefix` so that several graphs can sit side by
// side (chapter 4 draws the five placements this way).
std::string to_dot_cluster(const Tensor& root, const std::string& id_prefix, const std::string& label);

}  // namespace nc
