// Attention-23/24/25 (SEMANTICS.md part B, rules A1-A20): validation and
// shape inference, and the kernel that picks the fast or the reference path.
#include <cmath>
#include <limits>

#include "kernels/attention/attention.h"
#include "kernels/copy/copy.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum Input { kQ = 0, kK, kV, kMask, kPastKey, kPastValue, kNonpad };
enum Output { kY = 0, kPresentKey, kPresentValue, kQk };

using AttentionTypes = TypeList<float, Float16, BFloat16, double>;
// The mask: bool or any number (A1).
using MaskTypes = Join<NumericTypes, TypeList<bool>>;

// The attributes, read and checked once.
struct AttentionAttributes {
  bool causal = false;
  bool has_scale = false;
  float scale = 0;
  int64_t q_heads = 0, kv_heads = 0;  // 0 when not given
  bool has_softmax_precision = false;
  DType softmax_precision = DType::kUndefined;
  float softcap = 0;
  int qk_mode = 0;
  int64_t left = -1, right = -1;
};

absl::StatusOr<AttentionAttributes> ReadAttributes(const Node& node) {
  auto error = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
  };
  AttentionAttributes a;
  a.causal = node.attr_int("is_causal", 0) != 0;
  if (const Attribute* s = node.attr("scale")) {
    a.has_scale = true;
    a.scale = s->f;
  }
  a.q_heads = node.attr_int("q_num_heads", 0);
  a.kv_heads = node.attr_int("kv_num_heads", 0);
  if (const Attribute* sp = node.attr("softmax_precision")) {
    const int64_t code = sp->i;
    if (code != 1 && code != 10 && code != 11 && code != 16)
      return error(absl::StrCat("softmax_precision ", code,
                                " is not one of 1 (float), 10 (float16), 11 (double), 16 (bfloat16) (A17)"));
    a.has_softmax_precision = true;
    a.softmax_precision = DType(code);
  }
  a.softcap = node.attr_float("softcap", 0);
  // The function body treats modes other than 1, 2 and 3 as 0 (A19).
  const int64_t mode = node.attr_int("qk_matmul_output_mode", 0);
  a.qk_mode = mode >= 0 && mode <= 3 ? int(mode) : 0;
  if (node.opset >= 25) {
    a.left = node.attr_int("left_window_size", -1);
    a.right = node.attr_int("right_window_size", -1);
    if (a.left < -1 || a.right < -1)
      return error(absl::StrCat("left_window_size ", a.left, " / right_window_size ", a.right,
                                ": window sizes must be >= -1 (A15)"));
  }
  // What the node's own inputs and outputs say, checked once (A7, A8, A20).
  const bool past = node.has_input(kPastKey) || node.has_input(kPastValue);
  if (node.has_input(kPastKey) != node.has_input(kPastValue))
    return error("past_key and past_value must be given together (A7)");
  if (node.opset >= 25) {
    if (node.has_output(kPresentKey) != node.has_output(kPresentValue))
      return error("present_key and present_value must be requested together (A7, A20)");
    if (node.has_input(kNonpad) && (past || node.has_output(kPresentKey)))
      return error("nonpad_kv_seqlen excludes past and present key/value (A8, A20)");
  }
  if (node.has_input(kNonpad) && past) return error("nonpad_kv_seqlen cannot be combined with past_key/past_value (A8)");
  return a;
}

// Fills the problem's geometry from the input shapes, checking every rule
// that involves them (and nonpad's values when known). `shapes[i]` is null
// for an absent input.
absl::Status Resolve(const Node& node, const AttentionAttributes& a,
                     const std::vector<const Shape*>& shapes, const Tensor* nonpad,
                     AttentionProblem& p) {
  auto error = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
  };
  const Shape& q = *shapes[kQ];
  const Shape& k = *shapes[kK];
  const Shape& v = *shapes[kV];
  const int64_t opset = node.opset;
  if (!((q.size() == 3 && k.size() == 3 && v.size() == 3) || (q.size() == 4 && k.size() == 4 && v.size() == 4)))
    return error(absl::StrCat("Q, K and V must all be 3-D or all 4-D, got Q ", ShapeToString(q), ", K ",
                              ShapeToString(k), ", V ", ShapeToString(v), " (A2)"));
  const bool three_d = q.size() == 3;
  if (three_d) {
    if (a.q_heads <= 0 || a.kv_heads <= 0)
      return error(absl::StrCat("3-D inputs need q_num_heads and kv_num_heads > 0, got ", a.q_heads, " and ",
                                a.kv_heads, " (A4)"));
    if (q[2] % a.q_heads != 0 || k[2] % a.kv_heads != 0 || v[2] % a.kv_heads != 0)
      return error(absl::StrCat("hidden sizes Q ", q[2], ", K ", k[2], ", V ", v[2],
                                " must divide by q_num_heads ", a.q_heads, " and kv_num_heads ", a.kv_heads,
                                " (A4)"));
    p.batch = q[0];
    p.q_len = q[1];
    p.q_heads = a.q_heads;
    p.head_size = q[2] / a.q_heads;
    p.kv_heads = a.kv_heads;
    p.kv_len = k[1];
    if (k[2] / a.kv_heads != p.head_size)
      return error(absl::StrCat("Q head size ", p.head_size, " (", q[2], "/", a.q_heads, ") differs from K head size ",
                                k[2] / a.kv_heads, " (", k[2], "/", a.kv_heads, ") (A5)"));
    p.v_head_size = v[2] / a.kv_heads;
    if (k[0] != p.batch || v[0] != p.batch || v[1] != p.kv_len)
      return error(absl::StrCat("K ", ShapeToString(k), " and V ", ShapeToString(v),
                                " must match Q's batch and each other's sequence length (A4)"));
  } else {
    if (opset >= 25 && (a.q_heads != 0 || a.kv_heads != 0))
      return error("q_num_heads and kv_num_heads must not be set for 4-D inputs (A3, A20)");
    p.batch = q[0];
    p.q_heads = q[1];
    p.q_len = q[2];
    p.head_size = q[3];
    p.kv_heads = k[1];
    p.kv_len = k[2];
    p.v_head_size = v[3];
    if ((a.q_heads != 0 && a.q_heads != p.q_heads) || (a.kv_heads != 0 && a.kv_heads != p.kv_heads))
      return error(absl::StrCat("q_num_heads ", a.q_heads, " / kv_num_heads ", a.kv_heads,
                                " contradict the 4-D head counts ", p.q_heads, " / ", p.kv_heads, " (A3)"));
    if (k[0] != p.batch || v[0] != p.batch || v[1] != p.kv_heads || v[2] != p.kv_len || k[3] != p.head_size)
      return error(absl::StrCat("Q ", ShapeToString(q), ", K ", ShapeToString(k), " and V ", ShapeToString(v),
                                " disagree on batch, kv heads, kv length or head size (A3, A5)"));
  }
  if (p.kv_heads <= 0 || p.q_heads <= 0 || p.q_heads % p.kv_heads != 0)
    return error(absl::StrCat("kv heads ", p.kv_heads, " must divide q heads ", p.q_heads, " (A6)"));

  // Cache (A7, A8).
  const bool has_past_key = shapes[kPastKey] != nullptr, has_past_value = shapes[kPastValue] != nullptr;
  if (has_past_key != has_past_value)
    return error("past_key and past_value must be given together (A7)");
  p.cache.past_len = 0;
  if (has_past_key) {
    const Shape& pk = *shapes[kPastKey];
    const Shape& pv = *shapes[kPastValue];
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != p.batch || pk[1] != p.kv_heads || pk[3] != p.head_size ||
        pv[0] != p.batch || pv[1] != p.kv_heads || pv[3] != p.v_head_size || pv[2] != pk[2])
      return error(absl::StrCat("past_key ", ShapeToString(pk), " and past_value ", ShapeToString(pv),
                                " must be (", p.batch, ", ", p.kv_heads, ", P, ", p.head_size, ") and (", p.batch,
                                ", ", p.kv_heads, ", P, ", p.v_head_size, ") (A7)"));
    p.cache.past_len = p.cache.capacity = pk[2];
  }
  const std::optional<int64_t> total = CheckedAdd(p.cache.past_len, p.kv_len);
  if (!total) return error(absl::StrCat("past length ", p.cache.past_len, " + kv length ", p.kv_len, " overflows"));
  p.total_len = p.cache.present_capacity = *total;  // present: past and new keys, concatenated
  const bool has_nonpad = shapes.size() > kNonpad && shapes[kNonpad] != nullptr;
  if (has_nonpad) {
    if (has_past_key)
      return error("nonpad_kv_seqlen cannot be combined with past_key/past_value (A8)");
    const Shape& n = *shapes[kNonpad];
    if (n.size() != 1 || n[0] != p.batch)
      return error(absl::StrCat("nonpad_kv_seqlen ", ShapeToString(n), " must have shape [", p.batch, "] (A8)"));
    if (nonpad)
      for (int64_t b = 0; b < p.batch; ++b) {
        const int64_t len = nonpad->data<int64_t>()[b];
        if (len < 0 || len > p.total_len)
          return error(absl::StrCat("nonpad_kv_seqlen[", b, "] = ", len, " is outside [0, ", p.total_len,
                                    "] (A8)"));
      }
  }

  // Mask (A11, A12): right-aligned broadcast to (B, Hq, Sq, T).
  if (shapes[kMask] != nullptr) {
    const Shape& m = *shapes[kMask];
    if (m.empty() || m.size() > 4)
      return error(absl::StrCat("attn_mask ", ShapeToString(m), " must have rank 1 to 4 (A11)"));
    const int64_t target[4] = {p.batch, p.q_heads, p.q_len, p.total_len};
    const int64_t tm = m.back();
    if (opset < 24 ? (tm != p.total_len && tm != 1) : tm > p.total_len)
      return error(absl::StrCat("attn_mask ", ShapeToString(m), ": last dim ", tm,
                                opset < 24 ? " must equal the total length " : " exceeds the total length ",
                                p.total_len, opset < 24 ? " (A12: opset 23 does not pad)" : " (A12)"));
    int64_t stride = 1;
    for (int64_t k4 = 3; k4 >= 0; --k4) p.mask_stride[k4] = 0;
    for (int64_t i = int64_t(m.size()) - 1, d = 3; i >= 0; --i, --d) {
      const int64_t dim = m[size_t(i)];
      if (d < 3 && dim != 1 && dim != target[d])
        return error(absl::StrCat("attn_mask ", ShapeToString(m), " does not broadcast to (", p.batch, ", ",
                                  p.q_heads, ", ", p.q_len, ", ", p.total_len, ") at dim ", i,
                                  m.size() == 3 && d == 1 ? " (rank 3 means (heads, q, kv)) (A11)" : " (A11)"));
      p.mask_stride[d] = dim == 1 ? 0 : stride;
      stride = CheckedMul(stride, dim).value_or(0);  // overflows only for an empty mask: nothing is read
    }
    p.mask_len = tm;
    if (opset < 24 && tm == 1) p.mask_len = p.total_len;  // broadcast, not padding
    if (has_nonpad && nonpad && opset >= 24)
      for (int64_t b = 0; b < p.batch; ++b)
        if (nonpad->data<int64_t>()[b] > tm)
          return error(absl::StrCat("attn_mask's last dim ", tm, " is shorter than nonpad_kv_seqlen[", b, "] = ",
                                    nonpad->data<int64_t>()[b], " (A12)"));
  }

  p.q = three_d ? HeadView::Of3D(p.q_heads, p.q_len, p.head_size) : HeadView::Of4D(p.q_heads, p.q_len, p.head_size);
  p.k = three_d ? HeadView::Of3D(p.kv_heads, p.kv_len, p.head_size) : HeadView::Of4D(p.kv_heads, p.kv_len, p.head_size);
  p.v = three_d ? HeadView::Of3D(p.kv_heads, p.kv_len, p.v_head_size)
                : HeadView::Of4D(p.kv_heads, p.kv_len, p.v_head_size);
  p.y = three_d ? HeadView::Of3D(p.q_heads, p.q_len, p.v_head_size) : HeadView::Of4D(p.q_heads, p.q_len, p.v_head_size);
  p.causal = a.causal;
  p.left_window = a.left;
  p.right_window = a.right;
  p.softcap = a.softcap;
  p.qk_mode = a.qk_mode;
  p.scale = a.has_scale ? a.scale : 1.0f / std::sqrt(float(p.head_size));
  return absl::OkStatus();
}

// The problem without its data: geometry, mask layout and attributes.
struct AttentionPlan : OpPlan {
  AttentionProblem problem;
};

// The mask as a float bias, charged to `workspace`: bool True -> 0, False ->
// -inf; numbers rounded to T1, as the function body casts them (A11, A16).
absl::Status MaskBias(const KernelContext& ctx, const Tensor& mask, DType t1, MemoryReservation& workspace,
                      std::vector<double>& bias) {
  RETURN_IF_ERROR(ctx.Grow(workspace, mask.size(), sizeof(double), "the mask as a float bias"));
  bias.resize(size_t(mask.size()));
  return Dispatch<MaskTypes>(ctx, mask.dtype(), [&](auto tag) {
    using M = typename decltype(tag)::type;
    const M* m = mask.data<M>();
    for (int64_t i = 0; i < mask.size(); ++i) {
      if constexpr (std::is_same_v<M, bool>) bias[size_t(i)] = m[i] ? 0.0 : -std::numeric_limits<double>::infinity();
      else bias[size_t(i)] = RoundToPrecision(t1, double(Widen(m[i])));
    }
  });
}

class AttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(AttentionAttributes a, ReadAttributes(node));
    return std::unique_ptr<Op>(new AttentionOp(a));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const Node& node = ctx.node();
    const DType t1 = ctx.input(kQ).dtype;
    // With every shape known: full validation, exact output shapes and the plan.
    std::vector<std::optional<Shape>> concrete(ctx.num_inputs());
    std::vector<const Shape*> shapes(std::max<size_t>(ctx.num_inputs(), kNonpad + 1), nullptr);
    bool all_known = true;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      concrete[i] = ctx.input(i).concrete_shape();
      if (!concrete[i]) all_known = false;
      else shapes[i] = &*concrete[i];
    }
    ValueType y, present_k, present_v, qk;
    y.dtype = present_k.dtype = present_v.dtype = qk.dtype = t1;
    if (all_known) {
      auto plan = std::make_shared<AttentionPlan>();
      AttentionProblem& p = plan->problem;
      RETURN_IF_ERROR(Resolve(node, attrs_, shapes, ctx.value(kNonpad), p));
      p.dtype = t1;
      p.softmax_dtype = attrs_.has_softmax_precision ? attrs_.softmax_precision : t1;
      const Shape& q = *shapes[kQ];
      y = ValueType::Of(t1, q.size() == 3 ? Shape{p.batch, p.q_len, p.q_heads * p.v_head_size}
                                          : Shape{p.batch, p.q_heads, p.q_len, p.v_head_size});
      present_k = ValueType::Of(t1, {p.batch, p.kv_heads, p.total_len, p.head_size});
      present_v = ValueType::Of(t1, {p.batch, p.kv_heads, p.total_len, p.v_head_size});
      qk = ValueType::Of(t1, {p.batch, p.q_heads, p.q_len, p.total_len});
      ctx.set_plan(std::move(plan));
    } else if (ctx.input(kQ).dims) {
      y.dims = std::vector<Dim>(ctx.input(kQ).dims->size());
      present_k.dims = present_v.dims = qk.dims = std::vector<Dim>(4);
    }
    ctx.set_output(kY, y);
    if (ctx.num_outputs() > kPresentKey) ctx.set_output(kPresentKey, present_k);
    if (ctx.num_outputs() > kPresentValue) ctx.set_output(kPresentValue, present_v);
    if (ctx.num_outputs() > kQk) ctx.set_output(kQk, qk);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    AttentionProblem p = ctx.plan<AttentionPlan>().problem;
    const auto input = [&](size_t i) { return i < ctx.num_inputs() ? ctx.input(i) : nullptr; };
    p.q_data = ctx.input(kQ)->raw();
    p.k_data = ctx.input(kK)->raw();
    p.v_data = ctx.input(kV)->raw();
    if (const Tensor* pk = input(kPastKey)) {
      p.cache.past_key = pk->raw();
      p.cache.past_value = input(kPastValue)->raw();
    }
    // An external cache (K/V hold every slot): its valid keys per row.
    if (const Tensor* nonpad = input(kNonpad)) p.cache.valid_lens = nonpad->data<int64_t>();
    std::vector<double> bias;
    MemoryReservation workspace;  // the bias and the kernel's workspaces, against the session's budget
    if (const Tensor* mask = input(kMask)) {
      RETURN_IF_ERROR(MaskBias(ctx, *mask, p.dtype, workspace, bias));
      p.mask = bias.data();
    }
    if (ctx.output_requested(kY)) p.y_data = ctx.output(kY).raw();
    if (ctx.output_requested(kPresentKey)) p.cache.present_key = ctx.output(kPresentKey).raw();
    if (ctx.output_requested(kPresentValue)) p.cache.present_value = ctx.output(kPresentValue).raw();
    if (ctx.output_requested(kQk)) p.qk_data = ctx.output(kQk).raw();
    // The loops over the keys: with nothing to write (an empty Y and no
    // scores asked for) they would be work over a dim with no data.
    const bool nothing_to_compute = ctx.output(kY).size() == 0 && (!p.qk_data || ctx.output(kQk).size() == 0);
    if (!nothing_to_compute) {
      const bool fast = UsesFastPath(p);
      RETURN_IF_ERROR(ctx.Grow(workspace, AttentionWorkspaceBytes(p, ctx.threads(), fast), 1,
                               fast ? "the attention kernel's workspaces" : "the attention reference's rows"));
    }
    if (!nothing_to_compute && UsesFastPath(p)) {
      AttentionFast(p, ctx.threads());  // with present_key/present_value
      return absl::OkStatus();
    }
    WritePresent(p, ctx.threads());
    if (!nothing_to_compute) AttentionReference(p);
    return absl::OkStatus();
  }

 private:
  explicit AttentionOp(AttentionAttributes attrs) : attrs_(attrs) {}
  AttentionAttributes attrs_;
};

// onnx_mini::Attention (opset 1), made only by the scaled-dot-product
// attention rewrite (runtime/rewrite/attention.cc) from the graph
// Softmax(Q Kᵀ scale ⊕ mask) V', with the answer that graph gives:
//  - Q [Bq, Hq, Sq, D], K [Bk, Hk, Tk, D], V [Bv, Hv, T, Dv] and the mask
//    broadcast as MatMul, Add and Where broadcast them (a batch, head or
//    length of 1 against more: stride 0), K and V each repeated
//    `kv_repeat` times per head (the GQA repeat the rewrite took off);
//  - with past_key and past_value (inputs 4, 5), K' = Concat(past_key, K,
//    axis 2) and V' likewise, refused as Concat refuses; present_key and
//    present_value (outputs 1, 2) are those Concats, written exactly. When
//    K' and V' have the scores' batch and length and one past length, the
//    kernel reads past and new rows where they are and copies present as it
//    reads (one pass over the cache); otherwise K' and V' are made first;
//  - rows where the mask hides every key: `masked_rows` 1 gives NaN (the
//    Softmax of a row of -inf), 2 the mean of V's rows (the Softmax of a
//    row of one finite fill value), 0 zeros (Attention's rule);
//  - `mask_sliced` 1: the mask's last axis first sliced to K's length T
//    (Slice(mask, 0, T), a wider mask's first T keys: HF's
//    attention_mask[:, :, :, :key_states.shape[-2]]);
//  - a float mask's values at or below -1e30 (HF's masks of float's lowest)
//    hide their keys as -inf does: the pattern gives them exp(c - max) = 0
//    unless every visible score of the row is below about c + 745, and
//    the kernel then skips them as it skips -inf. A row with no value above
//    -1e30 but some finite gives, as the pattern's Softmax of scores that
//    vanish beside c, the mean of V's rows at the keys of the row's largest
//    value.
class SdpaOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const float scale = node.attr_float("scale", 1);
    const int64_t repeat = node.attr_int("kv_repeat", 1);
    const int64_t rows = node.attr_int("masked_rows", 0), sliced = node.attr_int("mask_sliced", 0);
    if (!(scale > 0) || !std::isfinite(scale) || repeat < 1 || rows < 0 || rows > 2 || sliced < 0 || sliced > 1)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": scale ", scale, ", kv_repeat ", repeat,
                                                     ", masked_rows ", rows, " out of range"));
    const bool past = node.has_input(kPastKey);
    if (past != node.has_input(kPastValue) || (!past && (node.has_output(kPresentKey) || node.has_output(kPresentValue))))
      return absl::InvalidArgumentError(absl::StrCat(
          node.Describe(), ": past_key and past_value come together, and present_key / present_value need them"));
    return std::unique_ptr<Op>(new SdpaOp(scale, repeat, int(rows), sliced != 0));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType t1 = ctx.input(kQ).dtype;
    std::vector<std::optional<Shape>> shapes(kPastValue + 1);
    bool all_known = true;
    for (size_t i = 0; i < ctx.num_inputs() && i < shapes.size(); ++i) {
      if (!ctx.has_input(i)) continue;
      shapes[i] = ctx.input(i).concrete_shape();
      if (!shapes[i]) all_known = false;
    }
    ValueType y, present_k, present_v;
    y.dtype = present_k.dtype = present_v.dtype = t1;
    if (all_known) {
      auto plan = std::make_shared<SdpaPlan>();
      RETURN_IF_ERROR(Resolve(ctx.node(), shapes, *plan));
      plan->problem.dtype = plan->problem.softmax_dtype = t1;
      const AttentionProblem& p = plan->problem;
      y = ValueType::Of(t1, {p.batch, p.q_heads, p.q_len, p.v_head_size});
      present_k = ValueType::Of(t1, plan->present_key);
      present_v = ValueType::Of(t1, plan->present_value);
      ctx.set_plan(std::move(plan));
    } else {
      y.dims = present_k.dims = present_v.dims = std::vector<Dim>(4);
    }
    ctx.set_output(kY, y);
    if (ctx.num_outputs() > kPresentKey) ctx.set_output(kPresentKey, present_k);
    if (ctx.num_outputs() > kPresentValue) ctx.set_output(kPresentValue, present_v);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const SdpaPlan& plan = ctx.plan<SdpaPlan>();
    AttentionProblem p = plan.problem;
    const auto requested = [&](size_t i) { return i < ctx.num_outputs() && ctx.output_requested(i); };
    p.q_data = ctx.input(kQ)->raw();
    p.k_data = ctx.input(kK)->raw();
    p.v_data = ctx.input(kV)->raw();
    p.y_data = ctx.output(kY).raw();
    const Tensor* mask = ctx.num_inputs() > kMask ? ctx.input(kMask) : nullptr;
    std::vector<double> bias;
    MemoryReservation workspace;  // the bias and the kernel's workspaces, against the session's budget
    Tensor made_k, made_v;        // K' and V' when made here and present is not asked for
    if (plan.has_past && plan.in_place) {
      // Past rows read where they are; an empty past is no past (its
      // pointer may be anything, even present's).
      if (p.cache.past_len > 0) {
        p.cache.past_key = ctx.input(kPastKey)->raw();
        p.cache.past_value = ctx.input(kPastValue)->raw();
      }
      if (requested(kPresentKey)) p.cache.present_key = ctx.output(kPresentKey).raw();
      if (requested(kPresentValue)) p.cache.present_value = ctx.output(kPresentValue).raw();
    } else if (plan.has_past) {
      void* k = nullptr;
      void* v = nullptr;
      if (requested(kPresentKey)) k = ctx.output(kPresentKey).raw();
      else {
        ASSIGN_OR_RETURN(made_k, ctx.NewTensor(p.dtype, plan.present_key));
        k = made_k.raw();
      }
      if (requested(kPresentValue)) v = ctx.output(kPresentValue).raw();
      else {
        ASSIGN_OR_RETURN(made_v, ctx.NewTensor(p.dtype, plan.present_value));
        v = made_v.raw();
      }
      RETURN_IF_ERROR(ConcatOnAxis2(p.dtype, *ctx.input(kPastKey), *ctx.input(kK), k, ctx.threads()));
      RETURN_IF_ERROR(ConcatOnAxis2(p.dtype, *ctx.input(kPastValue), *ctx.input(kV), v, ctx.threads()));
      p.k_data = k;
      p.v_data = v;
    }
    if (mask) {
      RETURN_IF_ERROR(MaskBias(ctx, *mask, p.dtype, workspace, bias));
      if (mask->dtype() != DType::kBool)
        for (double& x : bias)
          if (x <= kMaskFloor) x = -std::numeric_limits<double>::infinity();
      p.mask = bias.data();
    }
    if (ctx.output(kY).size() == 0) {
      WritePresent(p, ctx.threads());  // nothing unless the kernel reads present's rows in place
      return absl::OkStatus();
    }
    const bool fast = UsesFastPath(p);
    RETURN_IF_ERROR(ctx.Grow(workspace, AttentionWorkspaceBytes(p, ctx.threads(), fast), 1,
                             fast ? "the attention kernel's workspaces" : "the attention reference's rows"));
    if (fast) {
      AttentionFast(p, ctx.threads());  // with present
    } else {
      WritePresent(p, ctx.threads());
      AttentionReference(p);
    }
    if (mask && (masked_rows_ != 0 || mask->dtype() != DType::kBool)) FixMaskedRows(p, *mask);
    return absl::OkStatus();
  }

 private:
  SdpaOp(float scale, int64_t repeat, int rows, bool sliced)
      : scale_(scale), repeat_(repeat), masked_rows_(rows), mask_sliced_(sliced) {}

  struct SdpaPlan : AttentionPlan {
    bool has_past = false;
    bool in_place = false;  // the kernel reads past and new rows (else K', V' are made first)
    Shape present_key, present_value;  // K' and V' (the Concats' outputs)
  };

  // dst = Concat(past, x, axis 2) of two 4-D tensors that agree on the other axes.
  static absl::Status ConcatOnAxis2(DType dtype, const Tensor& past, const Tensor& x, void* dst, int threads) {
    const Shape& a = past.shape();
    const Shape& b = x.shape();
    const int64_t total = a[2] + b[2];
    const std::vector<int64_t> dst_strides = {a[1] * total * a[3], total * a[3], a[3], 1};
    RETURN_IF_ERROR(CopyStrided(dtype, a, past.raw(), {a[1] * a[2] * a[3], a[2] * a[3], a[3], 1}, dst, dst_strides,
                                threads));
    return CopyStrided(dtype, b, x.raw(), {b[1] * b[2] * b[3], b[2] * b[3], b[3], 1},
                       ElementAt(dtype, dst, a[2] * a[3]), dst_strides, threads);
  }

  // The broadcast geometry of Q, K', V' and the mask (absent: no value).
  absl::Status Resolve(const Node& node, const std::vector<std::optional<Shape>>& in, SdpaPlan& plan) const {
    AttentionProblem& p = plan.problem;
    std::string what = absl::StrCat("Q ", ShapeToString(*in[kQ]), ", K ", ShapeToString(*in[kK]), ", V ",
                                    ShapeToString(*in[kV]));
    if (in[kMask]) absl::StrAppend(&what, ", mask ", ShapeToString(*in[kMask]));
    plan.has_past = in[kPastKey].has_value() && in[kPastValue].has_value();
    if (plan.has_past)
      absl::StrAppend(&what, ", past_key ", ShapeToString(*in[kPastKey]), ", past_value ",
                      ShapeToString(*in[kPastValue]));
    auto error = [&](const std::string& rule) {
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", what, ": ", rule));
    };
    if (in[kQ]->size() != 4 || in[kK]->size() != 4 || in[kV]->size() != 4 ||
        (in[kMask] && (in[kMask]->empty() || in[kMask]->size() > 4)))
      return error("Q, K and V must be 4-D and the mask of rank 1 to 4 (the rewritten pattern's ranks)");
    const Shape &q = *in[kQ], &k_new = *in[kK], &v_new = *in[kV];
    Shape k = k_new, v = v_new;
    if (plan.has_past) {
      const Shape &pk = *in[kPastKey], &pv = *in[kPastValue];
      const auto joins = [](const Shape& a, const Shape& b) {
        return a.size() == 4 && a[0] == b[0] && a[1] == b[1] && a[3] == b[3];
      };
      if (!joins(pk, k_new) || !joins(pv, v_new))
        return error("past and new keys (values) must be 4-D and agree on every axis but 2 (Concat)");
      const std::optional<int64_t> tk = CheckedAdd(pk[2], k_new[2]), tv = CheckedAdd(pv[2], v_new[2]);
      if (!tk || !tv) return error("the concatenated length overflows");
      k[2] = *tk;
      v[2] = *tv;
    }
    plan.present_key = k;
    plan.present_value = v;
    Shape m(4, 1);
    if (in[kMask]) std::copy(in[kMask]->begin(), in[kMask]->end(), m.end() - int64_t(in[kMask]->size()));
    const int64_t mask_width = m[3];  // the rows' pitch
    if (mask_sliced_) m[3] = std::min(m[3], k[2]);
    if (k[3] != q[3]) return error("Q and K head sizes differ (MatMul(Q, Kᵀ))");
    const std::optional<int64_t> kh = CheckedMul(k[1], repeat_), vh = CheckedMul(v[1], repeat_);
    if (!kh || !vh) return error("head count overflows");
    // NumPy broadcast of one dim.
    bool ok = true;
    auto bc = [&](std::initializer_list<int64_t> dims) {
      int64_t out = 1;
      for (int64_t d : dims)
        if (d != 1) {
          if (out != 1 && out != d) ok = false;
          out = d;
        }
      return out;
    };
    p.batch = bc({q[0], k[0], v[0], m[0]});
    p.q_heads = bc({q[1], *kh, *vh, m[1]});
    p.q_len = bc({q[2], m[2]});
    p.total_len = p.kv_len = bc({k[2], m[3]});
    if (!ok) return error("the dims do not broadcast (MatMul, Add or Where would fail)");
    if (v[2] != p.total_len) return error(absl::StrCat("V's length ", v[2], " is not the scores' ", p.total_len));
    // K and V must take the same head for each query head: both broadcast
    // (one head) or both the query heads' count.
    if ((*kh == 1) != (*vh == 1)) return error("K and V have different head counts");
    p.kv_heads = *kh == 1 ? 1 : k[1];
    if (p.kv_heads != 0 && p.q_heads % p.kv_heads != 0) return error("kv heads do not divide the query heads");
    p.head_size = q[3];
    p.v_head_size = v[3];
    const auto view = [&](const Shape& x, int64_t len) {
      HeadView h = HeadView::Of4D(x[1], len, x[3]);
      if (x[0] == 1) h.stride_b = 0;
      if (x[1] == 1) h.stride_h = 0;
      if (x[2] == 1) h.stride_s = 0;
      return h;
    };
    p.q = view(q, q[2]);
    p.k = view(k, k[2]);
    p.v = view(v, v[2]);
    p.y = HeadView::Of4D(p.q_heads, p.q_len, p.v_head_size);
    if (in[kMask]) {
      int64_t stride = 1;
      for (int d = 3; d >= 0; --d) {
        p.mask_stride[d] = m[size_t(d)] == 1 ? 0 : stride;
        stride = CheckedMul(stride, d == 3 ? mask_width : m[size_t(d)]).value_or(0);
      }
      p.mask_len = p.total_len;
    }
    p.scale = scale_;
    // The cache read in place: the kernel's past is (batch, kv heads, P, D)
    // for every batch row and key position of the scores, one P for K and V.
    const Shape &pk = plan.has_past ? *in[kPastKey] : k, &pv = plan.has_past ? *in[kPastValue] : v;
    plan.in_place = plan.has_past && k[0] == p.batch && v[0] == p.batch && k[2] == p.total_len && pk[2] == pv[2];
    if (plan.in_place) {
      p.kv_len = k_new[2];
      p.k = view(k_new, k_new[2]);
      p.v = view(v_new, v_new[2]);
      p.cache.past_len = p.cache.capacity = pk[2];
      p.cache.present_capacity = p.total_len;
    }
    return absl::OkStatus();
  }

  static constexpr double kMaskFloor = -1e30;

  // Rows whose mask hides every key (the kernel wrote 0): the graph's answer.
  void FixMaskedRows(const AttentionProblem& p, const Tensor& mask) const {
    const Shape& mask_shape = mask.shape();
    if (p.total_len == 0) return;
    Shape m(4, 1);
    std::copy(mask_shape.begin(), mask_shape.end(), m.end() - int64_t(mask_shape.size()));
    const int64_t rows = m[0] * m[1] * m[2];
    const int64_t width = mask_sliced_ ? std::min(m[3], p.total_len) : m[3];  // the keys the scores see
    std::vector<char> hidden(size_t(rows), 1);
    bool any = false;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < width && hidden[size_t(r)]; ++j)
        hidden[size_t(r)] = p.mask[r * m[3] + j] == -std::numeric_limits<double>::infinity();
      any = any || hidden[size_t(r)];
    }
    if (!any) return;
    VisitTypes<AttentionTypes>(p.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const double weight = RoundToPrecision(p.dtype, 1.0 / double(p.total_len));
      std::vector<double> acc(size_t(p.v_head_size));
      // V's row j: in the past (read in place) or this step's.
      const int64_t past = p.cache.past_value ? p.cache.past_len : 0;
      const auto value_row = [&](int64_t b, int64_t g, int64_t j) {
        if (j < past)
          return static_cast<const T*>(p.cache.past_value) + ((b * p.kv_heads + g) * p.cache.capacity + j) * p.v_head_size;
        return static_cast<const T*>(p.v_data) + p.v.At(b, g, j - past);
      };
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.q_heads; ++h)
          for (int64_t i = 0; i < p.q_len; ++i) {
            const int64_t r = ((m[0] == 1 ? 0 : b) * m[1] + (m[1] == 1 ? 0 : h)) * m[2] + (m[2] == 1 ? 0 : i);
            if (!hidden[size_t(r)]) continue;
            T* y = static_cast<T*>(p.y_data) + p.y.At(b, h, i);
            // A float mask's largest value in the row, when above -inf: its keys share the weight.
            double top = -std::numeric_limits<double>::infinity();
            const auto value_at = [&](int64_t j) {
              return RoundToPrecision(p.dtype, GetDouble(mask, r * m[3] + (width == 1 ? 0 : j)));
            };
            if (mask.dtype() != DType::kBool)
              for (int64_t j = 0; j < p.total_len; ++j) top = std::max(top, value_at(j));
            const bool floored = top > -std::numeric_limits<double>::infinity();
            if (!floored && masked_rows_ == 0) continue;  // the kernel's zeros
            std::fill(acc.begin(), acc.end(),
                      masked_rows_ == 1 && !floored ? std::numeric_limits<double>::quiet_NaN() : 0.0);
            if (masked_rows_ == 2 || floored) {
              const int64_t g = h / (p.q_heads / p.kv_heads);
              int64_t count = 0;
              for (int64_t j = 0; j < p.total_len; ++j) count += !floored || value_at(j) == top;
              const double w = floored ? RoundToPrecision(p.dtype, 1.0 / double(count)) : weight;
              for (int64_t j = 0; j < p.total_len; ++j) {
                if (floored && value_at(j) != top) continue;
                const T* v = value_row(b, g, j);
                for (int64_t d = 0; d < p.v_head_size; ++d) acc[size_t(d)] += w * double(Widen(v[d]));
              }
            }
            for (int64_t d = 0; d < p.v_head_size; ++d) y[d] = Narrow<T>(acc[size_t(d)]);
          }
    });
  }

  float scale_;
  int64_t repeat_;
  int masked_rows_;
  bool mask_sliced_;  // the mask's last axis sliced to K's length first (Slice(mask, 0, T))
};

}  // namespace

std::vector<OpDef> AttentionOps() {
  // One op for 23, 24 and 25: the differences (nonpad, short-mask padding,
  // windows, 25's stricter validation) are keyed on the node's opset. ONNX
  // lets K/V (T2) differ from Q (T1); here Q, K, V and the past share one type (A1).
  const std::vector<TypeConstraint> types = {
      {"T", AttentionTypes::set()}, {"U", MaskTypes::set()}, {"I", kInt64}};
  return {
      {kOnnxDomain, "Attention", Versions{23, 23}, "T T T U? T? T?", "T T? T? T?", types, AttentionOp::Create},
      {kOnnxDomain, "Attention", Versions{24}, "T T T U? T? T? I?", "T T? T? T?", types, AttentionOp::Create},
      {kInternalDomain, "Attention", Versions{1}, "T T T U? T? T?", "T T? T?", types, SdpaOp::Create},
  };
}

}  // namespace onnx_mini
