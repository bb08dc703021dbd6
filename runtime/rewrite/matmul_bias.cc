// MatMul + bias:
//   MatMul+b  Add(MatMul(A, W), b) (either order), W a constant matrix, b a
//             constant vector of W's columns -> onnx_mini::FusedMatMul(A, W, b)
//             (internal op, ops/math/matmul.cc: the GEMM adds the bias)

#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {

// MatMul + bias: Add(MatMul(A, W), b) (either order), W a constant matrix and
// b a constant vector of its N columns -> onnx_mini::FusedMatMul(A, W, b):
// the bias added by the GEMM (ops/math/matmul.cc), not by a second pass.
bool RewriteMatMulBias(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Add" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& y = node.inputs[size_t(side)];
    const std::string b = node.inputs[size_t(1 - side)];
    size_t i_mm;
    const Node* mm = ix.Inner(y) ? ix.Producer(y, "MatMul", &i_mm) : nullptr;
    if (!mm || !Binary(*mm)) continue;
    const Tensor* w = ix.Constant(mm->inputs[1]);
    const Tensor* bias = ix.Constant(b);
    if (!w || !bias || w->shape().size() != 2 || bias->shape().size() != 1 || bias->size() != w->shape()[1] ||
        bias->dtype() != w->dtype())
      continue;
    const std::string a = mm->inputs[0], weight = mm->inputs[1];
    dead[i_mm] = true;
    node.op_type = "FusedMatMul";
    node.domain = "onnx_mini";
    node.opset = 1;
    node.inputs = {a, weight, b};
    node.attributes.clear();
    return true;
  }
  return false;
}

}  // namespace rewrite
}  // namespace onnx_mini
