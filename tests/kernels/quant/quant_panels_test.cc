#include "kernels/quant/quant_panels.h"

#include <gtest/gtest.h>

namespace onnx_mini {
namespace {

TEST(QuantPanels, CodesLandWhereTheLayoutSaysAndReadBack) {
  for (int bits : {4, 8}) {
    QuantPanelsBuffer buf;
    ASSERT_TRUE(buf.Shape(bits, 40, 19, 16));
    EXPECT_EQ(buf.view.k_blocks, 3);
    EXPECT_EQ(buf.view.panels, 2);
    const int mask = bits == 8 ? 255 : 15;
    for (int64_t col = 0; col < 19; ++col)
      for (int64_t k = 0; k < 40; ++k) buf.SetCode(col, k, int(col * 7 + k * 3) & mask);
    for (int64_t col = 0; col < 19; ++col)
      for (int64_t k = 0; k < 40; ++k) ASSERT_EQ(buf.view.Code(col, k), int(col * 7 + k * 3) & mask);
    // Column 2, k = 5 of block 0: group 0 (8-bit: group 1), byte 2 * 4 + (5 % 4).
    const int64_t group = bits == 8 ? 1 : 0;
    const uint8_t byte = buf.codes[size_t(group * kQuantPanelGroupBytes + 2 * 4 + 1)];
    EXPECT_EQ(bits == 8 ? byte : byte >> 4, (2 * 7 + 5 * 3) & mask);
    // Panel 1 starts after panel 0's three blocks.
    EXPECT_EQ(buf.view.Code(16, 0), buf.codes[size_t(3 * buf.view.block_bytes())] & mask);
  }
}

TEST(QuantPanels, ShapeRefusesWhatTheLayoutCannotHold) {
  QuantPanelsBuffer buf;
  EXPECT_FALSE(buf.Shape(2, 32, 4, 32));
  EXPECT_FALSE(buf.Shape(4, 32, 4, 12));
  EXPECT_FALSE(buf.Shape(4, int64_t(1) << 62, int64_t(1) << 40, 32));
}

TEST(QuantPanels, ReferenceDequantizesEachBlock) {
  QuantPanelsBuffer buf;
  ASSERT_TRUE(buf.Shape(4, 20, 3, 16));  // blocks of 16 and a padded 4
  for (int64_t col = 0; col < 3; ++col) {
    for (int64_t k = 0; k < 20; ++k) buf.SetCode(col, k, int(k % 16));
    for (int64_t b = 0; b < 2; ++b) {
      buf.scales[size_t(b * kQuantPanelCols + col)] = 0.5f * float(col + 1);
      buf.zeros[size_t(b * kQuantPanelCols + col)] = 8.f;
    }
  }
  std::vector<float> a(2 * 20), c(2 * 3);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 5) - 2.f;
  QuantPanelsMatMulReference(a.data(), 2, buf.view, nullptr, c.data());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t col = 0; col < 3; ++col) {
      double want = 0;
      for (int64_t k = 0; k < 20; ++k) want += a[size_t(i * 20 + k)] * (double(k % 16) - 8) * 0.5 * (col + 1);
      EXPECT_FLOAT_EQ(c[size_t(i * 3 + col)], float(want));
    }
}

}  // namespace
}  // namespace onnx_mini
