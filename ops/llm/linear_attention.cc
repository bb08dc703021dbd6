// The recurrent-state ops of linear-attention and state-space layers, the
// counterpart of the KV cache (docs/llm_ops.md): LinearAttention-27 (linear,
// gated, delta and gated-delta rules, GQA) and CausalConvWithState-27 (a
// depthwise causal conv whose carry state holds the last k-1 positions).
// Both declare past_state as the in-place input of present_state, like
// TensorScatter: when the session hands the kernel past_state's own buffer a
// decode step updates the state where it lies.
#include "kernels/attention/linear_attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

constexpr TypeSet kStateTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16};

// A dim's value, or -1 when unknown (also for a missing rank).
int64_t DimOf(const ValueType& t, size_t i) {
  return t.dims && i < t.dims->size() && (*t.dims)[i].known() ? (*t.dims)[i].value : -1;
}
Dim DimOrUnknown(int64_t v) { return v >= 0 ? Dim::Known(v) : Dim{}; }

struct LinearPlan : OpPlan {
  LinearAttentionProblem problem;  // shapes and flags; pointers filled per run
};

// ---- LinearAttention ----

class LinearAttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    if (!node.attr("q_num_heads") || !node.attr("kv_num_heads"))
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": the attributes q_num_heads and kv_num_heads are required (LA1)"));
    const int64_t hq = node.attr_int("q_num_heads", 0), hkv = node.attr_int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": q_num_heads ", hq,
                                                     " must be a positive multiple of kv_num_heads ", hkv, " (LA1)"));
    const std::string rule = node.attr_string("update_rule", "gated_delta");
    if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
      return absl::InvalidArgumentError(absl::StrCat(
          node.Describe(), ": update_rule '", rule, "' is not one of linear, gated, delta, gated_delta (LA2)"));
    const float scale = node.attr_float("scale", 0.f);
    if (!std::isfinite(scale))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": scale ", scale, " is not finite (LA7)"));
    auto op = std::unique_ptr<LinearAttentionOp>(new LinearAttentionOp);
    op->q_heads_ = hq;
    op->kv_heads_ = hkv;
    op->gated_ = rule == "gated" || rule == "gated_delta";
    op->delta_ = rule == "delta" || rule == "gated_delta";
    op->rule_ = rule;
    op->scale_ = scale;
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    if (gated_ != ctx.has_input(4))
      return ctx.Error(absl::StrCat("update_rule '", rule_, "' ", gated_ ? "requires" : "forbids",
                                    " the decay input (LA2)"));
    if (delta_ != ctx.has_input(5))
      return ctx.Error(absl::StrCat("update_rule '", rule_, "' ", delta_ ? "requires" : "forbids",
                                    " the beta input (LA2)"));
    const char* names[] = {"query", "key", "value", "past_state", "decay", "beta"};
    for (size_t i = 0; i < 6; ++i) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      const int64_t want = i == 3 ? 4 : 3;
      if (ctx.input(i).rank() != want)
        return ctx.Error(absl::StrCat(names[i], " ", ctx.input(i).ToString(), " must have rank ", want, " (LA3)"));
    }
    const ValueType &q = ctx.input(0), &v = ctx.input(2);
    const int64_t B = DimOf(q, 0), T = DimOf(q, 1), qlast = DimOf(q, 2), vlast = DimOf(v, 2);
    if (qlast >= 0 && qlast % q_heads_ != 0)
      return ctx.Error(absl::StrCat("query's last dim ", qlast, " is not divisible by q_num_heads ", q_heads_,
                                    " (LA3)"));
    if (vlast >= 0 && vlast % kv_heads_ != 0)
      return ctx.Error(absl::StrCat("value's last dim ", vlast, " is not divisible by kv_num_heads ", kv_heads_,
                                    " (LA3)"));
    const int64_t dk = qlast >= 0 ? qlast / q_heads_ : -1, dv = vlast >= 0 ? vlast / kv_heads_ : -1;
    const DType state_dtype = ctx.has_input(3) ? ctx.input(3).dtype : q.dtype;
    const std::optional<int64_t> y_last = dv >= 0 ? CheckedMul(q_heads_, dv) : std::optional<int64_t>(-1);
    if (!y_last) return ctx.Error(absl::StrCat("q_num_heads ", q_heads_, " * d_v ", dv, " overflows (LA3)"));
    ValueType y = ValueType::Of(q.dtype, {});
    y.dims = std::vector<Dim>{DimOrUnknown(B), DimOrUnknown(T), DimOrUnknown(*y_last)};
    ValueType present = ValueType::Of(state_dtype, {});
    present.dims = std::vector<Dim>{DimOrUnknown(B), Dim::Known(kv_heads_), DimOrUnknown(dk), DimOrUnknown(dv)};
    ctx.set_output(0, y);
    ctx.set_output(1, present);

    // The full check once every shape is known (at creation, or at run).
    std::vector<Shape> shapes(6);
    for (size_t i = 0; i < 6; ++i) {
      if (!ctx.has_input(i)) continue;
      std::optional<Shape> s = ctx.input(i).concrete_shape();
      if (!s) return absl::OkStatus();
      shapes[i] = *s;
    }
    auto mismatch = [&](size_t i, const std::string& want) {
      return ctx.Error(absl::StrCat(names[i], " ", ShapeToString(shapes[i]), " must be ", want, " (LA3)"));
    };
    const std::string bt = absl::StrCat("(", B, ", ", T, ", ");
    if (shapes[1] != Shape{B, T, kv_heads_ * dk})
      return mismatch(1, absl::StrCat(bt, kv_heads_ * dk, ") = (B, T, kv_num_heads * d_k)"));
    if (shapes[2][0] != B || shapes[2][1] != T) return mismatch(2, absl::StrCat(bt, "kv_num_heads * d_v)"));
    if (ctx.has_input(3) && shapes[3] != Shape{B, kv_heads_, dk, dv})
      return ctx.Error(absl::StrCat("past_state ", ShapeToString(shapes[3]), " must be (", B, ", ", kv_heads_, ", ", dk,
                                    ", ", dv, ") = (B, kv_num_heads, d_k, d_v) (LA4)"));
    auto p = std::make_shared<LinearPlan>();
    LinearAttentionProblem& pr = p->problem;
    if (gated_) {
      const Shape& s = shapes[4];
      if (s[0] != B || s[1] != T || (s[2] != kv_heads_ && s[2] != kv_heads_ * dk))
        return ctx.Error(absl::StrCat("decay ", ShapeToString(s), " must be ", bt, kv_heads_, ") per head or ", bt,
                                      kv_heads_ * dk, ") per key dim (LA5)"));
      pr.decay_per_key = s[2] != kv_heads_;
    }
    if (delta_) {
      const Shape& s = shapes[5];
      if (s[0] != B || s[1] != T || (s[2] != kv_heads_ && s[2] != 1))
        return ctx.Error(absl::StrCat("beta ", ShapeToString(s), " must be ", bt, kv_heads_, ") or ", bt, "1) (LA6)"));
      pr.beta_per_head = s[2] == kv_heads_;
    }
    pr.batch = B;
    pr.len = T;
    pr.q_heads = q_heads_;
    pr.kv_heads = kv_heads_;
    pr.dk = dk;
    pr.dv = dv;
    pr.gated = gated_;
    pr.delta = delta_;
    // LA7: 0 means 1/sqrt(d_k); with d_k = 0 every sum is empty and 1 keeps the output 0.
    pr.scale = scale_ != 0 ? scale_ : dk > 0 ? float(1.0 / std::sqrt(double(dk))) : 1.f;
    pr.dtype = q.dtype;
    pr.state_dtype = state_dtype;
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    LinearAttentionProblem p = ctx.plan<LinearPlan>().problem;
    p.q = ctx.input(0)->raw();
    p.k = ctx.input(1)->raw();
    p.v = ctx.input(2)->raw();
    p.past = ctx.input(3) ? ctx.input(3)->raw() : nullptr;
    p.decay = ctx.num_inputs() > 4 && ctx.input(4) ? ctx.input(4)->raw() : nullptr;
    p.beta = ctx.num_inputs() > 5 && ctx.input(5) ? ctx.input(5)->raw() : nullptr;
    p.y = ctx.output(0).raw();
    // present_state is required by the schema, but a node may leave it unnamed:
    // the session then gives the kernel a scratch buffer.
    p.present = ctx.output(1).raw();
    LinearAttentionFast(p, ctx.threads());
    return absl::OkStatus();
  }

 private:
  LinearAttentionOp() = default;
  int64_t q_heads_ = 0, kv_heads_ = 0;
  bool gated_ = false, delta_ = false;
  std::string rule_;
  float scale_ = 0;
};

// ---- CausalConvWithState ----

struct ConvPlan : OpPlan {
  CausalConvProblem problem;
};

class CausalConvOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string act = node.attr_string("activation", "none");
    if (act != "none" && act != "silu" && act != "swish")
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": activation '", act, "' is not one of none, silu, swish (CC1)"));
    auto op = std::unique_ptr<CausalConvOp>(new CausalConvOp);
    op->silu_ = act != "none";
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const char* names[] = {"input", "weight", "bias", "past_state"};
    for (size_t i = 0; i < 4; ++i) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      const int64_t want = i == 2 ? 1 : 3;
      if (ctx.input(i).rank() != want)
        return ctx.Error(absl::StrCat(names[i], " ", ctx.input(i).ToString(), " must have rank ", want, " (CC2)"));
    }
    const ValueType &x = ctx.input(0), &w = ctx.input(1);
    const int64_t B = DimOf(x, 0), C = DimOf(x, 1), K = DimOf(w, 2);
    if (K == 0) return ctx.Error(absl::StrCat("weight ", w.ToString(), " has kernel size 0; it must be at least 1 (CC2)"));
    ctx.set_output(0, x);
    ValueType present = ValueType::Of(x.dtype, {});
    present.dims = std::vector<Dim>{DimOrUnknown(B), DimOrUnknown(C), DimOrUnknown(K > 0 ? K - 1 : -1)};
    ctx.set_output(1, present);

    std::vector<Shape> shapes(4);
    for (size_t i = 0; i < 4; ++i) {
      if (!ctx.has_input(i)) continue;
      std::optional<Shape> s = ctx.input(i).concrete_shape();
      if (!s) return absl::OkStatus();
      shapes[i] = *s;
    }
    const int64_t L = shapes[0][2];
    if (shapes[1] != Shape{C, 1, K})
      return ctx.Error(absl::StrCat("weight ", ShapeToString(shapes[1]), " must be (", C, ", 1, k) for input ",
                                    ShapeToString(shapes[0]), " (CC2: one depthwise kernel per channel)"));
    if (ctx.has_input(2) && shapes[2] != Shape{C})
      return ctx.Error(absl::StrCat("bias ", ShapeToString(shapes[2]), " must be (", C, ") (CC2)"));
    if (ctx.has_input(3) && shapes[3] != Shape{B, C, K - 1})
      return ctx.Error(absl::StrCat("past_state ", ShapeToString(shapes[3]), " must be (", B, ", ", C, ", ", K - 1,
                                    ") = (batch, channels, k - 1) (CC3)"));
    auto p = std::make_shared<ConvPlan>();
    p->problem.batch = B;
    p->problem.channels = C;
    p->problem.len = L;
    p->problem.kernel = K;
    p->problem.silu = silu_;
    p->problem.dtype = x.dtype;
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    CausalConvProblem p = ctx.plan<ConvPlan>().problem;
    p.input = ctx.input(0)->raw();
    p.weight = ctx.input(1)->raw();
    p.bias = ctx.num_inputs() > 2 && ctx.input(2) ? ctx.input(2)->raw() : nullptr;
    p.past = ctx.num_inputs() > 3 && ctx.input(3) ? ctx.input(3)->raw() : nullptr;
    p.output = ctx.output(0).raw();
    p.present = ctx.output(1).raw();
    CausalConvFast(p, ctx.threads());
    return absl::OkStatus();
  }

 private:
  CausalConvOp() = default;
  bool silu_ = false;
};

}  // namespace

std::vector<OpDef> LinearAttentionOps() {
  return {
      {kOnnxDomain, "LinearAttention", Versions{27}, "T T T S? T? T?", "T S", {{"T", kStateTypes}, {"S", kStateTypes}},
       LinearAttentionOp::Create, InPlace(Out{1}, In{3})},
      {kOnnxDomain, "CausalConvWithState", Versions{27}, "T T T? T?", "T T", {{"T", kStateTypes}}, CausalConvOp::Create,
       InPlace(Out{1}, In{3})},
  };
}

}  // namespace onnx_mini
