// make-testdata: writes the small models and backend-style test cases that
// onnx-mini ships in testdata/. Expected outputs are computed here with plain
// arithmetic, independently of the runtime's kernels. OUT_DIR/decoder/ gets
// the bundled decoder (tools/decoder_model.h).
//   make-testdata OUT_DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/tensor_io.h"
#include "tools/capi_models.h"
#include "tools/decoder_model.h"
#include "tools/model_builder.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Writes a backend-style case: model.onnx and test_data_set_0.
void WriteCase(const fs::path& dir, const ModelBuilder& m, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs) {
  Write(dir / "model.onnx", m.Serialize());
  const onnx::GraphProto& g = m.graph();
  for (size_t k = 0; k < inputs.size(); ++k)
    Write(dir / "test_data_set_0" / absl::StrCat("input_", k, ".pb"),
          SerializeTensorProto(inputs[k], g.input(int(k)).name()));
  for (size_t k = 0; k < outputs.size(); ++k)
    Write(dir / "test_data_set_0" / absl::StrCat("output_", k, ".pb"),
          SerializeTensorProto(outputs[k], g.output(int(k)).name()));
}

// The default model of onnx-run: y = Transpose(x * w + b), and its shape.
void DefaultModel(const fs::path& out) {
  const std::vector<float> w = {1, 2, 3, 4, 5, 6, 7, 8}, b = {0.5f, -0.5f, 1, -1};
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 4})
      .Initializer("w", Tensor::FromVector(w, {2, 4}))
      .Initializer("b", Tensor::FromVector(b, {4}))
      .Output("y", DType::kFloat, {4, 2})
      .Output("y_shape", DType::kInt64, {2});
  m.Node("Mul", {"x", "w"}, {"xw"});
  m.Node("Add", {"xw", "b"}, {"sum"});
  SetAttr(m.Node("Transpose", {"sum"}, {"y"}), "perm", std::vector<int64_t>{1, 0});
  m.Node("Shape", {"y"}, {"y_shape"});
  Write(out / "default.onnx", m.Serialize());

  std::vector<float> x(8), y(8);
  for (int i = 0; i < 8; ++i) x[size_t(i)] = 0.1f * float(i);
  for (size_t r = 0; r < 2; ++r)
    for (size_t c = 0; c < 4; ++c) y[c * 2 + r] = x[r * 4 + c] * w[r * 4 + c] + b[c];
  WriteCase(out / "conformance" / "test_mini_default", m, {Tensor::FromVector(x, {2, 4})},
            {Tensor::FromVector(y, {4, 2}), Tensor::FromVector<int64_t>({4, 2}, {2})});
}

// An initializer stored as external data next to the model, at an offset.
void ExternalDataCase(const fs::path& out) {
  const fs::path dir = out / "conformance" / "test_mini_external_data";
  ModelBuilder m(17);
  m.Input("x", DType::kInt32, {3}).Output("y", DType::kInt32, {3});
  onnx::TensorProto* w = m.graph().add_initializer();
  w->set_name("w");
  w->set_data_type(int32_t(DType::kInt32));
  w->add_dims(3);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] : {std::pair<const char*, const char*>{"location", "weights.bin"},
                            {"offset", "4"}, {"length", "12"}}) {
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  const int32_t bytes[4] = {-1, 10, 20, 30};  // the first word is skipped by the offset
  Write(dir / "weights.bin", std::string(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
  m.Node("Sub", {"x", "w"}, {"y"});
  WriteCase(dir, m, {Tensor::FromVector<int32_t>({1, 2, 3}, {3})},
            {Tensor::FromVector<int32_t>({-9, -18, -27}, {3})});
}

// A model-local function with an attribute reference and a default, inlined at load.
void FunctionCase(const fs::path& out) {
  ModelBuilder m(17);
  m.Opset("mini.test", 1);
  onnx::FunctionProto* f = m.proto().add_functions();
  f->set_name("ScaledSum");
  f->set_domain("mini.test");
  for (const char* in : {"a", "b"}) f->add_input(in);
  f->add_output("out");
  onnx::AttributeProto* to_default = f->add_attribute_proto();
  to_default->set_name("to");
  to_default->set_type(onnx::AttributeProto::INT);
  to_default->set_i(int64_t(DType::kDouble));
  auto* id = f->add_opset_import();
  id->set_domain("");
  id->set_version(17);
  auto body = [&](const char* op, std::vector<const char*> in, const char* o) {
    onnx::NodeProto* n = f->add_node();
    n->set_op_type(op);
    for (const char* s : in) n->add_input(s);
    n->add_output(o);
    return n;
  };
  body("Add", {"a", "b"}, "sum");
  body("Mul", {"sum", "b"}, "prod");
  onnx::AttributeProto* ref = body("Cast", {"prod"}, "out")->add_attribute();
  ref->set_name("to");
  ref->set_type(onnx::AttributeProto::INT);
  ref->set_ref_attr_name("to");

  m.Input("x", DType::kFloat, {2}).Input("y", DType::kFloat, {2});
  m.Output("z", DType::kDouble, {2}).Output("w", DType::kInt32, {2});
  m.Node("ScaledSum", {"x", "y"}, {"z"}, "mini.test");  // the default "to": double
  SetAttr(m.Node("ScaledSum", {"x", "y"}, {"w"}, "mini.test"), "to", int64_t(DType::kInt32));
  // (1.5 + 2) * 2 = 7, (-2 + 3) * 3 = 3
  WriteCase(out / "conformance" / "test_mini_local_function", m,
            {Tensor::FromVector<float>({1.5f, -2}, {2}), Tensor::FromVector<float>({2, 3}, {2})},
            {Tensor::FromVector<double>({7, 3}, {2}), Tensor::FromVector<int32_t>({7, 3}, {2})});
}

// Reshape with 0 and -1 feeding a broadcast Div in float16.
void ReshapeDivCase(const fs::path& out) {
  Tensor divisor = Tensor::Zeros(DType::kFloat16, {2});
  divisor.data<Float16>()[0] = ToFloat16(2.0);
  divisor.data<Float16>()[1] = ToFloat16(-4.0);
  ModelBuilder m(19);
  m.Input("x", DType::kFloat16, {2, 6})
      .Initializer("shape", Tensor::FromVector<int64_t>({0, -1, 2}, {3}))
      .Initializer("d", divisor)
      .Output("y", DType::kFloat16, {2, 3, 2});
  m.Node("Reshape", {"x", "shape"}, {"r"});
  m.Node("Div", {"r", "d"}, {"y"});
  Tensor x = Tensor::Zeros(DType::kFloat16, {2, 6}), y = Tensor::Zeros(DType::kFloat16, {2, 3, 2});
  for (int i = 0; i < 12; ++i) {
    x.data<Float16>()[i] = ToFloat16(double(i) - 5.0);
    y.data<Float16>()[i] = ToFloat16((double(i) - 5.0) / (i % 2 == 0 ? 2.0 : -4.0));
  }
  WriteCase(out / "conformance" / "test_mini_reshape_div_fp16", m, {x}, {y});
}

// A Loop with carried state and a scan output, recurrent style: the body
// reads row i of the outer-scope input xs and the outer initializer w,
// h <- h * w + xs[i], count <- count + 1, and emits h at every iteration.
void LoopCase(const fs::path& out) {
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("cond", DType::kBool, {});
  body.Input("h", DType::kFloat, {3}).Input("count", DType::kInt64, {});
  body.Initializer("one", Tensor::FromVector<int64_t>({1}, {}));
  SetAttr(body.Node("Gather", {"xs", "i"}, {"xi"}), "axis", int64_t(0));
  body.Node("Mul", {"h", "w"}, {"hw"});
  body.Node("Add", {"hw", "xi"}, {"h_out"});
  body.Node("Add", {"count", "one"}, {"count_out"});
  body.Node("Identity", {"cond"}, {"cond_out"});
  body.Node("Identity", {"h_out"}, {"h_scan"});
  body.Output("cond_out", DType::kBool, {}).Output("h_out", DType::kFloat, {3});
  body.Output("count_out", DType::kInt64, {}).Output("h_scan", DType::kFloat, {3});
  onnx::GraphProto body_graph = body.graph();
  body_graph.set_name("loop_body");

  const std::vector<float> w = {0.5f, -1, 2};
  ModelBuilder m(17);
  m.Input("M", DType::kInt64, {}).Input("xs", DType::kFloat, {4, 3}).Input("h0", DType::kFloat, {3});
  m.Initializer("w", Tensor::FromVector(w, {3}));
  m.Initializer("c0", Tensor::FromVector<int64_t>({0}, {}));
  onnx::NodeProto& loop = m.Node("Loop", {"M", "", "h0", "c0"}, {"h_final", "count", "hs"});
  onnx::AttributeProto* g = loop.add_attribute();
  g->set_name("body");
  g->set_type(onnx::AttributeProto::GRAPH);
  *g->mutable_g() = body_graph;
  m.Output("h_final", DType::kFloat, {3}).Output("count", DType::kInt64, {}).Output("hs", DType::kFloat, {-1, 3});

  const int64_t trips = 4;
  std::vector<float> xs(12), h = {1, -2, 0.25f}, hs;
  for (int k = 0; k < 12; ++k) xs[size_t(k)] = 0.125f * float(k) - 0.5f;
  const std::vector<float> h0 = h;
  for (int64_t i = 0; i < trips; ++i)
    for (size_t k = 0; k < 3; ++k) {
      const float hw = h[k] * w[k];  // as the graph rounds: the product, then the sum
      h[k] = hw + xs[size_t(i) * 3 + k];
      hs.push_back(h[k]);
    }
  WriteCase(out / "conformance" / "test_mini_loop_carried_scan", m,
            {Tensor::FromVector<int64_t>({trips}, {}), Tensor::FromVector(xs, {4, 3}), Tensor::FromVector(h0, {3})},
            {Tensor::FromVector(h, {3}), Tensor::FromVector<int64_t>({trips}, {}), Tensor::FromVector(hs, {trips, 3})});
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
  LoopCase(out);
  WriteCapiModels(out / "capi");
  // The bundled decoder (four graphs over one external weights file).
  if (absl::Status s = WriteDecoderModels(out / "decoder"); !s.ok()) {
    std::cerr << "make-testdata: " << s << "\n";
    return 1;
  }
  return 0;
}
