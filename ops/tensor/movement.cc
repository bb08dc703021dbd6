// Ops that select, repeat or rearrange elements: Concat, Expand, Gather,
// Slice, Pad, Trilu, Split; and ops that make tensors from shapes or scalars:
// Range, ConstantOfShape. All work on any non-packed element type.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/common.h"
#include "kernels/copy/copy.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"
#include "runtime/symbolic_dim.h"

namespace onnx_mini {
namespace {

using MovableTypes = UnpackedTypes;
constexpr TypeSet kMovable = kUnpackedTypes;

// A normalized axis, for kernels that work along one.
struct AxisPlan : OpPlan {
  int64_t axis = 0;
};

std::shared_ptr<AxisPlan> MakeAxisPlan(int64_t axis) {
  auto plan = std::make_shared<AxisPlan>();
  plan->axis = axis;
  return plan;
}


// ---- Concat ----

class ConcatOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    // Concat-1 defaults axis to 1; from opset 4 it is required.
    if (node.attr("axis") == nullptr && node.opset >= 4) return AttributeError(node, "attribute 'axis' is required");
    return std::unique_ptr<Op>(new ConcatOp(node.attr_int("axis", 1)));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    bool ranked = true;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) ranked = ranked && ctx.input(i).dims.has_value();
    if (ranked) {
      const int64_t rank = ctx.input(0).rank();
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, rank, "axis"));
      std::vector<Dim> dims = *ctx.input(0).dims;
      int64_t total = 0;
      bool known = true;
      Dim sum = Dim::Known(0);  // the axis as a sum of symbols (a KV cache's past + seq)
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const std::vector<Dim>& d = *ctx.input(i).dims;
        if (int64_t(d.size()) != rank)
          return ctx.Error(absl::StrCat("input ", i, " has rank ", d.size(), ", input 0 has rank ", rank));
        for (int64_t k = 0; k < rank; ++k) {
          if (k == axis) continue;
          if (d[size_t(k)].known() && dims[size_t(k)].known() && d[size_t(k)].value != dims[size_t(k)].value)
            return ctx.Error(absl::StrCat("input ", i, " ", ctx.input(i).ToString(), " differs from input 0 ",
                                          ctx.input(0).ToString(), " at dim ", k));
          if (!dims[size_t(k)].known()) dims[size_t(k)] = d[size_t(k)];
        }
        sum = AddDims(sum, d[size_t(axis)]);
        if (!d[size_t(axis)].known()) known = false;
        else if (std::optional<int64_t> sum = CheckedAdd(total, d[size_t(axis)].value)) total = *sum;
        else return ctx.Error(absl::StrCat("the concatenated axis ", axis, " overflows"));
      }
      dims[size_t(axis)] = known ? Dim::Known(total) : sum;
      out.dims = dims;
      ctx.set_plan(MakeAxisPlan(axis));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();  // no loop over the extent of an empty dim
    const int64_t axis = ctx.plan<AxisPlan>().axis;
    const int64_t outer = ShapeProduct(out.shape(), 0, axis), inner = ShapeProduct(out.shape(), axis + 1, out.rank());
    const int64_t out_row = out.dim(axis) * inner;
    // Each input is a block of rows [outer, row] placed at `offset` in the output's rows.
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& in = *ctx.input(i);
      const int64_t row = in.dim(axis) * inner;
      RETURN_IF_ERROR(CopyStrided(out.dtype(), {outer, row}, in.raw(), {row, 1},
                                  ElementAt(out.dtype(), out.raw(), offset), {out_row, 1}, ctx.threads()));
      offset += row;
    }
    return absl::OkStatus();
  }

 private:
  explicit ConcatOp(int64_t axis) : axis_(axis) {}
  int64_t axis_;
};

// ---- Expand ----

class ExpandOp : public Op {
 public:
  explicit ExpandOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const Tensor* shape = ctx.value(1);
    if (shape && ctx.input(0).dims) {
      if (shape->rank() != 1) return ctx.Error("the shape input must be 1-D");
      if (shape->size() > kMaxRank)
        return ctx.Error(absl::StrCat("the shape input has ", shape->size(), " entries; the most is ", kMaxRank));
      std::vector<Dim> target;
      for (int64_t v : IndexValues(*shape)) {
        if (v < 0) return ctx.Error(absl::StrCat("shape entries must be >= 0, got ", v));
        target.push_back(Dim::Known(v));
      }
      ASSIGN_OR_RETURN(out.dims, BroadcastDims(ctx, *ctx.input(0).dims, target));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    return CopyStrided(out.dtype(), out.shape(), in.raw(), BroadcastStrides(in.shape(), out.shape()), out.raw(), {},
                       ctx.threads());
  }
};

// ---- Gather ----

class GatherOp : public Op {
 public:
  explicit GatherOp(const Node& node) : axis_(node.attr_int("axis", 0)) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const ValueType& data = ctx.input(0);
    const ValueType& indices = ctx.input(1);
    if (data.dims) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, data.rank(), "axis"));
      ctx.set_plan(MakeAxisPlan(axis));
      if (indices.dims) {
        out.dims.emplace();
        for (int64_t k = 0; k < axis; ++k) out.dims->push_back((*data.dims)[size_t(k)]);
        for (const Dim& d : *indices.dims) out.dims->push_back(d);
        for (int64_t k = axis + 1; k < data.rank(); ++k) out.dims->push_back((*data.dims)[size_t(k)]);
      }
      // Indices are checked here, once their values are known (at creation
      // for constants, else at each run), so the kernel reads in range.
      const Dim& n = (*data.dims)[size_t(axis)];
      if (const Tensor* idx = ctx.value(1); idx && n.known())
        for (int64_t v : IndexValues(*idx))
          if (v < -n.value || v >= n.value)
            return ctx.Error(absl::StrCat("index ", v, " is out of range for axis ", axis, " of size ", n.value));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();  // no loop over the extent of an empty dim
    const std::vector<int64_t> indices = IndexValues(*ctx.input(1));
    const int64_t axis = ctx.plan<AxisPlan>().axis;
    const int64_t outer = ShapeProduct(data.shape(), 0, axis), inner = ShapeProduct(data.shape(), axis + 1, data.rank());
    const int64_t n = data.dim(axis), count = int64_t(indices.size());
    return Dispatch<MovableTypes>(ctx, data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < count; ++k) {
          const int64_t idx = indices[size_t(k)] < 0 ? indices[size_t(k)] + n : indices[size_t(k)];
          // A run of `inner` elements (memmove for all but strings).
          std::copy_n(src + (o * n + idx) * inner, inner, dst + (o * count + k) * inner);
        }
    });
  }

 private:
  int64_t axis_;
};

// ---- Slice ----

// Where the slice starts in the input and how it steps through it, in elements.
struct SlicePlan : OpPlan {
  int64_t base = 0;
  std::vector<int64_t> strides;  // per output dim
};

class SliceOp : public Op {
 public:
  // Slice-1..9 takes starts, ends and axes as attributes; 10+ as inputs.
  explicit SliceOp(const Node& node)
      : legacy_(node.opset < 10), starts_(node.attr_ints("starts")), ends_(node.attr_ints("ends")),
        axes_(node.attr_ints("axes")) {}

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    bool values_known = true;
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && ctx.value(i) == nullptr) values_known = false;
    const std::optional<Shape> shape = ctx.input(0).concrete_shape();
    if (values_known && shape) {
      auto plan = std::make_shared<SlicePlan>();
      ASSIGN_OR_RETURN(Shape counts, Resolve(ctx, *shape, *plan));
      out = ValueType::Of(out.dtype, counts);
      ctx.set_plan(std::move(plan));
    } else if (ctx.input(0).dims) {
      out.dims = std::vector<Dim>(ctx.input(0).dims->size());
      // Known parameters over a partly known shape: an axis not sliced keeps
      // its dim (a symbol too), a sliced one of known length gets its count
      // (the rewrites read these shapes).
      if (values_known) {
        const std::vector<Dim>& in = *ctx.input(0).dims;
        Shape probe(in.size());
        for (size_t i = 0; i < in.size(); ++i) probe[i] = in[i].known() ? in[i].value : 0;
        SlicePlan scratch;
        const absl::StatusOr<Shape> counts = Resolve(ctx, probe, scratch);
        std::vector<int64_t> axes = legacy_ ? axes_ : std::vector<int64_t>{};
        if (!legacy_ && ctx.has_input(3)) axes = IndexValues(*ctx.value(3));
        const size_t n = legacy_ ? starts_.size() : size_t(ctx.value(1)->size());
        if (axes.empty())
          for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
        if (counts.ok()) {
          std::vector<bool> sliced(in.size(), false);
          for (int64_t a : axes) sliced[size_t(a < 0 ? a + int64_t(in.size()) : a)] = true;  // Resolve checked them
          for (size_t i = 0; i < in.size(); ++i)
            (*out.dims)[i] = !sliced[i] ? in[i] : in[i].known() ? Dim::Known((*counts)[i]) : Dim{};
        }
      } else if (!legacy_) {
        EndsReadFromShapes(ctx, *out.dims);
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  // Known starts, axes and steps with ends read from shapes (TorchScript's
  // bias[..., :k.size(-2)]): an axis not sliced keeps its dim, one sliced
  // from 0 by 1 up to its own dim (the same symbol or value) keeps it too;
  // the others are unknown. Bad parameters are left to the run to report.
  static void EndsReadFromShapes(const InferContext& ctx, std::vector<Dim>& out) {
    const std::vector<Dim>& in = *ctx.input(0).dims;
    const std::vector<Dim>* ends = ctx.dims_value(2);
    const Tensor* st = ctx.value(1);
    const Tensor* ax = ctx.has_input(3) ? ctx.value(3) : nullptr;
    const Tensor* sp = ctx.has_input(4) ? ctx.value(4) : nullptr;
    if (!ends || !st || (ctx.has_input(3) && !ax) || (ctx.has_input(4) && !sp)) return;
    const std::vector<int64_t> starts = IndexValues(*st);
    std::vector<int64_t> axes = ax ? IndexValues(*ax) : std::vector<int64_t>{};
    if (!ax)
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    const std::vector<int64_t> steps = sp ? IndexValues(*sp) : std::vector<int64_t>(starts.size(), 1);
    const int64_t rank = int64_t(in.size());
    if (ends->size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return;
    std::vector<int> entry(in.size(), -1);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (a < 0 || a >= rank || entry[size_t(a)] >= 0) return;
      entry[size_t(a)] = int(i);
    }
    for (size_t d = 0; d < in.size(); ++d) {
      if (entry[d] < 0) {
        out[d] = in[d];
        continue;
      }
      const size_t i = size_t(entry[d]);
      const Dim& e = (*ends)[i];
      const bool whole = starts[i] == 0 && steps[i] == 1 &&
                         ((e.known() && in[d].known() && e.value == in[d].value) ||
                          (!e.known() && !e.symbol.empty() && e.symbol == in[d].symbol));
      out[d] = whole ? in[d] : Dim{};
    }
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const SlicePlan& plan = ctx.plan<SlicePlan>();
    if (out.size() == 0) return absl::OkStatus();  // the plan's base is 0: nothing is read
    return CopyStrided(in.dtype(), out.shape(), ElementAt(in.dtype(), in.raw(), plan.base), plan.strides, out.raw(),
                       {}, ctx.threads());
  }

 private:
  // The output shape and the plan, from the input shape and the (known) parameters.
  absl::StatusOr<Shape> Resolve(const InferContext& ctx, const Shape& shape, SlicePlan& plan) const {
    const int64_t rank = int64_t(shape.size());
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (!legacy_) {
      starts = IndexValues(*ctx.value(1));
      ends = IndexValues(*ctx.value(2));
      axes.clear();
      if (ctx.has_input(3)) axes = IndexValues(*ctx.value(3));
      if (ctx.has_input(4)) steps = IndexValues(*ctx.value(4));
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      return ctx.Error(absl::StrCat("starts, ends, axes and steps must have the same length, got ", starts.size(),
                                    ", ", ends.size(), ", ", axes.size(), ", ", steps.size()));
    std::vector<int64_t> start(size_t(rank), 0), step(size_t(rank), 1);
    Shape count = shape;
    std::vector<bool> seen(size_t(rank), false);
    for (size_t i = 0; i < starts.size(); ++i) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axes[i], rank, "axis"));
      if (seen[size_t(axis)]) return ctx.Error(absl::StrCat("axis ", axes[i], " is repeated"));
      seen[size_t(axis)] = true;
      const int64_t dim = shape[size_t(axis)];
      // |step| beyond the dim takes one element at most: clamp it, so nothing overflows.
      const int64_t s = std::max(std::min(steps[i], dim + 1), -(dim + 1));
      if (s == 0) return ctx.Error("steps must not be 0");
      auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
      int64_t b = starts[i] < 0 ? clamp(starts[i], -dim, 0) + dim : starts[i];
      int64_t e = ends[i] < 0 ? clamp(ends[i], -dim - 1, 0) + dim : ends[i];
      int64_t n;
      if (s > 0) {
        b = clamp(b, 0, dim);
        e = clamp(e, 0, dim);
        n = e > b ? (e - b - 1) / s + 1 : 0;
      } else {
        b = clamp(b, 0, dim - 1);
        e = clamp(e, -1, dim - 1);
        n = b > e ? (b - e - 1) / -s + 1 : 0;
      }
      count[size_t(axis)] = n;
      start[size_t(axis)] = n > 0 ? b : 0;
      step[size_t(axis)] = s;
    }
    plan.base = 0;
    plan.strides.assign(size_t(rank), 0);
    if (ElementCount(count) == 0) return count;  // nothing is read
    // A non-empty output comes from a non-empty input: these products fit.
    const std::vector<int64_t> in_strides = RowMajorStrides(shape);
    for (int64_t d = 0; d < rank; ++d) {
      plan.base += start[size_t(d)] * in_strides[size_t(d)];
      plan.strides[size_t(d)] = step[size_t(d)] * in_strides[size_t(d)];
    }
    return count;
  }

  bool legacy_;
  std::vector<int64_t> starts_, ends_, axes_;
};

// ---- Range ----

// Range-11 computes in these types; Range-27 adds the 16-bit floats.
using RangeTypes = TypeList<float, double, int16_t, int32_t, int64_t, Float16, BFloat16>;
constexpr TypeSet kRange11Types = {DType::kFloat, DType::kDouble, DType::kInt16, DType::kInt32, DType::kInt64};

class RangeOp : public Op {
 public:
  explicit RangeOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    out.dims = std::vector<Dim>(1);
    const Tensor* start_t = ctx.value(0);
    const Tensor* limit_t = ctx.value(1);
    const Tensor* delta_t = ctx.value(2);
    if (start_t && limit_t && delta_t) {
      for (const Tensor* t : {start_t, limit_t, delta_t})
        if (t->size() != 1) return ctx.Error("start, limit and delta must be scalars");
      const double start = GetDouble(*start_t, 0), limit = GetDouble(*limit_t, 0), delta = GetDouble(*delta_t, 0);
      if (delta == 0) return ctx.Error("delta must not be 0");
      const double n = std::ceil((limit - start) / delta);
      if (!(n < 1e12)) return ctx.Error(absl::StrCat("a range of ", n, " elements is too large"));
      (*out.dims)[0] = Dim::Known(std::max<int64_t>(0, int64_t(n)));
    } else if (delta_t && delta_t->size() == 1 && GetDouble(*delta_t, 0) == 1) {
      // Bounds read from shapes (Range(past_len, past_len + seq_len)): limit - start, when that is a dim.
      const auto bound = [&](size_t i) -> Dim {
        if (const Tensor* t = ctx.value(i)) {
          const double v = t->size() == 1 ? GetDouble(*t, 0) : -1;
          return v >= 0 && v < 1e15 && v == std::floor(v) ? Dim::Known(int64_t(v)) : Dim{};
        }
        const std::vector<Dim>* d = ctx.dims_value(i);
        return d && d->size() == 1 ? (*d)[0] : Dim{};
      };
      (*out.dims)[0] = SubtractDims(bound(1), bound(0));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    return Dispatch<RangeTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) {
        // Integer steps wrap like the arithmetic ops (computed unsigned).
        const uint64_t start = uint64_t(ctx.input(0)->data<T>()[0]), delta = uint64_t(ctx.input(2)->data<T>()[0]);
        for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = T(start + uint64_t(i) * delta);
      } else {
        // 16-bit values step in float and round each element.
        using A = typename Arith<T>::type;
        const A start = Widen(ctx.input(0)->data<T>()[0]), delta = Widen(ctx.input(2)->data<T>()[0]);
        for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = Narrow<T>(A(start + A(i) * delta));
      }
    });
  }
};

// ---- ConstantOfShape ----

class ConstantOfShapeOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const Attribute* value = node.attr("value");
    if (value == nullptr) return std::unique_ptr<Op>(new ConstantOfShapeOp(Tensor::FromVector<float>({0.0f}, {1})));
    if (!value->t.defined() || value->t.size() != 1)
      return AttributeError(node, "attribute 'value' must be a one-element tensor");
    if (!kMovable.contains(value->t.dtype())) return NotImplemented(node, value->t.dtype());
    return std::unique_ptr<Op>(new ConstantOfShapeOp(value->t));
  }
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = value_.dtype();
    if (const Tensor* shape = ctx.value(0)) {
      if (shape->rank() != 1) return ctx.Error("the shape input must be 1-D");
      if (shape->size() > kMaxRank)
        return ctx.Error(absl::StrCat("the shape input has ", shape->size(), " entries; the most is ", kMaxRank));
      Shape dims = IndexValues(*shape);
      for (int64_t d : dims)
        if (d < 0) return ctx.Error(absl::StrCat("shape entries must be >= 0, got ", ShapeToString(dims)));
      out = ValueType::Of(out.dtype, dims);
    } else if (ctx.input(0).dims && ctx.input(0).rank() == 1 && (*ctx.input(0).dims)[0].known()) {
      const int64_t rank = (*ctx.input(0).dims)[0].value;
      if (rank > kMaxRank) return ctx.Error(absl::StrCat("the shape input has ", rank, " entries; the most is ", kMaxRank));
      out.dims = std::vector<Dim>(size_t(rank));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    return Dispatch<MovableTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = value_.data<T>()[0];
      for (int64_t i = 0; i < out.size(); ++i) out.data<T>()[i] = v;
    });
  }

 private:
  explicit ConstantOfShapeOp(Tensor value) : value_(std::move(value)) {}
  Tensor value_;
};

// ---- Pad ----

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct PadPlan : OpPlan {
  std::vector<int64_t> before;  // per input dim; negative crops
};

class PadOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string mode = node.attr_string("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
      return AttributeError(node, absl::StrCat("mode '", mode, "' is not constant, reflect, edge or wrap"));
    auto op = std::unique_ptr<PadOp>(new PadOp());
    op->mode_name_ = mode;
    op->mode_ = mode == "reflect" ? PadMode::kReflect : mode == "edge" ? PadMode::kEdge
              : mode == "wrap" ? PadMode::kWrap : PadMode::kConstant;
    op->legacy_ = node.opset < 11;
    op->pads_ = node.attr_ints(node.opset < 2 ? "paddings" : "pads");  // Pad-1 names them `paddings`
    op->legacy_value_ = node.attr_float("value", 0);
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const std::optional<Shape> shape = ctx.input(0).concrete_shape();
    const bool known = legacy_ || (ctx.value(1) && (!ctx.has_input(3) || ctx.value(3)));
    if (ctx.has_input(2) && ctx.input(2).dims && ctx.input(2).concrete_shape() &&
        ElementCount(*ctx.input(2).concrete_shape()) != 1)
      return ctx.Error(absl::StrCat("constant_value must have one element, got ", ctx.input(2).ToString()));
    if (shape && known) {
      const int64_t rank = int64_t(shape->size());
      std::vector<int64_t> pads = pads_, axes;
      if (!legacy_) {
        pads = IndexValues(*ctx.value(1));
        if (ctx.has_input(3)) axes = IndexValues(*ctx.value(3));
      }
      if (axes.empty())
        for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
      if (pads.size() != 2 * axes.size())
        return ctx.Error(absl::StrCat("pads has ", pads.size(), " entries, expected ", 2 * axes.size()));
      auto plan = std::make_shared<PadPlan>();
      plan->before.assign(size_t(rank), 0);
      std::vector<int64_t> after(size_t(rank), 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axes[i], rank, "axis"));
        plan->before[size_t(axis)] = pads[i];
        after[size_t(axis)] = pads[i + axes.size()];
      }
      Shape dims = *shape;
      for (size_t k = 0; k < dims.size(); ++k) {
        std::optional<int64_t> padded = CheckedAdd(dims[k], plan->before[k]);
        if (padded) padded = CheckedAdd(*padded, after[k]);
        if (!padded)
          return ctx.Error(absl::StrCat("pads ", plan->before[k], " and ", after[k], " of dim ", k, " of ",
                                        ShapeToString(*shape), " overflow"));
        dims[k] = *padded;
        if (dims[k] < 0) return ctx.Error(absl::StrCat("pads crop dim ", k, " of ", ShapeToString(*shape), " below 0"));
        if (mode_ != PadMode::kConstant && (*shape)[k] == 0 && dims[k] > 0)
          return ctx.Error(absl::StrCat("cannot ", mode_name_, "-pad the empty dim ", k));
      }
      out = ValueType::Of(out.dtype, dims);
      ctx.set_plan(std::move(plan));
    } else if (ctx.input(0).dims) {
      out.dims = std::vector<Dim>(ctx.input(0).dims->size());
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t>& before = ctx.plan<PadPlan>().before;
    const int64_t rank = in.rank();
    const Tensor* constant = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    absl::Status status;
    RETURN_IF_ERROR(Dispatch<MovableTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T fill{};
      if (constant) fill = constant->data<T>()[0];  // the same type as the data (Infer checked one element)
      else if constexpr (kIsArithmetic<T>) fill = Narrow<T>(typename Arith<T>::type(legacy_value_));
      if (mode_ == PadMode::kConstant) {
        status = PadConstant(ctx, in, out, before, &fill);
        return;
      }
      if (out.size() == 0) return;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      if (rank == 0) {
        dst[0] = src[0];
        return;
      }
      // Row by row along the last dim: the rows' source found once per row,
      // the kept middle of each row copied whole, only the pads mapped one by
      // one (per element, the mapping's divisions cost silero VAD's reflect
      // Pad of 1.7K elements ~40 us).
      const int64_t last = rank - 1, n = in.dim(last), width = out.dim(last), b = before[size_t(last)];
      const int64_t lo = std::clamp<int64_t>(b, 0, width), hi = std::clamp<int64_t>(n + b, lo, width);
      const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
      const int64_t rows = out.size() / width;
      ParallelFor(ctx.threads(), rows, WorkPerIndex{double(width)}, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t rem = r, from = 0;
          for (int64_t d = last - 1; d >= 0; --d) {
            from += MapPadIndex(rem % out.dim(d) - before[size_t(d)], in.dim(d)) * in_strides[size_t(d)];
            rem /= out.dim(d);
          }
          const T* row = src + from;
          T* to = dst + r * width;
          for (int64_t o = 0; o < lo; ++o) to[o] = row[MapPadIndex(o - b, n)];
          std::copy(row + (lo - b), row + (hi - b), to + lo);
          for (int64_t o = hi; o < width; ++o) to[o] = row[MapPadIndex(o - b, n)];
        }
      });
    }));
    return status;
  }

 private:
  // Constant mode: the output filled with `fill` (a broadcast copy of one
  // element), then the part of the input that the pads keep copied in.
  static absl::Status PadConstant(const KernelContext& ctx, const Tensor& in, Tensor& out,
                                  const std::vector<int64_t>& before, const void* fill) {
    if (out.size() == 0) return absl::OkStatus();
    const size_t rank = size_t(in.rank());
    RETURN_IF_ERROR(CopyStrided(out.dtype(), out.shape(), fill, std::vector<int64_t>(rank, 0), out.raw(), {},
                                ctx.threads()));
    if (in.size() == 0) return absl::OkStatus();
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape()), out_strides = RowMajorStrides(out.shape());
    Shape kept(rank);
    int64_t from = 0, to = 0;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in_start = std::max<int64_t>(0, -before[d]), out_start = std::max<int64_t>(0, before[d]);
      kept[d] = std::min(in.dim(int64_t(d)) - in_start, out.dim(int64_t(d)) - out_start);
      if (kept[d] <= 0) return absl::OkStatus();  // cropped away
      from += in_start * in_strides[d];
      to += out_start * out_strides[d];
    }
    return CopyStrided(in.dtype(), kept, ElementAt(in.dtype(), in.raw(), from), in_strides,
                       ElementAt(out.dtype(), out.raw(), to), out_strides, ctx.threads());
  }

  // The input index that output index i (in input coordinates) reads in a
  // non-constant mode, for an input dim of n > 0 elements.
  int64_t MapPadIndex(int64_t i, int64_t n) const {
    if (i >= 0 && i < n) return i;
    switch (mode_) {
      case PadMode::kEdge: return i < 0 ? 0 : n - 1;
      case PadMode::kWrap: return ((i % n) + n) % n;
      case PadMode::kReflect: {
        const int64_t period = 2 * (n - 1);
        if (period == 0) return 0;
        i = ((i % period) + period) % period;
        return i >= n ? period - i : i;
      }
      case PadMode::kConstant: break;
    }
    return i;
  }

  PadOp() = default;
  std::string mode_name_;
  PadMode mode_ = PadMode::kConstant;
  bool legacy_ = false;
  std::vector<int64_t> pads_;  // Pad-2..10
  float legacy_value_ = 0;     // Pad-2..10
};

// ---- Trilu ----

struct TriluPlan : OpPlan {
  int64_t k = 0;
};

class TriluOp : public Op {
 public:
  explicit TriluOp(const Node& node) : upper_(node.attr_int("upper", 1) != 0) {}
  absl::Status Infer(InferContext& ctx) const override {
    if (ctx.input(0).dims && ctx.input(0).rank() < 2) return ctx.Error("the input must have rank >= 2");
    auto plan = std::make_shared<TriluPlan>();
    if (ctx.has_input(1)) {
      const Tensor* k = ctx.value(1);
      if (k == nullptr) {  // known at run
        ctx.set_output(0, ctx.input(0));
        return absl::OkStatus();
      }
      if (k->size() != 1) return ctx.Error(absl::StrCat("k must hold one value, got shape ", ShapeToString(k->shape())));
      plan->k = k->data<int64_t>()[0];
    }
    ctx.set_plan(std::move(plan));
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    const int64_t k = ctx.plan<TriluPlan>().k;
    Tensor& out = ctx.output(0);
    const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
    return Dispatch<MovableTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < in.size(); ++i) {
        const int64_t c = i % cols, r = (i / cols) % rows;
        // c - r cannot overflow; compare without forming k + r.
        const bool keep = upper_ ? (c - r >= k) : (c - r <= k);
        out.data<T>()[i] = keep ? in.data<T>()[i] : T{};
      }
    });
  }

 private:
  bool upper_;
};

// ---- Split ----

class SplitOp : public Op {
 public:
  explicit SplitOp(const Node& node)
      : axis_(node.attr_int("axis", 0)), legacy_split_(node.opset < 13 ? node.attr_ints("split") : std::vector<int64_t>{}),
        num_outputs_(node.attr("num_outputs") ? std::optional<int64_t>(node.attr_int("num_outputs", 0)) : std::nullopt) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    std::vector<ValueType> outs(ctx.num_outputs());
    for (ValueType& o : outs) o.dtype = in.dtype;
    if (in.dims) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, in.rank(), "axis"));
      const Dim& d = (*in.dims)[size_t(axis)];
      bool known = d.known();
      std::vector<int64_t> sizes;
      if (known) {
        ASSIGN_OR_RETURN(sizes, Sizes(ctx, d.value, known));
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        outs[i].dims = *in.dims;
        (*outs[i].dims)[size_t(axis)] = known ? Dim::Known(sizes[i]) : Dim{};
      }
      ctx.set_plan(MakeAxisPlan(axis));
    }
    for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, outs[i]);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    if (in.size() == 0) return absl::OkStatus();  // every piece is empty too
    const int64_t axis = ctx.plan<AxisPlan>().axis;
    const int64_t outer = ShapeProduct(in.shape(), 0, axis), inner = ShapeProduct(in.shape(), axis + 1, in.rank());
    const int64_t in_row = in.dim(axis) * inner;
    // Output i is the block of rows [outer, row] at `offset` in the input's rows.
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      const int64_t row = ctx.output_shape(i)[size_t(axis)] * inner;
      if (ctx.output_requested(i))
        RETURN_IF_ERROR(CopyStrided(in.dtype(), {outer, row}, ElementAt(in.dtype(), in.raw(), offset), {in_row, 1},
                                    ctx.output(i).raw(), {row, 1}, ctx.threads()));
      offset += row;
    }
    return absl::OkStatus();
  }

 private:
  // The sizes of the pieces along the axis: the `split` input (13+) or
  // attribute, else num_outputs (18+) or the output count, as even as possible.
  absl::StatusOr<std::vector<int64_t>> Sizes(const InferContext& ctx, int64_t dim, bool& known) const {
    std::vector<int64_t> sizes = legacy_split_;
    // The sizes are an input from opset 13, and may be one in Split-1 (of the data's type).
    if ((ctx.opset() >= 13 || ctx.opset() == 1) && ctx.has_input(1)) {
      const Tensor* t = ctx.value(1);
      if (!t) {
        known = false;
        return sizes;
      }
      if (ctx.opset() >= 13) {
        sizes = IndexValues(*t);
      } else {
        sizes.clear();
        for (int64_t i = 0; i < t->size(); ++i) sizes.push_back(FloatToInt64(GetDouble(*t, i)));
      }
    }
    const int64_t outputs = int64_t(ctx.num_outputs());
    if (!sizes.empty()) {
      int64_t total = 0;
      for (int64_t v : sizes) {
        if (v < 0) return ctx.Error(absl::StrCat("split sizes must be >= 0, got ", v));
        std::optional<int64_t> sum = CheckedAdd(total, v);
        if (!sum) return ctx.Error("split sizes overflow");
        total = *sum;
      }
      if (int64_t(sizes.size()) != outputs || total != dim)
        return ctx.Error(absl::StrCat("split sizes sum to ", total, " in ", sizes.size(), " parts; the axis has ", dim,
                                      " and the node ", outputs, " outputs"));
      return sizes;
    }
    const int64_t parts = num_outputs_.value_or(outputs);
    if (parts != outputs || parts <= 0)
      return ctx.Error(absl::StrCat("num_outputs ", parts, " does not match the ", outputs, " outputs"));
    const int64_t chunk = dim / parts + (dim % parts != 0);  // the last part may be smaller
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    return sizes;
  }

  int64_t axis_;
  std::vector<int64_t> legacy_split_;
  std::optional<int64_t> num_outputs_;
};

}  // namespace

std::vector<OpDef> MovementOps() {
  const TypeConstraint movable = {"T", kMovable};
  const TypeConstraint int64 = {"I", kInt64};
  const TypeConstraint index = {"Tind", kIndexTypes};
  return {
      {kOnnxDomain, "Concat", Versions{1}, "T*", "T", {movable}, ConcatOp::Create},
      {kOnnxDomain, "Expand", Versions{8}, "T I", "T", {movable, int64}, MakeOp<ExpandOp>},
      {kOnnxDomain, "Gather", Versions{1}, "T Tind", "T", {movable, index}, MakeOp<GatherOp>},
      {kOnnxDomain, "Slice", Versions{1, 9}, "T", "T", {movable}, MakeOp<SliceOp>},
      {kOnnxDomain, "Slice", Versions{10}, "T Tind Tind Tind? Tind?", "T", {movable, index}, MakeOp<SliceOp>},
      {kOnnxDomain, "Range", Versions{11, 26}, "T T T", "T", {{"T", kRange11Types}}, MakeOp<RangeOp>},
      {kOnnxDomain, "Range", Versions{27}, "T T T", "T", {{"T", RangeTypes::set()}}, MakeOp<RangeOp>},
      {kOnnxDomain, "ConstantOfShape", Versions{9}, "I", "T", {int64, movable}, ConstantOfShapeOp::Create},
      {kOnnxDomain, "Pad", Versions{1, 10}, "T", "T", {movable}, PadOp::Create},
      {kOnnxDomain, "Pad", Versions{11}, "T I T? Tind?", "T", {movable, int64, index}, PadOp::Create},
      {kOnnxDomain, "Trilu", Versions{14}, "T I?", "T", {movable, int64}, MakeOp<TriluOp>},
      {kOnnxDomain, "Split", Versions{1, 1}, "T T?", "T*", {movable}, MakeOp<SplitOp>},
      {kOnnxDomain, "Split", Versions{2, 12}, "T", "T*", {movable}, MakeOp<SplitOp>},
      {kOnnxDomain, "Split", Versions{13}, "T I?", "T*", {movable, int64}, MakeOp<SplitOp>},
  };
}

}  // namespace onnx_mini
