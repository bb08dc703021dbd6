// Rotary position embedding as exporters write HF's apply_rotary_pos_emb:
//   Add(Mul(x, cos), Mul(rotate_half(x), sin)) (operands in either order)
//   with rotate_half(x) = Concat(Neg(x2), x1, axis = -1), x1 and x2 x's first
//   and second halves along the last axis as
//     Slice(x, 0, h) and Slice(x, h, >= D) (axes -1 or 3, steps absent or 1;
//     starts and ends constants, or h as Div(Gather(Shape(v), 3 | -1), 2)
//     for a v whose last dim is D, optionally Unsqueezed to 1-D), or
//     Split(x, axis -1 | 3) into [h, h] (sizes given or equal halves);
//   cos and sin each Unsqueeze(Gather(table, position_ids, axis 0), [1]) of a
//   constant table [P, D] of x's type whose two halves [:, :h] and [:, h:]
//   are equal (HF's cat(freqs, freqs)), or of such a table [1, 1, P, D]
//   through Slices from 0 along its leading axes (any, even dynamic, ends)
//   and Squeezes (older exports), with x known 4-D [B, H, S, D], D =
//   2h known, and position_ids int64 [B, S] (the same B and S as x: equal
//   known values or the same symbol, which a run may still give as 1 for
//   the pattern to broadcast, which the fused op does too; ids
//   of more rows than x's batch, which broadcast x, remain an error there)
//   -> onnx_mini::RotaryEmbedding(x, cos[:, :h], sin[:, :h], position_ids)
//   (RotaryEmbedding-23, non-interleaved, that also takes ids of one row or
//   one position for all: ops/llm/rotary.cc), the half tables made once at
//   creation. The table
//   multiplied by x is the op's cos whatever its name: cos and sin exchanged
//   compute x1*s - x2*c, x2*s + x1*c, which the op computes with them exchanged.
//   The differences, for bad ids only: the op refuses position ids outside
//   [0, P) (an error naming the node), where Gather also took [-P, 0) from
//   the end; and takes ids in [T, P) that a table sliced to T rows refused.
//   Any other cos and sin (computed at run time: Cos/Sin of position_ids
//   times inv_freq, as Optimum exports HF's rotary since transformers 4.38),
//   of x's type with a last dim known to be D and rank <= 4
//   -> onnx_mini::RotateHalf(x, cos, sin) (ops/llm/rotary.cc), which computes
//   the pattern itself, broadcasting as its Mul and Add do: no condition on
//   the values.
//   GPT-J's rotate_every_two(x) in place of rotate_half (MatchRotateEveryTwo:
//   Slices of step 2, stacked by Unsqueeze and Concat, flattened back by
//   Reshape to x's shape) -> RotateHalf with interleaved = 1, whatever cos
//   and sin are.
// A rotated first part concatenated with the rest of x (partial rotary)
// then takes the whole x (RewritePartialRotary).
// What it leaves unread (the shared Gather/Unsqueeze of the tables, the
// Shape chain of the halves) goes at the end of the pass (Index::DropUnread).

#include <algorithm>
#include <cstring>
#include <iterator>
#include <set>

#include "runtime/element.h"
#include "runtime/op.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

bool SameDim(const Dim& a, const Dim& b) {
  if (a.known() || b.known()) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

// A constant int64 (or int32) of one element, rank <= 1.
std::optional<int64_t> IntScalar(const Index& ix, const std::string& name) {
  const Tensor* t = ix.Constant(name);
  if (!t || t->size() != 1 || t->shape().size() > 1) return std::nullopt;
  if (t->dtype() == DType::kInt64) return t->data<int64_t>()[0];
  if (t->dtype() == DType::kInt32) return t->data<int32_t>()[0];
  return std::nullopt;
}

// An axis naming the last of rank 4.
bool LastOf4(int64_t axis) { return axis == -1 || axis == 3; }

// A Slice bound: a constant, or D / 2 as Div(Gather(Shape(v), 3 | -1), 2)
// (through an Unsqueeze to 1-D) with v's last dim D known.
std::optional<int64_t> SliceBound(const Index& ix, const std::string& name) {
  if (auto c = IntScalar(ix, name)) return c;
  std::string e = name;
  if (const Node* u = ix.Producer(e, "Unsqueeze"); u && !u->inputs.empty()) {
    std::vector<int64_t> axes = u->attr_ints("axes");
    if (u->inputs.size() > 1) {
      const Tensor* a = ix.Constant(u->inputs[1]);
      if (!a || a->size() != 1 || a->dtype() != DType::kInt64) return std::nullopt;
      axes = {a->data<int64_t>()[0]};
    }
    if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return std::nullopt;
    e = u->inputs[0];
  }
  const Node* div = ix.Producer(e, "Div");
  if (!div || !Binary(*div) || !ix.ConstantIs(div->inputs[1], 2)) return std::nullopt;
  const Node* gather = ix.Producer(div->inputs[0], "Gather");
  if (!gather || !Binary(*gather) || gather->attr_int("axis", 0) != 0) return std::nullopt;
  const std::optional<int64_t> at = IntScalar(ix, gather->inputs[1]);
  const Node* shape = ix.Producer(gather->inputs[0], "Shape");
  if (!at || !shape || shape->inputs.size() != 1 || shape->attr_int("start", 0) != 0 || shape->attr("end"))
    return std::nullopt;
  const std::optional<Dims> d = ix.DimsOf(shape->inputs[0]);
  if (!d || d->size() != 4 || (*at != 3 && *at != -1) || d->back() < 0) return std::nullopt;
  return d->back() / 2;
}

// Slice(x, start, end, axis) with unit steps over x's last axis (of length
// d): [start, end) clamped to [0, d].
struct Range {
  std::string x;
  int64_t start = 0, end = 0;
};
std::optional<Range> LastAxisSlice(const Index& ix, const Node& s, int64_t d) {
  if (s.inputs.size() < 4 || s.inputs.size() > 5) return std::nullopt;  // Slice-10+: axes given
  const std::optional<int64_t> axis = IntScalar(ix, s.inputs[3]);
  if (!axis || !LastOf4(*axis)) return std::nullopt;
  if (s.inputs.size() == 5 && !s.inputs[4].empty() && IntScalar(ix, s.inputs[4]) != std::optional<int64_t>(1))
    return std::nullopt;
  const std::optional<int64_t> a = SliceBound(ix, s.inputs[1]), b = SliceBound(ix, s.inputs[2]);
  if (!a || !b) return std::nullopt;
  auto clamp = [d](int64_t v) { return v < 0 ? std::max<int64_t>(v + d, 0) : std::min(v, d); };
  return Range{s.inputs[0], clamp(*a), clamp(*b)};
}

// rotate_half(x) as `rot`: x and the nodes to remove.
struct RotateHalf {
  std::string x;
  std::vector<size_t> nodes;
};
std::optional<RotateHalf> MatchRotateHalf(const Index& ix, const std::string& rot) {
  size_t i_cat = 0, i_neg = 0, i_1 = 0, i_2 = 0;
  const Node* cat = ix.Inner(rot) ? ix.Producer(rot, "Concat", &i_cat) : nullptr;
  if (!cat || !Binary(*cat) || !LastOf4(cat->attr_int("axis", 0))) return std::nullopt;
  const std::string& x1 = cat->inputs[1];
  const Node* neg = ix.Inner(cat->inputs[0]) ? ix.Producer(cat->inputs[0], "Neg", &i_neg) : nullptr;
  if (!neg || neg->inputs.size() != 1 || !ix.Inner(neg->inputs[0]) || !ix.Inner(x1)) return std::nullopt;
  const std::string& x2 = neg->inputs[0];
  RotateHalf r;
  // Split(x) into two halves: x1 its first output, x2 its second.
  if (const Node* split = ix.Producer(x1, "Split", &i_1)) {
    if (ix.Producer(x2, "Split", &i_2) != split || split->outputs.size() != 2 || split->outputs[0] != x1 ||
        split->outputs[1] != x2 || !LastOf4(split->attr_int("axis", 0)))
      return std::nullopt;
    const std::optional<Dims> d = ix.DimsOf(split->inputs[0]);
    if (!d || d->size() != 4 || d->back() < 2 || d->back() % 2 != 0) return std::nullopt;
    std::vector<int64_t> sizes = split->attr_ints("split");
    if (split->inputs.size() > 1 && !split->inputs[1].empty()) {
      const Tensor* s = ix.Constant(split->inputs[1]);
      if (!s || s->dtype() != DType::kInt64 || s->size() != 2) return std::nullopt;
      sizes = {s->data<int64_t>()[0], s->data<int64_t>()[1]};
    }
    if (!sizes.empty() && (sizes.size() != 2 || sizes[0] != d->back() / 2 || sizes[1] != d->back() / 2))
      return std::nullopt;
    r.x = split->inputs[0];
    r.nodes = {i_cat, i_neg, i_1};
    return r;
  }
  const Node* s1 = ix.Producer(x1, "Slice", &i_1);
  const Node* s2 = ix.Producer(x2, "Slice", &i_2);
  if (!s1 || !s2 || s1->inputs.empty() || s2->inputs.empty() || s1->inputs[0] != s2->inputs[0]) return std::nullopt;
  const std::optional<Dims> d = ix.DimsOf(s1->inputs[0]);
  if (!d || d->size() != 4 || d->back() < 2 || d->back() % 2 != 0) return std::nullopt;
  const int64_t h = d->back() / 2;
  const std::optional<Range> a = LastAxisSlice(ix, *s1, d->back()), b = LastAxisSlice(ix, *s2, d->back());
  if (!a || !b || a->start != 0 || a->end != h || b->start != h || b->end != 2 * h) return std::nullopt;
  r.x = s1->inputs[0];
  r.nodes = {i_cat, i_neg, i_1, i_2};
  return r;
}

// Slice(x, start, >= d, last axis, step 2) over x's last axis of length d: start.
std::optional<int64_t> EveryOther(const Index& ix, const Node& s, int64_t d) {
  if (s.inputs.size() != 5) return std::nullopt;
  const std::optional<int64_t> axis = IntScalar(ix, s.inputs[3]), step = IntScalar(ix, s.inputs[4]);
  const std::optional<int64_t> a = IntScalar(ix, s.inputs[1]), b = IntScalar(ix, s.inputs[2]);
  if (!axis || !LastOf4(*axis) || step != std::optional<int64_t>(2) || !a || !b || *b < d) return std::nullopt;
  return a;
}

// Unsqueeze(v, [-1] | [4]): v, or "".
std::string UnsqueezedLast(const Index& ix, const std::string& u, size_t* index) {
  const Node* n = ix.Inner(u) ? ix.Producer(u, "Unsqueeze", index) : nullptr;
  if (!n || n->inputs.empty()) return "";
  std::vector<int64_t> axes = n->attr_ints("axes");
  if (n->inputs.size() > 1) {
    const Tensor* a = ix.Constant(n->inputs[1]);
    if (!a || a->size() != 1 || a->dtype() != DType::kInt64) return "";
    axes = {a->data<int64_t>()[0]};
  }
  return axes == std::vector<int64_t>{-1} || axes == std::vector<int64_t>{4} ? n->inputs[0] : "";
}

// GPT-J's rotate_every_two(x) as `rot`: Reshape(Concat(Unsqueeze(Neg(x2),
// -1), Unsqueeze(x1, -1), axis -1), shape) with x1 = x[..., 0::2], x2 =
// x[..., 1::2] (Slices of step 2), the shape x's: a constant [0 | B, 0 | H,
// 0 | S, D | -1] of x's known dims, or Concat(Slice(Shape(.), 0, 3 | -2), [-1])
// (torch's flatten(-2)).
std::optional<RotateHalf> MatchRotateEveryTwo(const Index& ix, const std::string& rot) {
  size_t i_re = 0, i_cat = 0, i_u1 = 0, i_u2 = 0, i_neg = 0, i_1 = 0, i_2 = 0, i_sc = 0, i_sl = 0, i_sh = 0;
  const Node* re = ix.Inner(rot) ? ix.Producer(rot, "Reshape", &i_re) : nullptr;
  if (!re || !Binary(*re) || re->attr_int("allowzero", 0) != 0) return std::nullopt;
  // The stacked value: read by the Reshape, and by the Shape of its shape at most.
  const std::string& stacked = re->inputs[0];
  const bool stacked_inner = ix.Inner(stacked);
  bool shape_reads_stacked = false;
  const Node* cat = stacked_inner || (ix.Uses(stacked) == 2 && !ix.IsOutput(stacked))
                        ? ix.Producer(stacked, "Concat", &i_cat)
                        : nullptr;
  if (!cat || !Binary(*cat) || (cat->attr_int("axis", 0) != -1 && cat->attr_int("axis", 0) != 4)) return std::nullopt;
  const std::string negated = UnsqueezedLast(ix, cat->inputs[0], &i_u1);
  const std::string x1 = UnsqueezedLast(ix, cat->inputs[1], &i_u2);
  const Node* neg = negated.empty() || !ix.Inner(negated) ? nullptr : ix.Producer(negated, "Neg", &i_neg);
  if (!neg || neg->inputs.size() != 1 || x1.empty() || !ix.Inner(x1) || !ix.Inner(neg->inputs[0])) return std::nullopt;
  const Node* s1 = ix.Producer(x1, "Slice", &i_1);
  const Node* s2 = ix.Producer(neg->inputs[0], "Slice", &i_2);
  if (!s1 || !s2 || s1->inputs.empty() || s2->inputs.empty() || s1->inputs[0] != s2->inputs[0]) return std::nullopt;
  const std::string& x = s1->inputs[0];
  const std::optional<Dims> d = ix.DimsOf(x);
  if (!d || d->size() != 4 || d->back() < 2 || d->back() % 2 != 0) return std::nullopt;
  if (EveryOther(ix, *s1, d->back()) != std::optional<int64_t>(0) ||
      EveryOther(ix, *s2, d->back()) != std::optional<int64_t>(1))
    return std::nullopt;
  // The shape: x's again.
  bool same = false;
  if (const Tensor* shape = ix.Constant(re->inputs[1])) {
    if (shape->dtype() == DType::kInt64 && shape->size() == 4) {
      const int64_t* v = shape->data<int64_t>();
      same = v[3] == d->back() || v[3] == -1;  // -1: D, the leading dims being x's
      for (int k = 0; k < 3; ++k) same = same && (v[k] == 0 || ((*d)[size_t(k)] >= 0 && v[k] == (*d)[size_t(k)]));
    }
  } else if (const Node* sc = ix.Producer(re->inputs[1], "Concat", &i_sc); sc && Binary(*sc)) {
    // Concat(Slice(Shape(v), [0], [e]), [-1]) with Shape(v)[0:e] x's [B, H, S]:
    // v the stacked 5-D value (e = 3 or -2) or x (e = 3 or -1).
    const Tensor* tail = ix.Constant(sc->inputs[1]);
    const Node* sl = ix.Producer(sc->inputs[0], "Slice", &i_sl);
    const Node* sh = sl && sl->inputs.size() >= 3 ? ix.Producer(sl->inputs[0], "Shape", &i_sh) : nullptr;
    if (tail && tail->dtype() == DType::kInt64 && tail->size() == 1 && tail->data<int64_t>()[0] == -1 && sh &&
        sh->inputs.size() == 1 && sh->attr_int("start", 0) == 0 && !sh->attr("end") &&
        IntScalar(ix, sl->inputs[1]) == std::optional<int64_t>(0) &&
        (sl->inputs.size() < 4 || IntScalar(ix, sl->inputs[3]) == std::optional<int64_t>(0)) &&
        (sl->inputs.size() < 5 || IntScalar(ix, sl->inputs[4]) == std::optional<int64_t>(1))) {
      const std::optional<int64_t> e = IntScalar(ix, sl->inputs[2]);
      if (sh->inputs[0] == stacked) {
        // The chain goes with the pattern (the Shape reads a value it removes).
        same = (e == std::optional<int64_t>(3) || e == std::optional<int64_t>(-2)) && ix.Inner(re->inputs[1]) &&
               ix.Inner(sc->inputs[0]) && ix.Inner(sl->inputs[0]);
        shape_reads_stacked = same;
      }
      if (sh->inputs[0] == x) same = e == std::optional<int64_t>(3) || e == std::optional<int64_t>(-1);
    }
  }
  if (!same || (!stacked_inner && !shape_reads_stacked)) return std::nullopt;
  RotateHalf r;
  r.x = x;
  r.nodes = {i_re, i_cat, i_u1, i_u2, i_neg, i_1, i_2};
  if (shape_reads_stacked) r.nodes.insert(r.nodes.end(), {i_sc, i_sl, i_sh});
  return r;
}

// cos or sin: Unsqueeze(Gather(table, ids), [1]) with table a constant
// [1, ..., 1, P, D] seen as [P, D], directly or through Squeezes and Slices
// from 0 along the positions (older exports: cos_cached[:, :, :T] squeezed).
struct Table {
  std::string table, ids;  // the constant, position_ids
};
std::optional<Table> MatchTable(const Index& ix, const std::string& v) {
  const Node* u = ix.Producer(v, "Unsqueeze");
  if (!u || u->inputs.empty()) return std::nullopt;
  std::vector<int64_t> axes = u->attr_ints("axes");
  if (u->inputs.size() > 1) {
    const Tensor* a = ix.Constant(u->inputs[1]);
    if (!a || a->size() != 1 || a->dtype() != DType::kInt64) return std::nullopt;
    axes = {a->data<int64_t>()[0]};
  }
  if (axes != std::vector<int64_t>{1}) return std::nullopt;
  const Node* gather = ix.Producer(u->inputs[0], "Gather");
  if (!gather || !Binary(*gather) || gather->attr_int("axis", 0) != 0) return std::nullopt;
  const std::optional<Dims> gd = ix.DimsOf(gather->inputs[0]);
  if (!gd || gd->size() != 2) return std::nullopt;
  std::string src = gather->inputs[0];
  for (int hops = 0; hops < 8 && !ix.Constant(src); ++hops) {
    if (const Node* sq = ix.Producer(src, "Squeeze"); sq && !sq->inputs.empty()) {
      src = sq->inputs[0];  // removes unit dims only
      continue;
    }
    // Slice(t, 0, any end, axes) over axes other than the last, unit steps.
    const Node* sl = ix.Producer(src, "Slice");
    const std::optional<Dims> sd = sl && sl->inputs.size() >= 4 ? ix.DimsOf(sl->inputs[0]) : std::nullopt;
    const Tensor* starts = sd ? ix.Constant(sl->inputs[1]) : nullptr;
    const Tensor* sax = sd ? ix.Constant(sl->inputs[3]) : nullptr;
    if (!starts || !sax || starts->dtype() != DType::kInt64 || sax->dtype() != DType::kInt64 ||
        starts->size() != sax->size())
      return std::nullopt;
    for (int64_t k = 0; k < starts->size(); ++k) {
      const int64_t a = sax->data<int64_t>()[k];
      if (starts->data<int64_t>()[k] != 0 || a == -1 || a == int64_t(sd->size()) - 1) return std::nullopt;
    }
    if (sl->inputs.size() > 4 && !sl->inputs[4].empty()) {
      const Tensor* st = ix.Constant(sl->inputs[4]);
      if (!st || st->dtype() != DType::kInt64) return std::nullopt;
      for (int64_t k = 0; k < st->size(); ++k)
        if (st->data<int64_t>()[k] != 1) return std::nullopt;
    }
    src = sl->inputs[0];
  }
  const Tensor* t = ix.Constant(src);
  if (!t || t->shape().size() < 2) return std::nullopt;
  for (size_t k = 0; k + 2 < t->shape().size(); ++k)
    if (t->shape()[k] != 1) return std::nullopt;
  return Table{src, gather->inputs[1]};
}

// The first half [P, D/2] of a table whose halves are equal (bit for bit),
// as an initializer made once: its name, or "" when the halves differ.
std::string HalfTable(Graph& g, const Index& ix, const std::string& name) {
  const std::string half = name + "/rotary_half";
  if (g.initializers.count(half)) return half;
  const Tensor& t = *ix.Constant(name);
  const int64_t d = t.shape().back(), rows = t.size() / d, h = d / 2;
  const size_t e = StorageBytes(t.dtype(), 1);
  const char* src = static_cast<const char*>(t.raw());
  for (int64_t r = 0; r < rows; ++r)
    if (std::memcmp(src + size_t(r * d) * e, src + size_t(r * d + h) * e, size_t(h) * e) != 0) return "";
  Tensor out = Tensor::Zeros(t.dtype(), {rows, h});
  char* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + size_t(r * h) * e, src + size_t(r * d) * e, size_t(h) * e);
  g.initializers[half] = std::move(out);
  return half;
}

// RotaryEmbedding's inputs (x, the half tables, position_ids) when cos and
// sin are gathered from tables as the rule's comment says; else nullopt.
std::optional<std::vector<std::string>> TableInputs(Graph& g, const Index& ix, const std::string& x,
                                                    const ValueType& xt, const std::string& cos,
                                                    const std::string& sin) {
  const std::optional<Table> tc = MatchTable(ix, cos), ts = MatchTable(ix, sin);
  if (!tc || !ts || tc->ids != ts->ids) return std::nullopt;
  // The shapes: x [B, H, S, D], ids int64 [B, S], tables [P, D] of x's type.
  const ValueType* it = ix.Type(tc->ids);
  if (!it || !it->is_tensor() || !it->dims) return std::nullopt;
  const std::vector<Dim>& xd = *xt.dims;
  const std::vector<Dim>& id = *it->dims;
  if (id.size() != 2 || it->dtype != DType::kInt64) return std::nullopt;
  if (!SameDim(xd[0], id[0]) || !SameDim(xd[2], id[1])) return std::nullopt;
  const Tensor* c = ix.Constant(tc->table);
  const Tensor* s = ix.Constant(ts->table);
  if (c->dtype() != xt.dtype || s->dtype() != xt.dtype || c->shape() != s->shape() ||
      c->shape().back() != xd[3].value || c->size() < 1)
    return std::nullopt;
  const std::string cos_half = HalfTable(g, ix, tc->table);
  const std::string sin_half = cos_half.empty() ? "" : HalfTable(g, ix, ts->table);
  if (sin_half.empty()) return std::nullopt;
  return std::vector<std::string>{x, cos_half, sin_half, tc->ids};
}

}  // namespace

bool RewriteRotary(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Add" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    size_t i_a = 0, i_b = 0;
    const std::string& a = node.inputs[size_t(side)];
    const std::string& b = node.inputs[size_t(1 - side)];
    const Node* mul_a = ix.Inner(a) ? ix.Producer(a, "Mul", &i_a) : nullptr;
    const Node* mul_b = ix.Inner(b) ? ix.Producer(b, "Mul", &i_b) : nullptr;
    if (!mul_a || !mul_b || !Binary(*mul_a) || !Binary(*mul_b)) continue;
    for (int rs = 0; rs < 2; ++rs) {
      std::optional<RotateHalf> rot = MatchRotateHalf(ix, mul_b->inputs[size_t(rs)]);
      bool interleaved = false;
      if (!rot && (rot = MatchRotateEveryTwo(ix, mul_b->inputs[size_t(rs)]))) interleaved = true;
      if (!rot) continue;
      const std::string& sin = mul_b->inputs[size_t(1 - rs)];
      std::string cos;
      if (mul_a->inputs[0] == rot->x) cos = mul_a->inputs[1];
      else if (mul_a->inputs[1] == rot->x) cos = mul_a->inputs[0];
      else continue;
      const ValueType* xt = ix.Type(rot->x);
      if (!xt || !xt->is_tensor() || !xt->dims || xt->dims->size() != 4 || !xt->dims->back().known()) continue;
      Node fused;
      fused.name = node.name;  // errors name the user's node (or its output)
      fused.outputs = node.outputs;
      std::optional<std::vector<std::string>> in;
      if (!interleaved) in = TableInputs(g, ix, rot->x, *xt, cos, sin);
      if (in) {
        // ids of one row (or position) at run time, where x's symbol is
        // more, broadcast in the pattern: onnx_mini's RotaryEmbedding takes
        // them so too (the spec op refuses them).
        fused.op_type = "RotaryEmbedding";
        fused.domain = kInternalDomain;
        fused.opset = 1;
        fused.inputs = std::move(*in);
        fused.attributes = {{"interleaved", IntAttr("interleaved", 0)}};
      } else {
        // Any other cos and sin (computed at run time): full rows of D of x's
        // type, which the op broadcasts as the pattern does.
        bool full = true;
        for (const std::string& v : {cos, sin}) {
          const ValueType* t = ix.Type(v);
          full = full && t && t->is_tensor() && t->dtype == xt->dtype && t->dims && !t->dims->empty() &&
                 t->dims->size() <= 4 && t->dims->back().known() && t->dims->back().value == xt->dims->back().value;
        }
        if (!full) continue;
        fused.op_type = "RotateHalf";
        fused.domain = kInternalDomain;
        fused.opset = 1;
        fused.inputs = {rot->x, cos, sin};
        if (interleaved) fused.attributes = {{"interleaved", IntAttr("interleaved", 1)}};
      }
      for (size_t k : rot->nodes) dead[k] = true;
      dead[i_a] = dead[i_b] = true;
      node = std::move(fused);
      return true;
    }
  }
  return false;
}

// Partial rotary (GPT-NeoX, Phi: rotary_dim r < D): Concat(RotaryEmbedding(
// Slice(x, 0, r)), Slice(x, r, >= D)) on the last axis, x known 4-D with D
// known, the fused op's caches [P, r / 2] -> RotaryEmbedding(x, ...,
// rotary_embedding_dim = r), which copies the rest of each head.
bool RewritePartialRotary(Graph& g, const Index& ix, size_t n, std::vector<bool>& dead) {
  Node& node = g.nodes[n];
  if (node.op_type != "Concat" || !node.domain.empty() || !Binary(node) || node.outputs.size() != 1 ||
      !LastOf4(node.attr_int("axis", 0)))
    return false;
  size_t i_rot = 0, i_a = 0, i_b = 0;
  // The rotary rule's (onnx_mini) or the model's own (ai.onnx).
  const Node* rot = nullptr;
  if (ix.Inner(node.inputs[0])) {
    rot = ix.Producer(node.inputs[0], "RotaryEmbedding", &i_rot, kInternalDomain);
    if (!rot) rot = ix.Producer(node.inputs[0], "RotaryEmbedding", &i_rot);
  }
  if (!rot || rot->inputs.size() != 4 || rot->attr_int("interleaved", 0) != 0 ||
      rot->attr_int("rotary_embedding_dim", 0) != 0 || rot->attr_int("num_heads", 0) != 0)
    return false;
  const Node* a = ix.Inner(rot->inputs[0]) ? ix.Producer(rot->inputs[0], "Slice", &i_a) : nullptr;
  const Node* b = ix.Inner(node.inputs[1]) ? ix.Producer(node.inputs[1], "Slice", &i_b) : nullptr;
  if (!a || !b || a->inputs.empty() || b->inputs.empty() || a->inputs[0] != b->inputs[0]) return false;
  const std::optional<Dims> d = ix.DimsOf(a->inputs[0]);
  if (!d || d->size() != 4 || d->back() < 2) return false;
  const std::optional<Range> ra = LastAxisSlice(ix, *a, d->back()), rb = LastAxisSlice(ix, *b, d->back());
  if (!ra || !rb || ra->start != 0 || ra->end <= 0 || ra->end % 2 != 0 || rb->start != ra->end ||
      rb->end != d->back())
    return false;
  const Tensor* cos = ix.Constant(rot->inputs[1]);
  if (!cos || cos->shape().size() != 2 || cos->shape()[1] * 2 != ra->end) return false;
  dead[i_rot] = dead[i_a] = dead[i_b] = true;
  Node fused = *rot;
  fused.name = node.name;
  fused.inputs[0] = a->inputs[0];
  fused.outputs = node.outputs;
  fused.attributes["rotary_embedding_dim"] = IntAttr("rotary_embedding_dim", ra->end);
  node = std::move(fused);
  return true;
}

}  // namespace rewrite
}  // namespace onnx_mini
