// runtime/rewrite/activations.cc: SiLU and Pow2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

TEST(Rewrite, MulBySigmoidBecomesSwish) {
  for (DType dt : {DType::kFloat, DType::kFloat16, DType::kDouble})
    for (bool sigmoid_first : {false, true}) {
      ModelBuilder m(17);
      m.Input("x", dt, {-1}).Output("y", dt, {-1}).Output("z", dt, {-1});
      m.Node("Sigmoid", {"x"}, {"s"});
      if (sigmoid_first) m.Node("Mul", {"s", "x"}, {"y"});
      else m.Node("Mul", {"x", "s"}, {"y"});
      // Sigmoid of another value: not SiLU.
      m.Node("Sigmoid", {"y"}, {"t"});
      m.Node("Mul", {"x", "t"}, {"z"});
      for (int64_t n : {0, 1, 17, 1000}) {
        const Tensor x = RandomUniform(dt, {n}, uint32_t(n), -30, 30);
        EXPECT_THAT(RunBothWays(m, {{"x", x}}, dt == DType::kFloat16 ? 1e-3 : 1e-6),
                    ::testing::ElementsAre("Swish", "Sigmoid", "Mul"))
            << LowerName(dt);
      }
    }
}

TEST(Rewrite, PowOfTwoBecomesAMultiply) {
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kInt64}) {
    ModelBuilder m(17);
    m.Input("x", dt, {-1}).Output("y", dt, {-1}).Output("z", dt, {-1});
    m.Initializer("two", Tensor::FromVector(std::vector<int64_t>{2}, {}));
    m.Initializer("three", Tensor::FromVector(std::vector<float>{3}, {}));
    m.Node("Pow", {"x", "two"}, {"y"});
    m.Node("Pow", {"x", "three"}, {"z"});  // not rewritten
    for (int64_t n : {0, 1, 17, 1000}) {
      const Tensor x = Random(dt, {n}, uint32_t(n));
      EXPECT_THAT(RunBothWays(m, {{"x", x}}, 0), ::testing::ElementsAre("Mul", "Pow")) << LowerName(dt);
    }
  }
  // An exponent of shape [1] broadcasts a scalar base to [1]: left alone.
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {}).Output("y", DType::kFloat, {1});
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {1}));
  m.Node("Pow", {"x", "two"}, {"y"});
  EXPECT_THAT(RunBothWays(m, {{"x", F({3}, {})}}, 0), ::testing::ElementsAre("Pow"));
}

}  // namespace
}  // namespace onnx_mini
