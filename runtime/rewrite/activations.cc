// The activations:
//   SiLU      Mul(x, Sigmoid(x)) (either order) -> Swish(x) (opset 24, alpha 1)
//   Pow2      Pow(x, c) with c a constant scalar 2 -> Mul(x, x)

#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {

// Pow(x, 2) -> Mul(x, x): a multiply instead of the libm call.
bool RewritePow2(Graph& g, const Index& ix, size_t n, std::vector<bool>&) {
  Node& node = g.nodes[n];
  if (node.op_type != "Pow" || !node.domain.empty() || !Binary(node) || !ix.ConstantIs(node.inputs[1], 2, true))
    return false;
  node.op_type = "Mul";
  node.inputs[1] = node.inputs[0];
  node.attributes.clear();
  return true;
}

// SiLU: Mul(x, Sigmoid(x)) or Mul(Sigmoid(x), x) -> Swish(x) (alpha 1), one
// pass over the data instead of two.
bool RewriteSilu(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Mul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& s = node.inputs[size_t(side)];
    const std::string x = node.inputs[size_t(1 - side)];
    size_t i_sig;
    const Node* sig = ix.Inner(s) ? ix.Producer(s, "Sigmoid", &i_sig) : nullptr;
    if (!sig || sig->inputs.size() != 1 || sig->inputs[0] != x) continue;
    dead[i_sig] = true;
    node.op_type = "Swish";
    node.opset = 24;
    node.inputs = {x};
    node.attributes.clear();
    return true;
  }
  return false;
}

}  // namespace rewrite
}  // namespace onnx_mini
