// Shapes exporters compute at run time that inference can prove.
//
// Reshape(x, s) (allowzero 0) with s computed (HF's head split [bsz, q_len,
// H, D] and merge [bsz, q_len, H * D], bsz and q_len read from the hidden
// states' Shape) whose output dims the session's inference knows (its
// DimsValue: entries read from shapes) each as a value, or as x's own dim at
// the same place (the same symbol, or the same known value) -> Reshape(x,
// constant): the value (not 0, which would read as "copy"), or 0 for x's own
// dim. The Shape chain then goes unread (Index::DropUnread, the same pass).
// Any dim not so proved keeps the Reshape as written.

#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {

bool RewriteReshapeShape(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  (void)dead;
  Node& node = g.nodes[n];
  if (node.op_type != "Reshape" || !node.domain.empty() || node.opset < 5 || !Binary(node) ||
      node.outputs.size() != 1 || node.attr_int("allowzero", 0) != 0 || ix.Constant(node.inputs[1]))
    return false;
  const ValueType* xt = ix.Type(node.inputs[0]);
  const ValueType* yt = ix.Type(node.outputs[0]);
  if (!xt || !yt || !xt->is_tensor() || !yt->is_tensor() || !yt->dims || yt->dims->empty()) return false;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < yt->dims->size(); ++i) {
    const Dim& d = (*yt->dims)[i];
    const Dim* xd = xt->dims && i < xt->dims->size() ? &(*xt->dims)[i] : nullptr;
    if (d.known() && d.value > 0) shape.push_back(d.value);
    else if (xd && ((d.known() && xd->known() && d.value == xd->value) ||
                    (!d.known() && !d.symbol.empty() && d.symbol == xd->symbol)))
      shape.push_back(0);  // x's own dim there
    else return false;
  }
  const std::string name = node.outputs[0] + "/shape";
  if (g.initializers.count(name)) return false;
  g.initializers[name] = Tensor::FromVector(shape, {int64_t(shape.size())});
  node.inputs[1] = name;
  return true;
}

}  // namespace rewrite
}  // namespace onnx_mini
