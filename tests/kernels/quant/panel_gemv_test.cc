// kernels/quant/panel_gemv.cc and PackNBitsPanels: MatMulNBits' weights
// packed into panels give the native reference's product; the decode
// kernels (float on every CPU target, int8 on every VNNI target) match their
// references: bits 4 and 8, blocks 16..128, odd K (not a multiple of the
// block), N not a multiple of 16, every zero-point form, rows 1..5 and 16, an
// LM-head shape, threads 1 and 2; integer A (q8) exactly equal to the
// integer product of the raw B on every target.
#include "kernels/quant/panel_gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/quant_panels_int8.h"
#include "runtime/cpu.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

enum class Zero { kAbsent, kPacked, kFloat };

struct Weight {
  std::vector<uint8_t> data, zero_packed;
  std::vector<float> scales, zero_float;
  NBitsMatrix w;
  QuantPanelsBuffer panels;
};

// A random MatMulNBits weight and its panels.
std::unique_ptr<Weight> MakeWeight(int bits, int64_t k, int64_t n, int64_t block, Zero zero, uint32_t seed) {
  std::mt19937 rng(seed);
  auto x = std::make_unique<Weight>();
  NBitsMatrix& w = x->w;
  w.bits = bits;
  w.k = k;
  w.n = n;
  w.block_size = block;
  w.k_blocks = (k + block - 1) / block;
  x->data.resize(size_t(n * w.k_blocks * w.blob_bytes()));
  for (uint8_t& b : x->data) b = uint8_t(rng());
  x->scales = RandomFloats(n * w.k_blocks, seed + 1);
  for (float& s : x->scales) s = 0.01f + 0.05f * std::fabs(s);
  w.zero_default = float(1 << (bits - 1));
  if (zero == Zero::kPacked) {
    x->zero_packed.resize(size_t(n * w.zero_row_bytes()));
    for (uint8_t& b : x->zero_packed) b = uint8_t(rng());
    w.zero_packed = x->zero_packed.data();
  } else if (zero == Zero::kFloat) {
    x->zero_float = RandomFloats(n * w.k_blocks, seed + 2);
    for (float& z : x->zero_float) z = float(1 << (bits - 1)) + 2 * z;
    w.zero_float = x->zero_float.data();
  }
  w.data = x->data.data();
  w.scales = x->scales.data();
  EXPECT_TRUE(PackNBitsPanels(w, &x->panels));
  return x;
}

std::string Name(const NBitsMatrix& w, Zero zero) {
  return "bits=" + std::to_string(w.bits) + " k=" + std::to_string(w.k) + " n=" + std::to_string(w.n) +
         " block=" + std::to_string(w.block_size) + " zero=" + std::to_string(int(zero));
}

struct Shape {
  int64_t k, n, block;
};
// Odd K short of a block and not a multiple of it, N not a multiple of 16.
const std::vector<Shape> kShapes = {{16, 1, 16}, {7, 3, 16}, {33, 17, 16}, {100, 9, 32},
                                    {130, 65, 64}, {256, 40, 128}, {300, 31, 32}, {1000, 33, 32}};

TEST(PackNBitsPanels, PanelsHoldTheNativeWeight) {
  uint32_t seed = 1;
  for (int bits : {4, 8})
    for (const Shape& s : kShapes)
      for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
        const auto x = MakeWeight(bits, s.k, s.n, s.block, zero, seed++);
        const QuantPanels& p = x->panels.view;
        const NBitsMatrix& w = x->w;
        for (int64_t col = 0; col < w.n; ++col)
          for (int64_t b = 0; b < w.k_blocks; ++b) {
            const int64_t at = ((col / 16) * w.k_blocks + b) * 16 + col % 16;
            int32_t sum = 0;
            for (int64_t kk = b * w.block_size; kk < std::min(w.k, (b + 1) * w.block_size); ++kk) {
              const uint8_t* q = w.data + (col * w.k_blocks + b) * w.blob_bytes();
              const int64_t e = kk - b * w.block_size;
              const int code = bits == 8 ? q[e] : (q[e / 2] >> (4 * (e % 2))) & 15;
              ASSERT_EQ(p.Code(col, kk), code) << Name(w, zero) << " col " << col << " k " << kk;
              sum += code;
            }
            ASSERT_EQ(p.code_sums[at], sum);
            ASSERT_EQ(p.scales[at], w.scales[col * w.k_blocks + b]);
            ASSERT_EQ(p.zeros[at], w.Zero(col, b));
          }
        // And the products agree.
        const int64_t m = 2;
        const std::vector<float> a = RandomFloats(m * s.k, seed);
        std::vector<float> want(size_t(m * s.n)), got(want.size());
        NBitsMatMulReference(a.data(), m, w, nullptr, want.data());
        QuantPanelsMatMulReference(a.data(), m, p, nullptr, got.data());
        for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i]));
      }
}

TEST(PackNBitsPanels, RefusesTwoBitsAndGIdx) {
  const auto x = MakeWeight(4, 64, 5, 32, Zero::kAbsent, 3);
  NBitsMatrix w = x->w;
  QuantPanelsBuffer out;
  std::vector<int32_t> g_idx(64, 0);
  w.g_idx = g_idx.data();
  EXPECT_FALSE(PackNBitsPanels(w, &out));
  w.g_idx = nullptr;
  w.bits = 2;
  EXPECT_FALSE(PackNBitsPanels(w, &out));
  float zero = 0;
  EXPECT_TRUE(QuantPanelsZeroUniform(x->panels.view, &zero));
  EXPECT_EQ(zero, 8.f);
  const auto y = MakeWeight(4, 64, 5, 32, Zero::kPacked, 4);
  EXPECT_FALSE(QuantPanelsZeroUniform(y->panels.view, &zero));
}

// got against want, with a tolerance growing with K.
void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, int64_t k, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 2e-5 * (double(k) + 1) + 1e-5 * std::fabs(want[i])) << what << " at " << i;
}

TEST(PanelGemvFloat, MatchesTheReferenceOnEveryTarget) {
  uint32_t seed = 100;
  // The VNNI targets and AVX2 (4-bit codes) take A as base-256 digits (integer products).
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512, CpuTarget::kAvxVnni,
                           CpuTarget::kAvx512Vnni}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    for (int bits : {4, 8})
      for (const Shape& s : kShapes)
        for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
          const auto x = MakeWeight(bits, s.k, s.n, s.block, zero, seed++);
          const QuantPanels& p = x->panels.view;
          float uniform = 0;
          const bool is_uniform = QuantPanelsZeroUniform(p, &uniform);
          for (int64_t m : {1, 2, 3, 4, 5, 16}) {
            const std::vector<float> a = RandomFloats(m * s.k, seed), bias = RandomFloats(s.n, seed + 1);
            for (bool with_bias : {false, true})
              for (int threads : {1, 2}) {
                const float* pb = with_bias ? bias.data() : nullptr;
                std::vector<float> got(size_t(m * s.n), NAN), want(got.size());
                std::vector<float> ws(size_t(PanelGemvWorkspace(m, p)));
                PanelGemvFloat(a.data(), m, p, is_uniform ? &uniform : nullptr, pb, got.data(), ws.data(), threads);
                QuantPanelsMatMulReference(a.data(), m, p, pb, want.data());
                ExpectNear(got, want, s.k,
                           std::string(CpuTargetName(target)) + " " + Name(x->w, zero) + " m=" + std::to_string(m));
                if (is_uniform) {  // the zeros array read instead: the same
                  std::vector<float> read(got.size(), NAN);
                  PanelGemvFloat(a.data(), m, p, nullptr, pb, read.data(), ws.data(), threads);
                  ExpectNear(read, want, s.k, "zeros read");
                }
              }
          }
        }
  }
}

// The float product on VNNI targets and AVX2 takes A as 24-bit integers per block
// (three base-256 digits): each value within 2^-24 of its block's max |a|,
// float32's own rounding of the largest. Its error stays within that bound
// (plus float32 accumulation), an outlier in each block included.
TEST(PanelGemvFloat, IntegerDigitsKeepFloatAccuracy) {
  const auto x = MakeWeight(4, 1000, 37, 32, Zero::kPacked, 77);
  const QuantPanels& p = x->panels.view;
  const int64_t m = 3;
  std::vector<float> a = RandomFloats(m * p.k, 78);
  for (int64_t i = 0; i < m * p.k; i += 29) a[size_t(i)] *= 1000;  // outliers
  std::vector<float> want(size_t(m * p.n)), got(want.size(), NAN);
  QuantPanelsMatMulReference(a.data(), m, p, nullptr, want.data());
  for (CpuTarget t : {CpuTarget::kAvx2, CpuTarget::kAvxVnni, CpuTarget::kAvx512Vnni}) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);
    std::vector<float> ws(size_t(PanelGemvWorkspace(m, p)));
    PanelGemvFloat(a.data(), m, p, nullptr, nullptr, got.data(), ws.data(), 1);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < p.n; ++col) {
        // Bound: sum over blocks of 2^-24 max|a| sum |w|, and 2^-22 sum |a w|.
        double bound = 0, mag = 0;
        for (int64_t b = 0; b < p.k_blocks; ++b) {
          const int64_t at = ((col / 16) * p.k_blocks + b) * 16 + col % 16;
          double amax = 0, wsum = 0;
          for (int64_t kk = b * p.block; kk < std::min(p.k, (b + 1) * p.block); ++kk) {
            const double wv = std::fabs((p.Code(col, kk) - p.zeros[at]) * p.scales[at]);
            amax = std::max(amax, std::fabs(double(a[size_t(r * p.k + kk)])));
            wsum += wv;
            mag += wv * std::fabs(double(a[size_t(r * p.k + kk)]));
          }
          bound += std::ldexp(amax * wsum, -24);
        }
        const size_t i = size_t(r * p.n + col);
        ASSERT_LE(std::fabs(double(got[i]) - double(want[i])), bound + std::ldexp(mag, -22))
            << CpuTargetName(t) << " row " << r << " col " << col;
      }
  }
}

// The int8 product's builds: VNNI's, and AVX2's (VPMADDUBSW for 4-bit codes,
// VPMADDWD for 8-bit), which AVX-512 without VNNI runs too.
TEST(PanelGemvInt8, MatchesItsReferenceOnEveryTarget) {
  const CpuFeatures host = HostCpuFeatures();
  int ran = 0;
  for (CpuTarget t : {CpuTarget::kAvx2, CpuTarget::kAvx512, CpuTarget::kAvxVnni, CpuTarget::kAvx512Vnni}) {
    if (!CpuTargetUsable(t, host)) continue;
    ScopedCpuFeaturesForTesting scope(t);
    ASSERT_EQ(PanelGemvInt8Target(), t == CpuTarget::kAvx512 ? CpuTarget::kAvx2 : t) << CpuTargetName(t);
    ++ran;
    uint32_t seed = 500;
    for (int bits : {4, 8})
      for (const Shape& s : kShapes)
        for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
          const auto x = MakeWeight(bits, s.k, s.n, s.block, zero, ++seed);
          const QuantPanels& p = x->panels.view;
          float uniform = 0;
          const bool is_uniform = QuantPanelsZeroUniform(p, &uniform);
          for (int64_t m : {1, 2, 3, 4, 5, 16}) {
            const std::vector<float> a = RandomFloats(m * s.k, seed + 7), bias = RandomFloats(s.n, seed + 8);
            for (bool with_bias : {false, true})
              for (int threads : {1, 2}) {
                const float* pb = with_bias ? bias.data() : nullptr;
                std::vector<float> got(size_t(m * s.n), NAN), want(got.size()), read(got.size(), NAN);
                std::vector<float> ws(size_t(PanelGemvWorkspace(m, p)));
                PanelGemvInt8(a.data(), m, p, is_uniform ? &uniform : nullptr, pb, got.data(), ws.data(), threads);
                PanelGemvInt8Reference(a.data(), m, p, pb, want.data());
                const std::string what = std::string(CpuTargetName(t)) + " " + Name(x->w, zero) + " m=" + std::to_string(m);
                ExpectNear(got, want, s.k, what);
                PanelGemvInt8(a.data(), m, p, nullptr, pb, read.data(), ws.data(), threads);
                ExpectNear(read, want, s.k, what + " zeros read");
              }
          }
        }
  }
  if (ran == 0) GTEST_SKIP() << "no AVX2 on this CPU";
}

TEST(PanelGemvInt8, TheChainsTargetsRunTheAvx2Build) {
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);  // the chain's targets have no VNNI feature
    EXPECT_EQ(PanelGemvInt8Target(), t == CpuTarget::kBaseline ? CpuTarget::kBaseline : CpuTarget::kAvx2)
        << CpuTargetName(t);
  }
}

// The int8 quantizer the kernels share rounds as NBitsRoundRowsToInt8 does,
// ties to even included.
TEST(NBitsQuantizeBlockInt8, RoundsAsTheRowRule) {
  const std::vector<float> x = {127, -2.5f, 3.5f, 0.5f, -0.5f, 1.5f, 126.5f, -126.5f, 0.4f, -63.5f};
  std::vector<int8_t> q(x.size());
  int32_t sum = 0;
  const float scale = NBitsQuantizeBlockInt8(x.data(), int64_t(x.size()), q.data(), &sum);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(q, (std::vector<int8_t>{127, -2, 4, 0, 0, 2, 126, -126, 0, -64}));
  EXPECT_EQ(sum, 127 - 2 + 4 + 2 + 126 - 126 - 64);
  std::vector<float> rounded(x.size());
  NBitsRoundRowsToInt8(x.data(), 1, int64_t(x.size()), int64_t(x.size()), rounded.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(rounded[i], float(q[i]) * scale) << i;
}

// The panels' int8 reference is the native one (4 bits), and is the float
// product of A rounded to int8 (4 and 8 bits).
TEST(PanelGemvInt8, ReferenceIsTheNativeOneAndTheRoundedProduct) {
  for (int bits : {4, 8})
    for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
      const auto x = MakeWeight(bits, 200, 19, 64, zero, 41 + int(zero));
      const int64_t m = 3;
      const std::vector<float> a = RandomFloats(m * x->w.k, 9);
      std::vector<float> rounded(a.size()), want(size_t(m * x->w.n)), got(want.size()), native(want.size());
      NBitsRoundRowsToInt8(a.data(), m, x->w.k, x->w.block_size, rounded.data());
      NBitsMatMulReference(rounded.data(), m, x->w, nullptr, want.data());
      PanelGemvInt8Reference(a.data(), m, x->panels.view, nullptr, got.data());
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-5 * std::fabs(want[i])) << i;
      if (bits == 4) {
        NBitsMatMulInt8Reference(a.data(), m, x->w, nullptr, native.data());
        for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], native[i], 1e-5 + 1e-6 * std::fabs(want[i])) << i;
      }
    }
}

TEST(PanelGemv, LmHeadShape) {
  // A long N at a real K: panels split over the threads.
  const auto x = MakeWeight(4, 1024, 32000 + 7, 32, Zero::kAbsent, 5);
  const QuantPanels& p = x->panels.view;
  float uniform = 0;
  ASSERT_TRUE(QuantPanelsZeroUniform(p, &uniform));
  for (int64_t m : {1, 3}) {
    const std::vector<float> a = RandomFloats(m * p.k, 17), bias = RandomFloats(p.n, 18);
    std::vector<float> got(size_t(m * p.n), NAN), want(got.size());
    std::vector<float> ws(size_t(PanelGemvWorkspace(m, p)));
    QuantPanelsMatMulReference(a.data(), m, p, bias.data(), want.data());
    PanelGemvFloat(a.data(), m, p, &uniform, bias.data(), got.data(), ws.data(), 2);
    ExpectNear(got, want, p.k, "float lm head");
    if (PanelGemvInt8Target() != CpuTarget::kBaseline) {
      PanelGemvInt8Reference(a.data(), m, p, bias.data(), want.data());
      PanelGemvInt8(a.data(), m, p, &uniform, bias.data(), got.data(), ws.data(), 2);
      ExpectNear(got, want, p.k, "int8 lm head");
    }
  }
}

// Integer A (q8): the decode passes on every target the host has (AVX-512
// VNNI, AVX-VNNI, AVX2 without VNNI, plain loops) equal, bit for bit, the
// integer product of the unpacked B (int64 sums wrapped to int32, then
// float(sum) * (a_scale * b_scale) + bias in two roundings): rows 1..5 (the
// fifth a second pass), odd K and N, uint8 and int8 A and B, zero points per
// tensor (passed as uniform or read) and per column, threads 1 and 2.
TEST(PanelGemvIntA, EqualsTheIntegerProductOnEveryTarget) {
  struct Case {
    int64_t k, n;
  };
  const std::vector<Case> cases = {{4, 3}, {37, 19}, {100, 33}, {1000, 45}, {1024, 260}};
  std::vector<CpuTarget> targets;
  for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2, CpuTarget::kBaseline})
    if (CpuTargetUsable(t, HostCpuFeatures())) targets.push_back(t);
  ASSERT_FALSE(targets.empty());
  uint32_t seed = 900;
  for (const Case& cs : cases)
    for (bool b_unsigned : {false, true})
      for (bool zero_per_column : {false, true}) {
        std::mt19937 rng(++seed);
        const int64_t k = cs.k, n = cs.n;
        std::vector<uint8_t> b(size_t(k * n)), zb(size_t(zero_per_column ? n : 1));
        for (uint8_t& v : b) v = uint8_t(rng());
        for (uint8_t& v : zb) v = uint8_t(rng());
        std::vector<float> bs(size_t(zero_per_column ? n : 1));
        for (float& v : bs) v = 0.001f + float(rng() % 1000) * 1e-5f;
        Int8PanelsSource src;
        src.b = b.data();
        src.b_unsigned = b_unsigned;
        src.k = k;
        src.n = n;
        src.zero = zb.data();
        src.zero_per_column = zero_per_column;
        src.scale = bs.data();
        src.scale_per_column = zero_per_column;
        QuantPanelsBuffer buf;
        ASSERT_TRUE(PackInt8Panels(src, &buf));
        const QuantPanels& p = buf.view;
        float uniform = 0;
        const bool is_uniform = QuantPanelsZeroUniform(p, &uniform);
        ASSERT_EQ(is_uniform, !zero_per_column || n == 1);
        for (bool a_unsigned : {true, false})
          for (int64_t m : {1, 2, 3, 4, 5}) {
            std::vector<uint8_t> a(size_t(m * k));
            for (uint8_t& v : a) v = uint8_t(rng());
            QuantPanelsIntA x;
            x.a = a.data();
            x.a_unsigned = a_unsigned;
            x.a_zero = a_unsigned ? int32_t(rng() % 256) : int32_t(rng() % 256) - 128;
            x.a_scale = 0.0123f;
            x.m = m;
            const std::vector<float> bias = RandomFloats(n, seed + 8);
            const float* pb = m % 2 ? bias.data() : nullptr;
            // The integer product of the raw B.
            std::vector<float> want(size_t(m * n));
            for (int64_t r = 0; r < m; ++r)
              for (int64_t col = 0; col < n; ++col) {
                const auto value = [&](const uint8_t* v, int64_t i, bool u) {
                  return u ? int32_t(v[i]) : int32_t(int8_t(v[i]));
                };
                const int32_t za = x.a_zero, z = value(zb.data(), zero_per_column ? col : 0, b_unsigned);
                int64_t sum = 0;
                for (int64_t kk = 0; kk < k; ++kk)
                  sum += int64_t(value(a.data(), r * k + kk, a_unsigned) - za) *
                         int64_t(value(b.data(), kk * n + col, b_unsigned) - z);
                float y = float(int32_t(uint32_t(uint64_t(sum)))) * (x.a_scale * bs[zero_per_column ? size_t(col) : 0]);
                volatile float keep = y;  // two roundings, as the kernels
                y = keep;
                want[size_t(r * n + col)] = pb ? y + pb[col] : y;
              }
            std::vector<float> ref(want.size());
            QuantPanelsMatMulIntAReference(x, p, pb, ref.data());
            for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(ref[i], want[i]) << "reference at " << i;
            for (CpuTarget t : targets) {
              ScopedCpuFeaturesForTesting scope(t);
              ASSERT_EQ(PanelGemvIntATarget(), t);
              std::vector<uint8_t> ws(size_t(PanelGemvIntAWorkspace(m, p)));
              for (int threads : {1, 2})
                for (bool pass_uniform : {true, false}) {
                  if (pass_uniform && !is_uniform) continue;
                  std::vector<float> got(want.size(), NAN);
                  PanelGemvIntA(x, p, pass_uniform ? &uniform : nullptr, pb, got.data(), ws.data(), threads);
                  for (size_t i = 0; i < want.size(); ++i)
                    ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " k=" << k << " n=" << n << " m=" << m
                                               << " a_unsigned=" << a_unsigned << " b_unsigned=" << b_unsigned
                                               << " zero_per_column=" << zero_per_column << " threads=" << threads
                                               << " uniform=" << pass_uniform << " at " << i;
                }
            }
          }
      }
}

// 4-bit panels and blocks: the same loops (shared with the int8 decode),
// exact against the panels' integer reference.
TEST(PanelGemvIntA, FourBitPanelsAndManyBlocks) {
  std::vector<CpuTarget> targets;
  for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2, CpuTarget::kBaseline})
    if (CpuTargetUsable(t, HostCpuFeatures())) targets.push_back(t);
  for (int bits : {4, 8}) {
    // Integral zero points and one scale a column (what the integer-A product requires).
    QuantPanelsBuffer buf;
    const int64_t k = 300, n = 37, block = 64;
    ASSERT_TRUE(buf.Shape(bits, k, n, block));
    std::mt19937 rng{uint32_t(bits)};
    const QuantPanels& p = buf.view;
    for (int64_t col = 0; col < n; ++col) {
      const float scale = 0.01f + float(col) * 1e-4f, zero = float(rng() % (1u << bits));
      for (int64_t b = 0; b < p.k_blocks; ++b) {
        const int64_t at = ((col / 16) * p.k_blocks + b) * 16 + col % 16;
        int32_t sum = 0;
        for (int64_t kk = b * block; kk < std::min(k, (b + 1) * block); ++kk) {
          const int code = int(rng() % (1u << bits));
          buf.SetCode(col, kk, code);
          sum += code;
        }
        buf.scales[size_t(at)] = scale;
        buf.zeros[size_t(at)] = zero;
        buf.code_sums[size_t(at)] = sum;
      }
    }
    for (int64_t m : {1, 4, 5}) {
      std::vector<uint8_t> a(size_t(m * k));
      for (uint8_t& v : a) v = uint8_t(rng());
      QuantPanelsIntA x;
      x.a = a.data();
      x.a_zero = 77;
      x.a_scale = 0.5f;
      x.m = m;
      std::vector<float> want(size_t(m * n));
      QuantPanelsMatMulIntAReference(x, p, nullptr, want.data());
      for (CpuTarget t : targets) {
        ScopedCpuFeaturesForTesting scope(t);
        std::vector<uint8_t> ws(size_t(PanelGemvIntAWorkspace(m, p)));
        std::vector<float> got(want.size(), NAN);
        PanelGemvIntA(x, p, nullptr, nullptr, got.data(), ws.data(), 2);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " bits=" << bits << " m=" << m << " at " << i;
      }
    }
  }
}

// The largest products: every 4-bit code 15 against A at -128 (and +127),
// long blocks: the AVX2 build's int16 sums of 32 k (16 * 15 * 128 = 30720)
// must not saturate. Exact against the integer reference on every target.
TEST(PanelGemvIntA, FourBitExtremesAreExact) {
  QuantPanelsBuffer buf;
  const int64_t k = 512, n = 20, block = 256;
  ASSERT_TRUE(buf.Shape(4, k, n, block));
  const QuantPanels& p = buf.view;
  for (int64_t col = 0; col < n; ++col)
    for (int64_t b = 0; b < p.k_blocks; ++b) {
      const int64_t at = ((col / 16) * p.k_blocks + b) * 16 + col % 16;
      for (int64_t kk = b * block; kk < (b + 1) * block; ++kk) buf.SetCode(col, kk, 15);
      buf.scales[size_t(at)] = 1.0f;
      buf.zeros[size_t(at)] = 0.0f;
      buf.code_sums[size_t(at)] = int32_t(15 * block);
    }
  for (uint8_t fill : {uint8_t(0), uint8_t(255)}) {
    std::vector<uint8_t> a(size_t(2 * k), fill);
    QuantPanelsIntA x;
    x.a = a.data();
    x.a_zero = 128;  // qa = fill - 128: -128 or 127
    x.a_scale = 1.0f;
    x.m = 2;
    std::vector<float> want(size_t(2 * n));
    QuantPanelsMatMulIntAReference(x, p, nullptr, want.data());
    EXPECT_EQ(want[0], float(15 * k * (int(fill) - 128)));
    for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2, CpuTarget::kBaseline}) {
      if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(t);
      std::vector<uint8_t> ws(size_t(PanelGemvIntAWorkspace(2, p)));
      std::vector<float> got(want.size(), NAN);
      PanelGemvIntA(x, p, nullptr, nullptr, got.data(), ws.data(), 1);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " at " << i;
    }
  }
}

// A NaN in A makes every column of its row NaN, as the float product (and
// the reference) does: the VNNI targets' digits of A must not turn it into a
// finite number, nor the int8 products (NBitsRoundRowsToInt8 keeps it NaN).
TEST(PanelGemvFloat, ANaNInARowMakesItsOutputsNaNOnEveryTarget) {
  const auto x = MakeWeight(4, 64, 20, 32, Zero::kPacked, 7);
  const QuantPanels& p = x->panels.view;
  std::vector<float> a = RandomFloats(2 * 64, 8);
  a[5] = NAN;  // row 0, first block
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512, CpuTarget::kAvxVnni,
                           CpuTarget::kAvx512Vnni}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    std::vector<float> got(2 * 20, 0), want(got.size());
    std::vector<float> ws(size_t(PanelGemvWorkspace(2, p)));
    PanelGemvFloat(a.data(), 2, p, nullptr, nullptr, got.data(), ws.data(), 1);
    QuantPanelsMatMulReference(a.data(), 2, p, nullptr, want.data());
    for (int64_t j = 0; j < 20; ++j) {
      EXPECT_TRUE(std::isnan(want[size_t(j)]));
      EXPECT_TRUE(std::isnan(got[size_t(j)])) << CpuTargetName(target) << " column " << j << " = " << got[size_t(j)];
      EXPECT_FALSE(std::isnan(got[size_t(20 + j)])) << CpuTargetName(target) << " row 1";
    }
    // The many-rows int8 product (accuracy level 4's prefill) too.
    std::vector<uint8_t> many(size_t(QuantPanelsMatMulManyWorkspace(2, p, true)));
    std::vector<float> r(got.size(), 0);
    QuantPanelsMatMulMany(a.data(), 2, p, true, nullptr, r.data(), many.data(), 1);
    for (int64_t j = 0; j < 20; ++j) {
      EXPECT_TRUE(std::isnan(r[size_t(j)])) << "many " << CpuTargetName(target) << " column " << j << " = " << r[size_t(j)];
      EXPECT_FALSE(std::isnan(r[size_t(20 + j)])) << "many " << CpuTargetName(target) << " row 1";
    }
    if (PanelGemvInt8Target() != CpuTarget::kBaseline) {
      std::vector<float> q(got.size(), 0);
      PanelGemvInt8(a.data(), 2, p, nullptr, nullptr, q.data(), ws.data(), 1);
      for (int64_t j = 0; j < 20; ++j)
        EXPECT_TRUE(std::isnan(q[size_t(j)])) << "int8 " << CpuTargetName(target) << " column " << j << " = " << q[size_t(j)];
    }
  }
}

}  // namespace
}  // namespace onnx_mini
