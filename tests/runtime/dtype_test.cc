#include "runtime/dtype.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/cpu.h"

namespace onnx_mini {
namespace {

// Independent decoders written from the format definitions (sign, exponent
// field, mantissa field, bias, special encodings), not from dtype.cc.
double Reference8(uint8_t code, int exp_bits, int bias, bool fnuz, bool ieee) {
  const int man_bits = 7 - exp_bits;
  const bool negative = code & 0x80;
  const int e = (code >> man_bits) & ((1 << exp_bits) - 1);
  const int m = code & ((1 << man_bits) - 1);
  if (fnuz && code == 0x80) return NAN;
  if (ieee && e == (1 << exp_bits) - 1) return m ? NAN : (negative ? -INFINITY : INFINITY);
  if (!fnuz && !ieee && e == (1 << exp_bits) - 1 && m == (1 << man_bits) - 1) return NAN;  // E4M3FN
  double v = e == 0 ? m * std::pow(2.0, 1 - bias - man_bits)
                    : (1.0 + m / std::pow(2.0, man_bits)) * std::pow(2.0, e - bias);
  return negative ? -v : v;
}

void ExpectSame(double expected, double got, int code) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(got)) << "code " << code;
  } else {
    EXPECT_EQ(expected, got) << "code " << code;
    EXPECT_EQ(std::signbit(expected), std::signbit(got)) << "code " << code;
  }
}

TEST(DTypeTable, DescribesAllCodes) {
  for (int code = 1; code <= kMaxDTypeCode; ++code) {
    EXPECT_TRUE(IsValidDType(code));
    EXPECT_EQ(int(Info(DType(code)).dtype), code);
  }
  EXPECT_FALSE(IsValidDType(0));
  EXPECT_FALSE(IsValidDType(27));
  EXPECT_FALSE(IsValidDType(-3));
  EXPECT_STREQ(Name(DType::kFloat8E4M3FNUZ), "FLOAT8E4M3FNUZ");
  EXPECT_EQ(StorageBytes(DType::kInt4, 5), 3u);
  EXPECT_EQ(StorageBytes(DType::kUInt2, 5), 2u);
  EXPECT_EQ(StorageBytes(DType::kFloat4E2M1, 0), 0u);
  EXPECT_EQ(StorageBytes(DType::kDouble, 3), 24u);
  EXPECT_EQ(LowerName(DType::kBFloat16), "bfloat16");
}

TEST(Float8, EveryCodePointDecodes) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t b = uint8_t(c);
    ExpectSame(Reference8(b, 4, 7, false, false), ToFloat(Float8E4M3FN{b}), c);
    ExpectSame(Reference8(b, 4, 8, true, false), ToFloat(Float8E4M3FNUZ{b}), c);
    ExpectSame(Reference8(b, 5, 15, false, true), ToFloat(Float8E5M2{b}), c);
    ExpectSame(Reference8(b, 5, 16, true, false), ToFloat(Float8E5M2FNUZ{b}), c);
    const double e8m0 = c == 255 ? NAN : std::pow(2.0, c - 127);
    ExpectSame(e8m0, ToFloat(Float8E8M0{b}), c);
  }
}

TEST(Float8, EveryFiniteCodePointRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t b = uint8_t(c);
    if (!std::isnan(ToFloat(Float8E4M3FN{b}))) {
      EXPECT_EQ(ToFloat8E4M3FN(ToFloat(Float8E4M3FN{b})).bits, b);
    }
    if (!std::isnan(ToFloat(Float8E4M3FNUZ{b}))) {
      EXPECT_EQ(ToFloat8E4M3FNUZ(ToFloat(Float8E4M3FNUZ{b})).bits, b);
    }
    if (std::isfinite(ToFloat(Float8E5M2{b}))) {
      EXPECT_EQ(ToFloat8E5M2(ToFloat(Float8E5M2{b})).bits, b);
    }
    if (!std::isnan(ToFloat(Float8E5M2FNUZ{b}))) {
      EXPECT_EQ(ToFloat8E5M2FNUZ(ToFloat(Float8E5M2FNUZ{b})).bits, b);
    }
    if (c != 255) {
      EXPECT_EQ(ToFloat8E8M0(ToFloat(Float8E8M0{b})).bits, b);
    }
  }
}

TEST(Float8, RoundsToNearestEvenAndSaturates) {
  // E4M3FN around 1: step 0.125. 1.0625 ties to 1 (even), 1.1875 ties to 1.25.
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(1.0625)), 1.0f);
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(1.1875)), 1.25f);
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(1.07)), 1.125f);
  // Max 448; 464 ties to 448 (even mantissa), above it overflows.
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(464)), 448.0f);
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(1e6)), 448.0f);
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(-INFINITY)), -448.0f);
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat8E4M3FN(1e6, false))));
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat8E4M3FN(INFINITY, false))));
  EXPECT_EQ(ToFloat(ToFloat8E4M3FNUZ(INFINITY)), 240.0f);
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat8E4M3FNUZ(INFINITY, false))));
  EXPECT_EQ(ToFloat8E4M3FNUZ(-0.0).bits, 0);  // no negative zero
  EXPECT_EQ(ToFloat8E4M3FN(-0.0).bits, 0x80);
  EXPECT_EQ(ToFloat(ToFloat8E5M2(1e6)), 57344.0f);
  EXPECT_EQ(ToFloat(ToFloat8E5M2(1e6, false)), INFINITY);
  EXPECT_EQ(ToFloat(ToFloat8E5M2(-INFINITY, false)), -INFINITY);
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat8E5M2FNUZ(NAN))));
  EXPECT_EQ(ToFloat8E5M2FNUZ(NAN).bits, 0x80);
  // Smallest subnormal of E4M3FN is 2^-9; half of it ties to zero.
  EXPECT_EQ(ToFloat(ToFloat8E4M3FN(std::ldexp(1.0, -9))), std::ldexp(1.0f, -9));
  EXPECT_EQ(ToFloat8E4M3FN(std::ldexp(1.0, -10)).bits, 0);
  EXPECT_EQ(ToFloat8E4M3FN(std::ldexp(1.5, -10)).bits, 1);
}

TEST(Float8E8M0, RoundingModes) {
  EXPECT_EQ(ToFloat(ToFloat8E8M0(3.0f, E8M0Rounding::kUp)), 4.0f);
  EXPECT_EQ(ToFloat(ToFloat8E8M0(3.0f, E8M0Rounding::kDown)), 2.0f);
  EXPECT_EQ(ToFloat(ToFloat8E8M0(2.9f, E8M0Rounding::kNearest)), 2.0f);
  EXPECT_EQ(ToFloat(ToFloat8E8M0(3.1f, E8M0Rounding::kNearest)), 4.0f);
  EXPECT_EQ(ToFloat(ToFloat8E8M0(4.0f, E8M0Rounding::kUp)), 4.0f);
  EXPECT_EQ(ToFloat8E8M0(INFINITY).bits, 0xFE);
  EXPECT_EQ(ToFloat8E8M0(INFINITY, E8M0Rounding::kUp, false).bits, 0xFF);
  EXPECT_EQ(ToFloat8E8M0(NAN).bits, 0xFF);
  // Below float32's normal range: code 0 is 2^-127.
  EXPECT_EQ(ToFloat8E8M0(std::ldexp(1.0f, -127)).bits, 0);
  EXPECT_EQ(ToFloat8E8M0(std::ldexp(1.0f, -140)).bits, 0);
  EXPECT_EQ(ToFloat8E8M0(std::ldexp(1.5f, -127), E8M0Rounding::kUp).bits, 1);
  EXPECT_EQ(ToFloat8E8M0(std::ldexp(1.5f, -127), E8M0Rounding::kDown).bits, 0);
}

TEST(Float4E2M1, EveryCodePoint) {
  const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) {
    const float expected = (c & 8) ? -magnitudes[c & 7] : magnitudes[c & 7];
    EXPECT_EQ(Float4E2M1ToFloat(uint8_t(c)), expected) << c;
    EXPECT_EQ(std::signbit(Float4E2M1ToFloat(uint8_t(c))), bool(c & 8)) << c;
    EXPECT_EQ(ToFloat4E2M1(expected), c) << c;
  }
  EXPECT_EQ(ToFloat4E2M1(0.25), 0);    // tie to even (0)
  EXPECT_EQ(ToFloat4E2M1(0.75), 2);    // tie between 0.5 and 1 goes to 1
  EXPECT_EQ(ToFloat4E2M1(2.5), 4);     // tie between 2 and 3 goes to 2
  EXPECT_EQ(ToFloat4E2M1(5.0), 6);     // tie between 4 and 6 goes to 4
  EXPECT_EQ(ToFloat4E2M1(100), 7);     // saturates to 6
  EXPECT_EQ(ToFloat4E2M1(-INFINITY), 15);
  EXPECT_EQ(ToFloat4E2M1(NAN), 8);
}

TEST(Float16, ExactConversions) {
  EXPECT_EQ(ToFloat16(1.0).bits, 0x3C00);
  EXPECT_EQ(ToFloat16(-2.0).bits, 0xC000);
  EXPECT_EQ(ToFloat16(65504.0).bits, 0x7BFF);
  EXPECT_EQ(ToFloat16(65520.0).bits, 0x7C00);  // rounds to infinity
  EXPECT_EQ(ToFloat16(std::ldexp(1.0, -24)).bits, 0x0001);
  EXPECT_EQ(ToFloat16(1.0 + std::ldexp(1.0, -11)).bits, 0x3C00);  // tie to even
  EXPECT_EQ(ToFloat16(1.0 + 3 * std::ldexp(1.0, -11)).bits, 0x3C02);
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat16(NAN))));
  // Every finite float16 round-trips through float.
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = ToFloat(Float16{uint16_t(c)});
    if (std::isnan(f)) continue;
    ASSERT_EQ(ToFloat16(f).bits, c);
  }
}

TEST(Float16, FloatAndDoublePathsAgree) {
  // Around every float16 value: the value, both neighbours' midpoints and just off them.
  for (uint32_t c = 0; c < 0x7C00; ++c) {
    const double v = ToFloat(Float16{uint16_t(c)});
    const double next = ToFloat(Float16{uint16_t(c + 1)});
    for (double x : {v, (v + next) / 2, std::nextafter((v + next) / 2, 0.0),
                     std::nextafter((v + next) / 2, 1e9)}) {
      const float f = float(x);
      ASSERT_EQ(ToFloat16(f).bits, ToFloat16(double(f)).bits) << x;
      ASSERT_EQ(ToFloat16(-f).bits, ToFloat16(-double(f)).bits) << x;
    }
  }
  EXPECT_EQ(ToFloat16(65519.0f).bits, 0x7BFF);
  EXPECT_EQ(ToFloat16(65520.0f).bits, 0x7C00);
  EXPECT_EQ(ToFloat16(INFINITY).bits, 0x7C00);
  EXPECT_TRUE(std::isnan(ToFloat(ToFloat16(NAN))));
}

TEST(Float16, BulkConversionsMatchScalarOnEveryTarget) {
  // Every float16 code, and floats around every float16 value, in runs whose
  // lengths are not multiples of the vector width.
  std::vector<Float16> codes(65536);
  for (uint32_t c = 0; c < 65536; ++c) codes[c].bits = uint16_t(c);
  std::vector<float> floats;
  for (uint32_t c = 0; c < 0x7C00; ++c) {
    const float v = ToFloat(Float16{uint16_t(c)}), next = ToFloat(Float16{uint16_t(c + 1)});
    for (float x : {v, (v + next) / 2, std::nextafter((v + next) / 2, 0.0f), std::nextafter((v + next) / 2, 1e9f)})
      floats.insert(floats.end(), {x, -x});
  }
  floats.insert(floats.end(), {65519.0f, 65520.0f, 1e30f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-45f});
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);
    const char* name = CpuTargetName(t);
    std::vector<float> widened(codes.size());
    for (size_t i0 = 0; i0 < codes.size(); i0 += 1001)
      Float16ToFloat(codes.data() + i0, widened.data() + i0, int64_t(std::min<size_t>(1001, codes.size() - i0)));
    for (uint32_t c = 0; c < 65536; ++c) {
      const float want = ToFloat(codes[c]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(widened[c])) << name << " code " << c;
      } else {
        ASSERT_EQ(std::memcmp(&want, &widened[c], 4), 0) << name << " code " << c;
      }
    }
    std::vector<Float16> narrowed(floats.size());
    for (size_t i0 = 0; i0 < floats.size(); i0 += 1001)
      FloatToFloat16(floats.data() + i0, narrowed.data() + i0, int64_t(std::min<size_t>(1001, floats.size() - i0)));
    for (size_t i = 0; i < floats.size(); ++i) {
      const uint16_t want = ToFloat16(floats[i]).bits, got = narrowed[i].bits;
      if (std::isnan(floats[i])) {
        ASSERT_TRUE(std::isnan(ToFloat(Float16{got}))) << name;
      } else {
        ASSERT_EQ(got, want) << name << " " << floats[i];
      }
    }
  }
}

TEST(BFloat16, FloatAndDoublePathsAgree) {
  std::mt19937 rng(1);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(ToBFloat16(f).bits, ToBFloat16(double(f)).bits) << f;
  }
  EXPECT_TRUE(std::isnan(ToFloat(ToBFloat16(NAN))));
}

TEST(BFloat16, ExactConversions) {
  EXPECT_EQ(ToBFloat16(1.0).bits, 0x3F80);
  EXPECT_EQ(ToFloat(BFloat16{0x4049}), 3.140625f);
  EXPECT_EQ(ToBFloat16(1.0 + std::ldexp(1.0, -8)).bits, 0x3F80);      // tie to even
  EXPECT_EQ(ToBFloat16(1.0 + 3 * std::ldexp(1.0, -8)).bits, 0x3F82);
  EXPECT_EQ(ToBFloat16(INFINITY).bits, 0x7F80);
  EXPECT_TRUE(std::isnan(ToFloat(ToBFloat16(NAN))));
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = ToFloat(BFloat16{uint16_t(c)});
    if (std::isnan(f)) continue;
    ASSERT_EQ(ToBFloat16(f).bits, c);
  }
}

TEST(Packed, GetAndSetNibblesAndCrumbs) {
  uint8_t data[3] = {0, 0, 0};
  for (int i = 0; i < 5; ++i) SetPacked(DType::kInt4, data, i, uint32_t(i - 3));
  EXPECT_EQ(data[0], 0xED);  // element 0 (-3 = 0xD) in the low nibble, -2 = 0xE high
  for (int i = 0; i < 5; ++i) EXPECT_EQ(GetPacked(DType::kInt4, data, i), i - 3);
  EXPECT_EQ(GetPacked(DType::kUInt4, data, 0), 13);
  uint8_t crumbs[2] = {0, 0};
  for (int i = 0; i < 6; ++i) SetPacked(DType::kInt2, crumbs, i, uint32_t(i % 4 - 2));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(GetPacked(DType::kInt2, crumbs, i), i % 4 - 2);
  EXPECT_EQ(GetPacked(DType::kUInt2, crumbs, 0), 2);  // -2 as unsigned
}

TEST(VisitDType, MapsEveryCodeToItsType) {
  for (int code = 1; code <= kMaxDTypeCode; ++code) {
    const DType d = VisitDType(DType(code), [](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, void>) return DType::kUndefined;
      else return DTypeOf<T>::value;
    });
    EXPECT_EQ(int(d), code);
  }
}

}  // namespace
}  // namespace onnx_mini
