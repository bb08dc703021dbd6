#include "runtime/registry.h"

#include <cstdint>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace onnx_mini {
namespace {

int64_t End(const OpDef& d) { return d.last_version == 0 ? INT64_MAX : d.last_version; }

// Parses "T T1? I*" against the row's constraints.
absl::Status ParseSignature(const OpDef& def, const std::string& text, const char* what,
                            std::vector<RegisteredOp::Formal>& formals, size_t& min_count,
                            size_t& max_count) {
  const std::string row = absl::StrCat(DomainName(def.domain), "::", def.op_type, " ", what);
  min_count = 0;
  bool optional_seen = false;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!formals.empty() && formals.back().kind == RegisteredOp::Formal::kVariadic)
      return absl::InvalidArgumentError(absl::StrCat(row, ": only the last position may be variadic"));
    RegisteredOp::Formal f{-1, RegisteredOp::Formal::kRequired};
    // "V*?": a variadic tail of zero or more.
    const bool none_ok = word.size() > 2 && word.substr(word.size() - 2) == "*?";
    if (none_ok) word.remove_suffix(1);
    if (word.back() == '?') f.kind = RegisteredOp::Formal::kOptional;
    if (word.back() == '*') f.kind = RegisteredOp::Formal::kVariadic;
    if (f.kind != RegisteredOp::Formal::kRequired) word.remove_suffix(1);
    for (size_t c = 0; c < def.types.size(); ++c)
      if (def.types[c].name == word) f.constraint = int(c);
    if (f.constraint < 0)
      return absl::InvalidArgumentError(absl::StrCat(row, ": unknown type constraint '", word, "'"));
    if (f.kind == RegisteredOp::Formal::kOptional) optional_seen = true;
    if (f.kind != RegisteredOp::Formal::kOptional && !optional_seen && !none_ok) ++min_count;
    formals.push_back(f);
  }
  const bool variadic = !formals.empty() && formals.back().kind == RegisteredOp::Formal::kVariadic;
  max_count = variadic ? SIZE_MAX : formals.size();
  return absl::OkStatus();
}

}  // namespace

const RegisteredOp::Formal* RegisteredOp::input(size_t i) const {
  if (i < inputs.size()) return &inputs[i];
  if (!inputs.empty() && inputs.back().kind == Formal::kVariadic) return &inputs.back();
  return nullptr;
}

const RegisteredOp::Formal* RegisteredOp::output(size_t i) const {
  if (i < outputs.size()) return &outputs[i];
  if (!outputs.empty() && outputs.back().kind == Formal::kVariadic) return &outputs.back();
  return nullptr;
}

const Alias* RegisteredOp::alias(size_t output) const {
  for (const Alias& a : def.aliases)
    if (a.output == int(output)) return &a;
  return nullptr;
}

bool OpRegistry::Overlaps(const OpDef& def) const {
  auto it = rows_.find({def.domain, def.op_type});
  if (it != rows_.end())
    for (const auto& row : it->second)
      if (def.since_version <= End(row->def) && row->def.since_version <= End(def)) return true;
  return fallback_ != nullptr && fallback_->Overlaps(def);
}

absl::Status OpRegistry::Add(OpDef def) {
  const std::string who = absl::StrCat(DomainName(def.domain), "::", def.op_type);
  if (def.op_type.empty() || def.create == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(who, ": a row needs an op type and a factory"));
  if (def.since_version < 1 || (def.last_version != 0 && def.last_version < def.since_version))
    return absl::InvalidArgumentError(absl::StrCat(who, ": invalid version range ", def.since_version,
                                                   "..", def.last_version));
  for (const TypeConstraint& c : def.types)
    if (c.types.empty())
      return absl::InvalidArgumentError(absl::StrCat(who, ": type constraint '", c.name, "' is empty"));
  auto row = std::make_unique<RegisteredOp>(std::move(def));
  const OpDef& d = row->def;
  RETURN_IF_ERROR(ParseSignature(d, d.inputs, "inputs", row->inputs, row->min_inputs, row->max_inputs));
  RETURN_IF_ERROR(ParseSignature(d, d.outputs, "outputs", row->outputs, row->min_outputs, row->max_outputs));
  for (const Alias& a : d.aliases) {
    const RegisteredOp::Formal* in = row->input(size_t(a.input));
    const RegisteredOp::Formal* out = row->output(size_t(a.output));
    if (a.input < 0 || a.output < 0 || in == nullptr || out == nullptr)
      return absl::InvalidArgumentError(absl::StrCat(who, ": alias of output ", a.output, " to input ",
                                                     a.input, " names a position the row does not have"));
  }
  if (Overlaps(d))
    return absl::AlreadyExistsError(absl::StrCat(who, ": versions ", d.since_version, "..",
                                                 d.last_version == 0 ? std::string("") : absl::StrCat(d.last_version),
                                                 " overlap a registered row"));
  auto& list = rows_[{row->def.domain, row->def.op_type}];
  list.push_back(std::move(row));
  return absl::OkStatus();
}

const RegisteredOp* OpRegistry::FindRow(const std::string& domain, const std::string& op_type,
                                        int64_t opset) const {
  auto it = rows_.find({domain, op_type});
  if (it != rows_.end())
    for (const auto& row : it->second)
      if (opset >= row->def.since_version && opset <= End(row->def)) return row.get();
  return fallback_ ? fallback_->FindRow(domain, op_type, opset) : nullptr;
}

absl::StatusOr<const RegisteredOp*> OpRegistry::Find(const std::string& domain, const std::string& op_type,
                                                     int64_t opset) const {
  if (const RegisteredOp* row = FindRow(domain, op_type, opset)) return row;
  return absl::UnimplementedError(
      absl::StrCat("not implemented: ", DomainName(domain), "::", op_type, " opset ", opset));
}

std::vector<const RegisteredOp*> OpRegistry::rows() const {
  std::vector<const RegisteredOp*> all;
  for (const auto& [key, list] : rows_)
    for (const auto& row : list) all.push_back(row.get());
  if (fallback_)
    for (const RegisteredOp* row : fallback_->rows()) all.push_back(row);
  return all;
}

absl::Status NotImplemented(const Node& node, const std::string& what) {
  return absl::UnimplementedError(absl::StrCat("not implemented: ", DomainName(node.domain), "::",
                                               node.op_type, " opset ", node.opset,
                                               what.empty() ? "" : " for ", what));
}

absl::Status NotImplemented(const Node& node, DType dtype) { return NotImplemented(node, LowerName(dtype)); }

std::string TypeSet::ToString() const {
  std::vector<std::string> names;
  for (int code = 1; code <= kMaxDTypeCode; ++code)
    if (contains(DType(code))) names.push_back(LowerName(DType(code)));
  return absl::StrJoin(names, ", ");
}

}  // namespace onnx_mini
