// kernels/quant/nbits_matmul.cc: the native packed-weight product (2-bit
// decode in registers, many rows and g_idx through the GEMM over dequantized
// columns) against its double-accumulating reference, on every CPU target,
// bits 2/4/8, every zero-point form, g_idx, bias, odd K and N and K not a
// multiple of the block size. The panels' kernels: panel_gemv_test.cc.
#include "kernels/quant/nbits_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/cpu.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

// A random packed weight with its own storage.
struct Weight {
  std::vector<uint8_t> data, zero_packed;
  std::vector<float> scales, zero_float;
  std::vector<int32_t> g_idx;
  NBitsMatrix w;
};

enum class Zero { kAbsent, kPacked, kFloat };

Weight MakeWeight(int bits, int64_t k, int64_t n, int64_t block, Zero zero, bool g_idx, uint32_t seed) {
  std::mt19937 rng(seed);
  Weight x;
  NBitsMatrix& w = x.w;
  w.bits = bits;
  w.k = k;
  w.n = n;
  w.block_size = block;
  w.k_blocks = (k + block - 1) / block;
  x.data.resize(size_t(n * w.k_blocks * w.blob_bytes()));
  for (uint8_t& b : x.data) b = uint8_t(rng());
  x.scales = RandomFloats(n * w.k_blocks, seed + 1);
  for (float& s : x.scales) s = 0.01f + 0.05f * std::fabs(s);
  w.zero_default = float(1 << (bits - 1));
  if (zero == Zero::kPacked) {
    x.zero_packed.resize(size_t(n * w.zero_row_bytes()));
    for (uint8_t& b : x.zero_packed) b = uint8_t(rng());
    w.zero_packed = x.zero_packed.data();
  } else if (zero == Zero::kFloat) {
    x.zero_float = RandomFloats(n * w.k_blocks, seed + 2);
    for (float& z : x.zero_float) z = float(1 << (bits - 1)) + 2 * z;
    w.zero_float = x.zero_float.data();
  }
  if (g_idx) {
    for (int64_t kk = 0; kk < k; ++kk) x.g_idx.push_back(int32_t(rng() % uint32_t(w.k_blocks)));
    w.g_idx = x.g_idx.data();
  }
  w.data = x.data.data();
  w.scales = x.scales.data();
  return x;
}

void Check(const NBitsMatrix& w, int64_t m, bool with_bias, int threads, uint32_t seed, const std::string& what) {
  const std::vector<float> a = RandomFloats(m * w.k, seed), bias = RandomFloats(w.n, seed + 1);
  const float* pb = with_bias ? bias.data() : nullptr;
  std::vector<float> got(size_t(m * w.n), NAN), want(size_t(m * w.n));
  const int64_t ws = NBitsMatMulWorkspace(m, w);
  ASSERT_GE(ws, 0);
  std::vector<float> workspace(static_cast<size_t>(ws));
  NBitsMatMul(a.data(), m, w, pb, got.data(), workspace.data(), threads);
  NBitsMatMulReference(a.data(), m, w, pb, want.data());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 2e-5 * (double(w.k) + 1) + 1e-5 * std::fabs(want[i]))
        << what << " m=" << m << " at " << i;
}

TEST(NBitsMatMul, MatchesTheReferenceOnEveryTarget) {
  struct Shape { int64_t k, n, block; };
  // Odd K and N, K shorter than a block, K not a multiple of the block, the
  // smallest block (narrower than an AVX-512 group of 2-bit codes).
  const std::vector<Shape> shapes = {{16, 1, 16}, {7, 3, 16}, {33, 17, 16}, {100, 9, 32},
                                     {130, 65, 64}, {256, 40, 128}, {300, 31, 32}};
  uint32_t seed = 1;
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    for (int bits : {2, 4, 8})
      for (const Shape& s : shapes)
        for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
          const Weight x = MakeWeight(bits, s.k, s.n, s.block, zero, false, seed++);
          const std::string what = std::string(CpuTargetName(target)) + " bits=" + std::to_string(bits) +
                                   " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) +
                                   " block=" + std::to_string(s.block) + " zero=" + std::to_string(int(zero));
          for (int64_t m : {1, 2, 3, 4, 5, 11, 20})
            for (bool bias : {false, true}) Check(x.w, m, bias, m % 2 ? 1 : 3, seed++, what);
        }
  }
}

TEST(NBitsMatMul, GIdxChoosesEachColumnsBlock) {
  for (int bits : {2, 4, 8})
    for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
      const Weight x = MakeWeight(bits, 70, 13, 16, zero, true, 7u + uint32_t(bits));
      ASSERT_FALSE(NBitsGIdxIsTrivial(x.w.g_idx, x.w.k, x.w.block_size));
      for (int64_t m : {1, 4, 6}) Check(x.w, m, true, 2, 99, "g_idx bits=" + std::to_string(bits));
    }
  std::vector<int32_t> trivial;
  for (int kk = 0; kk < 70; ++kk) trivial.push_back(kk / 32);
  EXPECT_TRUE(NBitsGIdxIsTrivial(trivial.data(), 70, 32));
}

TEST(NBitsMatMul, LmHeadShapeSplitsOverThreads) {
  // The LM-head shape (a long N) at a small K: columns split over the pool.
  const Weight x = MakeWeight(4, 96, 5003, 32, Zero::kPacked, false, 5);
  for (int64_t m : {1, 3, 9, 19}) Check(x.w, m, true, 4, 17, "lm head");
}

TEST(NBitsMatMul, ReferenceDequantizesAsTheFormulaSays) {
  // One column, K = 16, 4-bit codes 0..15, scale 0.5, packed zero point 3.
  std::vector<uint8_t> data(8), zero = {3};
  for (int e = 0; e < 16; ++e) data[size_t(e / 2)] |= uint8_t(e << (4 * (e % 2)));
  const float scale = 0.5f;
  NBitsMatrix w;
  w.bits = 4;
  w.k = 16;
  w.n = 1;
  w.block_size = 16;
  w.k_blocks = 1;
  w.data = data.data();
  w.scales = &scale;
  w.zero_packed = zero.data();
  std::vector<float> a(16, 0.0f);
  a[5] = 1.0f;   // (5 - 3) * 0.5 = 1
  a[15] = 2.0f;  // (15 - 3) * 0.5 * 2 = 12
  const float bias = 0.25f;
  float c = 0, fast = 0;
  NBitsMatMulReference(a.data(), 1, w, &bias, &c);
  EXPECT_FLOAT_EQ(c, 13.25f);
  std::vector<float> ws(size_t(NBitsMatMulWorkspace(1, w)));
  NBitsMatMul(a.data(), 1, w, &bias, &fast, ws.data(), 1);
  EXPECT_FLOAT_EQ(fast, 13.25f);
}

TEST(NBitsMatMul, AccuracyLevelFourRoundsABlockToInt8) {
  // Blocks of 4: max |a| = 127 gives scale 1 (ties to even); an all-zero block stays zero.
  const std::vector<float> a = {127, -2.5f, 3.5f, 0.4f, 0, 0, 0, 0, -127, 63.5f};
  std::vector<float> out(a.size(), NAN);
  NBitsRoundRowsToInt8(a.data(), 1, 10, 4, out.data());
  EXPECT_EQ(out, (std::vector<float>{127, -2, 4, 0, 0, 0, 0, 0, -127, 64}));
  // Two rows of 3 (the last block short): scale = 0.5 / 127 for the second row.
  const std::vector<float> b = {0.25f, 0.5f, -0.5f, 0.5f, 0.25f, 0.001f};
  std::vector<float> rounded(b.size());
  NBitsRoundRowsToInt8(b.data(), 2, 3, 2, rounded.data());
  const float s = 0.5f / 127;
  EXPECT_FLOAT_EQ(rounded[4], std::nearbyint(0.25f * (127 / 0.5f)) * s);
  EXPECT_FLOAT_EQ(rounded[5], 0.001f);  // alone in its block: its own max
}

// The integer product's value is the float path's on rounded A (up to float
// rounding of the rounded values): the two references agree.
TEST(NBitsMatMulInt8, ReferenceIsTheRoundedFloatProduct) {
  for (Zero zero : {Zero::kAbsent, Zero::kPacked, Zero::kFloat}) {
    const Weight x = MakeWeight(4, 200, 11, 64, zero, false, 41 + int(zero));
    const int64_t m = 3;
    const std::vector<float> a = RandomFloats(m * x.w.k, 9);
    std::vector<float> rounded(a.size()), want(size_t(m * x.w.n)), got(want.size());
    NBitsRoundRowsToInt8(a.data(), m, x.w.k, x.w.block_size, rounded.data());
    NBitsMatMulReference(rounded.data(), m, x.w, nullptr, want.data());
    NBitsMatMulInt8Reference(a.data(), m, x.w, nullptr, got.data());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << i;
  }
}

}  // namespace
}  // namespace onnx_mini
