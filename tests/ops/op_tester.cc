#include "tests/ops/op_tester.h"

#include "tools/model_builder.h"

namespace onnx_mini {

absl::StatusOr<std::vector<Tensor>> OpTester::Run() const {
  ModelBuilder m(opset);
  if (!domain.empty()) m.Opset(domain, opset);
  std::vector<std::string> names;
  std::vector<NamedTensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    names.push_back(inputs[i].defined() ? name : "");
    if (!inputs[i].defined()) continue;
    if (i < constant.size() && constant[i]) {
      m.Initializer(name, inputs[i]);
    } else {
      m.Input(name, inputs[i].dtype(), inputs[i].shape());
      feeds.push_back({name, inputs[i]});
    }
  }
  std::vector<std::string> outs = output_names;
  if (outs.empty())
    for (size_t o = 0; o < outputs; ++o) outs.push_back("out" + std::to_string(o));
  for (const std::string& o : outs)
    if (!o.empty()) m.Output(o, DType::kUndefined, {}, false);
  onnx::NodeProto& n = m.Node(op, names, outs, domain);
  if (attrs) attrs(n);
  SessionOptions options;
  options.threads = threads;
  options.memory_limit = memory_limit;
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build(options);
  if (!s.ok()) return s.status();
  std::vector<Tensor> results = bound;
  absl::Status status = (*s)->Run(feeds, &results);
  if (!status.ok()) return status;
  return results;
}

absl::StatusOr<Tensor> OpTester::RunOne() const {
  absl::StatusOr<std::vector<Tensor>> out = Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

absl::StatusOr<std::vector<Tensor>> RunNode(int64_t opset, const std::string& op, const std::vector<Tensor>& inputs,
                                            size_t outputs, const std::function<void(onnx::NodeProto&)>& attrs,
                                            const std::vector<bool>& constant, int threads) {
  OpTester t;
  t.op = op;
  t.opset = opset;
  t.inputs = inputs;
  t.outputs = outputs;
  t.attrs = attrs;
  t.constant = constant;
  t.threads = threads;
  return t.Run();
}

absl::StatusOr<Tensor> RunOne(int64_t opset, const std::string& op, const std::vector<Tensor>& inputs,
                              const std::function<void(onnx::NodeProto&)>& attrs, int threads) {
  OpTester t;
  t.op = op;
  t.opset = opset;
  t.inputs = inputs;
  t.attrs = attrs;
  t.threads = threads;
  return t.RunOne();
}

Tensor Random(DType dtype, Shape shape, uint32_t seed) {
  Tensor t = Tensor::Zeros(dtype, std::move(shape));
  std::mt19937 rng(seed);
  const bool is_float = Info(dtype).kind == DTypeKind::kFloat;
  for (int64_t i = 0; i < t.size(); ++i)
    SetDouble(t, i, is_float ? double(int(rng() % 2001) - 1000) / 64.0 : double(rng() % 50 + 1));
  return t;
}

Tensor RandomUniform(DType dtype, const Shape& shape, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = Tensor::Zeros(dtype, shape);
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, u(rng));
  return t;
}

}  // namespace onnx_mini
