// ops/contrib/matmul_nbits.cc: MatMulNBits against the kernels' reference
// through a session, its bad inputs, what a session over it holds, and the
// internal DequantizeMatMul that the DequantizeLinear + MatMul rewrite makes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/quant/nbits_matmul.h"
#include "runtime/cpu.h"
#include "runtime/loader.h"
#include "runtime/session.h"
#include "tests/ops/op_tester.h"
#include "tests/ops/random_values.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

// A MatMulNBits weight's tensors: B, scales, packed zero points.
struct NBits {
  int64_t k, n, bits, block, kb;
  Tensor b, scales, zeros;
};

NBits MakeNBits(int64_t k, int64_t n, int64_t bits, int64_t block, uint32_t seed) {
  std::mt19937 rng(seed);
  NBits w{k, n, bits, block, (k + block - 1) / block, {}, {}, {}};
  w.b = Tensor::Zeros(DType::kUInt8, {n, w.kb, block * bits / 8});
  for (int64_t i = 0; i < w.b.size(); ++i) w.b.data<uint8_t>()[i] = uint8_t(rng());
  std::vector<float> s = RandomFloats(n * w.kb, seed + 1);
  for (float& v : s) v = 0.01f + 0.05f * std::fabs(v);
  w.scales = Tensor::FromVector(s, {n, w.kb});
  w.zeros = Tensor::Zeros(DType::kUInt8, {n, (w.kb * bits + 7) / 8});
  for (int64_t i = 0; i < w.zeros.size(); ++i) w.zeros.data<uint8_t>()[i] = uint8_t(rng());
  return w;
}

std::function<void(onnx::NodeProto&)> NBitsAttrs(int64_t k, int64_t n, int64_t bits, int64_t block) {
  return [=](onnx::NodeProto& node) {
    SetAttr(node, "K", k);
    SetAttr(node, "N", n);
    SetAttr(node, "bits", bits);
    SetAttr(node, "block_size", block);
  };
}

// Y from the kernels' reference for float A.
std::vector<float> Reference(const NBits& w, const Tensor& a, bool zeros, const float* bias) {
  NBitsMatrix m;
  m.bits = int(w.bits);
  m.k = w.k;
  m.n = w.n;
  m.block_size = w.block;
  m.k_blocks = w.kb;
  m.data = w.b.data<uint8_t>();
  m.scales = w.scales.data<float>();
  m.zero_packed = zeros ? w.zeros.data<uint8_t>() : nullptr;
  m.zero_default = float(1 << (w.bits - 1));
  const int64_t rows = a.size() / w.k;
  std::vector<float> y(size_t(rows * w.n));
  NBitsMatMulReference(a.data<float>(), rows, m, bias, y.data());
  return y;
}

TEST(MatMulNBits, MatchesTheReferenceAsInitializersAndAsInputs) {
  for (int64_t bits : {2, 4, 8})
    for (bool constant : {true, false})
      for (int64_t rows : {1, 3, 9}) {
        const NBits w = MakeNBits(100, 37, bits, 32, uint32_t(bits * 10 + rows));
        const Tensor a = Tensor::FromVector(RandomFloats(2 * rows * w.k, 5), {2, rows, w.k});
        const Tensor bias = Tensor::FromVector(RandomFloats(w.n, 6), {w.n});
        OpTester t;
        t.op = "MatMulNBits";
        t.domain = "com.microsoft";
        t.opset = 1;
        t.inputs = {a, w.b, w.scales, w.zeros, Tensor(), bias};
        t.constant = {false, constant, constant, constant, false, constant};
        t.attrs = NBitsAttrs(w.k, w.n, bits, w.block);
        t.threads = 2;
        absl::StatusOr<Tensor> y = t.RunOne();
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_EQ(y->shape(), (Shape{2, rows, w.n}));
        const std::vector<float> want = Reference(w, a, true, bias.data<float>());
        for (int64_t i = 0; i < y->size(); ++i)
          ASSERT_NEAR(y->data<float>()[i], want[size_t(i)], 1e-4 * (1 + std::fabs(want[size_t(i)])))
              << "bits " << bits << " rows " << rows << " at " << i;
      }
}

// accuracy_level 4: A rounded to int8 per block (NBitsRoundRowsToInt8), on
// every target the host has, at rows on both sides of the decode passes'
// row count (PanelGemvMaxRows: 2 and 4 on AVX2, 16 on VNNI), 4- and 8-bit codes.
TEST(MatMulNBits, AccuracyLevelFourRoundsAOnEitherSideOfTheDecodeRows) {
  for (CpuTarget target : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx512, CpuTarget::kAvx2,
                           CpuTarget::kBaseline}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    for (int64_t bits : {4, 8})
      for (int64_t rows : {1, 2, 3, 5, 17}) {
        const NBits w = MakeNBits(100, 37, bits, 32, uint32_t(bits * 100 + rows));
        const Tensor a = Tensor::FromVector(RandomFloats(rows * w.k, 7), {rows, w.k});
        Tensor rounded = Tensor::Zeros(DType::kFloat, a.shape());
        NBitsRoundRowsToInt8(a.data<float>(), rows, w.k, w.block, rounded.data<float>());
        OpTester t;
        t.op = "MatMulNBits";
        t.domain = "com.microsoft";
        t.opset = 1;
        t.inputs = {a, w.b, w.scales, w.zeros};
        t.constant = {false, true, true, true};
        t.attrs = [&](onnx::NodeProto& node) {
          NBitsAttrs(w.k, w.n, bits, w.block)(node);
          SetAttr(node, "accuracy_level", int64_t{4});
        };
        absl::StatusOr<Tensor> y = t.RunOne();
        ASSERT_TRUE(y.ok()) << y.status();
        const std::vector<float> want = Reference(w, rounded, true, nullptr);
        for (int64_t i = 0; i < y->size(); ++i)
          ASSERT_NEAR(y->data<float>()[i], want[size_t(i)], 1e-4 * (1 + std::fabs(want[size_t(i)])))
              << CpuTargetName(target) << " bits " << bits << " rows " << rows << " at " << i;
      }
  }
}

TEST(MatMulNBits, SixteenBitActivationsComputeInFloat) {
  const NBits w = MakeNBits(64, 20, 4, 16, 3);
  const Tensor a = Tensor::FromVector(RandomFloats(2 * w.k, 4), {2, w.k});
  const std::vector<float> want = Reference(w, a, false, nullptr);
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    Tensor a16 = Tensor::Zeros(dt, a.shape()), s16 = Tensor::Zeros(dt, w.scales.shape());
    for (int64_t i = 0; i < a.size(); ++i) SetDouble(a16, i, a.data<float>()[i]);
    for (int64_t i = 0; i < w.scales.size(); ++i) SetDouble(s16, i, w.scales.data<float>()[i]);
    OpTester t;
    t.op = "MatMulNBits";
    t.domain = "com.microsoft";
    t.opset = 1;
    t.inputs = {a16, w.b, s16};
    t.constant = {false, true, true};
    t.attrs = NBitsAttrs(w.k, w.n, 4, w.block);
    absl::StatusOr<Tensor> y = t.RunOne();
    ASSERT_TRUE(y.ok()) << y.status();
    // The 16-bit rounding of A and the scales, then of Y.
    const double tol = dt == DType::kFloat16 ? 4e-3 : 3e-2;
    for (int64_t i = 0; i < y->size(); ++i)
      EXPECT_NEAR(GetDouble(*y, i), want[size_t(i)], tol * (1 + std::fabs(want[size_t(i)]))) << LowerName(dt);
  }
}

TEST(MatMulNBits, BadShapesAndIndicesAreNamedErrors) {
  const NBits w = MakeNBits(64, 8, 4, 32, 9);
  const Tensor a = Tensor::FromVector(RandomFloats(64, 1), {1, 64});
  auto run = [&](std::vector<Tensor> inputs, int64_t k = 64, int64_t n = 8, int64_t bits = 4, int64_t block = 32) {
    OpTester t;
    t.op = "MatMulNBits";
    t.domain = "com.microsoft";
    t.opset = 1;
    t.inputs = std::move(inputs);
    t.attrs = NBitsAttrs(k, n, bits, block);
    t.output_names = {"y"};
    return t.Run();
  };
  auto message = [](const absl::StatusOr<std::vector<Tensor>>& r) {
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  using ::testing::HasSubstr;
  EXPECT_THAT(message(run({a, w.b, w.scales}, 64, 9)), HasSubstr("B must have shape [9,2,16]"));
  EXPECT_THAT(message(run({a, w.b, w.scales}, 64, 8, 8)), HasSubstr("B must have shape [8,2,32]"));
  EXPECT_THAT(message(run({a, w.b, w.scales}, 64, 8, 4, 48)), HasSubstr("block_size must be a power of 2 >= 16, got 48"));
  EXPECT_THAT(message(run({a, w.b, w.scales}, 64, 8, 3)), HasSubstr("bits must be 2, 4 or 8, got 3"));
  EXPECT_THAT(message(run({a, w.b, Tensor::FromVector(RandomFloats(8, 1), {8})})),
              HasSubstr("scales must have shape [16] or [8,2]"));
  EXPECT_THAT(message(run({a, w.b, w.scales, Tensor::Zeros(DType::kUInt8, {8, 2})})),
              HasSubstr("zero_points (uint8, packed) must have shape [8] or [8,1]"));
  EXPECT_THAT(message(run({a, w.b, w.scales, Tensor::Zeros(DType::kFloat, {8, 3})})),
              HasSubstr("zero_points (unpacked) must have shape [16] or [8,2]"));
  EXPECT_THAT(message(run({Tensor::FromVector(RandomFloats(65, 1), {1, 65}), w.b, w.scales})),
              HasSubstr("A's last dim must be K = 64"));
  std::vector<int32_t> g(64, 0);
  g[7] = 2;
  EXPECT_THAT(message(run({a, w.b, w.scales, Tensor(), Tensor::FromVector(g, {64})})),
              HasSubstr("g_idx[7] = 2 is outside the blocks [0, 2)"));
  g[7] = -1;
  EXPECT_THAT(message(run({a, w.b, w.scales, Tensor(), Tensor::FromVector(g, {64})})),
              HasSubstr("g_idx[7] = -1 is outside the blocks [0, 2)"));
  EXPECT_THAT(message(run({a, w.b, w.scales, Tensor(), Tensor::FromVector(std::vector<int32_t>(63, 0), {63})})),
              HasSubstr("g_idx must have shape [64] or [64]"));
  EXPECT_THAT(message(run({a, w.b, w.scales, Tensor(), Tensor(), Tensor::FromVector(RandomFloats(7, 1), {7})})),
              HasSubstr("bias must have shape [8]"));
  // And every error names the node.
  EXPECT_THAT(message(run({a, w.b, w.scales}, 64, 9)), HasSubstr("MatMulNBits"));
}

TEST(MatMulNBits, BadGIdxAtRunTimeWritesNothingAndTheSessionStaysUsable) {
  const NBits w = MakeNBits(32, 4, 4, 16, 2);
  ModelBuilder m;
  m.Opset("com.microsoft", 1);
  m.Input("a", DType::kFloat, {1, 32}).Input("g", DType::kInt32, {32}).Output("y", DType::kFloat, {1, 4});
  m.Initializer("b", w.b).Initializer("s", w.scales);
  onnx::NodeProto& node = m.Node("MatMulNBits", {"a", "b", "s", "", "g"}, {"y"}, "com.microsoft");
  NBitsAttrs(32, 4, 4, 16)(node);
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  const Tensor a = Tensor::FromVector(RandomFloats(32, 1), {1, 32});
  std::vector<int32_t> g(32);
  for (int i = 0; i < 32; ++i) g[size_t(i)] = i / 16;
  absl::StatusOr<std::vector<Tensor>> good = (*s)->Run({{"a", a}, {"g", Tensor::FromVector(g, {32})}});
  ASSERT_TRUE(good.ok()) << good.status();
  g[31] = 5;
  absl::StatusOr<std::vector<Tensor>> bad = (*s)->Run({{"a", a}, {"g", Tensor::FromVector(g, {32})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("g_idx[31] = 5"));
  g[31] = 1;
  absl::StatusOr<std::vector<Tensor>> again = (*s)->Run({{"a", a}, {"g", Tensor::FromVector(g, {32})}});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Values((*again)[0]), Values((*good)[0]));
}

TEST(MatMulNBits, ASessionHoldsThePackedWeightNotAFloatCopy) {
  // A 4-bit [N = 1024, K = 512] weight: 256 KiB of codes, 2 MiB in float.
  const int64_t k = 512, n = 1024;
  const NBits w = MakeNBits(k, n, 4, 32, 8);
  for (DType dt : {DType::kFloat, DType::kFloat16}) {
    Tensor scales = Tensor::Zeros(dt, w.scales.shape());
    for (int64_t i = 0; i < scales.size(); ++i) SetDouble(scales, i, w.scales.data<float>()[i]);
    ModelBuilder m;
    m.Opset("com.microsoft", 1);
    m.Input("a", dt, {1, k}).Output("y", dt, {1, n});
    m.Initializer("b", w.b).Initializer("s", scales).Initializer("z", w.zeros);
    NBitsAttrs(k, n, 4, 32)(m.Node("MatMulNBits", {"a", "b", "s", "z"}, {"y"}, "com.microsoft"));
    auto s = m.Build();
    ASSERT_TRUE(s.ok()) << s.status();
    // Quantized panels: the codes, and per block and column a float scale,
    // zero point and code sum; no float copy of the scales stays.
    const size_t panels = size_t(n * k / 2 + 3 * n * w.kb * 4);
    EXPECT_EQ((*s)->MemoryUsed(), panels) << LowerName(dt);
    for (const char* name : {"b", "s", "z"})
      EXPECT_EQ((*s)->graph().initializers.at(name).raw(), nullptr) << name << " released";
    Tensor a = Tensor::Zeros(dt, {1, k});
    for (int64_t i = 0; i < k; ++i) SetDouble(a, i, std::sin(double(i)));
    ASSERT_TRUE((*s)->Run({{"a", a}}).ok());
  }
}

// Two sibling subgraphs (an If's branches) may each hold an initializer of
// the same name: a weight B read from the outer scope with each branch's own
// scales is two different products, not one packing shared by name.
TEST(MatMulNBits, BranchesWithSameNamedScalesOfTheirOwnPackTheirOwnPanels) {
  const int64_t k = 64, n = 20;
  const NBits w = MakeNBits(k, n, 4, 32, 31);
  std::vector<float> twice(w.scales.data<float>(), w.scales.data<float>() + w.scales.size());
  for (float& v : twice) v *= 2;
  const Tensor doubled = Tensor::FromVector(twice, w.scales.shape());
  ModelBuilder m;
  m.Opset("com.microsoft", 1);
  m.Input("a", DType::kFloat, {1, k}).Input("cond", DType::kBool, {}).Output("y", DType::kFloat, {1, n});
  m.Initializer("b", w.b);
  onnx::NodeProto& node = m.Node("If", {"cond"}, {"y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    ModelBuilder g;
    g.graph().set_name(branch);
    g.Initializer("s", std::string(branch) == "then_branch" ? w.scales : doubled);
    g.Output("y_out", DType::kFloat, {1, n});
    NBitsAttrs(k, n, 4, 32)(g.Node("MatMulNBits", {"a", "b", "s"}, {"y_out"}, "com.microsoft"));
    onnx::AttributeProto* attr = node.add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = g.graph();
  }
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  const Tensor a = Tensor::FromVector(RandomFloats(k, 3), {1, k});
  for (bool cond : {true, false}) {
    NBits mine = w;
    if (!cond) mine.scales = doubled;
    absl::StatusOr<std::vector<Tensor>> got = (*s)->Run({{"a", a}, {"cond", Tensor::FromVector<bool>({cond}, {})}});
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<float> want = Reference(mine, a, false, nullptr);
    const std::vector<double> y = Values((*got)[0]);
    ASSERT_EQ(y.size(), want.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << cond << " " << i;
  }
}

// A budget that refuses the panels at session creation leaves B in
// MatMulNBits' own form, which the runs then read where it lies (a few
// columns dequantized at a time), as before panels: they do not pack it
// again each run (the same bytes the budget refused).
TEST(MatMulNBits, ABudgetThatRefusesThePanelsRunsTheNativeForm) {
  const int64_t k = 512, n = 4096;  // panels: 1 MiB of codes, 0.75 MiB of scales, zeros and sums
  const NBits w = MakeNBits(k, n, 4, 32, 8);
  ModelBuilder m;
  m.Opset("com.microsoft", 1);
  m.Input("a", DType::kFloat, {-1, k}).Output("y", DType::kFloat, {-1, n});
  m.Initializer("b", w.b).Initializer("s", w.scales).Initializer("z", w.zeros);
  NBitsAttrs(k, n, 4, 32)(m.Node("MatMulNBits", {"a", "b", "s", "z"}, {"y"}, "com.microsoft"));
  SessionOptions small;
  small.memory_limit = 3 << 19;  // 1.5 MiB
  auto s = m.Build(small);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->MemoryUsed(), 0u);  // nothing packed
  EXPECT_NE((*s)->graph().initializers.at("b").raw(), nullptr);
  for (int64_t rows : {1, 3}) {
    const Tensor a = Tensor::FromVector(RandomFloats(rows * k, uint32_t(rows)), {rows, k});
    absl::StatusOr<std::vector<Tensor>> y = (*s)->Run({{"a", a}});
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<float> want = Reference(w, a, true, nullptr);
    const std::vector<double> got = Values((*y)[0]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
  }
}

}  // namespace
}  // namespace onnx_mini
