// kernels/norm/skip_norm.cc: the vectorized float32 skip norm against its
// reference on every CPU target, both forms, each optional input and output,
// row lengths around the vector widths, a broadcast skip; and the reference
// against a plain double computation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/norm/skip_norm.h"
#include "runtime/cpu.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

// The arguments of one call over test buffers; `with` bit 0: bias and beta,
// bit 1: the sum, mean and inv_std outputs.
template <class T>
SkipNormArgs<T> ArgsOf(const std::vector<T>& x, const std::vector<T>& s, const std::vector<T>& g,
                       const std::vector<T>& be, const std::vector<T>& bi, int with, std::vector<T>& y,
                       std::vector<T>& sum, std::vector<float>& mean, std::vector<float>& inv) {
  SkipNormArgs<T> a;
  a.input = x.data();
  a.skip = s.data();
  a.gamma = g.data();
  a.beta = with & 1 ? be.data() : nullptr;
  a.bias = with & 1 ? bi.data() : nullptr;
  a.output = y.data();
  a.sum = with & 2 ? sum.data() : nullptr;
  a.mean = with & 2 ? mean.data() : nullptr;
  a.inv_std = with & 2 ? inv.data() : nullptr;
  return a;
}

TEST(SkipNorm, FastMatchesTheReferenceOnEveryTarget) {
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    uint32_t seed = 7;
    for (int64_t n : {1, 7, 8, 9, 16, 33, 64, 67, 257})
      for (bool simplified : {false, true})
        for (int with = 0; with < 4; ++with) {  // bit 0: bias and beta; bit 1: the sum, mean and inv_std
          SkipNormProblem p;
          p.rows = 5;
          p.n = n;
          p.skip_rows = with & 1 ? 5 : 1;  // a broadcast skip row when there is no bias
          p.simplified = simplified;
          p.epsilon = 1e-5f;
          const std::vector<float> x = RandomFloats(p.rows * n, seed++), s = RandomFloats(p.skip_rows * n, seed++),
                                   g = RandomFloats(n, seed++), be = RandomFloats(n, seed++),
                                   bi = RandomFloats(n, seed++);
          std::vector<float> y[2], sum[2], mean[2], inv[2];
          for (int k = 0; k < 2; ++k) {
            y[k].assign(size_t(p.rows * n), NAN);
            sum[k].assign(size_t(p.rows * n), NAN);
            mean[k].assign(size_t(p.rows), NAN);
            inv[k].assign(size_t(p.rows), NAN);
            const SkipNormArgs<float> a = ArgsOf(x, s, g, be, bi, with, y[k], sum[k], mean[k], inv[k]);
            // Two calls over row ranges, as the op's ParallelFor splits them.
            for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 2}, {2, 5}})
              k == 0 ? SkipNormF32(p, a, r0, r1) : SkipNormReference(p, a, r0, r1);
          }
          const std::string where = std::string(CpuTargetName(target)) + " n=" + std::to_string(n) +
                                    " simplified=" + std::to_string(simplified) + " with=" + std::to_string(with);
          for (size_t i = 0; i < y[0].size(); ++i) {
            ASSERT_NEAR(y[0][i], y[1][i], 1e-5f * (1 + std::fabs(y[1][i]))) << where << " y at " << i;
            if (with & 2) {
              ASSERT_EQ(sum[0][i], sum[1][i]) << where << " sum at " << i;
            } else {
              ASSERT_TRUE(std::isnan(sum[0][i])) << where << ": the sum written unasked";
            }
          }
          for (size_t r = 0; r < size_t(p.rows); ++r) {
            if (!(with & 2)) continue;
            ASSERT_NEAR(mean[0][r], mean[1][r], 1e-6f) << where;
            ASSERT_NEAR(inv[0][r], inv[1][r], 1e-5f * inv[1][r]) << where;
            if (simplified) {
              ASSERT_EQ(mean[0][r], 0.0f) << where;
            }
          }
        }
  }
}

TEST(SkipNorm, Float16MatchesTheReferenceOnEveryTarget) {
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    uint32_t seed = 11;
    // Row lengths across the 512-element chunks.
    for (int64_t n : {1, 9, 40, 511, 512, 513, 1100})
      for (bool simplified : {false, true})
        for (int with = 0; with < 4; ++with) {
          SkipNormProblem p;
          p.rows = 3;
          p.n = n;
          p.skip_rows = with & 1 ? 3 : 1;
          p.simplified = simplified;
          p.epsilon = 1e-5f;
          const auto half = [&](int64_t count) {
            std::vector<Float16> h;
            for (float f : RandomFloats(count, seed++)) h.push_back(ToFloat16(f * 2));
            return h;
          };
          const std::vector<Float16> x = half(p.rows * n), s = half(p.skip_rows * n), g = half(n), be = half(n),
                                     bi = half(n);
          std::vector<Float16> y[2], sum[2];
          std::vector<float> mean[2], inv[2];
          for (int k = 0; k < 2; ++k) {
            y[k].assign(size_t(p.rows * n), Float16{0x7e00});
            sum[k].assign(size_t(p.rows * n), Float16{0x7e00});
            mean[k].assign(size_t(p.rows), NAN);
            inv[k].assign(size_t(p.rows), NAN);
            const SkipNormArgs<Float16> a = ArgsOf(x, s, g, be, bi, with, y[k], sum[k], mean[k], inv[k]);
            k == 0 ? SkipNormF16(p, a, 0, p.rows) : SkipNormReference(p, a, 0, p.rows);
          }
          const std::string where = std::string(CpuTargetName(target)) + " n=" + std::to_string(n) +
                                    " simplified=" + std::to_string(simplified) + " with=" + std::to_string(with);
          for (size_t i = 0; i < y[0].size(); ++i) {
            const float got = ToFloat(y[0][i]), want = ToFloat(y[1][i]);
            // One float16 ulp (2^-10 relative) where the order of the double sums tips a rounding.
            ASSERT_NEAR(got, want, std::fabs(want) * 1e-3f + 1e-7f) << where << " y at " << i;
            if (with & 2) {
              ASSERT_EQ(sum[0][i].bits, sum[1][i].bits) << where << " sum at " << i;
            } else {
              ASSERT_EQ(sum[0][i].bits, 0x7e00) << where << ": the sum written unasked";
            }
          }
          for (size_t r = 0; with & 2 && r < size_t(p.rows); ++r)
            ASSERT_NEAR(inv[0][r], inv[1][r], 1e-5f * inv[1][r]) << where;
        }
  }
}

TEST(SkipNorm, ReferenceIsTheFormula) {
  // One row of 4, LayerNorm form with everything: s = x + skip + bias.
  const std::vector<float> x = {1, 2, 3, 4}, s = {0.5f, 0, -1, 2}, bias = {0, 1, 0, -1}, g = {1, 2, 0.5f, -1},
                           be = {0, 0.25f, 0, 1};
  std::vector<float> y(4), sum(4), mean(1), inv(1);
  SkipNormProblem p;
  p.rows = 1;
  p.n = 4;
  p.skip_rows = 1;
  p.epsilon = 1e-3f;
  SkipNormArgs<float> a{x.data(), s.data(), g.data(), be.data(), bias.data(), y.data(), sum.data(), mean.data(),
                        inv.data()};
  SkipNormReference(p, a, 0, 1);
  const double v[4] = {1.5, 3, 2, 5};
  const double m = 11.5 / 4, var = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]) / 4 - m * m;
  const double is = 1 / std::sqrt(var + 1e-3);
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(sum[e], float(v[e]));
    EXPECT_NEAR(y[e], (v[e] - m) * is * g[e] + be[e], 1e-6);
  }
  EXPECT_NEAR(mean[0], m, 1e-6);
  EXPECT_NEAR(inv[0], is, 1e-6);
  // The simplified form: no mean, no beta.
  p.simplified = true;
  SkipNormReference(p, a, 0, 1);
  const double rms = 1 / std::sqrt((v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]) / 4 + 1e-3);
  for (int e = 0; e < 4; ++e) EXPECT_NEAR(y[e], v[e] * rms * g[e], 1e-6);
  EXPECT_EQ(mean[0], 0.0f);
  EXPECT_NEAR(inv[0], rms, 1e-6);
}

}  // namespace
}  // namespace onnx_mini
