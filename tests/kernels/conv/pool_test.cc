// kernels/conv/pool.cc: the row-wise max and average pools against their
// references on every CPU target (1-D to 3-D, strides 1, 2 and 3, dilations,
// pads up to windows over the pads alone, NaNs, the average's pads counted or
// not), and the references on hand-sized cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/conv/pool.h"
#include "runtime/cpu.h"
#include "tests/kernels/conv/window_util.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

TEST(PoolFloat, ReferencesAreTheWindowMaxAndMean) {
  // 1-D, length 5, kernel 2, stride 2, pads 1 and 1: windows {pad, 0}, {1, 2}, {3, 4}.
  PoolProblem p;
  p.planes = 1;
  p.in = {1, 1, 5};
  p.k = {1, 1, 2};
  p.s = {1, 1, 2};
  p.pb = {0, 0, 1};
  p.out = {1, 1, 3};
  const std::vector<float> x = {-1, 2, -3, 4, 0.5f};
  std::vector<float> y(3, NAN);
  MaxPoolFloatReference(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{-1, 2, 4}));
  // The averages, the pad counted or not; the end pad lies past the last window.
  p.pe = {0, 0, 1};
  AveragePoolFloatReference(p, false, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{-1, -0.5f, 4.5f / 2}));
  AveragePoolFloatReference(p, true, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{-0.5f, -0.5f, 4.5f / 2}));
}

TEST(PoolFloat, FastMatchesTheReferenceOnEveryTarget) {
  struct Case {
    int64_t planes;
    std::array<int64_t, 3> in, k, s, d, pb, pe;
  };
  const Case cases[] = {
      {24, {1, 72, 32}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},  // the wake-word model's
      {48, {1, 32, 16}, {1, 1, 2}, {1, 1, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {5, {1, 1, 37}, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1}, {0, 0, 1}},    // 1-D, stride 1, pads
      {3, {1, 9, 11}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},    // 3x3 stride 2 pads 1
      {2, {1, 13, 17}, {1, 2, 3}, {1, 3, 3}, {1, 2, 2}, {0, 1, 2}, {0, 0, 1}},   // dilations, stride 3
      {2, {1, 4, 3}, {1, 3, 3}, {1, 1, 1}, {1, 1, 2}, {0, 2, 2}, {0, 2, 2}},     // kernel past the input
      {3, {1, 7, 9}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},     // 2x2 stride 2 over pads
      {2, {4, 3, 10}, {2, 1, 2}, {2, 1, 2}, {1, 1, 1}, {1, 0, 0}, {1, 0, 0}},    // 3-D, a pair's rows in dim 0
      {2, {3, 5, 6}, {2, 2, 2}, {2, 1, 2}, {1, 1, 1}, {1, 0, 1}, {0, 1, 0}},     // 3-D
      {4, {1, 1, 1}, {1, 1, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}},     // windows over the pads alone
      {3, {1, 1, 50}, {1, 1, 50}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},   // a global pool
  };
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    uint32_t seed = 5;
    for (const Case& c : cases)
      for (bool nans : {false, true})
        for (int threads : {1, 2}) {
          PoolProblem p;
          p.planes = c.planes;
          p.in = c.in;
          p.k = c.k;
          p.s = c.s;
          p.d = c.d;
          p.pb = c.pb;
          p.pe = c.pe;
          for (size_t j = 0; j < 3; ++j) p.out[j] = WindowOutDim(c.in[j], c.k[j], c.s[j], c.d[j], c.pb[j], c.pe[j]);
          const int64_t in_sz = p.planes * p.in[0] * p.in[1] * p.in[2];
          const int64_t out_sz = p.planes * p.out[0] * p.out[1] * p.out[2];
          std::vector<float> x = RandomFloats(in_sz, seed++);
          // NaNs: a window's first tap keeps one, a later one is passed over.
          if (nans)
            for (int64_t i = 0; i < in_sz; i += 7) x[size_t(i)] = NAN;
          // 0: max, 1: average, 2: average with the pads counted.
          for (int kind = 0; kind < 3; ++kind) {
            std::vector<float> want(size_t(out_sz), 1.f), got(size_t(out_sz), 2.f);
            if (kind == 0) {
              MaxPoolFloatReference(p, x.data(), want.data());
              MaxPoolFloat(p, x.data(), got.data(), threads);
            } else {
              AveragePoolFloatReference(p, kind == 2, x.data(), want.data());
              AveragePoolFloat(p, kind == 2, x.data(), got.data(), threads);
            }
            for (int64_t i = 0; i < out_sz; ++i) {
              const float g = got[size_t(i)], w = want[size_t(i)];
              ASSERT_TRUE((std::isnan(g) && std::isnan(w)) || std::memcmp(&g, &w, sizeof(float)) == 0)
                  << CpuTargetName(target) << " case " << (&c - cases) << " kind " << kind << " nans " << nans
                  << " threads " << threads << " at " << i << ": " << g << " want " << w;
            }
          }
        }
  }
}

// Random geometries (1-D to 3-D, kernels 1-5, strides 1-4, dilations 1-3,
// pads below the kernel, ceil_mode's extra output, 2x2 pair windows), with
// and without NaNs: the cases above pick shapes by hand, this covers the
// edge and interior splits they miss.
TEST(PoolFloat, RandomGeometriesMatchTheReferenceOnEveryTarget) {
  uint32_t state = 12345;
  auto draw = [&](int64_t lo, int64_t hi) {
    state = state * 1664525u + 1013904223u;
    return lo + int64_t((state >> 8) % uint32_t(hi - lo + 1));
  };
  int checked = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    PoolProblem p;
    p.planes = draw(1, 3);
    bool fits = true;
    for (size_t j = size_t(3 - draw(1, 3)); j < 3 && fits; ++j) {
      p.in[j] = draw(1, 12);
      p.k[j] = draw(1, 5);
      p.s[j] = draw(1, 4);
      p.d[j] = draw(1, 3);
      p.pb[j] = draw(0, std::min<int64_t>(p.k[j] - 1, 3));
      p.pe[j] = draw(0, std::min<int64_t>(p.k[j] - 1, 3));
      if (j == 2 && draw(0, 3) == 0) {  // the 2x2 pair loops
        p.k[j] = p.s[j] = 2;
        p.d[j] = 1;
        p.pb[j] = std::min<int64_t>(p.pb[j], 1);
        p.pe[j] = std::min<int64_t>(p.pe[j], 1);
      }
      const int64_t span = p.in[j] + p.pb[j] + p.pe[j] - (p.k[j] - 1) * p.d[j] - 1;
      fits = span >= 0;
      if (!fits) break;
      p.out[j] = span / p.s[j] + 1;
      // ceil_mode's rule (ops/nn/spatial.cc): one more window if it starts inside the input or its leading pad.
      if (draw(0, 1) && span % p.s[j] != 0 && p.out[j] * p.s[j] < p.in[j] + p.pb[j]) ++p.out[j];
    }
    if (!fits) continue;
    ++checked;
    const int64_t in_sz = p.planes * p.in[0] * p.in[1] * p.in[2];
    const int64_t out_sz = p.planes * p.out[0] * p.out[1] * p.out[2];
    std::vector<float> x = RandomFloats(in_sz, uint32_t(iter));
    if (iter % 3 == 0)
      for (int64_t i = 0; i < in_sz; i += 5) x[size_t(i)] = NAN;
    for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
      if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(target);
      for (int kind = 0; kind < 3; ++kind) {  // max, average, average with the pads counted
        std::vector<float> want(size_t(out_sz), 1.f), got(size_t(out_sz), 2.f);
        if (kind == 0) {
          MaxPoolFloatReference(p, x.data(), want.data());
          MaxPoolFloat(p, x.data(), got.data(), 1 + iter % 2);
        } else {
          AveragePoolFloatReference(p, kind == 2, x.data(), want.data());
          AveragePoolFloat(p, kind == 2, x.data(), got.data(), 1 + iter % 2);
        }
        for (int64_t i = 0; i < out_sz; ++i) {
          const float g = got[size_t(i)], w = want[size_t(i)];
          ASSERT_TRUE((std::isnan(g) && std::isnan(w)) || std::memcmp(&g, &w, sizeof(float)) == 0)
              << CpuTargetName(target) << " draw " << iter << " kind " << kind << " at " << i << ": " << g
              << " want " << w;
        }
      }
    }
  }
  EXPECT_GT(checked, 800);
}

}  // namespace
}  // namespace onnx_mini
