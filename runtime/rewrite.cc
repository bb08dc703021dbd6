#include "runtime/rewrite.h"

#include <deque>
#include <map>
#include <set>

#include "runtime/element.h"

namespace onnx_mini {
namespace {

// Every name a subgraph mentions (read or written): a superset of what it
// reads from the enclosing graph, which is what matters here.
void SubgraphNames(const Graph& g, std::set<std::string>& out) {
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs) out.insert(in);
    for (const auto& [key, a] : node.attributes) {
      if (a.g) SubgraphNames(*a.g, out);
      for (const auto& sub : a.graphs)
        if (sub) SubgraphNames(*sub, out);
    }
  }
  for (const ValueInfo& o : g.outputs) out.insert(o.name);
}

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
      std::set<std::string> inner;
      for (const auto& [key, a] : node.attributes) {
        if (a.g) SubgraphNames(*a.g, inner);
        for (const auto& sub : a.graphs)
          if (sub) SubgraphNames(*sub, inner);
      }
      for (const std::string& name : inner) ++uses_[name];
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
          gt->dtype() != c.dtype || bt->dtype() != c.dtype)
        continue;
      for (size_t k : c.nodes) dead[k] = true;
      dead[i_mul] = true;
      Node fused;
      fused.name = (node.name.empty() ? node.outputs[0] : node.name) + "/layer_norm";
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
    if (!MatchNormalized(ix, y, c) || wt->dtype() != c.dtype) continue;
    for (size_t k : c.nodes) dead[k] = true;
    Node fused;
    fused.name = node.name.empty() ? node.outputs[0] + "/rms_norm" : node.name + "/rms_norm";
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
// the bias added by the GEMM (ops/matmul.cc), not by a second pass.
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

using Rule = bool (*)(Graph&, const Index&, size_t, std::vector<bool>&);
// Larger patterns first: they match pieces the smaller rules would change.
constexpr Rule kRules[] = {RewriteLayerNorm, RewriteRmsNorm, RewriteSilu, RewriteMatMulBias, RewritePow2};

}  // namespace

int RewriteGraph(Graph& g) {
  int total = 0;
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<bool> dead(g.nodes.size(), false);
    int count = 0;
    {
      const Index ix(g, dead);
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
