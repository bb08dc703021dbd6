// Reductions and the ops built on them: ReduceMax, ReduceSum, ReduceMean,
// ArgMax, Softmax, LogSoftmax, Hardmax, TopK.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "ops/vec_math.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum class ReduceOp { kMax, kSum, kMean };

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

// ---- ReduceMax, ReduceSum, ReduceMean ----

// Where each input element lands: the input index with the reduced dims dropped.
struct ReducePlan : OpPlan {
  std::vector<int64_t> out_stride;  // per input dim; 0 where reduced
  int64_t count = 0;                // input elements per output element
  bool trailing = false;            // the reduced dims are the last ones: rows of `count`
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
        if (std::optional<Shape> shape = in.concrete_shape()) {
          auto plan = std::make_shared<ReducePlan>();
          plan->out_stride.assign(size_t(rank), 0);
          int64_t stride = 1, kept = 1;
          for (int64_t d = rank - 1; d >= 0; --d)
            if (!reduced[size_t(d)]) {
              plan->out_stride[size_t(d)] = stride;
              // An empty input can keep dims whose product overflows; the
              // output size check refuses that output before any kernel runs.
              stride = CheckedMul(stride, (*shape)[size_t(d)]).value_or(0);
              kept = CheckedMul(kept, (*shape)[size_t(d)]).value_or(0);
            }
          plan->count = kept > 0 ? ElementCount(*shape) / kept : 0;
          int64_t first = rank;  // the reduced dims form a suffix [first, rank)
          while (first > 0 && reduced[size_t(first - 1)]) --first;
          plan->trailing = kept > 0 && std::find(reduced.begin(), reduced.begin() + first, true) == reduced.begin() + first;
          ctx.set_plan(std::move(plan));
        }
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const ReducePlan& plan = ctx.plan<ReducePlan>();
    const int64_t count = plan.count;
    return Dispatch<Types>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Integers sum in uint64 (wrapping, as ONNX integer arithmetic does),
      // compare as themselves; bool (ReduceMax-20) reduces as 0/1: max is "any";
      // floats accumulate in double.
      constexpr bool kInteger = std::is_integral_v<T>;
      using A = std::conditional_t<std::is_same_v<T, bool>, int64_t,
                                   std::conditional_t<kInteger, std::conditional_t<Kind == ReduceOp::kMax, T, uint64_t>,
                                                      double>>;
      A init = A(0);
      if constexpr (Kind == ReduceOp::kMax) {
        if constexpr (std::is_same_v<T, bool>) init = 0;
        else if constexpr (kInteger) init = std::numeric_limits<A>::lowest();
        else init = -std::numeric_limits<A>::infinity();
      }
      const T* src = in.data<T>();
      if constexpr (!kInteger && Kind != ReduceOp::kMax) {
        // Sums of contiguous rows (the reduced dims are the last ones): eight
        // double accumulators per row, which the compiler vectorizes.
        if (plan.trailing && out.size() * count == in.size()) {
          T* dst = out.data<T>();
#pragma omp parallel for num_threads(ctx.threads()) if (in.size() > (1 << 16))
          for (int64_t o = 0; o < out.size(); ++o) {
            const T* row = src + o * count;
            double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t k = 0;
            for (; k + 8 <= count; k += 8)
              for (int l = 0; l < 8; ++l) lanes[l] += double(Widen(row[k + l]));
            double v = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
            for (; k < count; ++k) v += double(Widen(row[k]));
            const double r = Kind == ReduceOp::kMean ? (count > 0 ? v / double(count) : NAN) : v;
            dst[o] = Narrow<T>(typename Arith<T>::type(r));
          }
          return;
        }
      }
      std::vector<A> acc(size_t(out.size()), init);
      for (int64_t i = 0; i < in.size(); ++i) {
        int64_t rem = i, o = 0;
        for (int64_t d = in.rank() - 1; d >= 0; --d) {
          o += (rem % in.dim(d)) * plan.out_stride[size_t(d)];
          rem /= in.dim(d);
        }
        if constexpr (Kind == ReduceOp::kMax) {
          const A v = A(Widen(src[i]));
          acc[size_t(o)] = (v > acc[size_t(o)] || v != v) ? v : acc[size_t(o)];
        } else if constexpr (kInteger) {
          acc[size_t(o)] += uint64_t(int64_t(src[i]));  // sign-extends, then wraps
        } else {
          acc[size_t(o)] += double(Widen(src[i]));
        }
      }
      T* dst = out.data<T>();
      for (int64_t o = 0; o < out.size(); ++o) {
        const A v = acc[size_t(o)];
        if constexpr (kInteger && Kind == ReduceOp::kMax) {
          dst[o] = T(v);
        } else if constexpr (kInteger) {
          // The mean of nothing has no integer value: 0, never a NaN conversion.
          using Signed = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
          const Signed sum = Signed(v);
          dst[o] = T(Kind == ReduceOp::kMean ? (count > 0 ? sum / Signed(count) : 0) : sum);
        } else {
          const double r = Kind == ReduceOp::kMean ? (count > 0 ? v / double(count) : NAN) : v;
          dst[o] = Narrow<T>(typename Arith<T>::type(r));
        }
      }
    });
  }

  // ReduceMax-20 adds bool.
  using Types = std::conditional_t<Kind == ReduceOp::kMax, Join<NumericTypes, TypeList<bool>>, NumericTypes>;

 private:
  bool axes_input_;
  std::vector<int64_t> axes_;
  bool keep_, noop_;
};

// ---- ArgMax ----

struct AxisPlan : OpPlan {
  AxisSplit split;
};

class ArgMaxOp : public Op {
 public:
  explicit ArgMaxOp(const Node& node)
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
          return ctx.Error(absl::StrCat("ArgMax over the empty axis ", axis, " of ", in.ToString(), " has no answer"));
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
            if (v > best_v || (last_ && v == best_v)) {
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
        if (inner == 1) {  // contiguous rows: the vectorized path (ops/vec_math.h)
#pragma omp parallel for num_threads(ctx.threads()) if (in.size() > (1 << 15))
          for (int64_t o = 0; o < s.outer; ++o) VecSoftmaxRow(src + o * n, dst + o * n, n);
          return;
        }
      }
#pragma omp parallel for num_threads(ctx.threads()) if (in.size() > (1 << 15))
      for (int64_t r = 0; r < s.outer * inner; ++r) {
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
      }
    });
  }

 private:
  int64_t axis_;
  bool legacy_;
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
      {"", "ArgMax", 1, 0, "T", "I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<ArgMaxOp>},
      {"", "Softmax", 1, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<SoftmaxOp<SoftmaxKind::kSoftmax>>},
      {"", "LogSoftmax", 1, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<SoftmaxOp<SoftmaxKind::kLogSoftmax>>},
      {"", "Hardmax", 1, 0, "T", "T", {{"T", kFloatTypes}}, MakeOp<SoftmaxOp<SoftmaxKind::kHardmax>>},
      {"", "TopK", 1, 9, "T", "T I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<TopKOp>},
      {"", "TopK", 10, 0, "T I", "T I", {{"T", kNumericTypes}, {"I", kInt64}}, MakeOp<TopKOp>},
  };
}

}  // namespace onnx_mini
