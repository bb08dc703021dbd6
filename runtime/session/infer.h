// The session's own inference as a function of a graph: what the rewrites
// (runtime/rewrite/) read shapes and constants from, so that a rule never
// depends on a list of ops of its own.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/graph.h"

namespace onnx_mini {

class OpRegistry;

// What is known of a graph's values before running.
struct GraphTypes {
  // Every value of the graph (inputs, initializers, node outputs): kind,
  // element type, dims (known, symbolic or unknown), as Session::Create infers
  // them (each node's Op::Infer over its row, declared types merged).
  std::map<std::string, ValueType> types;
  // The values known before running: initializers, Constant nodes, and what
  // the session's constant folding computes (a shape built from Shape,
  // Gather and Concat of static shapes, say).
  std::map<std::string, Tensor> constants;
};

// Infers `graph` as Session::Create would, without preparing any kernel (no
// packed weights) or planning storage. An error is the one Session::Create
// would give for the graph.
absl::StatusOr<GraphTypes> InferGraphTypes(const Graph& graph, const OpRegistry& ops);

// The same for `sub`, a subgraph (at any depth) of `root`'s nodes, as the
// session plans it inside `root`: outer-scope values it reads keep their
// types, and the constants among them are constants here. A body's inputs
// (Loop, Scan, SequenceMap) are taken with their element types only (a
// carried value may change shape from one iteration to the next, where the
// plan sees the first). NotFound when `sub` is not planned exactly once (a branch the
// session folds away, say).
absl::StatusOr<GraphTypes> InferSubgraphTypes(const Graph& root, const Graph& sub, const OpRegistry& ops);

}  // namespace onnx_mini
