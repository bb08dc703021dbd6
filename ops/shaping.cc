// Ops that move or relabel data without arithmetic: Identity, Reshape,
// Flatten, Shape, Size, Transpose.
#include <cstring>
#include <numeric>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// ---- Identity: the output is a view of the input ----

absl::Status InferIdentity(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  ctx.set_output(0, ctx.input(0));
  return absl::OkStatus();
}

// ---- Reshape ----

absl::Status InferReshape(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 2, 2);
  if (!in.ok()) return in.status();
  absl::StatusOr<DType> shape_type = InputDType(ctx, 1);
  if (!shape_type.ok()) return shape_type.status();
  if (*shape_type != DType::kInt64)
    return ctx.Error(absl::StrCat("the shape input must be int64, got ", LowerName(*shape_type)));
  ValueType out;
  out.dtype = *in;
  const Tensor* target = ctx.value(1);
  if (target == nullptr) {
    const ValueType& st = ctx.input(1);
    if (st.dims && st.dims->size() == 1 && (*st.dims)[0].known())
      out.dims = std::vector<Dim>(size_t((*st.dims)[0].value));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  if (target->rank() != 1)
    return ctx.Error(absl::StrCat("the shape input must be 1-D, got shape ", ShapeToString(target->shape())));
  const bool allow_zero = ctx.opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  const int64_t* want = target->data<int64_t>();
  const ValueType& input = ctx.input(0);
  std::vector<Dim> dims;
  int inferred_at = -1;
  for (int64_t i = 0; i < target->size(); ++i) {
    const int64_t d = want[i];
    if (d == -1) {
      if (inferred_at >= 0) return ctx.Error("the shape has more than one -1");
      inferred_at = int(i);
      dims.emplace_back();
    } else if (d == 0 && !allow_zero) {
      if (!input.dims) {
        dims.emplace_back();
      } else if (i >= input.rank()) {
        return ctx.Error(absl::StrCat("shape entry ", i, " is 0 (copy) but the input ",
                                      input.ToString(), " has rank ", input.rank()));
      } else {
        dims.push_back((*input.dims)[size_t(i)]);
      }
    } else if (d < 0) {
      return ctx.Error(absl::StrCat("shape entry ", i, " is ", d, "; only -1 may be negative"));
    } else {
      dims.push_back(Dim::Known(d));
    }
  }
  if (allow_zero && inferred_at >= 0)
    for (int64_t i = 0; i < target->size(); ++i)
      if (want[i] == 0) return ctx.Error("with allowzero=1 the shape cannot hold both 0 and -1");
  const std::optional<Shape> in_shape = input.concrete_shape();
  if (in_shape) {
    const int64_t count = ElementCount(*in_shape);
    int64_t known = 1;
    bool all_known = true;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (int(i) == inferred_at) continue;
      if (!dims[i].known()) all_known = false;
      else known *= dims[i].value;
    }
    if (all_known) {
      if (inferred_at >= 0) {
        if (known == 0 ? count != 0 : count % known != 0)
          return ctx.Error(absl::StrCat("cannot reshape ", input.ToString(), " (", count,
                                        " elements) to ", ShapeToString(Shape(want, want + target->size()))));
        dims[size_t(inferred_at)] = Dim::Known(known == 0 ? 0 : count / known);
      } else if (known != count) {
        return ctx.Error(absl::StrCat("cannot reshape ", input.ToString(), " (", count,
                                      " elements) to ", ShapeToString(Shape(want, want + target->size())),
                                      " (", known, " elements)"));
      }
    }
  }
  out.dims = dims;
  ctx.set_output(0, out);
  return absl::OkStatus();
}

// ---- Flatten: a view as 2-D, the dims before `axis` times the rest ----

absl::Status InferFlatten(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  ValueType out;
  out.dtype = *in;
  out.dims = std::vector<Dim>(2);
  const ValueType& t = ctx.input(0);
  if (t.dims) {
    const int64_t rank = t.rank(), axis_attr = ctx.node().attr_int("axis", 1);
    if (axis_attr < -rank || axis_attr > rank)
      return ctx.Error(absl::StrCat("axis ", axis_attr, " is out of range for rank ", rank));
    const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
    int64_t outer = 1, inner = 1;
    bool known_outer = true, known_inner = true;
    for (int64_t k = 0; k < rank; ++k) {
      const Dim& d = (*t.dims)[size_t(k)];
      bool& known = k < axis ? known_outer : known_inner;
      if (!d.known()) known = false;
      else (k < axis ? outer : inner) *= d.value;
    }
    (*out.dims)[0] = known_outer ? Dim::Known(outer) : Dim{};
    (*out.dims)[1] = known_inner ? Dim::Known(inner) : Dim{};
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

// ---- Size: the element count as an int64 scalar ----

absl::Status InferSize(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  ctx.set_output(0, ValueType::Of(DType::kInt64, {}));
  return absl::OkStatus();
}

class SizeKernel : public OpKernel {
 public:
  explicit SizeKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.output(0).data<int64_t>()[0] = ctx.input(0)->size();
    return absl::OkStatus();
  }
};

// ---- Shape ----

void ShapeRange(const InferContext& ctx, int64_t rank, int64_t& start, int64_t& end) {
  start = ctx.opset() >= 15 ? ctx.node().attr_int("start", 0) : 0;
  end = ctx.opset() >= 15 ? ctx.node().attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max<int64_t>(end, 0), rank);
  if (end < start) end = start;
}

absl::Status InferShape(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  ValueType out;
  out.dtype = DType::kInt64;
  if (ctx.input(0).dims) {
    int64_t start, end;
    ShapeRange(ctx, ctx.input(0).rank(), start, end);
    out.dims = std::vector<Dim>{Dim::Known(end - start)};
  } else {
    out.dims = std::vector<Dim>(1);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class ShapeKernel : public OpKernel {
 public:
  explicit ShapeKernel(const KernelInfo& info) : node_(info.node) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t start = node_.opset >= 15 ? Clamp(node_.attr_int("start", 0), in.rank()) : 0;
    for (int64_t i = 0; i < out.size(); ++i) out.data<int64_t>()[i] = in.dim(start + i);
    return absl::OkStatus();
  }

 private:
  static int64_t Clamp(int64_t v, int64_t rank) {
    if (v < 0) v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  }
  const Node& node_;
};

// ---- Transpose ----

absl::StatusOr<std::vector<int64_t>> Permutation(const InferContext& ctx, int64_t rank) {
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (ctx.node().attr("perm") == nullptr) {
    perm.resize(size_t(rank));
    for (int64_t i = 0; i < rank; ++i) perm[size_t(i)] = rank - 1 - i;
    return perm;
  }
  if (int64_t(perm.size()) != rank)
    return ctx.Error(absl::StrCat("perm has ", perm.size(), " entries but the input has rank ", rank));
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[size_t(p)])
      return ctx.Error(absl::StrCat("perm is not a permutation of 0..", rank - 1));
    seen[size_t(p)] = true;
  }
  return perm;
}

absl::Status InferTranspose(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  ValueType out;
  out.dtype = *in;
  if (ctx.input(0).dims) {
    absl::StatusOr<std::vector<int64_t>> perm = Permutation(ctx, ctx.input(0).rank());
    if (!perm.ok()) return perm.status();
    out.dims.emplace();
    for (int64_t p : *perm) out.dims->push_back((*ctx.input(0).dims)[size_t(p)]);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class TransposeKernel : public OpKernel {
 public:
  explicit TransposeKernel(const KernelInfo& info) : perm_attr_(info.node.attr_ints("perm")) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t rank = in.rank();
    std::vector<int64_t> perm = perm_attr_;
    if (perm.empty())
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    // Input strides, in output-dim order.
    std::vector<int64_t> in_strides(size_t(rank), 1);
    std::vector<int64_t> strides(size_t(rank), 0);
    for (int64_t d = rank - 2; d >= 0; --d) in_strides[size_t(d)] = in_strides[size_t(d + 1)] * in.dim(d + 1);
    for (int64_t d = 0; d < rank; ++d) strides[size_t(d)] = in_strides[size_t(perm[size_t(d)])];
    const std::vector<int64_t> zero(size_t(rank), 0);
    VisitDType(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsPacked<T> && !std::is_same_v<T, void>) {
        const T* src = in.data<T>();
        T* dst = out.data<T>();
        ForEachBroadcast(out.shape(), strides, zero, ctx.threads(),
                         [&](int64_t o, int64_t i, int64_t) { dst[o] = src[i]; });
      }
    });
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> perm_attr_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateTranspose(const KernelInfo& info) {
  if (Info(info.inputs[0]->dtype).packed()) return NotImplemented(info.node, info.inputs[0]->dtype);
  return MakeKernel<TransposeKernel>(info);
}

}  // namespace

std::vector<OpDef> ShapingOps() {
  return {
      {"", "Identity", 1, 0, InferIdentity, MakeKernel<ViewKernel>},
      {"", "Reshape", 5, 0, InferReshape, MakeKernel<ViewKernel>},
      {"", "Shape", 1, 0, InferShape, MakeKernel<ShapeKernel>},
      {"", "Flatten", 1, 0, InferFlatten, MakeKernel<ViewKernel>},
      {"", "Size", 1, 0, InferSize, MakeKernel<SizeKernel>},
      {"", "Transpose", 1, 0, InferTranspose, CreateTranspose},
  };
}

}  // namespace onnx_mini
