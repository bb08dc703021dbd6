// The 8-bit product as onnxruntime's dynamic quantizer writes it (transformers.js q8):
//   Int8MatMul  Mul(Cast(MatMulInteger(DynamicQuantizeLinear(A).y, W, .zero_point, w_zero?), to float),
//                   Mul(.scale, w_scale)) (either order in each Mul), W a constant int8 or uint8
//               matrix, w_scale and w_zero constants of one value or one per column of W (rank <= 1)
//               -> com.microsoft DynamicQuantizeMatMul(A, W, w_scale, w_zero?)
//               (ops/contrib/quantized_matmul.cc: W packed once, one pass instead of four). The
//               same quantization of A, the same exact integer sums, the same float product of
//               the scales: the same values. DynamicQuantizeLinear stays while other nodes read
//               it (the Q, K and V projections share one); once none does it goes
//               (Index::DropUnread, at the end of the pass).
//   Int8MatMul+b  Add(that product, b) (either order), b a constant float vector of W's columns
//               -> DynamicQuantizeMatMul(A, W, w_scale, w_zero, b) (its kernel adds the bias)

#include "runtime/op.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

// A constant of one value, or 1-D of n (one per column).
bool PerTensorOrColumn(const Tensor* t, int64_t n) {
  return t && t->shape().size() <= 1 && (t->size() == 1 || t->size() == n);
}

// The q8 pattern ending at Mul node `mul_out` (its value `y`), matched.
struct Q8Match {
  std::string a, w, w_scale, w_zero;
  int64_t cols = 0;
  size_t i_cast = 0, i_mmi = 0, i_mul = 0, i_dql = 0;
  bool dql_inner = false;  // the quantized A's readers are all in this pattern
};

bool MatchQ8(const Index& ix, const Node& node, Q8Match& q) {
  if (node.op_type != "Mul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& c = node.inputs[size_t(side)];
    const std::string& s = node.inputs[size_t(1 - side)];
    const Node* cast = ix.Inner(c) ? ix.Producer(c, "Cast", &q.i_cast) : nullptr;
    if (!cast || cast->inputs.size() != 1 || cast->attr_int("to", 0) != int64_t(DType::kFloat)) continue;
    const Node* mmi = ix.Inner(cast->inputs[0]) ? ix.Producer(cast->inputs[0], "MatMulInteger", &q.i_mmi) : nullptr;
    if (!mmi || mmi->inputs.size() < 3 || mmi->inputs[0].empty() || mmi->inputs[2].empty()) continue;
    const Node* dql = ix.Producer(mmi->inputs[0], "DynamicQuantizeLinear", &q.i_dql);
    if (!dql || dql->inputs.size() != 1 || dql->outputs.size() != 3 || dql->outputs[0] != mmi->inputs[0] ||
        dql->outputs[2] != mmi->inputs[2])
      continue;
    const Node* mul = ix.Inner(s) ? ix.Producer(s, "Mul", &q.i_mul) : nullptr;
    if (!mul || !Binary(*mul)) continue;
    const int scale_side = mul->inputs[0] == dql->outputs[1] ? 0 : mul->inputs[1] == dql->outputs[1] ? 1 : -1;
    if (scale_side < 0) continue;
    q.w_scale = mul->inputs[size_t(1 - scale_side)];
    q.w = mmi->inputs[1];
    q.w_zero = mmi->inputs.size() > 3 ? mmi->inputs[3] : "";
    const Tensor* wt = ix.Constant(q.w);
    if (!wt || wt->shape().size() != 2 || (wt->dtype() != DType::kInt8 && wt->dtype() != DType::kUInt8)) continue;
    q.cols = wt->shape()[1];
    const Tensor* st = ix.Constant(q.w_scale);
    if (!PerTensorOrColumn(st, q.cols) || st->dtype() != DType::kFloat) continue;
    if (!q.w_zero.empty() && !PerTensorOrColumn(ix.Constant(q.w_zero), q.cols)) continue;
    q.a = dql->inputs[0];
    q.dql_inner = ix.Inner(dql->outputs[0]) && ix.Inner(dql->outputs[1]) && ix.Inner(dql->outputs[2]);
    return true;
  }
  return false;
}

// Node n becomes DynamicQuantizeMatMul over the match (and `bias`, when given).
void Fuse(Graph& g, size_t n, const Q8Match& q, const std::string& bias, std::vector<bool>& dead) {
  dead[q.i_cast] = dead[q.i_mmi] = dead[q.i_mul] = true;
  if (q.dql_inner) dead[q.i_dql] = true;
  Node& node = g.nodes[n];
  node.op_type = "DynamicQuantizeMatMul";
  node.domain = kMsDomain;
  node.opset = 1;
  node.inputs = {q.a, q.w, q.w_scale};
  if (!q.w_zero.empty() || !bias.empty()) node.inputs.push_back(q.w_zero);
  if (!bias.empty()) node.inputs.push_back(bias);
  node.attributes.clear();
}

}  // namespace

bool RewriteInt8MatMul(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Q8Match q;
  if (!MatchQ8(ix, g.nodes[n], q)) return false;
  Fuse(g, n, q, "", dead);
  return true;
}

// Add(q8 product, b) (either order), b a constant float vector of W's
// columns: the bias goes into DynamicQuantizeMatMul (its kernel adds it).
bool RewriteInt8MatMulBias(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  const Node& node = g.nodes[n];
  if (node.op_type != "Add" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& y = node.inputs[size_t(side)];
    const std::string b = node.inputs[size_t(1 - side)];
    size_t i_mul = 0;
    const Node* mul = ix.Inner(y) ? ix.Producer(y, "Mul", &i_mul) : nullptr;
    Q8Match q;
    if (!mul || !MatchQ8(ix, *mul, q)) continue;
    const Tensor* bias = ix.Constant(b);
    if (!bias || bias->dtype() != DType::kFloat || bias->shape() != Shape{q.cols}) continue;
    dead[i_mul] = true;
    Fuse(g, n, q, b, dead);
    return true;
  }
  return false;
}

}  // namespace rewrite
}  // namespace onnx_mini
