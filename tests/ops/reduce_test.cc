// ops/reduce.cc: reductions, ArgMax, Softmax, TopK.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
  Tensor big = RandomUniform(DType::kFloat, {64, 50, 40}, 3);
  auto soft = RunNode(13, "Softmax", {big}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-2)); }, {}, 2);
  ASSERT_TRUE(soft.ok());
  double total = 0;
  for (int64_t k = 0; k < 50; ++k) total += (*soft)[0].data<float>()[(7 * 50 + k) * 40 + 9];
  EXPECT_NEAR(total, 1.0, 1e-5);
}

}  // namespace
}  // namespace onnx_mini
