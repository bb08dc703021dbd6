// Reductions and the ops built on them: ReduceMax, ReduceMin, ReduceSum,
// ReduceMean, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
// ReduceSumSquare, ArgMax, ArgMin, Softmax, LogSoftmax, Hardmax, TopK,
// LpNormalization, MeanVarianceNormalization.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "kernels/vec/vec_math.h"
#include "runtime/checked.h"
#include "runtime/cpu.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum class ReduceOp { kMax, kMin, kSum, kMean, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Sizes of a tensor around one axis: outer x n x inner.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit SplitAt(const Shape& shape, int64_t axis) {
  AxisSplit s;
  // Only an empty tensor's dims can overflow (0 then); kernels return early for those.
  s.outer = CheckedProduct(shape, 0, size_t(axis)).value_or(0);
  s.n = shape.empty() ? 1 : shape[size_t(axis)];
  s.inner = CheckedProduct(shape, size_t(axis) + 1, shape.size()).value_or(0);
  return s;
}

// Where each input element lands: the input index with the reduced dims dropped.
struct ReducePlan : OpPlan {
  std::vector<int64_t> out_stride;  // per input dim; 0 where reduced
  int64_t count = 0;                // input elements per output element
  int64_t groups = 0;               // output elements
  // When the reduced dims (of extent > 1) are adjacent, the input is
  // outer x n x inner with n reduced, and output element o * inner + e
  // reduces input (o, 0..n, e): the fast path, no index arithmetic per element.
  bool block = false;
  int64_t outer = 0, n = 0, inner = 0;
};

std::shared_ptr<ReducePlan> MakeReducePlan(const Shape& shape, const std::vector<bool>& reduced) {
  auto plan = std::make_shared<ReducePlan>();
  const int64_t rank = int64_t(shape.size());
  plan->out_stride.assign(size_t(rank), 0);
  int64_t stride = 1, kept = 1;
  for (int64_t d = rank - 1; d >= 0; --d)
    if (!reduced[size_t(d)]) {
      plan->out_stride[size_t(d)] = stride;
      // An empty input can keep dims whose product overflows; the
      // output size check refuses that output before any kernel runs.
      stride = CheckedMul(stride, shape[size_t(d)]).value_or(0);
      kept = CheckedMul(kept, shape[size_t(d)]).value_or(0);
    }
  plan->count = kept > 0 ? ElementCount(shape) / kept : 0;
  plan->groups = kept;
  if (ElementCount(shape) == 0) return plan;  // the general path: products may overflow
  int64_t lo = rank, hi = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[size_t(d)] && shape[size_t(d)] != 1) {
      lo = std::min(lo, d);
      hi = d;
    }
  if (hi < 0) lo = hi = rank;  // nothing reduced: n = 1
  for (int64_t d = lo; d < hi; ++d)
    if (!reduced[size_t(d)] && shape[size_t(d)] != 1) return plan;
  plan->block = true;
  const size_t end = size_t(std::min(hi + 1, rank));
  plan->outer = *CheckedProduct(shape, 0, size_t(lo));
  plan->n = *CheckedProduct(shape, size_t(lo), end);
  plan->inner = *CheckedProduct(shape, end, size_t(rank));
  return plan;
}

// Calls f(o, x) for every element x of `in`, o the index of its output element.
template <class T, class F>
void ForEachReduced(const Tensor& in, const ReducePlan& plan, F f) {
  const T* src = in.data<T>();
  for (int64_t i = 0; i < in.size(); ++i) {
    int64_t rem = i, o = 0;
    for (int64_t d = in.rank() - 1; d >= 0; --d) {
      o += (rem % in.dim(d)) * plan.out_stride[size_t(d)];
      rem /= in.dim(d);
    }
    f(o, src[i]);
  }
}

// ---- ReduceMax, ReduceMin, ReduceSum, ReduceMean, ReduceProd, ReduceL1,
//      ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare ----

// What each reduction accumulates in. Integers keep exact results: sums and
// products wrap in uint64 (as ONNX integer arithmetic does), max and min
// compare as themselves, bool (ReduceMax/ReduceMin-20) as 0/1. Floats, and the
// reductions whose result is not an integer (L2, LogSum, LogSumExp), use double.
template <ReduceOp Kind, class T>
struct Accum {
  static constexpr bool kExact =
      std::is_integral_v<T> && Kind != ReduceOp::kL2 && Kind != ReduceOp::kLogSum && Kind != ReduceOp::kLogSumExp;
  static constexpr bool kCompare = Kind == ReduceOp::kMax || Kind == ReduceOp::kMin;
  using type = std::conditional_t<
      !kExact, double,
      std::conditional_t<std::is_same_v<T, bool>, int64_t, std::conditional_t<kCompare, T, uint64_t>>>;

  // The value of a reduction over nothing: -inf or the lowest value for max,
  // +inf or the highest for min, 1 for products, 0 otherwise (the maximum of
  // LogSumExp starts at -inf, its sum at 0: log 0 = -inf).
  static type Init() {
    if constexpr (Kind == ReduceOp::kMax) {
      if constexpr (std::is_same_v<T, bool>) return 0;
      else return kExact ? std::numeric_limits<type>::lowest() : -std::numeric_limits<type>::infinity();
    } else if constexpr (Kind == ReduceOp::kMin) {
      if constexpr (std::is_same_v<T, bool>) return 1;
      else return kExact ? std::numeric_limits<type>::max() : std::numeric_limits<type>::infinity();
    } else {
      return type(Kind == ReduceOp::kProd ? 1 : 0);
    }
  }

  static void Add(type& acc, T x) {
    if constexpr (kCompare) {
      const type v = type(Widen(x));
      // NaN wins, as NumPy's maximum and minimum propagate it.
      if ((Kind == ReduceOp::kMax ? v > acc : v < acc) || v != v) acc = v;
    } else if constexpr (kExact) {
      const uint64_t u = uint64_t(int64_t(x));  // sign-extends, then wraps
      if constexpr (Kind == ReduceOp::kProd) acc *= u;
      else if constexpr (Kind == ReduceOp::kSumSquare) acc += u * u;
      else if constexpr (Kind == ReduceOp::kL1) acc += std::is_signed_v<T> && x < 0 ? 0 - u : u;
      else acc += u;
    } else {
      const double v = double(Widen(x));
      if constexpr (Kind == ReduceOp::kProd) acc *= v;
      else if constexpr (Kind == ReduceOp::kSumSquare || Kind == ReduceOp::kL2) acc += v * v;
      else if constexpr (Kind == ReduceOp::kL1) acc += std::fabs(v);
      else acc += v;  // Sum, Mean, LogSum (LogSumExp adds its exponentials itself)
    }
  }

  // The output element from the accumulator, the count of reduced elements
  // and (LogSumExp) their maximum.
  static T Finish(type acc, int64_t count, double max) {
    if constexpr (kExact && kCompare) {
      return T(acc);
    } else if constexpr (kExact) {
      // The mean of nothing has no integer value: 0, never a NaN conversion.
      using Signed = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      const Signed sum = Signed(acc);
      return T(Kind == ReduceOp::kMean ? (count > 0 ? sum / Signed(count) : 0) : sum);
    } else {
      double r = acc;
      if constexpr (Kind == ReduceOp::kMean) r = count > 0 ? r / double(count) : NAN;
      if constexpr (Kind == ReduceOp::kL2) r = std::sqrt(r);
      if constexpr (Kind == ReduceOp::kLogSum) r = std::log(r);
      // An infinite or NaN maximum is the answer itself (inf - inf would be NaN).
      if constexpr (Kind == ReduceOp::kLogSumExp) r = std::isfinite(max) ? max + std::log(r) : max;
      if constexpr (std::is_integral_v<T>) return T(FloatToInt64(r));
      else return Narrow<T>(typename Arith<T>::type(r));
    }
  }
};

template <ReduceOp Kind>
class ReduceOpKernel : public Op {
 public:
  // `axes` is an input from opset 13 (ReduceSum) or 18 (the others), an attribute before.
  explicit ReduceOpKernel(const Node& node)
      : axes_input_(node.opset >= (Kind == ReduceOp::kSum ? 13 : 18)), axes_(node.attr_ints("axes")),
        keep_(node.attr_int("keepdims", 1) != 0), noop_(node.attr_int("noop_with_empty_axes", 0) != 0) {}

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      std::vector<int64_t> axes = axes_;
      bool known = true;
      if (axes_input_) {
        axes.clear();
        if (ctx.has_input(1)) {
          const Tensor* t = ctx.value(1);
          if (t) axes = IndexValues(*t);
          else known = false;
        }
      }
      if (known) {
        const int64_t rank = in.rank();
        std::vector<bool> reduced(size_t(rank), axes.empty() && !noop_);
        for (int64_t a : axes) {
          ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, a, rank, "axis"));
          reduced[size_t(axis)] = true;
        }
        out.dims.emplace();
        for (int64_t k = 0; k < rank; ++k) {
          if (!reduced[size_t(k)]) out.dims->push_back((*in.dims)[size_t(k)]);
          else if (keep_) out.dims->push_back(Dim::Known(1));
        }
        if (std::optional<Shape> shape = in.concrete_shape()) ctx.set_plan(MakeReducePlan(*shape, reduced));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const ReducePlan& plan = ctx.plan<ReducePlan>();
    MemoryReservation reserved;  // the general path's accumulators (and LogSumExp's maxima)
    if (!plan.block) {
      ASSIGN_OR_RETURN(reserved, ctx.Reserve(out.size(), 2 * sizeof(double), "the accumulators"));
    }
    return Dispatch<Types>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = Accum<Kind, T>;
      T* dst = out.data<T>();
      if (plan.block) {
        const T* src = in.data<T>();
        const int64_t n = plan.n, inner = plan.inner, total = plan.outer * inner;
        // Contiguous float rows: the vectorized row reductions (kernels/vec/vec_math.h),
        // on any target above the baseline (which keeps the plain loop below).
        constexpr bool kVec = Kind == ReduceOp::kSum || Kind == ReduceOp::kMean || Kind == ReduceOp::kSumSquare ||
                              Kind == ReduceOp::kL2 || Kind == ReduceOp::kMax || Kind == ReduceOp::kMin;
        if constexpr (std::is_same_v<T, float> && kVec) {
          if (inner == 1 && ActiveCpuTarget() != CpuTarget::kBaseline) {
            ParallelFor(ctx.threads(), total, WorkPerIndex{double(n)},
                        [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
              const float* p = src + r * n;
              if constexpr (Kind == ReduceOp::kMax) dst[r] = VecMaxRow(p, n);
              else if constexpr (Kind == ReduceOp::kMin) dst[r] = VecMinRow(p, n);
              else if constexpr (Kind == ReduceOp::kSum || Kind == ReduceOp::kMean)
                dst[r] = Acc::Finish(VecSumRow(p, n), plan.count, 0.0);
              else dst[r] = Acc::Finish(VecSumSquaresRow(p, n), plan.count, 0.0);
            }});
            return;
          }
        }
        ParallelFor(ctx.threads(), total, WorkPerIndex{double(n)},
                    [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
          const T* p = src + (r / inner) * n * inner + r % inner;
          typename Acc::type acc = Acc::Init();
          double max = -std::numeric_limits<double>::infinity();
          if constexpr (Kind == ReduceOp::kLogSumExp) {
            for (int64_t k = 0; k < n; ++k) {
              const double v = double(Widen(p[k * inner]));
              if (v > max || v != v) max = v;
            }
            for (int64_t k = 0; k < n; ++k) acc += std::exp(double(Widen(p[k * inner])) - max);
          } else {
            for (int64_t k = 0; k < n; ++k) Acc::Add(acc, p[k * inner]);
          }
          dst[r] = Acc::Finish(acc, plan.count, max);
        }});
        return;
      }
      // The general path: any reduced dims, empty inputs.
      const auto for_each = [&](auto f) { ForEachReduced<T>(in, plan, f); };
      std::vector<typename Acc::type> acc(size_t(out.size()), Acc::Init());
      // LogSumExp subtracts each output's maximum before exp, so no exp overflows.
      std::vector<double> max(Kind == ReduceOp::kLogSumExp ? size_t(out.size()) : 0,
                              -std::numeric_limits<double>::infinity());
      if constexpr (Kind == ReduceOp::kLogSumExp) {
        for_each([&](int64_t o, T x) {
          const double v = double(Widen(x));
          if (v > max[size_t(o)] || v != v) max[size_t(o)] = v;
        });
        for_each([&](int64_t o, T x) { acc[size_t(o)] += std::exp(double(Widen(x)) - max[size_t(o)]); });
      } else {
        for_each([&](int64_t o, T x) { Acc::Add(acc[size_t(o)], x); });
      }
      for (int64_t o = 0; o < out.size(); ++o)
        dst[o] = Acc::Finish(acc[size_t(o)], plan.count, max.empty() ? 0.0 : max[size_t(o)]);
    });
  }

  // ReduceMax-20 and ReduceMin-20 add bool.
  using Types = std::conditional_t<Kind == ReduceOp::kMax || Kind == ReduceOp::kMin,
                                   Join<NumericTypes, TypeList<bool>>, NumericTypes>;

 private:
  bool axes_input_;
  std::vector<int64_t> axes_;
  bool keep_, noop_;
};

// ---- ArgMax, ArgMin ----

struct AxisPlan : OpPlan {
  AxisSplit split;
};

template <bool kMin>
class ArgOp : public Op {
 public:
  explicit ArgOp(const Node& node)
      : axis_(node.attr_int("axis", 0)), keep_(node.attr_int("keepdims", 1) != 0),
        last_(node.attr_int("select_last_index", 0) != 0) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = DType::kInt64;
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, in.rank(), "axis"));
      out.dims = *in.dims;
      if (keep_) (*out.dims)[size_t(axis)] = Dim::Known(1);
      else out.dims->erase(out.dims->begin() + axis);
      if (std::optional<Shape> shape = in.concrete_shape()) {
        if ((*shape)[size_t(axis)] == 0 && ElementCount(*out.concrete_shape()) > 0)
          return ctx.Error(absl::StrCat(ctx.node().op_type, " over the empty axis ", axis, " of ", in.ToString(),
                                        " has no answer"));
        auto plan = std::make_shared<AxisPlan>();
        plan->split = SplitAt(*shape, axis);
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0)->size() == 0) return absl::OkStatus();  // empty outputs: no loop over an empty dim's extent
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const AxisSplit& s = ctx.plan<AxisPlan>().split;
    return Dispatch<NumericTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t e = 0; e < s.inner; ++e) {
          int64_t best = 0;
          auto best_v = Widen(src[o * s.n * s.inner + e]);
          for (int64_t k = 1; k < s.n; ++k) {
            const auto v = Widen(src[(o * s.n + k) * s.inner + e]);
            // NaN is the extreme, as in NumPy: the first NaN, or the last with select_last_index.
            const bool take = v != v ? (best_v == best_v || last_)
                                     : best_v == best_v && ((kMin ? v < best_v : v > best_v) || (last_ && v == best_v));
            if (take) {
              best = k;
              best_v = v;
            }
          }
          out.data<int64_t>()[o * s.inner + e] = best;
        }
    });
  }

 private:
  int64_t axis_;
  bool keep_, last_;
};

// ---- Softmax, LogSoftmax, Hardmax ----

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

template <SoftmaxKind Kind>
class SoftmaxOp : public Op {
 public:
  // Opset 13 normalizes along one axis (default -1); before, over all dims from `axis` (default 1) on.
  explicit SoftmaxOp(const Node& node)
      : axis_(node.attr_int("axis", node.opset >= 13 ? -1 : 1)), legacy_(node.opset < 13) {}
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      const int64_t rank = in.rank();
      if (axis_ < -rank || axis_ >= std::max<int64_t>(rank, 1))
        return ctx.Error(absl::StrCat("axis ", axis_, " is out of range for rank ", rank));
      if (std::optional<Shape> shape = in.concrete_shape()) {
        const int64_t axis = rank == 0 ? 0 : (axis_ < 0 ? axis_ + rank : axis_);
        auto plan = std::make_shared<AxisPlan>();
        plan->split = SplitAt(*shape, axis);
        if (legacy_) {
          plan->split.n = 1;
          for (int64_t d = axis; d < rank; ++d) plan->split.n *= (*shape)[size_t(d)];
          plan->split.inner = 1;
        }
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, in);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0)->size() == 0) return absl::OkStatus();  // empty outputs: no loop over an empty dim's extent
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const AxisSplit& s = ctx.plan<AxisPlan>().split;
    return Dispatch<FloatTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      const int64_t n = s.n, inner = s.inner;
      if constexpr (std::is_same_v<T, float> && Kind == SoftmaxKind::kSoftmax) {
        if (inner == 1) {  // contiguous rows: the vectorized path (kernels/vec/vec_math.h)
          ParallelFor(ctx.threads(), s.outer, WorkPerIndex{2.0 * double(n)}, [&](int64_t o_begin, int64_t o_end) {
            for (int64_t o = o_begin; o < o_end; ++o)
              VecSoftmaxRow(src + o * n, dst + o * n, n);
          });
          return;
        }
      }
      ParallelFor(ctx.threads(), s.outer * inner, WorkPerIndex{2.0 * double(n)},
                  [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
        const int64_t o = r / inner, e = r % inner;
        auto at = [&](int64_t k) { return (o * n + k) * inner + e; };
        if constexpr (Kind == SoftmaxKind::kHardmax) {
          // 1 at the first maximum, 0 elsewhere.
          int64_t best = 0;
          for (int64_t k = 1; k < n; ++k)
            if (A(Widen(src[at(k)])) > A(Widen(src[at(best)]))) best = k;
          for (int64_t k = 0; k < n; ++k) dst[at(k)] = Narrow<T>(A(k == best ? 1 : 0));
          continue;
        }
        A max = -std::numeric_limits<A>::infinity();
        for (int64_t k = 0; k < n; ++k) max = std::max(max, A(Widen(src[at(k)])));
        A sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += std::exp(A(Widen(src[at(k)])) - max);
        if constexpr (Kind == SoftmaxKind::kLogSoftmax) {
          const A log_sum = std::log(sum);
          for (int64_t k = 0; k < n; ++k) dst[at(k)] = Narrow<T>(A(Widen(src[at(k)])) - max - log_sum);
        } else {
          for (int64_t k = 0; k < n; ++k) dst[at(k)] = Narrow<T>(std::exp(A(Widen(src[at(k)])) - max) / sum);
        }
      }});
    });
  }

 private:
  int64_t axis_;
  bool legacy_;
};

// ---- LpNormalization, MeanVarianceNormalization ----

// x / ||x||_p along one axis (p = 1 or 2); a zero norm gives 0, not NaN.
// The norm sums |x|^p: the reference's p = 1 sums x itself, which is not a norm.
class LpNormalizationOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t p = node.attr_int("p", 2);
    if (p != 1 && p != 2)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": p = ", p, " must be 1 or 2"));
    return std::unique_ptr<Op>(new LpNormalizationOp(node.attr_int("axis", -1), p));
  }
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, in.rank(), "axis"));
      if (std::optional<Shape> shape = in.concrete_shape()) {
        auto plan = std::make_shared<AxisPlan>();
        plan->split = SplitAt(*shape, axis);
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, in);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0)->size() == 0) return absl::OkStatus();  // empty outputs: no loop over an empty dim's extent
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const AxisSplit& s = ctx.plan<AxisPlan>().split;
    return Dispatch<FloatTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t e = 0; e < s.inner; ++e) {
          const auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + e; };
          double norm = 0;
          for (int64_t k = 0; k < s.n; ++k) {
            const double v = double(Widen(src[at(k)]));
            norm += p_ == 1 ? std::fabs(v) : v * v;
          }
          if (p_ == 2) norm = std::sqrt(norm);
          for (int64_t k = 0; k < s.n; ++k)
            dst[at(k)] = Narrow<T>(typename Arith<T>::type(norm == 0 ? 0.0 : double(Widen(src[at(k)])) / norm));
        }
    });
  }

 private:
  LpNormalizationOp(int64_t axis, int64_t p) : axis_(axis), p_(p) {}
  int64_t axis_, p_;
};

// (x - mean) / (std + 1e-9) over `axes` (default 0, 2, 3; empty: all), the
// epsilon as the schema's function body adds it. The variance is the mean of
// squared deviations, computed in double (never negative, unlike E[x^2] - E[x]^2).
class MeanVarianceNormalizationOp : public Op {
 public:
  explicit MeanVarianceNormalizationOp(const Node& node)
      : axes_(node.attr("axes") ? node.attr_ints("axes") : std::vector<int64_t>{0, 2, 3}) {}
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      const int64_t rank = in.rank();
      std::vector<bool> reduced(size_t(rank), axes_.empty());
      for (int64_t a : axes_) {
        ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, a, rank, "axis"));
        reduced[size_t(axis)] = true;
      }
      if (std::optional<Shape> shape = in.concrete_shape()) ctx.set_plan(MakeReducePlan(*shape, reduced));
    }
    ctx.set_output(0, in);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0)->size() == 0) return absl::OkStatus();
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const ReducePlan& plan = ctx.plan<ReducePlan>();
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(plan.groups, 2 * sizeof(double), "the means and variances"));
    return Dispatch<FloatTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<double> mean(size_t(plan.groups), 0.0), var(size_t(plan.groups), 0.0);
      ForEachReduced<T>(in, plan, [&](int64_t o, T x) { mean[size_t(o)] += double(Widen(x)); });
      for (double& m : mean) m /= double(plan.count);
      ForEachReduced<T>(in, plan, [&](int64_t o, T x) {
        const double d = double(Widen(x)) - mean[size_t(o)];
        var[size_t(o)] += d * d;
      });
      T* dst = out.data<T>();
      int64_t i = 0;
      ForEachReduced<T>(in, plan, [&](int64_t o, T x) {
        const double sd = std::sqrt(var[size_t(o)] / double(plan.count));
        dst[i++] = Narrow<T>(typename Arith<T>::type((double(Widen(x)) - mean[size_t(o)]) / (sd + 1e-9)));
      });
    });
  }

 private:
  std::vector<int64_t> axes_;
};

// ---- TopK ----

struct TopKPlan : OpPlan {
  AxisSplit split;
  int64_t k = 0;
};

class TopKOp : public Op {
 public:
  explicit TopKOp(const Node& node)
      : axis_(node.attr_int("axis", -1)), largest_(node.attr_int("largest", 1) != 0) {
    if (node.opset < 10) k_attr_ = Tensor::FromVector<int64_t>({node.attr_int("k", -1)}, {1});  // TopK-1: k is an attribute
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType values, indices;
    values.dtype = ctx.input(0).dtype;
    indices.dtype = DType::kInt64;
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, in.rank(), "axis"));
      values.dims = *in.dims;
      (*values.dims)[size_t(axis)] = Dim{};
      if (const Tensor* k = ctx.opset() < 10 ? &k_attr_ : ctx.value(1)) {
        if (k->size() != 1) return ctx.Error("K must be a one-element tensor");
        const int64_t kv = k->data<int64_t>()[0];
        const Dim& n = (*in.dims)[size_t(axis)];
        if (kv < 0 || (n.known() && kv > n.value))
          return ctx.Error(absl::StrCat("K = ", kv, " is outside [0, ", n.known() ? n.value : -1, "]"));
        (*values.dims)[size_t(axis)] = Dim::Known(kv);
        if (std::optional<Shape> shape = in.concrete_shape()) {
          auto plan = std::make_shared<TopKPlan>();
          plan->split = SplitAt(*shape, axis);
          plan->k = kv;
          ctx.set_plan(std::move(plan));
        }
      }
      indices.dims = values.dims;
    }
    ctx.set_output(0, values);
    ctx.set_output(1, indices);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0)->size() == 0) return absl::OkStatus();  // empty outputs: no loop over an empty dim's extent
    const Tensor& in = *ctx.input(0);
    const TopKPlan& plan = ctx.plan<TopKPlan>();
    const AxisSplit& s = plan.split;
    const int64_t k = plan.k;
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(s.n, 2 * sizeof(double), "the sort keys and order"));
    Tensor& values = ctx.output(0);
    Tensor& indices = ctx.output(1);
    return Dispatch<NumericTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* src = in.data<T>();
      std::vector<int64_t> order(static_cast<size_t>(s.n));
      std::vector<A> key(static_cast<size_t>(s.n));
      // NaN ranks above every number (first when largest, last otherwise), as
      // NumPy sorts; NaNs are equivalent to each other, so this is a strict
      // weak order and equal keys keep the lower index first.
      const auto before = [&](int64_t a, int64_t b) {
        const A x = key[size_t(a)], y = key[size_t(b)];
        const bool x_nan = x != x, y_nan = y != y;
        if (x_nan || y_nan) return largest_ ? (x_nan && !y_nan) : (!x_nan && y_nan);
        return largest_ ? x > y : x < y;
      };
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t e = 0; e < s.inner; ++e) {
          for (int64_t j = 0; j < s.n; ++j) {
            order[size_t(j)] = j;
            key[size_t(j)] = A(Widen(src[(o * s.n + j) * s.inner + e]));
          }
          std::stable_sort(order.begin(), order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t from = (o * s.n + order[size_t(j)]) * s.inner + e, to = (o * k + j) * s.inner + e;
            if (ctx.output_requested(1)) indices.data<int64_t>()[to] = order[size_t(j)];
            if (ctx.output_requested(0)) values.data<T>()[to] = src[from];
          }
        }
    });
  }

 private:
  int64_t axis_;
  bool largest_;
  Tensor k_attr_;  // defined before opset 10
};

template <ReduceOp Kind>
OpDef Reduce(const char* name, int since, int last, bool axes_input, TypeSet types) {
  return {"", name, since, last, axes_input ? "T I?" : "T", "T", {{"T", types}, {"I", kInt64}},
          MakeOp<ReduceOpKernel<Kind>>};
}

}  // namespace

std::vector<OpDef> ReduceOps() {
  const TypeSet with_bool = kNumericTypes | kBool;
  return {
      Reduce<ReduceOp::kMax>("ReduceMax", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kMax>("ReduceMax", 18, 19, true, kNumericTypes),
      Reduce<ReduceOp::kMax>("ReduceMax", 20, 0, true, with_bool),
      Reduce<ReduceOp::kSum>("ReduceSum", 1, 12, false, kNumericTypes),
      Reduce<ReduceOp::kSum>("ReduceSum", 13, 0, true, kNumericTypes),
      Reduce<ReduceOp::kMean>("ReduceMean", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kMean>("ReduceMean", 18, 0, true, kNumericTypes),
      Reduce<ReduceOp::kMin>("ReduceMin", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kMin>("ReduceMin", 18, 19, true, kNumericTypes),
      Reduce<ReduceOp::kMin>("ReduceMin", 20, 0, true, with_bool),
      Reduce<ReduceOp::kProd>("ReduceProd", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kProd>("ReduceProd", 18, 0, true, kNumericTypes),
      Reduce<ReduceOp::kL1>("ReduceL1", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kL1>("ReduceL1", 18, 0, true, kNumericTypes),
      Reduce<ReduceOp::kL2>("ReduceL2", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kL2>("ReduceL2", 18, 0, true, kNumericTypes),
      Reduce<ReduceOp::kLogSum>("ReduceLogSum", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kLogSum>("ReduceLogSum", 18, 0, true, kNumericTypes),
      Reduce<ReduceOp::kLogSumExp>("ReduceLogSumExp", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kLogSumExp>("ReduceLogSumExp", 18, 0, true, kNumericTypes),
      Reduce<ReduceOp::kSumSquare>("ReduceSumSquare", 1, 17, false, kNumericTypes),
      Reduce<ReduceOp::kSumSquare>("ReduceSumSquare", 18, 0, true, kNumericTypes),
      {"", "ArgMax", 1, 0, "T", "I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<ArgOp<false>>},
      {"", "ArgMin", 1, 0, "T", "I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<ArgOp<true>>},
      {"", "Softmax", 1, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<SoftmaxOp<SoftmaxKind::kSoftmax>>},
      {"", "LogSoftmax", 1, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<SoftmaxOp<SoftmaxKind::kLogSoftmax>>},
      {"", "Hardmax", 1, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<SoftmaxOp<SoftmaxKind::kHardmax>>},
      {"", "LpNormalization", 1, 0, "T", "T", {{"T", kFloatTypes}}, LpNormalizationOp::Create},
      {"", "MeanVarianceNormalization", 9, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<MeanVarianceNormalizationOp>},
      {"", "TopK", 1, 9, "T", "T I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<TopKOp>},
      {"", "TopK", 10, 0, "T I", "T I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<TopKOp>},
  };
}

}  // namespace onnx_mini
