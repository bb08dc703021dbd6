// Checks against a node's registry row (arity, element types, sizes) and
// against declared types (outputs, a run's values).
#include "absl/strings/str_cat.h"
#include "runtime/session/impl.h"

namespace onnx_mini {
namespace session_detail {
namespace {

unsigned KindBit(const ValueType& t) {
  switch (t.kind) {
    case ValueType::Kind::kTensor: return kTensorKind;
    case ValueType::Kind::kSequence: return kSequenceKind;
    case ValueType::Kind::kOptional:
      return t.content == ValueType::Kind::kSequence ? kOptionalSequenceKind : kOptionalTensorKind;
    default: return 0;
  }
}

}  // namespace

// Checks a node's arity and input element types against its row's signature.
absl::Status CheckInputs(const Node& node, const RegisteredOp& row,
                         const std::vector<const ValueType*>& types, std::vector<DType>& bound) {
  size_t given = node.inputs.size();
  while (given > 0 && node.inputs[given - 1].empty()) --given;
  const auto error = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
  };
  const auto range = [](size_t lo, size_t hi) {
    return hi == SIZE_MAX ? absl::StrCat(lo, " or more") : lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, " to ", hi);
  };
  if (given < row.min_inputs || given > row.max_inputs)
    return error(absl::StrCat("takes ", range(row.min_inputs, row.max_inputs), " inputs, got ", given));
  if (node.outputs.size() < row.min_outputs || node.outputs.size() > row.max_outputs)
    return error(absl::StrCat("has ", range(row.min_outputs, row.max_outputs), " outputs, got ",
                              node.outputs.size()));
  bound.assign(row.def.types.size(), DType::kUndefined);
  std::vector<size_t> bound_by(row.def.types.size(), 0);
  for (size_t i = 0; i < types.size(); ++i) {
    const RegisteredOp::Formal* f = row.input(i);
    if (types[i] == nullptr) {
      if (f != nullptr && f->kind != RegisteredOp::Formal::kOptional && i < given)
        return error(absl::StrCat("input ", i, " is required"));
      // Variadic inputs are all present, trailing ones too: kernels read every one.
      if (f != nullptr && f->kind == RegisteredOp::Formal::kVariadic)
        return error(absl::StrCat("input ", i, " is empty, but every input of a variadic list is required"));
      continue;
    }
    const ValueType& t = *types[i];
    if (!t.supported()) return NotImplemented(node, absl::StrCat("input ", i, " of type ", t.ToString()));
    const TypeConstraint& c = row.def.types[size_t(f->constraint)];
    if (!(c.kinds & KindBit(t)))
      return error(absl::StrCat("input ", i, " is ", t.ToString(), ": type ", c.name, " admits no ",
                                t.kind == ValueType::Kind::kTensor ? "tensor" : "such value"));
    if (t.dtype == DType::kUndefined) return error(absl::StrCat("the element type of input ", i, " is unknown"));
    if (!c.types.contains(t.dtype)) return NotImplemented(node, t.dtype);
    if (c.heterogeneous) continue;
    DType& b = bound[size_t(f->constraint)];
    if (b == DType::kUndefined) {
      b = t.dtype;
      bound_by[size_t(f->constraint)] = i;
    } else if (b != t.dtype) {
      return error(absl::StrCat("input ", i, " is ", LowerName(t.dtype), " but input ",
                                bound_by[size_t(f->constraint)], " is ", LowerName(b),
                                ": both have type ", c.name));
    }
  }
  for (size_t i = 0; i < row.min_inputs && i < node.inputs.size(); ++i)
    if (node.inputs[i].empty()) return error(absl::StrCat("input ", i, " is required"));
  return absl::OkStatus();
}

// Checks the element types Infer gave the outputs against the signature.
absl::Status CheckOutputs(const Node& node, const RegisteredOp& row, const std::vector<ValueType>& outputs,
                          std::vector<DType>& bound) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!node.has_output(i)) continue;
    const RegisteredOp::Formal* f = row.output(i);
    const DType d = outputs[i].dtype;
    if (d == DType::kUndefined) continue;  // an op that cannot tell yet
    const TypeConstraint& c = row.def.types[size_t(f->constraint)];
    if (!c.types.contains(d)) return NotImplemented(node, d);
    if (c.heterogeneous) continue;
    DType& b = bound[size_t(f->constraint)];
    if (b == DType::kUndefined) b = d;
    else if (b != d)
      return absl::InternalError(absl::StrCat(node.Describe(), ": output ", i, " is ", LowerName(d),
                                              " but its type ", c.name, " is ", LowerName(b)));
  }
  return absl::OkStatus();
}

// Refuses an output too large to allocate, before any kernel could ask for it.
absl::Status CheckOutputSize(const Node& node, size_t i, DType dtype, const Shape& shape) {
  const int64_t count = ElementCount(shape);
  if (count < 0 || StorageBytes(dtype, count) > kMaxTensorBytes)
    return absl::InvalidArgumentError(
        absl::StrCat(node.Describe(), ": output ", i, " of shape ", ShapeToString(shape), " is too large"));
  return absl::OkStatus();
}

// Merges a declared type into an inferred one; a contradiction is an error.
absl::Status MergeDeclared(const Node& node, const std::string& name, const ValueType& declared,
                           ValueType& inferred) {
  // A declared kind the op does not produce is left to the op (and to the
  // run); the element type and dims merge as a tensor's.
  if (declared.kind != inferred.kind || !declared.supported() || declared.content != inferred.content)
    return absl::OkStatus();
  if (declared.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined &&
      declared.dtype != inferred.dtype)
    return absl::InvalidArgumentError(absl::StrCat(
        node.Describe(), ": output '", name, "' is declared ", LowerName(declared.dtype),
        " but the op produces ", LowerName(inferred.dtype)));
  if (inferred.dtype == DType::kUndefined) inferred.dtype = declared.dtype;
  if (!declared.dims) return absl::OkStatus();
  if (!inferred.dims) {
    inferred.dims = declared.dims;
    return absl::OkStatus();
  }
  if (declared.dims->size() != inferred.dims->size())
    return absl::InvalidArgumentError(absl::StrCat(
        node.Describe(), ": output '", name, "' is declared ", declared.ToString(),
        " but the op produces ", inferred.ToString(), " (rank differs)"));
  for (size_t i = 0; i < declared.dims->size(); ++i) {
    Dim& have = (*inferred.dims)[i];
    const Dim& want = (*declared.dims)[i];
    if (have.known() && want.known() && have.value != want.value)
      return absl::InvalidArgumentError(absl::StrCat(
          node.Describe(), ": output '", name, "' is declared ", declared.ToString(),
          " but the op produces ", inferred.ToString()));
    // A symbol the op derives stands where the declaration knows nothing.
    if (!have.known() && (want.known() || !want.symbol.empty() || have.symbol.empty())) have = want;
  }
  return absl::OkStatus();
}

bool ScalarGivenAsOne(const ValueType& type, const Value& v) {
  return v.is_tensor() && type.dims && type.dims->empty() && v.tensor().shape() == Shape{1};
}

// Whether a run-time value fits a declared type (kind, element type, and
// with `check_dims` the shape: not for a subgraph's inputs, whose shapes may
// change from one iteration to the next).
absl::Status CheckValue(const std::string& what, const ValueType& type, const Value& v, bool check_dims) {
  const auto fits_dims = [&](const Shape& shape) {
    if (!type.dims || !check_dims) return true;
    if (type.dims->size() != shape.size()) return false;
    for (size_t i = 0; i < shape.size(); ++i)
      if ((*type.dims)[i].known() && (*type.dims)[i].value != shape[i]) return false;
    return true;
  };
  const ValueType::Kind want = type.unwrapped().kind;
  if (v.is_none()) {
    if (type.kind == ValueType::Kind::kOptional) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(what, " has no data"));
  }
  if ((want == ValueType::Kind::kTensor) != v.is_tensor())
    return absl::InvalidArgumentError(absl::StrCat(what, " must be ", type.ToString(), ", got ", v.ToString()));
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    if (t.size() < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has no data"));
    if (t.dtype() != type.dtype)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be ", LowerName(type.dtype), ", got ", LowerName(t.dtype())));
    if (!fits_dims(t.shape()) && !(check_dims && ScalarGivenAsOne(type, v)))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must have shape ", type.ToString(), ", got ", ShapeToString(t.shape())));
    return absl::OkStatus();
  }
  if (v.sequence_dtype() != type.dtype)
    return absl::InvalidArgumentError(absl::StrCat(what, " must be ", type.ToString(), ", got a sequence of ",
                                                   LowerName(v.sequence_dtype())));
  for (size_t k = 0; k < v.sequence().size(); ++k) {
    const Tensor& item = v.sequence()[k];
    if (!item.defined() || item.dtype() != type.dtype || !fits_dims(item.shape()))
      return absl::InvalidArgumentError(absl::StrCat(what, ": item ", k, " must be ", type.element().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace session_detail
}  // namespace onnx_mini
