// kernels/vec/elementwise.cc: each target's build against the plain loops,
// over sizes around the vector widths (odd tails), the special values (NaN,
// +-inf, +-0), every broadcast step, in place, and nothing written past n.
#include "kernels/vec/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "runtime/cpu.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::vector<float> Inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-8, 8);
  const float special[] = {0.0f, -0.0f, kNaN, kInf, -kInf, 3.0f, -3.0f, 1e-40f, -1e-40f, 2.5f, -2.5f};
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = i % 5 == 2 ? special[size_t(i / 5) % 11] : u(rng);
  return x;
}

// Same bits, or both NaN; `ulps` allows that many units in the last place.
void ExpectSame(const std::vector<float>& got, const std::vector<float>& want, int ulps, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
      continue;
    }
    int32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    EXPECT_LE(std::abs(int64_t(a) - int64_t(b)), ulps) << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

class VecElementwise : public ::testing::TestWithParam<CpuTarget> {
 protected:
  void SetUp() override {
    if (!CpuTargetUsable(GetParam(), HostCpuFeatures()))
      GTEST_SKIP() << CpuTargetName(GetParam()) << " is not available here";
    scope_.emplace(GetParam());
    ASSERT_EQ(VecElementwiseTarget(), GetParam());
  }
  void TearDown() override { scope_.reset(); }
  std::optional<ScopedCpuFeaturesForTesting> scope_;
};

const std::vector<int64_t> kSizes = {0, 1, 7, 15, 16, 17, 31, 33, 63, 64, 65, 1001};

TEST_P(VecElementwise, ActivationsMatchThePlainLoops) {
  struct Case {
    VecActivationKind kind;
    VecActivationParams p;
    int ulps;
    const char* name;
  };
  VecActivationParams leaky, hs, clip, clip_crossed;
  leaky.alpha = 0.2f;
  hs.alpha = 0.2f;
  hs.beta = 0.5f;
  clip.lo = -1.5f;
  clip.hi = 6.0f;
  clip_crossed.lo = 2.0f;
  clip_crossed.hi = -1.0f;
  const Case cases[] = {{VecActivationKind::kRelu, {}, 0, "relu"},
                        {VecActivationKind::kLeakyRelu, leaky, 0, "leaky_relu"},
                        {VecActivationKind::kClip, clip, 0, "clip"},
                        {VecActivationKind::kClip, clip_crossed, 0, "clip lo > hi"},
                        {VecActivationKind::kHardSigmoid, hs, 0, "hard_sigmoid"},
                        {VecActivationKind::kHardSwish, {}, 0, "hard_swish"}};
  for (const Case& c : cases) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = Inputs(n, uint32_t(n + 1));
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 42.0f);
      VecActivationReference(c.kind, c.p, x.data(), want.data(), n);
      VecActivation(c.kind, c.p, x.data(), got.data(), n);
      EXPECT_EQ(got[size_t(n)], 42.0f) << c.name << ": wrote past the end";
      got.pop_back();
      ExpectSame(got, want, c.ulps, std::string(c.name) + " n=" + std::to_string(n));
      std::vector<float> in_place = x;  // x and y the same array
      VecActivation(c.kind, c.p, in_place.data(), in_place.data(), n);
      ExpectSame(in_place, want, c.ulps, std::string(c.name) + " in place");
    }
  }
  // The values the ops define, independent of the reference.
  const float x[] = {-2.0f, -0.0f, 0.0f, 3.0f, kNaN};
  float y[5];
  VecActivation(VecActivationKind::kLeakyRelu, leaky, x, y, 5);
  EXPECT_EQ(y[0], -0.4f);
  EXPECT_EQ(y[3], 3.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  VecActivation(VecActivationKind::kRelu, {}, x, y, 5);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[3], 3.0f);
  VecActivation(VecActivationKind::kClip, clip, x, y, 5);
  EXPECT_EQ(y[0], -1.5f);
  EXPECT_TRUE(std::isnan(y[4]));
  VecActivation(VecActivationKind::kHardSwish, {}, x, y, 5);
  EXPECT_FLOAT_EQ(y[0], -1.0f / 3.0f);
  EXPECT_EQ(y[3], 3.0f);
}

TEST_P(VecElementwise, BinaryMatchesThePlainLoopsAtEveryStep) {
  const VecBinaryKind kinds[] = {VecBinaryKind::kAdd, VecBinaryKind::kSub, VecBinaryKind::kMul,
                                 VecBinaryKind::kDiv, VecBinaryKind::kMax, VecBinaryKind::kMin};
  const int64_t steps[][2] = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
  for (VecBinaryKind kind : kinds) {
    for (const auto& st : steps) {
      for (int64_t n : kSizes) {
        const std::vector<float> a = Inputs(n + 1, uint32_t(3 * n + 1)), b = Inputs(n + 1, uint32_t(7 * n + 2));
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 42.0f);
        VecBinaryReference(kind, a.data(), st[0], b.data(), st[1], want.data(), n);
        VecBinary(kind, a.data(), st[0], b.data(), st[1], got.data(), n);
        EXPECT_EQ(got[size_t(n)], 42.0f) << "wrote past the end";
        got.pop_back();
        ExpectSame(got, want, 0, "kind " + std::to_string(int(kind)) + " steps " + std::to_string(st[0]) +
                                     std::to_string(st[1]) + " n=" + std::to_string(n));
      }
    }
  }
  // Max and Min: NaN in either operand wins; equal values keep a.
  const float a[] = {1.0f, kNaN, 2.0f, -0.0f, 0.0f, -kInf};
  const float b[] = {kNaN, 1.0f, 3.0f, 0.0f, -0.0f, 5.0f};
  float mx[6], mn[6];
  VecBinary(VecBinaryKind::kMax, a, 1, b, 1, mx, 6);
  VecBinary(VecBinaryKind::kMin, a, 1, b, 1, mn, 6);
  for (int i : {0, 1}) EXPECT_TRUE(std::isnan(mx[i]) && std::isnan(mn[i])) << i;
  EXPECT_EQ(mx[2], 3.0f);
  EXPECT_EQ(mn[2], 2.0f);
  EXPECT_TRUE(std::signbit(mx[3]));
  EXPECT_FALSE(std::signbit(mn[4]));
  EXPECT_EQ(mx[5], 5.0f);
  EXPECT_EQ(mn[5], -kInf);
}

TEST_P(VecElementwise, AnyNonFiniteFindsEachNaNAndInfinityWhereverItIs) {
  const float specials[] = {kNaN, -kNaN, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(64), int64_t(65), int64_t(200), int64_t(1000)}) {
    std::vector<float> x = Inputs(n, uint32_t(n));
    for (float& v : x)
      if (!std::isfinite(v)) v = 1.5f;
    x[0] = std::numeric_limits<float>::max();  // finite, the largest exponent below the special one
    x[size_t(n - 1)] = std::numeric_limits<float>::denorm_min();
    EXPECT_FALSE(VecAnyNonFinite(x.data(), n)) << n;
    EXPECT_FALSE(VecAnyNonFiniteReference(x.data(), n)) << n;
    for (int64_t at : {int64_t(0), n / 2, n - 1})
      for (float v : specials) {
        std::vector<float> y = x;
        y[size_t(at)] = v;
        EXPECT_TRUE(VecAnyNonFinite(y.data(), n)) << n << " at " << at << " " << v;
        EXPECT_TRUE(VecAnyNonFiniteReference(y.data(), n)) << n << " at " << at << " " << v;
        // Outside the range: not seen.
        EXPECT_FALSE(at == n - 1 && n > 1 && VecAnyNonFinite(y.data(), n - 1)) << n;
      }
  }
  EXPECT_FALSE(VecAnyNonFinite(nullptr, 0));
}

INSTANTIATE_TEST_SUITE_P(Targets, VecElementwise,
                         ::testing::Values(CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512),
                         [](const auto& info) { return std::string(CpuTargetName(info.param)); });

}  // namespace
}  // namespace onnx_mini
