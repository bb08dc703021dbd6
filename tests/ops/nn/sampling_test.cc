// ops/nn/sampling.cc: GridSample, AffineGrid, RoiAlign, MaxUnpool,
// NonMaxSuppression. Expected values by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::DoubleNear;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Sample(const std::string& mode, const std::string& padding, int64_t align) {
  return [=](onnx::NodeProto& n) {
    SetAttr(n, "mode", mode);
    SetAttr(n, "padding_mode", padding);
    SetAttr(n, "align_corners", align);
  };
}

TEST(GridSample, ModesPaddingsAndAlignment) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  // (x, y) pairs: corners and the center with aligned corners.
  auto lin = RunOne(22, "GridSample", {x, F({-1, -1, 1, 1, 0, 0, 1, -1}, {1, 1, 4, 2})}, Sample("linear", "zeros", 1));
  ASSERT_TRUE(lin.ok()) << lin.status();
  EXPECT_EQ(lin->shape(), Shape({1, 1, 1, 4}));
  EXPECT_THAT(Values(*lin), ElementsAre(1, 4, 2.5, 2));
  // GridSample-16 calls it bilinear.
  auto v16 = RunOne(16, "GridSample", {x, F({0, 0}, {1, 1, 1, 2})}, Sample("bilinear", "zeros", 1));
  ASSERT_TRUE(v16.ok()) << v16.status();
  EXPECT_THAT(Values(*v16), ElementsAre(2.5));
  // Nearest, corners not aligned: pixel centers at +-0.5; 0.5 rounds to even (0).
  auto near = RunOne(20, "GridSample", {x, F({-0.5f, -0.5f, 0.5f, -0.5f, 0, 0}, {1, 1, 3, 2})},
                     Sample("nearest", "zeros", 0));
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_THAT(Values(*near), ElementsAre(1, 2, 1));
  // Outside: zeros gives 0, border clamps to the edge pixel.
  const Tensor far = F({3, 0, 3, -3}, {1, 1, 2, 2});
  EXPECT_THAT(Values(*RunOne(20, "GridSample", {x, far}, Sample("linear", "zeros", 0))), ElementsAre(0, 0));
  EXPECT_THAT(Values(*RunOne(20, "GridSample", {x, far}, Sample("linear", "border", 0))), ElementsAre(3, 2));
  // 1-D (opset 20): reflection folds x = -1.5 to 0.5 (linear: between 10 and 20);
  // nearest rounds -1.5 to -2 first, which reflects to 1.
  const Tensor line = F({10, 20, 30, 40}, {1, 1, 4});
  auto refl = RunOne(20, "GridSample", {line, F({-1.5f}, {1, 1, 1})}, Sample("linear", "reflection", 0));
  ASSERT_TRUE(refl.ok()) << refl.status();
  EXPECT_THAT(Values(*refl), ElementsAre(15));
  EXPECT_THAT(Values(*RunOne(20, "GridSample", {line, F({-1.5f}, {1, 1, 1})}, Sample("nearest", "reflection", 0))),
              ElementsAre(20));
  // Cubic reproduces a linear ramp inside; at the edge with border padding it is the edge value.
  const Tensor ramp = F({1, 2, 3, 4}, {1, 1, 4});
  auto cubic = RunOne(20, "GridSample", {ramp, F({0, -1}, {1, 2, 1})}, Sample("cubic", "border", 1));
  ASSERT_TRUE(cubic.ok()) << cubic.status();
  EXPECT_THAT(Values(*cubic), ElementsAre(DoubleNear(2.5, 1e-6), DoubleNear(1, 1e-6)));
  // Integers interpolate in floating point and truncate; strings take nearest.
  auto ints = RunOne(20, "GridSample", {Tensor::FromVector<int32_t>({1, 2, 3, 4}, {1, 1, 2, 2}), F({0, 0}, {1, 1, 1, 2})},
                     Sample("linear", "zeros", 1));
  EXPECT_THAT(Values(*ints), ElementsAre(2));
  auto strs = RunOne(20, "GridSample",
                     {Tensor::FromVector<std::string>({"a", "b"}, {1, 1, 2}), F({1, 5}, {1, 2, 1})},
                     Sample("nearest", "zeros", 1));
  ASSERT_TRUE(strs.ok()) << strs.status();
  EXPECT_EQ(strs->data<std::string>()[0], "b");
  EXPECT_EQ(strs->data<std::string>()[1], "");
  auto cplx = RunOne(20, "GridSample",
                     {Tensor::FromVector<Complex64>({{1, 1}, {3, -3}}, {1, 1, 2}), F({0}, {1, 1, 1})},
                     Sample("linear", "zeros", 1));
  ASSERT_TRUE(cplx.ok()) << cplx.status();
  EXPECT_EQ(cplx->data<Complex64>()[0], Complex64(2, -1));
  // A NaN coordinate samples zero.
  EXPECT_THAT(Values(*RunOne(20, "GridSample", {line, F({std::nanf("")}, {1, 1, 1})}, Sample("linear", "border", 0))),
              ElementsAre(0));
  auto empty = RunOne(20, "GridSample", {x, F({}, {1, 0, 2, 2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({1, 1, 0, 2}));
}

TEST(GridSample, Errors) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  EXPECT_THAT(Message(RunOne(16, "GridSample", {x, F({0, 0}, {1, 1, 1, 2})}, Sample("linear", "zeros", 0)).status()),
              HasSubstr("mode 'linear' is not bilinear, nearest or bicubic (opset 16)"));
  EXPECT_THAT(Message(RunOne(20, "GridSample", {x, F({0, 0}, {1, 1, 1, 2})}, Sample("linear", "mirror", 0)).status()),
              HasSubstr("padding_mode 'mirror'"));
  EXPECT_THAT(Message(RunOne(16, "GridSample", {F({1, 2}, {1, 1, 2}), F({0}, {1, 1, 1})}).status()), HasSubstr("4-D"));
  EXPECT_THAT(Message(RunOne(20, "GridSample", {x, F({0, 0, 0}, {1, 1, 1, 3})}).status()),
              HasSubstr("grid's last dim must be the 2 spatial dims"));
  EXPECT_THAT(Message(RunOne(20, "GridSample", {x, F({0, 0, 0, 0}, {2, 1, 1, 2})}).status()), HasSubstr("batch size"));
  EXPECT_THAT(Message(RunOne(20, "GridSample", {Tensor::FromVector<std::string>({"a"}, {1, 1, 1}), F({0}, {1, 1, 1})})
                          .status()),
              HasSubstr("only nearest applies"));
}

TEST(AffineGrid, TwoAndThreeDims) {
  const Tensor id = F({1, 0, 0, 0, 1, 0}, {1, 2, 3});
  auto g = RunOne(20, "AffineGrid", {id, I({1, 1, 2, 2}, {4})});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->shape(), Shape({1, 2, 2, 2}));
  EXPECT_THAT(Values(*g), ElementsAre(-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5));
  auto aligned = RunOne(20, "AffineGrid", {F({1, 0, 0.5f, 0, 2, 0}, {1, 2, 3}), I({1, 3, 2, 2}, {4})},
                        [](onnx::NodeProto& n) { SetAttr(n, "align_corners", int64_t(1)); });
  ASSERT_TRUE(aligned.ok()) << aligned.status();
  EXPECT_THAT(Values(*aligned), ElementsAre(-0.5, -2, 1.5, -2, -0.5, 2, 1.5, 2));
  auto vol = RunOne(20, "AffineGrid", {F({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, {1, 3, 4}), I({1, 1, 1, 1, 2}, {5})});
  ASSERT_TRUE(vol.ok()) << vol.status();
  EXPECT_EQ(vol->shape(), Shape({1, 1, 1, 2, 3}));
  EXPECT_THAT(Values(*vol), ElementsAre(-0.5, 0, 0, 0.5, 0, 0));
  auto empty = RunOne(20, "AffineGrid", {F({}, {0, 2, 3}), I({0, 1, 2, 2}, {4})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 2, 2, 2}));
  EXPECT_THAT(Message(RunOne(20, "AffineGrid", {id, I({1, 1, 2}, {3})}).status()), HasSubstr("size must be"));
  EXPECT_THAT(Message(RunOne(20, "AffineGrid", {id, I({1, 1, 1, 2, 2}, {5})}).status()), HasSubstr("does not match size"));
  EXPECT_THAT(Message(RunOne(20, "AffineGrid", {id, I({1, 1, -2, 2}, {4})}).status()), HasSubstr("must be >= 0"));
}

TEST(RoiAlign, AverageMaxAndCoordinateModes) {
  // X[y][x] = x: bilinear sampling returns the sample's x.
  std::vector<float> v;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) v.push_back(float(x));
  const Tensor x = F(v, {1, 1, 4, 4});
  auto attrs = [](int64_t size, const char* mode) {
    return [=](onnx::NodeProto& n) {
      SetAttr(n, "output_height", size);
      SetAttr(n, "output_width", size);
      SetAttr(n, "sampling_ratio", int64_t(1));
      SetAttr(n, "mode", std::string(mode));
    };
  };
  auto v10 = RunOne(10, "RoiAlign", {x, F({0, 0, 3, 3}, {1, 4}), I({0}, {1})}, attrs(1, "avg"));
  ASSERT_TRUE(v10.ok()) << v10.status();
  EXPECT_THAT(Values(*v10), ElementsAre(1.5));
  // RoiAlign-16 shifts by half a pixel by default.
  EXPECT_THAT(Values(*RunOne(16, "RoiAlign", {x, F({0, 0, 3, 3}, {1, 4}), I({0}, {1})}, attrs(1, "avg"))),
              ElementsAre(1.0));
  auto bins = RunOne(10, "RoiAlign", {x, F({0, 0, 3, 3}, {1, 4}), I({0}, {1})}, attrs(2, "avg"));
  EXPECT_EQ(bins->shape(), Shape({1, 1, 2, 2}));
  EXPECT_THAT(Values(*bins), ElementsAre(0.75, 2.25, 0.75, 2.25));
  // max: the largest weighted corner (0.25 * 1 at the center of a pixel square).
  EXPECT_THAT(Values(*RunOne(10, "RoiAlign", {x, F({0, 0, 1, 1}, {1, 4}), I({0}, {1})}, attrs(1, "max"))),
              ElementsAre(0.25));
  EXPECT_THAT(Values(*RunOne(10, "RoiAlign", {x, F({0, 0, 1, 1}, {1, 4}), I({0}, {1})}, attrs(1, "avg"))),
              ElementsAre(0.5));
  auto none = RunOne(16, "RoiAlign", {x, F({}, {0, 4}), I({}, {0})});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), Shape({0, 1, 1, 1}));
  EXPECT_THAT(Message(RunOne(16, "RoiAlign", {x, F({0, 0, 1, 1}, {1, 4}), I({1}, {1})}).status()),
              HasSubstr("batch_indices[0] = 1 is out of range for 1 images"));
  EXPECT_THAT(Message(RunOne(16, "RoiAlign", {x, F({0, 0, 1}, {1, 3}), I({0}, {1})}).status()),
              HasSubstr("rois must be (num_rois, 4)"));
  EXPECT_THAT(Message(RunOne(16, "RoiAlign", {x, F({0, 0, 1, 1}, {1, 4}), I({0}, {1})},
                             [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("sum")); })
                          .status()),
              HasSubstr("mode 'sum' is not avg or max"));
  // An empty map: every sample lies outside it, gives 0 and reads nothing.
  auto empty_map = RunOne(16, "RoiAlign", {F({}, {1, 2, 0, 3}), F({0, 0, 1, 1}, {1, 4}), I({0}, {1})}, attrs(2, "avg"));
  ASSERT_TRUE(empty_map.ok()) << empty_map.status();
  EXPECT_EQ(empty_map->shape(), Shape({1, 2, 2, 2}));
  EXPECT_THAT(Values(*empty_map), Each(0.0));
  // A sample outside the map is 0, even where the map holds infinity.
  std::vector<float> inf(16, std::numeric_limits<float>::infinity());
  EXPECT_THAT(Values(*RunOne(10, "RoiAlign", {F(inf, {1, 1, 4, 4}), F({-9, -9, -8, -8}, {1, 4}), I({0}, {1})},
                             attrs(1, "max"))),
              ElementsAre(0.0));
  // Absurd sample counts are refused, not run.
  EXPECT_THAT(Message(RunOne(16, "RoiAlign", {x, F({0, 0, 1, 1}, {1, 4}), I({0}, {1})},
                             [](onnx::NodeProto& n) { SetAttr(n, "sampling_ratio", int64_t(1) << 40); })
                          .status()),
              HasSubstr("samples in each of 1 bins"));
  EXPECT_THAT(Message(RunOne(16, "RoiAlign", {x, F({0, 0, 1e30f, 1e30f}, {1, 4}), I({0}, {1})}).status()),
              HasSubstr("roi 0 needs"));
}

TEST(MaxUnpool, PlacesValuesAndChecksIndices) {
  const Tensor x = F({5, 6, 7, 8}, {1, 1, 2, 2});
  const Tensor idx = I({5, 7, 13, 15}, {1, 1, 2, 2});
  auto attrs = [](onnx::NodeProto& n) {
    SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    SetAttr(n, "strides", std::vector<int64_t>{2, 2});
  };
  auto out = RunOne(11, "MaxUnpool", {x, idx}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), Shape({1, 1, 4, 4}));
  EXPECT_THAT(Values(*out), ElementsAre(0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8));
  auto shaped = RunOne(22, "MaxUnpool", {x, idx, I({1, 1, 5, 5}, {4})}, attrs);
  ASSERT_TRUE(shaped.ok()) << shaped.status();
  EXPECT_EQ(shaped->shape(), Shape({1, 1, 5, 5}));
  EXPECT_THAT(Values(*shaped), ElementsAre(0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(Message(RunOne(11, "MaxUnpool", {x, I({5, 7, 13, 16}, {1, 1, 2, 2})}, attrs).status()),
              HasSubstr("index 16 (element 3 of I) is out of range for the unpooled shape [1,1,4,4] of 16 elements"));
  EXPECT_THAT(Message(RunOne(11, "MaxUnpool", {x, idx, I({1, 1, 3, 3}, {4})}, attrs).status()),
              HasSubstr("must hold the unpooled shape [1,1,4,4]"));
  auto empty = RunOne(11, "MaxUnpool", {F({}, {0, 1, 2, 2}), I({}, {0, 1, 2, 2})}, attrs);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 1, 4, 4}));
  EXPECT_THAT(Message(RunOne(11, "MaxUnpool", {x, idx}).status()), HasSubstr("'kernel_shape' is required"));
  EXPECT_THAT(Message(RunOne(11, "MaxUnpool", {x, I({0}, {1, 1, 1, 1})}, attrs).status()),
              HasSubstr("must have the shape of X"));
}

TEST(NonMaxSuppression, SuppressesByIouAndScore) {
  const Tensor boxes = F({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101},
                         {1, 6, 4});
  const Tensor scores = F({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
  auto run = [&](int64_t max, float iou, float score) {
    return RunOne(11, "NonMaxSuppression", {boxes, scores, I({max}, {1}), F({iou}, {1}), F({score}, {1})});
  };
  auto sel = run(3, 0.5f, 0);
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->shape(), Shape({3, 3}));
  EXPECT_THAT(Values(*sel), ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
  EXPECT_THAT(Values(*run(2, 0.5f, 0)), ElementsAre(0, 0, 3, 0, 0, 0));
  EXPECT_THAT(Values(*run(3, 0.5f, 0.4f)), ElementsAre(0, 0, 3, 0, 0, 0));
  EXPECT_EQ(run(0, 0.5f, 0)->shape(), Shape({0, 3}));
  // The same boxes as centers and sizes.
  const Tensor centers = F({0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 0.4f, 0.5f, 1, 1, 10.5f, 0.5f, 1, 1, 10.6f, 0.5f, 1, 1,
                            100.5f, 0.5f, 1, 1},
                           {1, 6, 4});
  auto center = RunOne(11, "NonMaxSuppression", {centers, scores, I({3}, {1}), F({0.5f}, {1}), F({0}, {1})},
                       [](onnx::NodeProto& n) { SetAttr(n, "center_point_box", int64_t(1)); });
  ASSERT_TRUE(center.ok()) << center.status();
  EXPECT_THAT(Values(*center), ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
  EXPECT_EQ(RunOne(11, "NonMaxSuppression", {boxes, scores})->shape(), Shape({0, 3}));
  EXPECT_THAT(Message(RunOne(11, "NonMaxSuppression", {boxes, F({1, 2}, {1, 1, 2})}).status()), HasSubstr("disagree"));
  EXPECT_THAT(Message(RunOne(11, "NonMaxSuppression", {F({0, 0, 1}, {1, 1, 3}), F({1}, {1, 1, 1})}).status()),
              HasSubstr("boxes must be"));
}

}  // namespace
}  // namespace onnx_mini
