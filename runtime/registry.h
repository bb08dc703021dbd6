// The op registry: every op implementation, keyed by (domain, op_type,
// version range). The model's opset import picks the row.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "runtime/op.h"

namespace onnx_mini {

// All rows, gathered from the per-family tables in ops/.
const std::vector<OpDef>& AllOps();

// The row that implements `node` at its opset, or a "not implemented" error.
absl::StatusOr<const OpDef*> FindOp(const Node& node);

}  // namespace onnx_mini
