// kernels/vec/vec_math.cc: the vectorized float math against the plain libm
// formulas, on every CPU target this machine runs, across sizes (empty, 1,
// odd, long) and the special values.
#include "kernels/vec/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "kernels/vec/sigmoid.h"
#include "runtime/cpu.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

// Distance in units in the last place (floats ordered as integers).
int64_t Ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  const auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(INT32_MIN) - i : int64_t(i);
  };
  return std::llabs(key(a) - key(b));
}

std::vector<float> Inputs(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.0f, -0.0f, 1.0f, -1.0f, 88.7f, 88.73f, -87.3f, -103.0f, -104.5f, 200.0f,
                                      -200.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f};
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = i % 7 == 3 ? special[size_t(i / 7) % special.size()] : u(rng);
  return x;
}

class VecMath : public ::testing::TestWithParam<CpuTarget> {
 protected:
  void SetUp() override {
    if (!CpuTargetUsable(GetParam(), HostCpuFeatures()))
      GTEST_SKIP() << CpuTargetName(GetParam()) << " is not available here";
    scope_.emplace(GetParam());
    ASSERT_EQ(VecMathTarget(), GetParam());  // the build the tests below compare
  }
  void TearDown() override { scope_.reset(); }
  std::optional<ScopedCpuFeaturesForTesting> scope_;
};

const std::vector<int64_t> kSizes = {0, 1, 3, 17, 64, 1000};

TEST_P(VecMath, ExpWithinTwoUlpsOfLibm) {
  for (int64_t n : kSizes) {
    const std::vector<float> x = Inputs(n, -110, 95, uint32_t(n));
    std::vector<float> y(size_t(n) + 1, 42.0f);
    VecExp(x.data(), y.data(), n);
    EXPECT_EQ(y[size_t(n)], 42.0f) << "wrote past the end";
    for (int64_t i = 0; i < n; ++i) {
      const float want = std::exp(x[size_t(i)]);
      const float got = y[size_t(i)];
      if (std::fabs(want) < std::numeric_limits<float>::min())  // denormal results: absolute
        EXPECT_NEAR(got, want, 4e-45f) << x[size_t(i)];
      else
        EXPECT_LE(Ulps(got, want), 2) << "exp(" << x[size_t(i)] << ") = " << got << ", libm " << want;
    }
  }
  // In place.
  std::vector<float> x = Inputs(33, -5, 5, 1), want(33);
  for (size_t i = 0; i < x.size(); ++i) want[i] = std::exp(x[i]);
  VecExp(x.data(), x.data(), 33);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(Ulps(x[i], want[i]), 2);
}

// The one scalar Sigmoid (kernels/vec/sigmoid.h) against 1 / (1 + exp(-x))
// in long double, from -1000 to 1000: within 2 ulp in float and double,
// the tiny values below -87 kept (float's exp(-x) overflows there, so the
// formula written as is in float gives 0), 0 and 1 in the limits, NaN for NaN.
TEST(Sigmoid, MatchesTheFormulaOverTheWholeRange) {
  for (int k = -4000; k <= 4000; ++k) {
    const double x = k * 0.25;
    const long double want = 1.0L / (1.0L + std::exp(-static_cast<long double>(x)));
    const float f = Sigmoid(float(x));
    const float want_f = float(want);
    if (want_f < std::numeric_limits<float>::min()) EXPECT_NEAR(f, want_f, 1.5e-45f) << x;
    else EXPECT_LE(Ulps(f, want_f), 2) << "sigmoid(" << x << ") = " << f << ", want " << want_f;
    const double d = Sigmoid(x);
    EXPECT_NEAR(d, double(want), std::fabs(double(want)) * 4e-16) << "sigmoid(" << x << ")";
  }
  EXPECT_GT(Sigmoid(-100.0f), 0.0f);  // 3.7e-44, a denormal: 1 / (1 + expf(100)) is 0
  EXPECT_EQ(1.0f / (1.0f + std::exp(100.0f)), 0.0f);
  EXPECT_EQ(Sigmoid(-1000.0f), 0.0f);
  EXPECT_EQ(Sigmoid(1000.0f), 1.0f);
  EXPECT_EQ(Sigmoid(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(Sigmoid(std::numeric_limits<double>::infinity()), 1.0);
  EXPECT_EQ(Sigmoid(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(Sigmoid(std::nanf(""))));
}

TEST_P(VecMath, SigmoidAndSiluWithinThreeUlpsOfThePlainFormula) {
  for (int64_t n : kSizes) {
    const std::vector<float> x = Inputs(n, -40, 40, uint32_t(n + 5));
    std::vector<float> s(static_cast<size_t>(n)), silu(static_cast<size_t>(n));
    VecSigmoid(x.data(), s.data(), n);
    VecSilu(x.data(), silu.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[size_t(i)];
      const float want = Sigmoid(v);
      if (std::fabs(want) < std::numeric_limits<float>::min()) EXPECT_NEAR(s[size_t(i)], want, 4e-45f);
      else EXPECT_LE(Ulps(s[size_t(i)], want), 3) << "sigmoid(" << v << ")";
      const float want_silu = v * want;
      if (std::isinf(v) && v < 0) EXPECT_TRUE(std::isnan(silu[size_t(i)]) || silu[size_t(i)] == 0) << v;
      else if (std::fabs(want_silu) < std::numeric_limits<float>::min()) EXPECT_NEAR(silu[size_t(i)], want_silu, 4e-45f);
      else EXPECT_LE(Ulps(silu[size_t(i)], want_silu), 4) << "silu(" << v << ")";
    }
  }
}

// Every 127th float bit pattern of each sign: all binades, denormals, +-0,
// +-inf, NaNs.
std::vector<float> EveryFloatSample() {
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 127) {
    const uint32_t u = uint32_t(b);
    float v;
    std::memcpy(&v, &u, 4);
    x.push_back(v);
  }
  return x;
}

// tanh densely (EveryFloatSample and the special values) against libm's tanhf.
TEST_P(VecMath, TanhWithinTwoUlpsOfLibm) {
  std::vector<float> x = EveryFloatSample();
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, 0.625f, -0.625f, 0.62499994f, 9.0f, 1e-40f, -1e-45f}) x.push_back(v);
  std::vector<float> y(x.size() + 1, 42.0f);
  VecTanh(x.data(), y.data(), int64_t(x.size()));
  EXPECT_EQ(y[x.size()], 42.0f) << "wrote past the end";
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::tanh(x[i]);
    const int64_t u = Ulps(y[i], want);
    if (u > 2 && bad++ < 5) ADD_FAILURE() << "tanh(" << x[i] << ") = " << y[i] << ", libm " << want;
  }
  EXPECT_TRUE(std::signbit(y[x.size() - 9]));  // -0
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(17)}) {  // short arrays: the padded tail
    std::vector<float> t(size_t(n) + 1, 42.0f);
    VecTanh(x.data() + 1000, t.data(), n);
    EXPECT_EQ(t[size_t(n)], 42.0f);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(t[size_t(i)], y[1000 + size_t(i)]);
  }
}

// erf densely, as tanh above, against libm's erff.
TEST_P(VecMath, ErfWithinTwoUlpsOfLibm) {
  std::vector<float> x = EveryFloatSample();
  const float inf = std::numeric_limits<float>::infinity();
  // The pieces' joins (0.921875, the clamp at 4) and the first x whose erf rounds to 1.
  for (float v : {0.0f, -0.0f, inf, -inf, 0.921875f, 0.92187494f, -0.921875f, 4.0f, 3.9193f, -3.9193f, 1e-40f})
    x.push_back(v);
  for (float v = 0.5f; v < 4.5f; v += 1.0f / 4096) x.push_back(v);  // the polynomial ranges densely
  std::vector<float> y(x.size() + 1, 42.0f);
  VecErf(x.data(), y.data(), int64_t(x.size()));
  EXPECT_EQ(y[x.size()], 42.0f) << "wrote past the end";
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::erf(x[i]);
    if (Ulps(y[i], want) > 2 && bad++ < 5) ADD_FAILURE() << "erf(" << x[i] << ") = " << y[i] << ", libm " << want;
  }
  EXPECT_TRUE(bad == 0) << bad << " inputs beyond 2 ulp";
  std::vector<float> z = {-0.0f, inf, -inf};
  VecErf(z.data(), z.data(), 3);
  EXPECT_TRUE(std::signbit(z[0]) && z[0] == 0);
  EXPECT_EQ(z[1], 1.0f);
  EXPECT_EQ(z[2], -1.0f);
}

TEST_P(VecMath, SoftmaxRowMatchesThePlainKernel) {
  for (int64_t n : kSizes) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::uniform_real_distribution<float> u(-30, 30);
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (float& v : x) v = u(rng);
    VecSoftmaxRow(x.data(), y.data(), n);
    float max = -std::numeric_limits<float>::infinity();
    for (float v : x) max = std::max(max, v);
    // The reference in double from the float differences x - max that both
    // kernels start from (their rounding is inherent in float softmax).
    double sum = 0;
    for (float v : x) sum += std::exp(double(v - max));
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(double(x[size_t(i)] - max)) / sum;
      EXPECT_NEAR(y[size_t(i)], want, 1e-6 * want + 1e-37) << n << " [" << i << "]";
    }
  }
  // A NaN makes the row NaN; -inf entries are 0; all -inf is NaN (as the plain kernel).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {1, nan, 2}, y(3);
  VecSoftmaxRow(x.data(), y.data(), 3);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
  x = {-inf, 0, -inf};
  VecSoftmaxRow(x.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{0, 1, 0}));
}

// Through the ops: the vectorized float path and the double reference agree.
TEST_P(VecMath, OpsTakeTheFastPathForFloat) {
  const Tensor xf = RandomUniform(DType::kFloat, {3, 37}, 4, -20, 20);
  const Tensor xd = RandomUniform(DType::kDouble, {3, 37}, 4, -20, 20);
  for (const char* op : {"Exp", "Sigmoid", "Softmax"}) {
    auto f = RunOne(13, op, {xf});
    auto d = RunOne(13, op, {xd});
    ASSERT_TRUE(f.ok() && d.ok()) << op;
    // Softmax: x - max rounds in float (|x - max| <= 40: 40 * 2^-24 relative).
    const double tol = std::string(op) == "Softmax" ? 5e-6 : 1e-6;
    for (int64_t i = 0; i < f->size(); ++i)
      EXPECT_NEAR(GetDouble(*f, i), GetDouble(*d, i), tol * std::fabs(GetDouble(*d, i)) + 1e-30) << op << " " << i;
  }
}

// Through the ops: Tanh, Erf and Gelu (both approximations) on this target
// against the plain kernel (the baseline target's libm loop).
TEST_P(VecMath, TanhErfAndGeluOpsMatchThePlainKernel) {
  for (int64_t n : {1, 15, 16, 17, 4099}) {
    Tensor x = RandomUniform(DType::kFloat, {3, n}, uint32_t(n), -12, 12);
    x.data<float>()[0] = -std::numeric_limits<float>::infinity();
    struct Case {
      int64_t opset;
      const char* op;
      const char* approximate;
    };
    for (const Case& c : {Case{13, "Tanh", nullptr}, Case{13, "Erf", nullptr}, Case{20, "Gelu", "tanh"},
                          Case{20, "Gelu", "none"}}) {
      const Attrs attrs = [&](onnx::NodeProto& node) {
        if (c.approximate) SetAttr(node, "approximate", std::string(c.approximate));
      };
      auto fast = RunOne(c.opset, c.op, {x}, attrs);
      const CpuFeatures saved = RestrictCpuFeaturesForTesting(CpuTargetFeatures(CpuTarget::kBaseline));
      auto plain = RunOne(c.opset, c.op, {x}, attrs);
      RestrictCpuFeaturesForTesting(saved);
      ASSERT_TRUE(fast.ok() && plain.ok()) << c.op;
      for (int64_t i = 0; i < x.size(); ++i) {
        const float f = fast->data<float>()[i], p = plain->data<float>()[i], v = x.data<float>()[i];
        if (std::string(c.op) != "Gelu") {
          EXPECT_LE(Ulps(f, p), 3) << c.op << "(" << v << ")";
        } else if (std::isinf(v)) {
          EXPECT_EQ(std::isnan(f), std::isnan(p)) << "gelu(" << v << ")";
          if (!std::isnan(p)) {
            EXPECT_EQ(f, p);
          }
        } else {
          // 0.5 x (1 + tanh(u) or erf(u)): their 2-3 ulp near -1 scale by |x| after the cancellation.
          EXPECT_NEAR(f, p, 2e-7 * std::fabs(v) + 2.4e-7 * std::fabs(p)) << "gelu(" << v << ") " << c.approximate;
        }
      }
    }
  }
}

// Pow by the constant exponents against the plain kernel's formula,
// float(pow(double(x), e)): equal for every input tried (random over many
// binades, the specials, denormals). Other exponents are refused.
TEST_P(VecMath, PowConstEqualsThePlainFormula) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float dmin = std::numeric_limits<float>::denorm_min();
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, dmin, -dmin, 1e-39f, -1e-39f,
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(), 1e13f, 1e-13f, 2.0f, 0.25f, 3e12f, -3e12f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 400000; ++i) {
    const uint32_t b = bits(rng);
    float v;
    std::memcpy(&v, &b, 4);
    x.push_back(v);
  }
  for (double e : {0.5, 1.0, 2.0, 3.0, -1.0, -0.5}) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(9), int64_t(x.size())}) {
      std::vector<float> y(size_t(n) + 1, 42.0f);
      ASSERT_TRUE(VecPowConst(x.data(), y.data(), n, e));
      EXPECT_EQ(y[size_t(n)], 42.0f) << "wrote past the end";
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float want = float(std::pow(double(x[size_t(i)]), e));
        const float got = y[size_t(i)];
        const bool same = std::isnan(want) ? std::isnan(got) : std::memcmp(&want, &got, 4) == 0;
        if (!same && bad++ < 5) ADD_FAILURE() << "pow(" << x[size_t(i)] << ", " << e << ") = " << got << ", plain " << want;
      }
    }
  }
  std::vector<float> y(3);
  for (double e : {0.0, 4.0, 1.5, -2.0, 0.25}) EXPECT_FALSE(VecPowConst(x.data(), y.data(), 3, e)) << e;
}

// Through the op: a scalar exponent (float or integer) on this target against the plain kernel.
TEST_P(VecMath, PowOpWithConstantExponentMatchesThePlainKernel) {
  const Tensor x = RandomUniform(DType::kFloat, {3, 4099}, 9, -50, 50);
  for (double e : {0.5, 1.0, 2.0, 3.0, -1.0, -0.5, 1.5}) {
    for (const Tensor& exponent : {F({float(e)}, {}), I({int64_t(e)}, {1})}) {
      if (exponent.dtype() == DType::kInt64 && double(int64_t(e)) != e) continue;
      auto fast = RunOne(15, "Pow", {x, exponent});
      const CpuFeatures saved = RestrictCpuFeaturesForTesting(CpuTargetFeatures(CpuTarget::kBaseline));
      auto plain = RunOne(15, "Pow", {x, exponent});
      RestrictCpuFeaturesForTesting(saved);
      ASSERT_TRUE(fast.ok() && plain.ok()) << e;
      ASSERT_EQ(fast->shape(), plain->shape());
      for (int64_t i = 0; i < fast->size(); ++i) {
        const float f = fast->data<float>()[i], p = plain->data<float>()[i];
        EXPECT_TRUE(std::isnan(p) ? std::isnan(f) : std::memcmp(&f, &p, 4) == 0) << e << " " << i << ": " << f << " " << p;
      }
    }
  }
}

// The normalization rows on this target against the plain kernel (the
// baseline target): moments and outputs agree to the last bits (FMA
// contraction on the AVX targets is the only difference), over odd and
// vector-width row sizes, with and without bias, LayerNorm and RMSNorm.
TEST_P(VecMath, NormalizationRowsMatchThePlainKernel) {
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33, 63, 64, 65, 4099}) {
    const Tensor x = RandomUniform(DType::kFloat, {3, n}, uint32_t(n), -4, 6);
    const Tensor scale = RandomUniform(DType::kFloat, {n}, uint32_t(n + 1), -2, 2);
    const Tensor bias = RandomUniform(DType::kFloat, {n}, uint32_t(n + 2), -1, 1);
    struct Case {
      int64_t opset;
      const char* op;
      std::vector<Tensor> inputs;
      size_t outputs;
    };
    for (const Case& c : {Case{17, "LayerNormalization", {x, scale, bias}, 3}, Case{17, "LayerNormalization", {x, scale}, 1},
                          Case{23, "RMSNormalization", {x, scale}, 1}}) {
      auto fast = RunNode(c.opset, c.op, c.inputs, c.outputs);
      const CpuFeatures saved = RestrictCpuFeaturesForTesting(CpuTargetFeatures(CpuTarget::kBaseline));
      auto plain = RunNode(c.opset, c.op, c.inputs, c.outputs);
      RestrictCpuFeaturesForTesting(saved);
      ASSERT_TRUE(fast.ok() && plain.ok()) << c.op;
      for (size_t o = 0; o < c.outputs; ++o)
        for (int64_t i = 0; i < (*plain)[o].size(); ++i) {
          const float f = (*fast)[o].data<float>()[i], p = (*plain)[o].data<float>()[i];
          // 1 ulp, or (outputs near 0 from scale * t + bias cancelling) 1e-12 absolute.
          if (std::fabs(f - p) > 1e-12f) {
            EXPECT_LE(Ulps(f, p), 1) << c.op << " n " << n << " out " << o << " [" << i << "]";
          }
        }
    }
  }
  // The moments directly, against a sequential double sum (another order):
  // within n * 2^-52 of the sum of magnitudes.
  std::vector<float> x = Inputs(1001, -100, 100, 3);
  for (float& v : x) if (!std::isfinite(v)) v = 1;
  double s = 0, q = 0, ws = 0, wq = 0, wa = 0;
  VecRowMoments(x.data(), 1001, &s, &q);
  for (float v : x) ws += v, wq += double(v) * v, wa += std::fabs(double(v));
  EXPECT_NEAR(s, ws, 1001 * 0x1p-52 * wa);
  EXPECT_NEAR(q, wq, 1001 * 0x1p-52 * wq);
  VecRowMoments(x.data(), 0, &s, &q);
  EXPECT_EQ(s, 0.0);
  EXPECT_EQ(q, 0.0);
}

// The row reductions against the plain sequential loops: max/min exactly,
// sums (double lanes, another order) within n * 2^-52 of the sum of magnitudes.
TEST_P(VecMath, RowReductionsMatchThePlainLoops) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 100003}) {
    std::vector<float> x = Inputs(n, -3e3f, 3e3f, uint32_t(n + 11));
    // Finite rows (Inputs places inf and NaN among its specials): replace those.
    for (float& v : x) if (!std::isfinite(v)) v = 0.5f;
    double sum = 0, abs = 0, sq = 0;
    float max = -inf, min = inf;
    for (float v : x) {
      sum += double(v), abs += std::fabs(double(v)), sq += double(v) * double(v);
      max = std::max(max, v), min = std::min(min, v);
    }
    const double eps = double(n + 1) * 0x1p-52;
    EXPECT_NEAR(VecSumRow(x.data(), n), sum, eps * abs) << n;
    EXPECT_NEAR(VecSumSquaresRow(x.data(), n), sq, eps * sq) << n;
    EXPECT_EQ(VecMaxRow(x.data(), n), max) << n;
    EXPECT_EQ(VecMinRow(x.data(), n), min) << n;
    if (n == 0) continue;
    // A NaN at any position (a vector lane or the tail) makes max and min NaN.
    for (int64_t at : {int64_t(0), n / 2, n - 1}) {
      std::vector<float> y = x;
      y[size_t(at)] = nan;
      EXPECT_TRUE(std::isnan(VecMaxRow(y.data(), n))) << n << " " << at;
      EXPECT_TRUE(std::isnan(VecMinRow(y.data(), n))) << n << " " << at;
      EXPECT_TRUE(std::isnan(VecSumRow(y.data(), n))) << n << " " << at;
      y[size_t(at)] = inf;
      EXPECT_EQ(VecMaxRow(y.data(), n), inf);
      EXPECT_EQ(VecSumRow(y.data(), n), double(inf));
      y[size_t(at)] = -inf;
      EXPECT_EQ(VecMinRow(y.data(), n), -inf);
      EXPECT_EQ(VecSumSquaresRow(y.data(), n), double(inf));
    }
  }
  EXPECT_EQ(VecMaxRow(nullptr, 0), -inf);
  EXPECT_EQ(VecMinRow(nullptr, 0), inf);
  EXPECT_EQ(VecSumRow(nullptr, 0), 0.0);
  // Max of -0 and 0 keeps the first seen, as the plain loop (> never takes an equal).
  std::vector<float> z(40, 0.0f);
  z[0] = -0.0f;
  EXPECT_EQ(VecMaxRow(z.data(), 40), 0.0f);
}

// Through the ops: the contiguous-row reductions on this target against the
// plain kernel (the baseline target), over odd and vector-width sizes.
TEST_P(VecMath, ReduceOpsMatchThePlainKernel) {
  for (int64_t n : {1, 15, 16, 17, 33, 257, 4099}) {
    const Tensor x = RandomUniform(DType::kFloat, {5, n}, uint32_t(n), -100, 100);
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2"}) {
      const std::vector<Tensor> inputs = {x, I({-1}, {1})};
      auto fast = RunOne(18, op, inputs);
      const CpuFeatures saved = RestrictCpuFeaturesForTesting(CpuTargetFeatures(CpuTarget::kBaseline));
      auto plain = RunOne(18, op, inputs);
      RestrictCpuFeaturesForTesting(saved);
      ASSERT_TRUE(fast.ok() && plain.ok()) << op;
      ASSERT_EQ(fast->size(), 5);
      for (int64_t i = 0; i < 5; ++i) {
        // The double sums differ in order only; rounded to float they agree within 1 ulp.
        EXPECT_LE(Ulps(fast->data<float>()[i], plain->data<float>()[i]), 1) << op << " " << n << " " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, VecMath, ::testing::Values(CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512),
                         [](const auto& info) { return std::string(CpuTargetName(info.param)); });

}  // namespace
}  // namespace onnx_mini
