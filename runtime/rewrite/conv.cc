// Convolutions as a unit:
//   Conv+BN   BatchNormalization(Conv(x, W, B?), scale, bias, mean, var)
//             (inference mode), W, B and the four BN inputs constants of the
//             conv's M output channels -> Conv(x, W', B') with
//             W' = W * s[oc], B' = (B - mean) * s + bias, s = scale / sqrt(var + eps)
//             (new initializers, computed in double)
//   Conv+act  act(Conv(...)) or act(FusedConv(...)) for act in Relu,
//             LeakyRelu, Clip (constant bounds), HardSigmoid, HardSwish,
//             Sigmoid, Swish (x * sigmoid(x), made by RewriteSilu), Tanh
//             -> onnx_mini::FusedConv with the activation appended to its
//             post-ops
//   Conv+add  Add(Conv(...), z) (either order), z of the conv's output
//             dtype and shape exactly (no broadcast) -> FusedConv(x, W, B, z)
//             with "Add" appended to its post-ops (once)
// FusedConv (ops/nn/conv.cc) takes Conv's attributes plus `activations`
// (strings, applied in order, "Add" meaning + z), `alphas` and `betas`
// (floats, one per entry): oneDNN runs them as post-ops.

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/element.h"
#include "runtime/op.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

constexpr size_t kMaxPostOps = 6;

bool IsConvLike(const Node& n) {
  if (n.op_type == "Conv" && n.domain.empty()) return true;
  return n.op_type == "FusedConv" && n.domain == kInternalDomain;
}

// The live conv-like node that makes `y` (read only by the pattern), or
// nullptr. (Index::Producer sees ai.onnx nodes only: FusedConv is looked up here.)
Node* ConvProducer(Graph& g, const Index& ix, const std::vector<bool>& dead, const std::string& y, size_t* index) {
  if (!ix.Inner(y)) return nullptr;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& p = g.nodes[i];
    if (dead[i] || !IsConvLike(p) || p.outputs.size() != 1 || p.outputs[0] != y || p.inputs.size() < 2) continue;
    *index = i;
    return &g.nodes[i];
  }
  return nullptr;
}

std::vector<std::string> PostOps(const Node& conv) {
  const Attribute* a = conv.attr("activations");
  return a ? a->strings : std::vector<std::string>{};
}

// Turns `node` (the pattern's last node, whose name and output it keeps)
// into a FusedConv of `conv`'s inputs and attributes with one more post-op.
void MakeFused(Node& node, const Node& conv, const std::string& op, float alpha, float beta, const std::string& z) {
  std::vector<std::string> inputs = conv.inputs;
  std::map<std::string, Attribute> attrs = conv.attributes;
  if (!z.empty()) {
    inputs.resize(3);
    inputs.push_back(z);
  }
  Attribute& ops = attrs["activations"];
  ops.name = "activations";
  ops.type = AttrType::kStrings;
  ops.strings.push_back(op);
  for (const char* name : {"alphas", "betas"}) {
    Attribute& f = attrs[name];
    f.name = name;
    f.type = AttrType::kFloats;
    f.floats.push_back(name[0] == 'a' ? alpha : beta);
  }
  node.op_type = "FusedConv";
  node.domain = kInternalDomain;
  node.opset = 1;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attrs);
}

// A scalar constant's value, or `fallback` when the input is absent.
bool ScalarOr(const Index& ix, const Node& n, size_t i, double fallback, double& v) {
  if (!n.has_input(i)) {
    v = fallback;
    return true;
  }
  const Tensor* t = ix.Constant(n.inputs[i]);
  if (!t || t->size() != 1 || t->shape().size() > 1) return false;
  v = GetDouble(*t, 0);
  return !std::isnan(v);
}

// The activation node `n` as a post-op: its name, alpha and beta.
bool Activation(const Index& ix, const Node& n, std::string& op, float& alpha, float& beta) {
  if (!n.domain.empty() || n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return false;
  alpha = beta = 0;
  op = n.op_type;
  const size_t max_inputs = op == "Clip" ? 3 : 1;
  if (n.inputs.size() > max_inputs) return false;
  if (op == "Relu" || op == "HardSwish" || op == "Sigmoid" || op == "Tanh") return true;
  if (op == "LeakyRelu") {
    alpha = n.attr_float("alpha", 0.01f);
    return true;
  }
  if (op == "HardSigmoid") {
    alpha = n.attr_float("alpha", 0.2f);
    beta = n.attr_float("beta", 0.5f);
    return true;
  }
  if (op == "Swish") {
    alpha = n.attr_float("alpha", 1.0f);
    return true;
  }
  if (op == "Clip") {
    const double lowest = std::numeric_limits<float>::lowest(), highest = std::numeric_limits<float>::max();
    double lo = lowest, hi = highest;
    if (n.opset < 11) {
      lo = n.attr_float("min", float(lowest));
      hi = n.attr_float("max", float(highest));
    } else if (!ScalarOr(ix, n, 1, lowest, lo) || !ScalarOr(ix, n, 2, highest, hi)) {
      return false;
    }
    // min > max gives max everywhere in ONNX; oneDNN's clip would not: leave it.
    if (!(lo <= hi)) return false;
    alpha = float(std::max(lo, lowest));
    beta = float(std::min(hi, highest));
    return true;
  }
  return false;
}

bool IsFloat(DType d) {
  return d == DType::kFloat || d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kDouble;
}

// A name no value of the graph has.
std::string FreshName(const Graph& g, const Index& ix, const std::string& base) {
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : absl::StrCat(base, "_", i);
    if (!g.initializers.count(name) && ix.Uses(name) == 0 && !ix.Type(name) && !ix.IsOutput(name)) return name;
  }
}

}  // namespace

bool RewriteConvBatchNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "BatchNormalization" || !node.domain.empty() || node.inputs.size() != 5) return false;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return false;
  if (node.outputs.empty() || node.attr_int("training_mode", 0) != 0 || node.attr_int("spatial", 1) != 1) return false;
  if (node.opset < 7) return false;  // is_test and consumed_inputs
  size_t i_conv;
  const Node* conv = ix.Inner(node.inputs[0]) ? ix.Producer(node.inputs[0], "Conv", &i_conv) : nullptr;
  if (!conv || conv->outputs.size() != 1 || conv->inputs.size() < 2) return false;
  const bool has_b = conv->has_input(2);
  const Tensor* w = ix.Constant(conv->inputs[1]);
  const Tensor* b = has_b ? ix.Constant(conv->inputs[2]) : nullptr;
  if (!w || (has_b && !b) || w->shape().size() < 3 || !IsFloat(w->dtype())) return false;
  const int64_t m = w->shape()[0];
  if (m <= 0 || (b && (b->dtype() != w->dtype() || b->shape() != Shape{m}))) return false;
  const Tensor* p[4];
  for (size_t i = 0; i < 4; ++i) {
    p[i] = ix.Constant(node.inputs[i + 1]);
    if (!p[i] || p[i]->shape() != Shape{m} || !IsFloat(p[i]->dtype())) return false;
  }
  // The BN's X and Y of the conv's dtype (BN-15 allows other scale types).
  const ValueType* ty = ix.Type(node.outputs[0]);
  if (!ty || ty->dtype != w->dtype()) return false;
  const double eps = node.attr_float("epsilon", 1e-5f);
  std::vector<double> s(static_cast<size_t>(m));
  for (int64_t c = 0; c < m; ++c) {
    s[size_t(c)] = GetDouble(*p[0], c) / std::sqrt(GetDouble(*p[3], c) + eps);
    if (!std::isfinite(s[size_t(c)])) return false;
  }
  Tensor w2 = Tensor::Zeros(w->dtype(), w->shape());
  Tensor b2 = Tensor::Zeros(w->dtype(), {m});
  const int64_t per = w->size() / m;
  for (int64_t e = 0; e < w->size(); ++e) SetDouble(w2, e, GetDouble(*w, e) * s[size_t(e / per)]);
  for (int64_t c = 0; c < m; ++c)
    SetDouble(b2, c, ((b ? GetDouble(*b, c) : 0.0) - GetDouble(*p[2], c)) * s[size_t(c)] + GetDouble(*p[1], c));
  const std::string wn = FreshName(g, ix, node.outputs[0] + "/bn_folded_W");
  const std::string bn = FreshName(g, ix, node.outputs[0] + "/bn_folded_B");
  g.initializers[wn] = std::move(w2);
  g.initializers[bn] = std::move(b2);
  const std::string x = conv->inputs[0];
  std::map<std::string, Attribute> attrs = conv->attributes;
  dead[i_conv] = true;
  node.op_type = "Conv";
  node.opset = conv->opset;
  node.inputs = {x, wn, bn};
  node.attributes = std::move(attrs);
  return true;
}

bool RewriteConvActivation(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  std::string op;
  float alpha, beta;
  if (!Activation(ix, node, op, alpha, beta)) return false;
  size_t i_conv;
  Node* conv = ConvProducer(g, ix, dead, node.inputs[0], &i_conv);
  if (!conv || PostOps(*conv).size() >= kMaxPostOps) return false;
  const ValueType* t = ix.Type(node.inputs[0]);
  if (!t || !IsFloat(t->dtype)) return false;
  const Node c = *conv;
  dead[i_conv] = true;
  MakeFused(node, c, op, alpha, beta, "");
  return true;
}

bool RewriteConvAdd(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Add" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string y = node.inputs[size_t(side)];
    const std::string z = node.inputs[size_t(1 - side)];
    size_t i_conv;
    Node* conv = ConvProducer(g, ix, dead, y, &i_conv);
    if (!conv || z == y) continue;
    const std::vector<std::string> ops = PostOps(*conv);
    if (ops.size() >= kMaxPostOps || std::count(ops.begin(), ops.end(), "Add")) continue;
    // z of the conv's output dtype and shape, every dim known: no broadcast.
    const ValueType* ty = ix.Type(y);
    const ValueType* tz = ix.Type(z);
    const std::optional<Dims> dy = ix.DimsOf(y), dz = ix.DimsOf(z);
    if (!ty || !tz || ty->dtype != tz->dtype || !IsFloat(ty->dtype) || !dy || dy != dz) continue;
    if (std::count(dy->begin(), dy->end(), -1)) continue;
    const Node c = *conv;
    dead[i_conv] = true;
    MakeFused(node, c, "Add", 0, 0, z);
    return true;
  }
  return false;
}

}  // namespace rewrite
}  // namespace onnx_mini
