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
//   SDPA      MatMul(Softmax(M(S), last axis), V') with S = MatMul(Q,
//             Transpose(K', [0, 1, 3, 2])) divided by a constant c (scale
//             1/c), times a constant c (scale c) or as is (scale 1), and M(S)
//             Where(mask, S, c) (c a constant <= -1e30 or -inf), Add(S, mask)
//             (either order) or S -> Attention(Q, K, V, mask, scale) (opset 23).
//             K', V' = Reshape(Expand(Unsqueeze(K, [2]), [1, 1, G, 1, 1]),
//             [0 | B, KV * G, -1 | T, D]), both with the same G, each KV head
//             repeated G times in a row, are taken as the GQA repeat
//             (Attention gets K, V) when K's KV heads and head size D are
//             known and Q has KV * G heads (or, unknown, KV > 1); otherwise
//             Attention gets K', V' as they are. Q must be known 4-D and the
//             mask of rank 1 to 4 (ranks and dims known from graph inputs,
//             constants, and the shapes of Reshape, Transpose, Concat, ...).
//             Results are the same but for rounding, except: rows where the
//             mask hides every key give 0 (Attention's rule) where the
//             pattern gives the mean of V's rows (finite c) or NaN (-inf);
//             with finite c, hidden keys weigh exp(c - max) = 0 unless every
//             visible score of the row is below about c + 100. Shapes the
//             pattern broadcasts but Attention does not take (a Q or K batch
//             of 1 against more, a mask wider than the scores) are refused
//             by Attention when the session runs, never computed otherwise.
#pragma once

#include "runtime/graph.h"

namespace onnx_mini {

// Applies the rewrites to `graph` (not to its subgraphs). Returns how many
// patterns were rewritten.
int RewriteGraph(Graph& graph);

}  // namespace onnx_mini
