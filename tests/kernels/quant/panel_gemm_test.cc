// kernels/quant/panel_gemm.cc: the many-rows products over QuantPanels
// (int8 through VNNI or the plain loops, the float path's forms (GEMM, tiles), the
// integer-A q8 form) against their references, on every CPU target the host
// has, 4- and 8-bit panels made with SetCode, odd K and N, blocks 16..256,
// zero points, 1..400 rows (every tile height, AVX2's row blocks), bias,
// threads.
#include "kernels/quant/panel_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant/nbits_matmul.h"
#include "runtime/cpu.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

// Random panels: codes, scales, zero points (fractional unless `integral`),
// code sums as a packer fills them.
QuantPanelsBuffer MakePanels(int bits, int64_t k, int64_t n, int64_t block, bool integral, uint32_t seed) {
  std::mt19937 rng(seed);
  QuantPanelsBuffer buf;
  EXPECT_TRUE(buf.Shape(bits, k, n, block));
  const QuantPanels& w = buf.view;
  const int top = (1 << bits) - 1;
  for (int64_t col = 0; col < n; ++col) {
    const int64_t at = (col / kQuantPanelCols) * w.k_blocks * kQuantPanelCols + col % kQuantPanelCols;
    const float col_scale = 0.002f + 0.001f * float(rng() % 50);
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      int32_t sum = 0;
      for (int64_t kk = b * block; kk < std::min(k, (b + 1) * block); ++kk) {
        const int code = int(rng() % uint32_t(top + 1));
        buf.SetCode(col, kk, code);
        sum += code;
      }
      const size_t i = size_t(at + b * kQuantPanelCols);
      buf.code_sums[i] = sum;
      // Integer B (q8): one scale a column; else one a block.
      buf.scales[i] = integral ? col_scale : 0.002f + 0.001f * float(rng() % 50);
      buf.zeros[i] = integral ? float(rng() % uint32_t(top + 1)) : float(rng() % uint32_t(top + 1)) + 0.25f;
    }
  }
  return buf;
}

std::vector<CpuTarget> HostTargets() {
  std::vector<CpuTarget> out;
  for (CpuTarget t : kCpuVnniTargets)
    if (CpuTargetUsable(t, HostCpuFeatures())) out.push_back(t);
  for (CpuTarget t : {CpuTarget::kAvx512, CpuTarget::kAvx2, CpuTarget::kBaseline})
    if (CpuTargetUsable(t, HostCpuFeatures())) out.push_back(t);
  return out;
}

struct Shape {
  int64_t k, n, block;
};
// Blocks of 1 to 32 groups of 8 k, 24 and 40 among them (a short last chunk
// of 3 and 1 groups in the AVX2 4-bit tile).
const std::vector<Shape> kShapes = {{16, 16, 16}, {37, 19, 16}, {100, 33, 32}, {129, 47, 64}, {256, 17, 256},
                                    {300, 50, 128}, {520, 31, 256}, {77, 21, 24},  {90, 18, 40}, {64, 17, 8}};

TEST(PanelGemm, Int8MatchesItsReferenceOnEveryTarget) {
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    EXPECT_EQ(QuantPanelsInt8Target(), t == CpuTarget::kAvx512 ? CpuTarget::kAvx2 : t);  // no AVX-512 int8 build without VNNI
    uint32_t seed = 100;
    for (int bits : {4, 8})
      for (const Shape& s : kShapes) {
        const QuantPanelsBuffer buf = MakePanels(bits, s.k, s.n, s.block, false, ++seed);
        for (int64_t m : {5, 6, 7, 17, 128, 200}) {  // 6, 7: tiles of 2 and 3 rows after 4
          if (m > 17 && s.k > 256) continue;  // the plain reference's time
          const std::vector<float> a = RandomFloats(m * s.k, seed + 7), bias = RandomFloats(s.n, seed + 8);
          const float* pb = m % 2 ? bias.data() : nullptr;
          std::vector<float> got(size_t(m * s.n), NAN), want(size_t(m * s.n));
          std::vector<uint8_t> ws(size_t(QuantPanelsMatMulManyWorkspace(m, buf.view, true)));
          QuantPanelsMatMulMany(a.data(), m, buf.view, true, pb, got.data(), ws.data(), m == 17 ? 2 : 1);
          QuantPanelsMatMulInt8Reference(a.data(), m, buf.view, pb, want.data());
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-5 * (double(s.k) + 1) + 1e-5 * std::fabs(want[i]))
                << CpuTargetName(t) << " bits=" << bits << " k=" << s.k << " n=" << s.n << " block=" << s.block
                << " m=" << m << " at " << i;
        }
      }
  }
}

// Every zero point one integer (MatMulNBits' default 8, or its packed zero
// points all alike): the zmm tiles take the zero point's term in int32; the
// same values as the reference, every target, with odd N (the last panel's
// padding columns hold zero 0) and a NaN row; 4-bit and 8-bit codes.
TEST(PanelGemm, Int8WithOneIntegerZeroPointMatchesItsReference) {
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    uint32_t seed = 150;
    for (int bits : {4, 8})
      for (const Shape& s : kShapes)
        for (float zero : {8.0f, 0.0f, 3.0f}) {
          QuantPanelsBuffer buf = MakePanels(bits, s.k, s.n, s.block, false, ++seed);
          for (int64_t col = 0; col < s.n; ++col)
            for (int64_t b = 0; b < buf.view.k_blocks; ++b)
              buf.zeros[size_t((col / kQuantPanelCols) * buf.view.k_blocks * kQuantPanelCols + b * kQuantPanelCols +
                               col % kQuantPanelCols)] = zero;
          for (int64_t m : {5, 17, 40}) {
            std::vector<float> a = RandomFloats(m * s.k, seed + 7);
            if (m == 17) a[size_t(3 * s.k + s.k / 2)] = NAN;
            std::vector<float> got(size_t(m * s.n), NAN), want(size_t(m * s.n));
            std::vector<uint8_t> ws(size_t(QuantPanelsMatMulManyWorkspace(m, buf.view, true)));
            QuantPanelsMatMulMany(a.data(), m, buf.view, true, nullptr, got.data(), ws.data(), m == 17 ? 2 : 1);
            QuantPanelsMatMulInt8Reference(a.data(), m, buf.view, nullptr, want.data());
            for (size_t i = 0; i < want.size(); ++i) {
              if (std::isnan(want[i])) {
                ASSERT_TRUE(std::isnan(got[i])) << CpuTargetName(t) << " at " << i;
                continue;
              }
              ASSERT_NEAR(got[i], want[i], 1e-5 * (double(s.k) + 1) + 1e-5 * std::fabs(want[i]))
                  << CpuTargetName(t) << " bits=" << bits << " zero=" << zero << " k=" << s.k << " n=" << s.n
                  << " block=" << s.block << " m=" << m << " at " << i;
            }
          }
        }
  }
}

// Each form of the float path (and the one kAuto picks) against the double
// reference, every target: float32-level (the digits take A within 2^-24 of
// its block's max |a|).
TEST(PanelGemm, FloatPathMatchesTheReference) {
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    uint32_t seed = 200;
    for (int bits : {4, 8})
      for (const Shape& s : kShapes) {
        const QuantPanelsBuffer buf = MakePanels(bits, s.k, s.n, s.block, false, ++seed);
        for (int64_t m : {5, 13, 128}) {
          const std::vector<float> a = RandomFloats(m * s.k, seed + 7), bias = RandomFloats(s.n, seed + 8);
          std::vector<float> want(size_t(m * s.n));
          QuantPanelsMatMulReference(a.data(), m, buf.view, bias.data(), want.data());
          for (QuantPanelsFloatPath path :
               {QuantPanelsFloatPath::kAuto, QuantPanelsFloatPath::kGemm, QuantPanelsFloatPath::kTile,
                QuantPanelsFloatPath::kDigits}) {
            std::vector<float> got(size_t(m * s.n), NAN);
            std::vector<uint8_t> ws(size_t(QuantPanelsMatMulManyWorkspace(m, buf.view, false, path)));
            QuantPanelsMatMulMany(a.data(), m, buf.view, false, bias.data(), got.data(), ws.data(), m == 13 ? 1 : 2,
                                  path);
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_NEAR(got[i], want[i], 1e-5 * (double(s.k) + 1) + 1e-5 * std::fabs(want[i]))
                  << CpuTargetName(t) << " path=" << int(path) << " bits=" << bits << " k=" << s.k << " n=" << s.n
                  << " m=" << m << " at " << i;
          }
        }
      }
  }
}

// The float tile (AVX-512, AVX2) over every remainder of its row tiles
// (rows 1..130: whole tiles of 6, a last of 1-5, one or two rows folded into
// the tile before; 193 and 400: AVX2's blocks of 192 rows), K from 5 across its chunks (odd, past 256 and 512), odd
// N (a partial last panel, one column), blocks 8..128 with fractional zero
// points, bias or none, 1 and 2 threads; against the double reference on
// every target.
TEST(PanelGemm, FloatTileMatchesTheReferenceOverRowsAndChunks) {
  const Shape shapes[] = {{5, 1, 16},    {64, 17, 8},    {23, 9, 16},   {257, 33, 32},
                          {300, 47, 64}, {777, 21, 128}, {520, 16, 16}};
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    uint32_t seed = 900;
    for (int bits : {4, 8})
      for (const Shape& s : shapes) {
        const QuantPanelsBuffer buf = MakePanels(bits, s.k, s.n, s.block, false, ++seed);
        for (int64_t m : {1, 2, 5, 6, 7, 8, 11, 12, 14, 31, 64, 127, 128, 130, 193, 400}) {
          const std::vector<float> a = RandomFloats(m * s.k, seed + uint32_t(m)), bias = RandomFloats(s.n, seed + 3);
          const float* b = m % 2 ? bias.data() : nullptr;
          std::vector<float> want(size_t(m * s.n));
          QuantPanelsMatMulReference(a.data(), m, buf.view, b, want.data());
          std::vector<float> got(size_t(m * s.n), NAN);
          const QuantPanelsFloatPath tile = QuantPanelsFloatPath::kTile;
          std::vector<uint8_t> ws(size_t(QuantPanelsMatMulManyWorkspace(m, buf.view, false, tile)));
          QuantPanelsMatMulMany(a.data(), m, buf.view, false, b, got.data(), ws.data(), 1 + int(m % 3 == 0), tile);
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-5 * (double(s.k) + 1) + 1e-5 * std::fabs(want[i]))
                << CpuTargetName(t) << " bits=" << bits << " k=" << s.k << " n=" << s.n << " block=" << s.block
                << " m=" << m << " at " << i;
        }
      }
  }
}

// The digits tiles run on AVX-512 VNNI, the float tile on AVX-512 (the VNNI
// target has it too) and AVX2 (AVX-VNNI has AVX2); elsewhere the float path
// is the GEMM's.
TEST(PanelGemm, FloatFormsFollowTheFeatures) {
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    EXPECT_EQ(QuantPanelsDigitsTarget(), t == CpuTarget::kAvx512Vnni ? t : CpuTarget::kBaseline) << CpuTargetName(t);
    const bool avx512 = t == CpuTarget::kAvx512Vnni || t == CpuTarget::kAvx512;
    const CpuTarget tile = avx512 ? CpuTarget::kAvx512 : t == CpuTarget::kBaseline ? t : CpuTarget::kAvx2;
    EXPECT_EQ(QuantPanelsFloatTileTarget(), tile) << CpuTargetName(t);
  }
}

// The integer sums at their largest: every code at its top and A's rows of
// one sign (each rounds to +-127). 4-bit: a lane of the AVX2 tile's chunk of
// 4 groups sums 16 products of 15 * 127 = 30480 in int16 (a fifth group
// would wrap), blocks of 32 (one chunk) and 64 (two). 8-bit: int32 sums of
// 255 * 127 over blocks up to 1024. Every target against the reference.
TEST(PanelGemm, Int8SumsAtTheirLargest) {
  for (int bits : {4, 8})
    for (int64_t block : {32, 64, 1024}) {
      if (bits == 4 && block > 64) continue;
      const int64_t m = 7, k = 2 * block, n = 16, top = (1 << bits) - 1;
      QuantPanelsBuffer buf;
      ASSERT_TRUE(buf.Shape(bits, k, n, block));
      for (int64_t col = 0; col < n; ++col)
        for (int64_t kk = 0; kk < k; ++kk) buf.SetCode(col, kk, int(top));
      std::fill(buf.code_sums.begin(), buf.code_sums.end(), int32_t(top * block));
      std::fill(buf.scales.begin(), buf.scales.end(), 0.01f);
      std::fill(buf.zeros.begin(), buf.zeros.end(), 0.0f);
      std::vector<float> a(size_t(m * k));
      for (int64_t r = 0; r < m; ++r)
        for (int64_t kk = 0; kk < k; ++kk) a[size_t(r * k + kk)] = (r % 2 ? -1.0f : 1.0f) * (1.0f + 0.01f * float(r));
      std::vector<float> want(size_t(m * n));
      QuantPanelsMatMulInt8Reference(a.data(), m, buf.view, nullptr, want.data());
      for (CpuTarget t : HostTargets()) {
        ScopedCpuFeaturesForTesting scope(t);
        std::vector<float> got(size_t(m * n), NAN);
        std::vector<uint8_t> ws(size_t(QuantPanelsMatMulManyWorkspace(m, buf.view, true)));
        QuantPanelsMatMulMany(a.data(), m, buf.view, true, nullptr, got.data(), ws.data(), 1);
        for (size_t i = 0; i < want.size(); ++i) {
          // 0.01 * k * top * 127 / 127 * (1 + r / 100) in size
          ASSERT_GT(std::fabs(want[i]), 0.0099 * double(k * top)) << i;
          ASSERT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i]))
              << CpuTargetName(t) << " bits " << bits << " block " << block << " at " << i;
        }
      }
    }
}

// A NaN in a row of A makes that row's outputs NaN (and only that row's), on
// every target, for the int8 product and each form of the float path.
TEST(PanelGemm, ANaNInARowMakesItsOutputsNaN) {
  const int64_t m = 9, k = 100, n = 40;
  const QuantPanelsBuffer buf = MakePanels(4, k, n, 32, false, 11);
  std::vector<float> a = RandomFloats(m * k, 12);
  a[size_t(4 * k + 37)] = NAN;
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    for (int form = 0; form < 4; ++form) {
      const bool int8 = form == 0;
      const QuantPanelsFloatPath path = form == 2 ? QuantPanelsFloatPath::kTile
                                        : form == 3 ? QuantPanelsFloatPath::kDigits
                                                    : QuantPanelsFloatPath::kGemm;
      std::vector<float> got(size_t(m * n), 0.0f);
      std::vector<uint8_t> ws(size_t(QuantPanelsMatMulManyWorkspace(m, buf.view, int8, path)));
      QuantPanelsMatMulMany(a.data(), m, buf.view, int8, nullptr, got.data(), ws.data(), 1, path);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c)
          ASSERT_EQ(std::isnan(got[size_t(r * n + c)]), r == 4)
              << CpuTargetName(t) << " form " << form << " row " << r << " col " << c;
    }
  }
}

// The integer-A form's sums are exact: equal to its reference, every target,
// uint8 and int8 A with zero points, rows on both sides of PanelGemvMaxRows
// (the decode passes up to it, the tiles beyond).
TEST(PanelGemm, IntegerAEqualsItsReferenceExactly) {
  const std::vector<Shape> shapes = {{8, 16, 8}, {37, 19, 40}, {100, 33, 104}, {1000, 45, 1000}};
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    uint32_t seed = 300;
    for (const Shape& s : shapes) {
      const QuantPanelsBuffer buf = MakePanels(8, s.k, s.n, s.block, true, ++seed);
      std::mt19937 rng(seed);
      for (int64_t m : {1, 2, 3, 4, 5, 16, 17, 128}) {
        for (bool a_unsigned : {true, false}) {
          std::vector<uint8_t> a(size_t(m * s.k));
          for (uint8_t& v : a) v = uint8_t(rng());
          QuantPanelsIntA x;
          x.a = a.data();
          x.a_unsigned = a_unsigned;
          x.a_zero = a_unsigned ? int32_t(rng() % 256) : int32_t(rng() % 256) - 128;
          x.a_scale = 0.0123f;
          x.m = m;
          const std::vector<float> bias = RandomFloats(s.n, seed + 8);
          const float* pb = m % 2 ? bias.data() : nullptr;
          std::vector<float> got(size_t(m * s.n), NAN), want(size_t(m * s.n));
          std::vector<uint8_t> ws(size_t(QuantPanelsMatMulIntAWorkspace(m, buf.view)));
          QuantPanelsMatMulIntA(x, buf.view, pb, got.data(), ws.data(), m == 17 ? 2 : 1);
          QuantPanelsMatMulIntAReference(x, buf.view, pb, want.data());
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " k=" << s.k << " n=" << s.n << " m=" << m
                                       << " unsigned=" << a_unsigned << " at " << i;
        }
      }
    }
  }
}

// Integer A over several blocks whose zero points differ (K past 65536 makes
// such panels; the cases above have one block): each block's corrections
// (its zero point times A's block sum, its short last length) and every
// tile height (17..22 rows: a last tile of 5, 6, 1, 2, 3, 4 rows), exact.
TEST(PanelGemm, IntegerAOverBlocksWithTheirOwnZeroPointsIsExact) {
  const std::vector<Shape> shapes = {{300, 37, 64}, {61, 19, 8}};
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    uint32_t seed = 400;
    for (const Shape& s : shapes) {
      const QuantPanelsBuffer buf = MakePanels(8, s.k, s.n, s.block, true, ++seed);
      std::mt19937 rng(seed);
      for (int64_t m = 17; m <= 22; ++m) {
        std::vector<uint8_t> a(size_t(m * s.k));
        for (uint8_t& v : a) v = uint8_t(rng());
        QuantPanelsIntA x;
        x.a = a.data();
        x.a_zero = int32_t(rng() % 256);
        x.a_scale = 0.0123f;
        x.m = m;
        std::vector<float> got(size_t(m * s.n), NAN), want(size_t(m * s.n));
        std::vector<uint8_t> ws(size_t(QuantPanelsMatMulIntAWorkspace(m, buf.view)));
        QuantPanelsMatMulIntA(x, buf.view, nullptr, got.data(), ws.data(), 1 + int(m % 2));
        QuantPanelsMatMulIntAReference(x, buf.view, nullptr, want.data());
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " k=" << s.k << " n=" << s.n << " m=" << m << " at " << i;
      }
    }
  }
}

// Integer A over 4-bit panels (not what PackInt8Panels makes): the plain
// loops, still exact.
TEST(PanelGemm, IntegerAOnFourBitPanelsIsExactToo) {
  const QuantPanelsBuffer buf = MakePanels(4, 100, 21, 104, true, 5);
  std::vector<uint8_t> a(size_t(3 * 100));
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 37);
  QuantPanelsIntA x;
  x.a = a.data();
  x.a_zero = 100;
  x.m = 3;
  for (CpuTarget t : HostTargets()) {
    ScopedCpuFeaturesForTesting scope(t);
    std::vector<float> got(size_t(3 * 21), NAN), want(size_t(3 * 21));
    std::vector<uint8_t> ws(size_t(QuantPanelsMatMulIntAWorkspace(3, buf.view)));
    QuantPanelsMatMulIntA(x, buf.view, nullptr, got.data(), ws.data(), 1);
    QuantPanelsMatMulIntAReference(x, buf.view, nullptr, want.data());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " at " << i;
  }
}

// K over 65536: blocks of 4096 sharing each column's scale, the int32 sum
// wrapping as onnxruntime's does.
// (2 rows take the decode passes, 19 the tiles.)
TEST(PanelGemm, IntegerAOverManyBlocksWrapsAsInt32) {
  const int64_t k = 70000, n = 17;
  QuantPanelsBuffer buf = MakePanels(8, k, n, 4096, true, 7);
  for (size_t i = 0; i < buf.zeros.size(); ++i) buf.zeros[i] = 0;  // large sums
  for (int64_t m : {2, 19}) {
    std::vector<uint8_t> a(size_t(m * k), 255);
    QuantPanelsIntA x;
    x.a = a.data();
    x.m = m;
    for (CpuTarget t : HostTargets()) {
      ScopedCpuFeaturesForTesting scope(t);
      std::vector<float> got(size_t(m * n), NAN), want(size_t(m * n));
      std::vector<uint8_t> ws(size_t(QuantPanelsMatMulIntAWorkspace(m, buf.view)));
      QuantPanelsMatMulIntA(x, buf.view, nullptr, got.data(), ws.data(), 1);
      QuantPanelsMatMulIntAReference(x, buf.view, nullptr, want.data());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << CpuTargetName(t) << " m=" << m << " at " << i;
    }
  }
}

// The int8 reference is the double product of A rounded by
// NBitsRoundRowsToInt8 (the rule MatMulNBits' accuracy level 4 uses).
TEST(PanelGemm, Int8ReferenceIsTheProductOfTheRoundedRows) {
  const QuantPanelsBuffer buf = MakePanels(4, 70, 21, 32, false, 9);
  const int64_t m = 3;
  const std::vector<float> a = RandomFloats(m * 70, 10);
  std::vector<float> rounded(a.size()), got(size_t(m * 21)), want(size_t(m * 21));
  NBitsRoundRowsToInt8(a.data(), m, 70, 32, rounded.data());
  QuantPanelsMatMulInt8Reference(a.data(), m, buf.view, nullptr, got.data());
  QuantPanelsMatMulReference(rounded.data(), m, buf.view, nullptr, want.data());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << i;
}

}  // namespace
}  // namespace onnx_mini
