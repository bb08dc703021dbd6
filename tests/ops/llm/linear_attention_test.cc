// LinearAttention-27 and CausalConvWithState-27: the fast kernels against the
// plain references across rules, dtypes and odd shapes; the ops against the
// references; a prefill equal to token-by-token decoding; the state updated
// in place when present_state is bound to past_state's buffer; and errors.
#include "kernels/attention/linear_attention.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

double Tol(DType d) { return d == DType::kBFloat16 ? 3e-2 : d == DType::kFloat16 ? 4e-3 : 2e-5; }

void ExpectNear(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double w = GetDouble(want, i);
    ASSERT_NEAR(GetDouble(got, i), w, tol * (1 + std::fabs(w))) << what << " at " << i;
  }
}

// ---- LinearAttention ----

struct LinearCase {
  int64_t B, T, hq, hkv, dk, dv;
  std::string rule;
  bool past, decay_per_key, beta_per_head;
  float scale = 0;
};

struct LinearInputs {
  Tensor q, k, v, past, decay, beta;  // past/decay/beta undefined when absent
};

LinearInputs MakeInputs(const LinearCase& c, DType t, DType s, uint32_t seed) {
  LinearInputs in;
  in.q = RandomUniform(t, {c.B, c.T, c.hq * c.dk}, seed, -1, 1);
  in.k = RandomUniform(t, {c.B, c.T, c.hkv * c.dk}, seed + 1, -0.5, 0.5);
  in.v = RandomUniform(t, {c.B, c.T, c.hkv * c.dv}, seed + 2, -1, 1);
  if (c.past) in.past = RandomUniform(s, {c.B, c.hkv, c.dk, c.dv}, seed + 3, -0.3, 0.3);
  if (c.rule == "gated" || c.rule == "gated_delta")
    in.decay = RandomUniform(t, {c.B, c.T, c.decay_per_key ? c.hkv * c.dk : c.hkv}, seed + 4, -0.3, 0);
  if (c.rule == "delta" || c.rule == "gated_delta")
    in.beta = RandomUniform(t, {c.B, c.T, c.beta_per_head ? c.hkv : 1}, seed + 5, 0, 1);
  return in;
}

LinearAttentionProblem Problem(const LinearCase& c, const LinearInputs& in, DType t, DType s) {
  LinearAttentionProblem p;
  p.batch = c.B;
  p.len = c.T;
  p.q_heads = c.hq;
  p.kv_heads = c.hkv;
  p.dk = c.dk;
  p.dv = c.dv;
  p.scale = c.scale != 0 ? c.scale : float(1 / std::sqrt(double(c.dk)));
  p.gated = in.decay.defined();
  p.delta = in.beta.defined();
  p.decay_per_key = c.decay_per_key;
  p.beta_per_head = c.beta_per_head;
  p.dtype = t;
  p.state_dtype = s;
  p.q = in.q.raw();
  p.k = in.k.raw();
  p.v = in.v.raw();
  p.past = in.past.defined() ? in.past.raw() : nullptr;
  p.decay = in.decay.defined() ? in.decay.raw() : nullptr;
  p.beta = in.beta.defined() ? in.beta.raw() : nullptr;
  return p;
}

std::vector<LinearCase> LinearCases() {
  std::vector<LinearCase> cases;
  for (const std::string rule : {"linear", "gated", "delta", "gated_delta"}) {
    cases.push_back({2, 4, 4, 4, 8, 8, rule, true, true, true});
    cases.push_back({1, 1, 6, 2, 5, 3, rule, true, false, false});   // decode step, GQA, odd dims
    cases.push_back({3, 7, 3, 1, 3, 7, rule, false, true, true});     // MQA, d_v > d_k, no past
    cases.push_back({1, 0, 2, 2, 4, 4, rule, true, true, false});     // no tokens: the state passes through
    cases.push_back({2, 3, 2, 2, 1, 2, rule, false, false, true, 0.7f});  // d_k = 1, explicit scale
  }
  return cases;
}

TEST(LinearAttentionKernels, FastMatchesReference) {
  uint32_t seed = 10;
  const DType types[] = {DType::kFloat, DType::kFloat16, DType::kBFloat16};
  for (DType t : types)
    for (DType s : types)
      for (const LinearCase& c : LinearCases()) {
        const LinearInputs in = MakeInputs(c, t, s, seed += 7);
        LinearAttentionProblem p = Problem(c, in, t, s);
        Tensor y_ref = *Tensor::Make(t, {c.B, c.T, c.hq * c.dv}), y_fast = *Tensor::Make(t, {c.B, c.T, c.hq * c.dv});
        Tensor s_ref = *Tensor::Make(s, {c.B, c.hkv, c.dk, c.dv}), s_fast = *Tensor::Make(s, {c.B, c.hkv, c.dk, c.dv});
        p.y = y_ref.raw();
        p.present = s_ref.raw();
        LinearAttentionReference(p);
        for (int threads : {1, 2}) {
          p.y = y_fast.raw();
          p.present = s_fast.raw();
          LinearAttentionFast(p, threads);
          const std::string what = absl::StrCat(c.rule, " ", LowerName(t), "/", LowerName(s), " B", c.B, " T", c.T,
                                                " hq", c.hq, " hkv", c.hkv, " dk", c.dk, " dv", c.dv);
          ExpectNear(y_fast, y_ref, Tol(t), what + " output");
          ExpectNear(s_fast, s_ref, Tol(s), what + " state");
        }
      }
}

absl::StatusOr<std::vector<Tensor>> RunLinear(const LinearCase& c, const LinearInputs& in) {
  OpTester t;
  t.op = "LinearAttention";
  t.opset = 27;
  t.inputs = {in.q, in.k, in.v, in.past, in.decay, in.beta};
  t.outputs = 2;
  t.attrs = [&](onnx::NodeProto& n) {
    SetAttr(n, "q_num_heads", c.hq);
    SetAttr(n, "kv_num_heads", c.hkv);
    SetAttr(n, "update_rule", c.rule);
    if (c.scale != 0) SetAttr(n, "scale", c.scale);
  };
  return t.Run();
}

TEST(LinearAttention, OpMatchesReferenceForEveryRuleAndType) {
  uint32_t seed = 100;
  for (DType t : {DType::kFloat, DType::kFloat16, DType::kBFloat16})
    for (const LinearCase& c : LinearCases()) {
      const DType s = c.past ? DType::kFloat : t;  // a float state beside 16-bit activations, or S = T
      const LinearInputs in = MakeInputs(c, t, s, seed += 7);
      absl::StatusOr<std::vector<Tensor>> out = RunLinear(c, in);
      ASSERT_TRUE(out.ok()) << out.status();
      LinearAttentionProblem p = Problem(c, in, t, s);
      Tensor y = *Tensor::Make(t, {c.B, c.T, c.hq * c.dv}), st = *Tensor::Make(s, {c.B, c.hkv, c.dk, c.dv});
      p.y = y.raw();
      p.present = st.raw();
      LinearAttentionReference(p);
      ASSERT_EQ((*out)[1].dtype(), s);
      ExpectNear((*out)[0], y, Tol(t), c.rule + " output");
      ExpectNear((*out)[1], st, Tol(s), c.rule + " state");
    }
}

TEST(LinearAttention, PrefillEqualsTokenByTokenDecodingInPlace) {
  // One 5-token prefill against five decode steps whose present_state is
  // bound to past_state's memory: the state is updated where it lies.
  const int64_t B = 2, T = 5, hq = 4, hkv = 2, dk = 6, dv = 5;
  LinearCase c{B, T, hq, hkv, dk, dv, "gated_delta", true, true, true};
  const LinearInputs in = MakeInputs(c, DType::kFloat, DType::kFloat, 3);
  absl::StatusOr<std::vector<Tensor>> prefill = RunLinear(c, in);
  ASSERT_TRUE(prefill.ok()) << prefill.status();

  ModelBuilder m(27);
  m.Input("q", DType::kFloat, {B, 1, hq * dk}).Input("k", DType::kFloat, {B, 1, hkv * dk});
  m.Input("v", DType::kFloat, {B, 1, hkv * dv}).Input("past", DType::kFloat, {B, hkv, dk, dv});
  m.Input("decay", DType::kFloat, {B, 1, hkv * dk}).Input("beta", DType::kFloat, {B, 1, hkv});
  m.Output("y", DType::kFloat, {B, 1, hq * dv}).Output("present", DType::kFloat, {B, hkv, dk, dv});
  onnx::NodeProto& n = m.Node("LinearAttention", {"q", "k", "v", "past", "decay", "beta"}, {"y", "present"});
  SetAttr(n, "q_num_heads", hq);
  SetAttr(n, "kv_num_heads", hkv);
  std::unique_ptr<Session> s = *m.Build();
  std::vector<float> state(in.past.data<float>(), in.past.data<float>() + in.past.size());
  Tensor past = Tensor::Borrow(DType::kFloat, {B, hkv, dk, dv}, state.data());
  auto token = [](const Tensor& x, int64_t t) {  // x[:, t:t+1, :]
    const int64_t b = x.shape()[0], len = x.shape()[1], w = x.shape()[2];
    Tensor out = *Tensor::Make(x.dtype(), {b, 1, w});
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < w; ++j) out.data<float>()[i * w + j] = x.data<float>()[(i * len + t) * w + j];
    return out;
  };
  for (int64_t t = 0; t < T; ++t) {
    std::vector<Tensor> outputs = {Tensor(), past};
    ASSERT_TRUE(s->Run({{"q", token(in.q, t)}, {"k", token(in.k, t)}, {"v", token(in.v, t)}, {"past", past},
                        {"decay", token(in.decay, t)}, {"beta", token(in.beta, t)}},
                       &outputs)
                    .ok());
    EXPECT_EQ(outputs[1].raw(), static_cast<void*>(state.data()));
    const Tensor& y = outputs[0];
    const Tensor& want = (*prefill)[0];
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < hq * dv; ++j)
        ASSERT_NEAR(y.data<float>()[b * hq * dv + j], want.data<float>()[(b * T + t) * hq * dv + j], 1e-5);
  }
  ExpectNear(past, (*prefill)[1], 1e-5, "state after five steps");
}

TEST(LinearAttention, InPlaceOnAnIntermediateInsideAGraph) {
  // past = x + 0 is read only by LinearAttention, which may take its buffer;
  // x itself must stay untouched and the results right.
  const int64_t B = 2, hq = 2, hkv = 1, dk = 3, dv = 4;
  LinearCase c{B, 2, hq, hkv, dk, dv, "linear", true, false, false};
  const LinearInputs in = MakeInputs(c, DType::kFloat, DType::kFloat, 21);
  ModelBuilder m(27);
  m.Input("q", DType::kFloat, {B, 2, hq * dk}).Input("k", DType::kFloat, {B, 2, hkv * dk});
  m.Input("v", DType::kFloat, {B, 2, hkv * dv}).Input("x", DType::kFloat, {B, hkv, dk, dv});
  m.Initializer("zero", Tensor::FromVector<float>({0.f}, {}));
  m.Output("y", DType::kFloat, {B, 2, hq * dv}).Output("present", DType::kFloat, {B, hkv, dk, dv});
  m.Node("Add", {"x", "zero"}, {"past"});
  onnx::NodeProto& n = m.Node("LinearAttention", {"q", "k", "v", "past"}, {"y", "present"});
  SetAttr(n, "q_num_heads", hq);
  SetAttr(n, "kv_num_heads", hkv);
  SetAttr(n, "update_rule", std::string("linear"));
  std::unique_ptr<Session> s = *m.Build();
  const std::vector<float> x_before(in.past.data<float>(), in.past.data<float>() + in.past.size());
  absl::StatusOr<std::vector<Tensor>> out = s->Run({{"q", in.q}, {"k", in.k}, {"v", in.v}, {"x", in.past}});
  ASSERT_TRUE(out.ok()) << out.status();
  absl::StatusOr<std::vector<Tensor>> want = RunLinear(c, in);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectNear((*out)[0], (*want)[0], 1e-6, "output");
  ExpectNear((*out)[1], (*want)[1], 1e-6, "state");
  for (size_t i = 0; i < x_before.size(); ++i) ASSERT_EQ(in.past.data<float>()[i], x_before[i]);
}

TEST(LinearAttention, InvalidAttributesAndShapesNameTheRule) {
  LinearCase c{1, 2, 2, 2, 4, 4, "gated_delta", true, true, true};
  const LinearInputs good = MakeInputs(c, DType::kFloat, DType::kFloat, 1);
  auto error = [&](LinearCase cc, LinearInputs in, const Attrs& extra = {}) {
    OpTester t;
    t.op = "LinearAttention";
    t.opset = 27;
    t.inputs = {in.q, in.k, in.v, in.past, in.decay, in.beta};
    t.outputs = 2;
    t.attrs = [&](onnx::NodeProto& n) {
      if (cc.hq) SetAttr(n, "q_num_heads", cc.hq);
      if (cc.hkv) SetAttr(n, "kv_num_heads", cc.hkv);
      SetAttr(n, "update_rule", cc.rule);
      if (extra) extra(n);
    };
    absl::StatusOr<std::vector<Tensor>> out = t.Run();
    return out.ok() ? std::string("ok") : Message(out.status());
  };
  EXPECT_EQ(error(c, good), "ok");
  LinearInputs bad = good;
  bad.past = RandomUniform(DType::kFloat, {1, 2, 4, 5}, 3);
  EXPECT_THAT(error(c, bad), HasSubstr("past_state [1,2,4,5] must be (1, 2, 4, 4) = (B, kv_num_heads, d_k, d_v) (LA4)"));
  LinearCase rule = c;
  rule.rule = "delta_gated";
  EXPECT_THAT(error(rule, good), HasSubstr("update_rule 'delta_gated' is not one of linear, gated, delta, gated_delta"));
  rule.rule = "delta";
  EXPECT_THAT(error(rule, good), HasSubstr("update_rule 'delta' forbids the decay input (LA2)"));
  bad = good;
  bad.beta = Tensor();
  EXPECT_THAT(error(c, bad), HasSubstr("update_rule 'gated_delta' requires the beta input (LA2)"));
  LinearCase heads = c;
  heads.hq = 3;
  EXPECT_THAT(error(heads, good), HasSubstr("q_num_heads 3 must be a positive multiple of kv_num_heads 2 (LA1)"));
  heads.hq = 0;
  EXPECT_THAT(error(heads, good), HasSubstr("q_num_heads and kv_num_heads are required (LA1)"));
  bad = good;
  bad.decay = RandomUniform(DType::kFloat, {1, 2, 3}, 3);
  EXPECT_THAT(error(c, bad), HasSubstr("decay [1,2,3] must be (1, 2, 2) per head or (1, 2, 8) per key dim (LA5)"));
  bad = good;
  bad.beta = RandomUniform(DType::kFloat, {1, 2, 4}, 3);
  EXPECT_THAT(error(c, bad), HasSubstr("beta [1,2,4] must be (1, 2, 2) or (1, 2, 1) (LA6)"));
  bad = good;
  bad.k = RandomUniform(DType::kFloat, {1, 2, 6}, 3);
  EXPECT_THAT(error(c, bad), HasSubstr("key [1,2,6] must be (1, 2, 8) = (B, T, kv_num_heads * d_k) (LA3)"));
  bad = good;
  bad.q = RandomUniform(DType::kFloat, {1, 2, 7}, 3);
  EXPECT_THAT(error(c, bad), HasSubstr("query's last dim 7 is not divisible by q_num_heads 2 (LA3)"));
  bad = good;
  bad.q = RandomUniform(DType::kFloat, {2, 8}, 3);
  EXPECT_THAT(error(c, bad), HasSubstr("query float[2,8] must have rank 3 (LA3)"));
}

TEST(LinearAttention, EmptyHeadDimsGiveZerosAndHugeHeadCountsDoNotLoop) {
  // d_k = 0: every read is an empty sum. kv_num_heads = 2^40 with empty key
  // and value rows: nothing to compute, and no loop over the heads.
  LinearCase c{2, 3, 2, 2, 0, 3, "linear", false, false, false, 1.f};
  const LinearInputs in = MakeInputs(c, DType::kFloat, DType::kFloat, 4);
  absl::StatusOr<std::vector<Tensor>> out = RunLinear(c, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 3, 6}));
  for (double x : Values((*out)[0])) EXPECT_EQ(x, 0.0);
  EXPECT_EQ((*out)[1].shape(), (Shape{2, 2, 0, 3}));
  const int64_t huge = int64_t(1) << 40;
  LinearCase h{1, 1, huge, huge, 0, 0, "linear", false, false, false, 1.f};
  LinearInputs e;
  e.q = *Tensor::Make(DType::kFloat, {1, 1, 0});
  e.k = *Tensor::Make(DType::kFloat, {1, 1, 0});
  e.v = *Tensor::Make(DType::kFloat, {1, 1, 0});
  out = RunLinear(h, e);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), (Shape{1, huge, 0, 0}));
}

TEST(LinearAttentionKernels, OverflowBecomesInfinityInBoth) {
  // A decay of +100 per step multiplies the state by e^100: past float's
  // range after one step. Both kernels give +inf (never an undefined cast).
  LinearCase c{1, 2, 1, 1, 1, 1, "gated", true, true, false, 1.f};
  LinearInputs in;
  in.q = F({1, 1}, {1, 2, 1});
  in.k = F({0, 0}, {1, 2, 1});
  in.v = F({0, 0}, {1, 2, 1});
  in.past = F({1}, {1, 1, 1, 1});
  in.decay = F({100, 100}, {1, 2, 1});
  LinearAttentionProblem p = Problem(c, in, DType::kFloat, DType::kFloat);
  for (bool fast : {false, true}) {
    Tensor y = *Tensor::Make(DType::kFloat, {1, 2, 1}), st = *Tensor::Make(DType::kFloat, {1, 1, 1, 1});
    p.y = y.raw();
    p.present = st.raw();
    if (fast) LinearAttentionFast(p, 1);
    else LinearAttentionReference(p);
    EXPECT_EQ(y.data<float>()[1], INFINITY) << fast;
    EXPECT_EQ(st.data<float>()[0], INFINITY) << fast;
  }
}

// ---- CausalConvWithState ----

struct ConvCase {
  int64_t B, C, L, K;
  bool bias, past, silu;
};

struct ConvInputs {
  Tensor x, w, bias, past;
};

ConvInputs MakeConv(const ConvCase& c, DType t, uint32_t seed) {
  ConvInputs in;
  in.x = RandomUniform(t, {c.B, c.C, c.L}, seed);
  in.w = RandomUniform(t, {c.C, 1, c.K}, seed + 1, -1, 1);
  if (c.bias) in.bias = RandomUniform(t, {c.C}, seed + 2, -1, 1);
  if (c.past) in.past = RandomUniform(t, {c.B, c.C, c.K - 1}, seed + 3);
  return in;
}

CausalConvProblem ConvProblem(const ConvCase& c, const ConvInputs& in, DType t) {
  CausalConvProblem p;
  p.batch = c.B;
  p.channels = c.C;
  p.len = c.L;
  p.kernel = c.K;
  p.silu = c.silu;
  p.dtype = t;
  p.input = in.x.raw();
  p.weight = in.w.raw();
  p.bias = in.bias.defined() ? in.bias.raw() : nullptr;
  p.past = in.past.defined() ? in.past.raw() : nullptr;
  return p;
}

std::vector<ConvCase> ConvCases() {
  std::vector<ConvCase> cases;
  for (bool silu : {false, true})
    for (bool past : {false, true}) {
      cases.push_back({2, 4, 8, 4, true, past, silu});
      cases.push_back({1, 3, 1, 4, false, past, silu});   // decode step
      cases.push_back({3, 5, 2, 5, true, past, silu});    // input shorter than the carry
      cases.push_back({1, 1, 6, 1, false, past, silu});   // k = 1: no carry
      cases.push_back({2, 7, 0, 3, true, past, silu});    // no new positions
      cases.push_back({1, 300, 257, 4, true, past, silu});  // large enough for threads
    }
  return cases;
}

TEST(CausalConvKernels, FastMatchesReference) {
  uint32_t seed = 7;
  for (DType t : {DType::kFloat, DType::kFloat16, DType::kBFloat16})
    for (const ConvCase& c : ConvCases()) {
      const ConvInputs in = MakeConv(c, t, seed += 5);
      CausalConvProblem p = ConvProblem(c, in, t);
      Tensor y_ref = *Tensor::Make(t, {c.B, c.C, c.L}), y_fast = *Tensor::Make(t, {c.B, c.C, c.L});
      Tensor s_ref = *Tensor::Make(t, {c.B, c.C, c.K - 1}), s_fast = *Tensor::Make(t, {c.B, c.C, c.K - 1});
      p.output = y_ref.raw();
      p.present = s_ref.raw();
      CausalConvReference(p);
      p.output = y_fast.raw();
      p.present = s_fast.raw();
      CausalConvFast(p, 2);
      const std::string what = absl::StrCat(LowerName(t), " B", c.B, " C", c.C, " L", c.L, " K", c.K, " silu",
                                            c.silu, " past", c.past);
      ExpectNear(y_fast, y_ref, Tol(t), what + " output");
      ExpectNear(s_fast, s_ref, 0, what + " state");  // the state is copied, never computed
    }
}

TEST(CausalConvKernels, ReferenceMatchesTheFormula) {
  // (B, C, L, k) = (1, 2, 3, 3), past and bias given: y[l] = b + sum_j w[j] * padded[l + j].
  const Tensor x = F({1, 2, 3, 10, 20, 30}, {1, 2, 3}), w = F({1, 0, -1, 0.5, 0.25, 2}, {2, 1, 3});
  const Tensor bias = F({100, -100}, {2}), past = F({-1, -2, 5, 6}, {1, 2, 2});
  OpTester t;
  t.op = "CausalConvWithState";
  t.opset = 27;
  t.inputs = {x, w, bias, past};
  t.outputs = 2;
  absl::StatusOr<std::vector<Tensor>> out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // channel 0: padded -1 -2 1 2 3; channel 1: padded 5 6 10 20 30
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{100 + (-1 - 1), 100 + (-2 - 2), 100 + (1 - 3),
                                                    -100 + (2.5 + 1.5 + 20), -100 + (3 + 2.5 + 40),
                                                    -100 + (5 + 5 + 60)}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{2, 3, 20, 30}));
}

absl::StatusOr<std::vector<Tensor>> RunConv(const ConvCase& c, const ConvInputs& in, const std::string& act = "") {
  OpTester t;
  t.op = "CausalConvWithState";
  t.opset = 27;
  t.inputs = {in.x, in.w, in.bias, in.past};
  t.outputs = 2;
  t.attrs = [&](onnx::NodeProto& n) {
    if (!act.empty()) SetAttr(n, "activation", act);
  };
  return t.Run();
}

TEST(CausalConvWithState, OpMatchesReferenceForEveryType) {
  uint32_t seed = 300;
  for (DType t : {DType::kFloat, DType::kFloat16, DType::kBFloat16})
    for (const ConvCase& c : ConvCases()) {
      const ConvInputs in = MakeConv(c, t, seed += 5);
      absl::StatusOr<std::vector<Tensor>> out = RunConv(c, in, c.silu ? (seed % 2 ? "silu" : "swish") : "none");
      ASSERT_TRUE(out.ok()) << out.status();
      CausalConvProblem p = ConvProblem(c, in, t);
      Tensor y = *Tensor::Make(t, {c.B, c.C, c.L}), st = *Tensor::Make(t, {c.B, c.C, c.K - 1});
      p.output = y.raw();
      p.present = st.raw();
      CausalConvReference(p);
      ExpectNear((*out)[0], y, Tol(t), "output");
      ExpectNear((*out)[1], st, 0, "state");
    }
}

TEST(CausalConvWithState, PrefillEqualsTokenByTokenDecodingInPlace) {
  const int64_t B = 2, C = 3, L = 6, K = 4;
  ConvCase c{B, C, L, K, true, true, true};
  const ConvInputs in = MakeConv(c, DType::kFloat, 11);
  absl::StatusOr<std::vector<Tensor>> prefill = RunConv(c, in, "silu");
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  ModelBuilder m(27);
  m.Input("x", DType::kFloat, {B, C, 1}).Input("past", DType::kFloat, {B, C, K - 1});
  m.Initializer("w", in.w).Initializer("b", in.bias);
  m.Output("y", DType::kFloat, {B, C, 1}).Output("present", DType::kFloat, {B, C, K - 1});
  SetAttr(m.Node("CausalConvWithState", {"x", "w", "b", "past"}, {"y", "present"}), "activation",
          std::string("silu"));
  std::unique_ptr<Session> s = *m.Build();
  std::vector<float> state(in.past.data<float>(), in.past.data<float>() + in.past.size());
  Tensor past = Tensor::Borrow(DType::kFloat, {B, C, K - 1}, state.data());
  for (int64_t l = 0; l < L; ++l) {
    Tensor x = *Tensor::Make(DType::kFloat, {B, C, 1});
    for (int64_t r = 0; r < B * C; ++r) x.data<float>()[r] = in.x.data<float>()[r * L + l];
    std::vector<Tensor> outputs = {Tensor(), past};
    ASSERT_TRUE(s->Run({{"x", x}, {"past", past}}, &outputs).ok());
    EXPECT_EQ(outputs[1].raw(), static_cast<void*>(state.data()));
    for (int64_t r = 0; r < B * C; ++r)
      ASSERT_NEAR(outputs[0].data<float>()[r], (*prefill)[0].data<float>()[r * L + l], 1e-5) << l;
  }
  ExpectNear(past, (*prefill)[1], 0, "state after six steps");
}

TEST(CausalConvWithState, EmptyLengthWithKernelOneWritesNothing) {
  // L = 0 and k = 1: both outputs are empty, whatever the batch size.
  const int64_t huge = int64_t(1) << 50;
  ConvInputs in;
  in.x = *Tensor::Make(DType::kFloat, {huge, 2, 0});
  in.w = F({1, 2}, {2, 1, 1});
  absl::StatusOr<std::vector<Tensor>> out = RunConv({huge, 2, 0, 1, false, false, false}, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{huge, 2, 0}));
  EXPECT_EQ((*out)[1].shape(), (Shape{huge, 2, 0}));
}

TEST(CausalConvWithState, InvalidAttributesAndShapesNameTheRule) {
  ConvCase c{2, 3, 5, 4, true, true, false};
  const ConvInputs good = MakeConv(c, DType::kFloat, 1);
  auto error = [&](const ConvInputs& in, const std::string& act = "") {
    absl::StatusOr<std::vector<Tensor>> out = RunConv(c, in, act);
    return out.ok() ? std::string("ok") : Message(out.status());
  };
  EXPECT_EQ(error(good), "ok");
  EXPECT_THAT(error(good, "gelu"), HasSubstr("activation 'gelu' is not one of none, silu, swish (CC1)"));
  ConvInputs bad = good;
  bad.past = RandomUniform(DType::kFloat, {2, 3, 4}, 2);
  EXPECT_THAT(error(bad), HasSubstr("past_state [2,3,4] must be (2, 3, 3) = (batch, channels, k - 1) (CC3)"));
  bad = good;
  bad.w = RandomUniform(DType::kFloat, {3, 2, 4}, 2);
  EXPECT_THAT(error(bad), HasSubstr("weight [3,2,4] must be (3, 1, k) for input [2,3,5]"));
  bad = good;
  bad.w = RandomUniform(DType::kFloat, {3, 1, 0}, 2);
  bad.past = Tensor();
  EXPECT_THAT(error(bad), HasSubstr("kernel size 0; it must be at least 1 (CC2)"));
  bad = good;
  bad.bias = RandomUniform(DType::kFloat, {2}, 2);
  EXPECT_THAT(error(bad), HasSubstr("bias [2] must be (3) (CC2)"));
  bad = good;
  bad.x = RandomUniform(DType::kFloat, {2, 3}, 2);
  EXPECT_THAT(error(bad), HasSubstr("input float[2,3] must have rank 3 (CC2)"));
}

}  // namespace
}  // namespace onnx_mini
