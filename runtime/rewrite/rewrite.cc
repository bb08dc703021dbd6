#include "runtime/rewrite/rewrite.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
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
                           RewriteInt8MatMulBias, RewriteInt8MatMul,
                           RewriteScaleResidual, RewriteConvBatchNorm, RewriteConvScaleShift, RewriteHardSwish, RewriteConvActivation,
                           RewriteConvAffine, RewriteConvAdd,
                           RewriteRotary, RewritePartialRotary, RewriteReshapeShape,
                           RewriteSwiGlu};

// The rules on one graph: `place` says where a subgraph's types come from
// (the model's graph, inferred once), nullptr for the model's graph (each
// Index infers it as it is, InferGraphTypes: its Loop and Scan bodies planned
// as the session plans them, not relaxed as for a subgraph's own types).
int RewriteOne(Graph& g, const InPlace* place, const OpRegistry& ops, const RewriteOptions& options) {
  int total = 0;
  InPlace here = place ? *place : InPlace{};
  const InPlace* in_place = place ? &here : nullptr;
  const auto changed = [&] { here.changed = true; };  // a changed body is planned again alone
  std::optional<std::optional<GraphTypes>> last;  // the last pass's types, the graph unchanged since
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<bool> dead(g.nodes.size(), false);
    int count = 0;
    {
      Index ix(g, dead, ops, options, in_place);
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
      // What the fused patterns no longer read goes with them.
      if (count > 0) ix.DropUnread(dead);
      if (count == 0 && ix.inferred()) last = ix.TakeTypes();
    }
    if (count == 0) break;
    total += count;
    changed();
    std::vector<Node> kept;
    kept.reserve(g.nodes.size());
    for (size_t n = 0; n < g.nodes.size(); ++n)
      if (!dead[n]) kept.push_back(std::move(g.nodes[n]));
    g.nodes = std::move(kept);
  }
  if (const int merged = EliminateCommonSubexpressions(g, in_place, ops, options, last); merged > 0) {
    total += merged;
    changed();
  }
  // Layouts once the rules are done (conv.cc): no later rule may give a
  // channels-last value another reader. They mark nodes, remove none.
  if (std::any_of(g.nodes.begin(), g.nodes.end(),
                  [](const Node& n) { return n.op_type == "FusedConv" || n.op_type == "Conv"; })) {
    {  // squeeze-excite blocks first: they leave a conv's output to convs alone
      std::vector<bool> dead(g.nodes.size(), false);
      Index ix(g, dead, ops, options, in_place);
      if (last) ix.Adopt(std::move(*last));
      last.reset();
      int fused = 0;
      for (size_t n = 0; n < g.nodes.size(); ++n) fused += RewriteConvSqueezeExcite(g, ix, n, dead) ? 1 : 0;
      if (fused == 0 && ix.inferred()) last = ix.TakeTypes();
      if (fused > 0) {
        changed();
        std::vector<Node> kept;
        for (size_t n = 0; n < g.nodes.size(); ++n)
          if (!dead[n]) kept.push_back(std::move(g.nodes[n]));
        g.nodes = std::move(kept);
        total += fused;
      }
    }
    const std::vector<bool> none(g.nodes.size(), false);
    std::vector<bool> dead = none;
    Index ix(g, none, ops, options, in_place);
    if (last) ix.Adopt(std::move(*last));
    int marked = 0;
    for (size_t n = 0; n < g.nodes.size(); ++n) marked += RewriteConvLayout(g, ix, n, dead) ? 1 : 0;
    if (marked > 0) changed();
    total += marked;
  }
  return total;
}

// The subgraphs of g's nodes (If branches, Loop and Scan bodies), each with
// the rules, then their own subgraphs: outer graphs first, so that a body
// sees its outer scope as it will be planned. A subgraph is copied before it
// changes: the graph as written (Session::Create keeps it to fall back on)
// shares it. `root`: the model's graph, inferred once for all of them; the
// originals stay alive in `held` as long as its plans of them.
int RewriteSubgraphs(Graph& g, SubgraphTypes& root, std::vector<std::shared_ptr<Graph>>& held, const OpRegistry& ops,
                     const RewriteOptions& options) {
  int total = 0;
  for (Node& node : g.nodes)
    for (auto& [name, a] : node.attributes) {
      std::vector<std::shared_ptr<Graph>*> subs;
      if (a.type == AttrType::kGraph && a.g) subs.push_back(&a.g);
      if (a.type == AttrType::kGraphs)
        for (std::shared_ptr<Graph>& sub : a.graphs)
          if (sub) subs.push_back(&sub);
      for (std::shared_ptr<Graph>* sub : subs) {
        root.Infer();  // with the originals in place
        auto copy = std::make_shared<Graph>(**sub);  // tensors share their storage
        std::shared_ptr<Graph> original = std::exchange(*sub, copy);
        // The copy is in the original's place: its types are inferred there.
        const InPlace place{&root, original.get(), false};
        const int count =
            RewriteOne(*copy, &place, ops, options) + RewriteSubgraphs(*copy, root, held, ops, options);
        if (count == 0) *sub = std::move(original);
        else held.push_back(std::move(original));
        total += count;
      }
    }
  return total;
}

}  // namespace

int RewriteGraph(Graph& g, const OpRegistry& ops, const RewriteOptions& options) {
  const int top = RewriteOne(g, nullptr, ops, options);
  std::vector<std::shared_ptr<Graph>> held;  // outlives root's plans of them
  SubgraphTypes root(g, ops);
  return top + RewriteSubgraphs(g, root, held, ops, options);
}

}  // namespace onnx_mini
