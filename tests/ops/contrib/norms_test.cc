// ops/contrib/skip_norm.cc, ops/contrib/gelu.cc and the default-domain rows of
// ops/nn/norm.cc that onnxruntime adds (SimplifiedLayerNormalization,
// LayerNormalization-1..16): where outputs and inputs sit, broadcast skip,
// and bad input (named, nothing written, the session usable after).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/op.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<std::vector<Tensor>> RunMs(const std::string& op, const std::vector<Tensor>& inputs,
                                          std::vector<std::string> outputs = {"y"}, Attrs attrs = {}) {
  OpTester t;
  t.op = op;
  t.domain = kMsDomain;
  t.inputs = inputs;
  t.output_names = std::move(outputs);
  t.attrs = std::move(attrs);
  return t.Run();
}

TEST(ContribNorms, SimplifiedLayerNormalizationWritesInvStdAsItsSecondOutput) {
  // Rows [3, 4] and [0, 0]: inv_std 1/sqrt(12.5 + eps) and 1/sqrt(eps).
  auto out = RunNode(21, "SimplifiedLayerNormalization", {F({3, 4, 0, 0}, {2, 2}), F({1, 2}, {2})}, 2,
                     [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.25f); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), Shape({2, 1}));
  EXPECT_NEAR((*out)[1].data<float>()[0], 1 / std::sqrt(12.75), 1e-6);
  EXPECT_NEAR((*out)[1].data<float>()[1], 2, 1e-6);
  EXPECT_NEAR((*out)[0].data<float>()[1], 2 * 4 / std::sqrt(12.75), 1e-5);
  // onnxruntime's LayerNormalization-1..16 in the default domain: Mean at 1, InvStdDev at 2, bias optional.
  auto ln = RunNode(16, "LayerNormalization", {F({1, 2, 3, 5, 5, 5}, {2, 3}), F({1, 1, 1}, {3})}, 3,
                    [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(ln.ok()) << ln.status();
  EXPECT_THAT(Values((*ln)[1]), ElementsAre(2, 5));
  EXPECT_NEAR((*ln)[2].data<float>()[0], std::sqrt(1.5), 1e-6);
}

TEST(ContribNorms, SkipSimplifiedTakesItsBiasThirdAndWritesTheSum) {
  // input + skip + bias = [1, 2, 2, 4] (rows of 2); the bias sits at input 3 (no beta).
  auto out = RunMs("SkipSimplifiedLayerNormalization",
                   {F({1, 1, 1, 2}, {2, 2}), F({0, 0, 1, 1}, {2, 2}), F({1, 1}, {2}), F({0, 1}, {2})},
                   {"y", "mean", "inv", "sum"}, [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[3]), ElementsAre(1, 2, 2, 4));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(0, 0));  // no mean in the RMS form: zeros, as onnxruntime
  EXPECT_NEAR((*out)[2].data<float>()[0], 1 / std::sqrt(2.5), 1e-6);
  EXPECT_NEAR((*out)[0].data<float>()[3], 4 / std::sqrt(10.0), 1e-6);
}

TEST(ContribNorms, ABroadcastSkipEqualsTheRepeatedOne) {
  Tensor x = RandomUniform(DType::kFloat, {3, 2, 5}, 1), skip = RandomUniform(DType::kFloat, {2, 5}, 2);
  Tensor g = RandomUniform(DType::kFloat, {5}, 3), b = RandomUniform(DType::kFloat, {5}, 4);
  Tensor repeated = Tensor::Zeros(DType::kFloat, {3, 2, 5});
  for (int64_t i = 0; i < 30; ++i) repeated.data<float>()[i] = skip.data<float>()[i % 10];
  for (const Shape& shape : {Shape{2, 5}, Shape{1, 2, 5}}) {
    Tensor s = skip.Reshaped(shape);
    auto a = RunMs("SkipLayerNormalization", {x, s, g, b}, {"y", "", "", "sum"});
    auto want = RunMs("SkipLayerNormalization", {x, repeated, g, b}, {"y", "", "", "sum"});
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(Values((*a)[0]), Values((*want)[0]));
    EXPECT_EQ(Values((*a)[1]), Values((*want)[1]));
  }
}

TEST(ContribNorms, EmptyRowsGiveAnEmptyOutputAndNaNStatistics) {
  const Tensor x = Tensor::Zeros(DType::kFloat, {2, 0});
  auto out = RunMs("SkipLayerNormalization", {x, x, Tensor::Zeros(DType::kFloat, {0})}, {"y", "mean", "inv", "sum"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 0}));
  EXPECT_EQ((*out)[1].shape(), Shape({2, 1}));
  EXPECT_TRUE(std::isnan((*out)[1].data<float>()[1]) && std::isnan((*out)[2].data<float>()[0]));
  auto none = RunMs("SkipSimplifiedLayerNormalization", {Tensor::Zeros(DType::kFloat, {0, 3, 4}),
                                                         Tensor::Zeros(DType::kFloat, {3, 4}), F({1, 1, 1, 1}, {4})},
                    {"y", "", "", "sum"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[1].shape(), Shape({0, 3, 4}));
}

TEST(ContribNorms, BadShapesAreNamedAtCreation) {
  const Tensor x = Tensor::Zeros(DType::kFloat, {2, 3, 8});
  const Tensor g8 = Tensor::Zeros(DType::kFloat, {8});
  struct Bad {
    const char* op;
    std::vector<Tensor> inputs;
    std::vector<const char*> words;
  };
  const std::vector<Bad> cases = {
      {"SkipLayerNormalization", {x, x, Tensor::Zeros(DType::kFloat, {7})}, {"gamma", "hidden size 8"}},
      {"SkipLayerNormalization", {x, x, g8, Tensor::Zeros(DType::kFloat, {2, 8})}, {"beta", "1-D"}},
      {"SkipLayerNormalization", {x, x, g8, g8, Tensor::Zeros(DType::kFloat, {9})}, {"bias", "hidden size 8"}},
      {"SkipSimplifiedLayerNormalization", {x, x, g8, Tensor::Zeros(DType::kFloat, {4})}, {"bias"}},
      // A batch of 3 does not broadcast to 2 (onnxruntime wraps around: see docs/contrib_ops.md).
      {"SkipLayerNormalization", {x, Tensor::Zeros(DType::kFloat, {3, 3, 8}), g8}, {"skip", "[3,3,8]"}},
      {"SkipLayerNormalization", {x, Tensor::Zeros(DType::kFloat, {1, 8}), g8}, {"skip"}},
      {"SkipLayerNormalization", {x, Tensor::Zeros(DType::kFloat, {8}), g8}, {"skip"}},
      {"SkipSimplifiedLayerNormalization",
       {Tensor::Zeros(DType::kFloat, {1, 2, 3, 8}), Tensor::Zeros(DType::kFloat, {1, 2, 3, 8}), g8},
       {"input", "2 or 3 dims"}},
      {"BiasGelu", {x, Tensor::Zeros(DType::kFloat, {3})}, {"bias", "last dim"}},
      {"FastGelu", {x, Tensor::Zeros(DType::kFloat, {1, 8})}, {"bias", "1-D"}},
  };
  for (const Bad& c : cases) {
    auto out = RunMs(c.op, c.inputs);
    ASSERT_FALSE(out.ok()) << c.op;
    for (const char* w : c.words) EXPECT_THAT(Message(out.status()), HasSubstr(w)) << c.op;
  }
}

TEST(ContribNorms, ABadRunWritesNothingAndTheSessionRunsOnAfter) {
  // Symbolic dims: the shapes are checked at run time.
  ModelBuilder m(21);
  m.Opset(kMsDomain, 1);
  m.Input("x", DType::kFloat, {-1, -1, -1}).Input("s", DType::kFloat, {-1, -1, -1}).Input("g", DType::kFloat, {-1});
  m.Output("y", DType::kFloat, {-1, -1, -1});
  m.Node("SkipLayerNormalization", {"x", "s", "g"}, {"y"}, kMsDomain).set_name("ln_1");
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  Tensor x = RandomUniform(DType::kFloat, {2, 3, 4}, 5), g = RandomUniform(DType::kFloat, {4}, 6);
  std::vector<Tensor> out = {Tensor::Zeros(DType::kFloat, {2, 3, 4})};
  for (int i = 0; i < 24; ++i) out[0].data<float>()[i] = 42;
  absl::Status bad = (*session)->Run({{"x", x}, {"s", x}, {"g", Tensor::Zeros(DType::kFloat, {5})}}, &out);
  EXPECT_THAT(Message(bad), AllOf(HasSubstr("ln_1"), HasSubstr("gamma"), HasSubstr("hidden size 4")));
  for (int i = 0; i < 24; ++i) ASSERT_EQ(out[0].data<float>()[i], 42) << "written at " << i;
  absl::Status bad_skip = (*session)->Run({{"x", x}, {"s", RandomUniform(DType::kFloat, {3, 3, 4}, 7)}, {"g", g}}, &out);
  EXPECT_THAT(Message(bad_skip), HasSubstr("skip"));
  auto good = (*session)->Run({{"x", x}, {"s", x}, {"g", g}});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ((*good)[0].shape(), Shape({2, 3, 4}));
}

TEST(ContribGelu, TheFourAgreeWithTheirFormulas) {
  const Tensor x = F({-2, -0.5f, 0, 1, 3, 0.25f}, {2, 3});
  const Tensor b = F({0.5f, -1, 0}, {3});
  const std::vector<float> xv = {-2, -0.5f, 0, 1, 3, 0.25f};
  const auto erf_gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  const auto tanh_gelu = [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); };
  auto gelu = RunMs("Gelu", {x});
  auto bias_gelu = RunMs("BiasGelu", {x, b});
  auto fast = RunMs("FastGelu", {x, b});
  auto fast_nobias = RunMs("FastGelu", {x});
  auto quick = RunMs("QuickGelu", {x}, {"y"}, [](onnx::NodeProto& n) { SetAttr(n, "alpha", 2.0f); });
  for (auto* r : {&gelu, &bias_gelu, &fast, &fast_nobias, &quick}) ASSERT_TRUE(r->ok()) << r->status();
  for (int i = 0; i < 6; ++i) {
    const double v = xv[size_t(i)], vb = v + b.data<float>()[i % 3];
    EXPECT_NEAR((*gelu)[0].data<float>()[i], erf_gelu(v), 1e-6);
    EXPECT_NEAR((*bias_gelu)[0].data<float>()[i], erf_gelu(vb), 1e-6);
    EXPECT_NEAR((*fast)[0].data<float>()[i], tanh_gelu(vb), 1e-6);
    EXPECT_NEAR((*fast_nobias)[0].data<float>()[i], tanh_gelu(v), 1e-6);
    EXPECT_NEAR((*quick)[0].data<float>()[i], v / (1 + std::exp(-2 * v)), 1e-6);
  }
}

}  // namespace
}  // namespace onnx_mini
