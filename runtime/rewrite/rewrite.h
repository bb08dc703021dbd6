// Graph rewrites at session creation: the decomposed patterns exporters write,
// replaced by the fused kernels that compute the same thing faster. They run
// on the loaded graph before the session plans it (SessionOptions::
// graph_rewrites turns them off). A rewrite gives the answer of the graph as
// written (up to rounding; for finite inputs whose scores do not overflow)
// or does not fire. A pattern is rewritten only when every value inside it
// has no other reader (no other node, no subgraph) and is not a graph
// output, its constants have the values the fused kernel needs, and the
// shapes the fused op needs are known before running (the same in every
// run), as the session's own inference gives them (the registry's Op::Infer
// per node, with the constants folding computes: never a list of ops kept by
// the rules); the fused node keeps the pattern's output name and type, so the
// rest of the graph is untouched, and takes the name of the pattern's last
// node, so that errors name a node of the model (or, unnamed, its output).
//
// The families, each file with its rules' conditions: norms.cc (RMSNorm,
// LayerNorm), rotary.cc (HF's rotary, partial rotary), activations.cc (SiLU, Pow2), matmul_bias.cc (MatMul + bias),
// conv.cc (BatchNormalization, scale and shift folded into Conv; activations
// and a residual Add fused as FusedConv's post-ops),
// attention.cc (SDPA); graph_index.h: what they share.
#pragma once

#include "runtime/graph.h"

namespace onnx_mini {

class OpRegistry;

struct RewriteOptions {
  // The accuracy_level the standard spelling DequantizeLinear (4/8-bit) +
  // MatMul runs at once fused: 4 rounds A to int8 per block as MatMulNBits'
  // accuracy_level 4 does (onnxruntime fuses it so, its session option
  // session.qdq_matmulnbits_accuracy_level defaulting to 4); 0 computes in float.
  int dq_matmul_accuracy_level = 4;
};

// Applies the rewrites to `graph`, then to its nodes' subgraphs (If
// branches, Loop and Scan bodies, at any depth), reading the types and
// constants that the session's inference with `ops` gives each value
// (InferGraphTypes; for a subgraph, SubgraphTypes: `graph` inferred once
// for all of them, a changed body planned again alone in its place). In a subgraph, the outer-scope values it reads are its
// inputs, constants where the outer scope's are, and its outputs are graph
// outputs for the rules; a value a subgraph reads is a reader the outer
// graph's patterns do not see (they are not rewritten). Returns how many
// patterns were rewritten. A subgraph that changes is a copy (the original
// may be shared with another Graph).
int RewriteGraph(Graph& graph, const OpRegistry& ops, const RewriteOptions& options = {});

}  // namespace onnx_mini
