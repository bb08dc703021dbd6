// Attention:
//   SDPA      MatMul(Softmax(M(S), last axis), V') with S = MatMul(Q,
//             Transpose(K', [0, 1, 3, 2])) divided by a constant c (scale
//             1/c), times a constant c (scale c) or as is (scale 1), Q and
//             K (or K's Transpose) each optionally times a constant too (the
//             SDPA export's split scale: the scale is the product), and M(S)
//             Where(mask, S, c) (c a constant <= -1e30 or -inf), Add(S, mask)
//             (either order) or S -> onnx_mini::Attention(Q, K, V, mask;
//             scale, kv_repeat, masked_rows) (internal op, ops/llm/attention.cc).
//             K', V' = Reshape(Expand(Unsqueeze(K, [2]), [1|B, 1|KV, G,
//             1|T, 1|D]), [0 | B, KV * G, -1 | T, D]) (shapes constant or
//             built at run time from K's own Shape by Gather, Unsqueeze and
//             Concat, torch's Reshape to [-1] and its expand's Where(Equal(s,
//             -1), 1, s)), both with the same G and K's KV heads and head size D
//             known, each KV head repeated G times in a row, or Tile(K, [1,
//             G, 1, 1]) of one KV head (with more, Tile orders heads h mod
//             KV, not Attention's h / G), are taken as the GQA repeat (the op gets K, V and
//             kv_repeat G); otherwise the op gets K', V' as they are, which
//             must be known 4-D with the same known head count. Q must be
//             known 4-D and the mask of rank 1 to 4 (ranks and dims as the
//             session infers them, through any op). What the op does to equal the pattern:
//             - it broadcasts batch, heads, query and key lengths of Q, K, V
//               and the mask as MatMul, Where and Add do (a Q batch of 1
//               against K/V of 2, one Q head against K's heads, a mask wider
//               than the scores), with any shapes from run to run, and
//               refuses (naming the node) what the pattern's ops refuse;
//             - a row whose mask hides every key gives NaN for Add(S, mask)
//               with -inf and Where(mask, S, -inf) (Softmax of a row of -inf),
//               and the mean of V's rows for Where with a finite c (Softmax of
//               a constant row), never Attention's 0;
//             - with the guard Where(IsNaN(P), 0, P) after the Softmax
//               (SDPA exports), such NaN rows are zeros (masked_rows 0);
//               a NaN that Q, K or V bring stays NaN in the op, where the
//               guard would zero its row;
//             - hidden keys weigh 0: with a finite c the pattern gives them
//               exp(c - max), which is 0 unless every visible score of the
//               row is below c + 745 (about -1e30); the one difference left,
//               with the NaN or infinite values the kernel does not read at
//               hidden keys.
//             KV cache: when K' (or the repeat's x) and V' are each
//             Concat(past, new) on axis 2 of two 4-D values of Q's type,
//             the op takes past and new (inputs 4, 5 past_key, past_value;
//             1, 2 the new rows) and writes the Concat outputs itself
//             (outputs 1, 2: present_key, present_value) while it reads
//             them, exactly as Concat would; an output is dropped when
//             nothing else reads it. A present that other nodes read stays
//             theirs to read, unless one of them leads to the op's own
//             inputs (Shape(present) into the mask): then the Concat stays.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "runtime/checked.h"
#include "runtime/element.h"
#include "runtime/op.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

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

// One element of a 1-D int64 shape value as far as the graph tells before
// running: a number (`value`), and/or dim `axis` of value `of` (read through
// Shape, Gather, Unsqueeze and Concat, as exporters compute an Expand or
// Reshape shape from the tensor's own shape).
struct ShapeElem {
  std::optional<int64_t> value;
  std::string of;
  int64_t axis = -1;
};

std::optional<std::vector<ShapeElem>> ShapeElems(const Index& ix, const std::string& s, int depth = 0) {
  if (depth > 6) return std::nullopt;
  std::vector<ShapeElem> out;
  if (const Tensor* t = ix.Constant(s)) {
    if (t->dtype() != DType::kInt64 || t->shape().size() > 1 || t->size() > 8) return std::nullopt;
    for (int64_t k = 0; k < t->size(); ++k) out.push_back({t->data<int64_t>()[k], "", -1});
    return out;
  }
  // A dim of y (through Shape) with its value when inferred.
  const auto dim_of = [&](const std::string& y, int64_t axis) -> std::optional<ShapeElem> {
    const auto d = ix.DimsOf(y);
    if (!d) return std::nullopt;
    const int64_t rank = int64_t(d->size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    ShapeElem e{std::nullopt, y, axis};
    if ((*d)[size_t(axis)] >= 0) e.value = (*d)[size_t(axis)];
    return e;
  };
  if (const Node* shape = ix.Producer(s, "Shape"); shape && shape->inputs.size() == 1) {
    const auto d = ix.DimsOf(shape->inputs[0]);
    if (!d) return std::nullopt;
    const int64_t rank = int64_t(d->size());
    int64_t start = shape->attr_int("start", 0), end = shape->attr_int("end", rank);
    start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
    end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
    for (int64_t a = start; a < end; ++a) out.push_back(*dim_of(shape->inputs[0], a));
    return out;
  }
  if (const Node* gather = ix.Producer(s, "Gather"); gather && Binary(*gather) && gather->attr_int("axis", 0) == 0) {
    const Node* shape = ix.Producer(gather->inputs[0], "Shape");
    const Tensor* idx = ix.Constant(gather->inputs[1]);
    if (!shape || shape->inputs.size() != 1 || shape->attr_int("start", 0) != 0 || shape->attr("end") ||
        !idx || idx->dtype() != DType::kInt64 || idx->size() != 1 || idx->shape().size() > 1)
      return std::nullopt;
    const auto e = dim_of(shape->inputs[0], idx->data<int64_t>()[0]);
    if (!e) return std::nullopt;
    return std::vector<ShapeElem>{*e};
  }
  if (const Node* unsqueeze = ix.Producer(s, "Unsqueeze"); unsqueeze && !unsqueeze->inputs.empty()) {
    // A scalar made 1-D: the same one element.
    const auto d = ix.DimsOf(unsqueeze->inputs[0]);
    if (!d || !d->empty()) return std::nullopt;
    return ShapeElems(ix, unsqueeze->inputs[0], depth + 1);
  }
  // torch's stack then view(-1): Reshape(1-D s, [-1]) is s.
  if (const Node* reshape = ix.Producer(s, "Reshape"); reshape && Binary(*reshape)) {
    const Tensor* t = ix.Constant(reshape->inputs[1]);
    const auto d = ix.DimsOf(reshape->inputs[0]);
    if (!t || t->dtype() != DType::kInt64 || t->size() != 1 || t->data<int64_t>()[0] != -1 || !d || d->size() != 1)
      return std::nullopt;
    return ShapeElems(ix, reshape->inputs[0], depth + 1);
  }
  // torch's expand: Where(Equal(s, -1), 1, s), a -1 meaning "keep the dim"
  // as Expand's 1 does (a dim read from Shape is never -1).
  if (const Node* where = ix.Producer(s, "Where"); where && where->inputs.size() == 3) {
    const Node* equal = ix.Producer(where->inputs[0], "Equal");
    if (!equal || !Binary(*equal) || equal->inputs[0] != where->inputs[2]) return std::nullopt;
    auto e = ShapeElems(ix, where->inputs[2], depth + 1);
    if (!e) return std::nullopt;
    // Each constant all v, of one element or s's: one of more would widen
    // the result by broadcasting (and one of another length is an error).
    const int64_t n = int64_t(e->size());
    const auto all = [&](const std::string& name, int64_t v) {
      const Tensor* t = ix.Constant(name);
      if (!t || t->dtype() != DType::kInt64 || t->shape().size() > 1 || t->size() < 1 ||
          (t->size() != 1 && t->size() != n))
        return false;
      for (int64_t k = 0; k < t->size(); ++k)
        if (t->data<int64_t>()[k] != v) return false;
      return true;
    };
    if (!all(equal->inputs[1], -1) || !all(where->inputs[1], 1)) return std::nullopt;
    for (ShapeElem& x : *e)
      if (x.value && *x.value == -1) x.value = 1;
    return e;
  }
  if (const Node* concat = ix.Producer(s, "Concat"); concat && concat->attr_int("axis", 0) == 0) {
    for (const std::string& in : concat->inputs) {
      auto part = in.empty() ? std::nullopt : ShapeElems(ix, in, depth + 1);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  return std::nullopt;
}

// Whether shape element e is dim `axis` of x (known equal, or read from x's own shape).
bool SameDim(const ShapeElem& e, const std::string& x, const Dims& xd, int64_t axis) {
  if (e.of == x && e.axis == axis) return true;
  return e.value && xd[size_t(axis)] >= 0 && *e.value == xd[size_t(axis)];
}

// The GQA repeat of K or V, `rep` = Reshape(Expand(Unsqueeze(x, [2]),
// [1|B, 1|KV, G, 1|T, 1|D]), [0|B, KV * G, -1|T, D]) with x = [B, KV, T, D]
// and KV, D known (the shapes constants or computed from x's own shape at
// run time, each element then provably x's dim or 1): each of the KV heads
// repeated G times in a row, which is what Attention does with KV heads for
// KV * G query heads. Tile(x, [1, G, 1, 1]) repeats the heads as a whole
// (query head h reads h mod KV), which is that order only with KV = 1.
struct Repeat {
  std::string x;
  int64_t groups = 1;
  int64_t kv_heads = -1;
  std::vector<size_t> nodes;
};
std::optional<Repeat> MatchTile(const Index& ix, const std::string& rep, bool others = false) {
  size_t i_tile;
  const Node* tile = others || ix.Inner(rep) ? ix.Producer(rep, "Tile", &i_tile) : nullptr;
  if (!tile || !Binary(*tile)) return std::nullopt;
  const auto x = ix.DimsOf(tile->inputs[0]);
  const Tensor* r = ix.Constant(tile->inputs[1]);
  if (!x || x->size() != 4 || (*x)[1] != 1 || (*x)[3] <= 0 || !r || r->dtype() != DType::kInt64 ||
      r->shape() != Shape{4})
    return std::nullopt;
  const int64_t* v = r->data<int64_t>();
  if (v[0] != 1 || v[1] < 1 || v[2] != 1 || v[3] != 1) return std::nullopt;
  return Repeat{tile->inputs[0], v[1], 1, {i_tile}};
}

// (`others`: rep may have readers besides the pattern's.)
std::optional<Repeat> MatchRepeat(const Index& ix, const std::string& rep, bool others = false) {
  if (auto t = MatchTile(ix, rep, others)) return t;
  size_t i_reshape, i_expand, i_unsqueeze;
  const Node* reshape = others || ix.Inner(rep) ? ix.Producer(rep, "Reshape", &i_reshape) : nullptr;
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
  const std::string& xn = unsqueeze->inputs[0];
  const auto x = ix.DimsOf(xn);
  if (!x || x->size() != 4 || (*x)[1] <= 0 || (*x)[3] <= 0) return std::nullopt;
  // The expand shape, right-aligned to the 5-D [B, KV, 1, T, D]: G on the
  // new axis, each other element 1 or x's own dim (Expand keeps it).
  const auto es = ShapeElems(ix, expand->inputs[1]);
  if (!es || es->size() > 5) return std::nullopt;
  int64_t groups = 1;
  for (size_t k = 0; k < es->size(); ++k) {
    const ShapeElem& v = (*es)[k];
    const int64_t axis = 5 - int64_t(es->size()) + int64_t(k);
    if (axis == 2) {
      if (!v.value || *v.value < 1) return std::nullopt;
      groups = *v.value;
    } else if (!(v.value && *v.value == 1) && !SameDim(v, xn, *x, axis < 2 ? axis : axis - 1)) {
      return std::nullopt;
    }
  }
  const auto rs = ShapeElems(ix, reshape->inputs[1]);
  if (!rs || rs->size() != 4) return std::nullopt;
  const ShapeElem* r = rs->data();
  const bool allowzero = reshape->attr_int("allowzero", 0) != 0;
  const bool batch_kept = (r[0].value && *r[0].value == 0 && !allowzero) || SameDim(r[0], xn, *x, 0);
  // With heads KV * G and head size D fixed, the element count fixes the
  // third dim to T whether it is -1, a number or T read from x.
  const bool length_ok = SameDim(r[2], xn, *x, 2) || (r[2].value && (*r[2].value == -1 || *r[2].value > 0));
  if (!batch_kept || !r[1].value || *r[1].value != CheckedMul((*x)[1], groups).value_or(-1) ||
      !SameDim(r[3], xn, *x, 3) || !length_ok)
    return std::nullopt;
  return Repeat{xn, groups, (*x)[1], {i_reshape, i_expand, i_unsqueeze}};
}

// x times a constant scalar (either side), with `x` and `c` set: the
// product's index, or nothing.
std::optional<size_t> ScalarMul(const Index& ix, const std::string& y, std::string* x, double* c) {
  size_t i;
  const Node* mul = ix.Inner(y) ? ix.Producer(y, "Mul", &i) : nullptr;
  if (!mul || !Binary(*mul)) return std::nullopt;
  for (int side = 1; side >= 0; --side)
    if (const auto v = FloatScalar(ix, mul->inputs[size_t(side)])) {
      *x = mul->inputs[size_t(1 - side)];
      *c = *v;
      return i;
    }
  return std::nullopt;
}

// The scaled scores, `s` = MatMul(Q, Transpose(K, [0, 1, 3, 2])) divided by
// a constant c (scale 1/c), multiplied by one (scale c), or as is (scale 1);
// Q and K (before or after the Transpose) each optionally times a constant
// too (SDPA's split scale, sqrt(scale) on each side): the scale is the
// product of them all.
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
  const Node* matmul = ix.Inner(mm) ? ix.Producer(mm, "MatMul", &i) : nullptr;
  if (!matmul || !Binary(*matmul)) return std::nullopt;
  out.nodes.push_back(i);
  std::string q = matmul->inputs[0], kt = matmul->inputs[1], x;
  double c;
  if (const auto m = ScalarMul(ix, q, &x, &c)) {
    q = x;
    out.scale *= c;
    out.nodes.push_back(*m);
  }
  if (const auto m = ScalarMul(ix, kt, &x, &c)) {
    kt = x;
    out.scale *= c;
    out.nodes.push_back(*m);
  }
  const Node* transpose = ix.Inner(kt) ? ix.Producer(kt, "Transpose", &i) : nullptr;
  if (!transpose || transpose->inputs.size() != 1 || transpose->attr_ints("perm") != Dims{0, 1, 3, 2})
    return std::nullopt;
  out.nodes.push_back(i);
  std::string k = transpose->inputs[0];
  if (const auto m = ScalarMul(ix, k, &x, &c)) {
    k = x;
    out.scale *= c;
    out.nodes.push_back(*m);
  }
  // Attention scales Q and K by sqrt(scale): a positive finite float.
  if (!(out.scale > 0) || !std::isfinite(float(out.scale)) || float(out.scale) == 0) return std::nullopt;
  out.q = q;
  out.k = k;
  return out;
}

// The KV cache's concatenation, `present` = Concat(past, new, axis 2) of two
// 4-D values of type `dtype`.
struct CacheConcat {
  std::string past, fresh, present;
  size_t node = 0;
};
std::optional<CacheConcat> MatchCacheConcat(const Index& ix, const std::string& present, DType dtype) {
  size_t i;
  const Node* concat = ix.Producer(present, "Concat", &i);
  if (!concat || !Binary(*concat) || concat->outputs.size() != 1) return std::nullopt;
  const int64_t axis = concat->attr_int("axis", 0);
  if (axis != 2 && axis != -2) return std::nullopt;
  for (const std::string& x : concat->inputs) {
    const ValueType* t = ix.Type(x);
    if (!t || !t->is_tensor() || t->dtype != dtype || !t->dims || t->dims->size() != 4) return std::nullopt;
  }
  return CacheConcat{concat->inputs[0], concat->inputs[1], present, i};
}

// Whether any of `targets` is computed from `from` (through any nodes,
// subgraph reads included) in g, dead nodes aside.
bool Reaches(const Graph& g, const std::vector<bool>& dead, const std::string& from,
             const std::vector<std::string>& targets) {
  std::set<std::string> reached = {from};
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (dead[n]) continue;
      const Node& node = g.nodes[n];
      bool reads = false;
      for (const std::string& in : node.inputs) reads = reads || (!in.empty() && reached.count(in));
      if (!reads)
        for (const std::string& in : ImplicitInputs(node)) reads = reads || reached.count(in);
      if (!reads) continue;
      for (const std::string& o : node.outputs)
        if (!o.empty() && reached.insert(o).second) grew = true;
    }
  }
  for (const std::string& t : targets)
    if (reached.count(t)) return true;
  return false;
}

// Whether every reader of `shape` (a Shape output) reads only axes 0, 2
// and 3 of a 4-D value: Gather on axis 0 with a constant index.
bool ReadsNoHeads(const Graph& g, const Index& ix, const std::string& shape) {
  if (ix.IsOutput(shape)) return false;
  int readers = 0;
  for (const Node& n : g.nodes)
    for (const std::string& in : n.inputs)
      if (in == shape) {
        ++readers;
        const Tensor* idx = n.inputs.size() == 2 ? ix.Constant(n.inputs[1]) : nullptr;
        if (n.op_type != "Gather" || !n.domain.empty() || n.inputs[0] != shape || n.attr_int("axis", 0) != 0 ||
            !idx || idx->dtype() != DType::kInt64 || idx->size() != 1)
          return false;
        const int64_t a = idx->data<int64_t>()[0];
        if (a == 1 || a == -3 || a < -4 || a > 3) return false;
      }
  return readers == ix.Uses(shape);  // (a subgraph's read counts too, and is none of these)
}

// Masked positions of the Where form get this or less: exp(mask - max) is 0
// in float and double unless every visible score of the row is below -1e30.
constexpr double kMaskValueLimit = -1e30;

}  // namespace

// Shape(K') of the GQA repeat K' of x whose readers take only the batch,
// length or head size (HF's attention_mask[:, :, :, :key_states.shape[-2]])
// -> Shape(x): the same there, and K' is then read by the attention alone.
std::optional<std::string> RepeatShapeInput(const Graph& g, const Index& ix, const Node& node) {
  if (node.op_type != "Shape" || !node.domain.empty() || node.inputs.size() != 1 || node.outputs.size() != 1 ||
      node.attr("start") || node.attr("end"))
    return std::nullopt;
  const auto r = MatchRepeat(ix, node.inputs[0], /*others=*/true);
  if (!r || !ReadsNoHeads(g, ix, node.outputs[0])) return std::nullopt;
  return r->x;
}
bool RewriteRepeatShape(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  (void)dead;
  const auto x = RepeatShapeInput(g, ix, g.nodes[n]);
  if (!x) return false;
  g.nodes[n].inputs[0] = *x;
  return true;
}

// Scaled dot-product attention as older exporters write it, at its last
// MatMul: Softmax(Where(mask, S, c) | Add(S, mask) | S, last axis) @ V', with
// S the scaled scores and K', V' optionally the GQA repeat of K and V ->
// Attention-23(Q, K, V, mask, scale). See the top of this file for what must hold.
bool RewriteAttention(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "MatMul" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  std::vector<size_t> nodes;
  size_t i;
  std::string probs = node.inputs[0];
  // The guard SDPA exports put after the Softmax, Where(IsNaN(p), 0, p):
  // rows the mask hides whole (NaN) become zeros.
  bool guarded = false;
  if (const Node* where = ix.Inner(probs) ? ix.Producer(probs, "Where", &i) : nullptr;
      where && where->inputs.size() == 3) {
    size_t i_isnan;
    const std::string& p = where->inputs[2];
    const Node* isnan = ix.Inner(where->inputs[0]) ? ix.Producer(where->inputs[0], "IsNaN", &i_isnan) : nullptr;
    const auto zero = FloatScalar(ix, where->inputs[1]);
    if (!isnan || isnan->inputs.size() != 1 || isnan->inputs[0] != p || !zero || *zero != 0 || ix.Uses(p) != 2 ||
        ix.IsOutput(p))
      return false;
    nodes.push_back(i);
    nodes.push_back(i_isnan);
    probs = p;
    guarded = true;
  }
  // softmax(x, dtype=float32).to(T) in a float16 export: Cast(Softmax(
  // Cast(z, float)), T) with z of type T (the probabilities rounded to T, as
  // T's own Softmax gives them; the op rounds them so too).
  int64_t cast_back = -1;
  bool back_cast = false;  // probs now the Cast's input, checked read once
  if (const Node* back = guarded || ix.Inner(probs) ? ix.Producer(probs, "Cast", &i) : nullptr;
      back && back->inputs.size() == 1) {
    cast_back = back->attr_int("to", -1);
    if (!ix.Inner(back->inputs[0])) return false;
    nodes.push_back(i);
    probs = back->inputs[0];
    back_cast = true;
  }
  const Node* softmax = guarded || back_cast || ix.Inner(probs) ? ix.Producer(probs, "Softmax", &i) : nullptr;
  if (!softmax || softmax->inputs.size() != 1) return false;
  // The scores are 4-D (checked below): before opset 13 an axis of 3 or -1
  // also means the last axis alone.
  const int64_t axis = softmax->attr_int("axis", softmax->opset >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return false;
  nodes.push_back(i);
  std::string z = softmax->inputs[0];
  if (!ix.Inner(z)) return false;
  // softmax(..., dtype=float32) of float scores: a Cast to the type it has
  // (or of T scores, to float and back after).
  if (const Node* cast = ix.Producer(z, "Cast", &i); cast && cast->inputs.size() == 1) {
    const ValueType* from = ix.Type(cast->inputs[0]);
    if (!from || !from->is_tensor() || !ix.Inner(cast->inputs[0])) return false;
    const int64_t to = cast->attr_int("to", -1);
    const bool to_float = to == int64_t(DType::kFloat);
    const bool narrow = from->dtype == DType::kFloat16 || from->dtype == DType::kBFloat16;
    if (cast_back >= 0 ? !(to_float && narrow && cast_back == int64_t(from->dtype)) : to != int64_t(from->dtype))
      return false;
    nodes.push_back(i);
    z = cast->inputs[0];
    cast_back = -1;
  }
  if (cast_back >= 0) return false;  // a Cast after the Softmax alone
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
  // The guard's zeros for rows of NaN; a finite fill's mean rows stay.
  if (guarded && masked_rows == 1) masked_rows = 0;

  // The fused op takes 4-D Q, K', V' and a mask of rank 1 to 4 and
  // broadcasts batch, heads and lengths as the pattern does; other ranks
  // (a 3-D V' that MatMul would broadcast, a 5-D mask) keep the pattern.
  const auto q = ix.DimsOf(scores->q);
  if (!q || q->size() != 4) return false;
  if (!mask.empty()) {
    const auto m = ix.DimsOf(mask);
    if (!m || m->empty() || m->size() > 4) return false;
  }
  // K and V as the fused op takes them: unrepeated when both repeats are
  // the GQA repeat with the same G and KV heads (kv_repeat G); as repeated
  // otherwise, when their head counts are known and equal (the op maps a
  // query head to one K and V head).
  std::string k = scores->k, v = node.inputs[1];
  int64_t repeat = 1;
  auto rk = MatchRepeat(ix, k), rv = MatchRepeat(ix, v);
  if (rk && rv && rk->groups == rv->groups && rk->kv_heads == rv->kv_heads) {
    k = rk->x;
    v = rv->x;
    repeat = rk->groups;
    nodes.insert(nodes.end(), rk->nodes.begin(), rk->nodes.end());
    nodes.insert(nodes.end(), rv->nodes.begin(), rv->nodes.end());
  } else {
    // A repeat read by a Shape that RewriteRepeatShape takes off: the
    // repeat is the op's in the next pass.
    for (const std::string& r : {k, v})
      for (size_t j = 0; j < g.nodes.size(); ++j)
        if (!dead[j] && !g.nodes[j].inputs.empty() && g.nodes[j].inputs[0] == r && RepeatShapeInput(g, ix, g.nodes[j]))
          return false;
    const auto kd = ix.DimsOf(k), vd = ix.DimsOf(v);
    if (!kd || !vd || kd->size() != 4 || vd->size() != 4 || (*kd)[1] < 0 || (*kd)[1] != (*vd)[1]) return false;
  }
  // The cache: K and V each the Concat of past and new keys, which the op
  // then reads in place and writes to present as it goes. The pattern's
  // read of each present is its one read by a node; others stay readers of
  // the op's output when none of them feeds the op.
  // HF's attention_mask[:, :, :, :key_states.shape[-2]]: Slice(m, [0],
  // [K's length read from K'], last axis) -> the op slices m's keys itself
  // (mask_sliced), and the mask no longer waits on K' (the cache's Concat).
  int64_t mask_sliced = 0;
  if (size_t i_slice; !mask.empty() && ix.Inner(mask)) {
    const Node* slice = ix.Producer(mask, "Slice", &i_slice);
    const auto m0 = slice && slice->inputs.size() >= 4 ? ix.DimsOf(slice->inputs[0]) : std::nullopt;
    const Tensor* axes = slice && slice->inputs.size() >= 4 ? ix.Constant(slice->inputs[3]) : nullptr;
    const bool steps_one = slice && (slice->inputs.size() < 5 || slice->inputs[4].empty() || ix.ConstantIs(slice->inputs[4], 1));
    const auto ends = slice && slice->inputs.size() >= 4 ? ShapeElems(ix, slice->inputs[2]) : std::nullopt;
    const bool last_axis = axes && axes->dtype() == DType::kInt64 && axes->size() == 1 && m0 &&
                           (axes->data<int64_t>()[0] == -1 || axes->data<int64_t>()[0] == int64_t(m0->size()) - 1);
    const auto keys = [&](const ShapeElem& e) {
      return e.axis == 2 && (e.of == k || e.of == scores->k) && ix.DimsOf(e.of) && ix.DimsOf(e.of)->size() == 4;
    };
    if (m0 && !m0->empty() && m0->size() <= 4 && last_axis && steps_one && ix.ConstantIs(slice->inputs[1], 0) &&
        ends && ends->size() == 1 && keys((*ends)[0])) {
      nodes.push_back(i_slice);
      mask = slice->inputs[0];
      mask_sliced = 1;
    }
  }
  std::optional<CacheConcat> ck, cv;
  if (k != v) {
    const ValueType* qt = ix.Type(scores->q);
    if (qt && qt->is_tensor()) {
      ck = MatchCacheConcat(ix, k, qt->dtype);
      cv = MatchCacheConcat(ix, v, qt->dtype);
    }
    if (ck && cv) {
      // The pattern reads each once; in the no-repeat form K' is read by the
      // Transpose and V' by this MatMul.
      const bool alone = ix.Uses(ck->present) == 1 && ix.Uses(cv->present) == 1;
      std::vector<std::string> fed = {scores->q, ck->past, ck->fresh, cv->past, cv->fresh};
      if (!mask.empty()) fed.push_back(mask);
      if (!alone) {
        std::vector<bool> gone = dead;
        for (size_t k2 : nodes) gone[k2] = true;
        gone[n] = true;
        if (Reaches(g, gone, ck->present, fed) || Reaches(g, gone, cv->present, fed)) ck.reset();
      }
    }
    if (!ck || !cv) ck.reset(), cv.reset();
  }
  for (size_t k2 : nodes) dead[k2] = true;
  Node fused;
  fused.name = node.name;  // errors name the user's node (or its output)
  fused.op_type = "Attention";
  fused.domain = kInternalDomain;
  fused.opset = 1;
  fused.inputs = {scores->q, k, v};
  if (!mask.empty() || ck) fused.inputs.push_back(mask);
  fused.outputs = node.outputs;
  if (ck) {
    dead[ck->node] = dead[cv->node] = true;
    fused.inputs[1] = ck->fresh;
    fused.inputs[2] = cv->fresh;
    fused.inputs.push_back(ck->past);
    fused.inputs.push_back(cv->past);
    // A present read by nothing but the pattern is not written.
    const auto kept = [&](const std::string& p) { return ix.IsOutput(p) || ix.Uses(p) > 1 ? p : std::string(); };
    fused.outputs.push_back(kept(ck->present));
    fused.outputs.push_back(kept(cv->present));
    while (fused.outputs.size() > 1 && fused.outputs.back().empty()) fused.outputs.pop_back();
  }
  fused.attributes = {{"scale", FloatAttr("scale", float(scores->scale))},
                      {"kv_repeat", IntAttr("kv_repeat", repeat)},
                      {"masked_rows", IntAttr("masked_rows", masked_rows)}};
  if (mask_sliced) fused.attributes["mask_sliced"] = IntAttr("mask_sliced", 1);
  // What fed only the removed nodes (the repeat's run-time shapes) goes at
  // the end of the pass (Index::DropUnread).
  node = std::move(fused);
  return true;
}

}  // namespace rewrite
}  // namespace onnx_mini
