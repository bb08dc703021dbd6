// kernels/quant/int8_matmul.cc and gather_blocks.cc: the fast paths against
// their plain references, on every CPU target the machine has.
#include "kernels/quant/int8_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/quant/gather_blocks.h"
#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/quant_panels_int8.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"

namespace onnx_mini {
namespace {

std::vector<uint8_t> RandomBytes(int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (uint8_t& x : v) x = uint8_t(d(rng));
  return v;
}

TEST(Int8MatMul, PackedMatchesTheReferenceOnEveryTarget) {
  struct Case { int64_t m, k, n; };
  // Odd sizes around the panel (16 columns), the 4-row tile and the pairs of K.
  const std::vector<Case> cases = {{1, 1, 1}, {1, 7, 15}, {3, 17, 16}, {4, 32, 33}, {5, 33, 47}, {9, 100, 70},
                                   {1, 513, 300}};
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    std::mt19937 rng(7);
    for (const Case& c : cases)
      for (bool a_unsigned : {true, false})
        for (bool b_unsigned : {true, false})
          for (bool per_column : {false, true})
            for (int threads : {1, 3}) {
              const std::vector<uint8_t> a = RandomBytes(c.m * c.k, rng), b = RandomBytes(c.k * c.n, rng);
              std::vector<int32_t> zb;
              std::vector<float> scale, bias;
              std::uniform_real_distribution<float> u(0.001f, 0.05f);
              for (int64_t j = 0; j < (per_column ? c.n : 1); ++j) {
                zb.push_back(b_unsigned ? int32_t(rng() % 256) : int32_t(rng() % 256) - 128);
                scale.push_back(u(rng));
              }
              for (int64_t j = 0; j < c.n; ++j) bias.push_back(u(rng) - 0.02f);
              Int8MatMulArgs x;
              x.a = a.data();
              x.a_unsigned = a_unsigned;
              x.a_zero = a_unsigned ? 131 : -5;
              x.b_unsigned = b_unsigned;
              x.b_zero = zb.data();
              x.b_zero_per_column = per_column;
              x.scale = scale.data();
              x.scale_per_column = per_column;
              x.bias = per_column ? bias.data() : nullptr;
              x.m = c.m;
              x.k = c.k;
              x.n = c.n;
              std::vector<float> want(size_t(c.m * c.n)), got(size_t(c.m * c.n), NAN);
              x.c = want.data();
              Int8MatMulReference(x, b.data());
              std::vector<int8_t> packed(size_t(Int8PackedBSize(c.k, c.n)));
              Int8PackB(b.data(), b_unsigned, c.k, c.n, packed.data());
              std::vector<int16_t> work(size_t(Int8MatMulWorkspaceSize(c.m, c.k)));
              x.c = got.data();
              Int8MatMulPacked(x, packed.data(), work.data(), threads);
              for (size_t i = 0; i < want.size(); ++i)
                ASSERT_EQ(got[i], want[i]) << CpuTargetName(target) << " m=" << c.m << " k=" << c.k << " n=" << c.n
                                           << " a_unsigned=" << a_unsigned << " b_unsigned=" << b_unsigned
                                           << " per_column=" << per_column << " at " << i;
            }
  }
}

// B packed into 8-bit QuantPanels (PackInt8Panels) and multiplied by the
// integer-A panel kernel: exactly the integer reference, on every target
// (the VNNI ones too), int8 and uint8 on both sides, per-tensor and
// per-column scales and zero points, absent zero points, 1-4 rows and more.
TEST(Int8MatMul, PanelsEqualTheReferenceOnEveryTarget) {
  struct Case { int64_t m, k, n; };
  const std::vector<Case> cases = {{1, 1, 1}, {1, 7, 15}, {2, 17, 16}, {3, 32, 33}, {4, 33, 47}, {9, 100, 70},
                                   {1, 513, 300}, {130, 64, 40}};
  std::vector<CpuTarget> targets(std::begin(kCpuVnniTargets), std::end(kCpuVnniTargets));
  targets.insert(targets.end(), {CpuTarget::kAvx2, CpuTarget::kBaseline});
  for (CpuTarget target : targets) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    std::mt19937 rng(11);
    for (const Case& c : cases)
      for (bool a_unsigned : {true, false})
        for (bool b_unsigned : {true, false})
          for (int zero_form : {0, 1, 2}) {  // absent, per tensor, per column
            const bool per_column = zero_form == 2;
            const std::vector<uint8_t> a = RandomBytes(c.m * c.k, rng), b = RandomBytes(c.k * c.n, rng);
            std::vector<uint8_t> zb;
            std::vector<int32_t> zb32;
            std::vector<float> bscale, scale, bias;
            const float a_scale = 0.37f;
            std::uniform_real_distribution<float> u(0.001f, 0.05f);
            for (int64_t j = 0; j < (per_column ? c.n : 1); ++j) {
              zb.push_back(uint8_t(rng()));
              zb32.push_back(b_unsigned ? int32_t(zb.back()) : int32_t(int8_t(zb.back())));
              bscale.push_back(u(rng));
              scale.push_back(a_scale * bscale.back());
            }
            for (int64_t j = 0; j < c.n; ++j) bias.push_back(u(rng) - 0.02f);
            Int8MatMulArgs x;
            x.a = a.data();
            x.a_unsigned = a_unsigned;
            x.a_zero = a_unsigned ? 131 : -5;
            x.b_unsigned = b_unsigned;
            x.b_zero = zero_form ? zb32.data() : nullptr;
            x.b_zero_per_column = per_column;
            x.scale = scale.data();
            x.scale_per_column = per_column;
            x.bias = c.m % 2 ? bias.data() : nullptr;
            x.m = c.m;
            x.k = c.k;
            x.n = c.n;
            std::vector<float> want(size_t(c.m * c.n)), got(size_t(c.m * c.n), NAN);
            x.c = want.data();
            Int8MatMulReference(x, b.data());
            Int8PanelsSource src;
            src.b = b.data();
            src.b_unsigned = b_unsigned;
            src.k = c.k;
            src.n = c.n;
            src.zero = zero_form ? zb.data() : nullptr;
            src.zero_per_column = per_column;
            src.scale = bscale.data();
            src.scale_per_column = per_column;
            QuantPanelsBuffer panels;
            ASSERT_TRUE(PackInt8Panels(src, &panels));
            QuantPanelsIntA qa;
            qa.a = a.data();
            qa.a_unsigned = a_unsigned;
            qa.a_zero = x.a_zero;
            qa.a_scale = a_scale;
            qa.m = c.m;
            std::vector<uint8_t> work(size_t(QuantPanelsMatMulIntAWorkspace(c.m, panels.view)));
            QuantPanelsMatMulIntA(qa, panels.view, x.bias, got.data(), work.data(), c.m > 4 ? 2 : 1);
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_EQ(got[i], want[i]) << CpuTargetName(target) << " m=" << c.m << " k=" << c.k << " n=" << c.n
                                         << " a_unsigned=" << a_unsigned << " b_unsigned=" << b_unsigned
                                         << " zero_form=" << zero_form << " at " << i;
          }
  }
}

TEST(Int8MatMul, PanelBlocksAreKRoundedUpToEightUntil65536) {
  EXPECT_EQ(Int8PanelsBlock(1), 8);
  EXPECT_EQ(Int8PanelsBlock(1001), 1008);
  EXPECT_EQ(Int8PanelsBlock(65536), 65536);
  EXPECT_EQ(Int8PanelsBlock(65537), 4096);
}

TEST(Int8MatMul, DynamicQuantizationFollowsDynamicQuantizeLinear) {
  const std::vector<float> x = {-1.0f, 0.5f, 2.0f, 0.0f, -0.25f};
  float scale;
  uint8_t zero;
  DynamicQuantizeParams(x.data(), int64_t(x.size()), scale, zero);
  EXPECT_FLOAT_EQ(scale, 3.0f / 255.0f);
  EXPECT_EQ(zero, 85);  // round(1 / (3 / 255))
  std::vector<uint8_t> q(x.size());
  QuantizeU8(x.data(), int64_t(x.size()), scale, zero, q.data());
  EXPECT_EQ(q, (std::vector<uint8_t>{0, 127, 255, 85, 64}));  // 0.5 / scale = 42.5: to even
  // All zeros: scale 1 (onnxruntime's), zero point 0.
  const std::vector<float> z(3, 0.0f);
  DynamicQuantizeParams(z.data(), 3, scale, zero);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(zero, 0);
}

// The per-target builds of the range and the rounding (vectors of 16 and a
// scalar tail) give the scalar rule's values on every target: ties to even,
// NaN ignored by the range and quantized to 0, values past the range clamped.
TEST(Int8MatMul, DynamicQuantizationIsTheScalarRuleOnEveryTarget) {
  std::mt19937 rng(5);
  for (int64_t n : {1, 15, 16, 17, 100, 1024}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = float(int(rng() % 2001) - 1000) / 256.0f;
    if (n > 3) {
      x[1] = NAN;
      x[2] = 0.5f * float(n % 7);  // ties below
    }
    // The scalar rule.
    float lo = 0, hi = 0;
    for (float v : x) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const float want_scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const uint8_t want_zero = uint8_t(std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / want_scale))));
    // Scales that make ties (x / s = k + 0.5) and values past the range.
    for (float s : {want_scale, 1.0f / 256.0f, 0.5f}) {
      std::vector<uint8_t> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        float v = std::nearbyint(x[size_t(i)] / s) + float(want_zero);
        if (!(v >= 0)) v = 0;
        want[size_t(i)] = uint8_t(std::min(255.0f, v));
      }
      for (CpuTarget t : kCpuTargets) {
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        float scale;
        uint8_t zero;
        DynamicQuantizeParams(x.data(), n, scale, zero);
        ASSERT_EQ(scale, want_scale) << CpuTargetName(t) << " n=" << n;
        ASSERT_EQ(zero, want_zero) << CpuTargetName(t) << " n=" << n;
        std::vector<uint8_t> got(static_cast<size_t>(n));
        QuantizeU8(x.data(), n, s, zero, got.data());
        ASSERT_EQ(got, want) << CpuTargetName(t) << " n=" << n << " s=" << s;
      }
    }
  }
}

TEST(GatherBlocks, RowRunsMatchTheReference) {
  std::mt19937 rng(11);
  int count = 0;
  const BlockFormat* formats = BlockFormats(count);
  for (int fi = 0; fi < count; ++fi) {
    const BlockFormat& f = formats[fi];
    SCOPED_TRACE(f.name);
    // [outer 2, axis 5, inner 3 x 40]: gather axis 1; quantize axis last (qinner 1) or the middle one.
    for (bool last : {true, false})
      for (bool f16 : {false, true})
        for (bool zeros : {false, true}) {
          const int64_t outer = 2, axis = 5, mid = 3, last_dim = 40, block = 16;
          const int64_t elements = outer * axis * mid * last_dim;
          const std::vector<uint8_t> data = RandomBytes(elements * f.bits / 8 + 1, rng);
          GatherBlocksProblem p;
          p.format = &f;
          p.data = data.data();
          p.outer = outer;
          p.axis_dim = axis;
          p.inner = mid * last_dim;
          const std::vector<int64_t> idx = {4, 0, 2, 4};
          p.indices = idx.data();
          p.count = int64_t(idx.size());
          p.qdim = last ? last_dim : mid;
          p.qinner = last ? 1 : last_dim;
          p.block = last ? block : 2;
          const int64_t scales = elements / p.qdim * ((p.qdim + p.block - 1) / p.block);
          std::vector<float> sf(static_cast<size_t>(scales));
          std::vector<Float16> sh(static_cast<size_t>(scales));
          for (int64_t i = 0; i < scales; ++i) {
            sf[size_t(i)] = float(rng() % 100 + 1) / 64.0f;
            sh[size_t(i)] = ToFloat16(sf[size_t(i)]);
          }
          p.scales = f16 ? static_cast<const void*>(sh.data()) : sf.data();
          p.scale_f16 = f16;
          const std::vector<uint8_t> zp = RandomBytes(scales, rng);
          p.zeros = zeros ? zp.data() : nullptr;
          p.default_zero = f.nbits_zero;
          p.out_f16 = f16;
          const int64_t out_n = outer * p.count * p.inner;
          std::vector<float> want(static_cast<size_t>(out_n)), got(static_cast<size_t>(out_n), NAN);
          std::vector<Float16> want16(static_cast<size_t>(out_n)), got16(static_cast<size_t>(out_n));
          p.out = f16 ? static_cast<void*>(want16.data()) : want.data();
          GatherBlocksReference(p);
          p.out = f16 ? static_cast<void*>(got16.data()) : got.data();
          GatherBlocks(p, 3);
          for (int64_t i = 0; i < out_n; ++i) {
            if (f16) ASSERT_EQ(got16[size_t(i)].bits, want16[size_t(i)].bits) << i;
            else ASSERT_EQ(got[size_t(i)], want[size_t(i)]) << i;
          }
        }
  }
}

}  // namespace
}  // namespace onnx_mini
