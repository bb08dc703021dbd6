// ops/contrib/multi_head_attention.cc: MultiHeadAttention's bad input (its
// results are checked against onnxruntime in testdata/oracle/mha).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

// Inputs by position (undefined: absent); outputs Y, present_key, present_value.
absl::StatusOr<std::vector<Tensor>> RunMha(std::vector<Tensor> inputs, int64_t heads = 2, size_t outputs = 1) {
  OpTester t;
  t.op = "MultiHeadAttention";
  t.domain = "com.microsoft";
  t.opset = 1;
  t.inputs = std::move(inputs);
  t.outputs = outputs;
  t.attrs = [heads](onnx::NodeProto& n) { SetAttr(n, "num_heads", heads); };
  return t.Run();
}

Tensor Mask(std::vector<int32_t> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }

TEST(MultiHeadAttention, OneKeyGivesItsValue) {
  // One key per row: softmax of one score is 1, so Y is V (+ its bias) whatever Q and K are.
  Tensor q = RandomUniform(DType::kFloat, {2, 3, 4}, 1);
  Tensor k = RandomUniform(DType::kFloat, {2, 1, 4}, 2);
  Tensor v = F({1, 2, 3, 4, 5, 6, 7, 8}, {2, 1, 4});
  Tensor bias = F({0, 0, 0, 0, 0, 0, 0, 0, 10, 20, 30, 40}, {12});
  absl::StatusOr<std::vector<Tensor>> out = RunMha({q, k, v, bias});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> y = Values((*out)[0]);
  ASSERT_EQ(y.size(), 24u);
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 3; ++s)
      for (int d = 0; d < 4; ++d) EXPECT_DOUBLE_EQ(y[size_t((b * 3 + s) * 4 + d)], (b * 4 + d + 1) + 10 * (d + 1));
}

TEST(MultiHeadAttention, MasksOfOtherShapesAndNegativeEndsAreErrors) {
  Tensor q = RandomUniform(DType::kFloat, {2, 3, 4}, 1);
  Tensor kv = RandomUniform(DType::kFloat, {2, 5, 4}, 2);
  absl::StatusOr<std::vector<Tensor>> out = RunMha({q, kv, kv, Tensor(), Mask({1, 1, 1, 1, 1}, {1, 5})});
  EXPECT_THAT(Message(out.status()),
              HasSubstr("key_padding_mask [1,5] must be (2), (8), (2, 5) or (2, 3, 5) with batch 2, 3 queries and 5 keys"));
  out = RunMha({q, kv, kv, Tensor(), Mask({3, -1}, {2})});
  EXPECT_THAT(Message(out.status()), HasSubstr("mask end position -1 of batch row 1 is negative"));
  // An end past the keys masks nothing, as onnxruntime's kernel reads it.
  EXPECT_TRUE(RunMha({q, kv, kv, Tensor(), Mask({3, 9}, {2})}).ok());
  out = RunMha({q, kv, kv, Tensor(), Tensor(), RandomUniform(DType::kFloat, {2, 2, 3, 4}, 3)});
  EXPECT_THAT(Message(out.status()), HasSubstr("attention_bias [2,2,3,4] must be (1 or 2, 1 or 2, 3, 5)"));
}

TEST(MultiHeadAttention, ShapesThatDisagreeAreErrors) {
  Tensor q = RandomUniform(DType::kFloat, {2, 3, 4}, 1);
  Tensor kv = RandomUniform(DType::kFloat, {2, 5, 4}, 2);
  EXPECT_THAT(Message(RunMha({q, kv, kv}, 3).status()), HasSubstr("num_heads 3 does not divide the query's hidden size 4"));
  EXPECT_THAT(Message(RunMha({q, RandomUniform(DType::kFloat, {2, 5, 6}, 2), kv}).status()),
              HasSubstr("must be (2, L, 4) and (2, L, Dv)"));
  EXPECT_THAT(Message(RunMha({q, kv, kv, RandomUniform(DType::kFloat, {8}, 3)}).status()),
              HasSubstr("bias [8] must be (12)"));
  Tensor past = RandomUniform(DType::kFloat, {2, 2, 4, 3}, 4);
  EXPECT_THAT(Message(RunMha({q, kv, kv, Tensor(), Tensor(), Tensor(), past, past}, 2, 3).status()),
              HasSubstr("past_key [2,2,4,3] and past_value [2,2,4,3] must be (2, 2, P, 2) and (2, 2, P, 2)"));
  EXPECT_THAT(Message(RunMha({RandomUniform(DType::kFloat, {2, 3, 2, 3, 2}, 1)}).status()),
              HasSubstr("not implemented: com.microsoft::MultiHeadAttention opset 1 for packed QKV"));
}

TEST(MultiHeadAttention, FastKernelAndReferenceAgree) {
  // Asking for qk runs the reference kernel; without it the fast one runs: the same Y either way, with
  // masks, attention_bias, a past and unidirectional (by the kernel's causal rule when L == S, by the
  // bias when L != S), on 1 and 2 threads.
  for (int64_t L : {3, 5}) {
    Tensor q = RandomUniform(DType::kFloat, {2, 3, 8}, 1);
    Tensor k = RandomUniform(DType::kFloat, {2, L, 8}, 2);
    Tensor v = RandomUniform(DType::kFloat, {2, L, 8}, 3);
    Tensor bias = RandomUniform(DType::kFloat, {24}, 4);
    std::vector<int32_t> m(size_t(2 * (4 + L)), 1);
    m[1] = m[size_t(4 + L + 5)] = 0;
    Tensor mask = Tensor::FromVector(m, {2, 4 + L});
    Tensor ab = RandomUniform(DType::kFloat, {1, 2, 3, 4 + L}, 5);
    Tensor pk = RandomUniform(DType::kFloat, {2, 2, 4, 4}, 6);
    Tensor pv = RandomUniform(DType::kFloat, {2, 2, 4, 4}, 7);
    std::vector<std::vector<double>> ys;
    for (bool qk : {false, true})
      for (int threads : {1, 2}) {
        OpTester t;
        t.op = "MultiHeadAttention";
        t.domain = "com.microsoft";
        t.opset = 1;
        t.inputs = {q, k, v, bias, mask, ab, pk, pv};
        t.output_names = {"y", "present_key", "present_value", qk ? "qk" : ""};
        t.threads = threads;
        t.attrs = [](onnx::NodeProto& n) {
          SetAttr(n, "num_heads", int64_t(2));
          SetAttr(n, "unidirectional", int64_t(1));
        };
        absl::StatusOr<std::vector<Tensor>> out = t.Run();
        ASSERT_TRUE(out.ok()) << out.status();
        ys.push_back(Values((*out)[0]));
      }
    for (size_t r = 1; r < ys.size(); ++r)
      for (size_t i = 0; i < ys[0].size(); ++i) EXPECT_NEAR(ys[r][i], ys[0][i], 1e-5) << "L " << L << " run " << r;
  }
}

}  // namespace
}  // namespace onnx_mini
