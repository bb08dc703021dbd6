#include "runtime/rewrite/rewrite.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "runtime/checked.h"
#include "runtime/element.h"
#include "runtime/outer_scope.h"

namespace onnx_mini {
namespace {

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

bool Binary(const Node& n) { return n.inputs.size() == 2 && !n.inputs[0].empty() && !n.inputs[1].empty(); }

// x * 1/Sqrt(ReduceMean(x^2, [-1]) + eps), the value `y`: its x, eps and
// the nodes that compute it.
struct NormChain {
  std::string x;
  double eps = 0;
  DType dtype = DType::kUndefined;
  std::vector<size_t> nodes;
};

// Sqrt(ReduceMean(x^2, [-1]) + eps) as `s`, for the given x.
bool MatchRms(const Index& ix, const std::string& s, const std::string& x, NormChain& c) {
  size_t i_sqrt, i_add, i_mean, i_sq;
  const Node* sqrt = ix.Inner(s) ? ix.Producer(s, "Sqrt", &i_sqrt) : nullptr;
  if (!sqrt || sqrt->inputs.size() != 1) return false;
  const Node* add = ix.Inner(sqrt->inputs[0]) ? ix.Producer(sqrt->inputs[0], "Add", &i_add) : nullptr;
  if (!add || !Binary(*add)) return false;
  for (int side = 0; side < 2; ++side) {
    const Tensor* eps = ix.Constant(add->inputs[size_t(side)]);
    const std::string& m = add->inputs[size_t(1 - side)];
    if (!eps || eps->size() != 1 || eps->shape().size() > 1) continue;
    const DType d = eps->dtype();
    if (d != DType::kFloat && d != DType::kDouble && d != DType::kFloat16 && d != DType::kBFloat16) continue;
    const Node* mean = ix.Inner(m) ? ix.Producer(m, "ReduceMean", &i_mean) : nullptr;
    if (!mean || mean->inputs.empty() || mean->attr_int("keepdims", 1) != 1) continue;
    // axes = [-1], as an attribute (before opset 18) or a constant input.
    std::vector<int64_t> axes = mean->attr_ints("axes");
    if (mean->opset >= 18) {
      const Tensor* a = mean->inputs.size() > 1 ? ix.Constant(mean->inputs[1]) : nullptr;
      if (!a || a->size() != 1 || (a->dtype() != DType::kInt64)) continue;
      axes = {a->data<int64_t>()[0]};
    }
    if (axes != std::vector<int64_t>{-1}) continue;
    const std::string& q = mean->inputs[0];
    if (!ix.Inner(q)) continue;
    const Node* sq = ix.Producer(q, "Pow", &i_sq);
    if (sq && !(Binary(*sq) && sq->inputs[0] == x && ix.ConstantIs(sq->inputs[1], 2))) sq = nullptr;
    if (!sq) {
      sq = ix.Producer(q, "Mul", &i_sq);
      if (sq && !(Binary(*sq) && sq->inputs[0] == x && sq->inputs[1] == x)) sq = nullptr;
    }
    if (!sq) continue;
    c.x = x;
    c.eps = GetDouble(*eps, 0);
    c.dtype = d;
    c.nodes.insert(c.nodes.end(), {i_sqrt, i_add, i_mean, i_sq});
    return true;
  }
  return false;
}

// The normalized value y = x / Sqrt(.) or x * (1/Sqrt(.)).
bool MatchNormalized(const Index& ix, const std::string& y, NormChain& c) {
  size_t i_y, i_r;
  if (const Node* div = ix.Producer(y, "Div", &i_y); div && Binary(*div)) {
    c.nodes = {i_y};
    return MatchRms(ix, div->inputs[1], div->inputs[0], c);
  }
  const Node* mul = ix.Producer(y, "Mul", &i_y);
  if (!mul || !Binary(*mul)) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& r = mul->inputs[size_t(side)];
    const std::string& x = mul->inputs[size_t(1 - side)];
    if (!ix.Inner(r)) continue;
    std::string s;
    if (const Node* rec = ix.Producer(r, "Reciprocal", &i_r); rec && rec->inputs.size() == 1) s = rec->inputs[0];
    else if (const Node* d = ix.Producer(r, "Div", &i_r); d && Binary(*d) && ix.ConstantIs(d->inputs[0], 1))
      s = d->inputs[1];
    else continue;
    c.nodes = {i_y, i_r};
    if (MatchRms(ix, s, x, c)) return true;
  }
  return false;
}

// ReduceMean(v) over the last axis only, keepdims: its node, or nullptr.
const Node* LastAxisMean(const Index& ix, const std::string& name, size_t* index) {
  const Node* mean = ix.Producer(name, "ReduceMean", index);
  if (!mean || mean->inputs.empty() || mean->attr_int("keepdims", 1) != 1) return nullptr;
  std::vector<int64_t> axes = mean->attr_ints("axes");
  if (mean->opset >= 18) {
    const Tensor* a = mean->inputs.size() > 1 ? ix.Constant(mean->inputs[1]) : nullptr;
    if (!a || a->size() != 1 || a->dtype() != DType::kInt64) return nullptr;
    axes = {a->data<int64_t>()[0]};
  }
  return axes == std::vector<int64_t>{-1} ? mean : nullptr;
}

// LayerNorm's normalized value: Div(d, Sqrt(ReduceMean(d^2) + eps)) with
// d = Sub(x, ReduceMean(x)), both means over the last axis.
bool MatchLayerNormalized(const Index& ix, const std::string& y, NormChain& c) {
  size_t i_div, i_sqrt, i_add, i_var, i_sq, i_sub, i_mean;
  const Node* div = ix.Producer(y, "Div", &i_div);
  if (!div || !Binary(*div)) return false;
  const std::string& d = div->inputs[0];
  const Node* sub = ix.Producer(d, "Sub", &i_sub);
  if (!sub || !Binary(*sub) || ix.IsOutput(d)) return false;
  const std::string& x = sub->inputs[0];
  const Node* mean = ix.Inner(sub->inputs[1]) ? LastAxisMean(ix, sub->inputs[1], &i_mean) : nullptr;
  if (!mean || mean->inputs[0] != x) return false;
  const std::string& s = div->inputs[1];
  const Node* sqrt = ix.Inner(s) ? ix.Producer(s, "Sqrt", &i_sqrt) : nullptr;
  if (!sqrt || sqrt->inputs.size() != 1) return false;
  const Node* add = ix.Inner(sqrt->inputs[0]) ? ix.Producer(sqrt->inputs[0], "Add", &i_add) : nullptr;
  if (!add || !Binary(*add)) return false;
  for (int side = 0; side < 2; ++side) {
    const Tensor* eps = ix.Constant(add->inputs[size_t(side)]);
    const std::string& v = add->inputs[size_t(1 - side)];
    if (!eps || eps->size() != 1 || eps->shape().size() > 1) continue;
    const DType dt = eps->dtype();
    if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kFloat16 && dt != DType::kBFloat16) continue;
    const Node* var = ix.Inner(v) ? LastAxisMean(ix, v, &i_var) : nullptr;
    if (!var || !ix.Inner(var->inputs[0])) continue;
    const std::string& q = var->inputs[0];
    const Node* sq = ix.Producer(q, "Pow", &i_sq);
    if (sq && !(Binary(*sq) && sq->inputs[0] == d && ix.ConstantIs(sq->inputs[1], 2))) sq = nullptr;
    if (!sq) {
      sq = ix.Producer(q, "Mul", &i_sq);
      if (sq && !(Binary(*sq) && sq->inputs[0] == d && sq->inputs[1] == d)) sq = nullptr;
    }
    // d is read by the square (once as Pow's base, twice as Mul's operands)
    // and the Div, and by nothing else.
    if (!sq || ix.Uses(d) != (sq->op_type == "Pow" ? 2 : 3)) continue;
    c.x = x;
    c.eps = GetDouble(*eps, 0);
    c.dtype = dt;
    c.nodes = {i_div, i_sqrt, i_add, i_var, i_sq, i_sub, i_mean};
    return true;
  }
  return false;
}

Attribute IntAttr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}
Attribute FloatAttr(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = v;
  return a;
}

// Whether x's last dim is known before running (the same in every run) and
// equals n: the fused norms take a scale of exactly that length, where the
// pattern's Mul and Add would broadcast a 1-D scale against any last dim.
bool LastDimIs(const Index& ix, const std::string& x, int64_t n);

// LayerNorm: Add(Mul(normalized, gamma), beta) (operands in either order),
// gamma and beta constant 1-D -> LayerNormalization(x, gamma, beta).
bool RewriteLayerNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Add" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string beta = node.inputs[size_t(side)];
    const std::string& y = node.inputs[size_t(1 - side)];
    const Tensor* bt = ix.Constant(beta);
    size_t i_mul;
    const Node* mul = bt && bt->shape().size() == 1 && ix.Inner(y) ? ix.Producer(y, "Mul", &i_mul) : nullptr;
    if (!mul || !Binary(*mul)) continue;
    for (int w_side = 0; w_side < 2; ++w_side) {
      const std::string gamma = mul->inputs[size_t(w_side)];
      const std::string& normed = mul->inputs[size_t(1 - w_side)];
      const Tensor* gt = ix.Constant(gamma);
      NormChain c;
      if (!gt || gt->shape().size() != 1 || !ix.Inner(normed) || !MatchLayerNormalized(ix, normed, c) ||
          gt->dtype() != c.dtype || bt->dtype() != c.dtype || !LastDimIs(ix, c.x, gt->size()) ||
          bt->size() != gt->size())
        continue;
      for (size_t k : c.nodes) dead[k] = true;
      dead[i_mul] = true;
      Node fused;
      fused.name = node.name;  // errors name the user's node (or its output)
      fused.op_type = "LayerNormalization";
      fused.opset = 17;
      fused.inputs = {c.x, gamma, beta};
      fused.outputs = node.outputs;
      fused.attributes = {{"axis", IntAttr("axis", -1)}, {"epsilon", FloatAttr("epsilon", float(c.eps))}};
      node = std::move(fused);
      return true;
    }
  }
  return false;
}

// RMSNorm: Mul(normalized x, w) or Mul(w, normalized x) at node n.
bool RewriteRmsNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Mul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string w = node.inputs[size_t(side)];
    const std::string y = node.inputs[size_t(1 - side)];
    const Tensor* wt = ix.Constant(w);
    if (!wt || wt->shape().size() != 1 || !ix.Inner(y)) continue;
    NormChain c;
    if (!MatchNormalized(ix, y, c) || wt->dtype() != c.dtype || !LastDimIs(ix, c.x, wt->size())) continue;
    for (size_t k : c.nodes) dead[k] = true;
    Node fused;
    fused.name = node.name;  // errors name the user's node (or its output)
    fused.op_type = "RMSNormalization";
    fused.opset = 23;
    fused.inputs = {c.x, w};
    fused.outputs = node.outputs;
    Attribute axis, eps;
    axis.name = "axis";
    axis.type = AttrType::kInt;
    axis.i = -1;
    eps.name = "epsilon";
    eps.type = AttrType::kFloat;
    eps.f = float(c.eps);
    fused.attributes = {{"axis", axis}, {"epsilon", eps}};
    node = std::move(fused);
    return true;
  }
  return false;
}

// Pow(x, 2) -> Mul(x, x): a multiply instead of the libm call.
bool RewritePow2(Graph& g, const Index& ix, size_t n, std::vector<bool>&) {
  Node& node = g.nodes[n];
  if (node.op_type != "Pow" || !node.domain.empty() || !Binary(node) || !ix.ConstantIs(node.inputs[1], 2, true))
    return false;
  node.op_type = "Mul";
  node.inputs[1] = node.inputs[0];
  node.attributes.clear();
  return true;
}

// SiLU: Mul(x, Sigmoid(x)) or Mul(Sigmoid(x), x) -> Swish(x) (alpha 1), one
// pass over the data instead of two.
bool RewriteSilu(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Mul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& s = node.inputs[size_t(side)];
    const std::string x = node.inputs[size_t(1 - side)];
    size_t i_sig;
    const Node* sig = ix.Inner(s) ? ix.Producer(s, "Sigmoid", &i_sig) : nullptr;
    if (!sig || sig->inputs.size() != 1 || sig->inputs[0] != x) continue;
    dead[i_sig] = true;
    node.op_type = "Swish";
    node.opset = 24;
    node.inputs = {x};
    node.attributes.clear();
    return true;
  }
  return false;
}

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

bool LastDimIs(const Index& ix, const std::string& x, int64_t n) {
  const auto d = ix.shapes->Of(x);
  return d && !d->empty() && d->back() == n;
}

// A float constant of one element and rank <= 4 (it cannot widen a 4-D
// value it meets by broadcasting): its value.
std::optional<double> FloatScalar(const Index& ix, const std::string& name) {
  const Tensor* t = ix.Constant(name);
  if (!t || t->size() != 1 || t->shape().size() > 4) return std::nullopt;
  const DType d = t->dtype();
  if (d != DType::kFloat && d != DType::kDouble && d != DType::kFloat16 && d != DType::kBFloat16)
    return std::nullopt;
  return GetDouble(*t, 0);
}

// The GQA repeat of K or V, `rep` = Reshape(Expand(Unsqueeze(x, [2]),
// [1, 1, G, 1, 1]), [0 | B, KV * G, -1 | T, D]) with x = [B, KV, T, D] and
// KV, D (and B when given) known: each of the KV heads repeated G times in a
// row, which is what Attention does with KV heads for KV * G query heads.
struct Repeat {
  std::string x;
  int64_t groups = 1;
  int64_t kv_heads = -1;
  std::vector<size_t> nodes;
};
std::optional<Repeat> MatchRepeat(const Index& ix, StaticShapes& shapes, const std::string& rep) {
  size_t i_reshape, i_expand, i_unsqueeze;
  const Node* reshape = ix.Inner(rep) ? ix.Producer(rep, "Reshape", &i_reshape) : nullptr;
  if (!reshape || !Binary(*reshape)) return std::nullopt;
  const std::string& e = reshape->inputs[0];
  const Node* expand = ix.Inner(e) ? ix.Producer(e, "Expand", &i_expand) : nullptr;
  if (!expand || !Binary(*expand)) return std::nullopt;
  const std::string& u = expand->inputs[0];
  const Node* unsqueeze = ix.Inner(u) ? ix.Producer(u, "Unsqueeze", &i_unsqueeze) : nullptr;
  if (!unsqueeze || unsqueeze->inputs.empty()) return std::nullopt;
  Dims axes = unsqueeze->attr_ints("axes");
  if (unsqueeze->opset >= 13) {
    const Tensor* a = unsqueeze->inputs.size() > 1 ? ix.Constant(unsqueeze->inputs[1]) : nullptr;
    if (!a || a->dtype() != DType::kInt64 || a->size() != 1) return std::nullopt;
    axes = {a->data<int64_t>()[0]};
  }
  if (axes != Dims{2} && axes != Dims{-3}) return std::nullopt;
  const auto x = shapes.Of(unsqueeze->inputs[0]);
  if (!x || x->size() != 4 || (*x)[1] <= 0 || (*x)[3] <= 0) return std::nullopt;
  // The expand shape, right-aligned to the 5-D [B, KV, 1, T, D]: ones but G
  // on the new axis.
  const Tensor* es = ix.Constant(expand->inputs[1]);
  if (!es || es->dtype() != DType::kInt64 || es->shape().size() != 1 || es->size() > 5) return std::nullopt;
  int64_t groups = 1;
  for (int64_t k = 0; k < es->size(); ++k) {
    const int64_t v = es->data<int64_t>()[k], axis = 5 - es->size() + k;
    if (axis == 2 && v >= 1) groups = v;
    else if (v != 1) return std::nullopt;
  }
  const Tensor* rs = ix.Constant(reshape->inputs[1]);
  if (!rs || rs->dtype() != DType::kInt64 || rs->shape() != Shape{4}) return std::nullopt;
  const int64_t* r = rs->data<int64_t>();
  const bool allowzero = reshape->attr_int("allowzero", 0) != 0;
  const bool batch_kept = (r[0] == 0 && !allowzero) || (r[0] > 0 && r[0] == (*x)[0]);
  // With heads KV * G and head size D fixed, the element count fixes the
  // third dim to T whether it is -1 or a number.
  if (!batch_kept || r[1] != CheckedMul((*x)[1], groups).value_or(-1) || r[3] != (*x)[3] ||
      (r[2] != -1 && r[2] <= 0))
    return std::nullopt;
  return Repeat{unsqueeze->inputs[0], groups, (*x)[1], {i_reshape, i_expand, i_unsqueeze}};
}

// The scaled scores, `s` = MatMul(Q, Transpose(K, [0, 1, 3, 2])) divided by
// a constant c (scale 1/c), multiplied by one (scale c), or as is (scale 1).
struct Scores {
  std::string q, k;  // k: the Transpose's input
  double scale = 1;
  std::vector<size_t> nodes;
};
std::optional<Scores> MatchScores(const Index& ix, const std::string& s) {
  Scores out;
  std::string mm = s;
  size_t i;
  if (const Node* div = ix.Producer(s, "Div", &i); div && Binary(*div)) {
    const auto c = FloatScalar(ix, div->inputs[1]);
    if (!c) return std::nullopt;
    out.scale = 1 / *c;
    mm = div->inputs[0];
    out.nodes.push_back(i);
  } else if (const Node* mul = ix.Producer(s, "Mul", &i); mul && Binary(*mul)) {
    const int side = FloatScalar(ix, mul->inputs[1]) ? 1 : FloatScalar(ix, mul->inputs[0]) ? 0 : -1;
    if (side < 0) return std::nullopt;
    out.scale = *FloatScalar(ix, mul->inputs[size_t(side)]);
    mm = mul->inputs[size_t(1 - side)];
    out.nodes.push_back(i);
  }
  // Attention scales Q and K by sqrt(scale): a positive finite float.
  if (!(out.scale > 0) || !std::isfinite(float(out.scale)) || float(out.scale) == 0) return std::nullopt;
  const Node* matmul = ix.Inner(mm) ? ix.Producer(mm, "MatMul", &i) : nullptr;
  if (!matmul || !Binary(*matmul)) return std::nullopt;
  out.nodes.push_back(i);
  const std::string& kt = matmul->inputs[1];
  const Node* transpose = ix.Inner(kt) ? ix.Producer(kt, "Transpose", &i) : nullptr;
  if (!transpose || transpose->inputs.size() != 1 || transpose->attr_ints("perm") != Dims{0, 1, 3, 2})
    return std::nullopt;
  out.nodes.push_back(i);
  out.q = matmul->inputs[0];
  out.k = transpose->inputs[0];
  return out;
}

// Masked positions of the Where form get this or less: exp(mask - max) is 0
// in float and double unless every visible score of the row is below -1e30.
constexpr double kMaskValueLimit = -1e30;

// Scaled dot-product attention as older exporters write it, at its last
// MatMul: Softmax(Where(mask, S, c) | Add(S, mask) | S, last axis) @ V', with
// S the scaled scores and K', V' optionally the GQA repeat of K and V ->
// Attention-23(Q, K, V, mask, scale). See rewrite.h for what must hold.
bool RewriteAttention(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "MatMul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  std::vector<size_t> nodes;
  size_t i;
  const std::string& probs = node.inputs[0];
  const Node* softmax = ix.Inner(probs) ? ix.Producer(probs, "Softmax", &i) : nullptr;
  if (!softmax || softmax->inputs.size() != 1) return false;
  // The scores are 4-D (checked below): before opset 13 an axis of 3 or -1
  // also means the last axis alone.
  const int64_t axis = softmax->attr_int("axis", softmax->opset >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return false;
  nodes.push_back(i);
  const std::string& z = softmax->inputs[0];
  if (!ix.Inner(z)) return false;
  std::string mask;
  std::optional<Scores> scores;
  // Rows the mask hides whole: Softmax of -inf gives NaN, of a finite fill
  // the mean of V's rows (see the op in ops/llm/attention.cc).
  int64_t masked_rows = 1;
  if (const Node* where = ix.Producer(z, "Where", &i); where && where->inputs.size() == 3) {
    const auto value = FloatScalar(ix, where->inputs[2]);
    if (!value || !(*value <= kMaskValueLimit) || !ix.Inner(where->inputs[1])) return false;
    if (std::isfinite(*value)) masked_rows = 2;
    scores = MatchScores(ix, where->inputs[1]);
    mask = where->inputs[0];
    nodes.push_back(i);
  } else if (const Node* add = ix.Producer(z, "Add", &i); add && Binary(*add)) {
    for (int side = 0; side < 2 && !scores; ++side) {
      if (!ix.Inner(add->inputs[size_t(side)])) continue;
      scores = MatchScores(ix, add->inputs[size_t(side)]);
      mask = add->inputs[size_t(1 - side)];
    }
    nodes.push_back(i);
  } else {
    scores = MatchScores(ix, z);
  }
  if (!scores) return false;
  nodes.insert(nodes.end(), scores->nodes.begin(), scores->nodes.end());

  StaticShapes& shapes = *ix.shapes;
  // The fused op takes 4-D Q, K', V' and a mask of rank 1 to 4 and
  // broadcasts batch, heads and lengths as the pattern does; other ranks
  // (a 3-D V' that MatMul would broadcast, a 5-D mask) keep the pattern.
  const auto q = shapes.Of(scores->q);
  if (!q || q->size() != 4) return false;
  if (!mask.empty()) {
    const auto m = shapes.Of(mask);
    if (!m || m->empty() || m->size() > 4) return false;
  }
  // K and V as the fused op takes them: unrepeated when both repeats are
  // the GQA repeat with the same G and KV heads (kv_repeat G); as repeated
  // otherwise, when their head counts are known and equal (the op maps a
  // query head to one K and V head).
  std::string k = scores->k, v = node.inputs[1];
  int64_t repeat = 1;
  auto rk = MatchRepeat(ix, shapes, k), rv = MatchRepeat(ix, shapes, v);
  if (rk && rv && rk->groups == rv->groups && rk->kv_heads == rv->kv_heads) {
    k = rk->x;
    v = rv->x;
    repeat = rk->groups;
    nodes.insert(nodes.end(), rk->nodes.begin(), rk->nodes.end());
    nodes.insert(nodes.end(), rv->nodes.begin(), rv->nodes.end());
  } else {
    const auto kd = shapes.Of(k), vd = shapes.Of(v);
    if (!kd || !vd || kd->size() != 4 || vd->size() != 4 || (*kd)[1] < 0 || (*kd)[1] != (*vd)[1]) return false;
  }
  for (size_t k2 : nodes) dead[k2] = true;
  Node fused;
  fused.name = node.name;  // errors name the user's node (or its output)
  fused.op_type = "Attention";
  fused.domain = "onnx_mini";
  fused.opset = 1;
  fused.inputs = {scores->q, k, v};
  if (!mask.empty()) fused.inputs.push_back(mask);
  fused.outputs = node.outputs;
  fused.attributes = {{"scale", FloatAttr("scale", float(scores->scale))},
                      {"kv_repeat", IntAttr("kv_repeat", repeat)},
                      {"masked_rows", IntAttr("masked_rows", masked_rows)}};
  node = std::move(fused);
  return true;
}

using Rule = bool (*)(Graph&, const Index&, size_t, std::vector<bool>&);
// Larger patterns first: they match pieces the smaller rules would change.
constexpr Rule kRules[] = {RewriteAttention, RewriteLayerNorm, RewriteRmsNorm,
                           RewriteSilu,      RewriteMatMulBias, RewritePow2};

}  // namespace

int RewriteGraph(Graph& g) {
  int total = 0;
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<bool> dead(g.nodes.size(), false);
    int count = 0;
    {
      Index ix(g, dead);
      StaticShapes shapes(ix);
      ix.shapes = &shapes;
      // Rule by rule over the whole graph: a pattern containing another
      // (LayerNorm holds an RMSNorm of x - mean) is taken whole first.
      std::vector<bool> changed(g.nodes.size(), false);
      for (Rule rule : kRules)
        for (size_t n = 0; n < g.nodes.size(); ++n) {
          if (dead[n] || changed[n]) continue;
          if (rule(g, ix, n, dead)) {
            changed[n] = true;
            ++count;
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
  return total;
}

}  // namespace onnx_mini
