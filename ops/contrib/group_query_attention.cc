// com.microsoft GroupQueryAttention (opset 1), as onnxruntime's CPU kernel
// computes it (docs/contrib_ops.md, "GroupQueryAttention"): the attention
// kernel over KvCacheView (each batch row its own past length from seqlens_k,
// a shared past/present buffer written only at the new rows), the rotary
// kernel for do_rotary, head sinks and clamped positions for right padding.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/attention/attention.h"
#include "kernels/attention/rotary.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum Input {
  kQuery = 0, kKey, kValue, kPastKey, kPastValue, kSeqlensK, kTotalSeqLen, kCos, kSin,
  kPositionIds, kAttentionBias, kHeadSink, kKScale, kVScale, kQNorm, kKNorm
};
enum Output { kOutput = 0, kPresentKey, kPresentValue, kOutputQk };

using GqaTypes = TypeList<float, Float16, BFloat16>;

struct GqaAttributes {
  int64_t q_heads = 0, kv_heads = 0;
  float scale = 0;    // 0: 1 / sqrt(head_size)
  float softcap = 0;  // applied when > 0, as onnxruntime does
  int64_t local_window = -1;  // keys a query sees, itself included; -1 all
  bool rotary = false, interleaved = false, smooth = false;
};

absl::StatusOr<GqaAttributes> ReadAttributes(const Node& node) {
  auto error = [&](const std::string& rule) { return AttributeError(node, rule); };
  GqaAttributes a;
  a.q_heads = node.attr_int("num_heads", 0);
  a.kv_heads = node.attr_int("kv_num_heads", 0);
  if (a.q_heads <= 0 || a.kv_heads <= 0)
    return error(absl::StrCat("num_heads ", a.q_heads, " and kv_num_heads ", a.kv_heads, " must be > 0"));
  if (a.q_heads % a.kv_heads != 0)
    return error(absl::StrCat("kv_num_heads ", a.kv_heads, " must divide num_heads ", a.q_heads));
  a.scale = node.attr_float("scale", 0);
  a.softcap = node.attr_float("softcap", 0);
  a.local_window = node.attr_int("local_window_size", -1);
  if (a.local_window < -1 || a.local_window == 0)
    return error(absl::StrCat("local_window_size ", a.local_window, " must be -1 (no window) or > 0"));
  a.rotary = node.attr_int("do_rotary", 0) == 1;
  a.interleaved = node.attr_int("rotary_interleaved", 0) == 1;
  a.smooth = node.attr_int("smooth_softmax", 0) == 1;
  if (node.attr_int("qk_output", 0) != 0 || node.has_output(kOutputQk))
    return NotImplemented(node, "the output_qk output (qk_output)");
  if (node.attr_int("sliding_window_cache", 0) != 0) return NotImplemented(node, "sliding_window_cache=1");
  if (node.attr_string("k_quant_type", "NONE") != "NONE" || node.attr_string("v_quant_type", "NONE") != "NONE" ||
      node.attr_int("kv_cache_bit_width", 0) != 0 || node.has_input(kKScale) || node.has_input(kVScale))
    return NotImplemented(node, "a quantized KV cache (k_quant_type, v_quant_type, k_scale, v_scale)");
  if (node.has_input(kQNorm) || node.has_input(kKNorm))
    return NotImplemented(node, "q_norm_weight / k_norm_weight (onnxruntime's CPU kernel refuses them too)");
  if (node.has_input(kKey) != node.has_input(kValue))
    return error("key and value must both be given (separate Q, K, V) or both absent (packed QKV in query)");
  if (node.has_input(kPastKey) != node.has_input(kPastValue))
    return error("past_key and past_value must be given together");
  if (node.has_input(kCos) != node.has_input(kSin)) return error("cos_cache and sin_cache must be given together");
  if (a.rotary && !node.has_input(kCos)) return error("do_rotary=1 needs cos_cache and sin_cache");
  return a;
}

// The geometry Infer derives from the shapes and total_sequence_length.
struct GqaPlan : OpPlan {
  int64_t batch = 0, seq = 0, q_heads = 0, kv_heads = 0, head = 0;
  bool packed = false;
  bool has_past = false;
  int64_t past_cap = 0, present_cap = 0;
  int64_t total = 0;         // total_sequence_length
  bool first_prompt = false;  // seq == total: no past keys, positions from 0
  int64_t rotary_dim = 0, cos_rows = 0;
  int64_t bias_stride_b = 0, bias_stride_h = 0;  // attention_bias (B|1, Hq|1, S, total)
};

class GroupQueryAttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(GqaAttributes a, ReadAttributes(node));
    return std::unique_ptr<Op>(new GroupQueryAttentionOp(a));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType t = ctx.input(kQuery).dtype;
    std::vector<std::optional<Shape>> shapes(ctx.num_inputs());
    bool all_known = true;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      shapes[i] = ctx.input(i).concrete_shape();
      if (!shapes[i]) all_known = false;
    }
    ValueType y, pk, pv;
    y.dtype = pk.dtype = pv.dtype = t;
    const Tensor* total = all_known ? ctx.value(kTotalSeqLen) : nullptr;
    if (all_known && total) {
      auto plan = std::make_shared<GqaPlan>();
      RETURN_IF_ERROR(Resolve(ctx, shapes, *total, *plan));
      const GqaPlan& g = *plan;
      y = ValueType::Of(t, {g.batch, g.seq, g.q_heads * g.head});
      pk = pv = ValueType::Of(t, {g.batch, g.kv_heads, g.present_cap, g.head});
      ctx.set_plan(std::move(plan));
    } else {
      y.dims = std::vector<Dim>(3);
      pk.dims = pv.dims = std::vector<Dim>(4);
    }
    ctx.set_output(kOutput, y);
    if (ctx.num_outputs() > kPresentKey) ctx.set_output(kPresentKey, pk);
    if (ctx.num_outputs() > kPresentValue) ctx.set_output(kPresentValue, pv);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override;

 private:
  explicit GroupQueryAttentionOp(GqaAttributes a) : a_(a) {}
  absl::Status Resolve(const InferContext& ctx, const std::vector<std::optional<Shape>>& shapes,
                       const Tensor& total, GqaPlan& g) const;
  GqaAttributes a_;
};

absl::Status GroupQueryAttentionOp::Resolve(const InferContext& ctx, const std::vector<std::optional<Shape>>& shapes,
                                            const Tensor& total, GqaPlan& g) const {
  auto shape = [&](size_t i) -> const Shape* { return i < shapes.size() && shapes[i] ? &*shapes[i] : nullptr; };
  const Shape& q = *shape(kQuery);
  if (q.size() != 3) return ctx.Error(absl::StrCat("query must be 3-D (batch, sequence, hidden), got ", ShapeToString(q)));
  g.batch = q[0], g.seq = q[1], g.q_heads = a_.q_heads, g.kv_heads = a_.kv_heads;
  g.packed = shape(kKey) == nullptr;
  if (g.packed) {
    const int64_t heads = a_.q_heads + 2 * a_.kv_heads;
    if (q[2] % heads != 0)
      return ctx.Error(absl::StrCat("packed QKV hidden size ", q[2], " must divide by num_heads + 2 * kv_num_heads = ",
                                    heads));
    g.head = q[2] / heads;
  } else {
    const Shape& k = *shape(kKey);
    const Shape* v = shape(kValue);
    if (q[2] % a_.q_heads != 0)
      return ctx.Error(absl::StrCat("query hidden size ", q[2], " must divide by num_heads ", a_.q_heads));
    g.head = q[2] / a_.q_heads;
    if (k.size() == 3 && k[1] == 0 && g.seq > 0)
      return NotImplemented(ctx.node(), "key/value with no new rows (onnxruntime's shared-KV mode)");
    const Shape want = {g.batch, g.seq, a_.kv_heads * g.head};
    if (k != want || !v || *v != want)
      return ctx.Error(absl::StrCat("key ", ShapeToString(k), " and value ", v ? ShapeToString(*v) : "absent",
                                    " must both be ", ShapeToString(want), " (batch, sequence, kv_num_heads * head_size ",
                                    g.head, ")"));
  }
  if (g.head <= 0) return ctx.Error(absl::StrCat("head_size ", g.head, " must be > 0"));
  if (const Shape* p = shape(kPastKey)) {
    const Shape* pv = shape(kPastValue);
    if (p->size() != 4 || (*p)[0] != g.batch || (*p)[1] != g.kv_heads || (*p)[3] != g.head || !pv || *pv != *p)
      return ctx.Error(absl::StrCat("past_key ", ShapeToString(*p), " and past_value ", pv ? ShapeToString(*pv) : "",
                                    " must both be (batch ", g.batch, ", kv_num_heads ", g.kv_heads,
                                    ", capacity, head_size ", g.head, ")"));
    g.has_past = true;
    g.past_cap = (*p)[2];
  }
  const Shape& sl = *shape(kSeqlensK);
  if (!(sl == Shape{g.batch} || sl == Shape{g.batch, 1}))
    return ctx.Error(absl::StrCat("seqlens_k ", ShapeToString(sl), " must be (batch) or (batch, 1) with batch ", g.batch));
  if (total.size() != 1 || total.rank() > 1)
    return ctx.Error(absl::StrCat("total_sequence_length ", ShapeToString(total.shape()), " must be a scalar or (1)"));
  g.total = total.data<int32_t>()[0];
  if (g.total < g.seq)
    return ctx.Error(absl::StrCat("total_sequence_length ", g.total, " is less than the sequence length ", g.seq));
  g.first_prompt = g.seq == g.total;
  if (!g.first_prompt && g.seq > 1 && g.batch != 1)
    return ctx.Error(absl::StrCat("a prompt continuing a past (sequence ", g.seq, " < total_sequence_length ", g.total,
                                  ") needs batch 1, got ", g.batch));
  g.present_cap = std::max(g.total, g.past_cap);
  if (a_.rotary) {
    const Shape& c = *shape(kCos);
    const Shape& s = *shape(kSin);
    if (c.size() != 2 || c != s || c[1] <= 0 || 2 * c[1] > g.head)
      return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(c), " and sin_cache ", ShapeToString(s),
                                    " must both be (positions, rotary_dim / 2) with 0 < rotary_dim <= head_size ",
                                    g.head));
    g.rotary_dim = 2 * c[1];
    g.cos_rows = c[0];
  }
  if (const Shape* p = shape(kPositionIds)) {
    if (*p != Shape{g.batch, g.seq})
      return ctx.Error(absl::StrCat("position_ids ", ShapeToString(*p), " must be (batch, sequence) = (", g.batch, ", ",
                                    g.seq, ")"));
  }
  if (const Shape* b = shape(kAttentionBias)) {
    if (b->size() != 4 || ((*b)[0] != 1 && (*b)[0] != g.batch) || ((*b)[1] != 1 && (*b)[1] != g.q_heads) ||
        (*b)[2] != g.seq || (*b)[3] != g.total)
      return ctx.Error(absl::StrCat("attention_bias ", ShapeToString(*b), " must be (batch ", g.batch,
                                    " or 1, num_heads ", g.q_heads, " or 1, sequence ", g.seq,
                                    ", total_sequence_length ", g.total, ")"));
    const int64_t matrix = g.seq * g.total;
    g.bias_stride_h = (*b)[1] == 1 ? 0 : matrix;
    g.bias_stride_b = (*b)[0] == 1 ? 0 : (*b)[1] * matrix;
  }
  if (const Shape* h = shape(kHeadSink)) {
    if (*h != Shape{g.q_heads})
      return ctx.Error(absl::StrCat("head_sink ", ShapeToString(*h), " must be (num_heads) = (", g.q_heads, ")"));
  }
  return absl::OkStatus();
}

// A tensor's values widened to float (head_sink) or double (attention_bias).
template <class Out>
std::vector<Out> Widened(const Tensor& t) {
  std::vector<Out> out(static_cast<size_t>(t.size()));
  VisitTypes<GqaTypes>(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = t.data<T>();
    for (int64_t i = 0; i < t.size(); ++i) out[size_t(i)] = Out(Widen(in[i]));
  });
  return out;
}

absl::Status GroupQueryAttentionOp::Compute(KernelContext& ctx) const {
  const GqaPlan& g = ctx.plan<GqaPlan>();
  const auto input = [&](size_t i) { return i < ctx.num_inputs() ? ctx.input(i) : nullptr; };
  const Tensor& query = *ctx.input(kQuery);
  const DType t = query.dtype();
  const int64_t B = g.batch, S = g.seq, D = g.head, Hq = g.q_heads, Hkv = g.kv_heads;

  // Every check on the run's values first: nothing is written on failure.
  const int32_t* seqlens = ctx.input(kSeqlensK)->data<int32_t>();
  std::vector<int64_t> past_lens(static_cast<size_t>(B)), key_counts(static_cast<size_t>(B));
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t keys = int64_t(seqlens[b]) + 1;  // the row's total length
    if (seqlens[b] < 0)
      return ctx.Error(absl::StrCat("seqlens_k[", b, "] = ", seqlens[b], " must be >= 0 (a row's total length - 1)"));
    if (keys > g.total)
      return ctx.Error(absl::StrCat("seqlens_k[", b, "] = ", seqlens[b], " gives ", keys,
                                    " keys, more than total_sequence_length ", g.total));
    if (g.first_prompt) {
      past_lens[size_t(b)] = 0;
    } else {
      if (keys < S)
        return ctx.Error(absl::StrCat("seqlens_k[", b, "] = ", seqlens[b], " gives ", keys,
                                      " keys, fewer than the sequence length ", S));
      past_lens[size_t(b)] = keys - S;
      if (past_lens[size_t(b)] > g.past_cap)
        return ctx.Error(absl::StrCat("seqlens_k[", b, "] = ", seqlens[b], " needs ", past_lens[size_t(b)],
                                      " past rows, more than the past buffer's ", g.past_cap,
                                      g.has_past ? "" : " (no past_key given)"));
    }
    key_counts[size_t(b)] = keys;
    longest = std::max(longest, keys);
  }
  const Tensor* position_ids = a_.rotary ? input(kPositionIds) : nullptr;
  std::vector<int64_t> row_offsets(static_cast<size_t>(B), 0);
  if (a_.rotary) {
    if (position_ids && g.first_prompt && position_ids->size() > 0) {
      // onnxruntime's first prompt reads position_ids as one start for every
      // row: position_ids[0, 0] + s. (An empty batch has none and needs none.)
      const int64_t start = position_ids->data<int64_t>()[0];
      if (start < 0 || start > g.cos_rows - S)
        return ctx.Error(absl::StrCat("position_ids[0, 0] = ", start, " (the first prompt's start) puts positions ",
                                      start, "..", start + S - 1, " outside the rotary table's ", g.cos_rows, " rows"));
      row_offsets.assign(size_t(B), start);
    } else if (position_ids) {
      const int64_t* ids = position_ids->data<int64_t>();
      for (int64_t i = 0; i < B * S; ++i)
        if (ids[i] < 0 || ids[i] >= g.cos_rows)
          return ctx.Error(absl::StrCat("position_ids[", i / S, ", ", i % S, "] = ", ids[i],
                                        " is outside the rotary table's ", g.cos_rows, " rows"));
    } else {
      for (int64_t b = 0; b < B; ++b) {
        row_offsets[size_t(b)] = past_lens[size_t(b)];
        if (row_offsets[size_t(b)] + S > g.cos_rows)
          return ctx.Error(absl::StrCat("position ", row_offsets[size_t(b)] + S - 1, " of row ", b,
                                        " (seqlens_k ", seqlens[b], ") is outside the rotary table's ", g.cos_rows,
                                        " rows"));
      }
    }
  }
  const Tensor* past_key = input(kPastKey);
  const Tensor* past_value = input(kPastValue);
  void* present_key = ctx.output_requested(kPresentKey) ? ctx.output(kPresentKey).raw() : nullptr;
  void* present_value = ctx.output_requested(kPresentValue) ? ctx.output(kPresentValue).raw() : nullptr;
  const bool shared_k = past_key && present_key && present_key == past_key->raw();
  const bool shared_v = past_value && present_value && present_value == past_value->raw();
  // One half bound in place and the other not (the session grants an alias
  // only where no other node still reads the past): the shared half's past
  // is copied aside and both run the separate form.
  Tensor past_aside;
  if (shared_k != shared_v) {
    const Tensor* shared = shared_k ? past_key : past_value;
    ASSIGN_OR_RETURN(past_aside, ctx.NewTensor(shared->dtype(), shared->shape()));
    std::memcpy(past_aside.raw(), shared->raw(), size_t(shared->size()) * size_t(Info(shared->dtype()).bits / 8));
  }

  // Workspaces: the rotated Q and K, the bias as doubles, the kernel's own.
  MemoryReservation workspace;
  AttentionProblem p;
  p.batch = B, p.q_heads = Hq, p.kv_heads = Hkv, p.q_len = S, p.kv_len = S;
  p.head_size = p.v_head_size = D;
  p.dtype = t, p.softmax_dtype = DType::kFloat;
  const int64_t qkv_heads = Hq + 2 * Hkv;
  const char* base = static_cast<const char*>(query.raw());
  const size_t esz = size_t(Info(t).bits / 8);
  if (g.packed) {
    const HeadView packed{S * qkv_heads * D, D, qkv_heads * D};
    p.q = p.k = p.v = packed;
    p.q_data = base;  // (null when the tensor is empty: no offset from it)
    p.k_data = base ? base + size_t(Hq * D) * esz : nullptr;
    p.v_data = base ? base + size_t((Hq + Hkv) * D) * esz : nullptr;
  } else {
    p.q = HeadView::Of3D(Hq, S, D);
    p.k = p.v = HeadView::Of3D(Hkv, S, D);
    p.q_data = base;
    p.k_data = ctx.input(kKey)->raw();
    p.v_data = ctx.input(kValue)->raw();
  }
  Tensor q_rot, k_rot;
  if (a_.rotary && B * S > 0) {
    ASSIGN_OR_RETURN(q_rot, ctx.NewTensor(t, {B, S, Hq * D}));
    ASSIGN_OR_RETURN(k_rot, ctx.NewTensor(t, {B, S, Hkv * D}));
    RotaryProblem r;
    r.dtype = t, r.batch = B, r.seq = S, r.head_size = D, r.rotary_dim = g.rotary_dim, r.interleaved = a_.interleaved;
    r.cos = ctx.input(kCos)->raw(), r.sin = ctx.input(kSin)->raw(), r.cache_stride = g.rotary_dim / 2;
    if (position_ids && !g.first_prompt) r.position_ids = position_ids->data<int64_t>();
    else r.row_offsets = row_offsets.data();
    r.heads = Hq, r.x_view = p.q, r.y_view = HeadView::Of3D(Hq, S, D), r.x = p.q_data, r.y = q_rot.raw();
    Rotary(r);
    r.heads = Hkv, r.x_view = p.k, r.y_view = HeadView::Of3D(Hkv, S, D), r.x = p.k_data, r.y = k_rot.raw();
    Rotary(r);
    p.q = HeadView::Of3D(Hq, S, D), p.q_data = q_rot.raw();
    p.k = HeadView::Of3D(Hkv, S, D), p.k_data = k_rot.raw();
  }

  KvCacheView& c = p.cache;
  if (past_key) {
    c.past_key = past_key->raw(), c.past_value = past_value->raw();
    if (shared_k != shared_v) (shared_k ? c.past_key : c.past_value) = past_aside.raw();
    c.capacity = g.past_cap;
  }
  c.past_lens = past_lens.data();
  // A first prompt may be right-padded: the row's real keys are its first
  // seqlens_k + 1; the pad queries sit at the last (clamp_position).
  if (g.first_prompt) c.valid_lens = key_counts.data();
  c.present_key = present_key, c.present_value = present_value;
  c.present_capacity = g.present_cap;
  p.total_len = g.first_prompt ? S : longest;
  p.scale = a_.scale != 0 ? a_.scale : float(1.0 / std::sqrt(double(D)));
  p.softcap = a_.softcap > 0 ? a_.softcap : 0;
  p.causal = true;
  // onnxruntime's float kernel without softcap, smooth softmax or sinks (its
  // flash path) starts a pad query's window at its own position; its other
  // paths (float16, or with those) at the row's last key.
  const bool flash_like = t == DType::kFloat && g.total > 1 && a_.softcap == 0 && !a_.smooth &&
                          !input(kHeadSink) && present_key && present_value;
  p.clamp_position = !flash_like;
  p.left_window = a_.local_window > 0 ? a_.local_window - 1 : -1;
  std::vector<float> sinks;
  if (const Tensor* hs = input(kHeadSink)) sinks = Widened<float>(*hs);
  else if (a_.smooth) sinks.assign(size_t(Hq), 0.f);
  if (!sinks.empty()) p.sinks = sinks.data();
  std::vector<double> bias;
  if (const Tensor* ab = input(kAttentionBias)) {
    RETURN_IF_ERROR(ctx.Grow(workspace, ab->size(), sizeof(double), "attention_bias as doubles"));
    bias = Widened<double>(*ab);
    p.mask = bias.data();
    p.mask_stride[0] = g.bias_stride_b, p.mask_stride[1] = g.bias_stride_h;
    p.mask_stride[2] = g.total, p.mask_stride[3] = 1;
    p.mask_len = g.total;
  }
  Tensor& y = ctx.output(kOutput);
  p.y_data = y.raw();
  p.y = HeadView::Of3D(Hq, S, D);
  if (y.size() > 0)
    RETURN_IF_ERROR(ctx.Grow(workspace, AttentionWorkspaceBytes(p, ctx.threads(), true), 1,
                             "the attention kernel's workspaces"));

  // A separate present holds each row's keys and zeros past them, as
  // onnxruntime's does; a shared one keeps its other rows as they are.
  if (!c.Shared()) {
    for (void* present : {present_key, present_value}) {
      if (!present) continue;
      for (int64_t b = 0; b < B; ++b) {
        const int64_t from = past_lens[size_t(b)] + S;
        for (int64_t h = 0; h < Hkv && from < g.present_cap; ++h)
          std::memset(static_cast<char*>(present) + size_t(((b * Hkv + h) * g.present_cap + from) * D) * esz, 0,
                      size_t((g.present_cap - from) * D) * esz);
      }
    }
  }
  if (y.size() == 0) {
    WritePresent(p, ctx.threads());
    return absl::OkStatus();
  }
  AttentionFast(p, ctx.threads());  // also writes the present rows
  return absl::OkStatus();
}

}  // namespace

std::vector<OpDef> GroupQueryAttentionOps() {
  const std::vector<TypeConstraint> types = {
      {"T", GqaTypes::set()}, {"M", {DType::kInt32}}, {"P", kInt64}, {"S", {DType::kFloat}}};
  // query key value past_key past_value seqlens_k total_sequence_length
  // cos_cache sin_cache position_ids attention_bias head_sink k_scale v_scale
  // q_norm_weight k_norm_weight; output present_key present_value output_qk.
  return {{kMsDomain, "GroupQueryAttention", Versions{1}, "T T? T? T? T? M M T? T? P? T? T? S? S? T? T?", "T T? T? T?",
           types, GroupQueryAttentionOp::Create, InPlace(Out{kPresentKey}, In{kPastKey}),
           InPlace(Out{kPresentValue}, In{kPastValue})}};
}

}  // namespace onnx_mini
