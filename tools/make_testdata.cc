// make-testdata: writes the small models and backend-style test cases that
// onnx-mini ships in testdata/. Expected outputs are computed here with plain
// arithmetic, independently of the runtime's kernels.
//   make-testdata OUT_DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx.pb.h"
#include "runtime/loader.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
              DType dtype, const Shape& shape) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(int32_t(dtype));
  auto* s = tt->mutable_shape();
  for (int64_t d : shape) s->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                         std::vector<std::string> out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(absl::StrCat(op, "_", g->node_size()));
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void SetInts(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

onnx::ModelProto NewModel(int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("onnx-mini make-testdata");
  auto* id = m.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  return m;
}

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

void WriteTensor(const fs::path& path, const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  TensorToProto(t, name, &p);
  Write(path, p.SerializeAsString());
}

// The default model of onnx-run: y = Transpose(x * w + b), and its shape.
void DefaultModel(const fs::path& out) {
  onnx::ModelProto m = NewModel(17);
  auto* g = m.mutable_graph();
  g->set_name("default");
  AddValue(g->mutable_input(), "x", DType::kFloat, {2, 4});
  onnx::TensorProto* w = g->add_initializer();
  TensorToProto(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}), "w", w);
  onnx::TensorProto* b = g->add_initializer();
  TensorToProto(Tensor::FromVector<float>({0.5f, -0.5f, 1, -1}, {4}), "b", b);
  AddNode(g, "Mul", {"x", "w"}, {"xw"});
  AddNode(g, "Add", {"xw", "b"}, {"sum"});
  SetInts(AddNode(g, "Transpose", {"sum"}, {"y"}), "perm", {1, 0});
  AddNode(g, "Shape", {"y"}, {"y_shape"});
  AddValue(g->mutable_output(), "y", DType::kFloat, {4, 2});
  AddValue(g->mutable_output(), "y_shape", DType::kInt64, {2});
  Write(out / "default.onnx", m.SerializeAsString());

  // A test case for the same model, x = 0.1 * (0..7).
  const fs::path dir = out / "conformance" / "test_mini_default";
  Write(dir / "model.onnx", m.SerializeAsString());
  std::vector<float> x(8), y(8);
  const float wv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, bv[4] = {0.5f, -0.5f, 1, -1};
  for (int i = 0; i < 8; ++i) x[size_t(i)] = 0.1f * float(i);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) y[size_t(c * 2 + r)] = x[size_t(r * 4 + c)] * wv[r * 4 + c] + bv[c];
  WriteTensor(dir / "test_data_set_0" / "input_0.pb", Tensor::FromVector(x, {2, 4}), "x");
  WriteTensor(dir / "test_data_set_0" / "output_0.pb", Tensor::FromVector(y, {4, 2}), "y");
  WriteTensor(dir / "test_data_set_0" / "output_1.pb", Tensor::FromVector<int64_t>({4, 2}, {2}), "y_shape");
}

// An initializer stored as external data next to the model.
void ExternalDataCase(const fs::path& out) {
  const fs::path dir = out / "conformance" / "test_mini_external_data";
  onnx::ModelProto m = NewModel(17);
  auto* g = m.mutable_graph();
  g->set_name("external");
  AddValue(g->mutable_input(), "x", DType::kInt32, {3});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(int32_t(DType::kInt32));
  w->add_dims(3);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "4");
  kv("length", "12");
  const int32_t bytes[4] = {-1, 10, 20, 30};  // the first word is padding
  Write(dir / "weights.bin", std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
  AddNode(g, "Sub", {"x", "w"}, {"y"});
  AddValue(g->mutable_output(), "y", DType::kInt32, {3});
  Write(dir / "model.onnx", m.SerializeAsString());
  WriteTensor(dir / "test_data_set_0" / "input_0.pb", Tensor::FromVector<int32_t>({1, 2, 3}, {3}), "x");
  WriteTensor(dir / "test_data_set_0" / "output_0.pb", Tensor::FromVector<int32_t>({-9, -18, -27}, {3}), "y");
}

// A model-local function with an attribute reference and a default, inlined at load.
void FunctionCase(const fs::path& out) {
  const fs::path dir = out / "conformance" / "test_mini_local_function";
  onnx::ModelProto m = NewModel(17);
  auto* id = m.add_opset_import();
  id->set_domain("mini.test");
  id->set_version(1);
  onnx::FunctionProto* f = m.add_functions();
  f->set_name("ScaledSum");
  f->set_domain("mini.test");
  f->add_input("a");
  f->add_input("b");
  f->add_output("out");
  f->add_attribute_proto()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(int64_t(DType::kDouble));
    return a;
  }());
  auto* fid = f->add_opset_import();
  fid->set_domain("");
  fid->set_version(17);
  onnx::NodeProto* add = f->add_node();
  add->set_op_type("Add");
  add->add_input("a");
  add->add_input("b");
  add->add_output("sum");
  onnx::NodeProto* mul = f->add_node();
  mul->set_op_type("Mul");
  mul->add_input("sum");
  mul->add_input("b");
  mul->add_output("prod");
  onnx::NodeProto* cast = f->add_node();
  cast->set_op_type("Cast");
  cast->add_input("prod");
  cast->add_output("out");
  auto* ref = cast->add_attribute();
  ref->set_name("to");
  ref->set_type(onnx::AttributeProto::INT);
  ref->set_ref_attr_name("to");

  auto* g = m.mutable_graph();
  g->set_name("function");
  AddValue(g->mutable_input(), "x", DType::kFloat, {2});
  AddValue(g->mutable_input(), "y", DType::kFloat, {2});
  onnx::NodeProto* call = AddNode(g, "ScaledSum", {"x", "y"}, {"z"});
  call->set_domain("mini.test");  // uses the default "to" (double)
  onnx::NodeProto* call2 = AddNode(g, "ScaledSum", {"x", "y"}, {"w"});
  call2->set_domain("mini.test");
  SetInt(call2, "to", int64_t(DType::kInt32));
  AddValue(g->mutable_output(), "z", DType::kDouble, {2});
  AddValue(g->mutable_output(), "w", DType::kInt32, {2});
  Write(dir / "model.onnx", m.SerializeAsString());
  WriteTensor(dir / "test_data_set_0" / "input_0.pb", Tensor::FromVector<float>({1.5f, -2}, {2}), "x");
  WriteTensor(dir / "test_data_set_0" / "input_1.pb", Tensor::FromVector<float>({2, 3}, {2}), "y");
  // (1.5 + 2) * 2 = 7, (-2 + 3) * 3 = 3
  WriteTensor(dir / "test_data_set_0" / "output_0.pb", Tensor::FromVector<double>({7, 3}, {2}), "z");
  WriteTensor(dir / "test_data_set_0" / "output_1.pb", Tensor::FromVector<int32_t>({7, 3}, {2}), "w");
}

// Reshape with 0 and -1 feeding a broadcast Div in float16.
void ReshapeDivCase(const fs::path& out) {
  const fs::path dir = out / "conformance" / "test_mini_reshape_div_fp16";
  onnx::ModelProto m = NewModel(19);
  auto* g = m.mutable_graph();
  g->set_name("reshape_div");
  AddValue(g->mutable_input(), "x", DType::kFloat16, {2, 6});
  onnx::TensorProto* shape = g->add_initializer();
  TensorToProto(Tensor::FromVector<int64_t>({0, -1, 2}, {3}), "shape", shape);
  onnx::TensorProto* d = g->add_initializer();
  Tensor divisor = Tensor::Zeros(DType::kFloat16, {2});
  divisor.data<Float16>()[0] = ToFloat16(2.0);
  divisor.data<Float16>()[1] = ToFloat16(-4.0);
  TensorToProto(divisor, "d", d);
  AddNode(g, "Reshape", {"x", "shape"}, {"r"});
  AddNode(g, "Div", {"r", "d"}, {"y"});
  AddValue(g->mutable_output(), "y", DType::kFloat16, {2, 3, 2});
  Write(dir / "model.onnx", m.SerializeAsString());
  Tensor x = Tensor::Zeros(DType::kFloat16, {2, 6}), y = Tensor::Zeros(DType::kFloat16, {2, 3, 2});
  for (int i = 0; i < 12; ++i) {
    x.data<Float16>()[i] = ToFloat16(double(i) - 5.0);
    y.data<Float16>()[i] = ToFloat16((double(i) - 5.0) / (i % 2 == 0 ? 2.0 : -4.0));
  }
  WriteTensor(dir / "test_data_set_0" / "input_0.pb", x, "x");
  WriteTensor(dir / "test_data_set_0" / "output_0.pb", y, "y");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make-testdata OUT_DIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  DefaultModel(out);
  ExternalDataCase(out);
  FunctionCase(out);
  ReshapeDivCase(out);
  return 0;
}
