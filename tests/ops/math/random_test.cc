// ops/math/random.cc: seeded draws reproduce NumPy's legacy RandomState (the
// values ONNX's reference gives) at every run and in every session; unseeded
// ones differ between runs of one session (the rows are never folded);
// ranges and means within loose bounds with fixed seeds; errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Shape34(std::function<void(onnx::NodeProto&)> more = {}) {
  return [more](onnx::NodeProto& p) {
    SetAttr(p, "shape", std::vector<int64_t>{3, 4});
    if (more) more(p);
  };
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double Variance(const std::vector<double>& v) {
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}

TEST(RandomUniform, SeededDrawsAreNumPysLegacyUniforms) {
  // np.random.RandomState(0).rand(4), then scaled to [low, high) in the output type.
  auto d = RunOne(22, "RandomUniform", {}, [](onnx::NodeProto& p) {
    SetAttr(p, "shape", std::vector<int64_t>{4});
    SetAttr(p, "seed", 0.0f);
    SetAttr(p, "dtype", int64_t(DType::kDouble));
  });
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(Values(*d), ElementsAre(0.5488135039273248, 0.7151893663724195, 0.6027633760716439, 0.5448831829968969));
  // float32: r = float(u); r *= float(high - low); r += float(low).
  auto f = RunOne(22, "RandomUniform", {}, [](onnx::NodeProto& p) {
    SetAttr(p, "shape", std::vector<int64_t>{3});
    SetAttr(p, "seed", 0.0f);
    SetAttr(p, "low", -2.0f);
    SetAttr(p, "high", 10.0f);
  });
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->dtype(), DType::kFloat);
  EXPECT_THAT(Values(*f), ElementsAre(4.585762023925781, 6.582271575927734, 5.233160018920898));
}

TEST(RandomNormal, SeededDrawsAreNumPysLegacyGaussians) {
  // np.random.RandomState(5).randn(5): the polar method's pairs.
  auto d = RunOne(1, "RandomNormal", {}, [](onnx::NodeProto& p) {
    SetAttr(p, "shape", std::vector<int64_t>{5});
    SetAttr(p, "seed", 5.0f);
    SetAttr(p, "dtype", int64_t(DType::kDouble));
  });
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(Values(*d), ElementsAre(0.44122748688504143, -0.33087015189408764, 2.43077118700778,
                                      -0.2520921296030769, 0.10960984157818278));
  auto f = RunOne(1, "RandomNormal", {}, [](onnx::NodeProto& p) {
    SetAttr(p, "shape", std::vector<int64_t>{3});
    SetAttr(p, "seed", 5.0f);
    SetAttr(p, "mean", 1.0f);
    SetAttr(p, "scale", 2.0f);
  });
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Values(*f), ElementsAre(1.8824549913406372, 0.3382596969604492, 5.861542224884033));
}

TEST(RandomOps, MomentsAndRangesWithinLooseBounds) {
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16}) {
    auto u = RunOne(22, "RandomUniform", {}, [dt](onnx::NodeProto& p) {
      SetAttr(p, "shape", std::vector<int64_t>{100, 100});
      SetAttr(p, "seed", 17.0f);
      SetAttr(p, "low", 2.0f);
      SetAttr(p, "high", 6.0f);
      SetAttr(p, "dtype", int64_t(dt));
    });
    ASSERT_TRUE(u.ok()) << u.status();
    const std::vector<double> uv = Values(*u);
    for (double x : uv) ASSERT_TRUE(x >= 2 && x <= 6) << LowerName(dt) << " " << x;
    EXPECT_NEAR(Mean(uv), 4, 0.05) << LowerName(dt);
    EXPECT_NEAR(Variance(uv), 16.0 / 12, 0.06) << LowerName(dt);
    auto n = RunOne(22, "RandomNormal", {}, [dt](onnx::NodeProto& p) {
      SetAttr(p, "shape", std::vector<int64_t>{100, 100});
      SetAttr(p, "seed", 18.0f);
      SetAttr(p, "mean", -3.0f);
      SetAttr(p, "scale", 0.5f);
      SetAttr(p, "dtype", int64_t(dt));
    });
    ASSERT_TRUE(n.ok()) << n.status();
    const std::vector<double> nv = Values(*n);
    EXPECT_NEAR(Mean(nv), -3, 0.02) << LowerName(dt);
    EXPECT_NEAR(Variance(nv), 0.25, 0.02) << LowerName(dt);
  }
}

TEST(RandomOps, LikeFormsTakeTheInputsShapeAndTheirType) {
  const Tensor ints = Tensor::Zeros(DType::kInt32, {2, 5});
  auto u = RunOne(22, "RandomUniformLike", {ints}, [](onnx::NodeProto& p) {
    SetAttr(p, "dtype", int64_t(DType::kDouble));
    SetAttr(p, "seed", 0.0f);
  });
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->dtype(), DType::kDouble);
  EXPECT_EQ(u->shape(), (Shape{2, 5}));
  EXPECT_DOUBLE_EQ(GetDouble(*u, 0), 0.5488135039273248);
  auto n = RunOne(22, "RandomNormalLike", {Tensor::Zeros(DType::kFloat16, {3, 0, 2})});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->dtype(), DType::kFloat16);
  EXPECT_EQ(n->shape(), (Shape{3, 0, 2}));
  // Without dtype the input's type must be a float type.
  EXPECT_THAT(Message(RunOne(22, "RandomNormalLike", {ints}).status()),
              HasSubstr("without a dtype attribute the output takes the input's type"));
}

// Runs one node twice in one session and in a second session.
struct ThreeRuns {
  std::vector<double> first, second, other_session;
};

ThreeRuns RunThrice(const std::string& op, const Attrs& attrs, const Tensor* input = nullptr) {
  ThreeRuns r;
  std::vector<std::vector<double>*> slots = {&r.first, &r.second, &r.other_session};
  std::unique_ptr<Session> session;
  for (size_t k = 0; k < 3; ++k) {
    if (k != 1) {
      ModelBuilder m(22);
      std::vector<std::string> ins;
      if (input) {
        m.Initializer("x", *input);  // a constant input: the node would fold if it could
        ins.push_back("x");
      }
      m.Output("y", DType::kUndefined, {}, false);
      attrs(m.Node(op, ins, {"y"}));
      auto s = m.Build();
      EXPECT_TRUE(s.ok()) << s.status();
      if (!s.ok()) return r;
      session = *std::move(s);
    }
    auto out = session->Run({});
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) *slots[k] = Values((*out)[0]);
  }
  return r;
}

TEST(RandomOps, SeededNodesRepeatUnseededOnesDoNot) {
  const Tensor probs = Tensor::FromVector(std::vector<float>(64, 0.5f), {64});
  const Tensor logits = Tensor::FromVector(std::vector<float>(16, 0.0f), {2, 8});
  struct Case {
    std::string op;
    Attrs attrs;
    const Tensor* input;
  };
  const std::vector<Case> cases = {
      {"RandomUniform", Shape34(), nullptr},
      {"RandomNormal", Shape34(), nullptr},
      {"RandomUniformLike", [](onnx::NodeProto&) {}, &probs},
      {"RandomNormalLike", [](onnx::NodeProto&) {}, &probs},
      {"Bernoulli", [](onnx::NodeProto&) {}, &probs},
      {"Multinomial", [](onnx::NodeProto& p) { SetAttr(p, "sample_size", int64_t(32)); }, &logits},
  };
  for (const Case& c : cases) {
    const ThreeRuns unseeded = RunThrice(c.op, c.attrs, c.input);
    EXPECT_NE(unseeded.first, unseeded.second) << c.op;
    EXPECT_NE(unseeded.first, unseeded.other_session) << c.op;
    const Attrs seeded = [&c](onnx::NodeProto& p) {
      c.attrs(p);
      SetAttr(p, "seed", 3.0f);
    };
    const ThreeRuns same = RunThrice(c.op, seeded, c.input);
    EXPECT_EQ(same.first, same.second) << c.op;
    EXPECT_EQ(same.first, same.other_session) << c.op;
    const ThreeRuns other = RunThrice(c.op, [&c](onnx::NodeProto& p) {
      c.attrs(p);
      SetAttr(p, "seed", 4.0f);
    }, c.input);
    EXPECT_NE(same.first, other.first) << c.op;
  }
}

TEST(RandomOps, ClearErrors) {
  EXPECT_THAT(Message(RunOne(22, "RandomNormal", {}).status()), HasSubstr("attribute 'shape' (a list of ints) is required"));
  EXPECT_THAT(Message(RunOne(22, "RandomNormal", {}, [](onnx::NodeProto& p) {
                        SetAttr(p, "shape", std::vector<int64_t>{2, -1});
                      }).status()),
              HasSubstr("has a negative dim"));
  EXPECT_THAT(Message(RunOne(22, "RandomUniform", {}, Shape34([](onnx::NodeProto& p) {
                                 SetAttr(p, "dtype", int64_t(DType::kInt32));
                               })).status()),
              HasSubstr("dtype = 6 is not one of"));
  EXPECT_THAT(Message(RunOne(22, "RandomUniform", {}, Shape34([](onnx::NodeProto& p) {
                                 SetAttr(p, "seed", INFINITY);
                               })).status()),
              HasSubstr("is not finite"));
  EXPECT_THAT(Message(RunOne(22, "RandomUniform", {}, [](onnx::NodeProto& p) {
                        SetAttr(p, "shape", std::vector<int64_t>{int64_t(1) << 40, int64_t(1) << 40});
                      }).status()),
              HasSubstr("too many elements"));
}

// ---- Bernoulli ----

TEST(Bernoulli, SeededDrawsAreNumPysLegacyBinomials) {
  // np.random.RandomState(42).binomial(1, p) (p = 0 and p = 1 consume a draw too).
  const Tensor p = Tensor::FromVector(std::vector<double>{0.1, 0.5, 0.9, 0.3, 0.7, 0.0, 1.0, 0.5}, {8});
  auto y = RunOne(22, "Bernoulli", {p}, [](onnx::NodeProto& n) { SetAttr(n, "seed", 42.0f); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kDouble);
  EXPECT_THAT(Values(*y), ElementsAre(0, 1, 1, 0, 1, 0, 1, 1));
}

TEST(Bernoulli, OutputTypesEdgesAndFrequency) {
  std::vector<float> p(20000, 0.3f);
  p[0] = 0;
  p[1] = 1;
  for (DType dt : {DType::kBool, DType::kInt32, DType::kUInt8, DType::kFloat16, DType::kInt64}) {
    auto y = RunOne(15, "Bernoulli", {Tensor::FromVector(p, {100, 200})}, [dt](onnx::NodeProto& n) {
      SetAttr(n, "seed", 9.0f);
      SetAttr(n, "dtype", int64_t(dt));
    });
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->dtype(), dt);
    const std::vector<double> v = Values(*y);
    for (double x : v) ASSERT_TRUE(x == 0 || x == 1) << x;
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[1], 1);
    EXPECT_NEAR(Mean(v), 0.3, 0.015) << LowerName(dt);
  }
}

TEST(Bernoulli, ProbabilitiesOutsideZeroToOneAreErrors) {
  EXPECT_THAT(Message(RunOne(22, "Bernoulli", {F({0.5f, 1.5f}, {2})}).status()),
              HasSubstr("input[1] = 1.5 is not a probability in [0, 1]"));
  EXPECT_THAT(Message(RunOne(22, "Bernoulli", {F({NAN}, {1})}).status()), HasSubstr("is not a probability"));
  EXPECT_THAT(Message(RunOne(22, "Bernoulli", {F({0.5f}, {1})}, [](onnx::NodeProto& n) {
                        SetAttr(n, "dtype", int64_t(DType::kString));
                      }).status()),
              HasSubstr("dtype = 8 is not one of"));
}

// ---- Multinomial ----

TEST(Multinomial, FrequenciesFollowTheSoftmaxOfTheLogits) {
  // Row 0: probabilities 0.2, 0.8 and 0 (log 0 = -inf); row 1: uniform over 3.
  const Tensor logits =
      Tensor::FromVector(std::vector<double>{std::log(0.2), std::log(0.8), -INFINITY, 5, 5, 5}, {2, 3});
  for (DType dt : {DType::kInt32, DType::kInt64}) {
    auto y = RunOne(22, "Multinomial", {logits}, [dt](onnx::NodeProto& n) {
      SetAttr(n, "sample_size", int64_t(6000));
      SetAttr(n, "seed", 1.0f);
      SetAttr(n, "dtype", int64_t(dt));
    });
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->dtype(), dt);
    ASSERT_EQ(y->shape(), (Shape{2, 6000}));
    std::vector<double> count(6, 0);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < 6000; ++s) {
        const double c = GetDouble(*y, b * 6000 + s);
        ASSERT_TRUE(c == 0 || c == 1 || c == 2) << c;
        count[size_t(b * 3 + int64_t(c))] += 1.0 / 6000;
      }
    EXPECT_THAT(count, ElementsAre(DoubleNear(0.2, 0.02), DoubleNear(0.8, 0.02), 0.0, DoubleNear(1.0 / 3, 0.02),
                                   DoubleNear(1.0 / 3, 0.02), DoubleNear(1.0 / 3, 0.02)));
  }
}

TEST(Multinomial, ClearErrors) {
  EXPECT_THAT(Message(RunOne(22, "Multinomial", {F({0, NAN}, {1, 2})}).status()),
              HasSubstr("input[0, 1] = nan is not a log-probability"));
  EXPECT_THAT(Message(RunOne(22, "Multinomial", {F({-INFINITY, -INFINITY}, {1, 2})}).status()),
              HasSubstr("every class of row 0 has probability 0"));
  EXPECT_THAT(Message(RunOne(22, "Multinomial", {F({0, 0}, {2})}).status()), HasSubstr("must have rank 2"));
  EXPECT_THAT(Message(RunOne(22, "Multinomial", {F({}, {2, 0})}).status()), HasSubstr("no classes"));
  EXPECT_THAT(Message(RunOne(22, "Multinomial", {F({0, 0}, {1, 2})}, [](onnx::NodeProto& n) {
                        SetAttr(n, "sample_size", int64_t(0));
                      }).status()),
              HasSubstr("sample_size 0 must be at least 1"));
  EXPECT_THAT(Message(RunOne(22, "Multinomial", {F({0, 0}, {1, 2})}, [](onnx::NodeProto& n) {
                        SetAttr(n, "dtype", int64_t(DType::kFloat));
                      }).status()),
              HasSubstr("dtype = 1 is not one of"));
}

}  // namespace
}  // namespace onnx_mini
