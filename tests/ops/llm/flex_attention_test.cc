// FlexAttention (ai.onnx.preview 1): the fast path (Attention's kernel, no
// subgraph) against the reference (taken with an identity prob_mod) across
// dtypes and shapes; score_mod and prob_mod with known effects; and errors.
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/status_macros.h"
#include "tests/ops/graph_util.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

double Tol(DType d) { return d == DType::kBFloat16 ? 3e-2 : d == DType::kFloat16 ? 4e-3 : 1e-5; }

// A modifier subgraph: one input `s` of type `dtype`, `op` applied with a
// scalar constant (or Identity when op is empty), one output.
onnx::GraphProto Modifier(DType dtype, const std::string& op, double constant = 0) {
  ModelBuilder g(26);
  g.Input("s", dtype, {-1, -1, -1, -1});
  if (op.empty()) {
    g.Node("Identity", {"s"}, {"out"});
  } else {
    Tensor c = *Tensor::Make(dtype, {});
    SetDouble(c, 0, constant);
    g.Initializer("c", c);
    g.Node(op, {"s", "c"}, {"out"});
  }
  g.Output("out", dtype, {-1, -1, -1, -1});
  return Body(g, "mod");
}

struct Mods {
  const onnx::GraphProto* score = nullptr;
  const onnx::GraphProto* prob = nullptr;
  std::function<void(onnx::NodeProto&)> attrs;
  size_t memory_limit = 0;  // the session's (0: the default)
};

absl::StatusOr<Tensor> RunFlex(const Tensor& q, const Tensor& k, const Tensor& v, const Mods& mods = {}) {
  ModelBuilder m(26);
  m.Opset("ai.onnx.preview", 1);
  m.Input("Q", q.dtype(), q.shape()).Input("K", k.dtype(), k.shape()).Input("V", v.dtype(), v.shape());
  onnx::NodeProto& n = m.Node("FlexAttention", {"Q", "K", "V"}, {"Y"});
  n.set_domain("ai.onnx.preview");
  if (mods.score) SetGraph(n, "score_mod", *mods.score);
  if (mods.prob) SetGraph(n, "prob_mod", *mods.prob);
  if (mods.attrs) mods.attrs(n);
  m.Output("Y", q.dtype(), {-1, -1, -1, -1});
  SessionOptions options;
  options.memory_limit = mods.memory_limit;
  ASSIGN_OR_RETURN(auto session, m.Build(options));
  ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run({{"Q", q}, {"K", k}, {"V", v}}));
  return out[0];
}

void ExpectNear(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double w = GetDouble(want, i);
    ASSERT_NEAR(GetDouble(got, i), w, tol * (1 + std::fabs(w))) << what << " at " << i;
  }
}

struct Case {
  int64_t B, hq, hkv, L, S, E, Dv;
};

TEST(FlexAttention, FastPathMatchesReferenceAcrossTypesAndShapes) {
  const std::vector<Case> cases = {
      {2, 4, 4, 8, 6, 16, 16}, {1, 6, 2, 1, 37, 8, 5}, {3, 3, 1, 5, 70, 7, 9}, {1, 2, 2, 1, 1, 3, 3},
      {1, 2, 2, 3, 0, 4, 4} /* no keys: zeros */, {2, 2, 1, 0, 5, 4, 3} /* no queries */};
  uint32_t seed = 1;
  for (DType t : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
    for (const Case& c : cases) {
      const Tensor q = RandomUniform(t, {c.B, c.hq, c.L, c.E}, seed++);
      const Tensor k = RandomUniform(t, {c.B, c.hkv, c.S, c.E}, seed++);
      const Tensor v = RandomUniform(t, {c.B, c.hkv, c.S, c.Dv}, seed++);
      const onnx::GraphProto identity = Modifier(t == DType::kDouble ? DType::kDouble : DType::kFloat, "");
      for (float scale : {0.f, 0.3f}) {
        Mods fast, reference;
        reference.prob = &identity;
        if (scale != 0) fast.attrs = reference.attrs = [&](onnx::NodeProto& n) { SetAttr(n, "scale", scale); };
        absl::StatusOr<Tensor> a = RunFlex(q, k, v, fast);
        absl::StatusOr<Tensor> b = RunFlex(q, k, v, reference);
        ASSERT_TRUE(a.ok()) << a.status();
        ASSERT_TRUE(b.ok()) << b.status();
        ASSERT_EQ(a->shape(), (Shape{c.B, c.hq, c.L, c.Dv}));
        ExpectNear(*a, *b, Tol(t), absl::StrCat(LowerName(t), " S", c.S, " scale ", scale));
      }
    }
}

TEST(FlexAttention, ModifiersHaveTheirEffect) {
  const Tensor q = RandomUniform(DType::kFloat, {2, 4, 3, 8}, 1);
  const Tensor k = RandomUniform(DType::kFloat, {2, 2, 5, 8}, 2);
  const Tensor v = RandomUniform(DType::kFloat, {2, 2, 5, 4}, 3);
  absl::StatusOr<Tensor> plain = RunFlex(q, k, v);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // The softmax ignores a constant added to every score.
  const onnx::GraphProto shift = Modifier(DType::kFloat, "Add", 3.5);
  Mods score;
  score.score = &shift;
  absl::StatusOr<Tensor> shifted = RunFlex(q, k, v, score);
  ASSERT_TRUE(shifted.ok()) << shifted.status();
  ExpectNear(*shifted, *plain, 1e-5, "score_mod Add");
  // Doubling the probabilities doubles the output.
  const onnx::GraphProto twice = Modifier(DType::kFloat, "Mul", 2);
  Mods prob;
  prob.prob = &twice;
  absl::StatusOr<Tensor> doubled = RunFlex(q, k, v, prob);
  ASSERT_TRUE(doubled.ok()) << doubled.status();
  for (int64_t i = 0; i < plain->size(); ++i)
    ASSERT_NEAR(doubled->data<float>()[i], 2 * plain->data<float>()[i], 1e-5);
  // Scores times zero: uniform probabilities, the mean of V's rows.
  const onnx::GraphProto flat = Modifier(DType::kFloat, "Mul", 0);
  Mods uniform;
  uniform.score = &flat;
  absl::StatusOr<Tensor> mean = RunFlex(q, k, v, uniform);
  ASSERT_TRUE(mean.ok()) << mean.status();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t m = 0; m < 4; ++m) {
        double want = 0;
        for (int64_t j = 0; j < 5; ++j) want += v.data<float>()[((b * 2 + h / 2) * 5 + j) * 4 + m] / 5;
        ASSERT_NEAR(mean->data<float>()[((b * 4 + h) * 3 + 2) * 4 + m], want, 1e-5);
      }
}

TEST(FlexAttention, ScoreModReadsAnOuterScopeValue) {
  // score_mod adds the main graph's input `bias` (1, 1, L, S): a causal mask
  // of -inf above the diagonal. Row i then averages V's rows 0..i under the
  // weights of the unmasked scores; with Q = 0 every score is 0, so row i is
  // the mean of V's first i + 1 rows.
  const int64_t L = 4, S = 4;
  ModelBuilder g(26);
  g.Input("s", DType::kFloat, {-1, -1, -1, -1});
  g.Node("Add", {"s", "bias"}, {"out"});
  g.Output("out", DType::kFloat, {-1, -1, -1, -1});
  ModelBuilder m(26);
  m.Opset("ai.onnx.preview", 1);
  m.Input("Q", DType::kFloat, {1, 2, L, 3}).Input("K", DType::kFloat, {1, 1, S, 3});
  m.Input("V", DType::kFloat, {1, 1, S, 2}).Input("bias", DType::kFloat, {1, 1, L, S});
  onnx::NodeProto& n = m.Node("FlexAttention", {"Q", "K", "V"}, {"Y"});
  n.set_domain("ai.onnx.preview");
  SetGraph(n, "score_mod", Body(g, "causal"));
  m.Output("Y", DType::kFloat, {1, 2, L, 2});
  absl::StatusOr<std::unique_ptr<Session>> session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<float> mask(size_t(L * S));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) mask[size_t(i * S + j)] = j > i ? -INFINITY : 0.f;
  const Tensor v = RandomUniform(DType::kFloat, {1, 1, S, 2}, 8);
  absl::StatusOr<std::vector<Tensor>> out =
      (*session)->Run({{"Q", Tensor::Zeros(DType::kFloat, {1, 2, L, 3})}, {"K", RandomUniform(DType::kFloat, {1, 1, S, 3}, 7)},
                       {"V", v}, {"bias", F(mask, {1, 1, L, S})}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t m2 = 0; m2 < 2; ++m2) {
        double want = 0;
        for (int64_t j = 0; j <= i; ++j) want += v.data<float>()[j * 2 + m2] / double(i + 1);
        EXPECT_NEAR((*out)[0].data<float>()[(h * L + i) * 2 + m2], want, 1e-6);
      }
}

TEST(FlexAttention, SoftmaxPrecisionBelowTheInputTypeRunsTheReference) {
  const Tensor q = RandomUniform(DType::kFloat, {1, 2, 3, 8}, 4);
  const Tensor k = RandomUniform(DType::kFloat, {1, 2, 4, 8}, 5);
  const Tensor v = RandomUniform(DType::kFloat, {1, 2, 4, 8}, 6);
  Mods half;
  half.attrs = [](onnx::NodeProto& n) { SetAttr(n, "softmax_precision", int64_t(DType::kFloat16)); };
  absl::StatusOr<Tensor> a = RunFlex(q, k, v, half);
  absl::StatusOr<Tensor> b = RunFlex(q, k, v);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectNear(*a, *b, 3e-3, "float16 softmax");
}

// A score just above float's largest value, by less than half a unit, is
// that value in float (the reference's rounding once made it infinity, and
// the row NaN through inf - inf in the softmax).
TEST(FlexAttention, AScoreJustAboveFloatMaxRoundsToTheMax) {
  Tensor q = Tensor::Zeros(DType::kFloat, {1, 1, 1, 2}), k = Tensor::Zeros(DType::kFloat, {1, 1, 1, 2});
  q.data<float>()[0] = 0x1p64f, q.data<float>()[1] = 0x1p50f;
  k.data<float>()[0] = 0x1p64f - 0x1p40f, k.data<float>()[1] = 0x1p50f;  // q . k = max + 2^100
  Tensor v = Tensor::Zeros(DType::kFloat, {1, 1, 1, 1});
  v.data<float>()[0] = 3.5f;
  const onnx::GraphProto identity = Modifier(DType::kFloat, "");
  Mods reference;
  reference.prob = &identity;
  reference.attrs = [](onnx::NodeProto& n) { SetAttr(n, "scale", 1.0f); };
  for (const Mods& mods : {reference, Mods{nullptr, nullptr, reference.attrs}}) {
    absl::StatusOr<Tensor> y = RunFlex(q, k, v, mods);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->data<float>()[0], 3.5f) << (mods.prob ? "reference" : "fast");
  }
}

TEST(FlexAttention, InvalidInputsNameTheRule) {
  const Tensor q = RandomUniform(DType::kFloat, {1, 4, 3, 8}, 1);
  const Tensor k = RandomUniform(DType::kFloat, {1, 2, 5, 8}, 2);
  const Tensor v = RandomUniform(DType::kFloat, {1, 2, 5, 4}, 3);
  auto error = [](const Tensor& q, const Tensor& k, const Tensor& v, const Mods& mods = {}) {
    absl::StatusOr<Tensor> y = RunFlex(q, k, v, mods);
    return y.ok() ? std::string("ok") : Message(y.status());
  };
  EXPECT_EQ(error(q, k, v), "ok");
  EXPECT_THAT(error(RandomUniform(DType::kFloat, {4, 3, 8}, 1), k, v), HasSubstr("must have rank 4 (FA1)"));
  EXPECT_THAT(error(RandomUniform(DType::kFloat, {1, 3, 3, 8}, 1), k, v),
              HasSubstr("q_num_heads 3 must be a multiple of kv_num_heads 2 (FA3)"));
  EXPECT_THAT(error(q, k, RandomUniform(DType::kFloat, {1, 2, 6, 4}, 1)),
              HasSubstr("K and V must have the same sequence length (FA2)"));
  EXPECT_THAT(error(q, RandomUniform(DType::kFloat, {1, 2, 5, 7}, 1), v),
              HasSubstr("Q and K must have the same head size (FA2)"));
  Mods precision;
  precision.attrs = [](onnx::NodeProto& n) { SetAttr(n, "softmax_precision", int64_t(7)); };
  EXPECT_THAT(error(q, k, v, precision), HasSubstr("softmax_precision 7 is not float (1)"));
  Mods scale;
  scale.attrs = [](onnx::NodeProto& n) { SetAttr(n, "scale", -1.0f); };
  EXPECT_THAT(error(q, k, v, scale), HasSubstr("scale -1 must be finite and not negative"));
  // A score_mod whose output is double, not the float softmax type.
  ModelBuilder g(26);
  g.Input("s", DType::kFloat, {-1, -1, -1, -1});
  SetAttr(g.Node("Cast", {"s"}, {"out"}), "to", int64_t(DType::kDouble));
  g.Output("out", DType::kDouble, {-1, -1, -1, -1});
  const onnx::GraphProto cast = Body(g, "cast");
  Mods wrong;
  wrong.score = &cast;
  EXPECT_THAT(error(q, k, v, wrong), HasSubstr("score_mod gives double"));
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: the materialised scores and probabilities (the
// reference path, with modifiers) and the fast kernel's workspaces count
// against the session's memory budget, checked before they are allocated.
TEST(FlexAttention, ScoresAndWorkspacesCountAgainstTheMemoryLimit) {
  const onnx::GraphProto shift = Modifier(DType::kFloat, "Add", 3.5);
  // 256 KiB of inputs whose scores would take 4 GiB: refused, not allocated.
  {
    const Tensor q = RandomUniform(DType::kFloat, {1, 1, 32768, 2}, 1);
    Mods mods;
    mods.score = &shift;
    mods.memory_limit = size_t(64) << 20;
    const absl::StatusOr<Tensor> y = RunFlex(q, q, q, mods);
    ASSERT_FALSE(y.ok());
    EXPECT_TRUE(absl::IsResourceExhausted(y.status())) << y.status();
    EXPECT_THAT(Message(y.status()), HasSubstr("FlexAttention node 'FlexAttention_1'"));
    EXPECT_THAT(Message(y.status()), HasSubstr("exceed the session's memory limit of 67108864 bytes"));
  }
  // 512 x 512 scores: 1 MiB of floats, and 2 MiB of doubles for the softmax.
  const Tensor q = RandomUniform(DType::kFloat, {1, 1, 512, 8}, 2);
  const Tensor k = RandomUniform(DType::kFloat, {1, 1, 512, 8}, 3);
  const Tensor v = RandomUniform(DType::kFloat, {1, 1, 512, 8}, 4);
  Mods mods;
  mods.score = &shift;
  mods.memory_limit = 768 << 10;
  absl::StatusOr<Tensor> over = RunFlex(q, k, v, mods);
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_THAT(Message(over.status()), HasSubstr("FlexAttention node 'FlexAttention_1'"));
  mods.memory_limit = 8 << 20;
  absl::StatusOr<Tensor> shifted = RunFlex(q, k, v, mods);
  ASSERT_TRUE(shifted.ok()) << shifted.status();
  // The fast path (no modifier): its workspaces (per thread: the scores of a
  // query block, the transposed keys: some 30 KiB) do not fit 8 KiB beside Y.
  Mods fast;
  fast.memory_limit = (16 << 10) + (8 << 10);
  fast.attrs = [](onnx::NodeProto&) {};
  absl::StatusOr<Tensor> tight = RunFlex(q, k, v, fast);
  ASSERT_FALSE(tight.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(tight.status())) << tight.status();
  EXPECT_THAT(Message(tight.status()), HasSubstr("the attention kernel's workspaces"));
  fast.memory_limit = 8 << 20;
  absl::StatusOr<Tensor> plain = RunFlex(q, k, v, fast);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // The softmax ignores a constant added to every score.
  ExpectNear(*shifted, *plain, 1e-5, "score_mod Add against the fast path");
}

}  // namespace
}  // namespace onnx_mini
