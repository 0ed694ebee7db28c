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

}  // namespace nc
