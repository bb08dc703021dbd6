#include "runtime/registry.h"

#include "ops/ops.h"

namespace onnx_mini {

const std::vector<OpDef>& AllOps() {
  static const std::vector<OpDef> all = [] {
    std::vector<OpDef> rows;
    for (auto family : kOpFamilies) {
      std::vector<OpDef> more = family();
      rows.insert(rows.end(), more.begin(), more.end());
    }
    return rows;
  }();
  return all;
}

absl::StatusOr<const OpDef*> FindOp(const Node& node) {
  for (const OpDef& def : AllOps()) {
    if (node.domain != def.domain || node.op_type != def.op_type) continue;
    if (node.opset >= def.since_version && (def.last_version == 0 || node.opset <= def.last_version))
      return &def;
  }
  return NotImplemented(node, "");
}

absl::Status NotImplemented(const Node& node, const std::string& what) {
  return absl::UnimplementedError(absl::StrCat("not implemented: ", DomainName(node.domain), "::",
                                               node.op_type, " opset ", node.opset,
                                               what.empty() ? "" : " for ", what));
}

absl::Status NotImplemented(const Node& node, DType dtype) {
  return NotImplemented(node, LowerName(dtype));
}

}  // namespace onnx_mini
