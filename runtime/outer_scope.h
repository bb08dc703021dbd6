// Outer-scope names: what a subgraph reads from the graphs around it. One
// definition for the session (order, lifetimes, captures) and the rewrites
// (a value a subgraph reads has a reader the pattern does not see).
#pragma once

#include <set>
#include <string>

#include "runtime/graph.h"

namespace onnx_mini {

// The names a graph reads from outer scopes: read by its nodes (or by their
// subgraphs) or listed as its outputs, and defined nowhere inside it.
void FreeNames(const Graph& g, std::set<std::string>& out);

// The names a node's subgraphs read from the node's scope.
std::set<std::string> ImplicitInputs(const Node& node);

}  // namespace onnx_mini
