// kernels/conv/direct.cc: the register-tiled channels-last convolution
// against its reference (AVX2: the only build; skipped where the host has
// none), 1-D and 2-D, strides, dilations, pads, output channels off the
// 16-lane panels, taps in several blocks, pixel counts off the 6-row tiles
// and past a group of tiles, every post-op (a NaN through Clip), threads;
// and the reference against a sum written out by hand.
#include "kernels/conv/direct.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/cpu.h"
#include "tests/kernels/conv/window_util.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

TEST(DirectConv, ReferenceIsTheDirectSum) {
  // 1-D, C 2, M 2, length 3, kernel 2, pad 1 at the start: pixel o reads x[o - 1] and x[o].
  DirectConvProblem p;
  p.n = 1, p.c = 2, p.m = 2;
  p.in = {1, 3};
  p.k = {1, 2};
  p.pb = {0, 1};
  p.out = {1, 3};
  // x channels last: (pixel, channel); w (m, c, k).
  const std::vector<float> x = {1, 2, 3, 4, 5, 6}, w = {1, 10, 100, 1000, -1, 0, 0, 2}, b = {0.5f, -1};
  const std::vector<float> z = {1, 2, 3, 4, 5, 6};
  std::vector<float> y(6, NAN);
  // y[o][0] = 0.5 + x[o-1][0] * 1 + x[o][0] * 10 + x[o-1][1] * 100 + x[o][1] * 1000;
  // y[o][1] = -1 - x[o-1][0] + x[o][1] * 2; then LeakyRelu(0.5), then + z.
  DirectConvReference(p, x.data(), w.data(), b.data(), z.data(),
                      {{DirectConvOp::kLeakyRelu, 0.5f, 0}, {DirectConvOp::kAdd, 0, 0}}, y.data());
  const float y00 = 0.5f + 10 + 2000, y01 = -1 + 4;
  const float y10 = 0.5f + 1 + 30 + 200 + 4000, y11 = -1 - 1 + 8;
  const float y20 = 0.5f + 3 + 50 + 400 + 6000, y21 = -1 - 3 + 12;
  const std::vector<float> want = {y00 + 1, y01 + 2, y10 + 3, y11 + 4, y20 + 5, y21 + 6};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << i;
}

TEST(DirectConv, SuitsOnlyConvsWithEnoughProductsAndFullPanels) {
  DirectConvProblem p;
  p.c = 48, p.m = 48, p.k = {3, 1};  // 144 products a tile, 3 whole panels
  EXPECT_TRUE(DirectConvSuits(p));
  p.c = 24, p.m = 24;  // 72 products a tile
  EXPECT_FALSE(DirectConvSuits(p));
  p.c = 96, p.m = 24, p.k = {3, 3};  // a panel of 16 and one of 8: 75%
  EXPECT_FALSE(DirectConvSuits(p));
  p.m = 72;  // 72 of 80 lanes: 90%
  EXPECT_TRUE(DirectConvSuits(p));
  p.c = 1, p.m = 256, p.k = {1, 512};  // one channel a tap
  EXPECT_FALSE(DirectConvSuits(p));
}

TEST(DirectConv, FastMatchesTheReference) {
  if (!CpuTargetUsable(CpuTarget::kAvx2, HostCpuFeatures())) GTEST_SKIP() << "no AVX2 here";
  ScopedCpuFeaturesForTesting scope(CpuTarget::kAvx2);
  ASSERT_TRUE(DirectConvAvailable());
  struct Case {
    int64_t n, c, m, in0, in1, k0, k1, s0, s1, d0, d1, p0, p1, q0, q1;  // q: end pads
  };
  const Case cases[] = {
      {1, 48, 48, 34, 16, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0},   // oww_embedding's 3x1
      {1, 72, 96, 14, 4, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},    // its 1x3, padded
      {2, 20, 17, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // 17 channels: a panel of 1; 2 images
      {1, 40, 5, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},    // 5 channels, stride 2
      {1, 64, 40, 15, 15, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // 225 pixels (past a group), 3 tap blocks
      {1, 300, 16, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // one tap a block
      {1, 3, 33, 1, 37, 1, 5, 1, 2, 1, 3, 0, 4, 0, 2},     // 1-D, dilation 3, stride 2, uneven pads
      {1, 16, 8, 6, 7, 3, 3, 2, 1, 2, 1, 0, 1, 3, 0},      // row dilation, pads past the input
      {3, 32, 32, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // one pixel an image
  };
  const std::vector<std::vector<DirectConvOp>> op_lists = {
      {},
      {{DirectConvOp::kLeakyRelu, 0.2f, 0}, {DirectConvOp::kClip, -0.4f, INFINITY}},
      {{DirectConvOp::kAdd, 0, 0}, {DirectConvOp::kRelu, 0, 0}},
      {{DirectConvOp::kLinear, 1.5f, -0.25f}, {DirectConvOp::kClip, 0, 6}, {DirectConvOp::kAdd, 0, 0}},
      {{DirectConvOp::kRelu, 0, 0}},
      {{DirectConvOp::kLeakyRelu, 0.1f, 0}},
  };
  uint32_t seed = 5;
  for (const Case& s : cases)
    for (size_t l = 0; l < op_lists.size(); ++l)
      for (bool bias : {false, true})
        for (int threads : {1, 2}) {
          DirectConvProblem p;
          p.n = s.n, p.c = s.c, p.m = s.m;
          p.in = {s.in0, s.in1};
          p.k = {s.k0, s.k1};
          p.s = {s.s0, s.s1};
          p.d = {s.d0, s.d1};
          p.pb = {s.p0, s.p1};
          p.out = {WindowOutDim(s.in0, s.k0, s.s0, s.d0, s.p0, s.q0),
                  WindowOutDim(s.in1, s.k1, s.s1, s.d1, s.p1, s.q1)};
          const int64_t in_sz = p.n * p.c * p.in[0] * p.in[1], out_sz = p.n * p.m * p.out[0] * p.out[1];
          std::vector<float> x = RandomFloats(in_sz, seed++);
          const std::vector<float> w = RandomFloats(p.m * p.c * s.k0 * s.k1, seed++), b = RandomFloats(p.m, seed++),
                                   z = RandomFloats(out_sz, seed++);
          if (l == 1) x[size_t(in_sz / 2)] = NAN;  // through Clip: NaN stays NaN
          std::vector<float> packed(size_t(DirectConvPackedSize(p)), NAN);
          DirectConvPack(p, w.data(), packed.data());
          std::vector<float> want(size_t(out_sz), NAN), got(size_t(out_sz), NAN);
          DirectConvReference(p, x.data(), w.data(), bias ? b.data() : nullptr, z.data(), op_lists[l], want.data());
          DirectConv(p, x.data(), packed.data(), bias ? b.data() : nullptr, z.data(), op_lists[l], got.data(), threads);
          for (int64_t i = 0; i < out_sz; ++i) {
            const float g = got[size_t(i)], r = want[size_t(i)];
            if (std::isnan(r)) {
              ASSERT_TRUE(std::isnan(g)) << "c " << s.c << " m " << s.m << " ops " << l << " at " << i;
              continue;
            }
            // The same taps and channels in the same order; FMA may round each step once less.
            ASSERT_NEAR(g, r, 1e-5 * (1 + std::fabs(r)) * std::sqrt(double(p.c * s.k0 * s.k1)))
                << "c " << s.c << " m " << s.m << " ops " << l << " threads " << threads << " at " << i;
          }
        }
}

TEST(DirectConv, NotAvailableBelowAvx2) {
  ScopedCpuFeaturesForTesting scope(CpuTarget::kBaseline);
  EXPECT_FALSE(DirectConvAvailable());
}

}  // namespace
}  // namespace onnx_mini
