// ops/math/matmul.cc: MatMul and Gemm, oneDNN against a naive product.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <omp.h>

#include <random>

#include "runtime/element.h"
#include "kernels/gemm/onednn.h"
#include "kernels/gemm/prepared_matmul.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MatMul, OneDnnAndReferenceAgreeWithANaiveProduct) {
  struct Case { Shape a, b; };
  const std::vector<Case> cases = {{{3, 5}, {5, 7}}, {{2, 4, 33, 17}, {2, 4, 17, 65}}, {{5}, {5, 3}},
                                   {{4, 1, 3, 5}, {2, 5, 2}}, {{1, 6, 8}, {3, 8, 4}}, {{2, 3}, {3}}};
  for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kDouble, DType::kFloat16, DType::kInt32}) {
    uint32_t seed = 1;
    for (const Case& c : cases) {
      Tensor a = RandomUniform(dt, c.a, seed++), b = RandomUniform(dt, c.b, seed++);
      auto out = RunNode(13, "MatMul", {a, b});
      ASSERT_TRUE(out.ok()) << LowerName(dt) << ": " << out.status();
      // Naive product over explicit NumPy batching.
      Shape sa = c.a, sb = c.b;
      if (sa.size() == 1) sa.insert(sa.begin(), 1);
      if (sb.size() == 1) sb.push_back(1);
      const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
      const int64_t ba = ElementCount(Shape(sa.begin(), sa.end() - 2)), bb = ElementCount(Shape(sb.begin(), sb.end() - 2));
      const int64_t batches = (*out)[0].size() / (M * N);
      for (int64_t t = 0; t < batches; ++t)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            // Batch t maps to (t mod ba, t mod bb) for these right-aligned cases.
            const int64_t ta = ba == 1 ? 0 : (c.a.size() == 4 && c.b.size() == 3 ? t / 2 : t % ba);
            const int64_t tb = bb == 1 ? 0 : t % bb;
            double want = 0;
            for (int64_t k = 0; k < K; ++k) want += GetDouble(a, (ta * M + m) * K + k) * GetDouble(b, (tb * K + k) * N + n);
            const double tol = dt == DType::kBFloat16 ? 0.1 : dt == DType::kFloat16 ? 0.02 : 1e-4;
            ASSERT_NEAR(GetDouble((*out)[0], (t * M + m) * N + n), dt == DType::kInt32 ? double(int64_t(want)) : want,
                        tol * (1 + std::fabs(want)))
                << LowerName(dt) << " case " << ShapeToString(c.a) << "x" << ShapeToString(c.b);
          }
    }
  }
  EXPECT_THAT(Message(RunNode(13, "MatMul", {F({1, 2}, {1, 2}), F({1, 2, 3}, {3, 1})}).status()), HasSubstr("inner dimensions differ"));
}

TEST(Gemm, MixedElementTypesAreRefusedNotReinterpreted) {
  // float x int64 used to multiply the int64 bits as floats.
  absl::StatusOr<Tensor> out = RunOne(13, "Gemm", {F({1, 2, 3, 4}, {2, 2}), I({1, 0, 0, 1}, {2, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(Message(out.status()), HasSubstr("input 1 is int64 but input 0 is float: both have type T"));
  out = RunOne(13, "Gemm", {F({1, 2, 3, 4}, {2, 2}), F({1, 0, 0, 1}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(1, 2, 3, 4));
}

TEST(MatMul, OneDnnLeavesTheCallersThreadCountAsItWas) {
  omp_set_num_threads(2);
  const int before = omp_get_max_threads();
  absl::StatusOr<Tensor> out = RunOne(13, "MatMul", {RandomUniform(DType::kFloat, {64, 64}, 1),
                                                    RandomUniform(DType::kFloat, {64, 64}, 2)}, {}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(omp_get_max_threads(), before);
}

TEST(Gemm, LegacyBroadcastAttributeAndRequiredC) {
  const Tensor a = F({1, 2, 3, 4}, {2, 2}), b = F({1, 0, 0, 1}, {2, 2});
  // Opset 6: C broadcasts only with broadcast = 1.
  absl::StatusOr<Tensor> y = RunOne(6, "Gemm", {a, b, F({10, 20}, {2})}, [](onnx::NodeProto& n) { SetAttr(n, "broadcast", int64_t(1)); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(11, 22, 13, 24));
  y = RunOne(6, "Gemm", {a, b, F({10, 20}, {2})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("without broadcast = 1 (opset 6) C must have shape [2,2]"));
  y = RunOne(6, "Gemm", {a, b, F({1, 1, 1, 1}, {2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(2, 3, 4, 5));
  // C is required before opset 11.
  y = RunOne(9, "Gemm", {a, b});
  ASSERT_FALSE(y.ok());
  y = RunOne(11, "Gemm", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// The largest difference between two float/bfloat16 results, relative to 1 + |b|.
double MaxRelDiff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(GetDouble(a, i) - GetDouble(b, i)) / (1 + std::fabs(GetDouble(b, i))));
  return worst;
}

// A constant B is packed at session creation (Prepare); the result must be
// the one a B given at run time gets.
TEST(MatMul, PackedConstantWeightsMatchRunTimeWeights) {
  struct Case { Shape a, b; };
  const std::vector<Case> cases = {{{3, 5}, {5, 7}}, {{2, 4, 33, 17}, {17, 65}}, {{1, 1, 64}, {64, 96}},
                                   {{5}, {5, 3}}, {{1, 200}, {200, 1}}, {{0, 8}, {8, 4}}, {{2, 3, 8}, {2, 8, 4}},
                                   // Few columns (not packed into 64-column panels): the GEMV and oneDNN.
                                   {{7, 20}, {20, 3}}, {{4, 33}, {33, 31}}};
  for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kDouble}) {
    uint32_t seed = 7;
    for (const Case& c : cases) {
      const Tensor a = RandomUniform(dt, c.a, seed++), b = RandomUniform(dt, c.b, seed++);
      auto plain = RunNode(13, "MatMul", {a, b});
      auto packed = RunNode(13, "MatMul", {a, b}, 1, {}, {false, true});
      ASSERT_TRUE(plain.ok() && packed.ok()) << plain.status() << packed.status();
      ASSERT_EQ((*packed)[0].shape(), (*plain)[0].shape());
      EXPECT_LE(MaxRelDiff((*packed)[0], (*plain)[0]), dt == DType::kBFloat16 ? 1e-2 : 1e-5)
          << LowerName(dt) << " " << ShapeToString(c.a) << "x" << ShapeToString(c.b);
    }
  }
}

TEST(Gemm, PackedConstantWeightsAndBiasMatchRunTimeOnes) {
  struct Case { int64_t m, k, n; bool trans_b; Shape c; float alpha, beta; };
  const std::vector<Case> cases = {{3, 5, 7, false, {7}, 1, 1},     {4, 17, 65, true, {65}, 1, 1},
                                   {2, 8, 6, true, {1, 6}, 1, 1},   {2, 8, 6, true, {2, 6}, 1, 1},
                                   {5, 9, 3, false, {3}, 0.5f, 2},  {1, 64, 32, true, {}, 1, 1},
                                   {3, 4, 5, false, {1}, 1, 1}};
  for (DType dt : {DType::kFloat, DType::kBFloat16}) {
    uint32_t seed = 3;
    for (const Case& c : cases) {
      const Tensor a = RandomUniform(dt, {c.m, c.k}, seed++);
      const Tensor b = RandomUniform(dt, c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed++);
      std::vector<Tensor> in = {a, b};
      if (!c.c.empty()) in.push_back(RandomUniform(dt, c.c, seed++));
      const auto attrs = [&](onnx::NodeProto& n) {
        SetAttr(n, "transB", int64_t(c.trans_b));
        SetAttr(n, "alpha", c.alpha);
        SetAttr(n, "beta", c.beta);
      };
      auto plain = RunNode(13, "Gemm", in, 1, attrs);
      auto packed = RunNode(13, "Gemm", in, 1, attrs, {false, true, true});
      ASSERT_TRUE(plain.ok() && packed.ok()) << plain.status() << packed.status();
      EXPECT_LE(MaxRelDiff((*packed)[0], (*plain)[0]), dt == DType::kBFloat16 ? 1e-2 : 1e-5)
          << LowerName(dt) << " m" << c.m << " k" << c.k << " n" << c.n << " C" << ShapeToString(c.c);
    }
  }
}

// With a dynamic row count, each M gets its primitive (cached) over the one
// packed B: many lengths, repeated, from several threads at once.
TEST(MatMul, PackedWeightsServeEveryRowCount) {
  const Tensor w = RandomUniform(DType::kFloat, {48, 40}, 11);
  ModelBuilder m;
  m.Input("x", DType::kFloat, {1, -1, 48}).Output("y", DType::kFloat, {1, -1, 40}).Initializer("w", w);
  m.Node("MatMul", {"x", "w"}, {"y"});
  SessionOptions options;
  options.threads = 1;
  auto session = m.Build(options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<int64_t> lengths;
  for (int64_t s = 1; s <= 40; s += 3) lengths.push_back(s);  // more than the cache holds
  for (int round = 0; round < 2; ++round)
#pragma omp parallel for num_threads(2)
    for (size_t i = 0; i < lengths.size(); ++i) {
      const Tensor x = RandomUniform(DType::kFloat, {1, lengths[i], 48}, uint32_t(100 + i));
      auto got = (*session)->Run({{"x", x}});
      auto want = RunNode(13, "MatMul", {x, w});
      if (!got.ok() || !want.ok()) {
        ADD_FAILURE() << got.status() << want.status();
        continue;
      }
      EXPECT_LE(MaxRelDiff((*got)[0], (*want)[0]), 1e-5) << lengths[i];
    }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: the copies of a constant B that MatMul/Gemm keep
// (packed into the GEMM's panels at session creation, or reordered for
// oneDNN on first use) are charged to the session's budget while they live;
// one the budget refuses is not made, and the product is still right.
TEST(MatMul, PackedWeightsAreChargedToTheBudget) {
  const Tensor b = RandomUniform(DType::kFloat, {256, 512}, 11);
  const Tensor a = RandomUniform(DType::kFloat, {64, 256}, 12);
  const size_t b_bytes = 256 * 512 * sizeof(float);
  auto budget = std::make_shared<MemoryBudget>(size_t(1) << 30);
  Tensor c = Tensor::Zeros(DType::kFloat, {64, 512});
  {
    std::unique_ptr<PackedMatMul> packed = PackedMatMul::Make(b, false, Tensor(), 1, budget);
    ASSERT_NE(packed, nullptr);
    // 64 rows: the packed GEMM (AVX-512) or oneDNN on B in its layout.
    ASSERT_TRUE(packed->Run(a.raw(), c.raw(), 64, 1));
    EXPECT_GE(budget->used(), b_bytes);
  }
  EXPECT_EQ(budget->used(), 0u);
  const absl::StatusOr<Tensor> want = RunOne(13, "MatMul", {a, b});
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxRelDiff(c, *want), 1e-5);

  // A session whose limit has no room for a copy of B: created, and right.
  for (const char* op : {"MatMul", "Gemm"}) {
    SCOPED_TRACE(op);
    OpTester t;
    t.op = op;
    t.opset = 13;
    t.inputs = {a, b};
    t.constant = {false, true};
    t.memory_limit = 256 << 10;  // C's 128 KiB fit, B's 512 KiB do not
    const absl::StatusOr<Tensor> got = t.RunOne();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LE(MaxRelDiff(*got, *want), 1e-5);
  }
}

}  // namespace
}  // namespace onnx_mini
