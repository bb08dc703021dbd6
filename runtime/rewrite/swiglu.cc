// The gated MLP activation:
//   SwiGLU    Mul(Swish(g), u) (either order) -> SwiGLU(g, u) (opset 28, Swish's
//             alpha), one pass over g and u where Swish and Mul took two
//             (Swish's output written, then read back with u). SwiGLU does not
//             broadcast: g and u must have the same shape in every run, which
//             holds when both dims are known and equal, or when both are
//             MatMuls of the same A by constant 2-D weights of one shape (the
//             Llama MLP's gate and up projections).

#include <algorithm>

#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

// g and u have the same shape whatever the run's inputs.
bool SameShapeAlways(const Index& ix, const std::string& g, const std::string& u) {
  const std::optional<Dims> dg = ix.DimsOf(g), du = ix.DimsOf(u);
  if (dg && du && *dg == *du && std::all_of(dg->begin(), dg->end(), [](int64_t d) { return d >= 0; })) return true;
  const Node* mg = ix.Producer(g, "MatMul");
  const Node* mu = ix.Producer(u, "MatMul");
  if (!mg || !mu || mg->inputs.size() != 2 || mu->inputs.size() != 2 || mg->inputs[0] != mu->inputs[0]) return false;
  const Tensor* bg = ix.Constant(mg->inputs[1]);
  const Tensor* bu = ix.Constant(mu->inputs[1]);
  return bg && bu && bg->shape().size() == 2 && bg->shape() == bu->shape();
}

}  // namespace

bool RewriteSwiGlu(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Mul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& s = node.inputs[size_t(side)];
    const std::string u = node.inputs[size_t(1 - side)];
    size_t i_swish;
    const Node* swish = ix.Inner(s) ? ix.Producer(s, "Swish", &i_swish) : nullptr;
    if (!swish || swish->inputs.size() != 1 || swish->inputs[0].empty() || u == s) continue;
    const ValueType* tg = ix.Type(swish->inputs[0]);
    const ValueType* tu = ix.Type(u);
    if (!tg || !tu || !tg->is_tensor() || !tu->is_tensor() || tg->dtype != tu->dtype) continue;
    if (!SameShapeAlways(ix, swish->inputs[0], u)) continue;
    const std::string gate = swish->inputs[0];
    auto attributes = swish->attributes;  // alpha, if given
    dead[i_swish] = true;
    node.op_type = "SwiGLU";
    node.opset = 28;
    node.inputs = {gate, u};
    node.attributes = std::move(attributes);
    return true;
  }
  return false;
}

}  // namespace rewrite
}  // namespace onnx_mini
