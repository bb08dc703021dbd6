// kernels/conv/depthwise.cc: the vectorized depthwise convolution against its
// reference on every CPU target, in each layout pair, 1-D and 2-D, strides,
// dilations, pads past the kernel, odd channel counts; and the reference
// against a plain double sum on a hand-sized case.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/conv/depthwise.h"
#include "runtime/cpu.h"
#include "tests/kernels/conv/window_util.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

TEST(DepthwiseConv, ReferenceIsTheDirectSum) {
  // 1-D, 2 channels, length 4, kernel 3, pads 1 and 1: y[c][o] = b[c] + sum_t x[c][o - 1 + t] w[c][t].
  DepthwiseProblem p;
  p.n = 1;
  p.c = 2;
  p.in = {1, 4};
  p.k = {1, 3};
  p.pb = {0, 1};
  p.out = {1, 4};
  const std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 2, 0}, w = {1, 10, 100, 0.5f, -1, 2}, b = {0.25f, -3};
  std::vector<float> y(8, NAN);
  DepthwiseConvReference(p, x.data(), w.data(), b.data(), y.data());
  const std::vector<float> want = {0.25f + 10 + 200, 0.25f + 1 + 20 + 300, 0.25f + 2 + 30 + 400, 0.25f + 3 + 40,
                                   -3 + 1 + 1, -3 - 0.5f - 0.5f + 4, -3 + 0.25f - 2, -3 + 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << i;
}

TEST(DepthwiseConv, FastMatchesTheReferenceOnEveryTarget) {
  struct Shape2 {
    int64_t n, c, in0, in1, k0, k1, s0, s1, d0, d1, p0, p1, q0, q1;  // q: end pads
  };
  const Shape2 shapes[] = {
      {1, 258, 1, 8, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2},    // silero's first layer
      {2, 16, 1, 4, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2},     // a kernel past the input
      {1, 33, 1, 37, 1, 3, 1, 2, 1, 1, 0, 1, 0, 0},    // stride 2
      {1, 7, 1, 19, 1, 3, 1, 1, 1, 3, 0, 3, 0, 2},     // dilation 3
      {2, 17, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // 2-D 3x3
      {1, 24, 12, 13, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},   // 2-D 5x5 stride 2
      {1, 5, 6, 7, 3, 3, 2, 1, 2, 1, 0, 1, 3, 0},      // uneven pads, row dilation
  };
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    uint32_t seed = 3;
    for (const Shape2& s : shapes)
      for (int layout = 0; layout < 4; ++layout)
        for (bool bias : {false, true})
          for (int threads : {1, 2}) {
            DepthwiseProblem p;
            p.n = s.n;
            p.c = s.c;
            p.in = {s.in0, s.in1};
            p.k = {s.k0, s.k1};
            p.s = {s.s0, s.s1};
            p.d = {s.d0, s.d1};
            p.pb = {s.p0, s.p1};
            p.out = {WindowOutDim(s.in0, s.k0, s.s0, s.d0, s.p0, s.q0),
                    WindowOutDim(s.in1, s.k1, s.s1, s.d1, s.p1, s.q1)};
            p.src_channels_last = layout & 1;
            p.dst_channels_last = layout & 2;
            const int64_t in_sz = p.n * p.c * p.in[0] * p.in[1], out_sz = p.n * p.c * p.out[0] * p.out[1];
            const std::vector<float> x = RandomFloats(in_sz, seed++), w = RandomFloats(p.c * s.k0 * s.k1, seed++),
                                     b = RandomFloats(p.c, seed++);
            std::vector<float> want(size_t(out_sz), NAN), got(size_t(out_sz), NAN);
            std::vector<float> scratch(size_t(DepthwiseScratch(p)), NAN);
            DepthwiseConvReference(p, x.data(), w.data(), bias ? b.data() : nullptr, want.data());
            DepthwiseConv(p, x.data(), w.data(), bias ? b.data() : nullptr, got.data(), scratch.data(), threads);
            for (int64_t i = 0; i < out_sz; ++i) {
              // The same taps in the same order; FMA may round each step once less.
              ASSERT_NEAR(got[size_t(i)], want[size_t(i)], 1e-5 * (1 + std::fabs(want[size_t(i)])))
                  << "target " << int(target) << " shape c " << s.c << " layout " << layout << " at " << i;
            }
          }
  }
}

}  // namespace
}  // namespace onnx_mini
