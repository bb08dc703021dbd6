// ops/tensor/rearrange.cc: Tile, EyeLike, DepthToSpace, SpaceToDepth,
// ReverseSequence, CenterCropPad, Col2Im. Expected values by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/element.h"
#include "tests/ops/element_reference.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Attrs Int(const std::string& name, int64_t v) {
  return [name, v](onnx::NodeProto& n) { SetAttr(n, name, v); };
}

TEST(Tile, RepeatsEachDim) {
  auto t = RunOne(13, "Tile", {F({1, 2, 3, 4}, {2, 2}), I({2, 2}, {2})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), Shape({4, 4}));
  EXPECT_THAT(Values(*t), ElementsAre(1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4));
  auto cols = RunOne(6, "Tile", {F({1, 2}, {2, 1}), I({1, 3}, {2})});
  EXPECT_THAT(Values(*cols), ElementsAre(1, 1, 1, 2, 2, 2));
  auto s = RunOne(13, "Tile", {Tensor::FromVector<std::string>({"a", "b"}, {2}), I({2}, {1})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->data<std::string>()[2], "a");
  auto scalar = RunOne(13, "Tile", {F({7}, {}), I({}, {0})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_THAT(Values(*scalar), ElementsAre(7));
  auto none = RunOne(13, "Tile", {F({1, 2}, {2}), I({0}, {1})});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), Shape({0}));
  EXPECT_THAT(Message(RunOne(13, "Tile", {F({1, 2}, {2}), I({1, 1}, {2})}).status()),
              HasSubstr("repeats has 2 entries; the input float[2] has rank 1"));
  EXPECT_THAT(Message(RunOne(13, "Tile", {F({1, 2}, {2}), I({-1}, {1})}).status()),
              HasSubstr("repeats must be >= 0, got -1"));
  EXPECT_THAT(Message(RunOne(13, "Tile", {F({1, 2}, {2}), I({int64_t(1) << 62}, {1})}).status()),
              HasSubstr("overflows"));
}

TEST(Tile, EveryTypeAgainstAPerElementReference) {
  // Tile runs on the strided copy: compare with out[i] = in[i mod dims].
  for (DType dtype : MovedTypes()) {
    for (const auto& shape_repeats : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{3, 1, 5}, {2, 4, 1}}, {{2, 3}, {1, 1}}, {{1}, {9}}, {{4, 6, 2}, {3, 1, 5}}, {{2, 0, 3}, {2, 2, 2}}}) {
      const Shape& shape = shape_repeats.first;  // (no structured binding: a lambda captures it)
      const std::vector<int64_t>& repeats = shape_repeats.second;
      const Tensor x = Filled(dtype, shape, 8);
      for (int threads : {1, 2}) {
        absl::StatusOr<Tensor> y = RunOne(13, "Tile", {x, I(repeats, {int64_t(repeats.size())})}, {}, threads);
        ASSERT_TRUE(y.ok()) << y.status();
        for (size_t d = 0; d < shape.size(); ++d) ASSERT_EQ(y->dim(int64_t(d)), shape[d] * repeats[d]);
        ExpectCopies(*y, [&](std::vector<int64_t> index) {
          for (size_t d = 0; d < shape.size(); ++d) index[d] %= shape[d];
          return std::make_pair(&x, FlatIndex(shape, index));
        }, "Tile " + ShapeToString(shape) + " " + LowerName(dtype));
      }
    }
  }
}

TEST(EyeLike, DiagonalsAndTypes) {
  auto k1 = RunOne(22, "EyeLike", {Tensor::FromVector<int32_t>(std::vector<int32_t>(12), {3, 4})}, Int("k", 1));
  ASSERT_TRUE(k1.ok()) << k1.status();
  EXPECT_EQ(k1->dtype(), DType::kInt32);
  EXPECT_THAT(Values(*k1), ElementsAre(0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
  auto low = RunOne(9, "EyeLike", {F(std::vector<float>(9), {3, 3})}, [](onnx::NodeProto& n) {
    SetAttr(n, "k", int64_t(-1));
    SetAttr(n, "dtype", int64_t(DType::kBool));
  });
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_EQ(low->dtype(), DType::kBool);
  EXPECT_THAT(Values(*low), ElementsAre(0, 0, 0, 1, 0, 0, 0, 1, 0));
  auto wide = RunOne(22, "EyeLike", {F(std::vector<float>(6), {2, 3})}, Int("dtype", int64_t(DType::kFloat16)));
  EXPECT_THAT(Values(*wide), ElementsAre(1, 0, 0, 0, 1, 0));
  auto off = RunOne(22, "EyeLike", {F(std::vector<float>(4), {2, 2})}, Int("k", 5));
  EXPECT_THAT(Values(*off), ElementsAre(0, 0, 0, 0));
  auto far = RunOne(22, "EyeLike", {F(std::vector<float>(4), {2, 2})}, Int("k", std::numeric_limits<int64_t>::min()));
  EXPECT_THAT(Values(*far), ElementsAre(0, 0, 0, 0));
  auto empty = RunOne(22, "EyeLike", {F({}, {0, 3})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 3}));
  EXPECT_THAT(Message(RunOne(22, "EyeLike", {F({1, 2}, {2})}).status()), HasSubstr("must be 2-D"));
  EXPECT_THAT(Message(RunOne(22, "EyeLike", {F({1}, {1, 1})}, Int("dtype", int64_t(DType::kString))).status()),
              HasSubstr("dtype 8 is not a numeric or bool element type"));
}

TEST(DepthToSpace, DcrCrdAndSpaceToDepthInverts) {
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[size_t(i)] = float(i);
  const Tensor x = F(v, {1, 8, 1, 1});
  auto dcr = RunOne(13, "DepthToSpace", {x}, Int("blocksize", 2));
  ASSERT_TRUE(dcr.ok()) << dcr.status();
  EXPECT_EQ(dcr->shape(), Shape({1, 2, 2, 2}));
  EXPECT_THAT(Values(*dcr), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  auto crd = RunOne(13, "DepthToSpace", {x}, [](onnx::NodeProto& n) {
    SetAttr(n, "blocksize", int64_t(2));
    SetAttr(n, "mode", std::string("CRD"));
  });
  ASSERT_TRUE(crd.ok()) << crd.status();
  EXPECT_THAT(Values(*crd), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  auto back = RunOne(13, "SpaceToDepth", {*dcr}, Int("blocksize", 2));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape(), Shape({1, 8, 1, 1}));
  EXPECT_THAT(Values(*back), ElementsAreArray(v));
  // A 2x4 image with 1 channel: four 2x2 blocks become channels.
  auto s2d = RunOne(13, "SpaceToDepth", {F({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 4})}, Int("blocksize", 2));
  EXPECT_EQ(s2d->shape(), Shape({1, 4, 1, 2}));
  EXPECT_THAT(Values(*s2d), ElementsAre(0, 2, 1, 3, 4, 6, 5, 7));
  auto empty = RunOne(13, "DepthToSpace", {F({}, {0, 4, 1, 1})}, Int("blocksize", 2));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 1, 2, 2}));
  EXPECT_THAT(Message(RunOne(13, "DepthToSpace", {F(v, {1, 8, 1, 1})}, Int("blocksize", 3)).status()),
              HasSubstr("channels 8 are not a multiple of blocksize^2 = 9"));
  EXPECT_THAT(Message(RunOne(13, "SpaceToDepth", {F(v, {1, 1, 2, 4})}, Int("blocksize", 4)).status()),
              HasSubstr("dim 2 of float[1,1,2,4] is not a multiple of blocksize 4"));
  EXPECT_THAT(Message(RunOne(13, "DepthToSpace", {F(v, {8})}, Int("blocksize", 2)).status()), HasSubstr("4-D"));
  EXPECT_THAT(Message(RunOne(13, "DepthToSpace", {x}, Int("blocksize", 0)).status()), HasSubstr("blocksize must be >= 1"));
  EXPECT_THAT(Message(RunOne(13, "DepthToSpace", {x}).status()), HasSubstr("'blocksize' is required"));
  EXPECT_THAT(Message(RunOne(13, "DepthToSpace", {x}, Int("blocksize", int64_t(1) << 32)).status()),
              HasSubstr("blocksize 4294967296 is too large"));
}

TEST(DepthToSpace, EveryTypeAgainstAPerElementReference) {
  // Both run on the strided copy: compare with the per-pixel formula, for
  // DCR and CRD, blocksizes 1 to 3, odd sizes and every element size.
  for (DType dtype : MovedTypes())
    for (int64_t b : {1, 2, 3})
      for (const char* mode : {"DCR", "CRD"})
        for (int threads : {1, 2}) {
          const int64_t N = 2, C = 3, h = 5, w = 4;
          const Tensor depth = Filled(dtype, {N, C * b * b, h, w}, 9);
          absl::StatusOr<Tensor> space = RunOne(13, "DepthToSpace", {depth}, [&](onnx::NodeProto& n) {
            SetAttr(n, "blocksize", b);
            SetAttr(n, "mode", std::string(mode));
          }, threads);
          ASSERT_TRUE(space.ok()) << space.status();
          const bool crd = std::string(mode) == "CRD";
          // The depth element of space pixel [n, c, y, x].
          auto depth_at = [&](const std::vector<int64_t>& at) {
            const int64_t i = at[2] % b, j = at[3] % b;
            const int64_t dc = crd ? (at[1] * b + i) * b + j : (i * b + j) * C + at[1];
            return FlatIndex(depth.shape(), {at[0], dc, at[2] / b, at[3] / b});
          };
          ExpectCopies(*space, [&](const std::vector<int64_t>& at) { return std::make_pair(&depth, depth_at(at)); },
                       std::string("DepthToSpace ") + mode + " " + LowerName(dtype));
          if (crd) continue;
          // SpaceToDepth (DCR) inverts it.
          absl::StatusOr<Tensor> back = RunOne(13, "SpaceToDepth", {*space}, Int("blocksize", b), threads);
          ASSERT_TRUE(back.ok()) << back.status();
          ExpectCopies(*back, [&](const std::vector<int64_t>& at) { return std::make_pair(&depth, FlatIndex(depth.shape(), at)); },
                       "SpaceToDepth " + LowerName(dtype));
        }
}

TEST(ReverseSequence, BothAxisOrders) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[size_t(i)] = float(i);
  // The spec's examples: time along axis 0 with lengths [4, 3, 2, 1] per column...
  std::vector<float> cols(16);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) cols[size_t(r * 4 + c)] = float(c * 4 + r);
  auto time0 = RunOne(10, "ReverseSequence", {F(cols, {4, 4}), I({4, 3, 2, 1}, {4})});
  ASSERT_TRUE(time0.ok()) << time0.status();
  EXPECT_THAT(Values(*time0), ElementsAre(3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15));
  // ... and along axis 1 with lengths [1, 2, 3, 4] per row.
  auto time1 = RunOne(10, "ReverseSequence", {F(v, {4, 4}), I({1, 2, 3, 4}, {4})}, [](onnx::NodeProto& n) {
    SetAttr(n, "time_axis", int64_t(1));
    SetAttr(n, "batch_axis", int64_t(0));
  });
  ASSERT_TRUE(time1.ok()) << time1.status();
  EXPECT_THAT(Values(*time1), ElementsAre(0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12));
  // Trailing dims move together; a length of 0 copies.
  auto inner = RunOne(10, "ReverseSequence", {F({1, 2, 3, 4, 5, 6}, {3, 1, 2}), I({3}, {1})});
  EXPECT_THAT(Values(*inner), ElementsAre(5, 6, 3, 4, 1, 2));
  auto zero = RunOne(10, "ReverseSequence", {F({1, 2, 3}, {3, 1}), I({0}, {1})});
  EXPECT_THAT(Values(*zero), ElementsAre(1, 2, 3));
  auto empty = RunOne(10, "ReverseSequence", {F({}, {0, 2}), I({0, 0}, {2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 2}));
  EXPECT_THAT(Message(RunOne(10, "ReverseSequence", {F({1, 2, 3}, {3, 1}), I({4}, {1})}).status()),
              HasSubstr("sequence_lens[0] = 4 is outside [0, 3]"));
  EXPECT_THAT(Message(RunOne(10, "ReverseSequence", {F({1, 2, 3}, {3, 1}), I({1, 1}, {2})}).status()),
              HasSubstr("one entry per batch entry"));
  EXPECT_THAT(Message(RunOne(10, "ReverseSequence", {F({1, 2, 3}, {3, 1}), I({1}, {1})}, Int("time_axis", 1)).status()),
              HasSubstr("must be 0 and 1"));
}

TEST(CenterCropPad, CropPadAndAxes) {
  auto crop = RunOne(18, "CenterCropPad", {F({1, 2, 3, 4, 5}, {5}), I({2}, {1})});
  ASSERT_TRUE(crop.ok()) << crop.status();
  EXPECT_THAT(Values(*crop), ElementsAre(2, 3));
  auto pad = RunOne(18, "CenterCropPad", {F({1, 2, 3}, {3}), I({6}, {1})});
  EXPECT_THAT(Values(*pad), ElementsAre(0, 1, 2, 3, 0, 0));
  // Crop rows, pad columns, of a 3x2 matrix: only the last axis named.
  const Tensor m = F({1, 2, 3, 4, 5, 6}, {3, 2});
  auto both = RunOne(18, "CenterCropPad", {m, Tensor::FromVector<int32_t>({1, 4}, {2})});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->shape(), Shape({1, 4}));
  EXPECT_THAT(Values(*both), ElementsAre(0, 3, 4, 0));
  auto last = RunOne(18, "CenterCropPad", {m, I({1}, {1})},
                     [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{-1}); });
  EXPECT_EQ(last->shape(), Shape({3, 1}));
  EXPECT_THAT(Values(*last), ElementsAre(1, 3, 5));
  auto empty = RunOne(18, "CenterCropPad", {m, I({0, 2}, {2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 2}));
  EXPECT_THAT(Message(RunOne(18, "CenterCropPad", {m, I({1}, {1})}).status()), HasSubstr("shape has 1 entries for 2 axes"));
  EXPECT_THAT(Message(RunOne(18, "CenterCropPad", {m, I({-1, 1}, {2})}).status()), HasSubstr("must be >= 0, got -1"));
  EXPECT_THAT(Message(RunOne(18, "CenterCropPad", {m, I({1, 1}, {2})},
                             [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{1, -1}); })
                          .status()),
              HasSubstr("axis 1 is repeated"));
}

TEST(Col2Im, OverlapsPadsStridesAndErrors) {
  // Four 2x2 blocks over a 3x3 image: each pixel gets the number of blocks covering it.
  auto ones = RunOne(18, "Col2Im", {F(std::vector<float>(16, 1), {1, 4, 4}), I({3, 3}, {2}), I({2, 2}, {2})});
  ASSERT_TRUE(ones.ok()) << ones.status();
  EXPECT_EQ(ones->shape(), Shape({1, 1, 3, 3}));
  EXPECT_THAT(Values(*ones), ElementsAre(1, 2, 1, 2, 4, 2, 1, 2, 1));
  auto padded = RunOne(18, "Col2Im", {F(std::vector<float>(36, 1), {1, 4, 9}), I({2, 2}, {2}), I({2, 2}, {2})},
                       [](onnx::NodeProto& n) { SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1}); });
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_THAT(Values(*padded), ElementsAre(4, 4, 4, 4));
  // Stride 2: no overlap; input[k][pos] = 10 k + pos lands at its own pixel.
  std::vector<float> v;
  for (int k = 0; k < 4; ++k)
    for (int pos = 0; pos < 4; ++pos) v.push_back(float(10 * k + pos));
  auto strided = RunOne(18, "Col2Im", {F(v, {1, 4, 4}), I({4, 4}, {2}), I({2, 2}, {2})},
                        [](onnx::NodeProto& n) { SetAttr(n, "strides", std::vector<int64_t>{2, 2}); });
  ASSERT_TRUE(strided.ok()) << strided.status();
  EXPECT_THAT(Values(*strided), ElementsAre(0, 10, 1, 11, 20, 30, 21, 31, 2, 12, 3, 13, 22, 32, 23, 33));
  // Dilation 2 along a 1-D image of 5 with a block of 2: positions 0..2, taps at p and p + 2.
  auto dilated = RunOne(18, "Col2Im", {F({1, 2, 3, 10, 20, 30}, {1, 2, 3}), I({5}, {1}), I({2}, {1})},
                        [](onnx::NodeProto& n) { SetAttr(n, "dilations", std::vector<int64_t>{2}); });
  ASSERT_TRUE(dilated.ok()) << dilated.status();
  EXPECT_THAT(Values(*dilated), ElementsAre(1, 2, 13, 20, 30));
  auto ints = RunOne(18, "Col2Im", {I({1, 2, 3, 4}, {1, 2, 2}), I({3}, {1}), I({2}, {1})});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_THAT(Values(*ints), ElementsAre(1, 5, 4));
  auto empty = RunOne(18, "Col2Im", {F({}, {0, 4, 4}), I({3, 3}, {2}), I({2, 2}, {2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 1, 3, 3}));
  EXPECT_THAT(Message(RunOne(18, "Col2Im", {F(std::vector<float>(12, 1), {1, 4, 3}), I({3, 3}, {2}), I({2, 2}, {2})})
                          .status()),
              HasSubstr("must be the number of sliding blocks, 4"));
  EXPECT_THAT(Message(RunOne(18, "Col2Im", {F(std::vector<float>(12, 1), {1, 3, 4}), I({3, 3}, {2}), I({2, 2}, {2})})
                          .status()),
              HasSubstr("not a multiple of prod(block_shape) = 4"));
  EXPECT_THAT(Message(RunOne(18, "Col2Im", {F({1}, {1, 1, 1}), I({1}, {1}), I({2}, {1})}).status()),
              HasSubstr("does not fit"));
  EXPECT_THAT(Message(RunOne(18, "Col2Im", {F({1}, {1, 1, 1}), I({1}, {1}), I({1}, {1})},
                             [](onnx::NodeProto& n) { SetAttr(n, "pads", std::vector<int64_t>{int64_t(1) << 62, int64_t(1) << 62}); })
                          .status()),
              HasSubstr("overflows"));
}

}  // namespace
}  // namespace onnx_mini
