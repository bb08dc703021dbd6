// runtime/rewrite/quant_matmul.cc: blocked DequantizeLinear + MatMul runs as
// one packed product (onnx_mini::DequantizeMatMul) with the graph as
// written's results, holds the packed weight rather than a float one, and
// fires only where it may.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/quant/nbits_matmul.h"
#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

// A quantized [k, n] weight of `q` with random codes.
Tensor Codes(DType q, Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t = Tensor::Zeros(q, shape);
  const int bits = Info(q).bits;
  for (int64_t i = 0; i < t.size(); ++i) {
    if (bits < 8) SetPacked(q, t.data<uint8_t>(), i, uint32_t(rng()) & ((1u << bits) - 1));
    else t.data<uint8_t>()[i] = uint8_t(rng());
  }
  return t;
}

// MatMul(x, DequantizeLinear(w, scale, zero?; axis, block_size)), opset 21.
ModelBuilder DqMatMul(DType q, DType t, int64_t k, int64_t n, int64_t block, bool zero, int64_t axis = 0,
                      bool scale_input = false) {
  const int64_t kb = (k + block - 1) / block;
  ModelBuilder m(21);
  m.Input("x", t, {-1, k}).Output("y", t, {-1, n});
  m.Initializer("w", Codes(q, {k, n}, uint32_t(k + n)));
  const Shape sshape = axis == 0 ? Shape{kb, n} : Shape{k, (n + block - 1) / block};
  Tensor scale = RandomUniform(t, sshape, 3, 0.01, 0.05);
  if (scale_input) m.Input("scale", t, sshape);
  else m.Initializer("scale", scale);
  std::vector<std::string> in = {"w", "scale"};
  if (zero) {
    m.Initializer("zero", Codes(q, sshape, 4));
    in.push_back("zero");
  }
  onnx::NodeProto& dq = m.Node("DequantizeLinear", in, {"wf"});
  SetAttr(dq, "axis", axis);
  SetAttr(dq, "block_size", block);
  m.Node("MatMul", {"x", "wf"}, {"y"});
  return m;
}

TEST(Rewrite, BlockedDequantizeLinearAndMatMulBecomeOnePackedProduct) {
  // In float (accuracy level 0) for every width; 4- and 8-bit weights run
  // at level 4 by default (the next test), 2-bit ones always in float.
  SessionOptions float_product;
  float_product.dq_matmul_accuracy_level = 0;
  for (DType q : {DType::kInt4, DType::kUInt4, DType::kInt8, DType::kUInt8, DType::kInt2, DType::kUInt2})
    for (DType t : {DType::kFloat, DType::kFloat16})
      for (bool zero : {false, true}) {
        const ModelBuilder m = DqMatMul(q, t, 100, 37, 32, zero);
        std::vector<std::vector<NamedTensor>> runs;
        for (int64_t rows : {1, 4, 13}) runs.push_back({{"x", RandomUniform(t, {rows, 100}, uint32_t(rows))}});
        const bool rounds_a = q != DType::kInt2 && q != DType::kUInt2;
        // Sums of 100 terms up to ~10 that cancel to ~1; in float16 the graph
        // as written also rounds each dequantized weight to float16.
        EXPECT_THAT(RunBothWaysMany(m, runs, t == DType::kFloat ? 1e-4 : 3e-2, rounds_a ? float_product : SessionOptions{}),
                    ::testing::ElementsAre("DequantizeMatMul"))
            << LowerName(q) << " " << LowerName(t) << " zero " << zero;
      }
}

TEST(Rewrite, FourAndEightBitDequantizeMatMulRoundsAToInt8PerBlockAsOnnxruntime) {
  // Level 4 (the default): the product of A rounded to int8 per block of 32
  // (NBitsRoundRowsToInt8's rule) with the dequantized weight, decode rows
  // and prefill rows alike.
  for (DType q : {DType::kInt4, DType::kUInt4, DType::kInt8, DType::kUInt8})
    for (bool zero : {false, true}) {
      const ModelBuilder m = DqMatMul(q, DType::kFloat, 100, 37, 32, zero);
      SessionOptions off;
      off.graph_rewrites = false;
      auto fused = m.Build();
      auto plain = m.Build(off);
      ASSERT_TRUE(fused.ok() && plain.ok()) << fused.status() << plain.status();
      EXPECT_THAT(OpTypes(**fused), ::testing::ElementsAre("DequantizeMatMul"));
      for (int64_t rows : {1, 4, 40}) {
        Tensor x = RandomUniform(DType::kFloat, {rows, 100}, uint32_t(rows));
        Tensor rounded = Tensor::Zeros(DType::kFloat, {rows, 100});
        NBitsRoundRowsToInt8(x.data<float>(), rows, 100, 32, rounded.data<float>());
        auto y = (*fused)->Run({{"x", x}});
        auto want = (*plain)->Run({{"x", rounded}});
        ASSERT_TRUE(y.ok() && want.ok()) << y.status() << want.status();
        const Tensor& a = (*y)[0];
        const Tensor& b = (*want)[0];
        ASSERT_EQ(a.shape(), b.shape());
        for (int64_t i = 0; i < a.size(); ++i)
          ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4 * (1 + std::fabs(b.data<float>()[i])))
              << LowerName(q) << " zero " << zero << " rows " << rows << " [" << i << "]";
      }
    }
}

TEST(Rewrite, AnAccuracyLevelOutsideZeroToFourIsRefused) {
  const ModelBuilder m = DqMatMul(DType::kInt4, DType::kFloat, 64, 16, 32, false);
  SessionOptions options;
  options.dq_matmul_accuracy_level = 5;
  auto s = m.Build(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("must be 0 to 4, got 5"));
}

TEST(Rewrite, DequantizeMatMulHoldsThePackedWeight) {
  // int4 [K = 512, N = 256] in blocks of 32, packed into quantized panels:
  // 64 KiB of codes, 16 KiB each of float scales, zero points and code sums;
  // the float weight would be 512 KiB.
  const ModelBuilder m = DqMatMul(DType::kInt4, DType::kFloat, 512, 256, 32, true);
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(OpTypes(**s), ::testing::ElementsAre("DequantizeMatMul"));
  const size_t packed = 512 * 256 / 2 + 3 * 16 * 256 * 4;  // codes; scales, zero points, code sums
  EXPECT_EQ((*s)->MemoryUsed(), packed);
  for (const char* name : {"w", "scale", "zero"})
    EXPECT_EQ((*s)->graph().initializers.at(name).raw(), nullptr) << name << " released";
  ASSERT_TRUE((*s)->Run({{"x", RandomUniform(DType::kFloat, {2, 512}, 1)}}).ok());
}

TEST(Rewrite, DequantizeMatMulsOfOneWeightPackItOnce) {
  ModelBuilder m = DqMatMul(DType::kUInt4, DType::kFloat, 128, 64, 32, true);
  m.Output("y2", DType::kFloat, {-1, 64});
  onnx::NodeProto& dq = m.Node("DequantizeLinear", {"w", "scale", "zero"}, {"wf2"});
  SetAttr(dq, "axis", int64_t{0});
  SetAttr(dq, "block_size", int64_t{32});
  m.Node("MatMul", {"x", "wf2"}, {"y2"});
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(OpTypes(**s), ::testing::ElementsAre("DequantizeMatMul", "DequantizeMatMul"));
  EXPECT_EQ((*s)->MemoryUsed(), size_t(128 * 64 / 2 + 3 * 4 * 64 * 4));  // one packing into panels
  auto y = (*s)->Run({{"x", RandomUniform(DType::kFloat, {3, 128}, 5)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Values((*y)[0]), Values((*y)[1]));
}

TEST(Rewrite, DequantizeMatMulFiresOnlyWhereItMay) {
  const std::vector<NamedTensor> x = {{"x", RandomUniform(DType::kFloat, {3, 64}, 1)}};
  // Blocks along N (axis 1), a block size the packed form does not take, a
  // scale known only at run time: left as written.
  EXPECT_THAT(RunBothWays(DqMatMul(DType::kInt4, DType::kFloat, 64, 48, 16, true, 1), x, 1e-6),
              ::testing::ElementsAre("DequantizeLinear", "MatMul"));
  EXPECT_THAT(RunBothWays(DqMatMul(DType::kInt4, DType::kFloat, 64, 48, 24, true), x, 1e-6),
              ::testing::ElementsAre("DequantizeLinear", "MatMul"));
  ModelBuilder m = DqMatMul(DType::kUInt4, DType::kFloat, 64, 48, 32, false, 0, true);
  std::vector<NamedTensor> with_scale = x;
  with_scale.push_back({"scale", RandomUniform(DType::kFloat, {2, 48}, 2, 0.01, 0.05)});
  EXPECT_THAT(RunBothWays(m, with_scale, 1e-6), ::testing::ElementsAre("DequantizeLinear", "MatMul"));
  // The dequantized weight read by another node too.
  ModelBuilder shared = DqMatMul(DType::kInt8, DType::kFloat, 64, 48, 32, false);
  shared.Output("wf", DType::kFloat, {64, 48});
  EXPECT_THAT(RunBothWays(shared, x, 1e-6), ::testing::ElementsAre("DequantizeLinear", "MatMul"));
}

}  // namespace
}  // namespace onnx_mini
