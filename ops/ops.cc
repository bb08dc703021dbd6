#include "ops/ops.h"

#include <cstdio>

namespace onnx_mini {

absl::Status RegisterBuiltinOps(OpRegistry& registry) {
  for (auto family : kOpFamilies)
    for (OpDef& def : family()) RETURN_IF_ERROR(registry.Add(std::move(def)));
  return absl::OkStatus();
}

const OpRegistry& BuiltinOps() {
  static const OpRegistry* const builtin = [] {
    auto* registry = new OpRegistry();
    const absl::Status s = RegisterBuiltinOps(*registry);
    // Only a programming error gets here, and a test catches it; the rows
    // added before it stay usable.
    if (!s.ok()) std::fprintf(stderr, "onnx-mini: built-in op table: %s\n", s.ToString().c_str());
    return registry;
  }();
  return *builtin;
}

}  // namespace onnx_mini
