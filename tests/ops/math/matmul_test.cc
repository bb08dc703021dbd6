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

#include "kernels/gemm/gemm.h"
#include "runtime/loader.h"
#include "runtime/registry.h"

namespace onnx_mini {
namespace {

// Issue #24: PrepareContext::release. A float weight packed for the GEMM is
// freed at session creation when only packing products read it; the
// packing is shared by every product that reads the weight, and charged once.
struct Created {
  std::unique_ptr<Session> session;
  std::weak_ptr<Storage> w;  // the initializer "w" as loaded
};

Created Create(const ModelBuilder& m) {
  absl::StatusOr<Graph> g = LoadModelFromBytes(m.Serialize(), "");
  EXPECT_TRUE(g.ok()) << g.status();
  Created c;
  c.w = g->initializers.at("w").storage();
  SessionOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(*std::move(g), BuiltinOps(), options);
  EXPECT_TRUE(s.ok()) << s.status();
  if (s.ok()) c.session = *std::move(s);
  return c;
}

// The bytes of one packing of a k x n weight (0 where the packed GEMM does not run).
size_t PackedBytes(int64_t k, int64_t n) {
  return GemmPackedAvailable() ? size_t(GemmPackedSize(k, n)) * sizeof(float) : 0;
}

// Runs y = MatMul(x, w) for several row counts (the GEMV's and the GEMM's)
// and compares with a product over a run-time w.
void ExpectProducts(const Session& s, const Tensor& w, const std::vector<std::string>& outputs) {
  for (int64_t rows : {1, 3, 64}) {
    const Tensor x = RandomUniform(DType::kFloat, {rows, w.dim(0)}, uint32_t(rows));
    absl::StatusOr<std::vector<Tensor>> got = s.Run({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status();
    const absl::StatusOr<Tensor> want = RunOne(13, "MatMul", {x, w});
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(got->size(), outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k)
      EXPECT_LE(MaxRelDiff((*got)[k], *want), 1e-5) << outputs[k] << " rows " << rows;
  }
}

TEST(MatMul, ReleaseFreesAPackedWeightsOriginal) {
  const Tensor w = RandomUniform(DType::kFloat, {256, 512}, 21);
  ModelBuilder m;
  m.Input("x", DType::kFloat, {-1, 256}).Output("y", DType::kFloat, {-1, 512}).Initializer("w", w);
  m.Node("MatMul", {"x", "w"}, {"y"});
  Created c = Create(m);
  ASSERT_NE(c.session, nullptr);
  EXPECT_EQ(c.session->MemoryUsed(), PackedBytes(256, 512));
  if (GemmPackedAvailable()) {
    EXPECT_EQ(PackedBytes(256, 512), 256u * 512 * 4);  // 512 columns: no padding
    EXPECT_TRUE(c.w.expired()) << "the original of a packed weight stays alive";
    EXPECT_EQ(c.session->graph().initializers.at("w").raw(), nullptr);
    EXPECT_EQ(c.session->graph().initializers.at("w").shape(), (Shape{256, 512}));
  } else {
    EXPECT_FALSE(c.w.expired()) << "the GEMV reads the weight as stored";
  }
  ExpectProducts(*c.session, w, {"y"});
}

TEST(Gemm, ReleaseFreesAPackedWeightsOriginalWithTransBAndBias) {
  const Tensor w = RandomUniform(DType::kFloat, {192, 128}, 22);  // (N, K), transB
  const Tensor bias = RandomUniform(DType::kFloat, {192}, 23);
  ModelBuilder m;
  m.Input("x", DType::kFloat, {-1, 128}).Output("y", DType::kFloat, {-1, 192}).Initializer("w", w);
  m.Initializer("bias", bias);
  SetAttr(m.Node("Gemm", {"x", "w", "bias"}, {"y"}), "transB", int64_t(1));
  Created c = Create(m);
  ASSERT_NE(c.session, nullptr);
  EXPECT_EQ(c.w.expired(), GemmPackedAvailable());
  EXPECT_EQ(c.session->MemoryUsed(), PackedBytes(128, 192));
  for (int64_t rows : {1, 5, 40}) {
    const Tensor x = RandomUniform(DType::kFloat, {rows, 128}, uint32_t(rows));
    absl::StatusOr<std::vector<Tensor>> got = c.session->Run({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status();
    const absl::StatusOr<Tensor> want =
        RunOne(13, "Gemm", {x, w, bias}, [](onnx::NodeProto& n) { SetAttr(n, "transB", int64_t(1)); });
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_LE(MaxRelDiff((*got)[0], *want), 1e-5) << rows;
  }
}

// Two MatMuls (the second over another value) and a Gemm (transB = 0: the
// same panels) read one weight: packed once, charged once, freed.
TEST(MatMul, AWeightReadByThreeProductsIsPackedOnce) {
  const Tensor w = RandomUniform(DType::kFloat, {128, 320}, 24);
  ModelBuilder m;
  m.Input("x", DType::kFloat, {-1, 128}).Initializer("w", w);
  for (const char* y : {"y1", "y2", "y3"}) m.Output(y, DType::kFloat, {-1, 320});
  m.Node("MatMul", {"x", "w"}, {"y1"});
  m.Node("Gemm", {"x", "w"}, {"y2"});
  m.Node("Relu", {"x"}, {"r"});
  m.Node("Relu", {"r"}, {"x2"});  // x again (x >= 0 here), through other values
  m.Node("MatMul", {"x2", "w"}, {"y3"});
  Created c = Create(m);
  ASSERT_NE(c.session, nullptr);
  EXPECT_EQ(c.session->MemoryUsed(), PackedBytes(128, 320));
  EXPECT_EQ(c.w.expired(), GemmPackedAvailable());
  for (int64_t rows : {1, 64}) {
    const Tensor x = RandomUniform(DType::kFloat, {rows, 128}, uint32_t(rows), 0, 2);
    absl::StatusOr<std::vector<Tensor>> got = c.session->Run({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status();
    const absl::StatusOr<Tensor> want = RunOne(13, "MatMul", {x, w});
    ASSERT_TRUE(want.ok()) << want.status();
    for (size_t k = 0; k < 3; ++k) EXPECT_LE(MaxRelDiff((*got)[k], *want), 1e-5) << k << " rows " << rows;
  }
}

// A weight another reader needs stays: a non-packing op (over a run-time
// value: a reader of constants alone is folded at creation), a graph output,
// a subgraph. The products still run from the packing, made once.
TEST(MatMul, AWeightWithAnotherReaderIsNotReleased) {
  const Tensor w = RandomUniform(DType::kFloat, {64, 128}, 25);
  for (const char* other : {"Add", "output", "If"}) {
    SCOPED_TRACE(other);
    ModelBuilder m;
    m.Input("x", DType::kFloat, {-1, 64}).Output("y", DType::kFloat, {-1, 128}).Initializer("w", w);
    m.Node("MatMul", {"x", "w"}, {"y"});
    if (std::string(other) == "Add") {
      m.Input("zero", DType::kFloat, {1, 128}).Output("s", DType::kFloat, {64, 128});
      m.Node("Add", {"w", "zero"}, {"s"});
    } else if (std::string(other) == "output") {
      m.Output("w", DType::kFloat, {64, 128});
    } else {  // an If whose branch reads w from the outer scope
      m.Input("cond", DType::kBool, {});  // not a constant: the If is not folded
      m.Output("z", DType::kFloat, {64, 128});
      onnx::NodeProto& n = m.Node("If", {"cond"}, {"z"});
      for (const char* branch : {"then_branch", "else_branch"}) {
        onnx::GraphProto g;
        g.set_name(branch);
        onnx::NodeProto* id = g.add_node();
        id->set_op_type("Identity");
        id->add_input("w");
        id->add_output("z_out");
        onnx::ValueInfoProto* out = g.add_output();
        out->set_name("z_out");
        out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
        onnx::AttributeProto* a = n.add_attribute();
        a->set_name(branch);
        a->set_type(onnx::AttributeProto::GRAPH);
        *a->mutable_g() = g;
      }
    }
    Created c = Create(m);
    ASSERT_NE(c.session, nullptr);
    EXPECT_FALSE(c.w.expired());
    EXPECT_NE(c.session->graph().initializers.at("w").raw(), nullptr);
    const Tensor x = RandomUniform(DType::kFloat, {2, 64}, 26);
    std::vector<NamedTensor> inputs = {{"x", x}};
    if (std::string(other) == "If") inputs.push_back({"cond", Tensor::FromVector<bool>({true}, {})});
    if (std::string(other) == "Add") inputs.push_back({"zero", Tensor::Zeros(DType::kFloat, {1, 128})});
    absl::StatusOr<std::vector<Tensor>> got = c.session->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    const absl::StatusOr<Tensor> want = RunOne(13, "MatMul", {x, w});
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_LE(MaxRelDiff((*got)[0], *want), 1e-5);
    EXPECT_EQ(MaxRelDiff((*got)[1], w), 0);
  }
}

// A packed weight records its CPU target: a kernel of another target never
// reads it. With the original released there is nothing else to compute
// from: a clear error, and the session runs again on the packed target.
TEST(MatMul, AReleasedWeightIsNotUsedOnAnotherCpuTarget) {
  if (!GemmPackedAvailable()) GTEST_SKIP() << "no packed GEMM on this CPU: nothing is released";
  const Tensor w = RandomUniform(DType::kFloat, {64, 128}, 27);
  ModelBuilder m;
  m.Input("x", DType::kFloat, {-1, 64}).Output("y", DType::kFloat, {-1, 128}).Initializer("w", w);
  m.Node("MatMul", {"x", "w"}, {"y"}).set_name("proj");
  Created c = Create(m);
  ASSERT_NE(c.session, nullptr);
  ASSERT_TRUE(c.w.expired());
  const Tensor x = RandomUniform(DType::kFloat, {2, 64}, 28);
  absl::StatusOr<std::vector<Tensor>> got;
  {
    const ScopedCpuFeaturesForTesting baseline(CpuTarget::kBaseline);
    got = c.session->Run({{"x", x}});
  }
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(Message(got.status()), HasSubstr("proj"));
  EXPECT_THAT(Message(got.status()), HasSubstr("packed for another CPU target than the one running (baseline)"));
  got = c.session->Run({{"x", x}});
  ASSERT_TRUE(got.ok()) << got.status();
  const absl::StatusOr<Tensor> want = RunOne(13, "MatMul", {x, w});
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxRelDiff((*got)[0], *want), 1e-5);
}

}  // namespace
}  // namespace onnx_mini
