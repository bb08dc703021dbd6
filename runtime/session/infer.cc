#include "runtime/session/infer.h"

#include <new>

#include "runtime/session/impl.h"

namespace onnx_mini {

absl::StatusOr<GraphTypes> InferGraphTypes(const Graph& graph, const OpRegistry& ops) {
  Session::Impl impl;
  impl.graph = &graph;
  impl.ops = &ops;
  impl.types_only = true;
  try {
    RETURN_IF_ERROR(impl.Build());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while inferring the graph's types");
  }
  GraphTypes out;
  for (size_t v = 0; v < impl.value_names.size(); ++v) {
    out.types.emplace(impl.value_names[v], impl.value_types[v]);
    if (impl.constants[v].defined()) out.constants.emplace(impl.value_names[v], impl.constants[v]);
  }
  return out;
}

}  // namespace onnx_mini
