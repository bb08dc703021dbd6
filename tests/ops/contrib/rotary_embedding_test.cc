// ops/contrib/rotary_embedding.cc: com.microsoft RotaryEmbedding's bad input
// (its results are checked against onnxruntime in testdata/oracle/mha).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Tensor> RunRotary(const Tensor& x, const Tensor& pos, const Tensor& cache, int64_t heads, int64_t dim = 0) {
  OpTester t;
  t.op = "RotaryEmbedding";
  t.domain = "com.microsoft";
  t.opset = 1;
  t.inputs = {x, pos, cache, cache};
  t.attrs = [&](onnx::NodeProto& n) {
    if (heads) SetAttr(n, "num_heads", heads);
    if (dim) SetAttr(n, "rotary_embedding_dim", dim);
  };
  return t.RunOne();
}

TEST(MsRotaryEmbedding, RotatesPairsAtTheirPositions) {
  // One head of 4, positions 1 and 0: y = x * cos + rotate_half(x) * sin.
  Tensor x = F({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 4});
  Tensor cos = F({1, 1, 0.5f, 0.25f}, {2, 2});
  Tensor sin = F({0, 0, 0.5f, 2}, {2, 2});
  OpTester t;
  t.op = "RotaryEmbedding";
  t.domain = "com.microsoft";
  t.opset = 1;
  t.inputs = {x, I({1, 0}, {1, 2}), cos, sin};
  absl::StatusOr<Tensor> y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  // Token 0 at position 1: (1*0.5 - 3*0.5, 2*0.25 - 4*2, 3*0.5 + 1*0.5, 4*0.25 + 2*2); token 1 at 0: unchanged.
  EXPECT_EQ(Values(*y), (std::vector<double>{-1, -7.5, 2, 5, 5, 6, 7, 8}));
}

TEST(MsRotaryEmbedding, PositionsOutsideTheCacheAreErrors) {
  Tensor x = RandomUniform(DType::kFloat, {2, 3, 8}, 1);
  Tensor cache = RandomUniform(DType::kFloat, {6, 2}, 2);
  EXPECT_THAT(Message(RunRotary(x, I({0, 1, 2, 3, 4, 6}, {2, 3}), cache, 2).status()),
              HasSubstr("position_ids value 6 at index 5 is outside the cos/sin cache of 6 positions"));
  EXPECT_THAT(Message(RunRotary(x, I({-1, 1, 2, 3, 4, 5}, {2, 3}), cache, 2).status()),
              HasSubstr("position_ids value -1 at index 0"));
  EXPECT_THAT(Message(RunRotary(x, I({4}, {1}), cache, 2).status()),
              HasSubstr("position_ids start 4 with sequence length 3 runs past the cos/sin cache of 6 positions"));
  EXPECT_TRUE(RunRotary(x, I({3}, {1}), cache, 2).ok());
  EXPECT_THAT(Message(RunRotary(x, I({0, 1, 2}, {1, 3}), cache, 2).status()),
              HasSubstr("position_ids [1,3] must be a scalar, [1] or (2, 3)"));
}

TEST(MsRotaryEmbedding, RotaryDimMustBeEvenAndFitTheHead) {
  Tensor x = RandomUniform(DType::kFloat, {1, 2, 8}, 1);
  EXPECT_THAT(Message(RunRotary(x, I({0}, {1}), RandomUniform(DType::kFloat, {4, 2}, 2), 2, 5).status()),
              HasSubstr("rotary_embedding_dim 5 must be even"));
  EXPECT_THAT(Message(RunRotary(x, I({0}, {1}), RandomUniform(DType::kFloat, {4, 3}, 2), 2, 6).status()),
              HasSubstr("rotary_embedding_dim 6 exceeds the head size 4"));
  EXPECT_THAT(Message(RunRotary(x, I({0}, {1}), RandomUniform(DType::kFloat, {4, 1}, 2), 0, 2).status()),
              HasSubstr("num_heads must be given when rotary_embedding_dim is"));
  // The caches' width must be half the rotary dim.
  EXPECT_THAT(Message(RunRotary(x, I({0}, {1}), RandomUniform(DType::kFloat, {4, 2}, 2), 2, 2).status()),
              HasSubstr("must be (max_position, 1): half the rotary dim 2"));
  // Without rotary_embedding_dim the head is twice the caches' width: 3 x 2 does not divide 8.
  EXPECT_THAT(Message(RunRotary(x, I({0}, {1}), RandomUniform(DType::kFloat, {4, 3}, 2), 0).status()),
              HasSubstr("head size 6 (2 x cos_cache's width) does not fit the input [1,2,8]"));
}

}  // namespace
}  // namespace onnx_mini
