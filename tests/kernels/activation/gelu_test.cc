// kernels/activation/gelu.cc: the fast GELUs against their libm reference on
// every CPU target, with and without bias, lengths across the chunk size; and
// the reference against the formulas in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/activation/gelu.h"
#include "runtime/cpu.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

TEST(GeluKernel, FastMatchesTheReferenceOnEveryTarget) {
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    uint32_t seed = 3;
    for (GeluKind kind : {GeluKind::kErf, GeluKind::kTanh, GeluKind::kQuick})
      for (int64_t n : {1, 15, 16, 17, 511, 512, 513, 1200})
        for (int64_t bias_len : {0, 1, 7, 64}) {
          GeluProblem p;
          p.kind = kind;
          p.alpha = kind == GeluKind::kQuick && n % 2 ? -0.75f : 1.702f;
          p.bias_len = bias_len;
          std::vector<float> x = RandomFloats(n, seed++), bias = RandomFloats(std::max<int64_t>(bias_len, 1), seed++);
          for (float& v : x) v *= 8;  // [-8, 8]: both branches of erf and tanh, the sigmoid's tails
          std::vector<float> got(size_t(n), NAN), want(size_t(n), NAN);
          // In two ranges, the second starting off a bias period.
          const int64_t mid = n / 3;
          GeluF32(p, x.data(), bias.data(), got.data(), 0, mid);
          GeluF32(p, x.data(), bias.data(), got.data(), mid, n);
          GeluReference(p, x.data(), bias.data(), want.data(), 0, n);
          for (int64_t i = 0; i < n; ++i)
            ASSERT_NEAR(got[size_t(i)], want[size_t(i)], 4e-7f + 1e-6f * std::fabs(want[size_t(i)]))
                << CpuTargetName(target) << " kind=" << int(kind) << " n=" << n << " bias_len=" << bias_len
                << " at " << i << " x=" << x[size_t(i)];
          // In place.
          std::vector<float> inplace = x;
          GeluF32(p, inplace.data(), bias.data(), inplace.data(), 0, n);
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(inplace[size_t(i)], got[size_t(i)]) << "in place at " << i;
        }
  }
}

TEST(GeluKernel, ReferenceIsTheFormula) {
  const std::vector<float> x = {-3, -1, -0.25f, 0, 0.5f, 2, 6};
  const std::vector<float> bias = {0.5f};
  for (GeluKind kind : {GeluKind::kErf, GeluKind::kTanh, GeluKind::kQuick}) {
    GeluProblem p;
    p.kind = kind;
    p.bias_len = 1;
    std::vector<float> y(x.size());
    GeluReference(p, x.data(), bias.data(), y.data(), 0, int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = double(x[i]) + 0.5;
      const double want = kind == GeluKind::kErf    ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                          : kind == GeluKind::kTanh ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                                                    : v / (1 + std::exp(-1.702 * v));
      EXPECT_NEAR(y[i], want, 1e-6 * (1 + std::fabs(want))) << int(kind) << " at " << v;
    }
  }
}

}  // namespace
}  // namespace onnx_mini
