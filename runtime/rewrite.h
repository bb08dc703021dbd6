// Graph rewrites at session creation: the decomposed patterns exporters write,
// replaced by the fused kernels that compute the same thing faster. They run
// on the loaded graph before the session plans it (SessionOptions::
// graph_rewrites turns them off). A pattern is rewritten only when every
// value inside it has no other reader (no other node, no subgraph) and is not
// a graph output, and its constants have the values the fused kernel needs;
// the fused node keeps the pattern's output name, so the rest of the graph
// is untouched.
//
// The table (RewriteGraph applies them until none matches):
//   RMSNorm   x * 1/Sqrt(ReduceMean(x^2, [-1]) + eps) * w, with x^2 as Pow(x, 2)
//             or Mul(x, x), 1/Sqrt(.) as Reciprocal(Sqrt(.)) or Div(1, Sqrt(.)),
//             or x / Sqrt(.), and w a constant 1-D scale
//             -> RMSNormalization(x, w, axis = -1, epsilon = eps)
//   LayerNorm (x - m) / Sqrt(ReduceMean((x - m)^2, [-1]) + eps) * g + b with
//             m = ReduceMean(x, [-1]), the square as Pow(., 2) or Mul, g and b
//             constant 1-D (either operand order)
//             -> LayerNormalization(x, g, b, axis = -1, epsilon = eps)
//   SiLU      Mul(x, Sigmoid(x)) (either order) -> Swish(x) (opset 24, alpha 1)
//   MatMul+b  Add(MatMul(A, W), b) (either order), W a constant matrix, b a
//             constant vector of W's columns -> onnx_mini::FusedMatMul(A, W, b)
//             (internal op, ops/matmul.cc: the GEMM adds the bias)
//   Pow2      Pow(x, c) with c a constant scalar 2 -> Mul(x, x)
#pragma once

#include "runtime/graph.h"

namespace onnx_mini {

// Applies the rewrites to `graph` (not to its subgraphs). Returns how many
// patterns were rewritten.
int RewriteGraph(Graph& graph);

}  // namespace onnx_mini
