// The 8-bit product as onnxruntime's dynamic quantizer writes it (transformers.js q8):
//   Int8MatMul  Mul(Cast(MatMulInteger(DynamicQuantizeLinear(A).y, W, .zero_point, w_zero?), to float),
//                   Mul(.scale, w_scale)) (either order in each Mul), W a constant int8 or uint8
//               matrix, w_scale and w_zero constants of one value or one per column of W (rank <= 1)
//               -> com.microsoft DynamicQuantizeMatMul(A, W, w_scale, w_zero?)
//               (ops/contrib/quantized_matmul.cc: W packed once, one pass instead of four). The
//               same quantization of A, the same exact integer sums, the same float product of
//               the scales: the same values. DynamicQuantizeLinear stays while other nodes read
//               it (the Q, K and V projections share one); once none does it goes (below).
//   Unread DynamicQuantizeLinear: one whose outputs nobody reads any more is dropped.

#include "runtime/op.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

// A constant of one value, or 1-D of n (one per column).
bool PerTensorOrColumn(const Tensor* t, int64_t n) {
  return t && t->shape().size() <= 1 && (t->size() == 1 || t->size() == n);
}

}  // namespace

bool RewriteInt8MatMul(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Mul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& c = node.inputs[size_t(side)];
    const std::string& s = node.inputs[size_t(1 - side)];
    size_t i_cast, i_mmi, i_mul, i_dql;
    const Node* cast = ix.Inner(c) ? ix.Producer(c, "Cast", &i_cast) : nullptr;
    if (!cast || cast->inputs.size() != 1 || cast->attr_int("to", 0) != int64_t(DType::kFloat)) continue;
    const Node* mmi = ix.Inner(cast->inputs[0]) ? ix.Producer(cast->inputs[0], "MatMulInteger", &i_mmi) : nullptr;
    if (!mmi || mmi->inputs.size() < 3 || mmi->inputs[0].empty() || mmi->inputs[2].empty()) continue;
    const Node* dql = ix.Producer(mmi->inputs[0], "DynamicQuantizeLinear", &i_dql);
    if (!dql || dql->inputs.size() != 1 || dql->outputs.size() != 3 || dql->outputs[0] != mmi->inputs[0] ||
        dql->outputs[2] != mmi->inputs[2])
      continue;
    const Node* mul = ix.Inner(s) ? ix.Producer(s, "Mul", &i_mul) : nullptr;
    if (!mul || !Binary(*mul)) continue;
    const int scale_side = mul->inputs[0] == dql->outputs[1] ? 0 : mul->inputs[1] == dql->outputs[1] ? 1 : -1;
    if (scale_side < 0) continue;
    const std::string w_scale = mul->inputs[size_t(1 - scale_side)];
    const std::string w = mmi->inputs[1];
    const std::string w_zero = mmi->inputs.size() > 3 ? mmi->inputs[3] : "";
    const Tensor* wt = ix.Constant(w);
    if (!wt || wt->shape().size() != 2 || (wt->dtype() != DType::kInt8 && wt->dtype() != DType::kUInt8)) continue;
    const int64_t cols = wt->shape()[1];
    const Tensor* st = ix.Constant(w_scale);
    if (!PerTensorOrColumn(st, cols) || st->dtype() != DType::kFloat) continue;
    if (!w_zero.empty() && !PerTensorOrColumn(ix.Constant(w_zero), cols)) continue;
    const std::string a = dql->inputs[0];
    dead[i_cast] = dead[i_mmi] = dead[i_mul] = true;
    // The quantized A's readers were all in this pattern: it goes with it.
    if (ix.Inner(dql->outputs[0]) && ix.Inner(dql->outputs[1]) && ix.Inner(dql->outputs[2])) dead[i_dql] = true;
    node.op_type = "DynamicQuantizeMatMul";
    node.domain = kMsDomain;
    node.opset = 1;
    node.inputs = {a, w, w_scale};
    if (!w_zero.empty()) node.inputs.push_back(w_zero);
    node.attributes.clear();
    return true;
  }
  return false;
}

// A DynamicQuantizeLinear left without readers by RewriteInt8MatMul (a
// pass later, when the last of the products sharing it was rewritten).
bool RewriteUnreadDynamicQuantize(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  const Node& node = g.nodes[n];
  if (node.op_type != "DynamicQuantizeLinear" || !node.domain.empty()) return false;
  for (const std::string& o : node.outputs)
    if (!o.empty() && (ix.Uses(o) > 0 || ix.IsOutput(o))) return false;
  dead[n] = true;
  return true;
}

}  // namespace rewrite
}  // namespace onnx_mini
