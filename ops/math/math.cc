// Scans and linear algebra: CumSum (11, 14), CumProd (26), Det (11, 22).
#include <cmath>
#include <utility>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

// ---- CumSum, CumProd ----

// The scanned axis splits the input into outer x n x inner.
struct ScanPlan : OpPlan {
  int64_t outer = 0, n = 0, inner = 0;
};

template <bool kProd>
class CumulativeOp : public Op {
 public:
  explicit CumulativeOp(const Node& node)
      : exclusive_(node.attr_int("exclusive", 0) != 0), reverse_(node.attr_int("reverse", 0) != 0) {}

  // The axis is an input: a scalar (a one-element 1-D tensor is accepted too).
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ctx.set_output(0, in);
    const std::optional<Shape> shape = in.concrete_shape();
    const Tensor* axis_value = ctx.value(1);
    if (!shape || axis_value == nullptr) return absl::OkStatus();
    if (axis_value->size() != 1 || axis_value->rank() > 1)
      return ctx.Error(absl::StrCat("axis must be a scalar, not a tensor of shape ", ShapeToString(axis_value->shape())));
    ASSIGN_OR_RETURN(const int64_t axis,
                     NormalizeAxis(ctx, IndexValues(*axis_value)[0], int64_t(shape->size()), "axis"));
    auto plan = std::make_shared<ScanPlan>();
    // Overflows only for an empty input, which Compute skips.
    plan->outer = CheckedProduct(*shape, 0, size_t(axis)).value_or(0);
    plan->n = (*shape)[size_t(axis)];
    plan->inner = CheckedProduct(*shape, size_t(axis) + 1, shape->size()).value_or(0);
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    if (in.size() == 0) return absl::OkStatus();
    Tensor& out = ctx.output(0);
    const ScanPlan& p = ctx.plan<ScanPlan>();
    return Dispatch<NumericTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Integers wrap in uint64 (as ONNX integer arithmetic does); floats accumulate in double.
      using A = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
      const auto load = [](T v) {
        if constexpr (std::is_integral_v<T>) return uint64_t(int64_t(v));
        else return double(Widen(v));
      };
      const auto store = [](A v) {
        if constexpr (std::is_integral_v<T>) return T(v);
        else return Narrow<T>(typename Arith<T>::type(v));
      };
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < p.outer; ++o)
        for (int64_t e = 0; e < p.inner; ++e) {
          A acc = A(kProd ? 1 : 0);
          for (int64_t j = 0; j < p.n; ++j) {
            const int64_t k = reverse_ ? p.n - 1 - j : j;
            const int64_t at = (o * p.n + k) * p.inner + e;
            const A v = load(src[at]);
            if (exclusive_) dst[at] = store(acc);
            if constexpr (kProd) acc *= v;
            else acc += v;
            if (!exclusive_) dst[at] = store(acc);
          }
        }
    });
  }

 private:
  bool exclusive_, reverse_;
};

// ---- Det ----

struct DetPlan : OpPlan {
  int64_t batch = 0, m = 0;
};

// The determinants of [*, M, M] matrices, by LU decomposition with partial
// pivoting in double; the determinant of a 0 x 0 matrix is 1.
class DetOp : public Op {
 public:
  explicit DetOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType out;
    out.dtype = in.dtype;
    if (in.dims) {
      const std::vector<Dim>& d = *in.dims;
      if (d.size() < 2) return ctx.Error(absl::StrCat("input ", in.ToString(), " must be [*, M, M]"));
      const Dim& rows = d[d.size() - 2];
      const Dim& cols = d[d.size() - 1];
      if (rows.known() && cols.known() && rows.value != cols.value)
        return ctx.Error(absl::StrCat("input ", in.ToString(), " is not a batch of square matrices"));
      out.dims.emplace(d.begin(), d.end() - 2);
      if (std::optional<Shape> shape = in.concrete_shape()) {
        auto plan = std::make_shared<DetPlan>();
        plan->m = shape->back();
        // An empty batch's other dims may overflow: nothing to compute then.
        plan->batch = CheckedProduct(*shape, 0, shape->size() - 2).value_or(0);
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const DetPlan& p = ctx.plan<DetPlan>();
    if (out.size() == 0) return absl::OkStatus();
    const int64_t m = p.m;
    return Dispatch<FloatTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      std::vector<double> a(size_t(m * m));
      for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t i = 0; i < m * m; ++i) a[size_t(i)] = double(Widen(src[b * m * m + i]));
        double det = 1;
        for (int64_t k = 0; k < m; ++k) {
          // The largest remaining entry of column k as the pivot.
          int64_t pivot = k;
          for (int64_t r = k + 1; r < m; ++r)
            if (std::fabs(a[size_t(r * m + k)]) > std::fabs(a[size_t(pivot * m + k)])) pivot = r;
          if (pivot != k) {
            for (int64_t c = 0; c < m; ++c) std::swap(a[size_t(k * m + c)], a[size_t(pivot * m + c)]);
            det = -det;
          }
          const double d = a[size_t(k * m + k)];
          det *= d;
          if (d == 0) break;  // singular
          for (int64_t r = k + 1; r < m; ++r) {
            const double f = a[size_t(r * m + k)] / d;
            for (int64_t c = k + 1; c < m; ++c) a[size_t(r * m + c)] -= f * a[size_t(k * m + c)];
          }
        }
        out.data<T>()[b] = Narrow<T>(typename Arith<T>::type(det));
      }
    });
  }
};

}  // namespace

std::vector<OpDef> MathOps() {
  return {
      {kOnnxDomain, "CumSum", Versions{11}, "T I", "T", {{"T", kNumericTypes}, {"I", kIndexTypes}},
       MakeOp<CumulativeOp<false>>},
      {kOnnxDomain, "CumProd", Versions{26}, "T I", "T", {{"T", kNumericTypes}, {"I", kIndexTypes}},
       MakeOp<CumulativeOp<true>>},
      {kOnnxDomain, "Det", Versions{11}, "T", "T", {{"T", kFloatTypes}}, MakeOp<DetOp>},
  };
}

}  // namespace onnx_mini
