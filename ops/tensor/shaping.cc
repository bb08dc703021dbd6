// Ops that relabel or move data without arithmetic: the views Identity,
// Reshape, Flatten, Squeeze and Unsqueeze (the output shares the input's
// storage), and Shape, Size, Transpose.
#include <cstring>
#include <numeric>

#include "ops/common.h"
#include "kernels/copy/copy.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

// The views: output 0 is input 0 with the shape Infer derived (no copy).
class ViewOp : public Op {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.set_output_view(0, ctx.input(0)->Reshaped(ctx.output_shape(0)));
    return absl::OkStatus();
  }
};

// ---- Identity ----

class IdentityOp : public ViewOp {
 public:
  explicit IdentityOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  // Identity-14+ passes sequences (and 16+ optionals) on as they are.
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0)) return ViewOp::Compute(ctx);
    ctx.set_value(0, *ctx.value(0));
    return absl::OkStatus();
  }
};

// ---- Reshape ----

class ReshapeOp : public ViewOp {
 public:
  explicit ReshapeOp(const Node& node) : allow_zero_(node.opset >= 14 && node.attr_int("allowzero", 0) != 0) {
    if (node.opset < 5) {  // Reshape-1: the shape is an attribute
      const std::vector<int64_t> shape = node.attr_ints("shape");
      shape_attr_ = Tensor::FromVector(shape, {int64_t(shape.size())});
    }
  }
  absl::Status Infer(InferContext& ctx) const override;

 private:
  bool allow_zero_;
  Tensor shape_attr_;  // defined before opset 5
};

absl::Status ReshapeOp::Infer(InferContext& ctx) const {
  ValueType out;
  out.dtype = ctx.input(0).dtype;
  const Tensor* target = ctx.opset() < 5 ? &shape_attr_ : ctx.value(1);
  if (target == nullptr) {
    const ValueType& st = ctx.input(1);
    // The rank is the shape input's length; refuse absurd ranks before allocating dims.
    if (st.dims && st.dims->size() == 1 && (*st.dims)[0].known()) {
      if ((*st.dims)[0].value > kMaxRank)
        return ctx.Error(absl::StrCat("the shape input has ", (*st.dims)[0].value, " entries; the most is ", kMaxRank));
      out.dims = std::vector<Dim>(size_t((*st.dims)[0].value));
    }
    // Entries read from shapes (x.size(k)): their dims, known or symbolic;
    // a 0 copies the input's (not with allowzero).
    const std::vector<Dim>* known = ctx.dims_value(1);
    const ValueType& input = ctx.input(0);
    if (known && out.dims && known->size() == out.dims->size())
      for (size_t i = 0; i < known->size(); ++i) {
        const Dim& e = (*known)[i];
        if (e.known() && e.value == 0 && !allow_zero_) {
          if (input.dims && i < input.dims->size()) (*out.dims)[i] = (*input.dims)[i];
        } else {
          (*out.dims)[i] = e;
        }
      }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  if (target->rank() != 1)
    return ctx.Error(absl::StrCat("the shape input must be 1-D, got shape ", ShapeToString(target->shape())));
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
    } else if (d == 0 && !allow_zero_) {
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
  if (allow_zero_ && inferred_at >= 0)
    for (int64_t i = 0; i < target->size(); ++i)
      if (want[i] == 0) return ctx.Error("with allowzero=1 the shape cannot hold both 0 and -1");
  const std::optional<Shape> in_shape = input.concrete_shape();
  if (in_shape) {
    const int64_t count = ElementCount(*in_shape);
    Shape known_dims;
    bool all_known = true;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (int(i) == inferred_at) continue;
      if (!dims[i].known()) all_known = false;
      else known_dims.push_back(dims[i].value);
    }
    const std::optional<int64_t> product = CheckedProduct(known_dims);
    const bool overflow = !product;
    const int64_t known = product.value_or(0);
    const std::string target_text = ShapeToString(Shape(want, want + target->size()));
    if (all_known && overflow)
      return ctx.Error(absl::StrCat("cannot reshape ", input.ToString(), " to ", target_text,
                                    ": the element count overflows"));
    if (all_known) {
      if (inferred_at >= 0) {
        if (known == 0 ? count != 0 : count % known != 0)
          return ctx.Error(absl::StrCat("cannot reshape ", input.ToString(), " (", count,
                                        " elements) to ", target_text));
        dims[size_t(inferred_at)] = Dim::Known(known == 0 ? 0 : count / known);
      } else if (known != count) {
        return ctx.Error(absl::StrCat("cannot reshape ", input.ToString(), " (", count,
                                      " elements) to ", target_text, " (", known, " elements)"));
      }
    }
  }
  out.dims = dims;
  ctx.set_output(0, out);
  return absl::OkStatus();
}

// ---- Flatten: a view as 2-D, the dims before `axis` times the rest ----

class FlattenOp : public ViewOp {
 public:
  explicit FlattenOp(const Node& node) : axis_(node.attr_int("axis", 1)) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    out.dims = std::vector<Dim>(2);
    const ValueType& t = ctx.input(0);
    if (t.dims) {
      const int64_t rank = t.rank();
      if (axis_ < -rank || axis_ > rank)
        return ctx.Error(absl::StrCat("axis ", axis_, " is out of range for rank ", rank));
      const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
      int64_t outer = 1, inner = 1;
      bool known_outer = true, known_inner = true;
      for (int64_t k = 0; k < rank; ++k) {
        const Dim& d = (*t.dims)[size_t(k)];
        bool& known = k < axis ? known_outer : known_inner;
        int64_t& product = k < axis ? outer : inner;
        // An empty shape can have dims whose product overflows: [2^40, 2^40, 0] at axis 2.
        std::optional<int64_t> p = d.known() ? CheckedMul(product, d.value) : std::nullopt;
        if (p) product = *p;
        else if (d.known() && t.concrete_shape())
          return ctx.Error(absl::StrCat("flattening ", t.ToString(), " at axis ", axis, ": the product of dims overflows"));
        else known = false;
      }
      (*out.dims)[0] = known_outer ? Dim::Known(outer) : Dim{};
      (*out.dims)[1] = known_inner ? Dim::Known(inner) : Dim{};
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

// ---- Squeeze / Unsqueeze ----

// The axes of Squeeze/Unsqueeze: an input from opset 13, an attribute before
// (parsed once into `legacy`). `known` is false while the input's value is not.
struct AxesSource {
  bool from_input;                        // opset 13+
  std::optional<std::vector<int64_t>> legacy;  // the attribute, when given

  explicit AxesSource(const Node& node) : from_input(node.opset >= 13) {
    if (!from_input && node.attr("axes") != nullptr) legacy = node.attr_ints("axes");
  }
  std::vector<int64_t> Read(const InferContext& ctx, bool& given, bool& known) const {
    known = true;
    given = from_input ? ctx.has_input(1) : legacy.has_value();
    if (!from_input) return legacy.value_or(std::vector<int64_t>{});
    if (!given) return {};
    const Tensor* axes = ctx.value(1);
    if (axes == nullptr) {
      known = false;
      return {};
    }
    return IndexValues(*axes);
  }
};

absl::Status InferSqueeze(InferContext& ctx, const AxesSource& source) {
  ValueType out;
  out.dtype = ctx.input(0).dtype;
  bool given, known;
  const std::vector<int64_t> axes_value = source.Read(ctx, given, known);
  const std::vector<int64_t>* axes = &axes_value;
  const ValueType& in = ctx.input(0);
  if (known && in.dims) {
    const int64_t rank = in.rank();
    std::vector<bool> drop(size_t(rank), false);
    for (int64_t a : *axes) {
      ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, a, rank, "axis"));
      const Dim& d = (*in.dims)[size_t(axis)];
      if (d.known() && d.value != 1)
        return ctx.Error(absl::StrCat("cannot squeeze axis ", a, " of ", in.ToString(), ": its size is ", d.value));
      drop[size_t(axis)] = true;
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

absl::Status InferUnsqueeze(InferContext& ctx, const AxesSource& source) {
  ValueType out;
  out.dtype = ctx.input(0).dtype;
  bool given, known;
  const std::vector<int64_t> axes_value = source.Read(ctx, given, known);
  const std::vector<int64_t>* axes = &axes_value;
  if (known && !given) return ctx.Error("axes are required");
  const ValueType& in = ctx.input(0);
  if (known && in.dims) {
    if (int64_t(axes->size()) > kMaxRank)
      return ctx.Error(absl::StrCat(axes->size(), " axes; the most is ", kMaxRank));
    const int64_t rank = in.rank() + int64_t(axes->size());
    std::vector<bool> inserted(size_t(rank), false);
    for (int64_t a : *axes) {
      ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, a, rank, "axis"));
      if (inserted[size_t(axis)]) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
      inserted[size_t(axis)] = true;
    }
    out.dims.emplace();
    size_t next = 0;
    for (int64_t k = 0; k < rank; ++k) out.dims->push_back(inserted[size_t(k)] ? Dim::Known(1) : (*in.dims)[next++]);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class SqueezeOp : public ViewOp {
 public:
  explicit SqueezeOp(const Node& node) : axes_(node) {}
  absl::Status Infer(InferContext& ctx) const override { return InferSqueeze(ctx, axes_); }

 private:
  AxesSource axes_;
};

class UnsqueezeOp : public ViewOp {
 public:
  explicit UnsqueezeOp(const Node& node) : axes_(node) {}
  absl::Status Infer(InferContext& ctx) const override { return InferUnsqueeze(ctx, axes_); }

 private:
  AxesSource axes_;
};

// ---- Size: the element count as an int64 scalar ----

class SizeOp : public Op {
 public:
  explicit SizeOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ValueType::Of(DType::kInt64, {}));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.output(0).data<int64_t>()[0] = ctx.input(0)->size();
    return absl::OkStatus();
  }
};

// ---- Shape ----

struct ShapePlan : OpPlan {
  int64_t start = 0;
};

class ShapeOp : public Op {
 public:
  explicit ShapeOp(const Node& node)
      : start_(node.opset >= 15 ? node.attr_int("start", 0) : 0),
        end_(node.opset >= 15 && node.attr("end") ? std::optional<int64_t>(node.attr_int("end", 0)) : std::nullopt) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = DType::kInt64;
    out.dims = std::vector<Dim>(1);
    if (ctx.input(0).dims) {
      const int64_t rank = ctx.input(0).rank();
      const int64_t start = Clamp(start_, rank), end = std::max(start, Clamp(end_.value_or(rank), rank));
      (*out.dims)[0] = Dim::Known(end - start);
      auto plan = std::make_shared<ShapePlan>();
      plan->start = start;
      ctx.set_plan(std::move(plan));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t start = ctx.plan<ShapePlan>().start;
    for (int64_t i = 0; i < out.size(); ++i) out.data<int64_t>()[i] = in.dim(start + i);
    return absl::OkStatus();
  }

 private:
  static int64_t Clamp(int64_t v, int64_t rank) {
    if (v < 0) v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  }
  int64_t start_;
  std::optional<int64_t> end_;
};

// ---- Transpose ----

// The input strides in output-dim order.
struct TransposePlan : OpPlan {
  std::vector<int64_t> strides;
};

class TransposeOp : public Op {
 public:
  explicit TransposeOp(const Node& node) : perm_(node.attr_ints("perm")), has_perm_(node.attr("perm") != nullptr) {}

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const ValueType& in = ctx.input(0);
    if (in.dims) {
      const int64_t rank = in.rank();
      ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(ctx, rank));
      out.dims.emplace();
      for (int64_t p : perm) out.dims->push_back((*in.dims)[size_t(p)]);
      if (std::optional<Shape> shape = in.concrete_shape()) {
        auto plan = std::make_shared<TransposePlan>();
        const std::vector<int64_t> in_strides = RowMajorStrides(*shape);
        for (int64_t d = 0; d < rank; ++d) plan->strides.push_back(in_strides[size_t(perm[size_t(d)])]);
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    return CopyStrided(in.dtype(), out.shape(), in.raw(), ctx.plan<TransposePlan>().strides, out.raw(), {},
                       ctx.threads());
  }

 private:
  absl::StatusOr<std::vector<int64_t>> Permutation(const InferContext& ctx, int64_t rank) const {
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
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
  std::vector<int64_t> perm_;
  bool has_perm_;
};

constexpr Alias kOutputViewsInput = View(Out{0}, In{0});

}  // namespace

std::vector<OpDef> ShapingOps() {
  const std::vector<TypeConstraint> any = {{"T", kAllTypes}};
  return {
      {kOnnxDomain, "Identity", Versions{1, 13}, "T", "T", any, MakeOp<IdentityOp>, kOutputViewsInput},
      {kOnnxDomain, "Identity", Versions{14, 15}, "T", "T", {{"T", kAllTypes, kTensorKind | kSequenceKind}},
       MakeOp<IdentityOp>,
       kOutputViewsInput},
      {kOnnxDomain, "Identity", Versions{16}, "T", "T", {{"T", kAllTypes, kAnyKind}}, MakeOp<IdentityOp>,
       kOutputViewsInput},
      {kOnnxDomain, "Reshape", Versions{1, 4}, "T", "T", {{"T", kAllTypes}}, MakeOp<ReshapeOp>, kOutputViewsInput},
      {kOnnxDomain, "Reshape", Versions{5}, "T I", "T", {{"T", kAllTypes}, {"I", kInt64}}, MakeOp<ReshapeOp>,
       kOutputViewsInput},
      {kOnnxDomain, "Flatten", Versions{1}, "T", "T", any, MakeOp<FlattenOp>, kOutputViewsInput},
      {kOnnxDomain, "Squeeze", Versions{1, 12}, "T", "T", any, MakeOp<SqueezeOp>, kOutputViewsInput},
      {kOnnxDomain, "Squeeze", Versions{13}, "T I?", "T", {{"T", kAllTypes}, {"I", kInt64}}, MakeOp<SqueezeOp>,
       kOutputViewsInput},
      {kOnnxDomain, "Unsqueeze", Versions{1, 12}, "T", "T", any, MakeOp<UnsqueezeOp>, kOutputViewsInput},
      {kOnnxDomain, "Unsqueeze", Versions{13}, "T I", "T", {{"T", kAllTypes}, {"I", kInt64}}, MakeOp<UnsqueezeOp>,
       kOutputViewsInput},
      {kOnnxDomain, "Shape", Versions{1}, "T", "I", {{"T", kAllTypes}, {"I", kInt64}}, MakeOp<ShapeOp>},
      {kOnnxDomain, "Size", Versions{1}, "T", "I", {{"T", kAllTypes}, {"I", kInt64}}, MakeOp<SizeOp>},
      {kOnnxDomain, "Transpose", Versions{1}, "T", "T", {{"T", kUnpackedTypes}}, MakeOp<TransposeOp>},
  };
}

}  // namespace onnx_mini
