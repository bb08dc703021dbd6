// Decoder-layer ops: LayerNormalization (17), RMSNormalization (23), and the
// default-domain rows onnxruntime adds beside them (its contrib
// LayerNormalization 1..16 and SimplifiedLayerNormalization 1, which LLM
// exports write). 16-bit inputs compute in float. (RotaryEmbedding:
// ops/llm/rotary.cc.)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "kernels/vec/vec_math.h"
#include "runtime/checked.h"
#include "runtime/element.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

// ---- LayerNormalization / RMSNormalization ----

// Rows of n normalized elements, and where each element's scale and bias
// are; with `dense`, scale (and bias) hold exactly the n values of a row in
// order (the usual 1-D weights) and the tables are left empty.
struct NormPlan : OpPlan {
  int64_t rows = 0, n = 0;
  bool dense = false;
  std::vector<int64_t> scale_at, bias_at;
};

// The sum and the sum of squares of a row, in double, as eight independent
// partial sums: one running sum would wait on every add before the next.
template <class T>
void RowMoments(const T* row, int64_t n, double& sum, double& squares) {
  double s[8] = {}, q[8] = {};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8)
    for (int l = 0; l < 8; ++l) {
      const double v = double(Widen(row[e + l]));
      s[l] += v;
      q[l] += v * v;
    }
  for (int l = 0; e < n; ++e, ++l) {
    const double v = double(Widen(row[e]));
    s[l] += v;
    q[l] += v * v;
  }
  sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  squares = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
}

// kRms: no mean subtracted, no bias. Outputs after Y: Mean and InvStdDev
// (LayerNormalization), none (RMSNormalization-23), or InvStdDev alone
// (onnxruntime's SimplifiedLayerNormalization: kRms with kInvFirst).
template <bool kRms, bool kInvFirst = false>
class NormalizationOp : public Op {
 public:
  explicit NormalizationOp(const Node& node)
      : axis_(node.attr_int("axis", -1)), epsilon_(node.attr_float("epsilon", 1e-5f)),
        stat_type_(node.attr_int("stash_type", 1) == 11 ? DType::kDouble : DType::kFloat) {}

  // Validates X and the normalized axis; scale and bias must broadcast
  // (unidirectionally) to X's dims from the axis on.
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType y = x;
    y.dtype = ctx.input(1).dtype;  // Y takes the scale's type (X's where the row ties them)
    ctx.set_output(0, y);
    ValueType stat;
    stat.dtype = stat_type_;
    for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, stat);
    if (!x.dims) return absl::OkStatus();
    const int64_t rank = x.rank();
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, rank, "axis"));
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      const std::vector<Dim>& p = *ctx.input(i).dims;
      if (int64_t(p.size()) > rank - axis)
        return ctx.Error(absl::StrCat(i == 1 ? "scale " : "bias ", ctx.input(i).ToString(),
                                      " has more dims than the normalized part of ", x.ToString()));
      for (size_t k = 0; k < p.size(); ++k) {
        const Dim& want = (*x.dims)[size_t(rank) - p.size() + k];
        if (p[k].known() && want.known() && p[k].value != 1 && p[k].value != want.value)
          return ctx.Error(absl::StrCat(i == 1 ? "scale " : "bias ", ctx.input(i).ToString(),
                                        " does not broadcast to ", x.ToString(), " from axis ", axis));
      }
    }
    // Mean and InvStdDev: X's shape with the normalized dims set to 1.
    stat.dims = *x.dims;
    for (int64_t k = axis; k < rank; ++k) (*stat.dims)[size_t(k)] = Dim::Known(1);
    for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, stat);

    const std::optional<Shape> shape = x.concrete_shape();
    const std::optional<Shape> scale = ctx.input(1).concrete_shape();
    std::optional<Shape> bias;
    if (ctx.has_input(2)) bias = ctx.input(2).concrete_shape();
    if (shape && scale && (!ctx.has_input(2) || bias)) {
      auto plan = std::make_shared<NormPlan>();
      // An empty input normalizes nothing: no per-element tables sized by its
      // (possibly huge, possibly overflowing) other dims.
      const bool empty = ElementCount(*shape) == 0;
      plan->rows = empty ? 0 : *CheckedProduct(*shape, 0, size_t(axis));
      plan->n = empty ? 0 : *CheckedProduct(*shape, size_t(axis), size_t(rank));
      const Shape norm_shape(shape->begin() + axis, shape->end());
      const std::vector<int64_t> scale_strides = BroadcastStrides(*scale, norm_shape);
      const std::vector<int64_t> bias_strides = bias ? BroadcastStrides(*bias, norm_shape) : scale_strides;
      plan->dense = ElementCount(*scale) == plan->n && (!bias || ElementCount(*bias) == plan->n);
      if (plan->dense) {
        ctx.set_plan(std::move(plan));
        return absl::OkStatus();
      }
      plan->scale_at.resize(size_t(plan->n));
      plan->bias_at.resize(size_t(plan->n));
      for (int64_t e = 0; e < plan->n; ++e) {
        int64_t rem = e, so = 0, bo = 0;
        for (int64_t d = int64_t(norm_shape.size()) - 1; d >= 0; --d) {
          const int64_t idx = rem % norm_shape[size_t(d)];
          rem /= norm_shape[size_t(d)];
          so += idx * scale_strides[size_t(d)];
          bo += idx * bias_strides[size_t(d)];
        }
        plan->scale_at[size_t(e)] = so;
        plan->bias_at[size_t(e)] = bo;
      }
      ctx.set_plan(std::move(plan));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* bias = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    const NormPlan& plan = ctx.plan<NormPlan>();
    const int64_t rows = plan.rows, n = plan.n;
    Tensor& y = ctx.output(0);
    const auto requested = [&](size_t o) {
      return ctx.num_outputs() > o && ctx.output_requested(o) ? &ctx.output(o) : nullptr;
    };
    Tensor* mean_out = kInvFirst ? nullptr : requested(1);
    Tensor* inv_out = requested(kInvFirst ? 1 : 2);
    if (n == 0) {
      // Y is empty, but Mean and InvStdDev keep a row per outer index (X [4, 0]
      // normalized from axis 1 has Mean [4, 1]): the statistics of no values,
      // NaN as NumPy's mean of an empty axis (and the reference's).
      for (Tensor* t : {mean_out, inv_out})
        if (t)
          for (int64_t i = 0; i < t->size(); ++i) SetStat(*t, i, std::numeric_limits<double>::quiet_NaN());
      return absl::OkStatus();
    }
    if (scale.dtype() != x.dtype()) {
      ComputeMixed(ctx, plan, x, scale, bias, y, mean_out, inv_out);
      return absl::OkStatus();
    }
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* ps = scale.data<T>();
      const T* pb = bias ? bias->data<T>() : nullptr;
      T* py = y.data<T>();
      // Rows on the kernels' pool by its size rule (two passes over a row).
      ParallelFor(ctx.threads(), rows, WorkPerIndex{2.0 * double(n)}, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* row = px + r * n;
          // Float rows with dense weights: the per-target vector loops
          // (kernels/vec/vec_math.h) above the baseline, the same arithmetic.
          bool vec = false;
          if constexpr (std::is_same_v<T, float>) vec = plan.dense && VecMathVectorized();
          double mean, sq;
          if constexpr (std::is_same_v<T, float>) {
            if (vec) VecRowMoments(row, n, &mean, &sq);
            else RowMoments(row, n, mean, sq);
          } else {
            RowMoments(row, n, mean, sq);
          }
          mean /= double(n ? n : 1);
          const double var = kRms ? sq / double(n ? n : 1) : std::max(0.0, sq / double(n ? n : 1) - mean * mean);
          const double inv = 1.0 / std::sqrt(var + double(epsilon_));
          const double shift = kRms ? 0.0 : mean;
          T* out = py + r * n;
          if (vec) {
            if constexpr (std::is_same_v<T, float>) VecNormalizeRow(row, out, n, shift, inv, ps, pb);
          } else if (plan.dense) {  // contiguous weights: a loop the compiler vectorizes
            for (int64_t e = 0; e < n; ++e) {
              double v = (double(Widen(row[e])) - shift) * inv * double(Widen(ps[e]));
              if (pb) v += double(Widen(pb[e]));
              out[e] = Narrow<T>(typename Arith<T>::type(v));
            }
          } else {
            for (int64_t e = 0; e < n; ++e) {
              double v = (double(Widen(row[e])) - shift) * inv * double(Widen(ps[plan.scale_at[size_t(e)]]));
              if (pb) v += double(Widen(pb[plan.bias_at[size_t(e)]]));
              out[e] = Narrow<T>(typename Arith<T>::type(v));
            }
          }
          if (mean_out) SetStat(*mean_out, r, mean);
          if (inv_out) SetStat(*inv_out, r, inv);
        }
      });
    });
  }

 private:
  // X and scale of two float types (onnxruntime's SimplifiedLayerNormalization
  // takes them; Y has the scale's): the same arithmetic element by element
  // through double, a rare form that needs no fast path.
  void ComputeMixed(KernelContext& ctx, const NormPlan& plan, const Tensor& x, const Tensor& scale,
                    const Tensor* bias, Tensor& y, Tensor* mean_out, Tensor* inv_out) const {
    const int64_t n = plan.n;
    // Element by element through double: some 8 units an element.
    ParallelFor(ctx.threads(), plan.rows, WorkPerIndex{8.0 * double(n)}, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        double s[8] = {}, q[8] = {};
        for (int64_t e = 0; e < n; ++e) {
          const double v = GetDouble(x, r * n + e);
          s[e % 8] += v;
          q[e % 8] += v * v;
        }
        const double mean = (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) / double(n);
        const double sq = (((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]))) / double(n);
        const double var = kRms ? sq : std::max(0.0, sq - mean * mean);
        const double inv = 1.0 / std::sqrt(var + double(epsilon_));
        const double shift = kRms ? 0.0 : mean;
        for (int64_t e = 0; e < n; ++e) {
          double v = (GetDouble(x, r * n + e) - shift) * inv *
                     GetDouble(scale, plan.dense ? e : plan.scale_at[size_t(e)]);
          if (bias) v += GetDouble(*bias, plan.dense ? e : plan.bias_at[size_t(e)]);
          SetDouble(y, r * n + e, y.dtype() == DType::kDouble ? v : double(float(v)));  // rounded as the typed path
        }
        if (mean_out) SetStat(*mean_out, r, mean);
        if (inv_out) SetStat(*inv_out, r, inv);
      }
    });
  }
  static void SetStat(Tensor& t, int64_t i, double v) {
    if (t.dtype() == DType::kDouble) t.data<double>()[i] = v;
    else t.data<float>()[i] = float(v);
  }
  int64_t axis_;
  float epsilon_;
  DType stat_type_;
};

}  // namespace

std::vector<OpDef> NormalizationOps() {
  // ONNX lets RMSNormalization's scale have a type of its own (V); only V = T
  // is implemented, so the rows tie them.
  const TypeConstraint t = {"T", kFloatTypes};
  return {
      {kOnnxDomain, "LayerNormalization", Versions{17}, "T T T?", "T U? U?",
       {t, {"U", {DType::kFloat, DType::kDouble}}},
       MakeOp<NormalizationOp<false>>},
      {kOnnxDomain, "RMSNormalization", Versions{23}, "T T", "T", {t}, MakeOp<NormalizationOp<true>>},
      // onnxruntime's own default-domain rows (older optimized models and
      // genai's exports); docs/contrib_ops.md, "Layer normalizations and GELUs".
      {kOnnxDomain, "LayerNormalization", Versions{1, 16}, "T T T?", "T U? U?",
       {t, {"U", {DType::kFloat, DType::kDouble}}},
       MakeOp<NormalizationOp<false>>},
      {kOnnxDomain, "SimplifiedLayerNormalization", Versions{1}, "T V", "V U?",
       {t, {"V", kFloatTypes}, {"U", {DType::kFloat, DType::kDouble}}},
       MakeOp<NormalizationOp<true, true>>},
  };
}

}  // namespace onnx_mini
