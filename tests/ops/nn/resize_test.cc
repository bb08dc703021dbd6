// ops/nn/resize.cc: Resize and Upsample. Hand-computed values for each mode
// and coordinate transformation; the fast kernels (gather, separable passes)
// against the reference kernel (full N-D tap product in double) across
// dtypes, shapes and attributes; the rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/nn/resize.h"
#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

struct ReferenceScope {
  explicit ReferenceScope(bool on) { SetResizeReferenceKernel(on); }
  ~ReferenceScope() { SetResizeReferenceKernel(false); }
};

using Str = std::vector<std::pair<std::string, std::string>>;

// Resize-`opset` of X with scales or sizes (one of them empty), string and
// other attributes.
absl::StatusOr<Tensor> Resize(const Tensor& x, const std::vector<float>& scales, const std::vector<int64_t>& sizes,
                              const Str& strings, const std::function<void(onnx::NodeProto&)>& more = {},
                              int64_t opset = 19, const Tensor& roi = Tensor()) {
  OpTester t;
  t.op = "Resize";
  t.opset = opset;
  t.inputs = {x, roi, scales.empty() ? Tensor() : Tensor::FromVector(scales, {int64_t(scales.size())}),
              sizes.empty() ? Tensor() : I(sizes, {int64_t(sizes.size())})};
  while (!t.inputs.back().defined()) t.inputs.pop_back();
  t.constant = {false, true, true, true};
  t.attrs = [&](onnx::NodeProto& n) {
    for (const auto& [k, v] : strings) SetAttr(n, k, v);
    if (more) more(n);
  };
  return t.RunOne();
}

TEST(Resize, NearestModesAndCoordinates) {
  const Tensor x = F({1, 2, 3, 4}, {1, 4});
  // Upsample 2x, half_pixel: x = (y + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, ... (no ties).
  auto y = Resize(x, {1, 2}, {}, {{"mode", "nearest"}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1, 1, 2, 2, 3, 3, 4, 4));
  // asymmetric: x = y / 2 = 0, 0.5, 1, 1.5, ...: the ties decide.
  const auto asym = [&](const std::string& nearest_mode) {
    return Resize(x, {1, 2}, {}, {{"mode", "nearest"}, {"nearest_mode", nearest_mode}, {"coordinate_transformation_mode", "asymmetric"}});
  };
  EXPECT_THAT(Values(*asym("round_prefer_floor")), ElementsAre(1, 1, 2, 2, 3, 3, 4, 4));
  EXPECT_THAT(Values(*asym("round_prefer_ceil")), ElementsAre(1, 2, 2, 3, 3, 4, 4, 4));  // 3.5 -> 4 is clamped to 3
  EXPECT_THAT(Values(*asym("floor")), ElementsAre(1, 1, 2, 2, 3, 3, 4, 4));
  EXPECT_THAT(Values(*asym("ceil")), ElementsAre(1, 2, 2, 3, 3, 4, 4, 4));
  // Downsample 4 -> 2 with sizes, align_corners: x = y * 3.
  y = Resize(x, {}, {1, 2}, {{"mode", "nearest"}, {"coordinate_transformation_mode", "align_corners"}});
  EXPECT_THAT(Values(*y), ElementsAre(1, 4));
  y = Resize(x, {}, {1, 3}, {{"mode", "nearest"}, {"coordinate_transformation_mode", "tf_half_pixel_for_nn"}}, {}, 11);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(2, 3, 4));  // (y + 0.5) * 4/3 = 0.67, 2, 3.33
}

TEST(Resize, LinearAndCubicByHand) {
  auto y = Resize(F({1, 2}, {1, 2}), {}, {1, 4}, {{"mode", "linear"}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1, 1.25, 1.75, 2));  // x = -0.25 (edge), 0.25, 0.75, 1.25 (edge)
  y = Resize(F({1, 2, 3}, {3}), {}, {5}, {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}});
  EXPECT_THAT(Values(*y), ElementsAre(1, 1.5, 2, 2.5, 3));
  y = Resize(F({1, 2}, {2}), {}, {1}, {{"mode", "linear"}, {"coordinate_transformation_mode", "pytorch_half_pixel"}});
  EXPECT_THAT(Values(*y), ElementsAre(1));  // one output: x = 0
  // Bilinear 2x2 -> 3x3 with align_corners: the centre is the mean.
  y = Resize(F({0, 4, 8, 12}, {2, 2}), {}, {3, 3}, {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}});
  EXPECT_THAT(Values(*y), ElementsAre(0, 2, 4, 4, 6, 8, 8, 10, 12));
  // Cubic with A = -0.5 (Keys) reproduces a ramp away from the edges; any A keeps a constant.
  std::vector<float> ramp(8);
  for (int i = 0; i < 8; ++i) ramp[size_t(i)] = float(i);
  y = Resize(F(ramp, {8}), {2}, {}, {{"mode", "cubic"}}, [](onnx::NodeProto& n) { SetAttr(n, "cubic_coeff_a", -0.5f); });
  ASSERT_TRUE(y.ok()) << y.status();
  for (int o = 4; o < 12; ++o) EXPECT_NEAR(y->data<float>()[o], (o + 0.5) / 2 - 0.5, 1e-5) << o;
  y = Resize(F(std::vector<float>(5, 3.0f), {5}), {1.6f}, {}, {{"mode", "cubic"}});
  ASSERT_TRUE(y.ok()) << y.status();
  for (double v : Values(*y)) EXPECT_NEAR(v, 3, 1e-6);
  // Cubic at x = 0.5 between 0 and 1 of [0, 1, 0, 0]: weights W(1.5), W(0.5), W(0.5), W(1.5) with A = -0.75.
  y = Resize(F({0, 1, 0, 0}, {4}), {}, {3}, {{"mode", "cubic"}, {"coordinate_transformation_mode", "align_corners"}});
  ASSERT_TRUE(y.ok()) << y.status();
  const double a = -0.75, h = 0.5;
  const double w_in = (a + 2) * h * h * h - (a + 3) * h * h + 1;
  // y = 1 maps to x = 1.5: neighbours 0, 1, 2, 3 with weights W(1.5), W(0.5), W(0.5), W(1.5).
  EXPECT_NEAR(y->data<float>()[1], w_in, 1e-6);
  // exclude_outside renormalizes the taps inside: at x = 0 of [5, 7] nothing changes.
  y = Resize(F({5, 7}, {2}), {}, {2}, {{"mode", "cubic"}, {"coordinate_transformation_mode", "align_corners"}},
             [](onnx::NodeProto& n) { SetAttr(n, "exclude_outside", int64_t(1)); });
  EXPECT_THAT(Values(*y), ElementsAre(5, 7));
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  // Crop [0.5, 1.5] of a 3-wide row: x = 0.5*2 + y * 1*2 / 1 = 1, 3 (outside: extrapolated).
  auto y = Resize(F({10, 20, 30}, {3}), {}, {2}, {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}},
                  [](onnx::NodeProto& n) { SetAttr(n, "extrapolation_value", -1.0f); }, 19, F({0.5f, 1.5f}, {2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(20, -1));
  // Along one axis of two (axes), the other keeps its size.
  y = Resize(F({1, 2, 3, 4}, {2, 2}), {}, {3}, {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}},
             [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{-1}); }, 19, F({0, 1}, {2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1, 1.5, 2, 3, 3.5, 4));
}

TEST(Resize, AxesAndKeepAspectRatio) {
  const Tensor x = Random(DType::kFloat, {1, 1, 2, 4}, 3);
  auto larger = Resize(x, {}, {4, 4}, {{"mode", "nearest"}, {"keep_aspect_ratio_policy", "not_larger"}},
                       [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{2, 3}); });
  ASSERT_TRUE(larger.ok()) << larger.status();
  EXPECT_EQ(larger->shape(), Shape({1, 1, 2, 4}));  // scale min(2, 1) = 1
  EXPECT_EQ(Values(*larger), Values(x));
  auto smaller = Resize(x, {}, {4, 4}, {{"mode", "nearest"}, {"keep_aspect_ratio_policy", "not_smaller"}},
                        [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{3, 2}); });
  ASSERT_TRUE(smaller.ok()) << smaller.status();
  EXPECT_EQ(smaller->shape(), Shape({1, 1, 4, 8}));  // scale max(1, 2) = 2
  // axes in another order: scales follow the axes.
  auto a = Resize(x, {3, 1}, {}, {{"mode", "linear"}}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{3, 2}); });
  auto b = Resize(x, {1, 1, 1, 3}, {}, {{"mode", "linear"}});
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->shape(), Shape({1, 1, 2, 12}));
  EXPECT_EQ(Values(*a), Values(*b));
}

TEST(Resize, IntegersRoundHalfToEvenAndSaturate) {
  auto y = Resize(Tensor::FromVector<uint8_t>({0, 255, 1, 2}, {4}), {}, {7},
                  {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}});
  ASSERT_TRUE(y.ok()) << y.status();
  // x = 0, .5, 1, 1.5, 2, 2.5, 3: 127.5 -> 128, 128 -> 128, 1.5 -> 2.
  EXPECT_THAT(Values(*y), ElementsAre(0, 128, 255, 128, 1, 2, 2));
  // Cubic overshoot saturates.
  y = Resize(Tensor::FromVector<uint8_t>({0, 0, 255, 255}, {4}), {2}, {}, {{"mode", "cubic"}});
  ASSERT_TRUE(y.ok()) << y.status();
  for (double v : Values(*y)) EXPECT_TRUE(v >= 0 && v <= 255);
  EXPECT_EQ(Values(*y)[5], 255);  // x = 2.25: 255 * (1 - W(1.25)) = 282 saturates
  auto big = Resize(Tensor::FromVector<int64_t>({int64_t(1) << 60, 3}, {2}), {}, {4}, {{"mode", "nearest"}});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->data<int64_t>()[0], int64_t(1) << 60);  // nearest copies exactly
}

TEST(Resize, LegacyVersions) {
  const Tensor x = F({1, 2, 3, 4}, {2, 2});
  // Upsample-7: scales attribute; nearest floors: rows 0 0 1 1, columns 0 0 0 1 1 1.
  OpTester t;
  t.op = "Upsample";
  t.opset = 7;
  t.inputs = {x};
  t.attrs = [](onnx::NodeProto& n) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("scales");
    a->set_type(onnx::AttributeProto::FLOATS);
    a->add_floats(2);
    a->add_floats(3);
  };
  auto y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAreArray({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  // Upsample-9 linear: asymmetric, x = y / 2.
  auto lin = RunOne(9, "Upsample", {F({1, 3}, {1, 2}), F({1, 2}, {2})},
                    [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("linear")); });
  ASSERT_TRUE(lin.ok()) << lin.status();
  EXPECT_THAT(Values(*lin), ElementsAre(1, 2, 3, 3));
  EXPECT_THAT(Message(RunOne(9, "Upsample", {x, F({1, 0.5f}, {2})}).status()), HasSubstr("Upsample scale 0.5 of axis 1 is below 1"));
  // Resize-10: nearest downsampling takes the ceiling (x = y / 0.5 = 0, 2; 1.33 -> 2).
  auto r10 = RunOne(10, "Resize", {F({1, 2, 3, 4}, {4}), F({0.75f}, {1})});
  ASSERT_TRUE(r10.ok()) << r10.status();
  EXPECT_THAT(Values(*r10), ElementsAre(1, 3, 4));
  EXPECT_THAT(Message(RunOne(10, "Resize", {x, F({1, 2}, {2})}, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("cubic")); }).status()),
              HasSubstr("mode 'cubic' is not supported"));
}

TEST(Resize, FastMatchesReference) {
  struct Case {
    Shape in;
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    Str strings;
    int64_t antialias = 0, exclude = 0;
    std::vector<int64_t> axes = {};
  };
  const std::vector<std::string> coords = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                           "asymmetric", "tf_crop_and_resize"};
  std::vector<Case> cases;
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const std::string& coord : coords) {
      cases.push_back({{2, 3, 5, 7}, {1, 1, 1.7f, 0.6f}, {}, {{"mode", mode}, {"coordinate_transformation_mode", coord}}});
      cases.push_back({{3, 9, 4}, {}, {2, 4, 11}, {{"mode", mode}, {"coordinate_transformation_mode", coord}}, 0, 1});
      cases.push_back({{1, 1, 13, 6}, {}, {5, 3}, {{"mode", mode}, {"coordinate_transformation_mode", coord}}, 1, 0, {2, 3}});
    }
  for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    cases.push_back({{4, 6}, {1.5f, 0.7f}, {}, {{"mode", "nearest"}, {"nearest_mode", nm}}});
  cases.push_back({{1, 17, 1}, {}, {1, 3, 1}, {{"mode", "cubic"}}, 1, 1});
  cases.push_back({{2, 2, 3, 3}, {}, {2, 7}, {{"mode", "linear"}, {"keep_aspect_ratio_policy", "not_smaller"}}, 0, 0, {3, 1}});
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kUInt8}) {
      SCOPED_TRACE(absl::StrCat(ShapeToString(c.in), " ", c.strings[0].second, " ",
                                c.strings.size() > 1 ? c.strings[1].second : "", " ", LowerName(dtype)));
      const Tensor x = Info(dtype).kind == DTypeKind::kFloat ? RandomUniform(dtype, c.in, seed++, -3, 3)
                                                               : Random(dtype, c.in, seed++);
      const bool crop = c.strings.size() > 1 && c.strings[1].second == "tf_crop_and_resize";
      const int64_t na = c.axes.empty() ? int64_t(c.in.size()) : int64_t(c.axes.size());
      std::vector<float> roi(size_t(2 * na));
      for (int64_t i = 0; i < na; ++i) roi[size_t(i)] = 0.2f - 0.1f * float(i), roi[size_t(na + i)] = 0.9f + 0.1f * float(i);
      const auto more = [&](onnx::NodeProto& n) {
        if (c.antialias) SetAttr(n, "antialias", c.antialias);
        if (c.exclude) SetAttr(n, "exclude_outside", c.exclude);
        if (!c.axes.empty()) SetAttr(n, "axes", c.axes);
        SetAttr(n, "extrapolation_value", 2.5f);
      };
      const Tensor roi_t = crop ? F(roi, {2 * na}) : Tensor();
      absl::StatusOr<Tensor> fast, ref;
      {
        ReferenceScope scope(false);
        fast = Resize(x, c.scales, c.sizes, c.strings, more, 19, roi_t);
      }
      {
        ReferenceScope scope(true);
        ref = Resize(x, c.scales, c.sizes, c.strings, more, 19, roi_t);
      }
      ASSERT_TRUE(fast.ok()) << fast.status();
      ASSERT_TRUE(ref.ok()) << ref.status();
      ASSERT_EQ(fast->shape(), ref->shape());
      const double tol = dtype == DType::kBFloat16 ? 5e-2 : dtype == DType::kFloat16 ? 1e-2 : dtype == DType::kFloat ? 1e-5 : 1e-9;
      const bool integer = Info(dtype).kind != DTypeKind::kFloat;
      for (int64_t i = 0; i < fast->size(); ++i) {
        const double f = GetDouble(*fast, i), r = GetDouble(*ref, i);
        // Integers may land on the other side of a rounding tie.
        ASSERT_NEAR(f, r, integer ? 1.0 : tol * (1 + std::abs(r))) << "element " << i;
      }
    }
  }
}

TEST(Resize, ScalesAndSizesKnownOnlyAtRun) {
  // sizes is a graph input: the output shape and the taps are made at each run.
  OpTester t;
  t.op = "Resize";
  t.opset = 13;
  t.inputs = {F({1, 2, 3, 4}, {1, 4}), Tensor(), Tensor(), I({1, 2}, {2})};
  t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("linear")); };
  auto y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(1.5, 3.5));  // half_pixel: x = 0.5, 2.5
  t.inputs = {F({1, 2, 3, 4}, {2, 2}), Tensor(), F({2, 0.5f}, {2})};
  y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({4, 1}));
  EXPECT_THAT(Values(*y), ElementsAre(1.5, 2, 3, 3.5));  // rows x = -0.25, 0.25, 0.75, 1.25; columns x = 0.5
}

TEST(Resize, EmptyAndRules) {
  auto y = Resize(Tensor::Zeros(DType::kFloat, {0, 3}), {}, {0, 6}, {{"mode", "linear"}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({0, 6}));
  y = Resize(F({1, 2}, {2}), {}, {0}, {{"mode", "cubic"}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({0}));
  const Tensor x = F({1, 2, 3, 4}, {2, 2});
  EXPECT_THAT(Message(Resize(x, {1, 2}, {2, 4}, {}).status()), HasSubstr("scales and sizes are both given"));
  EXPECT_THAT(Message(Resize(x, {}, {}, {}).status()), HasSubstr("neither scales nor sizes is given"));
  EXPECT_THAT(Message(Resize(x, {2}, {}, {}).status()), HasSubstr("scales has 1 values for 2 resized axes"));
  EXPECT_THAT(Message(Resize(x, {}, {4}, {}).status()), HasSubstr("sizes has 1 values for 2 resized axes"));
  EXPECT_THAT(Message(Resize(x, {1, -2}, {}, {}).status()), HasSubstr("scale -2 of axis 1 is not positive"));
  EXPECT_THAT(Message(Resize(x, {}, {2, -1}, {}).status()), HasSubstr("sizes value -1 for axis 1 is negative"));
  EXPECT_THAT(Message(Resize(x, {1, 2}, {}, {{"mode", "area"}}).status()), HasSubstr("mode 'area' is not supported"));
  EXPECT_THAT(Message(Resize(x, {1, 2}, {}, {{"coordinate_transformation_mode", "corners"}}).status()),
              HasSubstr("coordinate_transformation_mode 'corners' is not supported"));
  EXPECT_THAT(Message(Resize(x, {1, 2}, {}, {{"keep_aspect_ratio_policy", "not_larger"}}).status()),
              HasSubstr("scales cannot be used with keep_aspect_ratio_policy"));
  EXPECT_THAT(Message(Resize(x, {1, 2}, {}, {}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{1, -1}); }).status()),
              HasSubstr("axes lists axis 1 twice"));
  EXPECT_THAT(Message(Resize(x, {1, 2}, {}, {{"coordinate_transformation_mode", "tf_crop_and_resize"}}).status()),
              HasSubstr("tf_crop_and_resize needs roi"));
  EXPECT_THAT(Message(Resize(x, {1, 2}, {}, {{"coordinate_transformation_mode", "tf_crop_and_resize"}}, {}, 19, F({0, 1}, {2})).status()),
              HasSubstr("roi has 2 values; expected 4"));
  EXPECT_THAT(Message(Resize(x, {1, 1e30f}, {}, {}).status()), HasSubstr("too large"));
  // A hostile roi (huge, NaN) only extrapolates.
  for (const Tensor& roi : {F({-1e30f, 1e30f}, {2}), F({NAN, 1}, {2})}) {
    auto e = Resize(F({1, 2, 3}, {3}), {}, {4}, {{"mode", "cubic"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}},
                    [](onnx::NodeProto& n) { SetAttr(n, "extrapolation_value", 7.0f); }, 19, roi);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_THAT(Values(*e), ElementsAre(7, 7, 7, 7));
  }
  EXPECT_THAT(Message(Resize(Tensor::Zeros(DType::kFloat, {0, 2}), {}, {3, 2}, {}).status()),
              HasSubstr("is empty and cannot become 3"));
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: the separable passes' intermediates (and a 16-bit
// input widened) count against the session's memory budget.
TEST(Resize, IntermediatesCountAgainstTheMemoryLimit) {
  for (DType dtype : {DType::kFloat, DType::kFloat16}) {
    SCOPED_TRACE(LowerName(dtype));
    const Tensor x = RandomUniform(dtype, {1, 1, 256, 256}, 7);
    OpTester t;
    t.op = "Resize";
    t.opset = 19;
    t.inputs = {x, Tensor(), F({1, 1, 2, 2}, {4})};
    t.constant = {false, true, true};
    t.attrs = [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("linear")); };
    const size_t y = 512 * 512 * StorageBytes(dtype, 1);
    // Y fits; the first pass's 512 x 256 floats do not.
    t.memory_limit = y + 256 * 1024;
    absl::StatusOr<Tensor> over = t.RunOne();
    ASSERT_FALSE(over.ok());
    EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
    EXPECT_THAT(Message(over.status()), HasSubstr("Resize node 'Resize_1'"));
    EXPECT_THAT(Message(over.status()), HasSubstr(absl::StrCat("exceed the session's memory limit of ", t.memory_limit)));
    t.memory_limit = y + (size_t(3) << 20);
    absl::StatusOr<Tensor> got = t.RunOne();
    ASSERT_TRUE(got.ok()) << got.status();
    Tensor want;
    {
      ReferenceScope scope(true);
      t.memory_limit = 0;
      absl::StatusOr<Tensor> ref = t.RunOne();
      ASSERT_TRUE(ref.ok()) << ref.status();
      want = *ref;
    }
    ASSERT_EQ(got->shape(), (Shape{1, 1, 512, 512}));
    for (int64_t i = 0; i < got->size(); ++i)
      ASSERT_NEAR(GetDouble(*got, i), GetDouble(want, i), dtype == DType::kFloat ? 1e-5 : 2e-3) << i;
  }
}

}  // namespace
}  // namespace onnx_mini
