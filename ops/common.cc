#include "ops/common.h"

#include "runtime/registry.h"

namespace onnx_mini {

bool OneOf(DType dtype, std::initializer_list<DType> set) {
  for (DType d : set)
    if (d == dtype) return true;
  return false;
}

absl::Status CheckArity(const InferContext& ctx, size_t min_inputs, size_t max_inputs,
                        size_t min_outputs, size_t max_outputs) {
  const Node& node = ctx.node();
  size_t inputs = node.inputs.size();
  while (inputs > 0 && node.inputs[inputs - 1].empty()) --inputs;
  if (inputs < min_inputs || node.inputs.size() > max_inputs)
    return ctx.Error(absl::StrCat("takes ", min_inputs, " to ", max_inputs, " inputs, got ",
                                  node.inputs.size()));
  for (size_t i = 0; i < min_inputs; ++i)
    if (node.inputs[i].empty()) return ctx.Error(absl::StrCat("input ", i, " is required"));
  if (node.outputs.size() < min_outputs || node.outputs.size() > max_outputs)
    return ctx.Error(absl::StrCat("has ", min_outputs, " to ", max_outputs, " outputs, got ",
                                  node.outputs.size()));
  return absl::OkStatus();
}

absl::StatusOr<DType> CheckInputs(const InferContext& ctx, size_t min_inputs, size_t max_inputs,
                                  size_t min_outputs, size_t max_outputs) {
  absl::Status s = CheckArity(ctx, min_inputs, max_inputs, min_outputs, max_outputs);
  if (!s.ok()) return s;
  return InputDType(ctx, 0);
}

absl::StatusOr<DType> InputDType(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ctx.Error(absl::StrCat("input ", i, " is required"));
  const ValueType& t = ctx.input(i);
  if (t.kind != ValueType::Kind::kTensor)
    return NotImplemented(ctx.node(), absl::StrCat("input ", i, " of type ", t.ToString()));
  if (t.dtype == DType::kUndefined)
    return ctx.Error(absl::StrCat("the element type of input ", i, " is unknown"));
  return t.dtype;
}

absl::Status RequireDType(const KernelInfo& info, size_t input, std::initializer_list<DType> set) {
  const DType dtype = info.inputs[input]->dtype;
  if (!OneOf(dtype, set)) return NotImplemented(info.node, dtype);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Dim>> BroadcastDims(const InferContext& ctx, const std::vector<Dim>& a,
                                               const std::vector<Dim>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->known() && db->known()) {
      if (da->value != db->value && da->value != 1 && db->value != 1) {
        return ctx.Error(absl::StrCat("shapes ", DimsToString(a), " and ", DimsToString(b),
                                      " do not broadcast (dim ", i, ": ", da->value, " vs ",
                                      db->value, ")"));
      }
      out[i] = Dim::Known(da->value == 1 ? db->value : da->value);
    } else if (da->known() && da->value != 1) {
      out[i] = *da;
    } else if (db->known() && db->value != 1) {
      out[i] = *db;
    } else if (da->known()) {  // a is 1: the result is b's dim
      out[i] = *db;
    } else if (db->known()) {
      out[i] = *da;
    } else {
      out[i] = (!da->symbol.empty() && da->symbol == db->symbol) ? *da : Dim{};
    }
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = out.size() - 1 - k;
    strides[o] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

}  // namespace onnx_mini
