// The in-memory model: a Graph of Nodes over named values, built by the loader
// from a ModelProto and independent of protobuf from then on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/tensor.h"
#include "runtime/value.h"

namespace onnx_mini {

struct Graph;

// One dimension of a declared or inferred shape: a known value, a symbol, or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // a dim_param name, when declared symbolically
  bool known() const { return value >= 0; }
  static Dim Known(int64_t v) { return Dim{v, {}}; }
};

// What is known of a value before running: its kind, element type and shape.
// dtype and dims describe the tensor; for a sequence, every element of it;
// for an optional, its element (a tensor, or a sequence's elements: `content`).
struct ValueType {
  enum class Kind { kTensor, kSequence, kMap, kOptional, kSparseTensor, kUnknown };
  Kind kind = Kind::kTensor;
  Kind content = Kind::kTensor;         // kOptional only: kTensor or kSequence
  DType dtype = DType::kUndefined;      // kUndefined: not known
  std::optional<std::vector<Dim>> dims;  // nullopt: rank unknown

  static ValueType Of(DType dtype, const Shape& shape);
  // A sequence whose elements have type `element` (a tensor type).
  static ValueType SequenceOf(const ValueType& element);
  // An optional holding `element` (a tensor or sequence type).
  static ValueType OptionalOf(const ValueType& element);
  bool is_tensor() const { return kind == Kind::kTensor; }
  // Tensor and sequence types, and optionals of them: what the runtime holds.
  bool supported() const;
  // The tensor type of the elements (sequence) or of the element (optional).
  ValueType element() const;
  // The type of the content of an optional; the type itself otherwise.
  ValueType unwrapped() const;
  bool has_rank() const { return dims.has_value(); }
  int64_t rank() const { return dims ? int64_t(dims->size()) : -1; }
  // The shape if every dim is known.
  std::optional<Shape> concrete_shape() const;
  std::string ToString() const;
};

enum class AttrType {
  kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5,
  kFloats = 6, kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10,
  kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13, kTypeProtos = 14,
};

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  ValueType tp;  // a TYPE_PROTO attribute (Optional's `type`)
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  int64_t opset = 0;   // the opset version imported for `domain`
  std::vector<std::string> inputs;   // "" marks an absent optional input
  std::vector<std::string> outputs;  // "" marks an unrequested optional output
  std::map<std::string, Attribute> attributes;

  const Attribute* attr(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key) const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool has_output(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  // "Add node 'name'" or "Add node #index" for messages.
  std::string Describe() const;
};

struct ValueInfo {
  std::string name;
  ValueType type;
};

// What a model says about itself beyond its graph (ModelProto's fields).
struct ModelMetadata {
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::string graph_doc_string;
  std::vector<std::pair<std::string, std::string>> props;       // metadata_props, in order
  std::vector<std::pair<std::string, int64_t>> opset_imports;   // as listed; "" for ai.onnx
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;   // graph inputs, initializers excluded
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  std::map<std::string, ValueType> value_types;  // declared value_info
  std::map<std::string, int64_t> opsets;         // domain ("" = ai.onnx) -> version
  int64_t ir_version = 0;
  std::shared_ptr<const ModelMetadata> metadata;  // the model's graph only; null in subgraphs
};

// "[2,N,?]" for a list of dims.
std::string DimsToString(const std::vector<Dim>& dims);

// "ai.onnx" for the default domain, the domain itself otherwise.
std::string DomainName(const std::string& domain);

}  // namespace onnx_mini
