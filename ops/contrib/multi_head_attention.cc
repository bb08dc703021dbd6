// com.microsoft MultiHeadAttention (opset 1), as onnxruntime's CPU kernel runs
// it (docs/contrib_ops.md): query (B, S, D); key and value (B, L, D) and
// (B, L, Dv), or (B, N, L, H) and (B, N, L, Hv) (cross attention, no bias
// added to them); bias (D + D + Dv); key_padding_mask int32 (B) key ends,
// (3B + 2) (its first B, as ends), (B, T) or (B, S, T); attention_bias
// (1|B, 1|N, S, T); past_key/past_value (B, N, P, H|Hv), read only when
// present_key is requested (as onnxruntime does); outputs Y (B, S, N * Hv),
// present_key/present_value (B, N, P + L, H|Hv) and qk (B, N, S, T), the
// scaled scores with the mask and bias added. Runs on the attention kernel
// (kernels/attention/attention.h) with the masks as its additive bias.
#include "ops/common.h"
#include "ops/contrib/ms_attention.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

enum Input { kQuery = 0, kKey, kValue, kBias, kPadding, kAttentionBias, kPastKey, kPastValue, kPastSeqLen, kCacheIndirection };
enum Output { kY = 0, kPresentKey, kPresentValue, kQk };

struct MhaPlan : OpPlan {
  AttentionProblem problem;
  MsBiasPlan bias;
  bool kv_4d = false;  // key and value (B, N, L, H): no bias added
  bool use_past = false;
  int64_t q_hidden = 0, v_hidden = 0;
};

class MultiHeadAttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const MsAttentionAttrs attrs, ParseMsAttentionAttrs(node));
    if (node.has_input(kPastSeqLen) || node.has_input(kCacheIndirection))
      return NotImplemented(node, "past_sequence_length and cache_indirection (beam search's shared buffer)");
    if (node.has_input(kPastKey) != node.has_input(kPastValue))
      return AttributeError(node, "past_key and past_value must be given together");
    return std::unique_ptr<Op>(new MultiHeadAttentionOp(attrs));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType t = ctx.input(kQuery).dtype;
    std::vector<std::optional<Shape>> s;
    const bool known = ConcreteInputShapes(ctx, kCacheIndirection + 1, s);
    ValueType y, pk, pv, qk;
    y.dtype = pk.dtype = pv.dtype = qk.dtype = t;
    if (known) {
      auto plan = std::make_shared<MhaPlan>();
      RETURN_IF_ERROR(Resolve(ctx, s, *plan));
      const AttentionProblem& p = plan->problem;
      y = ValueType::Of(t, {p.batch, p.q_len, plan->v_hidden});
      pk = ValueType::Of(t, {p.batch, p.kv_heads, p.total_len, p.head_size});
      pv = ValueType::Of(t, {p.batch, p.kv_heads, p.total_len, p.v_head_size});
      qk = ValueType::Of(t, {p.batch, p.q_heads, p.q_len, p.total_len});
      ctx.set_plan(std::move(plan));
    } else {
      y.dims = std::vector<Dim>(3);
      pk.dims = pv.dims = qk.dims = std::vector<Dim>(4);
    }
    ctx.set_output(kY, y);
    if (ctx.num_outputs() > kPresentKey) ctx.set_output(kPresentKey, pk);
    if (ctx.num_outputs() > kPresentValue) ctx.set_output(kPresentValue, pv);
    if (ctx.num_outputs() > kQk) ctx.set_output(kQk, qk);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const MhaPlan& plan = ctx.plan<MhaPlan>();
    AttentionProblem p = plan.problem;
    const auto input = [&](size_t i) { return i < ctx.num_inputs() ? ctx.input(i) : nullptr; };
    const int64_t B = p.batch, S = p.q_len, L = p.kv_len, D = plan.q_hidden, Dv = plan.v_hidden;
    MemoryReservation workspace;  // the bias and the kernel's workspaces, against the session's budget
    std::vector<double> bias;
    RETURN_IF_ERROR(MakeMsBias(ctx, plan.bias, input(kPadding), input(kAttentionBias), workspace, bias, p));
    p.q_data = ctx.input(kQuery)->raw();
    p.k_data = ctx.input(kKey)->raw();
    p.v_data = ctx.input(kValue)->raw();
    Tensor q_biased, k_biased, v_biased;  // the projections with their bias, when given
    if (const Tensor* b = input(kBias)) {
      const size_t esize = StorageBytes(p.dtype, 1);
      const char* bq = static_cast<const char*>(b->raw());
      ASSIGN_OR_RETURN(q_biased, AddBias(ctx, p.dtype, p.q_data, B * S, D, D, bq, {B, S, D}));
      p.q_data = q_biased.raw();
      if (!plan.kv_4d) {
        ASSIGN_OR_RETURN(k_biased, AddBias(ctx, p.dtype, p.k_data, B * L, D, D, bq + size_t(D) * esize, {B, L, D}));
        ASSIGN_OR_RETURN(v_biased,
                         AddBias(ctx, p.dtype, p.v_data, B * L, Dv, Dv, bq + size_t(2 * D) * esize, {B, L, Dv}));
        p.k_data = k_biased.raw();
        p.v_data = v_biased.raw();
      }
    }
    if (plan.use_past) {
      p.cache.past_key = ctx.input(kPastKey)->raw();
      p.cache.past_value = ctx.input(kPastValue)->raw();
    }
    p.y_data = ctx.output(kY).raw();
    if (ctx.output_requested(kPresentKey)) p.cache.present_key = ctx.output(kPresentKey).raw();
    if (ctx.output_requested(kPresentValue)) p.cache.present_value = ctx.output(kPresentValue).raw();
    if (ctx.output_requested(kQk)) p.qk_data = ctx.output(kQk).raw();
    return RunMsAttention(ctx, p, ctx.output(kY).size(), p.qk_data ? ctx.output(kQk).size() : 0, workspace);
  }

 private:
  explicit MultiHeadAttentionOp(const MsAttentionAttrs& attrs) : attrs_(attrs) {}

  absl::Status Resolve(const InferContext& ctx, const std::vector<std::optional<Shape>>& s, MhaPlan& plan) const {
    AttentionProblem& p = plan.problem;
    const int64_t N = attrs_.heads;
    p.dtype = p.softmax_dtype = ctx.input(kQuery).dtype;
    const Shape& q = *s[kQuery];
    if (q.size() == 5) return NotImplemented(ctx.node(), "packed QKV (B, S, N, 3, H) (onnxruntime's CPU kernel has none either)");
    if (q.size() != 3) return ctx.Error(absl::StrCat("query must be (B, S, D), got ", ShapeToString(q)));
    if (!s[kKey] || !s[kValue])
      return ctx.Error("key and value are required (packed QKV in query is not implemented on CPU)");
    const Shape& k = *s[kKey];
    const Shape& v = *s[kValue];
    if (k.size() == 5) return NotImplemented(ctx.node(), "packed KV (B, L, N, 2, H) (onnxruntime's CPU kernel has none either)");
    const int64_t B = q[0], S = q[1], D = q[2];
    if (D % N != 0) return ctx.Error(absl::StrCat("num_heads ", N, " does not divide the query's hidden size ", D));
    p.batch = B, p.q_len = S, p.q_heads = p.kv_heads = N, p.head_size = D / N;
    plan.q_hidden = D;
    if (k.size() == 3 && v.size() == 3) {
      if (k[0] != B || v[0] != B || v[1] != k[1] || k[2] != D || v[2] % N != 0)
        return ctx.Error(absl::StrCat("key ", ShapeToString(k), " and value ", ShapeToString(v), " must be (", B,
                                      ", L, ", D, ") and (", B, ", L, Dv) with Dv divisible by num_heads ", N));
      p.kv_len = k[1];
      plan.v_hidden = v[2];
      p.v_head_size = v[2] / N;
      p.k = HeadView::Of3D(N, p.kv_len, p.head_size);
      p.v = HeadView::Of3D(N, p.kv_len, p.v_head_size);
    } else if (k.size() == 4 && v.size() == 4) {
      if (k[0] != B || k[1] != N || k[3] != p.head_size || v != k)
        return ctx.Error(absl::StrCat("key ", ShapeToString(k), " and value ", ShapeToString(v), " must both be (", B,
                                      ", ", N, ", L, ", p.head_size, ")"));
      if (s[kPastKey]) return ctx.Error("past_key/past_value cannot be given with 4-D key and value");
      plan.kv_4d = true;
      p.kv_len = k[2];
      p.v_head_size = v[3];
      plan.v_hidden = CheckedMul(N, v[3]).value_or(-1);
      p.k = HeadView::Of4D(N, p.kv_len, p.head_size);
      p.v = HeadView::Of4D(N, p.kv_len, p.v_head_size);
    } else {
      return ctx.Error(absl::StrCat("key ", ShapeToString(k), " and value ", ShapeToString(v),
                                    " must both be 3-D (B, L, D) or both 4-D (B, N, L, H)"));
    }
    if (s[kBias]) {
      const std::optional<int64_t> n = CheckedAdd(2 * D, plan.v_hidden);
      if (s[kBias]->size() != 1 || !n || (*s[kBias])[0] != *n)
        return ctx.Error(absl::StrCat("bias ", ShapeToString(*s[kBias]), " must be (", 2 * D + plan.v_hidden,
                                      "): the query's, key's and value's biases"));
    }
    // The past: read only when present_key is requested, as onnxruntime's kernel does.
    if (s[kPastKey]) {
      const Shape& pk = *s[kPastKey];
      const Shape& pv = *s[kPastValue];
      if (pk.size() != 4 || pv.size() != 4 || pk[0] != B || pk[1] != N || pk[3] != p.head_size || pv[0] != B ||
          pv[1] != N || pv[2] != pk[2] || pv[3] != p.v_head_size)
        return ctx.Error(absl::StrCat("past_key ", ShapeToString(pk), " and past_value ", ShapeToString(pv),
                                      " must be (", B, ", ", N, ", P, ", p.head_size, ") and (", B, ", ", N, ", P, ",
                                      p.v_head_size, ")"));
      plan.use_past = ctx.output_requested(kPresentKey);
      if (plan.use_past) p.cache.past_len = p.cache.capacity = pk[2];
    }
    const std::optional<int64_t> total = CheckedAdd(p.cache.past_len, p.kv_len);
    if (!total) return ctx.Error("past length + kv length overflows");
    p.total_len = p.cache.present_capacity = *total;
    p.q = HeadView::Of3D(N, S, p.head_size);
    p.y = HeadView::Of3D(N, S, p.v_head_size);
    p.scale = attrs_.ScaleFor(p.head_size);
    // unidirectional: query i sees keys up to P + i, but onnxruntime leaves
    // the last query row unmasked; the same as the kernel's causal rule when
    // there are as many new keys as queries, else written into the bias.
    p.causal = attrs_.unidirectional && p.kv_len == S;
    plan.bias.causal_rows = attrs_.unidirectional && p.kv_len != S;
    plan.bias.filter = attrs_.filter;
    // The scores output is the scaled product with the mask and bias added (mode 2: after the bias).
    p.qk_mode = 2;
    return ResolveMsBias(ctx, s[kPadding] ? &*s[kPadding] : nullptr, s[kAttentionBias] ? &*s[kAttentionBias] : nullptr,
                         true, plan.bias, p);
  }

  MsAttentionAttrs attrs_;
};

}  // namespace

std::vector<OpDef> MultiHeadAttentionOps() {
  const std::vector<TypeConstraint> types = {{"T", {DType::kFloat, DType::kFloat16}}, {"M", {DType::kInt32}}};
  return {
      {kMsDomain, "MultiHeadAttention", Versions{1}, "T T? T? T? M? T? T? T? M? M?", "T T? T? T?", types,
       MultiHeadAttentionOp::Create},
  };
}

}  // namespace onnx_mini
