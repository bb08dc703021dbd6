#include "tools/model_builder.h"

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "runtime/loader.h"
#include "runtime/status_macros.h"

namespace onnx_mini {
namespace {

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
              DType dtype, const std::vector<int64_t>& dims, bool ranked) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(int32_t(dtype));
  if (!ranked) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= 0) shape->add_dim()->set_dim_value(dims[i]);
    else shape->add_dim()->set_dim_param(absl::StrCat("N", i));
  }
}

onnx::AttributeProto& NewAttr(onnx::NodeProto& node, const std::string& name, int type) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}

}  // namespace

ModelBuilder::ModelBuilder(int64_t opset, int64_t ir_version) {
  model_.set_ir_version(ir_version);
  model_.set_producer_name("onnx-mini");
  Opset("", opset);
  model_.mutable_graph()->set_name("graph");
}

ModelBuilder& ModelBuilder::Opset(const std::string& domain, int64_t version) {
  auto* id = model_.add_opset_import();
  id->set_domain(domain);
  id->set_version(version);
  return *this;
}

ModelBuilder& ModelBuilder::Input(const std::string& name, DType dtype,
                                  const std::vector<int64_t>& dims, bool ranked) {
  AddValue(graph().mutable_input(), name, dtype, dims, ranked);
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name, DType dtype,
                                   const std::vector<int64_t>& dims, bool ranked) {
  AddValue(graph().mutable_output(), name, dtype, dims, ranked);
  return *this;
}

ModelBuilder& ModelBuilder::Initializer(const std::string& name, const Tensor& value) {
  TensorToProto(value, name, graph().add_initializer());
  return *this;
}

onnx::NodeProto& ModelBuilder::Node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::string& domain) {
  onnx::NodeProto* n = graph().add_node();
  n->set_op_type(op);
  n->set_name(absl::StrCat(op, "_", graph().node_size()));
  n->set_domain(domain);
  for (const std::string& s : inputs) n->add_input(s);
  for (const std::string& s : outputs) n->add_output(s);
  return *n;
}

absl::StatusOr<std::unique_ptr<Session>> ModelBuilder::Build(const SessionOptions& options) const {
  ASSIGN_OR_RETURN(Graph g, LoadModelFromBytes(Serialize(), ""));
  return Session::Create(std::move(g), BuiltinOps(), options);
}

void AddSwiGluMlp(ModelBuilder& m, const std::string& p, const std::string& in, const std::string& out) {
  m.Node("MatMul", {in, p + "wgate"}, {p + "gate"});
  m.Node("MatMul", {in, p + "wup"}, {p + "up"});
  m.Node("Sigmoid", {p + "gate"}, {p + "gate_sigmoid"});
  m.Node("Mul", {p + "gate", p + "gate_sigmoid"}, {p + "gate_silu"});
  m.Node("Mul", {p + "gate_silu", p + "up"}, {p + "mlp_hidden"});
  m.Node("MatMul", {p + "mlp_hidden", p + "wdown"}, {out});
}

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  NewAttr(node, name, onnx::AttributeProto::INT).set_i(value);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, float value) {
  NewAttr(node, name, onnx::AttributeProto::FLOAT).set_f(value);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  NewAttr(node, name, onnx::AttributeProto::STRING).set_s(value);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto& a = NewAttr(node, name, onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, const Tensor& value) {
  TensorToProto(value, "", NewAttr(node, name, onnx::AttributeProto::TENSOR).mutable_t());
}

}  // namespace onnx_mini
