// The rotary kernel against its reference across dtypes, layouts (3-D, 4-D,
// a packed QKV's heads), pair forms, partial rotary dims and the three ways
// of finding positions; in place equal to out of place; one case by hand.
#include "kernels/attention/rotary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/element.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

double Tolerance(DType d) {
  switch (d) {
    case DType::kDouble: return 1e-14;
    case DType::kFloat: return 1e-6;
    case DType::kFloat16: return 2e-3;
    default: return 1.6e-2;
  }
}

enum class Layout { k3D, k4D, kPacked };  // kPacked: the K heads of a (B, S, (Hq + 2 Hkv) D) QKV
enum class Positions { kIds, kOffsets, kRows };

void Check(DType dtype, Layout layout, Positions positions, bool interleaved, int64_t rotary_dim, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t B = 2, S = 3, H = 2, D = 8, kMaxPos = 16, half = rotary_dim / 2;
  RotaryProblem p;
  p.dtype = dtype, p.batch = B, p.seq = S, p.heads = H, p.head_size = D, p.rotary_dim = rotary_dim;
  p.interleaved = interleaved;
  int64_t x_size = B * S * H * D, base = 0;  // base: the first head's element
  if (layout == Layout::k4D) p.x_view = HeadView::Of4D(H, S, D);
  if (layout == Layout::k3D) p.x_view = HeadView::Of3D(H, S, D);
  if (layout == Layout::kPacked) {  // 3 query heads, then these 2 K heads, then 2 V heads
    const int64_t row = (3 + 2 * H) * D;
    p.x_view = {S * row, D, row};
    x_size = B * S * row;
    base = 3 * D;
  }
  const int64_t esz = Info(dtype).bits / 8;
  const auto at_base = [&](Tensor& t) { return static_cast<char*>(t.raw()) + base * esz; };
  p.y_view = p.x_view;
  Tensor x = RandomNormalTensor(dtype, x_size, rng);
  // A cache with a row stride wider than half (a table of rotary_dim columns).
  p.cache_stride = half + 3;
  Tensor cos = RandomNormalTensor(dtype, kMaxPos * p.cache_stride, rng), sin = RandomNormalTensor(dtype, kMaxPos * p.cache_stride, rng);
  p.cos = cos.raw(), p.sin = sin.raw();
  std::vector<int64_t> ids, offsets = {5, 0};
  for (int64_t i = 0; i < B * S; ++i) ids.push_back(int64_t(rng() % kMaxPos));
  if (positions == Positions::kIds) p.position_ids = ids.data();
  if (positions == Positions::kOffsets) p.row_offsets = offsets.data();
  p.x = at_base(x);
  Tensor want = *x.Clone(), got = *x.Clone(), in_place = *x.Clone();
  p.y = at_base(want);
  RotaryReference(p);
  p.y = at_base(got);
  Rotary(p);
  p.x = p.y = at_base(in_place);
  Rotary(p);
  for (int64_t e = 0; e < x_size; ++e) {
    const double w = GetDouble(want, e);
    ASSERT_NEAR(GetDouble(got, e), w, Tolerance(dtype) * (1 + std::fabs(w))) << "element " << e;
    ASSERT_EQ(GetDouble(in_place, e), GetDouble(got, e)) << "in place, element " << e;
  }
  // Untouched: elements outside the heads (a packed QKV's Q and V) and past rotary_dim.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = rotary_dim; d < D; ++d) {
          const int64_t at = base + p.x_view.At(b, h, s) + d;
          ASSERT_EQ(GetDouble(got, at), GetDouble(x, at));
        }
  if (layout == Layout::kPacked)
    for (int64_t e = 0; e < x_size; ++e) {
      const int64_t d = e % ((3 + 2 * H) * D);
      if (d < 3 * D || d >= (3 + H) * D) {
        ASSERT_EQ(GetDouble(got, e), GetDouble(x, e)) << "outside the heads, " << e;
      }
    }
  // Spot check the reference itself: pair 0 of (b 1, h 1, s 2).
  const int64_t pos = positions == Positions::kIds ? ids[5] : positions == Positions::kOffsets ? 0 + 2 : 1 * S + 2;
  const int64_t at = base + p.x_view.At(1, 1, 2), i2 = interleaved ? 1 : half;
  const double x1 = GetDouble(x, at), x2 = GetDouble(x, at + i2);
  const double c = GetDouble(cos, pos * p.cache_stride), sn = GetDouble(sin, pos * p.cache_stride);
  EXPECT_NEAR(GetDouble(want, at), x1 * c - x2 * sn, Tolerance(dtype) * 4 * (1 + std::fabs(x1 * c - x2 * sn)));
  EXPECT_NEAR(GetDouble(want, at + i2), x2 * c + x1 * sn, Tolerance(dtype) * 4 * (1 + std::fabs(x2 * c + x1 * sn)));
}

TEST(Rotary, FastMatchesReferenceAcrossTypesLayoutsAndPositions) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
    for (Layout layout : {Layout::k3D, Layout::k4D, Layout::kPacked})
      for (Positions positions : {Positions::kIds, Positions::kOffsets, Positions::kRows})
        for (bool interleaved : {false, true})
          for (int64_t rotary_dim : {8, 4}) {
            SCOPED_TRACE(std::string(LowerName(dtype)) + " layout " + std::to_string(int(layout)) + " positions " +
                         std::to_string(int(positions)) + (interleaved ? " interleaved" : " halves") + " rotary_dim " +
                         std::to_string(rotary_dim));
            Check(dtype, layout, positions, interleaved, rotary_dim, seed++);
          }
}

TEST(Rotary, QuarterTurnByHand) {
  // One head of 4 at position 1, angle 90 degrees for both pairs: (x1, x2) -> (-x2, x1).
  const float x[4] = {1, 2, 3, 4}, cos[4] = {1, 1, 0, 0}, sin[4] = {0, 0, 1, 1};
  const int64_t position = 1;
  for (bool interleaved : {false, true}) {
    float y[4];
    RotaryProblem p;
    p.batch = p.seq = p.heads = 1, p.head_size = p.rotary_dim = 4, p.interleaved = interleaved;
    p.x_view = p.y_view = HeadView::Of4D(1, 1, 4);
    p.x = x, p.y = y, p.cos = cos, p.sin = sin, p.cache_stride = 2, p.position_ids = &position;
    Rotary(p);
    const std::vector<float> want = interleaved ? std::vector<float>{-2, 1, -4, 3} : std::vector<float>{-3, -4, 1, 2};
    EXPECT_EQ(std::vector<float>(y, y + 4), want);
    RotaryReference(p);
    EXPECT_EQ(std::vector<float>(y, y + 4), want);
  }
}

}  // namespace
}  // namespace onnx_mini
