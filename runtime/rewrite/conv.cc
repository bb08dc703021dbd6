// Convolutions as a unit:
//   Conv+BN   BatchNormalization(Conv(x, W, B?), scale, bias, mean, var)
//             (inference mode), W, B and the four BN inputs constants of the
//             conv's M output channels -> Conv(x, W', B') with
//             W' = W * s[oc], B' = (B - mean) * s + bias, s = scale / sqrt(var + eps)
//             (new initializers, computed in double); the same for
//             ConvTranspose (its W is (C, M / group, k...))
//   Conv+act  act(Conv(...)) or act(FusedConv(...)) for act in Relu,
//             LeakyRelu, Clip (constant bounds), HardSigmoid, HardSwish,
//             Sigmoid, Swish (x * sigmoid(x), made by RewriteSilu), Tanh
//             -> onnx_mini::FusedConv with the activation appended to its
//             post-ops
//             Max(y, c) and Min(y, c), c a one-element constant, are
//             clips with one bound
//   affine    Mul(y, a) and Add(y, b) of a FusedConv's output y and
//             one-element constants -> a Linear post-op (a * x + b)
//   Conv+add  Add(Conv(...), z) (either order), z of the conv's output
//             dtype and shape exactly (no broadcast) -> FusedConv(x, W, B, z)
//             with "Add" appended to its post-ops (once)
//   Conv*c+c  Mul(Conv(x, W, B?), s) and Add(Conv(x, W, B?), c) (either
//             order), s and c constants of one value or one per output
//             channel ((M, 1, ...) or (1, M, 1, ...), at most the conv's
//             rank), W and B constants -> Conv(x, W * s, B * s) and
//             Conv(x, W, B + c) (PaddleOCR's exports scale and shift so);
//             the same for ConvTranspose, as Conv+BN
//   scale+res Add(y, Mul(y, s)) (any order), float or double, opset 7 or
//             later, the Mul read only there -> Mul(y, Add(s, 1)): one pass
//             over y instead of two where
//             s is small (PP-OCRv4's residual squeeze-excite: s per channel)
//   HardSwish Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6) (Mul and Add in either
//             order; or the Mul by 1/6) -> HardSwish(x) (opset 14), which
//             the activation rule then fuses into a conv before it
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

// The post-ops that run as oneDNN's eltwise_linear (HardSigmoid's first
// step): oneDNN 2.6 computes a conv with two of them wrong, so a FusedConv
// gets one at most (ConvPrimitive declines more).
int LinearPostOps(const std::vector<std::string>& ops) {
  return int(std::count(ops.begin(), ops.end(), "Linear") + std::count(ops.begin(), ops.end(), "HardSigmoid"));
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
    // The post-op keeps its bounds in float: a double bound must be one.
    if (!(lo <= hi) || double(float(lo)) != lo || double(float(hi)) != hi) return false;
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

// Drops the initializers among `names` that the pattern alone read: the
// session keeps every initializer, and the folded copies replace them.
void DropUnread(Graph& g, const Index& ix, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (!name.empty() && ix.Uses(name) <= 1 && !ix.IsOutput(name)) g.initializers.erase(name);
}

// Turns `node` into Conv(x, w, b) with `conv`'s attributes and marks `conv`
// dead; `read` names the constants the pattern read (dropped if unread now).
void MakeConv(Graph& g, const Index& ix, Node& node, size_t i_conv, Tensor w, Tensor b, std::vector<bool>& dead,
              std::vector<std::string> read) {
  const Node& conv = g.nodes[i_conv];
  read.insert(read.end(), conv.inputs.begin() + 1, conv.inputs.end());
  const std::string wn = FreshName(g, ix, node.outputs[0] + "/folded_W");
  const std::string bn = FreshName(g, ix, node.outputs[0] + "/folded_B");
  g.initializers[wn] = std::move(w);
  g.initializers[bn] = std::move(b);
  const std::string x = conv.inputs[0];
  std::map<std::string, Attribute> attrs = conv.attributes;
  const int64_t opset = conv.opset;
  dead[i_conv] = true;
  node.op_type = conv.op_type;
  node.domain.clear();
  node.opset = opset;
  node.inputs = {x, wn, bn};
  node.attributes = std::move(attrs);
  DropUnread(g, ix, read);
}

// The constant `name` as m per-channel values of a conv output of `rank`
// dims: one value, or (M, 1, ...) / (1, M, 1, ...) right-aligned to the output.
bool PerChannel(const Index& ix, const std::string& name, int64_t m, size_t rank, DType dt, std::vector<double>& v) {
  const Tensor* t = ix.Constant(name);
  if (!t || t->dtype() != dt || t->shape().size() > rank) return false;
  const Shape& s = t->shape();
  v.assign(size_t(m), 0);
  if (t->size() == 1) {
    std::fill(v.begin(), v.end(), GetDouble(*t, 0));
    return true;
  }
  // The channel axis, right-aligned: index 1 of `rank` dims.
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t axis = rank - s.size() + i;
    if (s[i] != (axis == 1 ? m : 1)) return false;
  }
  if (s.size() < rank - 1) return false;  // no channel axis
  for (int64_t c = 0; c < m; ++c) v[size_t(c)] = GetDouble(*t, c);
  return true;
}

// A Conv or ConvTranspose making `y` (read only by the pattern) with
// constant float W (rank 3 or more) and B (if any: M values), whose output
// channels can take a scale and a shift.
struct FoldableConv {
  size_t index = 0;
  const Node* node = nullptr;
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;  // null: none
  int64_t m = 0;              // output channels
  bool transposed = false;
  int64_t group = 1, w0 = 0, w1 = 0, taps = 0;
  // The output channel of W's element e: Conv's W is (M, C / group, k...);
  // ConvTranspose's (C, M / group, k...), input channel c's group g giving
  // channel g * M / group + mo.
  int64_t Channel(int64_t e) const {
    if (!transposed) return e / (w1 * taps);
    return e / (w1 * taps) / (w0 / group) * w1 + e / taps % w1;
  }
};

bool FindFoldableConv(const Index& ix, const std::string& y, FoldableConv& f) {
  if (!ix.Inner(y)) return false;
  f.node = ix.Producer(y, "Conv", &f.index);
  if (!f.node) f.node = ix.Producer(y, "ConvTranspose", &f.index);
  if (!f.node || f.node->outputs.size() != 1 || f.node->inputs.size() < 2) return false;
  f.w = ix.Constant(f.node->inputs[1]);
  const bool has_b = f.node->has_input(2);
  f.b = has_b ? ix.Constant(f.node->inputs[2]) : nullptr;
  if (!f.w || (has_b && !f.b) || f.w->shape().size() < 3 || !IsFloat(f.w->dtype())) return false;
  f.transposed = f.node->op_type == "ConvTranspose";
  f.group = f.transposed ? f.node->attr_int("group", 1) : 1;
  f.w0 = f.w->shape()[0];
  f.w1 = f.w->shape()[1];
  if (f.group < 1 || f.w0 <= 0 || f.w1 <= 0 || f.w0 % f.group != 0) return false;
  f.m = f.transposed ? f.w1 * f.group : f.w0;
  f.taps = f.w->size() / (f.w0 * f.w1);
  return !f.b || (f.b->dtype() == f.w->dtype() && f.b->shape() == Shape{f.m});
}

}  // namespace

bool RewriteConvScaleShift(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  const bool mul = node.op_type == "Mul";
  if ((!mul && node.op_type != "Add") || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1)
    return false;
  for (int side = 0; side < 2; ++side) {
    const std::string& y = node.inputs[size_t(side)];
    const std::string& k = node.inputs[size_t(1 - side)];
    FoldableConv f;
    if (!FindFoldableConv(ix, y, f)) continue;
    const Tensor* w = f.w;
    const Tensor* b = f.b;
    const int64_t m = f.m;
    const ValueType* ty = ix.Type(node.outputs[0]);
    std::vector<double> v;
    if (!ty || ty->dtype != w->dtype() || !PerChannel(ix, k, m, w->shape().size(), w->dtype(), v)) continue;
    for (double x : v)
      if (!std::isfinite(x)) return false;
    Tensor w2 = Tensor::Zeros(w->dtype(), w->shape());
    Tensor b2 = Tensor::Zeros(w->dtype(), {m});
    for (int64_t e = 0; e < w->size(); ++e)
      SetDouble(w2, e, GetDouble(*w, e) * (mul ? v[size_t(f.Channel(e))] : 1.0));
    for (int64_t c = 0; c < m; ++c) {
      const double bc = b ? GetDouble(*b, c) : 0.0;
      SetDouble(b2, c, mul ? bc * v[size_t(c)] : bc + v[size_t(c)]);
    }
    MakeConv(g, ix, node, f.index, std::move(w2), std::move(b2), dead, {k});
    return true;
  }
  return false;
}

bool RewriteScaleResidual(Graph& g, const Index& ix, size_t n, std::vector<bool>&) {
  Node& node = g.nodes[n];
  // Before opset 7 Add and Mul broadcast only with attributes the new nodes lack.
  if (node.op_type != "Add" || !node.domain.empty() || node.opset < 7 || !Binary(node) || node.outputs.size() != 1)
    return false;
  for (int side = 0; side < 2; ++side) {
    const std::string y = node.inputs[size_t(side)];
    const std::string& product = node.inputs[size_t(1 - side)];
    size_t i_mul;
    Node* mul = nullptr;
    if (ix.Inner(product) && ix.Producer(product, "Mul", &i_mul)) mul = &g.nodes[i_mul];
    if (!mul || mul->opset < 7 || !Binary(*mul) || mul->outputs.size() != 1 || mul->inputs[0] == mul->inputs[1])
      continue;
    const int which = mul->inputs[0] == y ? 0 : mul->inputs[1] == y ? 1 : -1;
    if (which < 0) continue;
    const std::string s = mul->inputs[size_t(1 - which)];
    const ValueType* ty = ix.Type(y);
    const ValueType* ts = ix.Type(s);
    // float and double: s + 1 rounds away s's low bits, at 16 bits too many.
    // (y infinite and s zero gave NaN, now y.)
    if (!ty || !ts || ty->dtype != ts->dtype || (ty->dtype != DType::kFloat && ty->dtype != DType::kDouble)) continue;
    // The Mul becomes s + 1 (a new value: its shape is s's), the Add y times
    // it. Edited in place and left unmarked: the pass's index does not know
    // the new names, so no later rule of this pass matches on them.
    const std::string one = FreshName(g, ix, node.outputs[0] + "/one");
    const std::string s1 = FreshName(g, ix, node.outputs[0] + "/s_plus_1");
    Tensor t = Tensor::Zeros(ts->dtype, {});
    SetDouble(t, 0, 1.0);
    g.initializers[one] = std::move(t);
    mul->op_type = "Add";
    mul->inputs = {s, one};
    mul->outputs = {s1};
    mul->attributes.clear();
    node.op_type = "Mul";
    node.inputs = {y, s1};
    node.attributes.clear();
    return true;
  }
  return false;
}

bool RewriteHardSwish(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (!node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  // Div(p, 6) or Mul(p, 1/6) (either order).
  std::string p;
  if (node.op_type == "Div" && ix.ConstantIs(node.inputs[1], 6)) {
    p = node.inputs[0];
  } else if (node.op_type == "Mul") {
    for (int side = 0; side < 2 && p.empty(); ++side) {
      const Tensor* t = ix.Constant(node.inputs[size_t(1 - side)]);
      if (t && t->size() == 1 && t->shape().size() <= 1 && std::fabs(GetDouble(*t, 0) - 1.0 / 6) < 1e-6)
        p = node.inputs[size_t(side)];
    }
  }
  size_t i_mul, i_clip, i_add;
  const Node* mul = !p.empty() && ix.Inner(p) ? ix.Producer(p, "Mul", &i_mul) : nullptr;
  if (!mul || !Binary(*mul)) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string x = mul->inputs[size_t(side)];
    const std::string& cl = mul->inputs[size_t(1 - side)];
    const Node* clip = ix.Inner(cl) ? ix.Producer(cl, "Clip", &i_clip) : nullptr;
    std::string op;
    float lo, hi;
    if (!clip || !Activation(ix, *clip, op, lo, hi) || lo != 0 || hi != 6) continue;
    const Node* add = ix.Inner(clip->inputs[0]) ? ix.Producer(clip->inputs[0], "Add", &i_add) : nullptr;
    if (!add || !Binary(*add)) continue;
    const bool x_first = add->inputs[0] == x && ix.ConstantIs(add->inputs[1], 3);
    const bool x_second = add->inputs[1] == x && ix.ConstantIs(add->inputs[0], 3);
    if (!x_first && !x_second) continue;
    // One-element constants broadcast no further than x of rank >= 1.
    const ValueType* tx = ix.Type(x);
    const ValueType* ty = ix.Type(node.outputs[0]);
    const std::optional<Dims> dx = ix.DimsOf(x);
    if (!tx || !ty || !dx || dx->empty() || tx->dtype != ty->dtype || !IsFloat(tx->dtype)) continue;
    dead[i_mul] = dead[i_clip] = dead[i_add] = true;
    node.op_type = "HardSwish";
    node.opset = 14;
    node.inputs = {x};
    node.attributes.clear();
    return true;
  }
  return false;
}

bool RewriteConvBatchNorm(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "BatchNormalization" || !node.domain.empty() || node.inputs.size() != 5) return false;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return false;
  if (node.outputs.empty() || node.attr_int("training_mode", 0) != 0 || node.attr_int("spatial", 1) != 1) return false;
  if (node.opset < 7) return false;  // is_test and consumed_inputs
  FoldableConv f;
  if (!FindFoldableConv(ix, node.inputs[0], f)) return false;
  const Tensor* w = f.w;
  const Tensor* b = f.b;
  const int64_t m = f.m;
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
  for (int64_t e = 0; e < w->size(); ++e) SetDouble(w2, e, GetDouble(*w, e) * s[size_t(f.Channel(e))]);
  for (int64_t c = 0; c < m; ++c)
    SetDouble(b2, c, ((b ? GetDouble(*b, c) : 0.0) - GetDouble(*p[2], c)) * s[size_t(c)] + GetDouble(*p[1], c));
  MakeConv(g, ix, node, f.index, std::move(w2), std::move(b2), dead,
           std::vector<std::string>(node.inputs.begin() + 1, node.inputs.end()));
  return true;
}

// Max(x, c) or Min(x, c) (either order), c a constant of one element of
// x's dtype that broadcasts no further than x (rank at most x's): a clip
// with one bound (openWakeWord's Max(LeakyRelu(conv), -0.4)). Sets x.
bool OneSidedClip(const Index& ix, const Node& n, std::string& x, float& lo, float& hi) {
  const bool max = n.op_type == "Max";
  if ((!max && n.op_type != "Min") || !n.domain.empty() || !Binary(n) || n.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const Tensor* c = ix.Constant(n.inputs[size_t(1 - side)]);
    const std::optional<Dims> dx = ix.DimsOf(n.inputs[size_t(side)]);
    const ValueType* tx = ix.Type(n.inputs[size_t(side)]);
    if (!c || c->size() != 1 || !dx || c->shape().size() > dx->size() || !tx || tx->dtype != c->dtype()) continue;
    const double v = GetDouble(*c, 0);
    if (!std::isfinite(v) || double(float(v)) != v) continue;  // the post-op's bound is a float
    x = n.inputs[size_t(side)];
    lo = max ? float(v) : std::numeric_limits<float>::lowest();
    hi = max ? std::numeric_limits<float>::max() : float(v);
    return true;
  }
  return false;
}

bool RewriteConvActivation(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  std::string op, x;
  float alpha, beta;
  if (Activation(ix, node, op, alpha, beta)) x = node.inputs[0];
  else if (OneSidedClip(ix, node, x, alpha, beta)) op = "Clip";
  else return false;
  size_t i_conv;
  Node* conv = ConvProducer(g, ix, dead, x, &i_conv);
  if (!conv || PostOps(*conv).size() >= kMaxPostOps) return false;
  if (op == "HardSigmoid" && LinearPostOps(PostOps(*conv)) > 0) return false;
  const ValueType* t = ix.Type(x);
  if (!t || !IsFloat(t->dtype)) return false;
  const Node c = *conv;
  dead[i_conv] = true;
  MakeFused(node, c, op, alpha, beta, "");
  return true;
}

// PP-LCNetV3's learnable affine block: Mul(y, a) then Add(., b) with a and b
// one-element constants after a conv's activation (where the weights can no
// longer take them) -> a Linear post-op (alpha * x + beta), merged into a
// Linear just before it.
bool RewriteConvAffine(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  const bool mul = node.op_type == "Mul";
  if ((!mul && node.op_type != "Add") || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1)
    return false;
  for (int side = 0; side < 2; ++side) {
    const std::string y = node.inputs[size_t(side)];
    const Tensor* c = ix.Constant(node.inputs[size_t(1 - side)]);
    const ValueType* ty = ix.Type(y);
    const std::optional<Dims> dy = ix.DimsOf(y);
    if (!c || c->size() != 1 || !ty || !dy || c->shape().size() > dy->size() || c->dtype() != ty->dtype ||
        !IsFloat(ty->dtype))
      continue;
    const double v = GetDouble(*c, 0);
    if (!std::isfinite(v) || double(float(v)) != v) continue;  // the post-op keeps a float
    size_t i_conv;
    Node* conv = ConvProducer(g, ix, dead, y, &i_conv);
    // Straight after the conv the weights take it (RewriteConvScaleShift, in
    // the next pass when they were folded in this one).
    if (!conv || PostOps(*conv).empty()) continue;
    const std::vector<std::string> ops = PostOps(*conv);
    Node c2 = *conv;
    // Merged into a last Linear where its new coefficients stay floats.
    if (!ops.empty() && ops.back() == "Linear") {
      float& alpha = c2.attributes["alphas"].floats.back();
      float& beta = c2.attributes["betas"].floats.back();
      const double a2 = mul ? double(alpha) * v : double(alpha), b2 = mul ? double(beta) * v : double(beta) + v;
      if (double(float(a2)) == a2 && double(float(b2)) == b2) {
        alpha = float(a2);
        beta = float(b2);
        dead[i_conv] = true;
        node.op_type = "FusedConv";
        node.domain = kInternalDomain;
        node.opset = 1;
        node.inputs = c2.inputs;
        node.attributes = std::move(c2.attributes);
        return true;
      }
    }
    if (ops.size() >= kMaxPostOps || LinearPostOps(ops) > 0) continue;
    dead[i_conv] = true;
    MakeFused(node, c2, "Linear", mul ? float(v) : 1.f, mul ? 0.f : float(v), c2.has_input(3) ? c2.inputs[3] : "");
    return true;
  }
  return false;
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

namespace onnx_mini {
namespace rewrite {

// Whether `v` is made from `from` through pointwise convs without pads (as
// their X) and one-input activations alone: ops that keep the batch and the
// spatial dims (a pool's 1s).
bool FromKeepingShape(const Graph& g, const Index& ix, const std::vector<bool>& dead, std::string v,
                      const std::string& from) {
  static const char* const kKeep[] = {"Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh", "Clip"};
  for (int step = 0; step < 16; ++step) {
    if (v == from) return true;
    const Node* made = nullptr;
    for (size_t i = 0; i < g.nodes.size() && !made; ++i)
      if (!dead[i] && std::count(g.nodes[i].outputs.begin(), g.nodes[i].outputs.end(), v)) made = &g.nodes[i];
    if (!made || made->inputs.empty() || made->outputs.size() != 1) return false;
    if (IsConvLike(*made)) {
      const std::optional<Dims> w = made->inputs.size() > 1 ? ix.DimsOf(made->inputs[1]) : std::nullopt;
      const Attribute* pads = made->attr("pads");
      const Attribute* auto_pad = made->attr("auto_pad");
      if (!w || w->size() < 3 || std::any_of(w->begin() + 2, w->end(), [](int64_t d) { return d != 1; }) ||
          (pads && std::any_of(pads->ints.begin(), pads->ints.end(), [](int64_t p) { return p != 0; })) ||
          (auto_pad && auto_pad->s != "NOTSET" && auto_pad->s != "VALID"))
        return false;
    } else if (!made->domain.empty() || std::none_of(std::begin(kKeep), std::end(kKeep), [&](const char* op) {
                 return made->op_type == op;
               })) {
      return false;
    }
    v = made->inputs[0];
  }
  return false;
}

// Squeeze-excite, after every other rule (before the layouts): a conv's
// output y read by GlobalAveragePool(y) -> g and Mul(y, s) (either order)
// -> m alone, s of shape (N or 1, C, 1...), m read by one conv as its X
// alone -> the first conv makes g as its second output (Y's channel means)
// and the second reads y with s as its channel scale S (FusedConv's input
// 4, X's channels scaled before the conv): y is then read by a conv alone,
// and may stay channels last. (After the other rules: the residual rule
// rebuilds a FusedConv's inputs up to Z.)
bool RewriteConvSqueezeExcite(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  const Node& mul = g.nodes[n];
  if (dead[n] || mul.op_type != "Mul" || !mul.domain.empty() || !Binary(mul) || mul.outputs.size() != 1) return false;
  const std::string& m = mul.outputs[0];
  if (!ix.Inner(m)) return false;
  // y: a conv's only output; s: the other factor.
  for (int side = 0; side < 2; ++side) {
    const std::string& y = mul.inputs[size_t(side)];
    const std::string& sc = mul.inputs[size_t(1 - side)];
    if (y == sc || ix.IsOutput(y) || ix.Uses(y) != 2) continue;
    size_t ip = g.nodes.size(), ig = g.nodes.size(), ir = g.nodes.size();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (dead[i]) continue;
      const Node& x = g.nodes[i];
      if (IsConvLike(x) && x.outputs.size() == 1 && x.outputs[0] == y && x.inputs.size() >= 2) ip = i;
      if (x.op_type == "GlobalAveragePool" && x.domain.empty() && x.inputs.size() == 1 && x.inputs[0] == y &&
          x.outputs.size() == 1 && !x.outputs[0].empty())
        ig = i;
      if (IsConvLike(x) && !x.inputs.empty() && x.inputs[0] == m && x.inputs.size() <= 4 && x.outputs.size() == 1)
        ir = i;
    }
    if (ip == g.nodes.size() || ig == g.nodes.size() || ir == g.nodes.size()) continue;
    const std::optional<Dims> dy = ix.DimsOf(y), ds = ix.DimsOf(sc);
    const ValueType* ty = ix.Type(y);
    const ValueType* ts = ix.Type(sc);
    if (!dy || !ds || !ty || !ts || ty->dtype != ts->dtype || !IsFloat(ty->dtype) || dy->size() < 3 ||
        ds->size() != dy->size() || (*dy)[1] < 1 || (*ds)[1] != (*dy)[1])
      continue;
    // s (N or 1, C, 1...): known so, or (dynamic dims) made from the pool's
    // output by ops that keep its shape.
    const bool known = ((*ds)[0] == 1 || ((*dy)[0] >= 1 && (*ds)[0] == (*dy)[0])) &&
                       std::all_of(ds->begin() + 2, ds->end(), [](int64_t d) { return d == 1; });
    if (!known && !FromKeepingShape(g, ix, dead, sc, g.nodes[ig].outputs[0])) continue;
    auto fused = [](Node& c) {
      if (c.op_type != "Conv") return;
      c.op_type = "FusedConv";
      c.domain = kInternalDomain;
      c.opset = 1;
    };
    Node& producer = g.nodes[ip];
    Node& reader = g.nodes[ir];
    fused(producer);
    producer.outputs.push_back(g.nodes[ig].outputs[0]);
    fused(reader);
    reader.inputs[0] = y;
    reader.inputs.resize(4);
    reader.inputs.push_back(sc);
    dead[ig] = dead[n] = true;
    return true;
  }
  return false;
}

namespace {

// Whether the value `y`, made by conv-like node `producer`, can stay channels
// last: a float or bfloat16 value of 3 to 5 dims, not a graph output, read
// only by conv-like nodes, each as its X, or as the residual Z of a
// FusedConv whose own output stays channels last (a residual block's
// output, read by the next block's first conv and added by its last:
// `depth` bounds that recursion). `readers` gets (node, input) pairs.
bool StaysChannelsLast(const Graph& g, const Index& ix, const std::vector<bool>& dead, const Node& producer,
                       std::vector<std::pair<size_t, size_t>>* readers, int depth = 0) {
  // (A second output is Y's channel means, (N, M, 1...): the same in either layout.)
  if (depth > 64 || !IsConvLike(producer) || producer.outputs.empty() || producer.outputs.size() > 2 ||
      producer.inputs.size() < 2)
    return false;
  const std::string& y = producer.outputs[0];
  const ValueType* t = ix.Type(y);
  const std::optional<Dims> dims = ix.DimsOf(y);
  if (y.empty() || ix.IsOutput(y) || !t || (t->dtype != DType::kFloat && t->dtype != DType::kBFloat16) || !dims ||
      dims->size() < 3 || dims->size() > 5)
    return false;
  int count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead[i]) continue;
    const Node& r = g.nodes[i];
    const int reads = int(std::count(r.inputs.begin(), r.inputs.end(), y));
    if (reads == 0) continue;
    if (!IsConvLike(r) || r.outputs.empty() || r.outputs.size() > 2) return false;
    for (size_t at = 0; at < r.inputs.size(); ++at) {
      if (r.inputs[at] != y) continue;
      if (at != 0 && !(at == 3 && r.op_type == "FusedConv" && StaysChannelsLast(g, ix, dead, r, nullptr, depth + 1)))
        return false;
      if (readers) readers->emplace_back(i, at);
    }
    count += reads;
  }
  return count > 0 && count == ix.Uses(y);  // else a subgraph reads it too
}

}  // namespace

// After every other rule: a float or bfloat16 value that a Conv or FusedConv
// makes and only convolutions read (as X, or as the residual Z of a conv
// whose output stays so too) stays channels last from one to the next, so
// that oneDNN reorders it neither out of the first nor into the others
// (FusedConv's `channels_last`: X's, Y's and Z's flags). Its shape stays
// NCHW: only its bytes are laid out otherwise, and no other op sees them.
bool RewriteConvLayout(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  std::vector<std::pair<size_t, size_t>> readers;
  if (dead[n] || !StaysChannelsLast(g, ix, dead, g.nodes[n], &readers)) return false;
  auto set = [](Node& c, size_t flag) {
    if (c.op_type == "Conv") {
      c.op_type = "FusedConv";
      c.domain = kInternalDomain;
      c.opset = 1;
    }
    Attribute& a = c.attributes["channels_last"];
    a.name = "channels_last";
    a.type = AttrType::kInts;
    a.ints.resize(std::max<size_t>(a.ints.size(), flag == 2 ? 3 : 2), 0);
    a.ints[flag] = 1;
  };
  set(g.nodes[n], 1);
  for (const auto& [i, at] : readers) set(g.nodes[i], at == 0 ? 0 : 2);
  return true;
}

}  // namespace rewrite
}  // namespace onnx_mini
