// Helpers for tests of ops with subgraphs and non-tensor values: graph
// attributes, sequence and optional value infos, and running with Values.
#pragma once

#include <string>
#include <vector>

#include "onnx.pb.h"
#include "runtime/session.h"
#include "tools/model_builder.h"

namespace onnx_mini {

inline void SetGraph(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& g) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(5);  // GRAPH
  *a->mutable_g() = g;
}

// A ValueInfoProto: kind "tensor", "sequence", "optional" or "optional_sequence";
// dims nullptr leaves the shape out.
inline void AddValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
                         DType dtype, const std::string& kind = "tensor", const std::vector<int64_t>* dims = nullptr) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  onnx::TypeProto* t = v->mutable_type();
  if (kind == "optional" || kind == "optional_sequence") t = t->mutable_optional_type()->mutable_elem_type();
  if (kind == "sequence" || kind == "optional_sequence") t = t->mutable_sequence_type()->mutable_elem_type();
  t->mutable_tensor_type()->set_elem_type(int32_t(dtype));
  if (dims) {
    auto* shape = t->mutable_tensor_type()->mutable_shape();
    for (int64_t d : *dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
    }
  }
}

// A subgraph for a graph attribute, built with a ModelBuilder's graph.
inline onnx::GraphProto Body(ModelBuilder& b, const std::string& name = "body") {
  onnx::GraphProto g = b.graph();
  g.set_name(name);
  return g;
}

// Runs a model through RunValues.
inline absl::StatusOr<std::vector<Value>> RunModel(const ModelBuilder& m, const std::vector<NamedValue>& inputs) {
  ASSIGN_OR_RETURN(auto session, m.Build());
  std::vector<Value> outputs;
  RETURN_IF_ERROR(session->RunValues(inputs, &outputs));
  return outputs;
}

inline Value Seq(std::vector<Tensor> items) {
  const DType d = items.empty() ? DType::kFloat : items[0].dtype();
  return Value::Sequence(d, std::move(items));
}

}  // namespace onnx_mini
