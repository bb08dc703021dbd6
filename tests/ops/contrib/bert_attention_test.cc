// ops/contrib/bert_attention.cc: com.microsoft Attention's bad input (its
// results are checked against onnxruntime in testdata/oracle/mha).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::vector<Tensor>> RunAttention(std::vector<Tensor> inputs, const Attrs& more = {},
                                                 size_t outputs = 1, std::vector<bool> constant = {}) {
  OpTester t;
  t.op = "Attention";
  t.domain = "com.microsoft";
  t.opset = 1;
  t.inputs = std::move(inputs);
  t.constant = std::move(constant);
  t.outputs = outputs;
  t.attrs = [more](onnx::NodeProto& n) {
    SetAttr(n, "num_heads", int64_t(2));
    if (more) more(n);
  };
  return t.Run();
}

TEST(BertAttention, OneTokenGivesItsValueProjection) {
  // One token: softmax of one score is 1, so Y = x Wv + bv, whatever Q and K are (weights constant or not).
  Tensor x = F({1, 2}, {1, 1, 2});
  std::vector<float> w(2 * 12, 0.5f);
  for (int c = 8; c < 12; ++c) w[size_t(c)] = float(c), w[size_t(12 + c)] = 1;  // V columns: row 0 c, row 1 1
  Tensor bias = F(std::vector<float>(12, 1), {12});
  for (bool constant : {false, true}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunAttention({x, F(w, {2, 12}), bias}, {}, 1, {false, constant, constant});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values((*out)[0]), (std::vector<double>{8 + 2 + 1, 9 + 2 + 1, 10 + 2 + 1, 11 + 2 + 1}));
  }
}

TEST(BertAttention, BadShapesAndMasksAreErrors) {
  Tensor x = RandomUniform(DType::kFloat, {2, 3, 5}, 1);
  Tensor w = RandomUniform(DType::kFloat, {5, 12}, 2);
  Tensor b = RandomUniform(DType::kFloat, {12}, 3);
  EXPECT_THAT(Message(RunAttention({x, RandomUniform(DType::kFloat, {4, 12}, 2), b}).status()),
              HasSubstr("weights [4,12] must be (5, D + Dk + Dv)"));
  EXPECT_THAT(Message(RunAttention({x, w, RandomUniform(DType::kFloat, {11}, 3)}).status()),
              HasSubstr("bias [11] must be (12)"));
  EXPECT_THAT(Message(RunAttention({x, w, b}, [](onnx::NodeProto& n) {
                        SetAttr(n, "qkv_hidden_sizes", std::vector<int64_t>{4, 4, 2});
                      }).status()),
              HasSubstr("the width must be the sum of qkv_hidden_sizes (4, 4, 2)"));
  Tensor mask = Tensor::FromVector<int32_t>({3, -2}, {2});
  EXPECT_THAT(Message(RunAttention({x, w, b, mask}).status()), HasSubstr("mask end position -2 of batch row 1 is negative"));
  mask = Tensor::FromVector<int32_t>({3, 3, 0, -1}, {4});
  EXPECT_THAT(Message(RunAttention({x, w, b, mask}).status()), HasSubstr("mask start position -1 of batch row 1"));
  mask = Tensor::FromVector<int32_t>(std::vector<int32_t>(18, 1), {2, 1, 3, 3});
  EXPECT_THAT(Message(RunAttention({x, w, b, mask}).status()),
              HasSubstr("not implemented: com.microsoft::Attention opset 1 for a 4-D mask_index"));
  Tensor past = RandomUniform(DType::kFloat, {2, 2, 2, 4, 3}, 4);
  EXPECT_THAT(Message(RunAttention({x, w, b, Tensor(), past}, {}, 2).status()),
              HasSubstr("past [2,2,2,4,3] must be (2, 2, 2, P, 2)"));
  EXPECT_THAT(Message(RunAttention({x, w, b, Tensor(), RandomUniform(DType::kFloat, {2, 2, 2, 4, 2}, 4)}).status()),
              HasSubstr("a past needs the present output"));
  // A present holds K and V in one tensor of one head size: a wider V would be written past its end.
  Tensor wide_v = RandomUniform(DType::kFloat, {5, 72}, 5);
  const Attrs wide = [](onnx::NodeProto& n) { SetAttr(n, "qkv_hidden_sizes", std::vector<int64_t>{4, 4, 64}); };
  EXPECT_TRUE(RunAttention({x, wide_v}, wide).ok());
  EXPECT_THAT(Message(RunAttention({x, wide_v}, wide, 2).status()),
              HasSubstr("a present needs equal key and value hidden sizes (4 and 64)"));
  EXPECT_THAT(Message(RunAttention({x, w, b}, [](onnx::NodeProto& n) { SetAttr(n, "do_rotary", int64_t(1)); }).status()),
              HasSubstr("not implemented: com.microsoft::Attention opset 1 for do_rotary"));
}

}  // namespace
}  // namespace onnx_mini
