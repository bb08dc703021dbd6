// make-testdata: writes the small models and backend-style test cases that
// onnx-mini ships in testdata/. Expected outputs are computed here with plain
// arithmetic, independently of the runtime's kernels. OUT_DIR/decoder/ gets
// the bundled decoder (tools/decoder_model.h), OUT_DIR/genai_int4/ the
// onnxruntime-genai-style 4-bit folder (tools/genai_model.h).
//   make-testdata OUT_DIR
//   make-testdata --genai DIR [--hidden N] [--layers N] [--heads Q/KV] [--intermediate N]
//                 [--vocab N] [--context N] [--block N] [--accuracy-level N] [--fp32]
//                 [--separate-qkv] [--no-share-buffer]   (one folder, at any size: measurements)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/tensor_io.h"
#include "tools/capi_models.h"
#include "tools/decoder_model.h"
#include "tools/genai_model.h"
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

// The hostile inputs of issue 13, as regression cases of the fuzz targets
// (testdata/fuzz/TARGET/, replayed by the fuzz_regressions_* ctests): each
// used to crash, hang or answer wrongly; now each is a result or an error.
void HostileCases(const fs::path& out) {
  const fs::path run = out / "fuzz" / "run", load = out / "fuzz" / "load_model", files = out / "fuzz" / "tensor_file";
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  {  // Expand to [1e5, 1e5], then Transpose
    ModelBuilder m(17);
    m.Initializer("x", Tensor::FromVector<float>({1}, {1})).Initializer("shape", Tensor::FromVector<int64_t>({100000, 100000}, {2}));
    m.Output("y", DType::kFloat, {}, false);
    m.Node("Expand", {"x", "shape"}, {"e"});
    m.Node("Transpose", {"e"}, {"y"});
    Write(run / "issue13_expand_huge.onnx", m.Serialize());
  }
  {  // ConstantOfShape to [1e5, 1e5] feeding Neg
    ModelBuilder m(17);
    m.Initializer("shape", Tensor::FromVector<int64_t>({100000, 100000}, {2})).Output("y", DType::kFloat, {}, false);
    m.Node("ConstantOfShape", {"shape"}, {"c"});
    m.Node("Neg", {"c"}, {"y"});
    Write(run / "issue13_constant_of_shape_huge.onnx", m.Serialize());
  }
  {  // Range of 2e11 elements
    ModelBuilder m(17);
    m.Initializer("start", Tensor::FromVector<float>({0}, {})).Initializer("limit", Tensor::FromVector<float>({2e11f}, {}));
    m.Initializer("delta", Tensor::FromVector<float>({1}, {})).Output("y", DType::kFloat, {}, false);
    m.Node("Range", {"start", "limit", "delta"}, {"y"});
    Write(run / "issue13_range_huge.onnx", m.Serialize());
  }
  {  // Pad by INT64_MAX; Slice with step INT64_MAX
    ModelBuilder m(13);
    m.Input("x", DType::kFloat, {3}).Initializer("pads", Tensor::FromVector<int64_t>({kMax, kMax}, {2}));
    m.Initializer("starts", Tensor::FromVector<int64_t>({0}, {1})).Initializer("ends", Tensor::FromVector<int64_t>({3}, {1}));
    m.Initializer("axes", Tensor::FromVector<int64_t>({0}, {1})).Initializer("steps", Tensor::FromVector<int64_t>({kMax}, {1}));
    m.Output("p", DType::kFloat, {}, false).Output("s", DType::kFloat, {}, false);
    m.Node("Pad", {"x", "pads"}, {"p"});
    m.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
    Write(run / "issue13_pad_slice_int64_max.onnx", m.Serialize());
  }
  {  // Attention-25 with right_window_size INT64_MAX; keys of shape [1, 1, 2^40, 0]
    ModelBuilder m(25);
    m.Input("q", DType::kFloat, {1, 1, 4, 4}).Input("k", DType::kFloat, {1, 1, 4, 4}).Input("v", DType::kFloat, {1, 1, 4, 2});
    m.Initializer("q0", Tensor::Zeros(DType::kFloat, {1, 1, 1, 0}));
    m.Initializer("k0", Tensor::Zeros(DType::kFloat, {1, 1, int64_t(1) << 40, 0}));
    m.Output("y", DType::kFloat, {}, false).Output("y0", DType::kFloat, {}, false);
    onnx::NodeProto& n = m.Node("Attention", {"q", "k", "v"}, {"y"});
    SetAttr(n, "left_window_size", int64_t(1));
    SetAttr(n, "right_window_size", kMax);
    m.Node("Attention", {"q0", "k0", "k0"}, {"y0"});
    Write(run / "issue13_attention_window_and_empty_keys.onnx", m.Serialize());
  }
  {  // Functions that each call the next twice, 30 levels
    ModelBuilder m(17);
    m.Opset("local", 1);
    m.Input("x", DType::kFloat, {1}).Output("y", DType::kFloat, {1});
    m.Node("F0", {"x"}, {"y"}, "local");
    for (int i = 0; i <= 30; ++i) {
      onnx::FunctionProto* f = m.proto().add_functions();
      f->set_name(absl::StrCat("F", i));
      f->set_domain("local");
      f->add_input("a");
      f->add_output("b");
      f->add_opset_import()->set_version(17);
      auto* local = f->add_opset_import();
      local->set_domain("local");
      local->set_version(1);
      for (int c = 0; c < (i == 30 ? 1 : 2); ++c) {
        onnx::NodeProto* node = f->add_node();
        node->set_op_type(i == 30 ? "Identity" : absl::StrCat("F", i + 1));
        if (i < 30) node->set_domain("local");
        node->add_input(c == 0 ? "a" : "t");
        node->add_output(i == 30 || c == 1 ? "b" : "t");
      }
    }
    Write(load / "issue13_functions_doubling.onnx", m.Serialize());
    Write(run / "issue13_functions_doubling.onnx", m.Serialize());
  }
  {  // Tensor files that declare far more than they hold
    onnx::TensorProto p;
    p.set_data_type(int32_t(DType::kFloat));
    p.add_dims(500000000);
    Write(files / "issue13_declared_no_data.pb", p.SerializeAsString());
    std::string npy("\x93NUMPY\x01\x00\x76\x00", 10);
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }";
    dict.resize(117, ' ');
    Write(files / "issue13_npy_declared_no_data.npy", npy + dict + "\n");
  }
}

// A model at opset 4 in the legacy forms of its ops: Add with broadcast/axis
// and consumed_inputs, Clip and LeakyRelu-1, Reshape with a shape attribute,
// Gemm with broadcast, Softmax-1 (flattened at its default axis 1), Dropout
// with is_test, Cast with `to` as a type name.
void LegacyOpsetCase(const fs::path& out) {
  std::vector<float> b = {0.5f, -1.0f, 0.25f}, w(36), c = {0.1f, -0.2f, 0.3f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 11) - 5) / 8.0f;
  ModelBuilder m(4);
  m.Input("x", DType::kFloat, {2, 3, 4})
      .Initializer("b", Tensor::FromVector(b, {3}))
      .Initializer("w", Tensor::FromVector(w, {12, 3}))
      .Initializer("c", Tensor::FromVector(c, {3}))
      .Output("y", DType::kDouble, {2, 3});
  onnx::NodeProto& add = m.Node("Add", {"x", "b"}, {"a"});
  SetAttr(add, "broadcast", int64_t(1));
  SetAttr(add, "axis", int64_t(1));
  SetAttr(add, "consumed_inputs", std::vector<int64_t>{0, 0});
  onnx::NodeProto& clip = m.Node("Clip", {"a"}, {"clipped"});
  SetAttr(clip, "min", -1.0f);
  SetAttr(clip, "max", 1.5f);
  SetAttr(m.Node("LeakyRelu", {"clipped"}, {"l"}), "alpha", 0.125f);
  SetAttr(m.Node("Reshape", {"l"}, {"r"}), "shape", std::vector<int64_t>{2, -1});
  onnx::NodeProto& gemm = m.Node("Gemm", {"r", "w", "c"}, {"g"});
  SetAttr(gemm, "broadcast", int64_t(1));
  SetAttr(gemm, "alpha", 0.5f);
  SetAttr(gemm, "beta", 2.0f);
  m.Node("Softmax", {"g"}, {"s"});
  SetAttr(m.Node("Dropout", {"s"}, {"d"}), "is_test", int64_t(1));
  SetAttr(m.Node("Cast", {"d"}, {"y"}), "to", std::string("DOUBLE"));

  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 5 % 13) - 6) / 4.0f;
  std::vector<double> r(24), y(6);
  for (size_t i = 0; i < 24; ++i) {
    double v = double(x[i]) + b[(i / 4) % 3];
    v = std::min(std::max(v, -1.0), 1.5);
    r[i] = v < 0 ? 0.125 * v : v;
  }
  for (size_t n = 0; n < 2; ++n) {
    double g[3], max = -1e300, sum = 0;
    for (size_t j = 0; j < 3; ++j) {
      double dot = 0;
      for (size_t k = 0; k < 12; ++k) dot += r[n * 12 + k] * w[k * 3 + j];
      g[j] = 0.5 * dot + 2.0 * c[j];
      max = std::max(max, g[j]);
    }
    for (size_t j = 0; j < 3; ++j) sum += std::exp(g[j] - max);
    // The graph computes in float up to the Cast: round as it does.
    for (size_t j = 0; j < 3; ++j) y[n * 3 + j] = double(float(std::exp(g[j] - max) / sum));
  }
  WriteCase(out / "conformance" / "test_mini_legacy_opset4", m, {Tensor::FromVector(x, {2, 3, 4})},
            {Tensor::FromVector(y, {2, 3})});
}


// A small conv net at opset 9: Conv (pads 1) -> BatchNormalization -> Relu ->
// MaxPool 2x2 stride 2 -> GlobalAveragePool -> Flatten -> Gemm. The expected
// logits come from plain loops here.
void ConvNetCase(const fs::path& out) {
  const int64_t C = 2, M = 4, H = 6, W = 6, K = 3, classes = 3;
  auto value = [](int64_t i, int64_t mul, int64_t mod) { return float((i * mul) % mod - mod / 2) / 8.0f; };
  std::vector<float> x(size_t(C * H * W)), w(size_t(M * C * K * K)), b(static_cast<size_t>(M)), fc(size_t(M * classes)),
      fc_b(static_cast<size_t>(classes));
  for (size_t i = 0; i < x.size(); ++i) x[i] = value(int64_t(i), 7, 17);
  for (size_t i = 0; i < w.size(); ++i) w[i] = value(int64_t(i), 5, 11);
  for (size_t i = 0; i < fc.size(); ++i) fc[i] = value(int64_t(i), 3, 7);
  for (int64_t i = 0; i < M; ++i) b[size_t(i)] = 0.25f * float(i) - 0.5f;
  for (int64_t i = 0; i < classes; ++i) fc_b[size_t(i)] = 0.1f * float(i);
  const std::vector<float> scale = {1.0f, 0.5f, 2.0f, 1.5f}, shift = {0.0f, 0.25f, -0.5f, 1.0f},
                           mean = {0.5f, -0.25f, 0.0f, 1.0f}, var = {1.0f, 4.0f, 0.25f, 2.0f};
  const float eps = 1e-5f;

  ModelBuilder m(9);
  m.Input("x", DType::kFloat, {1, C, H, W})
      .Initializer("w", Tensor::FromVector(w, {M, C, K, K}))
      .Initializer("b", Tensor::FromVector(b, {M}))
      .Initializer("scale", Tensor::FromVector(scale, {M}))
      .Initializer("shift", Tensor::FromVector(shift, {M}))
      .Initializer("mean", Tensor::FromVector(mean, {M}))
      .Initializer("var", Tensor::FromVector(var, {M}))
      .Initializer("fc", Tensor::FromVector(fc, {M, classes}))
      .Initializer("fc_b", Tensor::FromVector(fc_b, {classes}))
      .Output("logits", DType::kFloat, {1, classes});
  onnx::NodeProto& conv = m.Node("Conv", {"x", "w", "b"}, {"conv"});
  SetAttr(conv, "kernel_shape", std::vector<int64_t>{K, K});
  SetAttr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttr(m.Node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, {"bn"}), "epsilon", eps);
  m.Node("Relu", {"bn"}, {"relu"});
  onnx::NodeProto& pool = m.Node("MaxPool", {"relu"}, {"pool"});
  SetAttr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  SetAttr(pool, "strides", std::vector<int64_t>{2, 2});
  m.Node("GlobalAveragePool", {"pool"}, {"gap"});
  m.Node("Flatten", {"gap"}, {"flat"});
  m.Node("Gemm", {"flat", "fc", "fc_b"}, {"logits"});

  // Conv + BN + Relu per channel, then 2x2 max, the mean of the 3x3 maxima, the Gemm.
  std::vector<double> feature(static_cast<size_t>(M));
  for (int64_t oc = 0; oc < M; ++oc) {
    std::vector<double> act(static_cast<size_t>(H * W));
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        double acc = b[size_t(oc)];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ki = 0; ki < K; ++ki)
            for (int64_t kj = 0; kj < K; ++kj) {
              const int64_t r = i + ki - 1, q = j + kj - 1;
              if (r >= 0 && r < H && q >= 0 && q < W)
                acc += double(x[size_t((c * H + r) * W + q)]) * double(w[size_t(((oc * C + c) * K + ki) * K + kj)]);
            }
        const double bn = (acc - mean[size_t(oc)]) / std::sqrt(double(var[size_t(oc)]) + double(eps)) *
                              scale[size_t(oc)] + shift[size_t(oc)];
        act[size_t(i * W + j)] = std::max(0.0, bn);
      }
    double sum = 0;
    for (int64_t i = 0; i < H / 2; ++i)
      for (int64_t j = 0; j < W / 2; ++j)
        sum += std::max(std::max(act[size_t(2 * i * W + 2 * j)], act[size_t(2 * i * W + 2 * j + 1)]),
                        std::max(act[size_t((2 * i + 1) * W + 2 * j)], act[size_t((2 * i + 1) * W + 2 * j + 1)]));
    feature[size_t(oc)] = sum / double(H / 2 * W / 2);
  }
  std::vector<float> logits(static_cast<size_t>(classes));
  for (int64_t k = 0; k < classes; ++k) {
    double v = fc_b[size_t(k)];
    for (int64_t oc = 0; oc < M; ++oc) v += feature[size_t(oc)] * double(fc[size_t(oc * classes + k)]);
    logits[size_t(k)] = float(v);
  }
  WriteCase(out / "conformance" / "test_mini_conv_net_opset9", m, {Tensor::FromVector(x, {1, C, H, W})},
            {Tensor::FromVector(logits, {1, classes})});
}
// A speech-model pattern: If around an LSTM. The then-branch runs an LSTM
// over the outer-scope input x and returns its final state Y_h; the else-branch
// returns the outer initializer h_zero. Expected values from the LSTM
// equations in double (gates i, o, f, c; sigmoid, tanh, tanh).
void IfLstmCase(const fs::path& out) {
  constexpr int64_t T = 3, I = 2, H = 3;
  std::vector<float> w(4 * H * I), r(4 * H * H), b(8 * H), x(T * I);
  for (size_t k = 0; k < w.size(); ++k) w[k] = float(int(k * 7 % 9) - 4) / 8.0f;
  for (size_t k = 0; k < r.size(); ++k) r[k] = float(int(k * 5 % 7) - 3) / 8.0f;
  for (size_t k = 0; k < b.size(); ++k) b[k] = float(int(k % 5) - 2) / 16.0f;
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(int(k * 3 % 5) - 2) / 2.0f;

  ModelBuilder then_branch(14);
  SetAttr(then_branch.Node("LSTM", {"x", "W", "R", "B"}, {"", "y_h"}), "hidden_size", H);
  then_branch.Output("y_h", DType::kFloat, {1, 1, H});
  onnx::GraphProto then_graph = then_branch.graph();
  then_graph.set_name("then_lstm");
  ModelBuilder else_branch(14);
  else_branch.Node("Identity", {"h_zero"}, {"h"});
  else_branch.Output("h", DType::kFloat, {1, 1, H});
  onnx::GraphProto else_graph = else_branch.graph();
  else_graph.set_name("else_zero");

  ModelBuilder m(14);
  m.Input("use_lstm", DType::kBool, {}).Input("x", DType::kFloat, {T, 1, I});
  m.Initializer("W", Tensor::FromVector(w, {1, 4 * H, I})).Initializer("R", Tensor::FromVector(r, {1, 4 * H, H}));
  m.Initializer("B", Tensor::FromVector(b, {1, 8 * H}));
  m.Initializer("h_zero", Tensor::FromVector(std::vector<float>(H, 0.5f), {1, 1, H}));
  onnx::NodeProto& cond = m.Node("If", {"use_lstm"}, {"state"});
  for (auto [name, graph] : {std::pair{"then_branch", &then_graph}, std::pair{"else_branch", &else_graph}}) {
    onnx::AttributeProto* a = cond.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = *graph;
  }
  m.Output("state", DType::kFloat, {1, 1, H});

  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> h(H, 0), c(H, 0);
  for (int64_t t = 0; t < T; ++t) {
    double gate[4][H];
    for (int g = 0; g < 4; ++g)
      for (int64_t j = 0; j < H; ++j) {
        const int64_t row = g * H + j;
        double v = b[size_t(row)] + b[size_t(4 * H + row)];
        for (int64_t k = 0; k < I; ++k) v += double(x[size_t(t * I + k)]) * w[size_t(row * I + k)];
        for (int64_t k = 0; k < H; ++k) v += h[size_t(k)] * r[size_t(row * H + k)];
        gate[g][j] = v;
      }
    for (int64_t j = 0; j < H; ++j) {
      c[size_t(j)] = sigmoid(gate[2][j]) * c[size_t(j)] + sigmoid(gate[0][j]) * std::tanh(gate[3][j]);
      h[size_t(j)] = sigmoid(gate[1][j]) * std::tanh(c[size_t(j)]);
    }
  }
  const std::vector<float> y_h(h.begin(), h.end());
  const Tensor xt = Tensor::FromVector(x, {T, 1, I});
  WriteCase(out / "conformance" / "test_mini_if_lstm", m, {Tensor::FromVector<bool>({true}, {}), xt},
            {Tensor::FromVector(y_h, {1, 1, H})});
  WriteCase(out / "conformance" / "test_mini_if_lstm_else", m, {Tensor::FromVector<bool>({false}, {}), xt},
            {Tensor::FromVector(std::vector<float>(H, 0.5f), {1, 1, H})});
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

// make-testdata --genai DIR [flags]: one genai folder at the given sizes.
int GenaiMain(int argc, char** argv) {
  GenaiModelOptions o;
  fs::path dir;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> int64_t {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return std::stoll(argv[++i]);
    };
    if (a == "--hidden") o.hidden = value();
    else if (a == "--layers") o.layers = value();
    else if (a == "--intermediate") o.intermediate = value();
    else if (a == "--vocab") o.vocab = value();
    else if (a == "--context") o.context_length = value();
    else if (a == "--block") o.block_size = value();
    else if (a == "--accuracy-level") o.accuracy_level = value();
    else if (a == "--seed") o.seed = uint32_t(value());
    else if (a == "--fp32") o.int4 = false;
    else if (a == "--separate-qkv") o.packed_qkv = false;
    else if (a == "--no-share-buffer") o.share_buffer = false;
    else if (a == "--heads") {
      if (i + 1 >= argc) throw std::invalid_argument("--heads needs Q/KV");
      const std::string v = argv[++i];
      const size_t slash = v.find('/');
      if (slash == std::string::npos) throw std::invalid_argument("--heads takes Q/KV, not " + v);
      o.q_heads = std::stoll(v.substr(0, slash));
      o.kv_heads = std::stoll(v.substr(slash + 1));
    } else if (!a.empty() && a[0] != '-' && dir.empty()) dir = a;
    else throw std::invalid_argument("unknown argument " + a);
  }
  if (dir.empty()) throw std::invalid_argument("--genai needs a folder");
  if (absl::Status s = WriteGenaiModel(dir, o); !s.ok()) {
    std::cerr << "make-testdata: " << s << "\n";
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--genai") {
    try {
      return GenaiMain(argc, argv);
    } catch (const std::exception& e) {
      std::cerr << "make-testdata: " << e.what() << "\n";
      return 2;
    }
  }
  if (argc != 2 || argv[1][0] == '-') {  // a flag (--help) is not a folder to write into
    std::cerr << "usage: make-testdata OUT_DIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  DefaultModel(out);
  ExternalDataCase(out);
  FunctionCase(out);
  ReshapeDivCase(out);
  HostileCases(out);
  LegacyOpsetCase(out);
  ConvNetCase(out);
  LoopCase(out);
  IfLstmCase(out);
  WriteCapiModels(out / "capi");
  // The bundled decoder (four graphs over one external weights file).
  if (absl::Status s = WriteDecoderModels(out / "decoder"); !s.ok()) {
    std::cerr << "make-testdata: " << s << "\n";
    return 1;
  }
  // The onnxruntime-genai-style 4-bit folder (expected_tokens.txt beside it
  // comes from onnxruntime: tools/oracle/genai_greedy.js).
  if (absl::Status s = WriteGenaiModel(out / "genai_int4"); !s.ok()) {
    std::cerr << "make-testdata: " << s << "\n";
    return 1;
  }
  return 0;
}
