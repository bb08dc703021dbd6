// ops/llm/rotary.cc: RotaryEmbedding.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

TEST(RotaryEmbedding, PositionIdsAreInt64AsTheSchemaSays) {
  // int32 position_ids used to be read as int64.
  Tensor x = RandomUniform(DType::kFloat, {1, 2, 3, 4}, 1);
  Tensor cache = RandomUniform(DType::kFloat, {8, 2}, 2);
  absl::StatusOr<Tensor> out =
      RunOne(23, "RotaryEmbedding", {x, cache, cache, Tensor::FromVector<int32_t>({0, 1, 2}, {1, 3})});
  EXPECT_EQ(Message(out.status()), "not implemented: ai.onnx::RotaryEmbedding opset 23 for int32");
  out = RunOne(23, "RotaryEmbedding", {x, cache, cache, I({0, 1, 9}, {1, 3})});
  EXPECT_THAT(Message(out.status()), HasSubstr("position_ids value 9 is outside the cache of 8 positions"));
  out = RunOne(23, "RotaryEmbedding", {x, cache, cache, I({0, 1, 2}, {1, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Position 0 has cos/sin of row 0 of the cache: y[0] = x[0]*c0 - x[2]*s0 (non-interleaved, half 2).
  const float* px = x.data<float>();
  const float* c = cache.data<float>();
  EXPECT_NEAR(out->data<float>()[0], px[0] * c[0] - px[2] * c[0], 1e-6);
}

// Ids of one row standing for x's whole batch are onnx_mini::RotaryEmbedding's
// (the rotary rewrite's node), never the spec op's, whatever attribute a
// model writes on it.
TEST(RotaryEmbedding, OneRowOfIdsForAllIsTheInternalOpsOnly) {
  Tensor x = RandomUniform(DType::kFloat, {2, 2, 3, 4}, 1);
  Tensor cos = RandomUniform(DType::kFloat, {8, 2}, 2);
  Tensor sin = RandomUniform(DType::kFloat, {8, 2}, 3);
  const auto foreign = [](onnx::NodeProto& n) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("broadcast_position_ids");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
  };
  absl::StatusOr<Tensor> spec = RunOne(23, "RotaryEmbedding", {x, cos, sin, I({1, 4, 6}, {1, 3})}, foreign);
  EXPECT_THAT(Message(spec.status()), HasSubstr("position_ids [1,3] must be (2, 3)"));
  OpTester t;
  t.op = "RotaryEmbedding";
  t.domain = "onnx_mini";
  t.opset = 1;
  t.inputs = {x, cos, sin, I({1, 4, 6}, {1, 3})};
  absl::StatusOr<Tensor> one_row = t.RunOne();
  ASSERT_TRUE(one_row.ok()) << one_row.status();
  absl::StatusOr<Tensor> full = RunOne(23, "RotaryEmbedding", {x, cos, sin, I({1, 4, 6, 1, 4, 6}, {2, 3})});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(Values(*one_row), Values(*full));
  t.inputs[3] = I({1, 4, 6, 1, 4, 6, 1, 4, 6}, {3, 3});  // more rows than x's batch: still an error
  EXPECT_THAT(Message(t.RunOne().status()), HasSubstr("must be (2, 3)"));
}

}  // namespace
}  // namespace onnx_mini
