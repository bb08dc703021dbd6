// Quantized weights in the standard spelling:
//   DQ+MatMul  MatMul(A, DequantizeLinear(x, scale, zero_point?)) with x a
//              constant [K, N] int4/uint4/int8/uint8/int2/uint2 weight
//              quantized in blocks along K (opset 21+: axis 0, block_size a
//              power of 2 >= 16), scale [ceil(K / block), N] and zero_point
//              constants -> onnx_mini::DequantizeMatMul(A, x, scale, zero_point?)
//              (internal op, ops/contrib/matmul_nbits.cc: packed once at
//              Prepare into quantized panels, its originals released, so the
//              float weight is never made; 4- and 8-bit weights at
//              RewriteOptions::dq_matmul_accuracy_level, by default 4 as in
//              onnxruntime: A rounded to int8 per block)

#include "runtime/op.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {

bool RewriteDequantizeMatMul(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "MatMul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  size_t i_dq;
  const Node* dq = ix.Inner(node.inputs[1]) ? ix.Producer(node.inputs[1], "DequantizeLinear", &i_dq) : nullptr;
  if (!dq || dq->opset < 21 || dq->inputs.size() < 2 || dq->outputs.size() != 1) return false;
  const int64_t block = dq->attr_int("block_size", 0);
  const int64_t axis = dq->attr_int("axis", 1);
  if (block < 16 || (block & (block - 1)) != 0 || (axis != 0 && axis != -2)) return false;
  const bool has_zero = dq->inputs.size() > 2 && !dq->inputs[2].empty();
  const Tensor* x = ix.Constant(dq->inputs[0]);
  const Tensor* scale = ix.Constant(dq->inputs[1]);
  const Tensor* zero = has_zero ? ix.Constant(dq->inputs[2]) : nullptr;
  if (!x || !scale || (has_zero && !zero) || x->shape().size() != 2) return false;
  const DType q = x->dtype(), t = scale->dtype();
  if (q != DType::kInt4 && q != DType::kUInt4 && q != DType::kInt8 && q != DType::kUInt8 && q != DType::kInt2 &&
      q != DType::kUInt2)
    return false;
  if (t != DType::kFloat && t != DType::kFloat16 && t != DType::kBFloat16) return false;
  const int64_t out_dtype = dq->attr_int("output_dtype", 0);
  if (out_dtype != 0 && out_dtype != int64_t(t)) return false;
  const int64_t k = x->shape()[0], cols = x->shape()[1], kb = (k + block - 1) / block;
  if (scale->shape() != Shape{kb, cols} || (zero && (zero->shape() != Shape{kb, cols} || zero->dtype() != q)))
    return false;
  // A of the scale's type whose last dim is known to be K.
  const std::optional<Dims> a = ix.DimsOf(node.inputs[0]);
  const ValueType* ta = ix.Type(node.inputs[0]);
  if (!a || a->empty() || a->back() != k || !ta || ta->dtype != t) return false;
  const std::string input = node.inputs[0];
  std::vector<std::string> inputs = {input, dq->inputs[0], dq->inputs[1]};
  if (zero) inputs.push_back(dq->inputs[2]);
  dead[i_dq] = true;
  node.op_type = "DequantizeMatMul";
  node.domain = kInternalDomain;
  node.opset = 1;
  node.inputs = std::move(inputs);
  node.attributes = {{"block_size", IntAttr("block_size", block)}};
  // onnxruntime fuses 4- and 8-bit weights into MatMulNBits at its
  // session's accuracy level; 2-bit ones it multiplies in float.
  if (q != DType::kInt2 && q != DType::kUInt2)
    node.attributes["accuracy_level"] = IntAttr("accuracy_level", ix.options().dq_matmul_accuracy_level);
  return true;
}

}  // namespace rewrite
}  // namespace onnx_mini
