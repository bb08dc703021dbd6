// Ops that select, repeat or rearrange elements: Concat, Expand, Squeeze,
// Unsqueeze, Gather, Slice, Pad, Trilu; and ops that make index tensors:
// Range, ConstantOfShape. All work on any non-packed element type.
#include <cmath>
#include <cstring>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

bool Movable(DType d) { return IsValidDType(int32_t(d)) && !Info(d).packed(); }

absl::StatusOr<std::unique_ptr<OpKernel>> RequireMovable(const KernelInfo& info,
                                                         absl::StatusOr<std::unique_ptr<OpKernel>> (*make)(const KernelInfo&)) {
  if (!Movable(info.inputs[0]->dtype)) return NotImplemented(info.node, info.inputs[0]->dtype);
  return make(info);
}

// The values of an int32/int64 tensor.
std::vector<int64_t> Int64s(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.size()));
  for (int64_t i = 0; i < t.size(); ++i)
    v[size_t(i)] = t.dtype() == DType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  return v;
}

absl::StatusOr<int64_t> NormalizeAxis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

// Copies element `from` of src to element `to` of dst, for any movable type.
template <class T>
void CopyAt(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  dst.data<T>()[to] = src.data<T>()[from];
}

// Calls f(TypeTag<T>) for movable element types.
template <class F>
void VisitMovable(DType dtype, F&& f) {
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsPacked<T> && !std::is_same_v<T, void>) f(tag);
  });
}

// ---- Concat ----

absl::Status InferConcat(InferContext& ctx) {
  if (ctx.num_inputs() < 1) return ctx.Error("needs at least one input");
  absl::Status s = CheckArity(ctx, 1, ctx.num_inputs());
  if (!s.ok()) return s;
  const Attribute* axis_attr = ctx.node().attr("axis");
  if (axis_attr == nullptr) return ctx.Error("attribute 'axis' is required");
  absl::StatusOr<DType> dtype = InputDType(ctx, 0);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  bool ranked = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    absl::StatusOr<DType> t = InputDType(ctx, i);
    if (!t.ok()) return t.status();
    if (*t != *dtype) return ctx.Error(absl::StrCat("input ", i, " is ", LowerName(*t), ", input 0 is ", LowerName(*dtype)));
    ranked = ranked && ctx.input(i).dims.has_value();
  }
  if (ranked) {
    const int64_t rank = ctx.input(0).rank();
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, axis_attr->i, rank, "axis");
    if (!axis.ok()) return axis.status();
    std::vector<Dim> dims = *ctx.input(0).dims;
    int64_t total = 0;
    bool known = true;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const std::vector<Dim>& d = *ctx.input(i).dims;
      if (int64_t(d.size()) != rank)
        return ctx.Error(absl::StrCat("input ", i, " has rank ", d.size(), ", input 0 has rank ", rank));
      for (int64_t k = 0; k < rank; ++k) {
        if (k == *axis) continue;
        if (d[size_t(k)].known() && dims[size_t(k)].known() && d[size_t(k)].value != dims[size_t(k)].value)
          return ctx.Error(absl::StrCat("input ", i, " ", ctx.input(i).ToString(), " differs from input 0 ",
                                        ctx.input(0).ToString(), " at dim ", k));
        if (!dims[size_t(k)].known()) dims[size_t(k)] = d[size_t(k)];
      }
      if (d[size_t(*axis)].known()) total += d[size_t(*axis)].value;
      else known = false;
    }
    dims[size_t(*axis)] = known ? Dim::Known(total) : Dim{};
    out.dims = dims;
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class ConcatKernel : public OpKernel {
 public:
  explicit ConcatKernel(const KernelInfo& info) : axis_(info.node.attr_int("axis", 0)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    const int64_t rank = out.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out.dim(d);
    const int64_t out_row = out.dim(axis) * inner;
    VisitMovable(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      int64_t offset = 0;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& in = *ctx.input(i);
        const int64_t row = in.dim(axis) * inner;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t e = 0; e < row; ++e) out.data<T>()[o * out_row + offset + e] = in.data<T>()[o * row + e];
        offset += row;
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

// ---- Expand ----

absl::Status InferExpand(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 2, 2);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  const Tensor* shape = ctx.value(1);
  if (shape && ctx.input(0).dims) {
    if (shape->rank() != 1 || shape->dtype() != DType::kInt64)
      return ctx.Error("the shape input must be a 1-D int64 tensor");
    std::vector<Dim> target;
    for (int64_t v : Int64s(*shape)) {
      if (v < 0) return ctx.Error(absl::StrCat("shape entries must be >= 0, got ", v));
      target.push_back(Dim::Known(v));
    }
    absl::StatusOr<std::vector<Dim>> dims = BroadcastDims(ctx, *ctx.input(0).dims, target);
    if (!dims.ok()) return dims.status();
    out.dims = *std::move(dims);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class ExpandKernel : public OpKernel {
 public:
  explicit ExpandKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> strides = BroadcastStrides(in.shape(), out.shape());
    const std::vector<int64_t> zero(out.shape().size(), 0);
    VisitMovable(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      ForEachBroadcast(out.shape(), strides, zero, ctx.threads(), [&](int64_t o, int64_t i, int64_t) { dst[o] = src[i]; });
    });
    return absl::OkStatus();
  }
};

// ---- Squeeze / Unsqueeze: views with another shape ----

// The axes of Squeeze/Unsqueeze: an input from opset 13, an attribute before.
// Returns false in `known` when the input's value is not known yet.
absl::StatusOr<std::vector<int64_t>> AxesOf(const InferContext& ctx, bool& given, bool& known) {
  given = true;
  known = true;
  if (ctx.opset() < 13) {
    given = ctx.node().attr("axes") != nullptr;
    return ctx.node().attr_ints("axes");
  }
  if (!ctx.has_input(1)) {
    given = false;
    return std::vector<int64_t>{};
  }
  const Tensor* axes = ctx.value(1);
  if (axes == nullptr) {
    known = false;
    return std::vector<int64_t>{};
  }
  if (axes->dtype() != DType::kInt64) return ctx.Error("axes must be int64");
  return Int64s(*axes);
}

absl::Status InferSqueeze(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 2);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  bool given, known;
  absl::StatusOr<std::vector<int64_t>> axes = AxesOf(ctx, given, known);
  if (!axes.ok()) return axes.status();
  const ValueType& in = ctx.input(0);
  if (known && in.dims) {
    const int64_t rank = in.rank();
    std::vector<bool> drop(size_t(rank), false);
    for (int64_t a : *axes) {
      absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, a, rank, "axis");
      if (!axis.ok()) return axis.status();
      const Dim& d = (*in.dims)[size_t(*axis)];
      if (d.known() && d.value != 1)
        return ctx.Error(absl::StrCat("cannot squeeze axis ", a, " of ", in.ToString(), ": its size is ", d.value));
      drop[size_t(*axis)] = true;
    }
    out.dims.emplace();
    for (int64_t k = 0; k < rank; ++k) {
      const Dim& d = (*in.dims)[size_t(k)];
      if (!given && !d.known()) {
        out.dims.reset();  // which dims are 1 is not known yet
        break;
      }
      if (given ? drop[size_t(k)] : d.value == 1) continue;
      out.dims->push_back(d);
    }
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

absl::Status InferUnsqueeze(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 2);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  bool given, known;
  absl::StatusOr<std::vector<int64_t>> axes = AxesOf(ctx, given, known);
  if (!axes.ok()) return axes.status();
  if (known && !given) return ctx.Error("axes are required");
  const ValueType& in = ctx.input(0);
  if (known && in.dims) {
    const int64_t rank = in.rank() + int64_t(axes->size());
    std::vector<bool> inserted(size_t(rank), false);
    for (int64_t a : *axes) {
      absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, a, rank, "axis");
      if (!axis.ok()) return axis.status();
      if (inserted[size_t(*axis)]) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
      inserted[size_t(*axis)] = true;
    }
    out.dims.emplace();
    size_t next = 0;
    for (int64_t k = 0; k < rank; ++k) out.dims->push_back(inserted[size_t(k)] ? Dim::Known(1) : (*in.dims)[next++]);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

// ---- Gather ----

absl::Status InferGather(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 2, 2);
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<DType> itype = InputDType(ctx, 1);
  if (!itype.ok()) return itype.status();
  if (*itype != DType::kInt32 && *itype != DType::kInt64)
    return ctx.Error(absl::StrCat("indices must be int32 or int64, got ", LowerName(*itype)));
  ValueType out;
  out.dtype = *dtype;
  const ValueType& data = ctx.input(0);
  const ValueType& indices = ctx.input(1);
  if (data.dims && indices.dims) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, ctx.node().attr_int("axis", 0), data.rank(), "axis");
    if (!axis.ok()) return axis.status();
    out.dims.emplace();
    for (int64_t k = 0; k < *axis; ++k) out.dims->push_back((*data.dims)[size_t(k)]);
    for (const Dim& d : *indices.dims) out.dims->push_back(d);
    for (int64_t k = *axis + 1; k < data.rank(); ++k) out.dims->push_back((*data.dims)[size_t(k)]);
    const Dim& n = (*data.dims)[size_t(*axis)];
    if (const Tensor* idx = ctx.value(1); idx && n.known())
      for (int64_t v : Int64s(*idx))
        if (v < -n.value || v >= n.value)
          return ctx.Error(absl::StrCat("index ", v, " is out of range for axis ", *axis, " of size ", n.value));
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class GatherKernel : public OpKernel {
 public:
  explicit GatherKernel(const KernelInfo& info) : axis_(info.node.attr_int("axis", 0)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const std::vector<int64_t> indices = Int64s(*ctx.input(1));
    Tensor& out = ctx.output(0);
    const int64_t axis = axis_ < 0 ? axis_ + data.rank() : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
    for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
    const int64_t n = data.dim(axis), count = int64_t(indices.size());
    VisitMovable(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < count; ++k) {
          const int64_t idx = indices[size_t(k)] < 0 ? indices[size_t(k)] + n : indices[size_t(k)];
          for (int64_t e = 0; e < inner; ++e) dst[(o * count + k) * inner + e] = src[(o * n + idx) * inner + e];
        }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

// ---- Slice ----

struct SliceRange {
  std::vector<int64_t> start, step, count;  // per dim of the input
};

absl::StatusOr<SliceRange> ResolveSlice(const InferContext& ctx, const Shape& shape) {
  const int64_t rank = int64_t(shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.node().attr_ints("starts");
    ends = ctx.node().attr_ints("ends");
    axes = ctx.node().attr_ints("axes");
  } else {
    starts = Int64s(*ctx.value(1));
    ends = Int64s(*ctx.value(2));
    if (ctx.has_input(3)) axes = Int64s(*ctx.value(3));
    if (ctx.has_input(4)) steps = Int64s(*ctx.value(4));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return ctx.Error(absl::StrCat("starts, ends, axes and steps must have the same length, got ", starts.size(), ", ",
                                  ends.size(), ", ", axes.size(), ", ", steps.size()));
  SliceRange r;
  r.start.assign(size_t(rank), 0);
  r.step.assign(size_t(rank), 1);
  r.count = shape;
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, axes[i], rank, "axis");
    if (!axis.ok()) return axis.status();
    if (seen[size_t(*axis)]) return ctx.Error(absl::StrCat("axis ", axes[i], " is repeated"));
    seen[size_t(*axis)] = true;
    const int64_t dim = shape[size_t(*axis)], step = steps[i];
    if (step == 0) return ctx.Error("steps must not be 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      start = clamp(start, 0, dim);
      end = clamp(end, 0, dim);
      r.count[size_t(*axis)] = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = clamp(start, 0, dim - 1);
      end = clamp(end, -1, dim - 1);
      r.count[size_t(*axis)] = start > end ? (start - end - step - 1) / -step : 0;
    }
    r.start[size_t(*axis)] = start;
    r.step[size_t(*axis)] = step;
  }
  return r;
}

absl::Status InferSlice(InferContext& ctx) {
  absl::Status s = ctx.opset() < 10 ? CheckArity(ctx, 1, 1) : CheckArity(ctx, 3, 5);
  if (!s.ok()) return s;
  absl::StatusOr<DType> dtype = InputDType(ctx, 0);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  bool values_known = true;
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.value(i) == nullptr) values_known = false;
  const std::optional<Shape> shape = ctx.input(0).concrete_shape();
  if (values_known && shape) {
    absl::StatusOr<SliceRange> r = ResolveSlice(ctx, *shape);
    if (!r.ok()) return r.status();
    out = ValueType::Of(*dtype, r->count);
  } else if (ctx.input(0).dims) {
    out.dims = std::vector<Dim>(ctx.input(0).dims->size());
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class SliceKernel : public OpKernel {
 public:
  explicit SliceKernel(const KernelInfo& info) : node_(info.node) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    std::vector<const ValueType*> types;
    std::vector<const Tensor*> values;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      types.push_back(nullptr);
      values.push_back(ctx.input(i));
    }
    ValueType in_type = ValueType::Of(in.dtype(), in.shape());
    types[0] = &in_type;
    std::vector<ValueType> others(ctx.num_inputs());
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.input(i)) {
        others[i] = ValueType::Of(ctx.input(i)->dtype(), ctx.input(i)->shape());
        types[i] = &others[i];
      }
    InferContext ictx(node_, types, values);
    absl::StatusOr<SliceRange> r = ResolveSlice(ictx, in.shape());
    if (!r.ok()) return r.status();
    Tensor& out = ctx.output(0);
    const int64_t rank = in.rank();
    std::vector<int64_t> in_strides(size_t(rank), 1);
    for (int64_t d = rank - 2; d >= 0; --d) in_strides[size_t(d)] = in_strides[size_t(d + 1)] * in.dim(d + 1);
    int64_t base = 0;
    std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
    for (int64_t d = 0; d < rank; ++d) {
      base += r->start[size_t(d)] * in_strides[size_t(d)];
      strides[size_t(d)] = r->step[size_t(d)] * in_strides[size_t(d)];
    }
    const std::vector<int64_t> zero(size_t(rank), 0);
    VisitMovable(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>() + base;
      T* dst = out.data<T>();
      ForEachBroadcast(out.shape(), strides, zero, ctx.threads(), [&](int64_t o, int64_t i, int64_t) { dst[o] = src[i]; });
    });
    return absl::OkStatus();
  }

 private:
  const Node& node_;
};

// ---- Range ----

absl::Status InferRange(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 3, 3);
  if (!dtype.ok()) return dtype.status();
  for (size_t i = 1; i < 3; ++i) {
    absl::StatusOr<DType> t = InputDType(ctx, i);
    if (!t.ok()) return t.status();
    if (*t != *dtype) return ctx.Error("start, limit and delta must have the same type");
  }
  ValueType out;
  out.dtype = *dtype;
  out.dims = std::vector<Dim>(1);
  if (ctx.value(0) && ctx.value(1) && ctx.value(2)) {
    for (size_t i = 0; i < 3; ++i)
      if (ctx.value(i)->size() != 1) return ctx.Error("start, limit and delta must be scalars");
    const double start = GetDouble(*ctx.value(0), 0), limit = GetDouble(*ctx.value(1), 0),
                 delta = GetDouble(*ctx.value(2), 0);
    if (delta == 0) return ctx.Error("delta must not be 0");
    const double n = std::ceil((limit - start) / delta);
    if (!(n < 1e12)) return ctx.Error(absl::StrCat("range of ", n, " elements is too large"));
    (*out.dims)[0] = Dim::Known(std::max<int64_t>(0, int64_t(n)));
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class RangeKernel : public OpKernel {
 public:
  explicit RangeKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    VisitDType(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int16_t> ||
                    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
        const T start = ctx.input(0)->data<T>()[0], delta = ctx.input(2)->data<T>()[0];
        for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = T(start + T(i) * delta);
      } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        // Range-27: 16-bit values step in float and round each element.
        const float start = Widen(ctx.input(0)->data<T>()[0]), delta = Widen(ctx.input(2)->data<T>()[0]);
        for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = Narrow<T>(start + float(i) * delta);
      }
    });
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateRange(const KernelInfo& info) {
  const bool half = OneOf(info.inputs[0]->dtype, {DType::kFloat16, DType::kBFloat16}) && info.node.opset >= 27;
  if (!half && !OneOf(info.inputs[0]->dtype, {DType::kFloat, DType::kDouble, DType::kInt16, DType::kInt32, DType::kInt64}))
    return NotImplemented(info.node, info.inputs[0]->dtype);
  return MakeKernel<RangeKernel>(info);
}

// ---- ConstantOfShape ----

Tensor FillValue(const Node& node) {
  const Attribute* value = node.attr("value");
  if (value && value->t.defined() && value->t.size() == 1) return value->t;
  return Tensor::FromVector<float>({0.0f}, {1});
}

absl::Status InferConstantOfShape(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 1);
  if (!dtype.ok()) return dtype.status();
  if (*dtype != DType::kInt64) return ctx.Error(absl::StrCat("the shape input must be int64, got ", LowerName(*dtype)));
  const Attribute* value = ctx.node().attr("value");
  if (value && (!value->t.defined() || value->t.size() != 1))
    return ctx.Error("attribute 'value' must be a one-element tensor");
  ValueType out;
  out.dtype = FillValue(ctx.node()).dtype();
  if (const Tensor* shape = ctx.value(0)) {
    if (shape->rank() != 1) return ctx.Error("the shape input must be 1-D");
    Shape dims = Int64s(*shape);
    for (int64_t d : dims)
      if (d < 0) return ctx.Error(absl::StrCat("shape entries must be >= 0, got ", ShapeToString(dims)));
    out = ValueType::Of(out.dtype, dims);
  } else if (ctx.input(0).dims && ctx.input(0).rank() == 1 && (*ctx.input(0).dims)[0].known()) {
    out.dims = std::vector<Dim>(size_t((*ctx.input(0).dims)[0].value));
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class ConstantOfShapeKernel : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInfo& info) : value_(FillValue(info.node)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    VisitMovable(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = value_.data<T>()[0];
      for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = v;
    });
    return absl::OkStatus();
  }

 private:
  Tensor value_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateConstantOfShape(const KernelInfo& info) {
  if (!Movable(FillValue(info.node).dtype())) return NotImplemented(info.node, FillValue(info.node).dtype());
  return MakeKernel<ConstantOfShapeKernel>(info);
}

// ---- Pad ----

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct PadPlan {
  std::vector<int64_t> before, after;  // per input dim; negative crops
};

absl::StatusOr<PadPlan> ResolvePads(const InferContext& ctx, int64_t rank) {
  std::vector<int64_t> pads, axes;
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints("pads");
  } else {
    pads = Int64s(*ctx.value(1));
    if (ctx.has_input(3)) axes = Int64s(*ctx.value(3));
  }
  if (axes.empty())
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  if (pads.size() != 2 * axes.size())
    return ctx.Error(absl::StrCat("pads has ", pads.size(), " entries, expected ", 2 * axes.size()));
  PadPlan plan{std::vector<int64_t>(size_t(rank), 0), std::vector<int64_t>(size_t(rank), 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, axes[i], rank, "axis");
    if (!axis.ok()) return axis.status();
    plan.before[size_t(*axis)] = pads[i];
    plan.after[size_t(*axis)] = pads[i + axes.size()];
  }
  return plan;
}

absl::Status InferPad(InferContext& ctx) {
  absl::Status s = ctx.opset() < 11 ? CheckArity(ctx, 1, 1) : CheckArity(ctx, 2, 4);
  if (!s.ok()) return s;
  absl::StatusOr<DType> dtype = InputDType(ctx, 0);
  if (!dtype.ok()) return dtype.status();
  const std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.Error(absl::StrCat("mode '", mode, "' is not constant, reflect, edge or wrap"));
  ValueType out;
  out.dtype = *dtype;
  const std::optional<Shape> shape = ctx.input(0).concrete_shape();
  bool known = ctx.opset() < 11 || (ctx.value(1) && (!ctx.has_input(3) || ctx.value(3)));
  if (shape && known) {
    absl::StatusOr<PadPlan> plan = ResolvePads(ctx, int64_t(shape->size()));
    if (!plan.ok()) return plan.status();
    Shape dims = *shape;
    for (size_t k = 0; k < dims.size(); ++k) {
      dims[k] += plan->before[k] + plan->after[k];
      if (dims[k] < 0) return ctx.Error(absl::StrCat("pads crop dim ", k, " of ", ShapeToString(*shape), " below 0"));
      if (mode != "constant" && (*shape)[k] == 0 && dims[k] > 0)
        return ctx.Error(absl::StrCat("cannot ", mode, "-pad the empty dim ", k));
    }
    out = ValueType::Of(*dtype, dims);
  } else if (ctx.input(0).dims) {
    out.dims = std::vector<Dim>(ctx.input(0).dims->size());
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class PadKernel : public OpKernel {
 public:
  explicit PadKernel(const KernelInfo& info) : node_(info.node) {
    const std::string mode = info.node.attr_string("mode", "constant");
    mode_ = mode == "reflect" ? PadMode::kReflect : mode == "edge" ? PadMode::kEdge
          : mode == "wrap" ? PadMode::kWrap : PadMode::kConstant;
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    std::vector<ValueType> types(ctx.num_inputs());
    std::vector<const ValueType*> type_ptrs;
    std::vector<const Tensor*> values;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      values.push_back(ctx.input(i));
      if (ctx.input(i)) types[i] = ValueType::Of(ctx.input(i)->dtype(), ctx.input(i)->shape());
      type_ptrs.push_back(ctx.input(i) ? &types[i] : nullptr);
    }
    InferContext ictx(node_, type_ptrs, values);
    absl::StatusOr<PadPlan> plan = ResolvePads(ictx, in.rank());
    if (!plan.ok()) return plan.status();
    Tensor& out = ctx.output(0);
    const int64_t rank = in.rank();
    const Tensor* constant = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    const float legacy_value = node_.attr_float("value", 0);
    VisitMovable(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T fill{};
      if (constant && constant->size() > 0) fill = constant->data<T>()[0];
      else if constexpr (std::is_arithmetic_v<T>) fill = T(legacy_value);
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      
      for (int64_t o = 0; o < out.size(); ++o) {
        int64_t rem = o, from = 0, stride = 1;
        bool inside = true;
        for (int64_t d = rank - 1; d >= 0; --d) {
          const int64_t n = in.dim(d);
          int64_t i = rem % out.dim(d) - plan->before[size_t(d)];
          rem /= out.dim(d);
          if (i < 0 || i >= n) {
            switch (mode_) {
              case PadMode::kConstant: inside = false; break;
              case PadMode::kEdge: i = i < 0 ? 0 : n - 1; break;
              case PadMode::kWrap: i = ((i % n) + n) % n; break;
              case PadMode::kReflect: {
                const int64_t period = 2 * (n - 1);
                if (period == 0) {
                  i = 0;
                } else {
                  i = ((i % period) + period) % period;
                  if (i >= n) i = period - i;
                }
                break;
              }
            }
          }
          from += i * stride;
          stride *= n;
        }
        dst[o] = inside ? src[from] : fill;
      }
    });
    return absl::OkStatus();
  }

 private:
  const Node& node_;
  PadMode mode_;
};

// ---- Trilu ----

absl::Status InferTrilu(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 2);
  if (!dtype.ok()) return dtype.status();
  if (ctx.input(0).dims && ctx.input(0).rank() < 2) return ctx.Error("the input must have rank >= 2");
  ctx.set_output(0, ctx.input(0));
  return absl::OkStatus();
}

class TriluKernel : public OpKernel {
 public:
  explicit TriluKernel(const KernelInfo& info) : upper_(info.node.attr_int("upper", 1) != 0) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    const int64_t k = ctx.num_inputs() > 1 && ctx.input(1) ? Int64s(*ctx.input(1))[0] : 0;
    Tensor& out = ctx.output(0);
    const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
    VisitMovable(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < in.size(); ++i) {
        const int64_t c = i % cols, r = (i / cols) % rows;
        const bool keep = upper_ ? c - r >= k : c - r <= k;
        out.data<T>()[i] = keep ? in.data<T>()[i] : T{};
      }
    });
    return absl::OkStatus();
  }

 private:
  bool upper_;
};

// ---- Split ----

// The sizes of the pieces along the axis: the `split` input (13+) or
// attribute, else num_outputs (18+) or the output count, as even as possible.
absl::StatusOr<std::vector<int64_t>> SplitSizes(const InferContext& ctx, int64_t dim, bool& known) {
  known = true;
  std::vector<int64_t> sizes;
  if (ctx.opset() >= 13 && ctx.has_input(1)) {
    const Tensor* t = ctx.value(1);
    if (!t) {
      known = false;
      return sizes;
    }
    sizes = Int64s(*t);
  } else if (ctx.opset() < 13 && ctx.node().attr("split")) {
    sizes = ctx.node().attr_ints("split");
  }
  const int64_t outputs = int64_t(ctx.num_outputs());
  if (!sizes.empty()) {
    int64_t total = 0;
    for (int64_t v : sizes) {
      if (v < 0) return ctx.Error(absl::StrCat("split sizes must be >= 0, got ", v));
      total += v;
    }
    if (int64_t(sizes.size()) != outputs || total != dim)
      return ctx.Error(absl::StrCat("split sizes sum to ", total, " in ", sizes.size(), " parts; the axis has ", dim,
                                    " and the node ", outputs, " outputs"));
    return sizes;
  }
  const int64_t parts = ctx.node().attr_int("num_outputs", outputs);
  if (parts != outputs || parts <= 0)
    return ctx.Error(absl::StrCat("num_outputs ", parts, " does not match the ", outputs, " outputs"));
  const int64_t chunk = (dim + parts - 1) / parts;  // the last part may be smaller
  for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  return sizes;
}

absl::Status InferSplit(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, 2, 1, 1 << 16);
  if (!dtype.ok()) return dtype.status();
  const ValueType& in = ctx.input(0);
  std::vector<ValueType> outs(ctx.num_outputs());
  for (ValueType& o : outs) o.dtype = *dtype;
  if (in.dims) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(ctx, ctx.node().attr_int("axis", 0), in.rank(), "axis");
    if (!axis.ok()) return axis.status();
    const Dim& d = (*in.dims)[size_t(*axis)];
    bool known = d.known();
    absl::StatusOr<std::vector<int64_t>> sizes = known ? SplitSizes(ctx, d.value, known) : std::vector<int64_t>{};
    if (!sizes.ok()) return sizes.status();
    for (size_t i = 0; i < outs.size(); ++i) {
      outs[i].dims = *in.dims;
      (*outs[i].dims)[size_t(*axis)] = known ? Dim::Known((*sizes)[i]) : Dim{};
    }
  }
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, outs[i]);
  return absl::OkStatus();
}

class SplitKernel : public OpKernel {
 public:
  explicit SplitKernel(const KernelInfo& info) : axis_(info.node.attr_int("axis", 0)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    const int64_t axis = axis_ < 0 ? axis_ + in.rank() : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int64_t d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    const int64_t in_row = in.dim(axis) * inner;
    VisitMovable(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      int64_t offset = 0;
      for (size_t i = 0; i < ctx.num_outputs(); ++i) {
        const int64_t row = ctx.output_shape(i)[size_t(axis)] * inner;
        if (ctx.output_requested(i)) {
          T* dst = ctx.output(i).data<T>();
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t e = 0; e < row; ++e) dst[o * row + e] = in.data<T>()[o * in_row + offset + e];
        }
        offset += row;
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

template <class K>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateMovable(const KernelInfo& info) {
  return RequireMovable(info, MakeKernel<K>);
}

}  // namespace

std::vector<OpDef> MovementOps() {
  return {
      {"", "Concat", 4, 0, InferConcat, CreateMovable<ConcatKernel>},
      {"", "Expand", 8, 0, InferExpand, CreateMovable<ExpandKernel>},
      {"", "Squeeze", 1, 0, InferSqueeze, MakeKernel<ViewKernel>},
      {"", "Unsqueeze", 1, 0, InferUnsqueeze, MakeKernel<ViewKernel>},
      {"", "Gather", 1, 0, InferGather, CreateMovable<GatherKernel>},
      {"", "Slice", 1, 0, InferSlice, CreateMovable<SliceKernel>},
      {"", "Range", 11, 0, InferRange, CreateRange},
      {"", "ConstantOfShape", 9, 0, InferConstantOfShape, CreateConstantOfShape},
      {"", "Pad", 2, 0, InferPad, CreateMovable<PadKernel>},
      {"", "Trilu", 14, 0, InferTrilu, CreateMovable<TriluKernel>},
      {"", "Split", 2, 0, InferSplit, CreateMovable<SplitKernel>},
  };
}

}  // namespace onnx_mini
