// The function-body and decoder ops on what the upstream cases do not cover:
// broadcasting corners, empty tensors, negative axes, multi-threaded sizes,
// oneDNN against a naive product, and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/element.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Attrs = std::function<void(onnx::NodeProto&)>;

// Runs one node on the inputs (all fed at run time unless `constant`), returns its outputs.
absl::StatusOr<std::vector<Tensor>> RunNode(int64_t opset, const std::string& op, const std::vector<Tensor>& inputs,
                                            size_t outputs = 1, const Attrs& attrs = {},
                                            const std::vector<bool>& constant = {}, int threads = 0) {
  ModelBuilder m(opset);
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
  std::vector<std::string> outs;
  for (size_t o = 0; o < outputs; ++o) {
    outs.push_back("out" + std::to_string(o));
    m.Output(outs.back(), DType::kUndefined, {}, false);
  }
  onnx::NodeProto& n = m.Node(op, names, outs);
  if (attrs) attrs(n);
  SessionOptions options;
  options.threads = threads;
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build(options);
  if (!s.ok()) return s.status();
  return (*s)->Run(feeds);
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(GetDouble(t, i));
  return v;
}

Tensor F(std::vector<float> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
Tensor I(std::vector<int64_t> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
Tensor B(std::vector<bool> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
std::string Message(const absl::Status& s) { return std::string(s.message()); }

Tensor Random(DType dtype, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  Tensor t = Tensor::Zeros(dtype, shape);
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, u(rng));
  return t;
}

TEST(Elementwise, WhereBroadcastsThreeWays) {
  auto out = RunNode(16, "Where", {B({true, false}, {2, 1, 1}), F({1, 2, 3}, {1, 3}), F({-1}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 1, 3}));
  EXPECT_THAT(Values((*out)[0]), ElementsAre(1, 2, 3, -1, -1, -1));
  auto strings = RunNode(16, "Where", {B({true, false}, {2}), Tensor::FromVector<std::string>({"a", "b"}, {2}),
                                       Tensor::FromVector<std::string>({"x"}, {1})});
  ASSERT_TRUE(strings.ok()) << strings.status();
  EXPECT_EQ((*strings)[0].data<std::string>()[1], "x");
}

TEST(Elementwise, ComparisonsLogicAndModPow) {
  auto less = RunNode(13, "Less", {F({1, 5}, {2, 1}), F({2, 3, 6}, {3})});
  ASSERT_TRUE(less.ok());
  EXPECT_EQ((*less)[0].dtype(), DType::kBool);
  EXPECT_THAT(Values((*less)[0]), ElementsAre(1, 1, 1, 0, 0, 1));
  auto equal = RunNode(19, "Equal", {Tensor::FromVector<std::string>({"a", "b"}, {2}),
                                     Tensor::FromVector<std::string>({"b"}, {1})});
  ASSERT_TRUE(equal.ok());
  EXPECT_THAT(Values((*equal)[0]), ElementsAre(0, 1));
  auto both = RunNode(7, "And", {B({true, true, false}, {3}), B({true}, {1})});
  EXPECT_THAT(Values((*both)[0]), ElementsAre(1, 1, 0));
  // Integer Mod follows the divisor's sign; fmod the dividend's.
  Tensor x = I({-7, 7, -7, 7}, {4}), y = I({3, -3, -3, 3}, {4});
  EXPECT_THAT(Values((*RunNode(13, "Mod", {x, y}))[0]), ElementsAre(2, -2, -1, 1));
  EXPECT_THAT(Values((*RunNode(13, "Mod", {x, y}, 1, [](onnx::NodeProto& n) { SetAttr(n, "fmod", int64_t(1)); }))[0]),
              ElementsAre(-1, 1, -1, 1));
  EXPECT_THAT(Message(RunNode(13, "Mod", {x, I({0, 1, 1, 1}, {4})}).status()), HasSubstr("modulo by zero"));
  EXPECT_THAT(Message(RunNode(13, "Mod", {F({1}, {1}), F({1}, {1})}).status()), HasSubstr("requires fmod = 1"));
  // Pow with an exponent of another type.
  EXPECT_THAT(Values((*RunNode(15, "Pow", {F({2, 3}, {2}), I({3}, {1})}))[0]), ElementsAre(8, 27));
}

TEST(Elementwise, UnaryOpsOnLargeInputsAgreeAcrossThreadCounts) {
  Tensor x = Random(DType::kFloat, {3, 100000}, 1);
  for (const char* op : {"Tanh", "Sigmoid", "Erf", "Neg", "Sqrt"}) {
    Tensor in = x;
    if (std::string(op) == "Sqrt") {
      in = x.Clone();
      for (int64_t i = 0; i < in.size(); ++i) in.data<float>()[i] = std::fabs(in.data<float>()[i]);
    }
    auto one = RunNode(13, op, {in}, 1, {}, {}, 1);
    auto two = RunNode(13, op, {in}, 1, {}, {}, 2);
    ASSERT_TRUE(one.ok() && two.ok()) << op;
    EXPECT_EQ(std::memcmp((*one)[0].raw(), (*two)[0].raw(), (*one)[0].bytes()), 0) << op;
    const double v = in.data<float>()[12345];
    const double want = std::string(op) == "Tanh" ? std::tanh(v) : std::string(op) == "Sigmoid" ? 1 / (1 + std::exp(-v))
                      : std::string(op) == "Erf" ? std::erf(v) : std::string(op) == "Neg" ? -v : std::sqrt(v);
    EXPECT_NEAR((*one)[0].data<float>()[12345], want, 1e-6) << op;
  }
  auto gelu = RunNode(20, "Gelu", {F({-1, 0, 2}, {3})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "approximate", std::string("tanh")); });
  EXPECT_NEAR((*gelu)[0].data<float>()[2], 1.9545977, 1e-5);
}

TEST(Movement, ConcatGatherSliceSplitWithNegativeAxesAndEmptyTensors) {
  auto concat = RunNode(13, "Concat", {F({1, 2}, {2, 1}), F({}, {2, 0}), F({3, 4, 5, 6}, {2, 2})}, 1,
                        [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-1)); });
  ASSERT_TRUE(concat.ok()) << concat.status();
  EXPECT_EQ((*concat)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(Values((*concat)[0]), ElementsAre(1, 3, 4, 2, 5, 6));
  EXPECT_THAT(Message(RunNode(13, "Concat", {F({1, 2}, {2, 1}), F({1, 2, 3}, {3, 1})}, 1,
                              [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(1)); }).status()),
              HasSubstr("differs from input 0"));

  Tensor data = F({0, 1, 2, 3, 4, 5}, {2, 3});
  auto gather = RunNode(13, "Gather", {data, I({-1, 0}, {2})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-1)); });
  EXPECT_THAT(Values((*gather)[0]), ElementsAre(2, 0, 5, 3));
  auto empty = RunNode(13, "Gather", {data, I({}, {0})});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].shape(), Shape({0, 3}));
  EXPECT_THAT(Message(RunNode(13, "Gather", {data, I({2}, {1})}).status()), HasSubstr("index 2 is out of range for axis 0 of size 2"));

  auto slice = RunNode(13, "Slice", {data, I({-1}, {1}), I({-4}, {1}), I({-1}, {1}), I({-1}, {1})});
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_THAT(Values((*slice)[0]), ElementsAre(2, 1, 0, 5, 4, 3));
  auto nothing = RunNode(13, "Slice", {data, I({2}, {1}), I({1}, {1})});
  EXPECT_EQ((*nothing)[0].shape(), Shape({0, 3}));

  auto split = RunNode(18, "Split", {F({1, 2, 3, 4, 5}, {5})}, 3, [](onnx::NodeProto& n) {
    SetAttr(n, "axis", int64_t(-1));
    SetAttr(n, "num_outputs", int64_t(3));
  });
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_THAT(Values((*split)[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values((*split)[2]), ElementsAre(5));
  EXPECT_THAT(Message(RunNode(13, "Split", {F({1, 2, 3}, {3}), I({1, 1}, {2})}, 2).status()), HasSubstr("split sizes sum to 2"));
}

TEST(Movement, SqueezeUnsqueezeExpandPadRangeConstantOfShape) {
  auto squeeze = RunNode(13, "Squeeze", {F({1, 2}, {1, 2, 1}), I({-1, 0}, {2})}, 1, {}, {false, true});
  ASSERT_TRUE(squeeze.ok()) << squeeze.status();
  EXPECT_EQ((*squeeze)[0].shape(), Shape({2}));
  EXPECT_THAT(Message(RunNode(13, "Squeeze", {F({1, 2}, {1, 2}), I({1}, {1})}, 1, {}, {false, true}).status()),
              HasSubstr("its size is 2"));
  auto unsqueeze = RunNode(13, "Unsqueeze", {F({1, 2}, {2}), I({-1, 0}, {2})}, 1, {}, {false, true});
  EXPECT_EQ((*unsqueeze)[0].shape(), Shape({1, 2, 1}));
  auto expand = RunNode(13, "Expand", {F({1, 2}, {2, 1}), I({2, 1, 3}, {3})}, 1, {}, {false, true});
  ASSERT_TRUE(expand.ok()) << expand.status();
  EXPECT_EQ((*expand)[0].shape(), Shape({2, 2, 3}));
  EXPECT_THAT(Values((*expand)[0]), ElementsAre(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
  // Pad with a negative (cropping) pad and each mode.
  Tensor x = F({1, 2, 3}, {3});
  auto pad = [&](const char* mode, std::vector<int64_t> pads) {
    return RunNode(19, "Pad", {x, I(pads, {2})}, 1, [&](onnx::NodeProto& n) { SetAttr(n, "mode", std::string(mode)); });
  };
  EXPECT_THAT(Values((*pad("constant", {2, -1}))[0]), ElementsAre(0, 0, 1, 2));
  EXPECT_THAT(Values((*pad("reflect", {2, 2}))[0]), ElementsAre(3, 2, 1, 2, 3, 2, 1));
  EXPECT_THAT(Values((*pad("edge", {1, 2}))[0]), ElementsAre(1, 1, 2, 3, 3, 3));
  EXPECT_THAT(Values((*pad("wrap", {1, 1}))[0]), ElementsAre(3, 1, 2, 3, 1));
  EXPECT_THAT(Message(pad("constant", {-2, -2}).status()), HasSubstr("below 0"));
  auto range = RunNode(11, "Range", {F({1}, {}), F({2}, {}), F({0.25f}, {})});
  EXPECT_THAT(Values((*range)[0]), ElementsAre(1, 1.25, 1.5, 1.75));
  EXPECT_EQ((*RunNode(11, "Range", {I({5}, {}), I({1}, {}), I({1}, {})}))[0].size(), 0);
  EXPECT_THAT(Message(RunNode(11, "Range", {I({0}, {}), I({1}, {}), I({0}, {})}).status()), HasSubstr("delta must not be 0"));
  auto zeros = RunNode(9, "ConstantOfShape", {I({2, 0}, {2})});
  EXPECT_EQ((*zeros)[0].shape(), Shape({2, 0}));
  EXPECT_EQ((*zeros)[0].dtype(), DType::kFloat);
}

TEST(Reduce, AxesKeepdimsEmptyAndSoftmax) {
  Tensor x = F({1, 5, 3, 4, 2, 6}, {2, 3});
  auto max = RunNode(18, "ReduceMax", {x, I({-1}, {1})}, 1, {}, {false, true});
  EXPECT_EQ((*max)[0].shape(), Shape({2, 1}));
  EXPECT_THAT(Values((*max)[0]), ElementsAre(5, 6));
  auto sum = RunNode(13, "ReduceSum", {x}, 1, [](onnx::NodeProto& n) { SetAttr(n, "keepdims", int64_t(0)); });
  EXPECT_THAT(Values((*sum)[0]), ElementsAre(21));
  auto noop = RunNode(13, "ReduceSum", {x, I({}, {0})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "noop_with_empty_axes", int64_t(1)); }, {false, true});
  EXPECT_THAT(Values((*noop)[0]), ElementsAre(1, 5, 3, 4, 2, 6));
  auto mean_empty = RunNode(18, "ReduceMean", {F({}, {0, 2}), I({0}, {1})}, 1, {}, {false, true});
  ASSERT_TRUE(mean_empty.ok()) << mean_empty.status();
  EXPECT_TRUE(std::isnan((*mean_empty)[0].data<float>()[0]));
  auto argmax = RunNode(13, "ArgMax", {F({1, 3, 3}, {3})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "select_last_index", int64_t(1)); });
  EXPECT_THAT(Values((*argmax)[0]), ElementsAre(2));
  auto topk = RunNode(11, "TopK", {F({1, 3, 3, 2}, {4}), I({3}, {1})}, 2, {}, {false, true});
  ASSERT_TRUE(topk.ok()) << topk.status();
  EXPECT_THAT(Values((*topk)[0]), ElementsAre(3, 3, 2));
  EXPECT_THAT(Values((*topk)[1]), ElementsAre(1, 2, 3));
  // Softmax on a large input along a middle axis: rows sum to 1 with any thread count.
  Tensor big = Random(DType::kFloat, {64, 50, 40}, 3);
  auto soft = RunNode(13, "Softmax", {big}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-2)); }, {}, 2);
  ASSERT_TRUE(soft.ok());
  double total = 0;
  for (int64_t k = 0; k < 50; ++k) total += (*soft)[0].data<float>()[(7 * 50 + k) * 40 + 9];
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(MatMul, OneDnnAndReferenceAgreeWithANaiveProduct) {
  struct Case { Shape a, b; };
  const std::vector<Case> cases = {{{3, 5}, {5, 7}}, {{2, 4, 33, 17}, {2, 4, 17, 65}}, {{5}, {5, 3}},
                                   {{4, 1, 3, 5}, {2, 5, 2}}, {{1, 6, 8}, {3, 8, 4}}, {{2, 3}, {3}}};
  for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kDouble, DType::kFloat16, DType::kInt32}) {
    uint32_t seed = 1;
    for (const Case& c : cases) {
      Tensor a = Random(dt, c.a, seed++), b = Random(dt, c.b, seed++);
      auto out = RunNode(13, "MatMul", {a, b});
      ASSERT_TRUE(out.ok()) << LowerName(dt) << ": " << out.status();
      // Naive product over explicit NumPy batching.
      Shape sa = c.a, sb = c.b;
      if (sa.size() == 1) sa.insert(sa.begin(), 1);
      if (sb.size() == 1) sb.push_back(1);
      const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
      const int64_t ba = ElementCount(Shape(sa.begin(), sa.end() - 2)), bb = ElementCount(Shape(sb.begin(), sb.end() - 2));
      const int64_t batches = (*out)[0].size() / (M * N);
      for (int64_t t = 0; t < batches; ++t)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            // Batch t maps to (t mod ba, t mod bb) for these right-aligned cases.
            const int64_t ta = ba == 1 ? 0 : (c.a.size() == 4 && c.b.size() == 3 ? t / 2 : t % ba);
            const int64_t tb = bb == 1 ? 0 : t % bb;
            double want = 0;
            for (int64_t k = 0; k < K; ++k) want += GetDouble(a, (ta * M + m) * K + k) * GetDouble(b, (tb * K + k) * N + n);
            const double tol = dt == DType::kBFloat16 ? 0.1 : dt == DType::kFloat16 ? 0.02 : 1e-4;
            ASSERT_NEAR(GetDouble((*out)[0], (t * M + m) * N + n), dt == DType::kInt32 ? double(int64_t(want)) : want,
                        tol * (1 + std::fabs(want)))
                << LowerName(dt) << " case " << ShapeToString(c.a) << "x" << ShapeToString(c.b);
          }
    }
  }
  EXPECT_THAT(Message(RunNode(13, "MatMul", {F({1, 2}, {1, 2}), F({1, 2, 3}, {3, 1})}).status()), HasSubstr("inner dimensions differ"));
}

TEST(Decoder, GemmLayerNormRmsNormRotary) {
  auto gemm = RunNode(13, "Gemm", {F({1, 2, 3, 4}, {2, 2}), F({1, 0, 0, 1}, {2, 2}), F({10}, {1})}, 1, [](onnx::NodeProto& n) {
    SetAttr(n, "transA", int64_t(1));
    SetAttr(n, "alpha", 2.0f);
    SetAttr(n, "beta", 0.5f);
  });
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_THAT(Values((*gemm)[0]), ElementsAre(7, 11, 9, 13));  // 2 * A^T + 5
  Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  auto ln = RunNode(17, "LayerNormalization", {x, F({1, 1, 1}, {3}), F({0, 0, 1}, {3})}, 3,
                    [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(ln.ok()) << ln.status();
  const double s = std::sqrt(2.0 / 3);  // row [1, 2, 3]: variance 2/3
  EXPECT_NEAR((*ln)[0].data<float>()[0], -1 / s, 1e-5);
  EXPECT_NEAR((*ln)[0].data<float>()[5], 1 / s + 1, 1e-5);
  EXPECT_THAT(Values((*ln)[1]), ElementsAre(2, 5));  // Mean, shape (2, 1)
  EXPECT_EQ((*ln)[2].shape(), Shape({2, 1}));
  auto rms = RunNode(23, "RMSNormalization", {F({3, 4}, {1, 2}), F({1, 2}, {2})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(rms.ok()) << rms.status();
  EXPECT_NEAR((*rms)[0].data<float>()[1], 2 * 4 / std::sqrt(12.5), 1e-5);
  // RoPE on one head of size 4 at position 1 with angle 90 degrees for both pairs.
  Tensor v = F({1, 2, 3, 4}, {1, 1, 1, 4});
  Tensor cos = F({1, 1, 0, 0}, {2, 2}), sin = F({0, 0, 1, 1}, {2, 2});
  auto rope = RunNode(23, "RotaryEmbedding", {v, cos, sin, I({1}, {1, 1})});
  ASSERT_TRUE(rope.ok()) << rope.status();
  EXPECT_THAT(Values((*rope)[0]), ElementsAre(-3, -4, 1, 2));  // halves: (x1, x2) -> (-x2, x1)
  auto inter = RunNode(23, "RotaryEmbedding", {v, cos, sin, I({1}, {1, 1})}, 1,
                       [](onnx::NodeProto& n) { SetAttr(n, "interleaved", int64_t(1)); });
  EXPECT_THAT(Values((*inter)[0]), ElementsAre(-2, 1, -4, 3));
  EXPECT_THAT(Message(RunNode(23, "RotaryEmbedding", {v, cos, sin, I({2}, {1, 1})}).status()),
              HasSubstr("outside the cache of 2 positions"));
}

}  // namespace
}  // namespace onnx_mini
