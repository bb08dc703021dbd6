// SwiGLU-28 against a double reference written here from the spec, for every
// declared type, odd and empty shapes, alpha, and the no-broadcast rule.
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

double Tol(DType d) { return d == DType::kBFloat16 ? 1e-2 : d == DType::kFloat16 ? 2e-3 : 1e-6; }

TEST(SwiGLU, EveryTypeAndShapeMatchesTheFormula) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5, 9}, Shape{0, 4}, Shape{2, 1, 33}})
      for (float alpha : {1.0f, 0.5f, -1.5f}) {
        Tensor a = RandomUniform(dtype, shape, seed++, -6, 6);
        Tensor b = RandomUniform(dtype, shape, seed++, -3, 3);
        absl::StatusOr<Tensor> y = RunOne(28, "SwiGLU", {a, b}, [&](onnx::NodeProto& n) {
          if (alpha != 1.0f) SetAttr(n, "alpha", alpha);
        });
        ASSERT_TRUE(y.ok()) << y.status();
        ASSERT_EQ(y->dtype(), dtype);
        ASSERT_EQ(y->shape(), shape);
        for (int64_t i = 0; i < a.size(); ++i) {
          const double x = GetDouble(a, i);
          const double want = x / (1 + std::exp(-double(alpha) * x)) * GetDouble(b, i);
          ASSERT_NEAR(GetDouble(*y, i), want, Tol(dtype) * (1 + std::fabs(want))) << LowerName(dtype) << " " << i;
        }
      }
}

TEST(SwiGLU, LargeInputsRunInParallelAndAgree) {
  Tensor a = RandomUniform(DType::kFloat, {300, 301}, 5, -40, 40);
  Tensor b = RandomUniform(DType::kFloat, {300, 301}, 6);
  absl::StatusOr<Tensor> y = RunOne(28, "SwiGLU", {a, b}, {}, 2);
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < a.size(); i += 97) {
    const double x = GetDouble(a, i);
    const double want = x / (1 + std::exp(-x)) * GetDouble(b, i);
    ASSERT_NEAR(GetDouble(*y, i), want, 1e-5 * (1 + std::fabs(want)));
    ASSERT_FALSE(std::isnan(GetDouble(*y, i)));  // no exp overflow for large |x|
  }
}

TEST(SwiGLU, DifferentShapesAreAnErrorNotABroadcast) {
  auto error = [](Shape sa, Shape sb) {
    absl::StatusOr<Tensor> y = RunOne(28, "SwiGLU", {Random(DType::kFloat, sa, 1), Random(DType::kFloat, sb, 2)});
    return y.ok() ? std::string("ok") : Message(y.status());
  };
  EXPECT_THAT(error({2, 3}, {3}), HasSubstr("must have identical shapes (SwiGLU does not broadcast)"));
  EXPECT_THAT(error({2, 3}, {2, 1}), HasSubstr("dim 1 differs"));
  EXPECT_EQ(error({2, 3}, {2, 3}), "ok");
  absl::StatusOr<Tensor> old = RunOne(27, "SwiGLU", {F({1}, {1}), F({1}, {1})});
  EXPECT_THAT(Message(old.status()), HasSubstr("not implemented: ai.onnx::SwiGLU opset 27"));
}

}  // namespace
}  // namespace onnx_mini
