#include "runtime/session/infer.h"

#include <new>
#include <vector>

#include "absl/strings/str_cat.h"

#include "runtime/session/impl.h"

namespace onnx_mini {

namespace {

GraphTypes TypesOf(const Session::Impl& impl) {
  GraphTypes out;
  for (size_t v = 0; v < impl.value_names.size(); ++v) {
    out.types.emplace(impl.value_names[v], impl.value_types[v]);
    if (impl.constants[v].defined()) out.constants.emplace(impl.value_names[v], impl.constants[v]);
  }
  return out;
}

// The plans of `sub` among `impl`'s subgraphs, at any depth.
void FindPlans(const Session::Impl& impl, const Graph& sub, std::vector<const Session::Impl*>& found) {
  for (const auto& child : impl.subgraphs) {
    if (child->graph == &sub) found.push_back(child.get());
    FindPlans(*child, sub, found);
  }
}

absl::StatusOr<GraphTypes> Infer(const Graph& graph, const Graph* sub, const OpRegistry& ops) {
  Session::Impl impl;
  impl.graph = &graph;
  impl.ops = &ops;
  impl.types_only = true;
  impl.relax_loop_inputs = sub != nullptr;
  try {
    RETURN_IF_ERROR(impl.Build());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while inferring the graph's types");
  }
  if (sub == nullptr) return TypesOf(impl);
  std::vector<const Session::Impl*> found;
  FindPlans(impl, *sub, found);
  if (found.size() != 1)
    return absl::NotFoundError(absl::StrCat("subgraph '", sub->name, "' is planned ", found.size(), " times"));
  return TypesOf(*found[0]);
}

}  // namespace

absl::StatusOr<GraphTypes> InferGraphTypes(const Graph& graph, const OpRegistry& ops) {
  return Infer(graph, nullptr, ops);
}

absl::StatusOr<GraphTypes> InferSubgraphTypes(const Graph& root, const Graph& sub, const OpRegistry& ops) {
  return Infer(root, &sub, ops);
}

}  // namespace onnx_mini
