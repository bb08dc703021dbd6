// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization:
// the residual add and the layer norm (or RMS norm) of a decoder layer in one
// pass over each row (kernels/norm/skip_norm.h). Shapes as onnxruntime's CPU
// kernel takes them: input [B, S, H] or [S, H]; skip the same, or [S, H] or
// [1, S, H] for a 3-D input; gamma, beta and bias 1-D of H.
#include <limits>

#include "kernels/norm/skip_norm.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

struct SkipNormPlan : OpPlan {
  SkipNormProblem problem;
};

template <bool kSimplified>
class SkipNormOp : public Op {
 public:
  // Input positions: SkipLayerNormalization has beta at 3 and bias at 4;
  // the simplified op has no beta and its bias at 3.
  static constexpr size_t kBeta = kSimplified ? 99 : 3, kBias = kSimplified ? 3 : 4;

  explicit SkipNormOp(const Node& node) : epsilon_(node.attr_float("epsilon", 1e-12f)) {}

  absl::Status Infer(InferContext& ctx) const override {
    if (!(epsilon_ >= 0)) return ctx.Error(absl::StrCat("epsilon ", epsilon_, " must be >= 0"));
    const ValueType& x = ctx.input(0);
    ValueType stat;
    stat.dtype = DType::kFloat;
    ctx.set_output(0, x);
    ctx.set_output(1, stat);
    ctx.set_output(2, stat);
    ctx.set_output(3, x);
    if (!x.dims) return absl::OkStatus();
    const std::vector<Dim>& xd = *x.dims;
    if (xd.size() != 2 && xd.size() != 3)
      return ctx.Error(absl::StrCat("input ", x.ToString(), " must have 2 or 3 dims"));
    const Dim& hidden = xd.back();
    // skip: the input's shape, or [S, H] / [1, S, H] added to every batch.
    const ValueType& skip = ctx.input(1);
    if (skip.dims) {
      const std::vector<Dim>& sd = *skip.dims;
      bool ok = sd.size() == 2 || sd.size() == 3;
      if (ok && sd.size() > xd.size()) ok = false;
      for (size_t k = 0; ok && k < 2; ++k) {
        const Dim& a = sd[sd.size() - 1 - k];
        const Dim& b = xd[xd.size() - 1 - k];
        if (a.known() && b.known() && a.value != b.value) ok = false;
      }
      if (ok && sd.size() == 3 && sd[0].known() && xd[0].known() && sd[0].value != 1 && sd[0].value != xd[0].value)
        ok = false;
      if (!ok)
        return ctx.Error(absl::StrCat("skip ", skip.ToString(), " must be the input's shape ", x.ToString(),
                                      ", or [S, H] or [1, S, H] for a 3-D input"));
    }
    for (size_t i : {size_t(2), kBeta, kBias}) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      const std::vector<Dim>& d = *ctx.input(i).dims;
      const char* name = i == 2 ? "gamma" : i == kBeta ? "beta" : "bias";
      if (d.size() != 1 || (d[0].known() && hidden.known() && d[0].value != hidden.value))
        return ctx.Error(absl::StrCat(name, " ", ctx.input(i).ToString(), " must be 1-D of the hidden size ",
                                      hidden.known() ? absl::StrCat(hidden.value) : "?", " (input ",
                                      x.ToString(), ")"));
    }
    stat.dims = xd;
    stat.dims->back() = Dim::Known(1);
    ctx.set_output(1, stat);
    ctx.set_output(2, stat);

    const std::optional<Shape> xs = x.concrete_shape();
    const std::optional<Shape> ss = skip.concrete_shape();
    if (!xs || !ss) return absl::OkStatus();
    auto plan = std::make_shared<SkipNormPlan>();
    SkipNormProblem& p = plan->problem;
    p.n = xs->back();
    p.rows = p.n == 0 ? 0 : ElementCount(*xs) / p.n;
    p.skip_rows = p.n == 0 ? 0 : ElementCount(*ss) / p.n;
    p.simplified = kSimplified;
    p.epsilon = epsilon_;
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const SkipNormProblem& p = ctx.plan<SkipNormPlan>().problem;
    const auto optional_in = [&](size_t i) { return ctx.num_inputs() > i ? ctx.input(i) : nullptr; };
    const auto optional_out = [&](size_t o) {
      return ctx.num_outputs() > o && ctx.output_requested(o) ? &ctx.output(o) : nullptr;
    };
    const Tensor* beta = optional_in(kBeta);
    const Tensor* bias = optional_in(kBias);
    Tensor* mean = optional_out(1);
    Tensor* inv = optional_out(2);
    Tensor* sum = optional_out(3);
    if (p.n == 0) {
      // Rows of no values: an empty output, and the statistics of nothing, NaN
      // (as LayerNormalization's).
      for (Tensor* t : {mean, inv})
        if (t)
          for (int64_t i = 0; i < t->size(); ++i) t->data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
      return absl::OkStatus();
    }
    if (p.rows == 0) return absl::OkStatus();
    return Dispatch<FloatTypes>(ctx, ctx.input(0)->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      SkipNormArgs<T> a;
      a.input = ctx.input(0)->data<T>();
      a.skip = ctx.input(1)->data<T>();
      a.gamma = ctx.input(2)->data<T>();
      a.beta = beta ? beta->data<T>() : nullptr;
      a.bias = bias ? bias->data<T>() : nullptr;
      a.output = ctx.output(0).data<T>();
      a.sum = sum ? sum->data<T>() : nullptr;
      a.mean = mean ? mean->data<float>() : nullptr;
      a.inv_std = inv ? inv->data<float>() : nullptr;
      ParallelFor(ctx.threads(), p.rows, WorkPerIndex{double(p.n) * 4}, [&](int64_t r0, int64_t r1) {
        if constexpr (std::is_same_v<T, float>) SkipNormF32(p, a, r0, r1);
        else if constexpr (std::is_same_v<T, Float16>) SkipNormF16(p, a, r0, r1);
        else SkipNormReference(p, a, r0, r1);
      });
    });
  }

 private:
  float epsilon_;
};

}  // namespace

std::vector<OpDef> SkipNormOps() {
  // onnxruntime's schema takes float and float16 (double is in its kernel
  // but not its schema); bfloat16 costs nothing here.
  const TypeConstraint t = {"T", {DType::kFloat, DType::kFloat16, DType::kBFloat16}};
  const TypeConstraint u = {"U", {DType::kFloat}};
  return {
      {kMsDomain, "SkipLayerNormalization", Versions{1}, "T T T T? T?", "T U? U? T?", {t, u},
       MakeOp<SkipNormOp<false>>},
      {kMsDomain, "SkipSimplifiedLayerNormalization", Versions{1}, "T T T T?", "T U? U? T?", {t, u},
       MakeOp<SkipNormOp<true>>},
  };
}

}  // namespace onnx_mini
