// ops/contrib/embed_layer_norm.cc: EmbedLayerNormalization's bad input (its
// results are checked against onnxruntime in testdata/oracle/mha).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

Tensor Ids(std::vector<int32_t> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }

// input_ids, segment_ids, word (5, 4), position (3, 4), segment (2, 4), gamma, beta, mask, position_ids.
absl::StatusOr<std::vector<Tensor>> RunEmbed(const Tensor& ids, const Tensor& seg, const Tensor& mask = Tensor(),
                                             const Tensor& pos = Tensor()) {
  OpTester t;
  t.op = "EmbedLayerNormalization";
  t.domain = "com.microsoft";
  t.opset = 1;
  t.inputs = {ids,  seg, RandomUniform(DType::kFloat, {5, 4}, 1), RandomUniform(DType::kFloat, {3, 4}, 2),
              RandomUniform(DType::kFloat, {2, 4}, 3), F({1, 1, 1, 1}, {4}), F({0, 0, 0, 0}, {4}), mask, pos};
  t.outputs = 2;
  return t.Run();
}

TEST(EmbedLayerNormalization, RowsAreNormalizedAndMaskIndexCountsOnes) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunEmbed(Ids({0, 4, 2, 1, 1, 3}, {2, 3}), Ids({0, 1, 1, 0, 0, 1}, {2, 3}), Ids({1, 1, 0, 1, 2, 1}, {2, 3}));
  ASSERT_TRUE(out.ok()) << out.status();
  // gamma 1, beta 0: every row has mean 0 and variance 1 (up to epsilon).
  const std::vector<double> y = Values((*out)[0]);
  for (int t = 0; t < 6; ++t) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += y[size_t(t * 4 + i)] / 4;
    for (int i = 0; i < 4; ++i) var += (y[size_t(t * 4 + i)] - mean) * (y[size_t(t * 4 + i)] - mean) / 4;
    EXPECT_NEAR(mean, 0, 1e-6);
    EXPECT_NEAR(var, 1, 1e-5);
  }
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{2, 2}));  // a mask value of 2 is not counted
}

TEST(EmbedLayerNormalization, IndicesOutsideTheirTablesAreErrors) {
  Tensor seg = Ids({0, 1, 1, 0, 0, 1}, {2, 3});
  EXPECT_THAT(Message(RunEmbed(Ids({0, 4, 2, 1, 5, 3}, {2, 3}), seg).status()),
              HasSubstr("input_ids value 5 at index 4 is outside its table of 5 rows"));
  EXPECT_THAT(Message(RunEmbed(Ids({0, -1, 2, 1, 1, 3}, {2, 3}), seg).status()),
              HasSubstr("input_ids value -1 at index 1"));
  EXPECT_THAT(Message(RunEmbed(Ids({0, 1, 2, 1, 1, 3}, {2, 3}), Ids({0, 1, 2, 0, 0, 1}, {2, 3})).status()),
              HasSubstr("segment_ids value 2 at index 2 is outside its table of 2 rows"));
  EXPECT_THAT(Message(RunEmbed(Ids({0, 1, 2, 1, 1, 3}, {2, 3}), seg, Tensor(), Ids({0, 3, 1}, {1, 3})).status()),
              HasSubstr("position_ids value 3 at index 1 is outside its table of 3 rows"));
  EXPECT_THAT(Message(RunEmbed(Ids({0, 1, 2, 1, 1, 3, 0, 0}, {2, 4}), Ids({0, 1, 1, 0, 0, 1, 0, 0}, {2, 4})).status()),
              HasSubstr("sequence length 4 runs past the position_embedding table of 3 rows"));
  EXPECT_THAT(Message(RunEmbed(Ids({0, 1, 2, 1, 1, 3}, {2, 3}), seg, Ids({1, 1}, {1, 2})).status()),
              HasSubstr("mask [1,2] must have input_ids' shape [2,3]"));
}

}  // namespace
}  // namespace onnx_mini
