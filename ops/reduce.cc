// Reductions and the ops built on them: ReduceMax, ReduceSum, ReduceMean,
// ArgMax, Softmax, LayerNormalization.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum class ReduceOp { kMax, kSum, kMean };

constexpr std::initializer_list<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                                      DType::kBFloat16};

// Which dims a Reduce* node reduces: an `axes` input from `input_since`, an
// attribute before; none given means all (or none with noop_with_empty_axes).
// `known` is false while an axes input's value is unknown.
absl::StatusOr<std::vector<bool>> ReducedDims(const InferContext& ctx, int64_t rank, int64_t input_since,
                                              bool& known) {
  known = true;
  std::vector<int64_t> axes;
  if (ctx.opset() >= input_since) {
    if (ctx.has_input(1)) {
      const Tensor* t = ctx.value(1);
      if (!t) {
        known = false;
        return std::vector<bool>{};
      }
      for (int64_t i = 0; i < t->size(); ++i) axes.push_back(t->data<int64_t>()[i]);
    }
  } else {
    axes = ctx.node().attr_ints("axes");
  }
  std::vector<bool> reduced(size_t(rank), axes.empty() && ctx.node().attr_int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return ctx.Error(absl::StrCat("axis ", a, " is out of range for rank ", rank));
    reduced[size_t(a < 0 ? a + rank : a)] = true;
  }
  return reduced;
}

template <ReduceOp Op>
absl::Status InferReduce(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 2);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  const ValueType& in = ctx.input(0);
  if (in.dims) {
    bool known;
    absl::StatusOr<std::vector<bool>> reduced = ReducedDims(ctx, in.rank(), Op == ReduceOp::kSum ? 13 : 18, known);
    if (!reduced.ok()) return reduced.status();
    if (known) {
      const bool keep = ctx.node().attr_int("keepdims", 1) != 0;
      out.dims.emplace();
      for (int64_t k = 0; k < in.rank(); ++k) {
        if (!(*reduced)[size_t(k)]) out.dims->push_back((*in.dims)[size_t(k)]);
        else if (keep) out.dims->push_back(Dim::Known(1));
      }
    }
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

template <ReduceOp Op>
class ReduceKernel : public OpKernel {
 public:
  explicit ReduceKernel(const KernelInfo& info) : node_(info.node) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    ValueType in_type = ValueType::Of(in.dtype(), in.shape());
    ValueType axes_type;
    std::vector<const ValueType*> types = {&in_type};
    std::vector<const Tensor*> values = {&in};
    if (ctx.num_inputs() > 1 && ctx.input(1)) {
      axes_type = ValueType::Of(ctx.input(1)->dtype(), ctx.input(1)->shape());
      types.push_back(&axes_type);
      values.push_back(ctx.input(1));
    }
    InferContext ictx(node_, types, values);
    bool known;
    absl::StatusOr<std::vector<bool>> reduced = ReducedDims(ictx, in.rank(), Op == ReduceOp::kSum ? 13 : 18, known);
    if (!reduced.ok()) return reduced.status();
    Tensor& out = ctx.output(0);
    // Output index of each input element: the input index with reduced dims dropped.
    std::vector<int64_t> out_stride(size_t(in.rank()), 0);
    int64_t stride = 1;
    for (int64_t d = in.rank() - 1; d >= 0; --d)
      if (!(*reduced)[size_t(d)]) {
        out_stride[size_t(d)] = stride;
        stride *= in.dim(d);
      }
    const int64_t count = out.size() > 0 ? in.size() / std::max<int64_t>(out.size(), 1) : 0;
    VisitDType(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        // bool (ReduceMax-20 only) reduces as 0/1 integers: max is "any".
        using A = std::conditional_t<std::is_same_v<T, bool>, int64_t, std::conditional_t<std::is_integral_v<T>, T, double>>;
        std::vector<A> acc(size_t(out.size()), Op == ReduceOp::kMax && !std::is_same_v<T, bool>
                                                   ? std::numeric_limits<A>::lowest() : A(0));
        if constexpr (Op == ReduceOp::kMax && !std::is_integral_v<T>)
          std::fill(acc.begin(), acc.end(), -std::numeric_limits<A>::infinity());
        const T* src = in.data<T>();
        for (int64_t i = 0; i < in.size(); ++i) {
          int64_t rem = i, o = 0;
          for (int64_t d = in.rank() - 1; d >= 0; --d) {
            o += (rem % in.dim(d)) * out_stride[size_t(d)];
            rem /= in.dim(d);
          }
          const A v = A(Widen(src[i]));
          if constexpr (Op == ReduceOp::kMax) acc[size_t(o)] = (v > acc[size_t(o)] || v != v) ? v : acc[size_t(o)];
          else acc[size_t(o)] += v;
        }
        T* dst = out.data<T>();
        for (int64_t o = 0; o < out.size(); ++o) {
          A v = acc[size_t(o)];
          if constexpr (Op == ReduceOp::kMean) v = count > 0 ? A(v / A(count)) : A(NAN);
          if constexpr (std::is_integral_v<T>) dst[o] = T(v);
          else dst[o] = Narrow<T>(typename Arith<T>::type(v));
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  const Node& node_;
};

template <ReduceOp Op>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateReduce(const KernelInfo& info) {
  if (Op == ReduceOp::kMax && info.inputs[0]->dtype == DType::kBool && info.node.opset >= 20)
    return MakeKernel<ReduceKernel<Op>>(info);  // ReduceMax-20 on bool: any
  absl::Status s = RequireDType(info, 0, kNumericTypes);
  if (!s.ok()) return s;
  return MakeKernel<ReduceKernel<Op>>(info);
}

// ---- ArgMax ----

absl::Status InferArgMax(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 1);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = DType::kInt64;
  const ValueType& in = ctx.input(0);
  if (in.dims) {
    const int64_t rank = in.rank(), axis = ctx.node().attr_int("axis", 0);
    if (axis < -rank || axis >= rank) return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
    const int64_t a = axis < 0 ? axis + rank : axis;
    out.dims = *in.dims;
    if (ctx.node().attr_int("keepdims", 1) != 0) (*out.dims)[size_t(a)] = Dim::Known(1);
    else out.dims->erase(out.dims->begin() + a);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class ArgMaxKernel : public OpKernel {
 public:
  explicit ArgMaxKernel(const KernelInfo& info)
      : axis_(info.node.attr_int("axis", 0)), last_(info.node.attr_int("select_last_index", 0) != 0) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t axis = axis_ < 0 ? axis_ + in.rank() : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int64_t d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    const int64_t n = in.dim(axis);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        int64_t best = 0;
        double best_v = -HUGE_VAL;
        for (int64_t k = 0; k < n; ++k) {
          const double v = GetDouble(in, (o * n + k) * inner + e);
          if (k == 0 || v > best_v || (last_ && v == best_v)) {
            best = k;
            best_v = v;
          }
        }
        out.data<int64_t>()[o * inner + e] = best;
      }
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool last_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateArgMax(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kNumericTypes);
  if (!s.ok()) return s;
  return MakeKernel<ArgMaxKernel>(info);
}

// ---- Softmax ----

absl::Status InferSoftmax(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 1);
  if (!dtype.ok()) return dtype.status();
  const ValueType& in = ctx.input(0);
  if (in.dims) {
    const int64_t rank = in.rank(), axis = ctx.node().attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
    if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
      return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  ctx.set_output(0, in);
  return absl::OkStatus();
}

class SoftmaxKernel : public OpKernel {
 public:
  explicit SoftmaxKernel(const KernelInfo& info)
      : axis_(info.node.attr_int("axis", info.node.opset >= 13 ? -1 : 1)), legacy_(info.node.opset < 13) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t rank = in.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // Opset 13 normalizes along one axis; before, over all dims from `axis` on.
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.dim(d);
    if (legacy_) {
      for (int64_t d = axis; d < rank; ++d) n *= in.dim(d);
    } else {
      n = rank ? in.dim(axis) : 1;
      for (int64_t d = axis + 1; d < rank; ++d) inner *= in.dim(d);
    }
    VisitDType(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Float16> ||
                    std::is_same_v<T, BFloat16>) {
        using A = typename Arith<T>::type;
        const T* src = in.data<T>();
        T* dst = out.data<T>();
#pragma omp parallel for num_threads(ctx.threads()) if (in.size() > (1 << 15))
        for (int64_t r = 0; r < outer * inner; ++r) {
          const int64_t o = r / inner, e = r % inner;
          auto at = [&](int64_t k) { return (o * n + k) * inner + e; };
          A max = -std::numeric_limits<A>::infinity();
          for (int64_t k = 0; k < n; ++k) max = std::max(max, A(Widen(src[at(k)])));
          A sum = 0;
          for (int64_t k = 0; k < n; ++k) sum += std::exp(A(Widen(src[at(k)])) - max);
          for (int64_t k = 0; k < n; ++k) dst[at(k)] = Narrow<T>(std::exp(A(Widen(src[at(k)])) - max) / sum);
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool legacy_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateSoftmax(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kFloatTypes);
  if (!s.ok()) return s;
  return MakeKernel<SoftmaxKernel>(info);
}

// ---- TopK ----

absl::Status InferTopK(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 2, 2, 2, 2);
  if (!dtype.ok()) return dtype.status();
  ValueType values, indices;
  values.dtype = *dtype;
  indices.dtype = DType::kInt64;
  const ValueType& in = ctx.input(0);
  if (in.dims) {
    const int64_t rank = in.rank(), axis_attr = ctx.node().attr_int("axis", -1);
    if (axis_attr < -rank || axis_attr >= rank)
      return ctx.Error(absl::StrCat("axis ", axis_attr, " is out of range for rank ", rank));
    const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
    values.dims = *in.dims;
    (*values.dims)[size_t(axis)] = Dim{};
    if (const Tensor* k = ctx.value(1)) {
      if (k->size() != 1 || k->dtype() != DType::kInt64) return ctx.Error("K must be a one-element int64 tensor");
      const int64_t kv = k->data<int64_t>()[0];
      const Dim& n = (*in.dims)[size_t(axis)];
      if (kv < 0 || (n.known() && kv > n.value))
        return ctx.Error(absl::StrCat("K = ", kv, " is outside [0, ", n.known() ? n.value : -1, "]"));
      (*values.dims)[size_t(axis)] = Dim::Known(kv);
    }
    indices.dims = values.dims;
  }
  ctx.set_output(0, values);
  ctx.set_output(1, indices);
  return absl::OkStatus();
}

class TopKKernel : public OpKernel {
 public:
  explicit TopKKernel(const KernelInfo& info)
      : axis_(info.node.attr_int("axis", -1)), largest_(info.node.attr_int("largest", 1) != 0) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    const int64_t k = ctx.input(1)->data<int64_t>()[0];
    const int64_t axis = axis_ < 0 ? axis_ + in.rank() : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int64_t d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    const int64_t n = in.dim(axis);
    Tensor& values = ctx.output(0);
    Tensor& indices = ctx.output(1);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::vector<double> key(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        for (int64_t j = 0; j < n; ++j) {
          order[size_t(j)] = j;
          key[size_t(j)] = GetDouble(in, (o * n + j) * inner + e);
        }
        // Sorted by value; equal values keep the lower index first.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest_ ? key[size_t(a)] > key[size_t(b)] : key[size_t(a)] < key[size_t(b)];
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = (o * n + order[size_t(j)]) * inner + e, dst = (o * k + j) * inner + e;
          indices.data<int64_t>()[dst] = order[size_t(j)];
          std::memcpy(values.data<char>() + size_t(dst) * (Info(in.dtype()).bits / 8),
                      in.data<char>() + size_t(src) * (Info(in.dtype()).bits / 8), size_t(Info(in.dtype()).bits / 8));
        }
      }
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool largest_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateTopK(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kNumericTypes);
  if (!s.ok()) return s;
  return MakeKernel<TopKKernel>(info);
}

}  // namespace

std::vector<OpDef> ReduceOps() {
  return {
      {"", "ReduceMax", 1, 0, InferReduce<ReduceOp::kMax>, CreateReduce<ReduceOp::kMax>},
      {"", "ReduceSum", 1, 0, InferReduce<ReduceOp::kSum>, CreateReduce<ReduceOp::kSum>},
      {"", "ReduceMean", 1, 0, InferReduce<ReduceOp::kMean>, CreateReduce<ReduceOp::kMean>},
      {"", "ArgMax", 1, 0, InferArgMax, CreateArgMax},
      {"", "Softmax", 1, 0, InferSoftmax, CreateSoftmax},
      {"", "TopK", 10, 0, InferTopK, CreateTopK},
  };
}

}  // namespace onnx_mini
