// The rewrites' view of one graph during a pass: who makes and who reads
// each value, its constants, what is known of shapes; and what the rule
// families share (runtime/rewrite/*.cc, one file per family).
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/checked.h"
#include "runtime/element.h"
#include "runtime/graph.h"
#include "runtime/outer_scope.h"

namespace onnx_mini {
namespace rewrite {

class StaticShapes;

// Who makes and who reads each value of one graph, and which values are
// constants (initializers, Constant nodes), during one pass of the rewrites.
class Index {
 public:
  Index(const Graph& g, const std::vector<bool>& dead) : g_(g), dead_(dead) {
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

  // The live ai.onnx node `op` that makes `name`, or nullptr.
  const Node* Producer(const std::string& name, const char* op, size_t* index = nullptr) const {
    auto it = producer_.find(name);
    if (it == producer_.end() || dead_[it->second]) return nullptr;
    const Node& node = g_.nodes[it->second];
    if (node.op_type != op || !node.domain.empty()) return nullptr;
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
  // The node (any domain, live or not) that makes `name`, or nullptr: for
  // reasoning about shapes, which a rewrite in this pass does not change.
  const Node* AnyProducer(const std::string& name) const {
    auto it = producer_.find(name);
    return it == producer_.end() ? nullptr : &g_.nodes[it->second];
  }
  const Graph& graph() const { return g_; }
  const Tensor* Constant(const std::string& name) const {
    auto it = constants_.find(name);
    return it == constants_.end() ? nullptr : it->second;
  }
  // A constant of one element (rank <= 1, or exactly rank 0 with `scalar`)
  // equal to `want`.
  bool ConstantIs(const std::string& name, double want, bool scalar = false) const {
    const Tensor* t = Constant(name);
    if (!t || t->size() != 1 || t->shape().size() > (scalar ? 0u : 1u)) return false;
    if (!IsNumeric(t->dtype())) return false;
    return GetDouble(*t, 0) == want;
  }

  // What is known of shapes, shared by the rules of one pass: the memo makes
  // each value's shape read once, so a layer's reading stops at the layer
  // before it (set by RewriteGraph).
  StaticShapes* shapes = nullptr;

 private:
  static bool IsNumeric(DType d) {
    return d == DType::kFloat || d == DType::kDouble || d == DType::kFloat16 || d == DType::kBFloat16 ||
           d == DType::kInt32 || d == DType::kInt64;
  }
  const Graph& g_;
  const std::vector<bool>& dead_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, int> uses_;
  std::set<std::string> outputs_;
  std::map<std::string, const Tensor*> constants_;
  std::deque<Tensor> owned_;
};

inline bool Binary(const Node& n) { return n.inputs.size() == 2 && !n.inputs[0].empty() && !n.inputs[1].empty(); }

Attribute IntAttr(const std::string& name, int64_t v);
Attribute FloatAttr(const std::string& name, float v);

// What is known before running of a value's shape: its rank, with -1 for a
// dim not known; nullopt when not even the rank is known. Read from the graph
// inputs (the session enforces their declared dims), constants, and the ops
// that lead to attention inputs in exported decoders; other ops are unknown.
using Dims = std::vector<int64_t>;
class StaticShapes {
 public:
  explicit StaticShapes(const Index& ix) : ix_(ix) {
    for (const ValueInfo& in : ix.graph().inputs) {
      if (!in.type.is_tensor() || !in.type.dims) continue;
      Dims d;
      for (const Dim& x : *in.type.dims) d.push_back(x.known() ? x.value : -1);
      inputs_[in.name] = std::move(d);
    }
  }

  std::optional<Dims> Of(const std::string& name, int depth = 0) {
    if (auto it = memo_.find(name); it != memo_.end()) return it->second;
    // Deep chains end unknown rather than exhaust the stack (with the memo
    // shared by a pass, a decoder's layers are read in order, each a few
    // dozen calls deep).
    if (depth > 1000) return std::nullopt;
    std::optional<Dims> d = Compute(name, depth);
    memo_[name] = d;
    return d;
  }

 private:
  // NumPy broadcast of known ranks; a dim is known when some operand has it
  // other than 1 (a valid model agrees there) or all have 1.
  static std::optional<Dims> Broadcast(const std::vector<std::optional<Dims>>& ds) {
    size_t rank = 0;
    for (const auto& d : ds) {
      if (!d) return std::nullopt;
      rank = std::max(rank, d->size());
    }
    Dims out(rank, 1);
    for (size_t k = 0; k < rank; ++k) {
      bool unknown = false;
      int64_t known = 1;
      for (const auto& d : ds) {
        if (d->size() + k < rank) continue;
        const int64_t v = (*d)[d->size() + k - rank];
        if (v < 0) unknown = true;
        else if (v != 1) known = v;
      }
      out[k] = known != 1 ? known : unknown ? -1 : 1;
    }
    return out;
  }
  // A constant 1-D int64 tensor's values.
  std::optional<Dims> Ints(const std::string& name) const {
    const Tensor* t = ix_.Constant(name);
    if (!t || t->dtype() != DType::kInt64 || t->shape().size() != 1) return std::nullopt;
    return Dims(t->data<int64_t>(), t->data<int64_t>() + t->size());
  }
  // Axes normalized to [0, rank), or nullopt if out of range.
  static std::optional<Dims> Normalize(Dims axes, int64_t rank) {
    for (int64_t& a : axes) {
      if (a < -rank || a >= rank) return std::nullopt;
      if (a < 0) a += rank;
    }
    return axes;
  }

  std::optional<Dims> Compute(const std::string& name, int depth) {
    if (auto it = inputs_.find(name); it != inputs_.end()) return it->second;
    if (const Tensor* t = ix_.Constant(name)) return Dims(t->shape().begin(), t->shape().end());
    const Node* node = ix_.AnyProducer(name);
    if (!node || node->outputs.empty() || node->outputs[0] != name || node->inputs.empty()) return std::nullopt;
    const std::string& op = node->op_type;
    const auto in = [&](size_t i) { return node->has_input(i) ? Of(node->inputs[i], depth + 1) : std::nullopt; };
    if (node->domain == "onnx_mini") {
      if (op == "Attention") {  // Y [B, H, Sq, Dv]: Q, K, V and the mask broadcast (K, V heads repeated)
        const auto q = in(0), k = in(1), v = in(2);
        if (!q || !k || !v || q->size() != 4 || k->size() != 4 || v->size() != 4) return std::nullopt;
        const int64_t repeat = node->attr_int("kv_repeat", 1);
        const auto heads = [&](int64_t h) { return h < 0 ? h : h == 1 ? 1 : h * repeat; };
        std::vector<std::optional<Dims>> ds = {Dims{(*q)[0], (*q)[1], (*q)[2]}, Dims{(*k)[0], heads((*k)[1]), 1},
                                               Dims{(*v)[0], heads((*v)[1]), 1}};
        if (node->has_input(3)) {
          const auto m = in(3);
          if (!m || m->empty() || m->size() > 4) return std::nullopt;
          Dims m4(4 - m->size(), 1);
          m4.insert(m4.end(), m->begin(), m->end());
          ds.push_back(Dims{m4[0], m4[1], m4[2]});
        }
        auto y = Broadcast(ds);
        if (!y) return std::nullopt;
        y->push_back((*v)[3]);
        return y;
      }
      if (op != "FusedMatMul") return std::nullopt;
    } else if (!node->domain.empty()) {
      return std::nullopt;
    }
    static const std::set<std::string> kSameShape = {
        "Neg", "Sqrt", "Reciprocal", "Sigmoid", "Tanh", "Exp", "Log", "Relu", "Abs", "Erf", "Cast", "CastLike",
        "Identity", "Softmax", "LogSoftmax", "Swish", "Not", "Sin", "Cos", "Gelu", "Trilu",
        "RMSNormalization", "LayerNormalization", "RotaryEmbedding"};
    static const std::set<std::string> kBroadcast = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal", "Less",
                                                     "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or",
                                                     "Xor", "Max", "Min"};
    if (kSameShape.count(op)) return in(0);
    if (kBroadcast.count(op)) {
      std::vector<std::optional<Dims>> ds;
      for (size_t i = 0; i < node->inputs.size(); ++i) ds.push_back(in(i));
      return Broadcast(ds);
    }
    if (op == "MatMul" || op == "FusedMatMul") {
      const auto a = in(0), b = in(1);
      if (!a || !b || a->size() < 2 || b->size() < 2) return std::nullopt;
      auto batch = Broadcast({Dims(a->begin(), a->end() - 2), Dims(b->begin(), b->end() - 2)});
      batch->push_back((*a)[a->size() - 2]);
      batch->push_back(b->back());
      return batch;
    }
    if (op == "Transpose") {
      const auto x = in(0);
      if (!x) return std::nullopt;
      Dims perm = node->attr_ints("perm");
      if (!node->attr("perm"))
        for (int64_t k = int64_t(x->size()) - 1; k >= 0; --k) perm.push_back(k);
      if (perm.size() != x->size()) return std::nullopt;
      Dims out;
      for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(x->size())) return std::nullopt;
        out.push_back((*x)[size_t(p)]);
      }
      return out;
    }
    if (op == "Reshape") {
      const auto x = in(0);
      auto shape = node->inputs.size() > 1 ? Ints(node->inputs[1]) : std::nullopt;
      if (!shape) return std::nullopt;
      const bool allowzero = node->attr_int("allowzero", 0) != 0;
      for (size_t k = 0; k < shape->size(); ++k) {
        int64_t& v = (*shape)[k];
        if (v == 0 && !allowzero) v = x && k < x->size() ? (*x)[k] : -1;
        else if (v < -1) return std::nullopt;
      }
      return shape;  // a -1 stays unknown
    }
    if (op == "Unsqueeze") {
      auto x = in(0);
      const auto axes = node->opset >= 13 ? (node->inputs.size() > 1 ? Ints(node->inputs[1]) : std::nullopt)
                                          : std::optional<Dims>(node->attr_ints("axes"));
      if (!x || !axes) return std::nullopt;
      const int64_t rank = int64_t(x->size() + axes->size());
      auto norm = Normalize(*axes, rank);
      if (!norm) return std::nullopt;
      std::sort(norm->begin(), norm->end());
      for (int64_t a : *norm) {
        if (a > int64_t(x->size())) return std::nullopt;
        x->insert(x->begin() + a, 1);
      }
      return x;
    }
    if (op == "Concat") {
      std::vector<std::optional<Dims>> ds;
      size_t rank = 0;
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        ds.push_back(in(i));
        if (!ds.back()) return std::nullopt;
        rank = ds.back()->size();
      }
      const auto axis = Normalize({node->attr_int("axis", 0)}, int64_t(rank));
      if (!axis) return std::nullopt;
      Dims out(rank, -1);
      int64_t total = 0;
      for (const auto& d : ds) {
        if (d->size() != rank) return std::nullopt;
        for (size_t k = 0; k < rank; ++k)
          if (int64_t(k) != (*axis)[0] && (*d)[k] >= 0) out[k] = (*d)[k];
        const int64_t len = (*d)[size_t((*axis)[0])];
        total = total < 0 || len < 0 ? -1 : CheckedAdd(total, len).value_or(-1);
      }
      out[size_t((*axis)[0])] = total;
      return out;
    }
    if (op == "Gather") {
      const auto data = in(0), idx = in(1);
      if (!data || !idx) return std::nullopt;
      const auto axis = Normalize({node->attr_int("axis", 0)}, int64_t(data->size()));
      if (!axis) return std::nullopt;
      const size_t a = size_t((*axis)[0]);
      Dims out(data->begin(), data->begin() + a);
      out.insert(out.end(), idx->begin(), idx->end());
      out.insert(out.end(), data->begin() + a + 1, data->end());
      return out;
    }
    if (op == "Slice" && node->opset >= 10) {
      auto x = in(0);
      if (!x) return std::nullopt;
      // The sliced axes lose their length; without constant axes, all do.
      const auto axes = node->inputs.size() > 3 ? Ints(node->inputs[3]) : std::nullopt;
      const auto norm = axes ? Normalize(*axes, int64_t(x->size())) : std::nullopt;
      if (norm) {
        for (int64_t a : *norm) (*x)[size_t(a)] = -1;
      } else {
        std::fill(x->begin(), x->end(), -1);
      }
      return x;
    }
    if (op == "ReduceMean" && node->attr_int("keepdims", 1) == 1) {
      auto x = in(0);
      if (!x) return std::nullopt;
      const auto axes = node->opset >= 18 ? (node->inputs.size() > 1 ? Ints(node->inputs[1]) : std::nullopt)
                                          : std::optional<Dims>(node->attr_ints("axes"));
      const auto norm = axes ? Normalize(*axes, int64_t(x->size())) : std::nullopt;
      if (!norm || norm->empty()) return std::nullopt;
      for (int64_t a : *norm) (*x)[size_t(a)] = 1;
      return x;
    }
    if (op == "Expand") {
      const auto x = in(0);
      const auto shape = node->inputs.size() > 1 ? Ints(node->inputs[1]) : std::nullopt;
      if (!x || !shape) return std::nullopt;
      return Broadcast({x, shape});
    }
    if (op == "Range") return Dims{-1};
    if (op == "Attention" && node->domain.empty()) {  // 4-D: Q's shape with V's head size
      const auto q = in(0), v = in(2);
      if (!q || !v || q->size() != 4 || v->size() != 4) return std::nullopt;
      return Dims{(*q)[0], (*q)[1], (*q)[2], (*v)[3]};
    }
    return std::nullopt;
  }

  const Index& ix_;
  std::map<std::string, Dims> inputs_;
  std::map<std::string, std::optional<Dims>> memo_;
};

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

}  // namespace rewrite
}  // namespace onnx_mini
