// ops/movement.cc: Concat, Expand, Gather, Slice, Split, Pad, Range, ConstantOfShape, Trilu.
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

}  // namespace
}  // namespace onnx_mini
