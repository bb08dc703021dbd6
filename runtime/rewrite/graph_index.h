// The rewrites' view of one graph during a pass: who makes and who reads
// each value, its constants, what is known of shapes; and what the rule
// families share (runtime/rewrite/*.cc, one file per family).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/element.h"
#include "runtime/graph.h"
#include "runtime/outer_scope.h"
#include "runtime/rewrite/rewrite.h"
#include "runtime/session/infer.h"

namespace onnx_mini {
namespace rewrite {

// A shape as the rules read it: -1 for a dim not known before running (or
// only by a symbol).
using Dims = std::vector<int64_t>;

// Who makes and who reads each value of one graph, which values are
// constants, and what is known of their types, during one pass of the
// rewrites. Types and folded constants are the session's own inference of
// the graph (InferGraphTypes), made when a rule first asks in the pass (a
// graph where nothing looks like a pattern is not inferred twice); a value's
// type is the same before and after a rewrite in the pass, whose fused node
// keeps its pattern's output types.
// Where a subgraph's types come from: the model's graph inferred once, the
// subgraph as planned there, and whether `g` (its copy) has changed since.
struct InPlace {
  SubgraphTypes* root = nullptr;
  const Graph* planned = nullptr;
  bool changed = false;
};

class Index {
 public:
  // `in_place`: when `g` is a subgraph of the model's nodes (at any depth),
  // inferred in its place there (SubgraphTypes); else nullptr.
  Index(const Graph& g, const std::vector<bool>& dead, const OpRegistry& ops, const RewriteOptions& options = {},
        const InPlace* in_place = nullptr)
      : g_(g), dead_(dead), ops_(ops), options_(options), in_place_(in_place ? *in_place : InPlace{}) {
    for (const auto& [name, t] : g.initializers) constants_[name] = &t;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      for (const std::string& o : node.outputs)
        if (!o.empty()) producer_[o] = n;
      for (const std::string& in : node.inputs)
        if (!in.empty()) ++uses_[in];
      // What its subgraphs read from here: the same names the session gives the node as implicit inputs.
      for (const std::string& name : ImplicitInputs(node)) ++uses_[name];
      if (node.op_type == "Constant" && node.domain.empty() && node.outputs.size() == 1) {
        const Attribute* v = node.attr("value");
        const Attribute* f = node.attr("value_float");
        const Attribute* i = node.attr("value_int");
        if (v && v->type == AttrType::kTensor && v->t.defined()) constants_[node.outputs[0]] = &v->t;
        else if (f && f->type == AttrType::kFloat)
          constants_[node.outputs[0]] = &owned_.emplace_back(Tensor::FromVector(std::vector<float>{f->f}, {}));
        else if (i && i->type == AttrType::kInt)
          constants_[node.outputs[0]] = &owned_.emplace_back(Tensor::FromVector(std::vector<int64_t>{i->i}, {}));
      }
    }
    for (const ValueInfo& o : g.outputs) outputs_.insert(o.name);
  }

  // The live node `op` of `domain` (ai.onnx unless given) that makes `name`, or nullptr.
  const Node* Producer(const std::string& name, const char* op, size_t* index = nullptr,
                       const char* domain = "") const {
    auto it = producer_.find(name);
    if (it == producer_.end() || dead_[it->second]) return nullptr;
    const Node& node = g_.nodes[it->second];
    if (node.op_type != op || node.domain != domain) return nullptr;
    if (index) *index = it->second;
    return &node;
  }
  // A value inside a pattern: read once, by the pattern, and not a graph output.
  bool Inner(const std::string& name) const {
    auto it = uses_.find(name);
    return !name.empty() && it != uses_.end() && it->second == 1 && !outputs_.count(name);
  }
  // How many reads `name` has (nodes and subgraphs); graph outputs aside.
  int Uses(const std::string& name) const {
    auto it = uses_.find(name);
    return it == uses_.end() ? 0 : it->second;
  }
  bool IsOutput(const std::string& name) const { return outputs_.count(name) > 0; }
  const Graph& graph() const { return g_; }
  const RewriteOptions& options() const { return options_; }
  // A value known before running: an initializer, a Constant node's, one
  // the session's folding computes, or in a subgraph an outer scope's constant.
  const Tensor* Constant(const std::string& name) const {
    if (auto it = constants_.find(name); it != constants_.end()) return it->second;
    const GraphTypes* types = Types();
    if (!types) return nullptr;
    auto it = types->constants.find(name);
    return it == types->constants.end() ? nullptr : &it->second;
  }
  // The inferred type of `name`, or nullptr if not known (no such value, or
  // a graph the session cannot infer: its error is the session's to give).
  const ValueType* Type(const std::string& name) const {
    const GraphTypes* types = Types();
    if (!types) return nullptr;
    auto it = types->types.find(name);
    return it == types->types.end() ? nullptr : &it->second;
  }
  // The one way nodes go unread: at the end of a pass in which rules fired,
  // marks dead each live ai.onnx node (no subgraph, no random draw) all of
  // whose outputs had readers when the pass began and have none now (nor are
  // graph outputs), and on up the nodes that fed only those: what the
  // fused patterns stopped reading (the shape plumbing of a GQA repeat or
  // of rotary halves, the tables' Gather shared by every layer, a
  // DynamicQuantizeLinear whose last product fused). A node the model left
  // unread itself is not touched. Reader counts kept as nodes go: linear in
  // the graph. Returns how many nodes it marked.
  int DropUnread(std::vector<bool>& dead) const;
  // Whether a rule has asked for types in this pass.
  bool inferred() const { return inferred_; }
  // The types an Index of the same graph, unchanged since, inferred: taken
  // over instead of inferred again (nullopt: its inference failed).
  void Adopt(std::optional<GraphTypes> types) {
    inferred_ = true;
    types_ = std::move(types);
  }
  std::optional<GraphTypes> TakeTypes() { return std::move(types_); }
  // A tensor's dims as inferred; nullopt when not a tensor or of unknown rank.
  std::optional<Dims> DimsOf(const std::string& name) const {
    const ValueType* t = Type(name);
    if (!t || !t->is_tensor() || !t->dims) return std::nullopt;
    Dims d;
    for (const Dim& x : *t->dims) d.push_back(x.known() ? x.value : -1);
    return d;
  }
  // A constant of one element (rank <= 1, or exactly rank 0 with `scalar`)
  // equal to `want`.
  bool ConstantIs(const std::string& name, double want, bool scalar = false) const {
    const Tensor* t = Constant(name);
    if (!t || t->size() != 1 || t->shape().size() > (scalar ? 0u : 1u)) return false;
    if (!IsNumeric(t->dtype())) return false;
    return GetDouble(*t, 0) == want;
  }

 private:
  const GraphTypes* Types() const {
    if (!inferred_) {
      inferred_ = true;
      absl::StatusOr<GraphTypes> t = in_place_.root
                                         ? in_place_.root->Types(*in_place_.planned, g_, in_place_.changed)
                                         : InferGraphTypes(g_, ops_);
      if (t.ok()) types_ = *std::move(t);
    }
    return types_ ? &*types_ : nullptr;
  }
  static bool IsNumeric(DType d) {
    return d == DType::kFloat || d == DType::kDouble || d == DType::kFloat16 || d == DType::kBFloat16 ||
           d == DType::kInt32 || d == DType::kInt64;
  }
  const Graph& g_;
  const std::vector<bool>& dead_;
  const OpRegistry& ops_;
  const RewriteOptions options_;
  const InPlace in_place_;
  mutable bool inferred_ = false;
  mutable std::optional<GraphTypes> types_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, int> uses_;
  std::set<std::string> outputs_;
  std::map<std::string, const Tensor*> constants_;
  std::deque<Tensor> owned_;
};

inline bool Binary(const Node& n) { return n.inputs.size() == 2 && !n.inputs[0].empty() && !n.inputs[1].empty(); }

Attribute IntAttr(const std::string& name, int64_t v);
Attribute FloatAttr(const std::string& name, float v);

// Whether x's last dim is known before running (the same in every run) and
// equals n: the fused norms take a scale of exactly that length, where the
// pattern's Mul and Add would broadcast a 1-D scale against any last dim.
bool LastDimIs(const Index& ix, const std::string& x, int64_t n);

// A rule: tries to rewrite the pattern ending at node n, marking the nodes
// it replaces dead; true if it did.
using Rule = bool (*)(Graph&, const Index&, size_t, std::vector<bool>&);

// The families (norms.cc, activations.cc, matmul_bias.cc, attention.cc).
bool RewriteLayerNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteRmsNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteSilu(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewritePow2(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteMatMulBias(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteAttention(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteRepeatShape(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);  // attention.cc
bool RewriteInt8MatMul(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteInt8MatMulBias(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteDequantizeMatMul(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);  // quant_matmul.cc
bool RewriteConvBatchNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);     // conv.cc
bool RewriteConvScaleShift(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteHardSwish(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteConvActivation(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteConvAffine(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteConvAdd(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteScaleResidual(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteRotary(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);          // rotary.cc
bool RewritePartialRotary(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);
bool RewriteReshapeShape(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);  // shapes.cc
// cse.cc: merges nodes computing the same thing, after the rules; returns how many went.
// `types`: the graph's types if known (a pass that fused nothing), kept when
// nothing merges, emptied when something does.
int EliminateCommonSubexpressions(Graph& g, const InPlace* place, const OpRegistry& ops, const RewriteOptions& options,
                                  std::optional<std::optional<GraphTypes>>& types);
bool RewriteSwiGlu(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);  // swiglu.cc
bool RewriteConvSqueezeExcite(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);  // after the others
bool RewriteConvLayout(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead);  // after those

}  // namespace rewrite
}  // namespace onnx_mini
