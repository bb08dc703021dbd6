// The block-format table: every format's load, dequantize_row and dot_row
// against a plain loop over the runtime's own element access (GetPacked).
#include "kernels/quant/block_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace onnx_mini {
namespace {

TEST(BlockFormat, EveryFormatsRowsMatchAPlainLoop) {
  int count = 0;
  const BlockFormat* formats = BlockFormats(count);
  ASSERT_GE(count, 6);
  std::set<DType> seen;
  std::mt19937 rng(3);
  for (int fi = 0; fi < count; ++fi) {
    const BlockFormat& f = formats[fi];
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(seen.insert(f.storage).second) << "one row per storage type";
    EXPECT_EQ(FindBlockFormat(f.storage), &f);
    EXPECT_EQ(f.bits, Info(f.storage).bits);
    EXPECT_EQ(f.is_signed, Info(f.storage).kind == DTypeKind::kSigned);
    EXPECT_EQ(f.nbits_zero, f.is_signed ? 0.0f : float(1 << (f.bits - 1)));
    EXPECT_NE(f.zero_point_forms & kZeroAbsent, 0);
    EXPECT_NE(f.zero_point_forms & kZeroPacked, 0);
    const int64_t n = 301;  // elements: odd, so a 4-bit block may start mid-byte
    std::vector<uint8_t> data(size_t((n * f.bits + 7) / 8));
    for (uint8_t& b : data) b = uint8_t(rng());
    for (int64_t e = 0; e < n; ++e) ASSERT_EQ(f.load(data.data(), e), GetPacked(f.storage, data.data(), e)) << e;
    std::vector<float> x(static_cast<size_t>(n));
    std::uniform_real_distribution<float> uniform(-1, 1);
    for (float& v : x) v = uniform(rng);
    for (const auto& [first, len] : std::vector<std::pair<int64_t, int64_t>>{{0, n}, {1, 32}, {3, 17}, {64, 1}, {7, 0}}) {
      const float scale = 0.037f, zero = float(f.load(data.data(), 5));
      std::vector<float> got(size_t(len) + 1, -7.0f);
      f.dequantize_row(data.data(), first, len, scale, zero, got.data());
      double dot = 0;
      for (int64_t i = 0; i < len; ++i) {
        const float want = (float(GetPacked(f.storage, data.data(), first + i)) - zero) * scale;
        ASSERT_EQ(got[size_t(i)], want) << "element " << first + i;
        dot += double(want) * double(x[size_t(i)]);
      }
      EXPECT_EQ(got[size_t(len)], -7.0f) << "wrote past the row";
      EXPECT_NEAR(f.dot_row(data.data(), first, len, scale, zero, x.data()), dot, 1e-4 * (1 + std::fabs(dot)));
    }
  }
  for (DType d : {DType::kInt4, DType::kUInt4, DType::kInt8, DType::kUInt8, DType::kInt2, DType::kUInt2})
    EXPECT_NE(FindBlockFormat(d), nullptr) << LowerName(d);
  EXPECT_EQ(FindBlockFormat(DType::kInt16), nullptr);
  EXPECT_EQ(FindBlockFormat(DType::kFloat8E4M3FN), nullptr);
}

TEST(BlockFormat, Pow2BlockRule) {
  const BlockFormat& f = *FindBlockFormat(DType::kUInt4);
  EXPECT_TRUE(IsPow2BlockSize(f, 16));
  EXPECT_TRUE(IsPow2BlockSize(f, 128));
  EXPECT_FALSE(IsPow2BlockSize(f, 8));
  EXPECT_FALSE(IsPow2BlockSize(f, 48));
}

}  // namespace
}  // namespace onnx_mini
