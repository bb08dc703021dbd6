// RoundToPrecision: the one rounding to a float type's precision, as the
// IEEE narrowing conversion gives it, at the edges of each type's range.
#include "kernels/vec/round.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onnx_mini {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RoundToPrecision, FloatOverflowsOnlyPastHalfAUnitAboveTheMax) {
  const double max = double(std::numeric_limits<float>::max());  // 2^128 - 2^104
  for (double sign : {1.0, -1.0}) {
    EXPECT_EQ(RoundToPrecision(DType::kFloat, sign * max), sign * max);
    // Above the max by less than half a unit: rounds down to the max (the
    // old flex and linear-attention helpers gave infinity here).
    EXPECT_EQ(RoundToPrecision(DType::kFloat, sign * (max + 0x1p100)), sign * max);
    EXPECT_EQ(RoundToPrecision(DType::kFloat, sign * std::nextafter(max + 0x1p103, 0.0)), sign * max);
    // Half a unit above: the tie goes to even, 2^128, which is infinity.
    EXPECT_EQ(RoundToPrecision(DType::kFloat, sign * (max + 0x1p103)), sign * kInf);
    EXPECT_EQ(RoundToPrecision(DType::kFloat, sign * 1e300), sign * kInf);
    EXPECT_EQ(RoundToPrecision(DType::kFloat, sign * kInf), sign * kInf);
    EXPECT_EQ(RoundToPrecision<float>(sign * 1e300), sign * kInf);
  }
  EXPECT_TRUE(std::isnan(RoundToPrecision(DType::kFloat, std::nan(""))));
  EXPECT_EQ(RoundToPrecision(DType::kFloat, 1.0 + 0x1p-30), 1.0);
  EXPECT_EQ(RoundToPrecision(DType::kFloat, 1.0 + 0x1p-23), 1.0 + 0x1p-23);
  EXPECT_EQ(RoundToPrecision(DType::kFloat, 1e-46), 0.0);  // below the smallest subnormal's half
}

TEST(RoundToPrecision, SixteenBitTypesOverflowAsTheirConversions) {
  for (double sign : {1.0, -1.0}) {
    // float16: max 65504, its unit there 32: 65520 is the tie (to even: infinity).
    EXPECT_EQ(RoundToPrecision(DType::kFloat16, sign * 65519.0), sign * 65504.0);
    EXPECT_EQ(RoundToPrecision(DType::kFloat16, sign * 65520.0), sign * kInf);
    EXPECT_EQ(RoundToPrecision(DType::kFloat16, sign * 1e300), sign * kInf);
    EXPECT_EQ(RoundToPrecision<Float16>(float(sign * 65519.0f)), float(sign * 65504.0f));
    EXPECT_EQ(RoundToPrecision<Float16>(float(sign * 65520.0f)), float(sign * kInf));
    // bfloat16: max 0x1.fep127, half a unit above it 0x1.ffp127.
    EXPECT_EQ(RoundToPrecision(DType::kBFloat16, sign * 0x1.fefffp127), sign * 0x1.fep127);
    EXPECT_EQ(RoundToPrecision(DType::kBFloat16, sign * 0x1.ffp127), sign * kInf);
    EXPECT_EQ(RoundToPrecision(DType::kBFloat16, sign * 1e300), sign * kInf);
  }
  EXPECT_EQ(RoundToPrecision(DType::kFloat16, 1.0 + 0x1p-11), 1.0);  // the tie to even
  EXPECT_EQ(RoundToPrecision(DType::kFloat16, 1.0 + 0x1p-11 + 0x1p-30), 1.0 + 0x1p-10);  // no double rounding
  EXPECT_EQ(RoundToPrecision(DType::kBFloat16, 1.0 + 0x1p-8 + 0x1p-30), 1.0 + 0x1p-7);
  EXPECT_TRUE(std::isnan(RoundToPrecision(DType::kFloat16, std::nan(""))));
  EXPECT_TRUE(std::isnan(RoundToPrecision(DType::kBFloat16, std::nan(""))));
}

TEST(RoundToPrecision, DoubleAndOtherTypesAreUnchanged) {
  for (DType d : {DType::kDouble, DType::kInt32, DType::kUndefined}) {
    EXPECT_EQ(RoundToPrecision(d, 1.0 + 0x1p-40), 1.0 + 0x1p-40);
    EXPECT_EQ(RoundToPrecision(d, 1e300), 1e300);
  }
  EXPECT_EQ(RoundToPrecision<double>(1e300), 1e300);
}

}  // namespace
}  // namespace onnx_mini
