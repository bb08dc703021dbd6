// The session's own inference as a function of a graph: what the rewrites
// (runtime/rewrite/) read shapes and constants from, so that a rule never
// depends on a list of ops of its own.
#pragma once

#include <map>
#include <memory>
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

// InferSubgraphTypes for many subgraphs of one model, and for each again as
// the rewrites change it, without inferring the model each time: the model's
// graph is inferred once (at the first ask), a subgraph as planned there
// gives its types at once, and a copy of it with changes is planned alone in
// the place the original has (its outer scopes as inferred, the types its
// node gave the original's inputs). Valid while the outer scopes keep their
// values' types and constants (the rewrites' fused nodes keep their
// patterns' types; a value a subgraph reads stays), and while the root and
// each `planned` graph live.
class SubgraphTypes {
 public:
  SubgraphTypes(const Graph& root, const OpRegistry& ops);
  ~SubgraphTypes();
  // Infers the model's graph now (once): before any of its subgraphs is
  // replaced by a copy, whose original must be the one planned.
  void Infer();
  // The types of `current`: `planned` itself when `changed` is false, else a
  // changed copy of it to plan in its place. NotFound as InferSubgraphTypes.
  absl::StatusOr<GraphTypes> Types(const Graph& planned, const Graph& current, bool changed);

 private:
  struct State;
  const Graph& root_;
  const OpRegistry& ops_;
  std::unique_ptr<State> state_;
};

}  // namespace onnx_mini
