// Sequence and optional values: SequenceEmpty, SequenceConstruct, SequenceAt,
// SequenceInsert, SequenceErase, SequenceLength, SplitToSequence,
// ConcatFromSequence, SequenceMap (its body planned once, run per element),
// Optional, OptionalHasElement, OptionalGetElement.
//
// Their rows make their outputs (OpDef::makes_outputs): a sequence's length
// and items are known only at run time, so Infer derives the types once, at
// session creation, and the kernels check what depends on the values
// (positions, item shapes). Sequences are immutable and share their items'
// storage: inserting or erasing makes a new list of the same tensors.
#include "ops/control/sequence.h"

#include <cstring>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {

void CopyBlock(const Tensor& src, int64_t src_at, Tensor& dst, int64_t dst_at, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DType::kString) {
    const std::string* from = src.data<std::string>() + src_at;
    std::string* to = dst.data<std::string>() + dst_at;
    for (int64_t i = 0; i < count; ++i) to[i] = from[i];
    return;
  }
  const size_t width = StorageBytes(src.dtype(), 1);
  std::memcpy(static_cast<char*>(dst.raw()) + size_t(dst_at) * width,
              static_cast<const char*>(src.raw()) + size_t(src_at) * width, size_t(count) * width);
}

absl::StatusOr<Tensor> ConcatItems(const KernelContext& ctx, const std::vector<Tensor>& items, int64_t axis,
                                   bool stack) {
  if (items.empty()) return ctx.Error("cannot concatenate an empty sequence");
  const Tensor& first = items[0];
  const int64_t rank = first.rank() + (stack ? 1 : 0);
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for items of rank ", first.rank(),
                                  stack ? " stacked" : ""));
  if (axis < 0) axis += rank;
  if (Info(first.dtype()).packed()) return NotImplemented(ctx.node(), first.dtype());
  // Every item as [outer, length along axis, inner].
  Shape out_shape = first.shape();
  if (stack) out_shape.insert(out_shape.begin() + axis, 0);
  else out_shape[size_t(axis)] = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Tensor& t = items[k];
    bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int64_t d = 0; same && d < first.rank(); ++d)
      same = (!stack && d == axis) || t.dim(d) == first.dim(d);
    if (!same)
      return ctx.Error(absl::StrCat("item ", k, " is ", LowerName(t.dtype()), ShapeToString(t.shape()),
                                    " but item 0 is ", LowerName(first.dtype()), ShapeToString(first.shape()),
                                    stack ? ": stacked items must have one shape" : ": only the axis may differ"));
    out_shape[size_t(axis)] += stack ? 1 : t.dim(axis);
  }
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(first.dtype(), out_shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[size_t(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[size_t(d)];
  const int64_t out_row = out_shape[size_t(axis)] * inner;
  int64_t offset = 0;  // along the axis
  for (const Tensor& t : items) {
    const int64_t length = stack ? 1 : t.dim(axis);
    for (int64_t o = 0; o < outer; ++o)
      CopyBlock(t, o * length * inner, out, o * out_row + offset * inner, length * inner);
    offset += length;
  }
  return out;
}

absl::StatusOr<Tensor> SliceAxis(const KernelContext& ctx, const Tensor& t, int64_t axis, int64_t begin,
                                 int64_t length, bool squeeze) {
  Shape shape = t.shape();
  shape[size_t(axis)] = length;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  if (squeeze) shape.erase(shape.begin() + axis);
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(t.dtype(), shape));
  for (int64_t o = 0; o < outer; ++o)
    CopyBlock(t, (o * t.dim(axis) + begin) * inner, out, o * length * inner, length * inner);
  return out;
}

// Dims that hold for both types: equal known dims stay, others become unknown.
std::optional<std::vector<Dim>> MergeDims(const std::optional<std::vector<Dim>>& a,
                                          const std::optional<std::vector<Dim>>& b) {
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  std::vector<Dim> out = *a;
  for (size_t i = 0; i < out.size(); ++i)
    if (!(out[i].known() && (*b)[i].known() && out[i].value == (*b)[i].value) &&
        !(out[i].symbol.size() && out[i].symbol == (*b)[i].symbol))
      out[i] = Dim{};
  return out;
}

namespace {

// The position input (a scalar of int32 or int64) made non-negative within
// [0, limit]; `end_ok` admits limit itself (insertion at the end).
absl::StatusOr<int64_t> Position(const KernelContext& ctx, size_t input, int64_t count, bool end_ok) {
  const Tensor& p = *ctx.input(input);
  if (p.size() != 1)
    return ctx.Error(absl::StrCat("position must be a scalar, got shape ", ShapeToString(p.shape())));
  int64_t pos = IndexValues(p)[0];
  const int64_t hi = end_ok ? count : count - 1;
  if (pos < -count || pos > hi)
    return ctx.Error(absl::StrCat("position ", pos, " is out of range [", -count, ", ", hi,
                                  "] for a sequence of ", count));
  return pos < 0 ? pos + count : pos;
}

class SequenceEmptyOp : public Op {
 public:
  explicit SequenceEmptyOp(const Node& node) : dtype_(DType(node.attr_int("dtype", int64_t(DType::kFloat)))) {}
  absl::Status Infer(InferContext& ctx) const override {
    if (!IsValidDType(int(dtype_)) || dtype_ == DType::kUndefined)
      return ctx.Error(absl::StrCat("dtype ", int(dtype_), " is not an element type"));
    ValueType t;
    t.dtype = dtype_;
    ctx.set_output(0, ValueType::SequenceOf(t));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.set_value(0, Value::Sequence(dtype_, {}));
    return absl::OkStatus();
  }

 private:
  DType dtype_;
};

class SequenceConstructOp : public Op {
 public:
  explicit SequenceConstructOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType e = ctx.input(0);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) e.dims = MergeDims(e.dims, ctx.input(i).dims);
    ctx.set_output(0, ValueType::SequenceOf(e));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    std::vector<Tensor> items;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) items.push_back(*ctx.input(i));
    const DType dtype = items[0].dtype();
    ctx.set_value(0, Value::Sequence(dtype, std::move(items)));
    return absl::OkStatus();
  }
};

class SequenceAtOp : public Op {
 public:
  explicit SequenceAtOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).element());
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const std::vector<Tensor>& items = ctx.value(0)->sequence();
    ASSIGN_OR_RETURN(int64_t pos, Position(ctx, 1, int64_t(items.size()), false));
    ctx.set_value(0, items[size_t(pos)]);
    return absl::OkStatus();
  }
};

class SequenceInsertOp : public Op {
 public:
  explicit SequenceInsertOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& s = ctx.input(0);
    const ValueType& t = ctx.input(1);
    if (s.dtype != t.dtype)
      return ctx.Error(absl::StrCat("the tensor is ", LowerName(t.dtype), " but the sequence holds ",
                                    LowerName(s.dtype)));
    ValueType out = s;
    out.dims = MergeDims(s.dims, t.dims);
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Value& s = *ctx.value(0);
    std::vector<Tensor> items = s.sequence();
    int64_t pos = int64_t(items.size());
    if (ctx.input(2)) {
      ASSIGN_OR_RETURN(pos, Position(ctx, 2, int64_t(items.size()), true));
    }
    items.insert(items.begin() + pos, *ctx.input(1));
    ctx.set_value(0, Value::Sequence(s.sequence_dtype(), std::move(items)));
    return absl::OkStatus();
  }
};

class SequenceEraseOp : public Op {
 public:
  explicit SequenceEraseOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Value& s = *ctx.value(0);
    std::vector<Tensor> items = s.sequence();
    if (items.empty()) return ctx.Error("cannot erase from an empty sequence");
    int64_t pos = int64_t(items.size()) - 1;
    if (ctx.input(1)) {
      ASSIGN_OR_RETURN(pos, Position(ctx, 1, int64_t(items.size()), false));
    }
    items.erase(items.begin() + pos);
    ctx.set_value(0, Value::Sequence(s.sequence_dtype(), std::move(items)));
    return absl::OkStatus();
  }
};

class SequenceLengthOp : public Op {
 public:
  explicit SequenceLengthOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ValueType::Of(DType::kInt64, {}));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor n, ctx.NewTensor(DType::kInt64, {}));
    n.data<int64_t>()[0] = int64_t(ctx.value(0)->sequence().size());
    ctx.set_value(0, std::move(n));
    return absl::OkStatus();
  }
};

class SplitToSequenceOp : public Op {
 public:
  explicit SplitToSequenceOp(const Node& node)
      : axis_(node.attr_int("axis", 0)), keepdims_(node.attr_int("keepdims", 1) != 0) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType e = ctx.input(0);
    if (e.dims) {
      ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axis_, e.rank(), "axis"));
      if (!ctx.has_input(1) && !keepdims_) e.dims->erase(e.dims->begin() + axis);
      else (*e.dims)[size_t(axis)] = ctx.has_input(1) ? Dim{} : Dim::Known(1);
    }
    if (ctx.has_input(1) && ctx.input(1).dims && ctx.input(1).rank() > 1)
      return ctx.Error(absl::StrCat("split must be a scalar or 1-D, got rank ", ctx.input(1).rank()));
    ctx.set_output(0, ValueType::SequenceOf(e));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (axis_ < -x.rank() || axis_ >= x.rank())
      return ctx.Error(absl::StrCat("axis ", axis_, " is out of range for rank ", x.rank()));
    const int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    const int64_t n = x.dim(axis);
    std::vector<int64_t> lengths;
    const Tensor* split = ctx.input(1);
    // The items' bookkeeping and lengths, held while they are made (an axis
    // of 2^40 empty slices must fail here, not in the allocator).
    MemoryReservation items_reserved;
    const size_t item_bytes = kItemOverheadBytes + sizeof(int64_t) * (size_t(x.rank()) + 1);
    if (split == nullptr) {
      ASSIGN_OR_RETURN(items_reserved, ctx.Reserve(n, item_bytes, "the sequence's items"));
      lengths.assign(size_t(n), 1);
    } else if (split->rank() == 0) {
      const int64_t chunk = IndexValues(*split)[0];
      if (chunk <= 0) return ctx.Error(absl::StrCat("split ", chunk, " must be positive"));
      ASSIGN_OR_RETURN(items_reserved, ctx.Reserve(n / chunk + 1, item_bytes, "the sequence's items"));
      for (int64_t at = 0; at < n; at += chunk) lengths.push_back(std::min(chunk, n - at));
    } else {
      lengths = IndexValues(*split);
      int64_t sum = 0;
      for (int64_t l : lengths) {
        if (l < 0) return ctx.Error(absl::StrCat("split length ", l, " is negative"));
        sum += l;
      }
      if (sum != n)
        return ctx.Error(absl::StrCat("split lengths sum to ", sum, " but the axis has ", n));
    }
    std::vector<Tensor> items;
    int64_t at = 0;
    for (int64_t l : lengths) {
      ASSIGN_OR_RETURN(Tensor part, SliceAxis(ctx, x, axis, at, l, split == nullptr && !keepdims_));
      items.push_back(std::move(part));
      at += l;
    }
    ctx.set_value(0, Value::Sequence(x.dtype(), std::move(items)));
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

class ConcatFromSequenceOp : public Op {
 public:
  explicit ConcatFromSequenceOp(const Node& node)
      : has_axis_(node.attr("axis") != nullptr), axis_(node.attr_int("axis", 0)),
        new_axis_(node.attr_int("new_axis", 0) != 0) {}
  absl::Status Infer(InferContext& ctx) const override {
    if (!has_axis_) return ctx.Error("attribute 'axis' is required");
    ValueType e = ctx.input(0).element();
    if (e.dims) {
      const int64_t rank = e.rank() + (new_axis_ ? 1 : 0);
      ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axis_, rank, "axis"));
      if (new_axis_) e.dims->insert(e.dims->begin() + axis, Dim{});
      else (*e.dims)[size_t(axis)] = Dim{};
    }
    ctx.set_output(0, e);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor out, ConcatItems(ctx, ctx.value(0)->sequence(), axis_, new_axis_));
    ctx.set_value(0, std::move(out));
    return absl::OkStatus();
  }

 private:
  bool has_axis_;
  int64_t axis_;
  bool new_axis_;
};

// The body runs once per position of the first sequence; additional inputs
// are sequences (of the same length, read at that position) or tensors (the
// same every time). Each body output collects into an output sequence.
struct SequenceMapPlan : OpPlan {
  const Subgraph* body = nullptr;
  std::vector<DType> out_dtypes;
};

class SequenceMapOp : public Op {
 public:
  explicit SequenceMapOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    std::vector<ValueType> body_inputs;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return ctx.Error(absl::StrCat("input ", i, " is absent"));
      const ValueType& t = ctx.input(i);
      if (t.kind != ValueType::Kind::kTensor && t.kind != ValueType::Kind::kSequence)
        return ctx.Error(absl::StrCat("input ", i, " is ", t.ToString(), ": a sequence or a tensor"));
      body_inputs.push_back(t.element());
    }
    ASSIGN_OR_RETURN(const Subgraph* body, ctx.subgraph("body", body_inputs));
    if (body->outputs().size() != ctx.num_outputs())
      return ctx.Error(absl::StrCat("the body has ", body->outputs().size(), " outputs, the node ",
                                    ctx.num_outputs()));
    auto plan = std::make_shared<SequenceMapPlan>();
    plan->body = body;
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      const ValueType& t = body->outputs()[i].type;
      if (!t.is_tensor()) return ctx.Error(absl::StrCat("body output ", i, " is ", t.ToString(), ", not a tensor"));
      ctx.set_output(i, ValueType::SequenceOf(t));
      plan->out_dtypes.push_back(t.dtype);
    }
    ctx.set_plan(plan);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const auto& plan = ctx.plan<SequenceMapPlan>();
    const size_t n = ctx.value(0)->sequence().size();
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.value(i)->is_sequence() && ctx.value(i)->sequence().size() != n)
        return ctx.Error(absl::StrCat("input ", i, " is a sequence of ", ctx.value(i)->sequence().size(),
                                      " but input 0 has ", n));
    std::vector<std::vector<Tensor>> outs(ctx.num_outputs());
    // The output items' bookkeeping, while they are made.
    ASSIGN_OR_RETURN(MemoryReservation items_reserved,
                     ctx.Reserve(int64_t(n), kItemOverheadBytes * outs.size(), "the sequences' items"));
    std::vector<Value> results;
    for (size_t k = 0; k < n; ++k) {
      RETURN_IF_ERROR(ctx.CheckCancelled());
      std::vector<Value> args;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const Value& v = *ctx.value(i);
        args.push_back(v.is_sequence() ? Value(v.sequence()[k]) : v);
      }
      RETURN_IF_ERROR(ctx.RunSubgraph(*plan.body, std::move(args), &results));
      for (size_t o = 0; o < outs.size(); ++o) {
        if (!results[o].is_tensor())
          return ctx.Error(absl::StrCat("body output ", o, " is ", results[o].ToString(), ", not a tensor"));
        outs[o].push_back(results[o].tensor());
      }
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      const DType dtype = outs[o].empty() ? plan.out_dtypes[o] : outs[o][0].dtype();
      if (dtype == DType::kUndefined) return ctx.Error(absl::StrCat("the element type of output ", o, " is unknown"));
      ctx.set_value(o, Value::Sequence(dtype, std::move(outs[o])));
    }
    return absl::OkStatus();
  }
};

class OptionalOp : public Op {
 public:
  explicit OptionalOp(const Node& node) : type_(node.attr("type") ? &node.attr("type")->tp : nullptr) {}
  absl::Status Infer(InferContext& ctx) const override {
    if (ctx.has_input(0)) {
      ctx.set_output(0, ValueType::OptionalOf(ctx.input(0)));
      return absl::OkStatus();
    }
    if (type_ == nullptr) return ctx.Error("an Optional without input needs the attribute 'type'");
    if (!type_->supported() || type_->kind == ValueType::Kind::kOptional || type_->dtype == DType::kUndefined)
      return NotImplemented(ctx.node(), absl::StrCat("type ", type_->ToString()));
    ctx.set_output(0, ValueType::OptionalOf(*type_));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.set_value(0, ctx.value(0) ? *ctx.value(0) : Value());
    return absl::OkStatus();
  }

 private:
  const ValueType* type_;  // in the node, which outlives the op
};

class OptionalHasElementOp : public Op {
 public:
  explicit OptionalHasElementOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ValueType::Of(DType::kBool, {}));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor b, ctx.NewTensor(DType::kBool, {}));
    b.data<bool>()[0] = ctx.value(0) != nullptr && !ctx.value(0)->is_none();
    ctx.set_value(0, std::move(b));
    return absl::OkStatus();
  }
};

class OptionalGetElementOp : public Op {
 public:
  explicit OptionalGetElementOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).unwrapped());
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.value(0)->is_none()) return ctx.Error("the optional input has no element");
    ctx.set_value(0, *ctx.value(0));
    return absl::OkStatus();
  }
};

}  // namespace

std::vector<OpDef> SequenceOps() {
  const TypeConstraint seq{"S", kAllTypes, kSequenceKind};
  const TypeConstraint copied_seq{"S", kUnpackedTypes, kSequenceKind};
  const TypeConstraint any{"T", kAllTypes};
  const TypeConstraint index{"I", kIndexTypes};
  const TypeConstraint tensor_or_seq{"V", kAllTypes, kTensorKind | kSequenceKind};
  std::vector<OpDef> rows = {
      {kOnnxDomain, "SequenceEmpty", Versions{11}, "", "S", {seq}, MakeOp<SequenceEmptyOp>, kMakesOutputs},
      {kOnnxDomain, "SequenceConstruct", Versions{11}, "T*", "S", {any, seq}, MakeOp<SequenceConstructOp>,
       kMakesOutputs},
      {kOnnxDomain, "SequenceAt", Versions{11}, "S I", "T", {seq, any, index}, MakeOp<SequenceAtOp>, kMakesOutputs},
      {kOnnxDomain, "SequenceInsert", Versions{11}, "S T I?", "S", {seq, any, index}, MakeOp<SequenceInsertOp>,
       kMakesOutputs},
      {kOnnxDomain, "SequenceErase", Versions{11}, "S I?", "S", {seq, index}, MakeOp<SequenceEraseOp>, kMakesOutputs},
      {kOnnxDomain, "SequenceLength", Versions{11}, "S", "I", {seq, {"I", kInt64}}, MakeOp<SequenceLengthOp>,
       kMakesOutputs},
      {kOnnxDomain, "SplitToSequence", Versions{11}, "T I?", "S", {{"T", kUnpackedTypes}, index, copied_seq},
       MakeOp<SplitToSequenceOp>, kMakesOutputs},
      {kOnnxDomain, "ConcatFromSequence", Versions{11}, "S", "T", {copied_seq, {"T", kUnpackedTypes}},
       MakeOp<ConcatFromSequenceOp>, kMakesOutputs},
      {kOnnxDomain, "SequenceMap", Versions{17}, "S V*?", "O*",
       {{"S", kAllTypes, kSequenceKind}, {"V", kAllTypes, kTensorKind | kSequenceKind, true},
        {"O", kAllTypes, kSequenceKind, true}},
       MakeOp<SequenceMapOp>, kMakesOutputs},
      {kOnnxDomain, "Optional", Versions{15}, "V?", "O", {tensor_or_seq, {"O", kAllTypes, kOptionalKind}},
       MakeOp<OptionalOp>, kMakesOutputs},
      {kOnnxDomain, "OptionalHasElement", Versions{15, 17}, "O", "B", {{"O", kAllTypes, kOptionalKind}, {"B", kBool}},
       MakeOp<OptionalHasElementOp>, kMakesOutputs},
      {kOnnxDomain, "OptionalHasElement", Versions{18}, "O?", "B", {{"O", kAllTypes, kAnyKind}, {"B", kBool}},
       MakeOp<OptionalHasElementOp>, kMakesOutputs},
      {kOnnxDomain, "OptionalGetElement", Versions{15, 17}, "O", "V", {{"O", kAllTypes, kOptionalKind}, tensor_or_seq},
       MakeOp<OptionalGetElementOp>, kMakesOutputs},
      {kOnnxDomain, "OptionalGetElement", Versions{18}, "O", "V", {{"O", kAllTypes, kAnyKind}, tensor_or_seq},
       MakeOp<OptionalGetElementOp>, kMakesOutputs},
  };
  return rows;
}

}  // namespace onnx_mini
