// ops/nn/image_norm.cc: BatchNormalization (every version's attributes, training
// mode), InstanceNormalization, GroupNormalization 18 and 21, LRN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Typed(DType dt, const std::vector<double>& v, const Shape& s) {
  Tensor t = Tensor::Zeros(dt, s);
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, v[size_t(i)]);
  return t;
}

TEST(BatchNormalization, InferenceInEveryVersionAndType) {
  // X (2, 2, 2): channel 0 holds {1, 2, 5, 6}, channel 1 {3, 4, 7, 8}.
  const std::vector<double> xv = {1, 2, 3, 4, 5, 6, 7, 8};
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16})
    for (int64_t opset : {1, 6, 7, 9, 14, 15}) {
      std::vector<Tensor> in = {Typed(dt, xv, {2, 2, 2}), Typed(dt, {2, 0.5}, {2}), Typed(dt, {1, -1}, {2}),
                                Typed(dt, {1, 3}, {2}), Typed(dt, {4, 0.25}, {2})};
      auto y = RunOne(opset, "BatchNormalization", in, [opset](onnx::NodeProto& n) {
        SetAttr(n, "epsilon", 0.0f);
        if (opset < 7) SetAttr(n, "is_test", int64_t(1));
        if (opset == 1) SetAttr(n, "consumed_inputs", std::vector<int64_t>{0, 0, 0, 1, 1});
      });
      ASSERT_TRUE(y.ok()) << opset << " " << LowerName(dt) << ": " << y.status();
      // channel 0: (x - 1) / 2 * 2 + 1 = x; channel 1: (x - 3) / 0.5 * 0.5 - 1 = x - 4.
      EXPECT_THAT(Values(*y), ElementsAre(1, 2, -1, 0, 5, 6, 3, 4)) << opset << " " << LowerName(dt);
    }
  // 15 lets scale/bias and mean/var have types of their own.
  auto y = RunOne(15, "BatchNormalization",
                  {F({1, 2}, {1, 2}), Typed(DType::kDouble, {1, 1}, {2}), Typed(DType::kDouble, {0, 0}, {2}),
                   Typed(DType::kFloat16, {1, 1}, {2}), Typed(DType::kFloat16, {1, 1}, {2})},
                  [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0, 1));
}

TEST(BatchNormalization, SpatialZeroBeforeOpsetNineHasStatisticsPerElement) {
  // X (1, 1, 2): scale etc. are (C, D) = (1, 2).
  auto y = RunOne(7, "BatchNormalization",
                  {F({10, 20}, {1, 1, 2}), F({1, 2}, {1, 2}), F({0, 1}, {1, 2}), F({10, 10}, {1, 2}), F({1, 4}, {1, 2})},
                  [](onnx::NodeProto& n) {
                    SetAttr(n, "spatial", int64_t(0));
                    SetAttr(n, "epsilon", 0.0f);
                  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0, 11));  // (20 - 10) / 2 * 2 + 1
  // At 9 the attribute is gone: parameters must be (C).
  EXPECT_THAT(Message(RunOne(9, "BatchNormalization", {F({10, 20}, {1, 1, 2}), F({1, 2}, {1, 2}), F({0, 1}, {1, 2}),
                                                       F({10, 10}, {1, 2}), F({1, 4}, {1, 2})})
                          .status()),
              HasSubstr("scale [1,2] must be [1]"));
}

TEST(BatchNormalization, TrainingModeUpdatesTheRunningStatistics) {
  // One channel {1, 3}: batch mean 2, variance 1.
  auto out = RunNode(15, "BatchNormalization", {F({1, 3}, {2, 1}), F({1}, {1}), F({0}, {1}), F({10}, {1}), F({5}, {1})}, 3,
                     [](onnx::NodeProto& n) {
                       SetAttr(n, "training_mode", int64_t(1));
                       SetAttr(n, "epsilon", 0.0f);
                       SetAttr(n, "momentum", 0.5f);
                     });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(-1, 1));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(6));  // 10 * 0.5 + 2 * 0.5
  EXPECT_THAT(Values((*out)[2]), ElementsAre(3));  // 5 * 0.5 + 1 * 0.5
  // Before 14 the training outputs are not implemented; at 14 they need training_mode.
  std::vector<Tensor> in = {F({1, 3}, {2, 1}), F({1}, {1}), F({0}, {1}), F({10}, {1}), F({5}, {1})};
  EXPECT_EQ(Message(RunNode(9, "BatchNormalization", in, 3).status()),
            "not implemented: ai.onnx::BatchNormalization opset 9 for training outputs before opset 14");
  EXPECT_THAT(Message(RunNode(14, "BatchNormalization", in, 3).status()), HasSubstr("only with training_mode = 1"));
}

TEST(InstanceNormalization, NormalizesEachChannelOfEachSample) {
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16}) {
    // Channel rows {1, 3}, {2, 2}, {0, 4}, {5, 7}.
    auto y = RunOne(6, "InstanceNormalization",
                    {Typed(dt, {1, 3, 2, 2, 0, 4, 5, 7}, {2, 2, 2}), Typed(dt, {2, 1}, {2}), Typed(dt, {1, 0}, {2})},
                    [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<double> v = Values(*y);
    EXPECT_THAT(std::vector<double>(v.begin(), v.begin() + 2), ElementsAre(-1, 3));
    EXPECT_TRUE(std::isnan(v[2]));  // a constant channel with epsilon 0: 0 / 0
    EXPECT_THAT(std::vector<double>(v.begin() + 4, v.end()), ElementsAre(-1, 3, -1, 1));
  }
  EXPECT_THAT(Message(RunOne(6, "InstanceNormalization", {F({1, 2, 3, 4}, {1, 2, 2}), F({1}, {1}), F({1}, {1})}).status()),
              HasSubstr("scale [1] must be [2]"));
}

TEST(GroupNormalization, Opset18ScalesPerGroupAnd21PerChannel) {
  // X (1, 4, 1): groups of two channels, {1, 3} and {5, 9}.
  Tensor x = F({1, 3, 5, 9}, {1, 4, 1});
  auto attrs = [](onnx::NodeProto& n) {
    SetAttr(n, "num_groups", int64_t(2));
    SetAttr(n, "epsilon", 0.0f);
  };
  auto y18 = RunOne(18, "GroupNormalization", {x, F({1, 2}, {2}), F({0, 10}, {2})}, attrs);
  ASSERT_TRUE(y18.ok()) << y18.status();
  EXPECT_THAT(Values(*y18), ElementsAre(-1, 1, 8, 12));
  auto y21 = RunOne(21, "GroupNormalization", {x, F({1, 2, 3, 4}, {4}), F({0, 0, 0, 1}, {4})}, attrs);
  ASSERT_TRUE(y21.ok()) << y21.status();
  EXPECT_THAT(Values(*y21), ElementsAre(-1, 2, -3, 5));
  EXPECT_THAT(Message(RunOne(21, "GroupNormalization", {x, F({1, 2}, {2}), F({0, 10}, {2})}, attrs).status()),
              HasSubstr("scale [2] must be [4]"));
  EXPECT_THAT(Message(RunOne(21, "GroupNormalization", {x, F({1, 2, 3, 4}, {4}), F({0, 0, 0, 1}, {4})},
                             [](onnx::NodeProto& n) { SetAttr(n, "num_groups", int64_t(3)); })
                          .status()),
              HasSubstr("num_groups 3 does not divide the 4 channels"));
  EXPECT_THAT(Message(RunOne(21, "GroupNormalization", {x, F({1}, {1}), F({1}, {1})}).status()),
              HasSubstr("num_groups 0 must be given"));
}

TEST(ImageNormalizations, EmptyChannelsAndBatchesGiveEmptyOutputs) {
  const Tensor none = F({}, {0});
  auto in = RunOne(6, "InstanceNormalization", {Tensor::Zeros(DType::kFloat, {2, 0, 3}), none, none});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->shape(), Shape({2, 0, 3}));
  auto gn = RunOne(21, "GroupNormalization", {Tensor::Zeros(DType::kFloat, {0, 4, 3}), F({1, 1, 1, 1}, {4}), F({0, 0, 0, 0}, {4})},
                   [](onnx::NodeProto& n) { SetAttr(n, "num_groups", int64_t(2)); });
  ASSERT_TRUE(gn.ok()) << gn.status();
  EXPECT_EQ(gn->shape(), Shape({0, 4, 3}));
  auto bn = RunOne(15, "BatchNormalization", {Tensor::Zeros(DType::kFloat, {3, 0, 2}), none, none, none, none});
  ASSERT_TRUE(bn.ok()) << bn.status();
  EXPECT_EQ(bn->shape(), Shape({3, 0, 2}));
  auto lrn = RunOne(13, "LRN", {Tensor::Zeros(DType::kFloat, {1, 0, 2})}, [](onnx::NodeProto& n) { SetAttr(n, "size", int64_t(3)); });
  ASSERT_TRUE(lrn.ok()) << lrn.status();
  EXPECT_EQ(lrn->shape(), Shape({1, 0, 2}));
}

TEST(LRN, SumsSquaresOverNearbyChannels) {
  // C = 3, size 2: channel c sums c and c + 1 (floor((2 - 1) / 2) = 0 before, 1 after).
  for (DType dt : {DType::kFloat, DType::kDouble}) {
    auto y = RunOne(13, "LRN", {Typed(dt, {1, 2, 3}, {1, 3, 1})}, [](onnx::NodeProto& n) {
      SetAttr(n, "size", int64_t(2));
      SetAttr(n, "alpha", 2.0f);
      SetAttr(n, "beta", 1.0f);
      SetAttr(n, "bias", 1.0f);
    });
    ASSERT_TRUE(y.ok()) << y.status();
    // x / (1 + 2 / 2 * sum)
    EXPECT_THAT(Values(*y), ElementsAre(DoubleNear(1.0 / 6, 1e-6), DoubleNear(2.0 / 14, 1e-6), DoubleNear(3.0 / 10, 1e-6)));
  }
  EXPECT_THAT(Message(RunOne(1, "LRN", {F({1, 2, 3}, {1, 3, 1})}).status()), HasSubstr("size 0 must be given"));
}

}  // namespace
}  // namespace onnx_mini
