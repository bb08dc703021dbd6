// ops/contrib/gather_block_quantized.cc, quantized_matmul.cc, fused_matmul.cc:
// what the oracle cases (testdata/oracle/q8) cannot show: bad input, the
// int8 A onnxruntime does not register, the session usable after an error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/op.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

Tensor Bytes(DType dt, std::vector<int> v, Shape s) {
  Tensor t = Tensor::Zeros(dt, s);
  for (size_t i = 0; i < v.size(); ++i) SetDouble(t, int64_t(i), v[i]);
  return t;
}

// A table of 3 rows of 16 uint4 codes (packed in uint8), one block each.
ModelBuilder Table() {
  ModelBuilder m(21);
  m.Opset(kMsDomain, 1);
  std::vector<int> packed;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 8; ++i) packed.push_back((r + 1) | ((i % 16) << 4));  // low nibble r+1, high nibble i
  m.Initializer("data", Bytes(DType::kUInt8, packed, {3, 8}));
  m.Initializer("scales", F({0.5f, 1.0f, 2.0f}, {3, 1}));
  m.Input("idx", DType::kInt64, {-1});
  m.Output("y", DType::kFloat, {}, false);
  onnx::NodeProto& n = m.Node("GatherBlockQuantized", {"idx", "idx", "scales"}, {"y"}, kMsDomain);
  *n.mutable_input(0) = "data";
  SetAttr(n, "block_size", int64_t{16});
  return m;
}

TEST(GatherBlockQuantized, IndexOutsideTheTableIsAnErrorAndTheSessionRunsOn) {
  auto s = Table().Build();
  ASSERT_TRUE(s.ok()) << s.status();
  for (int64_t bad : std::initializer_list<int64_t>{3, -4, int64_t{1} << 40}) {
    std::vector<Tensor> out;
    absl::Status st = (*s)->Run({{"idx", I({0, bad}, {2})}}, &out);
    ASSERT_FALSE(st.ok());
    EXPECT_THAT(Message(st), ::testing::HasSubstr(absl::StrCat("index ", bad, " at position 1")));
    EXPECT_THAT(Message(st), ::testing::HasSubstr("3 entries"));
  }
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->Run({{"idx", I({-1, 0}, {2})}}, &out).ok());
  ASSERT_EQ(out[0].shape(), (Shape{2, 16}));
  // Row 2 (scale 2, zero point 8): element 0 is the low nibble 3, element 1 the high nibble 0.
  EXPECT_EQ(GetDouble(out[0], 0), (3 - 8) * 2.0);
  EXPECT_EQ(GetDouble(out[0], 1), (0 - 8) * 2.0);
  EXPECT_EQ(GetDouble(out[0], 16), (1 - 8) * 0.5);
}

TEST(GatherBlockQuantized, BadAttributesAndShapesNameTheRule) {
  OpTester t;
  t.op = "GatherBlockQuantized";
  t.opset = 1;
  t.domain = kMsDomain;
  t.inputs = {Bytes(DType::kUInt8, {}, {3, 8}), I({0}, {1}), F({1, 1, 1}, {3, 1})};
  t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "block_size", int64_t{24}); };
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("power of 2"));
  t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "block_size", int64_t{16}); SetAttr(n, "quantize_axis", int64_t{0}); };
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("uint8 data takes gather_axis 0"));
  t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "block_size", int64_t{16}); };
  t.inputs[2] = F({1, 1, 1, 1, 1, 1}, {3, 2});  // 16 elements a row: one block of 16
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("scales [3,2] must be"));
  t.inputs[2] = F({1, 1, 1}, {3, 1});
  t.inputs.push_back(Bytes(DType::kUInt8, {}, {3, 2}));
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("zero_points [3,2] must be [3,1]"));
}

// C = float(sum (a - za)(b - zb)) * a_scale * b_scale + bias, by hand.
TEST(MatMulIntegerToFloat, Int8AAndPerColumnZeroPoints) {
  const Tensor a = Bytes(DType::kInt8, {-3, 5, 127, -128, 0, 7}, {2, 3});
  const Tensor b = Bytes(DType::kUInt8, {1, 200, 30, 4, 255, 6}, {3, 2});
  const Tensor za = Bytes(DType::kInt8, {-2}, {});
  const Tensor zb = Bytes(DType::kUInt8, {10, 100}, {2});
  const Tensor as = F({0.5f}, {}), bs = F({0.25f, 2.0f}, {2}), bias = F({1.0f, -1.0f}, {2});
  // B at run time; B constant (int16 panels); B, its scale and zero point constant (8-bit QuantPanels).
  for (int constant : {0, 1, 2}) {
    OpTester t;
    t.op = "MatMulIntegerToFloat";
    t.opset = 1;
    t.domain = kMsDomain;
    t.inputs = {a, b, as, bs, za, zb, bias};
    t.constant = {false, constant > 0, false, constant > 1, false, constant > 1};
    auto y = t.RunOne();
    ASSERT_TRUE(y.ok()) << y.status();
    const int av[2][3] = {{-3, 5, 127}, {-128, 0, 7}}, bv[3][2] = {{1, 200}, {30, 4}, {255, 6}};
    const float scale[2] = {0.5f * 0.25f, 0.5f * 2.0f}, bi[2] = {1.0f, -1.0f};
    const int zbv[2] = {10, 100};
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 2; ++n) {
        int sum = 0;
        for (int k = 0; k < 3; ++k) sum += (av[m][k] + 2) * (bv[k][n] - zbv[n]);
        EXPECT_EQ(GetDouble(*y, m * 2 + n), double(float(sum) * scale[n] + bi[n])) << m << " " << n;
      }
  }
}

TEST(MatMulIntegerToFloat, ScalesAndZeroPointsOfOtherShapesAreRefused) {
  OpTester t;
  t.op = "MatMulIntegerToFloat";
  t.opset = 1;
  t.domain = kMsDomain;
  t.inputs = {Bytes(DType::kUInt8, {}, {2, 3}), Bytes(DType::kInt8, {}, {3, 4}), F({1, 1}, {2}), F({1}, {})};
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("not implemented"));
  t.inputs[2] = F({1}, {});
  t.inputs[3] = F({1, 1, 1}, {3});
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("b_scale of shape [3]"));
  t.inputs[3] = F({1}, {});
  t.inputs.push_back(Tensor());
  t.inputs.push_back(Tensor());
  t.inputs.push_back(F({1, 2, 3}, {3}));
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("the bias must be 1-D of B's 4 columns"));
}

TEST(FusedMatMul, TransBatchNeedsOneRankOfThreeOrMore) {
  OpTester t;
  t.op = "FusedMatMul";
  t.opset = 1;
  t.domain = kMsDomain;
  t.inputs = {F(std::vector<float>(6, 1), {2, 3}), F(std::vector<float>(12, 1), {1, 3, 4})};
  t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "transBatchB", int64_t{1}); };
  EXPECT_THAT(Message(t.Run().status()), ::testing::HasSubstr("one rank >= 3"));
  // Without it, NumPy broadcasting; alpha scales.
  t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "alpha", 0.5f); };
  auto y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(Values(*y), std::vector<double>(8, 1.5));
}

}  // namespace
}  // namespace onnx_mini
