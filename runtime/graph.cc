#include "runtime/graph.h"

#include "runtime/outer_scope.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onnx_mini {

ValueType ValueType::Of(DType dtype, const Shape& shape) {
  ValueType t;
  t.dtype = dtype;
  t.dims.emplace();
  for (int64_t d : shape) t.dims->push_back(Dim::Known(d));
  return t;
}

ValueType ValueType::SequenceOf(const ValueType& element) {
  ValueType t = element;
  t.kind = Kind::kSequence;
  t.content = Kind::kTensor;
  return t;
}

ValueType ValueType::OptionalOf(const ValueType& element) {
  ValueType t = element.unwrapped();
  t.content = t.kind;
  t.kind = Kind::kOptional;
  return t;
}

bool ValueType::supported() const {
  return kind == Kind::kTensor || (kind == Kind::kSequence && content == Kind::kTensor) ||
         (kind == Kind::kOptional && (content == Kind::kTensor || content == Kind::kSequence));
}

ValueType ValueType::element() const {
  ValueType t = *this;
  t.kind = t.content = Kind::kTensor;
  return t;
}

ValueType ValueType::unwrapped() const {
  if (kind != Kind::kOptional) return *this;
  ValueType t = *this;
  t.kind = content;
  t.content = Kind::kTensor;
  return t;
}

std::optional<Shape> ValueType::concrete_shape() const {
  if (!dims) return std::nullopt;
  Shape shape;
  for (const Dim& d : *dims) {
    if (!d.known()) return std::nullopt;
    shape.push_back(d.value);
  }
  return shape;
}

std::string ValueType::ToString() const {
  switch (kind) {
    case Kind::kSequence: return "sequence(" + element().ToString() + ")";
    case Kind::kMap: return "map";
    case Kind::kOptional: return content == Kind::kTensor || content == Kind::kSequence
                                     ? "optional(" + unwrapped().ToString() + ")"
                                     : "optional";
    case Kind::kSparseTensor: return "sparse_tensor";
    case Kind::kUnknown: return "unknown";
    case Kind::kTensor: break;
  }
  const std::string out = dtype == DType::kUndefined ? "?" : LowerName(dtype);
  return out + (dims ? DimsToString(*dims) : "[?]");
}

std::string Value::ToString() const {
  if (is_tensor()) return absl::StrCat("tensor ", LowerName(tensor_.dtype()), ShapeToString(tensor_.shape()));
  if (is_sequence()) return absl::StrCat("sequence of ", sequence().size(), " ", LowerName(sequence_dtype()));
  return "none";
}

std::string DimsToString(const std::vector<Dim>& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims)
    parts.push_back(d.known() ? absl::StrCat(d.value) : (d.symbol.empty() ? "?" : d.symbol));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

const Attribute* Node::attr(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}
int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = attr(key);
  return a ? a->i : fallback;
}
float Node::attr_float(const std::string& key, float fallback) const {
  const Attribute* a = attr(key);
  return a ? a->f : fallback;
}
std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = attr(key);
  return a ? a->s : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& key) const {
  const Attribute* a = attr(key);
  return a ? a->ints : std::vector<int64_t>{};
}

std::string Node::Describe() const {
  std::string who = name.empty()
                        ? (outputs.empty() ? std::string("(unnamed)")
                                           : absl::StrCat("producing '", outputs[0], "'"))
                        : absl::StrCat("'", name, "'");
  return absl::StrCat(op_type, " node ", who);
}

std::string DomainName(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

void FreeNames(const Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const ValueInfo& in : g.inputs) defined.insert(in.name);
  for (const auto& [name, tensor] : g.initializers) defined.insert(name);
  for (const Node& node : g.nodes)
    for (const std::string& o : node.outputs)
      if (!o.empty()) defined.insert(o);
  const auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  };
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs) read(in);
    for (const auto& [key, a] : node.attributes) {
      std::set<std::string> inner;
      if (a.g) FreeNames(*a.g, inner);
      for (const auto& sub : a.graphs)
        if (sub) FreeNames(*sub, inner);
      for (const std::string& name : inner) read(name);
    }
  }
  for (const ValueInfo& o : g.outputs) read(o.name);
}

std::set<std::string> ImplicitInputs(const Node& node) {
  std::set<std::string> names;
  for (const auto& [key, a] : node.attributes) {
    if (a.g) FreeNames(*a.g, names);
    for (const auto& sub : a.graphs)
      if (sub) FreeNames(*sub, names);
  }
  return names;
}

}  // namespace onnx_mini
