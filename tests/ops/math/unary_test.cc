// ops/math/unary.cc: the one-input elementwise ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Elementwise, UnaryOpsOnLargeInputsAgreeAcrossThreadCounts) {
  Tensor x = RandomUniform(DType::kFloat, {3, 100000}, 1);
  for (const char* op : {"Tanh", "Sigmoid", "Erf", "Neg", "Sqrt"}) {
    Tensor in = x;
    if (std::string(op) == "Sqrt") {
      in = *x.Clone();
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

TEST(Elementwise, IntegerNegAndAbsOfMinWrap) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor x = Tensor::FromVector<int64_t>({kMin, -5, 5}, {3});
  absl::StatusOr<Tensor> neg = RunOne(13, "Neg", {x});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ(neg->data<int64_t>()[0], kMin);
  EXPECT_EQ(neg->data<int64_t>()[1], 5);
  absl::StatusOr<Tensor> abs = RunOne(13, "Abs", {x});
  ASSERT_TRUE(abs.ok()) << abs.status();
  EXPECT_EQ(abs->data<int64_t>()[0], kMin);
  EXPECT_EQ(abs->data<int64_t>()[1], 5);
}


// ---- The activations, trigonometry, Sign, Round, IsNaN, IsInf ----

struct Activation {
  const char* op;
  int64_t opset;
  std::function<void(onnx::NodeProto&)> attrs;
  std::function<double(double)> reference;
  double lo = -4, hi = 4;  // the input range
};

std::vector<Activation> Activations() {
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  auto softplus = [](double x) { return std::log(1 + std::exp(x)); };
  auto alpha = [](float a) { return [a](onnx::NodeProto& n) { SetAttr(n, "alpha", a); }; };
  return {
      {"Elu", 6, alpha(0.5f), [](double x) { return x < 0 ? 0.5 * (std::exp(x) - 1) : x; }},
      {"Elu", 22, {}, [](double x) { return x < 0 ? std::exp(x) - 1 : x; }},
      {"Selu", 6, {}, [](double x) { return 1.05070102214813232421875 * (x > 0 ? x : 1.67326319217681884765625 * (std::exp(x) - 1)); }},
      {"Selu", 1, {}, [](double x) { return double(1.0507f) * (x > 0 ? x : double(1.6732f) * (std::exp(x) - 1)); }},
      {"Selu", 22, [](onnx::NodeProto& n) { SetAttr(n, "alpha", 2.0f); SetAttr(n, "gamma", 3.0f); },
       [](double x) { return 3 * (x > 0 ? x : 2 * (std::exp(x) - 1)); }},
      {"Celu", 12, alpha(2.0f), [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); }},
      {"Relu", 14, {}, [](double x) { return x > 0 ? x : 0; }},
      {"LeakyRelu", 16, {}, [](double x) { return x < 0 ? 0.01 * x : x; }},
      {"LeakyRelu", 1, alpha(0.2f), [](double x) { return x < 0 ? 0.2 * x : x; }},
      {"HardSigmoid", 6, {}, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
      {"HardSigmoid", 22, [](onnx::NodeProto& n) { SetAttr(n, "alpha", 0.5f); SetAttr(n, "beta", 0.25f); },
       [](double x) { return std::clamp(0.5 * x + 0.25, 0.0, 1.0); }},
      {"HardSwish", 14, {}, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -8, 8},
      {"Softplus", 1, {}, softplus, -30, 30},
      {"Softsign", 1, {}, [](double x) { return x / (1 + std::fabs(x)); }},
      {"Mish", 18, {}, [softplus](double x) { return x * std::tanh(softplus(x)); }, -20, 20},
      {"Swish", 24, alpha(1.5f), [sigmoid](double x) { return x * sigmoid(1.5 * x); }},
      {"ThresholdedRelu", 10, alpha(0.5f), [](double x) { return x > 0.5 ? x : 0; }},
      {"Shrink", 9, [](onnx::NodeProto& n) { SetAttr(n, "lambd", 1.0f); SetAttr(n, "bias", 0.5f); },
       [](double x) { return x < -1 ? x + 0.5 : x > 1 ? x - 0.5 : 0; }},
      {"Sign", 13, {}, [](double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }},
      {"Sin", 7, {}, [](double x) { return std::sin(x); }},
      {"Cos", 7, {}, [](double x) { return std::cos(x); }},
      {"Tan", 7, {}, [](double x) { return std::tan(x); }, -1.5, 1.5},
      {"Asin", 7, {}, [](double x) { return std::asin(x); }, -1, 1},
      {"Acos", 7, {}, [](double x) { return std::acos(x); }, -1, 1},
      {"Atan", 7, {}, [](double x) { return std::atan(x); }},
      {"Sinh", 9, {}, [](double x) { return std::sinh(x); }},
      {"Cosh", 9, {}, [](double x) { return std::cosh(x); }},
      {"Asinh", 9, {}, [](double x) { return std::asinh(x); }},
      {"Acosh", 9, {}, [](double x) { return std::acosh(x); }, 1, 9},
      {"Atanh", 9, {}, [](double x) { return std::atanh(x); }, -0.99, 0.99},
  };
}

TEST(Activations, MatchTheirFormulasAcrossFloatTypesAndSizes) {
  for (const Activation& a : Activations())
    for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
      // {2, 600}: 16-bit types go through float buffers of 512 (and the vector loops' tails)
      for (const Shape& shape : std::vector<Shape>{{7}, {3, 1, 5}, {}, {2, 0}, {2, 600}}) {
        const Tensor x = RandomUniform(dtype, shape, 7, a.lo, a.hi);
        absl::StatusOr<Tensor> y = RunOne(a.opset, a.op, {x}, a.attrs);
        ASSERT_TRUE(y.ok()) << a.op << "-" << a.opset << " " << LowerName(dtype) << ": " << y.status();
        ASSERT_EQ(y->shape(), x.shape());
        ASSERT_EQ(y->dtype(), dtype);
        // Each result is the reference rounded to the type, up to the type's precision.
        // (attributes are floats: 1e-7 covers their rounding for double)
        const double rel = dtype == DType::kDouble ? 1e-7 : dtype == DType::kFloat ? 2e-6
                         : dtype == DType::kFloat16 ? 2e-3 : 1.6e-2;
        for (int64_t i = 0; i < x.size(); ++i) {
          const double want = a.reference(GetDouble(x, i));
          EXPECT_NEAR(GetDouble(*y, i), want, rel * (1 + std::fabs(want))) << a.op << " " << LowerName(dtype) << " at " << GetDouble(x, i);
        }
      }
}

TEST(Activations, LargeInputsAgreeAcrossThreadCounts) {
  Tensor x = RandomUniform(DType::kFloat, {3, 40000}, 3);
  for (const Activation& a : Activations()) {
    auto one = RunNode(a.opset, a.op, {x}, 1, a.attrs, {}, 1);
    auto two = RunNode(a.opset, a.op, {x}, 1, a.attrs, {}, 2);
    ASSERT_TRUE(one.ok() && two.ok()) << a.op;
    EXPECT_EQ(std::memcmp((*one)[0].raw(), (*two)[0].raw(), (*one)[0].bytes()), 0) << a.op;
  }
}

TEST(Activations, SoftplusAndMishDoNotOverflow) {
  absl::StatusOr<Tensor> y = RunOne(1, "Softplus", {F({-1000, 100, 1000}, {3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0, 100, 1000));
  y = RunOne(18, "Mish", {F({-1000, 1000}, {2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-0.0, 1000));
}

TEST(Activations, CeluRefusesAZeroAlpha) {
  absl::StatusOr<Tensor> y = RunOne(12, "Celu", {F({-1, 1}, {2})}, [](onnx::NodeProto& n) { SetAttr(n, "alpha", 0.0f); });
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("Celu's alpha must not be 0"));
}

TEST(Activations, ShrinkAndSignOnIntegers) {
  absl::StatusOr<Tensor> y = RunOne(9, "Shrink", {Tensor::FromVector<int32_t>({-5, -1, 0, 1, 5}, {5})},
                                    [](onnx::NodeProto& n) { SetAttr(n, "lambd", 1.5f); SetAttr(n, "bias", 2.0f); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-3, 0, 0, 0, 3));
  y = RunOne(13, "Sign", {Tensor::FromVector<int8_t>({-128, -3, 0, 7, 127}, {5})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-1, -1, 0, 1, 1));
  y = RunOne(13, "Sign", {Tensor::FromVector<uint64_t>({0, 5}, {2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0, 1));
  y = RunOne(13, "Sign", {F({NAN, -0.0f}, {2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(std::isnan(y->data<float>()[0]));
  EXPECT_EQ(y->data<float>()[1], 0);
}

TEST(Activations, RoundIsHalfToEven) {
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16}) {
    Tensor x = Tensor::Zeros(dtype, {8});
    const std::vector<double> in = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6};
    for (size_t i = 0; i < in.size(); ++i) SetDouble(x, int64_t(i), in[i]);
    absl::StatusOr<Tensor> y = RunOne(22, "Round", {x});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(Values(*y), ElementsAre(0, 2, 2, -0.0, -2, -2, 2, -3)) << LowerName(dtype);
  }
}

TEST(Activations, IsNaNAndIsInf) {
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kFloat8E4M3FN,
                      DType::kFloat8E5M2}) {
    Tensor x = Tensor::Zeros(dtype, {4});
    // (the float8 types get a NaN only: E4M3FN has no infinity, and conversions saturate)
    const bool has_inf = Info(dtype).bits > 8;
    const std::vector<double> in = {1.0, NAN, has_inf ? inf : 1.0, has_inf ? -inf : 1.0};
    for (size_t i = 0; i < in.size(); ++i) SetDouble(x, int64_t(i), in[i]);
    absl::StatusOr<Tensor> nan = RunOne(20, "IsNaN", {x});
    ASSERT_TRUE(nan.ok()) << nan.status();
    EXPECT_EQ(nan->dtype(), DType::kBool);
    EXPECT_THAT(Values(*nan), ElementsAre(0, 1, 0, 0)) << LowerName(dtype);
    absl::StatusOr<Tensor> both = RunOne(20, "IsInf", {x});
    absl::StatusOr<Tensor> pos = RunOne(20, "IsInf", {x}, [](onnx::NodeProto& n) { SetAttr(n, "detect_negative", int64_t(0)); });
    absl::StatusOr<Tensor> neg = RunOne(20, "IsInf", {x}, [](onnx::NodeProto& n) { SetAttr(n, "detect_positive", int64_t(0)); });
    ASSERT_TRUE(both.ok() && pos.ok() && neg.ok());
    EXPECT_THAT(Values(*both), ElementsAre(0, 0, has_inf, has_inf)) << LowerName(dtype);
    EXPECT_THAT(Values(*pos), ElementsAre(0, 0, has_inf, 0)) << LowerName(dtype);
    EXPECT_THAT(Values(*neg), ElementsAre(0, 0, 0, has_inf)) << LowerName(dtype);
  }
}

// ---- Clip ----

TEST(Clip, AttributeBoundsBeforeOpset11) {
  const Tensor x = F({-3, -1, 0, 2, 5, NAN, INFINITY}, {7});
  absl::StatusOr<Tensor> y = RunOne(6, "Clip", {x}, [](onnx::NodeProto& n) { SetAttr(n, "min", -1.5f); SetAttr(n, "max", 2.5f); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-1.5, -1, 0, 2, 2.5, ::testing::IsNan(), 2.5));
  y = RunOne(1, "Clip", {x}, [](onnx::NodeProto& n) { SetAttr(n, "max", 0.0f); });  // no min: nothing below
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-3, -1, 0, 0, 0, ::testing::IsNan(), 0));
}

TEST(Clip, InputBoundsAcrossTypes) {
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kInt32,
                      DType::kInt64, DType::kUInt8, DType::kUInt64}) {
    Tensor x = Random(dtype, {3, 5}, 11);
    Tensor lo = Tensor::Zeros(dtype, {}), hi = Tensor::Zeros(dtype, {});
    SetDouble(lo, 0, 5);
    SetDouble(hi, 0, 20);
    for (int mode = 0; mode < 4; ++mode) {  // both, min only, max only, neither
      OpTester t;
      t.op = "Clip";
      t.opset = 13;
      t.inputs = {x, mode == 0 || mode == 1 ? lo : Tensor(), mode == 0 || mode == 2 ? hi : Tensor()};
      absl::StatusOr<Tensor> y = t.RunOne();
      ASSERT_TRUE(y.ok()) << LowerName(dtype) << ": " << y.status();
      for (int64_t i = 0; i < x.size(); ++i) {
        double want = GetDouble(x, i);
        if (mode == 0 || mode == 1) want = std::max(want, 5.0);
        if (mode == 0 || mode == 2) want = std::min(want, 20.0);
        EXPECT_EQ(GetDouble(*y, i), want) << LowerName(dtype) << " mode " << mode;
      }
    }
  }
}

TEST(Clip, MinAboveMaxGivesMaxAndBoundsMustBeScalars) {
  absl::StatusOr<Tensor> y = RunOne(13, "Clip", {F({-5, 0, 5}, {3}), F({2}, {}), F({1}, {})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1, 1, 1));
  y = RunOne(13, "Clip", {F({-5, 0, 5}, {3}), F({1, 2}, {2})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("min must be a scalar, got shape [2]"));
}

// ---- Dropout ----

TEST(Dropout, InferenceIsTheIdentityWithAMaskOfOnes) {
  const Tensor x = F({1, -2, 3, 0.5f, 7}, {5});
  // Opsets 7 to 9: a mask of the data's type; 10 and 11: bool; 12 on: training_mode false.
  for (int64_t opset : {7, 10, 13, 22}) {
    absl::StatusOr<std::vector<Tensor>> y = RunNode(opset, "Dropout", {x}, 2);
    ASSERT_TRUE(y.ok()) << opset << ": " << y.status();
    EXPECT_THAT(Values((*y)[0]), ElementsAre(1, -2, 3, 0.5, 7));
    EXPECT_EQ((*y)[1].dtype(), opset < 10 ? DType::kFloat : DType::kBool);
    EXPECT_THAT(Values((*y)[1]), ElementsAre(1, 1, 1, 1, 1));
  }
  absl::StatusOr<std::vector<Tensor>> y =
      RunNode(6, "Dropout", {x}, 1, [](onnx::NodeProto& n) { SetAttr(n, "is_test", int64_t(1)); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values((*y)[0]), ElementsAre(1, -2, 3, 0.5, 7));
  // A ratio without training_mode is ignored.
  y = RunNode(13, "Dropout", {x, F({0.9f}, {})}, 2);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values((*y)[0]), ElementsAre(1, -2, 3, 0.5, 7));
}

TEST(Dropout, TrainingDropsAndScalesConsistentlyWithItsMask) {
  const Tensor x = RandomUniform(DType::kFloat, {1000}, 5, 1, 2);
  auto seed = [](onnx::NodeProto& n) { SetAttr(n, "seed", int64_t(7)); };
  absl::StatusOr<std::vector<Tensor>> a = RunNode(13, "Dropout", {x, F({0.25f}, {}), B({true}, {})}, 2, seed);
  absl::StatusOr<std::vector<Tensor>> b = RunNode(13, "Dropout", {x, F({0.25f}, {}), B({true}, {})}, 2, seed);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  int kept = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    const bool k = (*a)[1].data<bool>()[i];
    kept += k;
    EXPECT_FLOAT_EQ((*a)[0].data<float>()[i], k ? x.data<float>()[i] / 0.75f : 0.0f);
  }
  EXPECT_GT(kept, 650);  // 750 expected; the bound is 7 standard deviations away
  EXPECT_LT(kept, 850);
  EXPECT_EQ(std::memcmp((*a)[1].raw(), (*b)[1].raw(), (*a)[1].bytes()), 0);  // one seed, one mask
  // The draws are NumPy's after np.random.seed(0) (0.5488, 0.7152, 0.6028, 0.5449, 0.4237, ...),
  // as ONNX's reference makes them.
  a = RunNode(13, "Dropout", {x, F({0.5f}, {}), B({true}, {})}, 2, [](onnx::NodeProto& n) { SetAttr(n, "seed", int64_t(0)); });
  ASSERT_TRUE(a.ok()) << a.status();
  const std::vector<double> mask = Values((*a)[1]);
  EXPECT_THAT(std::vector<double>(mask.begin(), mask.begin() + 5), ElementsAre(1, 1, 1, 1, 0));
  // Opset 6 with is_test = 0 (its default) trains; its mask has the data's type.
  a = RunNode(6, "Dropout", {x}, 2, [](onnx::NodeProto& n) { SetAttr(n, "ratio", 0.5f); });
  ASSERT_TRUE(a.ok()) << a.status();
  for (int64_t i = 0; i < x.size(); ++i)
    EXPECT_FLOAT_EQ((*a)[0].data<float>()[i], (*a)[1].data<float>()[i] * x.data<float>()[i] * 2);
  // Ratio 0 keeps everything; ratio 1 is outside [0, 1).
  a = RunNode(13, "Dropout", {x, F({0}, {}), B({true}, {})}, 2);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(std::memcmp((*a)[0].raw(), x.raw(), x.bytes()), 0);
  a = RunNode(13, "Dropout", {x, F({1}, {}), B({true}, {})}, 2);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(Message(a.status()), HasSubstr("ratio must be in [0, 1), got 1"));
}

TEST(UnaryOps, BitwiseNotOnEveryIntegerType) {
  for (DType dtype : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32, DType::kUInt32,
                      DType::kInt64, DType::kUInt64}) {
    Tensor x = Tensor::Zeros(dtype, {3});
    SetDouble(x, 1, 5);
    SetDouble(x, 2, 1);
    absl::StatusOr<Tensor> out = RunOne(18, "BitwiseNot", {x});
    ASSERT_TRUE(out.ok()) << LowerName(dtype) << ": " << out.status();
    const double max = std::ldexp(1.0, Info(dtype).bits) - 1;
    if (Info(dtype).kind == DTypeKind::kSigned) EXPECT_THAT(Values(*out), ElementsAre(-1, -6, -2));
    else EXPECT_THAT(Values(*out), ElementsAre(max, max - 5, max - 1)) << LowerName(dtype);
  }
  EXPECT_FALSE(RunOne(18, "BitwiseNot", {F({1}, {1})}).ok());
}

}  // namespace
}  // namespace onnx_mini
