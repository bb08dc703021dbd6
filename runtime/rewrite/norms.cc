// The norms. What must hold for each (the conditions beside the rules below):
//   RMSNorm   x * 1/Sqrt(ReduceMean(x^2, [-1]) + eps) * w, with x^2 as Pow(x, 2)
//             or Mul(x, x), 1/Sqrt(.) as Reciprocal(Sqrt(.)) or Div(1, Sqrt(.)),
//             or x / Sqrt(.), and w a constant 1-D scale whose length is x's
//             last dim, known before running (a last dim known only at run
//             time could be 1, which the pattern broadcasts against w and the
//             fused op refuses)
//             -> RMSNormalization(x, w, axis = -1, epsilon = eps)
//             A Cast to the type its input already has, on x or between the
//             normalized value and w (torch's export of HF's RMSNorm keeps its
//             .to(float32) and .to(input_dtype) as such Casts in float32
//             models), is looked through. The real pair of a 16-bit model,
//             x16 -> Cast(float) -> the norm in float -> Cast(x16's type)
//             -> Mul(w16), is taken too (RMSNormalization(x16, w16) with
//             stash_type float: the statistics in float as written, the one
//             difference the rounding of the normalized value to 16 bits
//             before the weight). 1/Sqrt(v) may also be Pow(v, -0.5) (dynamo's
//             rsqrt). The mean's axis may be written as rank - 1 for a known rank.
//   LayerNorm (x - m) / Sqrt(ReduceMean((x - m)^2, [-1]) + eps) * g + b with
//             m = ReduceMean(x, [-1]), the square as Pow(., 2) or Mul, g and b
//             constant 1-D of x's last dim, known before running (either
//             operand order)
//             -> LayerNormalization(x, g, b, axis = -1, epsilon = eps)

#include "runtime/element.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

// axes naming only the last axis of `v`: [-1], or [rank - 1] for a known rank.
bool IsLastAxis(const Index& ix, const std::string& v, const std::vector<int64_t>& axes) {
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  const std::optional<Dims> d = ix.DimsOf(v);
  return d && !d->empty() && axes[0] == int64_t(d->size()) - 1;
}

// A Cast to the element type its input already has (a copy): its node, or nullptr.
const Node* NoOpCast(const Index& ix, const std::string& name, size_t* index) {
  const Node* cast = ix.Producer(name, "Cast", index);
  if (!cast || cast->inputs.size() != 1) return nullptr;
  const ValueType* t = ix.Type(cast->inputs[0]);
  if (!t || !t->is_tensor() || t->dtype == DType::kUndefined) return nullptr;
  return cast->attr_int("to", 0) == int64_t(t->dtype) ? cast : nullptr;
}

// x * 1/Sqrt(ReduceMean(x^2, [-1]) + eps), the value `y`: its x, eps and
// the nodes that compute it.
struct NormChain {
  std::string x;
  double eps = 0;
  DType dtype = DType::kUndefined;
  std::vector<size_t> nodes;
};

// ReduceMean(x^2, [-1]) + eps as `v`, for the given x.
bool MatchMeanSquare(const Index& ix, const std::string& v, const std::string& x, NormChain& c) {
  size_t i_add, i_mean, i_sq;
  const Node* add = ix.Inner(v) ? ix.Producer(v, "Add", &i_add) : nullptr;
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
    if (!IsLastAxis(ix, mean->inputs[0], axes)) continue;
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
    c.nodes.insert(c.nodes.end(), {i_add, i_mean, i_sq});
    return true;
  }
  return false;
}

// Sqrt(ReduceMean(x^2, [-1]) + eps) as `s`, for the given x.
bool MatchRms(const Index& ix, const std::string& s, const std::string& x, NormChain& c) {
  size_t i_sqrt;
  const Node* sqrt = ix.Inner(s) ? ix.Producer(s, "Sqrt", &i_sqrt) : nullptr;
  if (!sqrt || sqrt->inputs.size() != 1) return false;
  c.nodes.push_back(i_sqrt);
  return MatchMeanSquare(ix, sqrt->inputs[0], x, c);
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
    if (const Node* p = ix.Producer(r, "Pow", &i_r); p && Binary(*p) && ix.ConstantIs(p->inputs[1], -0.5)) {
      c.nodes = {i_y, i_r};
      if (MatchMeanSquare(ix, p->inputs[0], x, c)) return true;
      continue;
    }
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
  return IsLastAxis(ix, mean->inputs[0], axes) ? mean : nullptr;
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

}  // namespace

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

// A Cast from float to `to` (a 16-bit float type): its node, or nullptr.
const Node* NarrowingCast(const Index& ix, const std::string& name, DType to, size_t* index) {
  const Node* cast = ix.Producer(name, "Cast", index);
  if (!cast || cast->inputs.size() != 1 || cast->attr_int("to", 0) != int64_t(to)) return nullptr;
  const ValueType* t = ix.Type(cast->inputs[0]);
  return t && t->is_tensor() && t->dtype == DType::kFloat ? cast : nullptr;
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
    const bool narrow = wt->dtype() == DType::kFloat16 || wt->dtype() == DType::kBFloat16;
    // The normalized value, through a no-op Cast (or a 16-bit model's
    // narrowing one) before the weight.
    size_t i_out_cast = 0, i_in_cast = 0;
    const Node* out_cast = NoOpCast(ix, y, &i_out_cast);
    bool widened = false;  // the chain in float between a 16-bit x and w
    if (!out_cast && narrow && (out_cast = NarrowingCast(ix, y, wt->dtype(), &i_out_cast))) widened = true;
    const std::string normed = out_cast ? out_cast->inputs[0] : y;
    if (out_cast && !ix.Inner(normed)) continue;
    NormChain c;
    if (!MatchNormalized(ix, normed, c)) continue;
    // The chain in float: its x the float Cast of a value of w's type.
    const Node* in_cast = ix.IsOutput(c.x) ? nullptr : NoOpCast(ix, c.x, &i_in_cast);
    if (widened) {
      in_cast = ix.Producer(c.x, "Cast", &i_in_cast);
      const ValueType* src = in_cast && in_cast->inputs.size() == 1 ? ix.Type(in_cast->inputs[0]) : nullptr;
      const ValueType* xt = ix.Type(c.x);
      if (!src || src->dtype != wt->dtype() || !xt || xt->dtype != DType::kFloat ||
          in_cast->attr_int("to", 0) != int64_t(DType::kFloat))
        continue;
    } else if (wt->dtype() != c.dtype) {
      continue;
    }
    if (!LastDimIs(ix, c.x, wt->size())) continue;
    if (out_cast) dead[i_out_cast] = true;
    // x through a Cast: the fused node reads the Cast's input (always for a
    // widening Cast: the norm takes w's type), and the Cast goes when only
    // the pattern reads it.
    if (in_cast) {
      int reads = 0;
      for (size_t k : c.nodes)
        for (const std::string& in : g.nodes[k].inputs) reads += in == c.x;
      if (ix.Uses(c.x) == reads && !ix.IsOutput(c.x)) {
        dead[i_in_cast] = true;
        c.x = in_cast->inputs[0];
      } else if (widened) {
        c.x = in_cast->inputs[0];
      }
    }
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
    if (widened) fused.attributes["stash_type"] = IntAttr("stash_type", 1);  // statistics in float, as written
    node = std::move(fused);
    return true;
  }
  return false;
}

}  // namespace rewrite
}  // namespace onnx_mini
