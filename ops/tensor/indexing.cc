// Ops that read or write elements at positions that come from data:
// GatherElements, GatherND, ScatterElements (and the deprecated Scatter),
// ScatterND, OneHot, Compress, NonZero, Unique.
//
// Index inputs are data, not shapes: every index is checked when the kernel
// runs, before anything is read through it or written, and one out of range
// is an error naming the node, the value, where it is and the bound. Ops
// whose output size depends on values (Compress, NonZero, Unique, OneHot's
// depth) derive it in Infer from the values, which the session hands over at
// each run (or once, for constants).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {


// Index `v` checked against a dim of size n (valid: [-n, n-1]) and made
// non-negative; `where` says which index it is, `what` which dim.
absl::StatusOr<int64_t> CheckIndex(const KernelContext& ctx, int64_t v, int64_t n, const std::string& where,
                                   const std::string& what) {
  if (v >= -n && v < n) return v < 0 ? v + n : v;
  return ctx.Error(absl::StrCat("index ", v, " (", where, ") is out of range for ", what, " of size ", n,
                                n > 0 ? absl::StrCat(": valid are ", -n, " to ", n - 1) : ": it has no valid index"));
}

// Calls f(i, offset) for every element i of `shape` in row-major order, with
// offset = sum over d of coord[d] * strides[d]. Nothing for an empty shape.
template <class F>
void ForEachOffset(const Shape& shape, const std::vector<int64_t>& strides, F f) {
  const int64_t total = ElementCount(shape);
  if (total <= 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> coord(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, offset);
    for (size_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++coord[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      coord[d] = 0;
    }
  }
}

// The dims of `indices` (GatherElements, ScatterElements) against `data`:
// the same rank, and no larger than data's except along the axis.
absl::Status CheckElementwiseIndices(const InferContext& ctx, const ValueType& data, const ValueType& indices,
                                     int64_t axis) {
  if (!data.dims || !indices.dims) return absl::OkStatus();
  if (indices.rank() != data.rank())
    return ctx.Error(absl::StrCat("indices ", indices.ToString(), " must have the rank of data ", data.ToString()));
  for (int64_t d = 0; d < data.rank(); ++d) {
    const Dim& i = (*indices.dims)[size_t(d)];
    const Dim& n = (*data.dims)[size_t(d)];
    if (d != axis && i.known() && n.known() && i.value > n.value)
      return ctx.Error(absl::StrCat("indices ", indices.ToString(), " exceed data ", data.ToString(), " at dim ", d,
                                    " (only the axis ", axis, " may be longer)"));
  }
  return absl::OkStatus();
}

struct AxisPlan : OpPlan {
  int64_t axis = 0;
};

// The values of `indices` checked against a dim of size n along `axis`.
absl::StatusOr<std::vector<int64_t>> AxisIndices(const KernelContext& ctx, const Tensor& indices, int64_t n,
                                                 int64_t axis) {
  std::vector<int64_t> v = IndexValues(indices);
  for (size_t i = 0; i < v.size(); ++i) {
    ASSIGN_OR_RETURN(v[i], CheckIndex(ctx, v[i], n, absl::StrCat("indices element ", i), absl::StrCat("axis ", axis)));
  }
  return v;
}

// ---- GatherElements ----

class GatherElementsOp : public Op {
 public:
  explicit GatherElementsOp(const Node& node) : axis_(node.attr_int("axis", 0)) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& data = ctx.input(0);
    const ValueType& indices = ctx.input(1);
    ValueType out = indices;
    out.dtype = data.dtype;
    if (data.dims) {
      if (data.rank() < 1) return ctx.Error("data must have rank >= 1");
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, data.rank(), "axis"));
      RETURN_IF_ERROR(CheckElementwiseIndices(ctx, data, indices, axis));
      auto plan = std::make_shared<AxisPlan>();
      plan->axis = axis;
      ctx.set_plan(std::move(plan));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const int64_t axis = ctx.plan<AxisPlan>().axis;
    ASSIGN_OR_RETURN(const std::vector<int64_t> idx, AxisIndices(ctx, indices, data.dim(axis), axis));
    // Every dim but the axis follows the output's position; the axis comes from idx.
    std::vector<int64_t> strides = RowMajorStrides(data.shape());
    const int64_t axis_stride = strides[size_t(axis)];
    strides[size_t(axis)] = 0;
    return Dispatch<AnyTypes>(ctx, data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      ForEachOffset(indices.shape(), strides,
                    [&](int64_t i, int64_t base) { dst[i] = src[base + idx[size_t(i)] * axis_stride]; });
    });
  }

 private:
  int64_t axis_;
};

// ---- GatherND ----

struct GatherNDPlan : OpPlan {
  int64_t batch = 1;    // product of the batch dims
  int64_t tuples = 0;   // index tuples per batch entry
  int64_t k = 0;        // the length of a tuple
  int64_t slice = 1;    // elements per gathered slice
  int64_t block = 0;    // data elements per batch entry
};

class GatherNDOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t b = node.attr_int("batch_dims", 0);
    if (b < 0) return AttributeError(node, absl::StrCat("batch_dims must be >= 0, got ", b));
    return std::unique_ptr<Op>(new GatherNDOp(b));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& data = ctx.input(0);
    const ValueType& indices = ctx.input(1);
    ValueType out;
    out.dtype = data.dtype;
    if (data.dims && indices.dims) {
      const int64_t r = data.rank(), q = indices.rank();
      if (r < 1 || q < 1) return ctx.Error(absl::StrCat("data and indices must have rank >= 1, got ", r, " and ", q));
      if (b_ >= std::min(q, r))
        return ctx.Error(absl::StrCat("batch_dims ", b_, " must be less than the ranks of data (", r,
                                      ") and indices (", q, ")"));
      for (int64_t d = 0; d < b_; ++d) {
        const Dim& x = (*data.dims)[size_t(d)];
        const Dim& y = (*indices.dims)[size_t(d)];
        if (x.known() && y.known() && x.value != y.value)
          return ctx.Error(absl::StrCat("batch dim ", d, " differs: data ", data.ToString(), ", indices ",
                                        indices.ToString()));
      }
      const Dim& kd = indices.dims->back();
      if (kd.known()) {
        const int64_t k = kd.value;
        if (k > r - b_)
          return ctx.Error(absl::StrCat("indices' last dim ", k, " exceeds the rank of data ", r, " minus batch_dims ",
                                        b_));
        out.dims.emplace(indices.dims->begin(), indices.dims->end() - 1);
        for (int64_t d = b_ + k; d < r; ++d) out.dims->push_back((*data.dims)[size_t(d)]);
        const std::optional<Shape> ds = data.concrete_shape(), is = indices.concrete_shape();
        if (ds && is) {
          auto plan = std::make_shared<GatherNDPlan>();
          plan->batch = ShapeProduct(*ds, 0, size_t(b_));
          plan->tuples = ShapeProduct(*is, size_t(b_), size_t(q - 1));
          plan->k = k;
          plan->slice = ShapeProduct(*ds, size_t(b_ + k), size_t(r));
          plan->block = ShapeProduct(*ds, size_t(b_), size_t(r));
          ctx.set_plan(std::move(plan));
        }
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const GatherNDPlan& p = ctx.plan<GatherNDPlan>();
    const std::vector<int64_t> strides = RowMajorStrides(data.shape());
    // The data offset of every tuple, checked before anything is read.
    const int64_t* idx = indices.data<int64_t>();
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(p.batch * p.tuples, sizeof(int64_t), "the tuples' offsets"));
    std::vector<int64_t> offsets(size_t(p.batch * p.tuples));
    for (int64_t t = 0; t < p.batch * p.tuples; ++t) {
      int64_t offset = (t / p.tuples) * p.block;
      for (int64_t j = 0; j < p.k; ++j) {
        const int64_t d = b_ + j;
        ASSIGN_OR_RETURN(const int64_t v, CheckIndex(ctx, idx[t * p.k + j], data.dim(d),
                                                     absl::StrCat("indices element ", t * p.k + j),
                                                     absl::StrCat("data dim ", d)));
        offset += v * strides[size_t(d)];
      }
      offsets[size_t(t)] = offset;
    }
    return Dispatch<AnyTypes>(ctx, data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      for (size_t t = 0; t < offsets.size(); ++t)
        for (int64_t e = 0; e < p.slice; ++e) dst[int64_t(t) * p.slice + e] = src[offsets[t] + e];
    });
  }

 private:
  explicit GatherNDOp(int64_t b) : b_(b) {}
  int64_t b_;
};

// ---- Scatter reductions ----

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

// `reduction`: none only before opset 16, add and mul from 16, max and min from 18.
absl::StatusOr<Reduction> ParseReduction(const Node& node) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (node.opset >= 16 && r == "add") return Reduction::kAdd;
  if (node.opset >= 16 && r == "mul") return Reduction::kMul;
  if (node.opset >= 18 && r == "max") return Reduction::kMax;
  if (node.opset >= 18 && r == "min") return Reduction::kMin;
  return AttributeError(node, absl::StrCat("reduction '", r, "' is not one of ",
                                           node.opset >= 18   ? "none, add, mul, max, min"
                                           : node.opset >= 16 ? "none, add, mul"
                                                              : "none",
                                           " (opset ", node.opset, ")"));
}

const char* ReductionName(Reduction r) {
  switch (r) {
    case Reduction::kNone: return "none";
    case Reduction::kAdd: return "add";
    case Reduction::kMul: return "mul";
    case Reduction::kMax: return "max";
    case Reduction::kMin: return "min";
  }
  return "?";
}

// Whether `r` is defined on `dtype`: strings only take none; complex numbers
// have no order for max and min.
absl::Status CheckReduction(const InferContext& ctx, Reduction r, DType dtype) {
  const bool ok = r == Reduction::kNone ||
                  (dtype != DType::kString &&
                   !((dtype == DType::kComplex64 || dtype == DType::kComplex128) &&
                     (r == Reduction::kMax || r == Reduction::kMin)));
  if (ok) return absl::OkStatus();
  return ctx.Error(absl::StrCat("reduction '", ReductionName(r), "' is not defined for ", LowerName(dtype)));
}

// Integer + and * wrap modulo 2^bits (computed unsigned, where that is defined).
template <class A, class F>
A Wrapped(A x, A y, F f) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
    return A(f(U(x), U(y)));
  } else {
    return f(x, y);
  }
}

// The element `old` after receiving `update` under reduction R. max and min
// keep `old` unless the update is strictly beyond it (as the reference's
// Python max/min). bool: add and max are or, mul and min are and.
template <Reduction R, class T>
T Combine(const T& old, const T& update) {
  if constexpr (R == Reduction::kNone) {
    return update;
  } else if constexpr (std::is_same_v<T, bool>) {
    return (R == Reduction::kAdd || R == Reduction::kMax) ? (old || update) : (old && update);
  } else if constexpr (kIsArithmetic<T>) {
    using A = typename Arith<T>::type;
    const A a = Widen(old), b = Widen(update);
    if constexpr (R == Reduction::kAdd) return Narrow<T>(Wrapped(a, b, [](auto x, auto y) { return x + y; }));
    else if constexpr (R == Reduction::kMul) return Narrow<T>(Wrapped(a, b, [](auto x, auto y) { return x * y; }));
    else if constexpr (R == Reduction::kMax) return b > a ? update : old;
    else return b < a ? update : old;
  } else if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) {
    if constexpr (R == Reduction::kAdd) return old + update;
    else if constexpr (R == Reduction::kMul) return old * update;
    else return update;  // max, min: refused by CheckReduction
  } else {
    return update;  // strings: only none is admitted
  }
}

// Calls f(std::integral_constant<Reduction, r>{}).
template <class F>
void WithReduction(Reduction r, F&& f) {
  switch (r) {
    case Reduction::kNone: return f(std::integral_constant<Reduction, Reduction::kNone>{});
    case Reduction::kAdd: return f(std::integral_constant<Reduction, Reduction::kAdd>{});
    case Reduction::kMul: return f(std::integral_constant<Reduction, Reduction::kMul>{});
    case Reduction::kMax: return f(std::integral_constant<Reduction, Reduction::kMax>{});
    case Reduction::kMin: return f(std::integral_constant<Reduction, Reduction::kMin>{});
  }
}

// ---- ScatterElements, Scatter ----

class ScatterElementsOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const Reduction r, ParseReduction(node));
    return std::unique_ptr<Op>(new ScatterElementsOp(node.attr_int("axis", 0), r));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& data = ctx.input(0);
    const ValueType& indices = ctx.input(1);
    const ValueType& updates = ctx.input(2);
    RETURN_IF_ERROR(CheckReduction(ctx, reduction_, data.dtype));
    if (indices.dims && updates.dims) {
      bool same = indices.rank() == updates.rank();
      for (int64_t d = 0; same && d < indices.rank(); ++d) {
        const Dim& i = (*indices.dims)[size_t(d)];
        const Dim& u = (*updates.dims)[size_t(d)];
        same = !i.known() || !u.known() || i.value == u.value;
      }
      if (!same)
        return ctx.Error(absl::StrCat("updates ", updates.ToString(), " must have the shape of indices ",
                                      indices.ToString()));
    }
    if (data.dims) {
      if (data.rank() < 1) return ctx.Error("data must have rank >= 1");
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, data.rank(), "axis"));
      RETURN_IF_ERROR(CheckElementwiseIndices(ctx, data, indices, axis));
      auto plan = std::make_shared<AxisPlan>();
      plan->axis = axis;
      ctx.set_plan(std::move(plan));
    }
    ctx.set_output(0, data);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const Tensor& updates = *ctx.input(2);
    Tensor& out = ctx.output(0);
    const int64_t axis = ctx.plan<AxisPlan>().axis;
    // Every index is checked before anything is written (the output may be data's own storage).
    ASSIGN_OR_RETURN(const std::vector<int64_t> idx, AxisIndices(ctx, indices, data.dim(axis), axis));
    if (out.raw() != data.raw()) CopyElements(data, out, ctx.threads());
    std::vector<int64_t> strides = RowMajorStrides(data.shape());
    const int64_t axis_stride = strides[size_t(axis)];
    strides[size_t(axis)] = 0;
    return Dispatch<AnyTypes>(ctx, data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = updates.data<T>();
      T* dst = out.data<T>();
      WithReduction(reduction_, [&](auto r) {
        ForEachOffset(indices.shape(), strides, [&](int64_t i, int64_t base) {
          T& o = dst[base + idx[size_t(i)] * axis_stride];
          o = Combine<decltype(r)::value>(o, src[i]);
        });
      });
    });
  }

 private:
  ScatterElementsOp(int64_t axis, Reduction r) : axis_(axis), reduction_(r) {}
  int64_t axis_;
  Reduction reduction_;
};

// ---- ScatterND ----

class ScatterNDOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const Reduction r, ParseReduction(node));
    return std::unique_ptr<Op>(new ScatterNDOp(r));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& data = ctx.input(0);
    const ValueType& indices = ctx.input(1);
    const ValueType& updates = ctx.input(2);
    RETURN_IF_ERROR(CheckReduction(ctx, reduction_, data.dtype));
    if (data.dims && indices.dims) {
      const int64_t r = data.rank(), q = indices.rank();
      if (r < 1 || q < 1) return ctx.Error(absl::StrCat("data and indices must have rank >= 1, got ", r, " and ", q));
      const Dim& kd = indices.dims->back();
      if (kd.known()) {
        const int64_t k = kd.value;
        if (k > r) return ctx.Error(absl::StrCat("indices' last dim ", k, " exceeds the rank of data ", r));
        // updates: indices.shape[:-1] ++ data.shape[k:]
        std::vector<Dim> want(indices.dims->begin(), indices.dims->end() - 1);
        for (int64_t d = k; d < r; ++d) want.push_back((*data.dims)[size_t(d)]);
        if (updates.dims) {
          bool same = updates.dims->size() == want.size();
          for (size_t d = 0; same && d < want.size(); ++d)
            same = !want[d].known() || !(*updates.dims)[d].known() || want[d].value == (*updates.dims)[d].value;
          if (!same)
            return ctx.Error(absl::StrCat("updates ", updates.ToString(), " must have shape ", DimsToString(want),
                                          " (indices.shape[:-1] ++ data.shape[", k, ":])"));
        }
      }
    }
    ctx.set_output(0, data);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& data = *ctx.input(0);
    const Tensor& indices = *ctx.input(1);
    const Tensor& updates = *ctx.input(2);
    Tensor& out = ctx.output(0);
    const int64_t k = indices.dim(indices.rank() - 1);
    const int64_t tuples = ShapeProduct(indices.shape(), 0, size_t(indices.rank() - 1));
    const int64_t slice = ShapeProduct(data.shape(), size_t(k), size_t(data.rank()));
    const std::vector<int64_t> strides = RowMajorStrides(data.shape());
    // The offset of every tuple, checked before anything is written.
    ASSIGN_OR_RETURN(MemoryReservation reserved,
                     ctx.Reserve(updates.size() > 0 ? tuples : 0, sizeof(int64_t), "the tuples' offsets"));
    std::vector<int64_t> offsets(size_t(updates.size() > 0 ? tuples : 0));
    const int64_t* idx = indices.data<int64_t>();
    for (size_t t = 0; t < offsets.size(); ++t) {
      int64_t offset = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = int64_t(t) * k + j;
        ASSIGN_OR_RETURN(const int64_t v, CheckIndex(ctx, idx[e], data.dim(j), absl::StrCat("indices element ", e),
                                                     absl::StrCat("data dim ", j)));
        offset += v * strides[size_t(j)];
      }
      offsets[t] = offset;
    }
    if (out.raw() != data.raw()) CopyElements(data, out, ctx.threads());
    return Dispatch<AnyTypes>(ctx, data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = updates.data<T>();
      T* dst = out.data<T>();
      WithReduction(reduction_, [&](auto r) {
        for (size_t t = 0; t < offsets.size(); ++t)
          for (int64_t e = 0; e < slice; ++e) {
            T& o = dst[offsets[t] + e];
            o = Combine<decltype(r)::value>(o, src[int64_t(t) * slice + e]);
          }
      });
    });
  }

 private:
  explicit ScatterNDOp(Reduction r) : reduction_(r) {}
  Reduction reduction_;
};

// ---- OneHot ----

struct OneHotPlan : OpPlan {
  int64_t axis = 0;   // of the output
  int64_t depth = 0;
};

class OneHotOp : public Op {
 public:
  explicit OneHotOp(const Node& node)
      : axis_(node.attr_int("axis", -1)), negative_(node.opset >= 11) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& indices = ctx.input(0);
    ValueType out;
    out.dtype = ctx.input(2).dtype;
    if (const std::optional<Shape> v = ctx.input(2).concrete_shape(); v && (v->size() != 1 || (*v)[0] != 2))
      return ctx.Error(absl::StrCat("values must be [off_value, on_value], got shape ", ShapeToString(*v)));
    if (const std::optional<Shape> d = ctx.input(1).concrete_shape(); d && ElementCount(*d) != 1)
      return ctx.Error(absl::StrCat("depth must hold one value, got shape ", ShapeToString(*d)));
    std::optional<int64_t> depth;
    if (const Tensor* d = ctx.value(1)) {
      const double v = GetDouble(*d, 0);
      if (!(v >= 1)) return ctx.Error(absl::StrCat("depth must be positive, got ", v));
      depth = FloatToInt64(v);
    }
    if (indices.dims) {
      const int64_t r = indices.rank();
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis_, r + 1, "axis"));
      out.dims = *indices.dims;
      out.dims->insert(out.dims->begin() + axis, depth ? Dim::Known(*depth) : Dim{});
      if (depth) {
        auto plan = std::make_shared<OneHotPlan>();
        plan->axis = axis;
        plan->depth = *depth;
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& indices = *ctx.input(0);
    const Tensor& values = *ctx.input(2);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const OneHotPlan& p = ctx.plan<OneHotPlan>();
    const int64_t inner = ShapeProduct(indices.shape(), size_t(p.axis), indices.shape().size());
    // Each index as a position along the depth, -1 when outside the range
    // (all off); non-integer indices are cast to int64 first (NaN: outside).
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(indices.size(), sizeof(int64_t), "the hot positions"));
    std::vector<int64_t> hot(size_t(indices.size()), -1);
    RETURN_IF_ERROR(Dispatch<NumericTypes>(ctx, indices.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < indices.size(); ++i) {
        int64_t v;
        if constexpr (std::is_integral_v<T>) {
          if constexpr (std::is_unsigned_v<T>) {
            if (uint64_t(indices.data<T>()[i]) >= uint64_t(p.depth)) continue;  // past int64 too
          }
          v = int64_t(indices.data<T>()[i]);
        } else {
          const double d = double(Widen(indices.data<T>()[i]));
          if (std::isnan(d)) continue;
          v = FloatToInt64(d);
        }
        if (negative_ && v < 0 && v >= -p.depth) v += p.depth;
        if (v >= 0 && v < p.depth) hot[size_t(i)] = v;
      }
    }));
    return Dispatch<AnyTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T off = values.data<T>()[0], on = values.data<T>()[1];
      T* dst = out.data<T>();
      for (int64_t i = 0; i < out.size(); ++i) dst[i] = off;
      // indices = [outer, inner]; output = [outer, depth, inner].
      for (int64_t i = 0; i < indices.size(); ++i)
        if (hot[size_t(i)] >= 0) dst[((i / inner) * p.depth + hot[size_t(i)]) * inner + i % inner] = on;
    });
  }

 private:
  int64_t axis_;
  bool negative_;  // OneHot-11 counts negative indices from the end
};

// ---- Compress ----

struct SelectPlan : OpPlan {
  int64_t outer = 0, n = 0, inner = 0;  // the input as [outer, n, inner]
  std::vector<int64_t> selected;        // positions along n
};

class CompressOp : public Op {
 public:
  explicit CompressOp(const Node& node)
      : axis_(node.attr("axis") ? std::optional<int64_t>(node.attr_int("axis", 0)) : std::nullopt) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    const ValueType& cond = ctx.input(1);
    ValueType out;
    out.dtype = in.dtype;
    if (cond.dims && cond.rank() != 1)
      return ctx.Error(absl::StrCat("condition must be 1-D, got ", cond.ToString()));
    int64_t axis = 0;
    if (in.dims) {
      if (axis_) {
        if (in.rank() < 1) return ctx.Error("input must have rank >= 1 when axis is given");
        ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, *axis_, in.rank(), "axis"));
        out.dims = *in.dims;
        (*out.dims)[size_t(axis)] = Dim{};
      } else {
        out.dims = std::vector<Dim>(1);
      }
    }
    const Tensor* c = ctx.value(1);
    const std::optional<Shape> shape = in.concrete_shape();
    if (c && shape) {
      auto plan = std::make_shared<SelectPlan>();
      if (axis_) {
        plan->outer = ShapeProduct(*shape, 0, size_t(axis));
        plan->n = (*shape)[size_t(axis)];
        plan->inner = ShapeProduct(*shape, size_t(axis) + 1, shape->size());
      } else {
        plan->outer = plan->inner = 1;
        plan->n = ElementCount(*shape);
      }
      const bool* flags = c->data<bool>();
      for (int64_t i = 0; i < c->size(); ++i) {
        if (!flags[i]) continue;
        if (i >= plan->n)
          return ctx.Error(absl::StrCat("condition[", i, "] is true but ",
                                        axis_ ? absl::StrCat("axis ", axis) : std::string("the flattened input"),
                                        " has ", plan->n, " entries"));
        plan->selected.push_back(i);
      }
      (*out.dims)[size_t(axis_ ? axis : 0)] = Dim::Known(int64_t(plan->selected.size()));
      ctx.set_plan(std::move(plan));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const SelectPlan& p = ctx.plan<SelectPlan>();
    const int64_t count = int64_t(p.selected.size());
    return Dispatch<AnyTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < p.outer; ++o)
        for (int64_t s = 0; s < count; ++s)
          for (int64_t e = 0; e < p.inner; ++e)
            dst[(o * count + s) * p.inner + e] = src[(o * p.n + p.selected[size_t(s)]) * p.inner + e];
    });
  }

 private:
  std::optional<int64_t> axis_;
};

// ---- NonZero ----

// Whether an element counts as non-zero (NaN does, -0.0 does not, as in
// NumPy; strings when not empty). A bool is read as its byte: caller memory
// may hold bytes other than 0 and 1, and the count that sizes the output and
// the pass that fills it must agree on each one.
template <class T>
bool IsNonZero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return !v.empty();
  else if constexpr (std::is_same_v<T, bool>) return *reinterpret_cast<const unsigned char*>(&v) != 0;
  else if constexpr (kIsArithmetic<T>) return Widen(v) != 0;
  else return v != T(0);  // complex
}

class NonZeroOp : public Op {
 public:
  explicit NonZeroOp(const Node&) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType out;
    out.dtype = DType::kInt64;
    if (in.dims) {
      // A scalar gives shape [0, count] (unlike NumPy's [1, count]).
      out.dims = std::vector<Dim>{Dim::Known(in.rank()), Dim{}};
      if (const Tensor* x = ctx.value(0)) {
        int64_t count = 0;
        VisitTypes<AnyTypes>(x->dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          for (int64_t i = 0; i < x->size(); ++i) count += IsNonZero(x->data<T>()[i]);
        });
        (*out.dims)[1] = Dim::Known(count);
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const int64_t count = out.dim(1), rank = in.rank();
    int64_t* dst = out.data<int64_t>();
    return Dispatch<AnyTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      std::vector<int64_t> coord(size_t(rank), 0);
      int64_t j = 0;
      for (int64_t i = 0; i < in.size() && j < count; ++i) {
        if (IsNonZero(src[i])) {
          for (int64_t d = 0; d < rank; ++d) dst[d * count + j] = coord[size_t(d)];
          ++j;
        }
        for (int64_t d = rank; d-- > 0;) {
          if (++coord[size_t(d)] < in.dim(d)) break;
          coord[size_t(d)] = 0;
        }
      }
    });
  }
};

// ---- Unique ----

// A total order for sorting: NaN after every number and equal to NaN (NumPy
// sorts NaN last and, since 1.21, counts NaNs as one value); complex numbers
// by real then imaginary part; strings bytewise.
template <class F>
int CompareFloat(F a, F b) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) return int(na) - int(nb);
  return a < b ? -1 : a > b ? 1 : 0;
}
template <class T>
int CompareElements(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) {
    const int c = a.compare(b);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  } else if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) {
    const int c = CompareFloat(a.real(), b.real());
    return c != 0 ? c : CompareFloat(a.imag(), b.imag());
  } else if constexpr (std::is_same_v<T, bool>) {
    return int(a) - int(b);
  } else {
    using A = typename Arith<T>::type;
    const A x = Widen(a), y = Widen(b);
    if constexpr (std::is_floating_point_v<A>) return CompareFloat(x, y);
    else return x < y ? -1 : x > y ? 1 : 0;
  }
}

struct UniquePlan : OpPlan {
  int64_t outer = 1, n = 0, inner = 1;  // the input as [outer, n, inner]; the slices are along n
  std::vector<int64_t> first;            // per output slice: its first occurrence in the input
  std::vector<int64_t> inverse;          // per input slice: its output slice
  std::vector<int64_t> counts;           // per output slice
};

class UniqueOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t sorted = node.attr_int("sorted", 1);
    if (sorted != 0 && sorted != 1) return AttributeError(node, absl::StrCat("sorted must be 0 or 1, got ", sorted));
    std::optional<int64_t> axis;
    if (node.attr("axis")) axis = node.attr_int("axis", 0);
    return std::unique_ptr<Op>(new UniqueOp(axis, sorted == 1));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType y;
    y.dtype = in.dtype;
    int64_t axis = 0;
    std::optional<int64_t> n;  // input slices
    if (in.dims) {
      if (axis_) {
        if (in.rank() < 1) return ctx.Error("X must have rank >= 1 when axis is given");
        ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, *axis_, in.rank(), "axis"));
        y.dims = *in.dims;
        (*y.dims)[size_t(axis)] = Dim{};
      } else {
        y.dims = std::vector<Dim>(1);
      }
    }
    std::shared_ptr<UniquePlan> plan;
    if (const Tensor* x = ctx.value(0)) {
      plan = std::make_shared<UniquePlan>();
      if (axis_) {
        plan->outer = ShapeProduct(x->shape(), 0, size_t(axis));
        plan->n = x->dim(axis);
        plan->inner = ShapeProduct(x->shape(), size_t(axis) + 1, x->shape().size());
      } else {
        plan->n = x->size();
      }
      Group(*x, *plan);
      (*y.dims)[size_t(axis_ ? axis : 0)] = Dim::Known(int64_t(plan->first.size()));
      n = plan->n;
    }
    ctx.set_output(0, y);
    ValueType groups, per_input;  // 1-D int64
    groups.dtype = per_input.dtype = DType::kInt64;
    groups.dims = std::vector<Dim>{plan ? Dim::Known(int64_t(plan->first.size())) : Dim{}};
    per_input.dims = std::vector<Dim>{n ? Dim::Known(*n) : Dim{}};
    ctx.set_output(1, groups);
    ctx.set_output(2, per_input);
    ctx.set_output(3, groups);
    if (plan) ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const UniquePlan& p = ctx.plan<UniquePlan>();
    const int64_t groups = int64_t(p.first.size());
    auto put = [&](size_t i, const std::vector<int64_t>& v) {
      if (!ctx.output_requested(i)) return;
      Tensor& t = ctx.output(i);
      std::copy(v.begin(), v.end(), t.data<int64_t>());
    };
    put(1, p.first);
    put(2, p.inverse);
    put(3, p.counts);
    Tensor& y = ctx.output(0);
    if (y.size() == 0) return absl::OkStatus();
    return Dispatch<AnyTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      for (int64_t o = 0; o < p.outer; ++o)
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t e = 0; e < p.inner; ++e)
            dst[(o * groups + g) * p.inner + e] = src[(o * p.n + p.first[size_t(g)]) * p.inner + e];
    });
  }

 private:
  UniqueOp(std::optional<int64_t> axis, bool sorted) : axis_(axis), sorted_(sorted) {}

  // Groups the n slices of x into equal ones: the plan's first, inverse and counts.
  void Group(const Tensor& x, UniquePlan& p) const {
    std::vector<int64_t> order(size_t(p.n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> rank(size_t(p.n));  // each input slice's group, in sorted order
    VisitTypes<AnyTypes>(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      auto compare = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < p.outer; ++o)
          for (int64_t e = 0; e < p.inner; ++e) {
            const int c = CompareElements(src[(o * p.n + a) * p.inner + e], src[(o * p.n + b) * p.inner + e]);
            if (c != 0) return c;
          }
        return 0;
      };
      // Stable: the first slice of each run of equal ones is its first occurrence.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
      p.first.clear();
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || compare(order[i - 1], order[i]) != 0) p.first.push_back(order[i]);
        rank[size_t(order[i])] = int64_t(p.first.size()) - 1;
      }
    });
    // Output order: sorted, or by first occurrence.
    const int64_t groups = int64_t(p.first.size());
    std::vector<int64_t> position(p.first.size());  // sorted group -> output slice
    std::iota(position.begin(), position.end(), 0);
    if (!sorted_) {
      std::vector<int64_t> by_first(p.first.size());
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return p.first[size_t(a)] < p.first[size_t(b)]; });
      std::vector<int64_t> first(p.first.size());
      for (int64_t g = 0; g < groups; ++g) {
        position[size_t(by_first[size_t(g)])] = g;
        first[size_t(g)] = p.first[size_t(by_first[size_t(g)])];
      }
      p.first = std::move(first);
    }
    p.inverse.resize(size_t(p.n));
    p.counts.assign(size_t(groups), 0);
    for (int64_t i = 0; i < p.n; ++i) {
      p.inverse[size_t(i)] = position[size_t(rank[size_t(i)])];
      ++p.counts[size_t(p.inverse[size_t(i)])];
    }
  }

  std::optional<int64_t> axis_;
  bool sorted_;
};

}  // namespace

std::vector<OpDef> IndexingOps() {
  const TypeConstraint any = {"T", kAnyTypes};
  const TypeConstraint tind = {"Tind", kIndexTypes};
  const TypeConstraint int64 = {"I", kInt64};
  const Alias in_place = InPlace(Out{0}, In{0});
  return {
      {kOnnxDomain, "GatherElements", Versions{11}, "T Tind", "T", {any, tind}, MakeOp<GatherElementsOp>},
      {kOnnxDomain, "GatherND", Versions{11}, "T I", "T", {any, int64}, GatherNDOp::Create},
      {kOnnxDomain, "Scatter", Versions{9, 10}, "T Tind T", "T", {any, tind}, ScatterElementsOp::Create, in_place},
      {kOnnxDomain, "ScatterElements", Versions{11}, "T Tind T", "T", {any, tind}, ScatterElementsOp::Create, in_place},
      {kOnnxDomain, "ScatterND", Versions{11}, "T I T", "T", {any, int64}, ScatterNDOp::Create, in_place},
      {kOnnxDomain, "OneHot", Versions{9}, "T1 T2 T3", "T3",
       {{"T1", kNumericTypes}, {"T2", kNumericTypes}, {"T3", kAnyTypes}},
       MakeOp<OneHotOp>},
      {kOnnxDomain, "Compress", Versions{9}, "T B", "T", {any, {"B", kBool}}, MakeOp<CompressOp>},
      {kOnnxDomain, "NonZero", Versions{9}, "T", "I", {any, int64}, MakeOp<NonZeroOp>},
      {kOnnxDomain, "Unique", Versions{11}, "T", "T I? I? I?", {any, int64}, UniqueOp::Create},
  };
}

}  // namespace onnx_mini
