// Graph rewrites at session creation: the decomposed patterns exporters write,
// replaced by the fused kernels that compute the same thing faster. They run
// on the loaded graph before the session plans it (SessionOptions::
// graph_rewrites turns them off). A rewrite gives the answer of the graph as
// written (up to rounding; for finite inputs whose scores do not overflow)
// or does not fire. A pattern is rewritten only when every value inside it
// has no other reader (no other node, no subgraph) and is not a graph
// output, its constants have the values the fused kernel needs, and the
// shapes the fused op needs are known before running (the same in every
// run); the fused node keeps the pattern's output name, so the rest of the
// graph is untouched, and takes the name of the pattern's last node, so
// that errors name a node of the model (or, unnamed, its output).
//
// The table (RewriteGraph applies them until none matches):
//   RMSNorm   x * 1/Sqrt(ReduceMean(x^2, [-1]) + eps) * w, with x^2 as Pow(x, 2)
//             or Mul(x, x), 1/Sqrt(.) as Reciprocal(Sqrt(.)) or Div(1, Sqrt(.)),
//             or x / Sqrt(.), and w a constant 1-D scale whose length is x's
//             last dim, known before running (a last dim known only at run
//             time could be 1, which the pattern broadcasts against w and the
//             fused op refuses)
//             -> RMSNormalization(x, w, axis = -1, epsilon = eps)
//   LayerNorm (x - m) / Sqrt(ReduceMean((x - m)^2, [-1]) + eps) * g + b with
//             m = ReduceMean(x, [-1]), the square as Pow(., 2) or Mul, g and b
//             constant 1-D of x's last dim, known before running (either
//             operand order)
//             -> LayerNormalization(x, g, b, axis = -1, epsilon = eps)
//   SiLU      Mul(x, Sigmoid(x)) (either order) -> Swish(x) (opset 24, alpha 1)
//   MatMul+b  Add(MatMul(A, W), b) (either order), W a constant matrix, b a
//             constant vector of W's columns -> onnx_mini::FusedMatMul(A, W, b)
//             (internal op, ops/math/matmul.cc: the GEMM adds the bias)
//   Pow2      Pow(x, c) with c a constant scalar 2 -> Mul(x, x)
//   SDPA      MatMul(Softmax(M(S), last axis), V') with S = MatMul(Q,
//             Transpose(K', [0, 1, 3, 2])) divided by a constant c (scale
//             1/c), times a constant c (scale c) or as is (scale 1), and M(S)
//             Where(mask, S, c) (c a constant <= -1e30 or -inf), Add(S, mask)
//             (either order) or S -> onnx_mini::Attention(Q, K, V, mask;
//             scale, kv_repeat, masked_rows) (internal op, ops/llm/attention.cc).
//             K', V' = Reshape(Expand(Unsqueeze(K, [2]), [1, 1, G, 1, 1]),
//             [0 | B, KV * G, -1 | T, D]), both with the same G and K's KV
//             heads and head size D known, each KV head repeated G times in
//             a row, are taken as the GQA repeat (the op gets K, V and
//             kv_repeat G); otherwise the op gets K', V' as they are, which
//             must be known 4-D with the same known head count. Q must be
//             known 4-D and the mask of rank 1 to 4 (ranks and dims known
//             from graph inputs, constants, and the shapes of Reshape,
//             Transpose, Concat, ...). What the op does to equal the pattern:
//             - it broadcasts batch, heads, query and key lengths of Q, K, V
//               and the mask as MatMul, Where and Add do (a Q batch of 1
//               against K/V of 2, one Q head against K's heads, a mask wider
//               than the scores), with any shapes from run to run, and
//               refuses (naming the node) what the pattern's ops refuse;
//             - a row whose mask hides every key gives NaN for Add(S, mask)
//               with -inf and Where(mask, S, -inf) (Softmax of a row of -inf),
//               and the mean of V's rows for Where with a finite c (Softmax of
//               a constant row), never Attention's 0;
//             - hidden keys weigh 0: with a finite c the pattern gives them
//               exp(c - max), which is 0 unless every visible score of the
//               row is below c + 745 (about -1e30); the one difference left,
//               with the NaN or infinite values the kernel does not read at
//               hidden keys.
#pragma once

#include "runtime/graph.h"

namespace onnx_mini {

// Applies the rewrites to `graph` (not to its subgraphs). Returns how many
// patterns were rewritten.
int RewriteGraph(Graph& graph);

}  // namespace onnx_mini
