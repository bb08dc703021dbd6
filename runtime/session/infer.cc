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

struct SubgraphTypes::State {
  Session::Impl impl;
  absl::Status built;
};

SubgraphTypes::SubgraphTypes(const Graph& root, const OpRegistry& ops) : root_(root), ops_(ops) {}
SubgraphTypes::~SubgraphTypes() = default;

void SubgraphTypes::Infer() {
  if (!state_) {
    state_ = std::make_unique<State>();
    Session::Impl& impl = state_->impl;
    impl.graph = &root_;
    impl.ops = &ops_;
    impl.types_only = true;
    impl.relax_loop_inputs = true;
    try {
      state_->built = impl.Build();
    } catch (const std::bad_alloc&) {
      state_->built = absl::ResourceExhaustedError("out of memory while inferring the graph's types");
    }
  }
}

absl::StatusOr<GraphTypes> SubgraphTypes::Types(const Graph& planned, const Graph& current, bool changed) {
  Infer();
  RETURN_IF_ERROR(state_->built);
  std::vector<const Session::Impl*> found;
  FindPlans(state_->impl, planned, found);
  if (found.size() != 1)
    return absl::NotFoundError(absl::StrCat("subgraph '", planned.name, "' is planned ", found.size(), " times"));
  if (!changed) return TypesOf(*found[0]);
  // The copy alone, in the original's place: a plan its parent owns no longer
  // than this call (the parent's own steps never see it).
  auto* parent = const_cast<Session::Impl*>(found[0]->parent);
  const size_t before = parent->subgraphs.size();
  absl::StatusOr<const Subgraph*> plan;
  try {
    plan = parent->Plan(*found[0]->owner, current, found[0]->given_types);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while inferring the graph's types");
  }
  if (!plan.ok()) return plan.status();
  GraphTypes out = TypesOf(*parent->subgraphs.back());
  parent->subgraphs.resize(before);
  return out;
}

}  // namespace onnx_mini
