// ops/nn/loss.cc: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::function<void(onnx::NodeProto&)> Loss(const std::string& reduction, std::optional<int64_t> ignore = {}) {
  return [=](onnx::NodeProto& n) {
    SetAttr(n, "reduction", reduction);
    if (ignore) SetAttr(n, "ignore_index", *ignore);
  };
}

// The example of the NegativeLogLikelihoodLoss spec: N, C, d1 = 2, 3, 2.
const Tensor kInput = F({1, 2, 2, 2, 3, 2, 0, 1, 2, 2, 1, 2}, {2, 3, 2});
const Tensor kTarget = I({2, 1, 0, 2}, {2, 2});
const Tensor kWeight = F({0.2f, 0.3f, 0.1f}, {3});

TEST(NegativeLogLikelihoodLoss, ReductionsWeightsAndIgnoreIndex) {
  absl::StatusOr<Tensor> y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget}, Loss("none"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(-3, -2, 0, -2));
  y = RunOne(12, "NegativeLogLikelihoodLoss", {kInput, kTarget});  // mean by default
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({}));
  EXPECT_THAT(Values(*y), ElementsAre(-1.75));
  y = RunOne(22, "NegativeLogLikelihoodLoss", {kInput, kTarget, kWeight}, Loss("none"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-0.3, -0.6, 0.0, -0.2}));
  y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget, kWeight}, Loss("sum"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-1.1}));
  // The weighted mean divides by the targets' weights: 0.1 + 0.3 + 0.2 + 0.1.
  y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget, kWeight}, Loss("mean"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-1.1 / 0.7}));
  // Ignored targets count neither in the loss nor in the mean's denominator.
  y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget}, Loss("none", 2));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0, -2, 0, 0));
  y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget}, Loss("mean", 2));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-1));
  // A negative ignore_index, with weights; int32 targets.
  const Tensor neg = Tensor::FromVector<int32_t>({-1, 1, 0, 2}, {2, 2});
  y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, neg, kWeight}, Loss("mean", -1));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-(0.6 + 0.0 + 0.2) / 0.6}));
  // Every sample ignored: the mean of nothing is NaN.
  y = RunOne(13, "NegativeLogLikelihoodLoss", {kInput, I({7, 7, 7, 7}, {2, 2})}, Loss("mean", 7));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(std::isnan(Values(*y)[0]));
}

TEST(NegativeLogLikelihoodLoss, ShapesOfNCAndHigherRanks) {
  // (N, C): target (N).
  absl::StatusOr<Tensor> y =
      RunOne(13, "NegativeLogLikelihoodLoss", {F({1, 2, 3, 4, 5, 6}, {2, 3}), I({2, 0}, {2})}, Loss("none"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2}));
  EXPECT_THAT(Values(*y), ElementsAre(-3, -4));
  // (N, C, d1, d2) in double: the class dim strides over d1 * d2.
  Tensor x = Tensor::FromVector<double>({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2});
  y = RunOne(13, "NegativeLogLikelihoodLoss", {x, I({0, 1, 1, 0}, {1, 2, 2})}, Loss("none"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(-1, -20, -30, -4));
  y = RunOne(13, "NegativeLogLikelihoodLoss", {x, I({0, 1, 1, 0}, {1, 2, 2})}, Loss("sum"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-55));
  // float16.
  Tensor h = Tensor::Zeros(DType::kFloat16, {1, 2});
  SetDouble(h, 1, -0.5);
  y = RunOne(13, "NegativeLogLikelihoodLoss", {h, I({1}, {1})}, Loss("mean"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kFloat16);
  EXPECT_THAT(Values(*y), ElementsAre(0.5));
  // Empty batch: an empty loss, a sum of 0.
  y = RunOne(13, "NegativeLogLikelihoodLoss", {F({}, {0, 3, 2}), I({}, {0, 2})}, Loss("sum"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0));
}

TEST(NegativeLogLikelihoodLoss, BadTargetsShapesAndAttributesAreErrors) {
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, I({2, 3, 0, 2}, {2, 2})}).status()),
              HasSubstr("target 3 at flat index 1 is outside [0, 3)"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, I({2, -1, 0, 2}, {2, 2})}).status()),
              HasSubstr("target -1 at flat index 1 is outside [0, 3)"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, I({2, -2, 0, 2}, {2, 2})}, Loss("sum", -1)).status()),
              HasSubstr("is not ignore_index -1"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, I({0, 0, 0}, {3})}).status()),
              HasSubstr("must be (N, d1, ..., dk)"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, I({0, 0, 0, 0, 0, 0}, {2, 3})}).status()),
              HasSubstr("must be (N, d1, ..., dk)"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget, F({1, 1}, {2})}).status()),
              HasSubstr("weight float[2] must be (C)"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {F({1}, {1}), I({0}, {1})}).status()),
              HasSubstr("must be (N, C, d1, ..., dk)"));
  EXPECT_THAT(Message(RunOne(13, "NegativeLogLikelihoodLoss", {kInput, kTarget}, Loss("max")).status()),
              HasSubstr("reduction 'max' is not one of none, sum, mean"));
}

TEST(SoftmaxCrossEntropyLoss, LossAndLogProb) {
  // Row 0: uniform scores, log p = -log 3. Row 1: scores 1, 2, 3.
  const Tensor scores = F({0, 0, 0, 1, 2, 3}, {2, 3});
  const double lse = 3 + std::log(std::exp(-2.0) + std::exp(-1.0) + 1);
  const std::vector<double> log_prob = {-std::log(3.0), -std::log(3.0), -std::log(3.0), 1 - lse, 2 - lse, 3 - lse};
  const Tensor labels = I({1, 2}, {2});
  absl::StatusOr<std::vector<Tensor>> y = RunNode(13, "SoftmaxCrossEntropyLoss", {scores, labels}, 2, Loss("none"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), Shape({2}));
  EXPECT_THAT(Values((*y)[0]), Pointwise(DoubleNear(1e-6), {std::log(3.0), lse - 3}));
  EXPECT_EQ((*y)[1].shape(), Shape({2, 3}));
  EXPECT_THAT(Values((*y)[1]), Pointwise(DoubleNear(1e-6), log_prob));
  // Mean and sum; one output only.
  absl::StatusOr<Tensor> mean = RunOne(12, "SoftmaxCrossEntropyLoss", {scores, labels});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(mean->shape(), Shape({}));
  EXPECT_NEAR(Values(*mean)[0], (std::log(3.0) + lse - 3) / 2, 1e-6);
  // Weights 1, 2, 3: the mean divides by 2 + 3.
  mean = RunOne(13, "SoftmaxCrossEntropyLoss", {scores, labels, F({1, 2, 3}, {3})}, Loss("mean"));
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_NEAR(Values(*mean)[0], (2 * std::log(3.0) + 3 * (lse - 3)) / 5, 1e-6);
  // ignore_index (negative), with the log_prob output still complete.
  y = RunNode(13, "SoftmaxCrossEntropyLoss", {scores, I({-5, 2}, {2})}, 2, Loss("sum", -5));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values((*y)[0]), Pointwise(DoubleNear(1e-6), {lse - 3}));
  EXPECT_THAT(Values((*y)[1]), Pointwise(DoubleNear(1e-6), log_prob));
  // (N, C, d1) in double: softmax along C for each d1.
  const Tensor x3 = Tensor::FromVector<double>({0, 5, 0, 5}, {1, 2, 2});
  y = RunNode(13, "SoftmaxCrossEntropyLoss", {x3, I({0, 1}, {1, 2})}, 2, Loss("none"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values((*y)[0]), Pointwise(DoubleNear(1e-12), {std::log(2.0), std::log(2.0)}));
  EXPECT_THAT(Values((*y)[1]), Pointwise(DoubleNear(1e-12), std::vector<double>(4, -std::log(2.0))));
  // Large scores do not overflow.
  mean = RunOne(13, "SoftmaxCrossEntropyLoss", {F({1000, 0}, {1, 2}), I({0}, {1})});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_NEAR(Values(*mean)[0], 0, 1e-6);
  EXPECT_THAT(Message(RunOne(13, "SoftmaxCrossEntropyLoss", {scores, I({3, 0}, {2})}).status()),
              HasSubstr("target 3 at flat index 0 is outside [0, 3)"));
}

}  // namespace
}  // namespace onnx_mini
