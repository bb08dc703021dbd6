#include "runtime/rewrite/rewrite.h"

#include <algorithm>
#include <vector>

#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace {

using namespace rewrite;

// Larger patterns first: they match pieces the smaller rules would change.
// DequantizeLinear + MatMul before MatMul + bias, which would take the
// folded float weight.
constexpr Rule kRules[] = {RewriteAttention, RewriteRepeatShape, RewriteLayerNorm, RewriteRmsNorm,
                           RewriteSilu,      RewriteDequantizeMatMul, RewriteMatMulBias, RewritePow2,
                           RewriteInt8MatMulBias, RewriteInt8MatMul, RewriteUnreadDynamicQuantize,
                           RewriteConvBatchNorm, RewriteConvScaleShift, RewriteHardSwish, RewriteConvActivation,
                           RewriteConvAffine, RewriteConvAdd};

}  // namespace

int RewriteGraph(Graph& g, const OpRegistry& ops, const RewriteOptions& options) {
  int total = 0;
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<bool> dead(g.nodes.size(), false);
    int count = 0;
    {
      Index ix(g, dead, ops, options);
      // Rule by rule over the whole graph: a pattern containing another
      // (LayerNorm holds an RMSNorm of x - mean) is taken whole first.
      std::vector<bool> changed(g.nodes.size(), false);
      for (Rule rule : kRules)
        for (size_t n = 0; n < g.nodes.size(); ++n) {
          if (dead[n] || changed[n]) continue;
          if (rule(g, ix, n, dead)) {
            changed[n] = true;
            ++count;
            // The fused node's outputs keep the pattern's types: declared
            // here, the session checks the fused op against them (a
            // contradiction plans the graph as written) and reads on with
            // what the pattern was known to give. (A rule that asked for
            // no type fuses an op of its pattern's type by construction.)
            for (const std::string& o : g.nodes[n].outputs)
              if (const ValueType* t = o.empty() || !ix.inferred() ? nullptr : ix.Type(o)) g.value_types[o] = *t;
          }
        }
    }
    if (count == 0) break;
    total += count;
    std::vector<Node> kept;
    kept.reserve(g.nodes.size());
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (!dead[n]) kept.push_back(std::move(g.nodes[n]));
    g.nodes = std::move(kept);
  }
  // Layouts once the rules are done (conv.cc): no later rule may give a
  // channels-last value another reader. They mark nodes, remove none.
  if (std::any_of(g.nodes.begin(), g.nodes.end(),
                  [](const Node& n) { return n.op_type == "FusedConv" || n.op_type == "Conv"; })) {
    const std::vector<bool> none(g.nodes.size(), false);
    std::vector<bool> dead = none;
    Index ix(g, none, ops, options);
    for (size_t n = 0; n < g.nodes.size(); ++n) total += RewriteConvLayout(g, ix, n, dead) ? 1 : 0;
  }
  return total;
}

}  // namespace onnx_mini
