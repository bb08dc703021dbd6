// ops/quant/quantize.cc: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger and QLinearMatMul on hand-computed values, and the integer
// product (oneDNN for int8 B, the reference for uint8 B) against a plain
// computation over random shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ops/common.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A tensor of `dtype` holding `values` (packed types included).
Tensor Of(DType dtype, std::vector<double> values, Shape shape) {
  Tensor t = Tensor::Zeros(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) SetDouble(t, int64_t(i), values[i]);
  return t;
}

Attrs Ints(std::vector<std::pair<std::string, int64_t>> values) {
  return [values](onnx::NodeProto& n) {
    for (const auto& [k, v] : values) SetAttr(n, k, v);
  };
}

// Blocked DequantizeLinear over every block format (kernels/quant/
// block_format.h): the axis last (whole blocks through the row function)
// and first (elements of a block apart), a short last block, zero points
// packed like the data or absent, each output type; expected values from a
// plain loop here, as the plain path computes them.
TEST(DequantizeLinear, BlockedOverEveryBlockFormat) {
  std::mt19937 rng(11);
  for (DType xt : {DType::kInt4, DType::kUInt4, DType::kInt8, DType::kUInt8, DType::kInt2, DType::kUInt2})
    for (DType yt : {DType::kFloat, DType::kFloat16, DType::kBFloat16})
      for (int64_t axis : {1, 0})
        for (bool with_zero : {true, false})
          for (const Shape& shape : {Shape{3, 37}, Shape{5, 3}, Shape{4, 9000}}) {
            SCOPED_TRACE(absl::StrCat(LowerName(xt), " to ", LowerName(yt), " axis ", axis, with_zero ? " zero" : "",
                                      " ", ShapeToString(shape)));
            const int64_t block = shape[1] > 1000 ? 32 : 4;
            const int bits = Info(xt).bits;
            const bool is_signed = Info(xt).kind == DTypeKind::kSigned;
            const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0, span = int64_t(1) << bits;
            Tensor x = Tensor::Zeros(xt, shape);
            for (int64_t e = 0; e < x.size(); ++e) SetDouble(x, e, double(lo + int64_t(rng() % uint32_t(span))));
            Shape ss = shape;
            ss[size_t(axis)] = (shape[size_t(axis)] + block - 1) / block;
            Tensor scale = Tensor::Zeros(yt, ss), zero = Tensor::Zeros(xt, ss);
            for (int64_t k = 0; k < scale.size(); ++k) {
              SetDouble(scale, k, 0.01 * double(1 + rng() % 100));
              SetDouble(zero, k, double(lo + int64_t(rng() % uint32_t(span))));
            }
            std::vector<Tensor> inputs = {x, scale};
            if (with_zero) inputs.push_back(zero);
            absl::StatusOr<Tensor> y = RunOne(21, "DequantizeLinear", inputs, Ints({{"axis", axis}, {"block_size", block}}),
                                              shape[1] > 1000 ? 2 : 0);  // large: split across threads
            ASSERT_TRUE(y.ok()) << y.status();
            ASSERT_EQ(y->dtype(), yt);
            for (int64_t r = 0; r < shape[0]; ++r)
              for (int64_t c = 0; c < shape[1]; ++c) {
                const int64_t e = r * shape[1] + c;
                const int64_t k = axis == 1 ? r * ss[1] + c / block : (r / block) * ss[1] + c;
                const float d = float(GetDouble(x, e) - (with_zero ? GetDouble(zero, k) : 0.0));
                const float want = d * float(GetDouble(scale, k));
                Tensor w = Tensor::Zeros(yt, {1});
                SetDouble(w, 0, double(want));
                ASSERT_EQ(GetDouble(*y, e), GetDouble(w, 0)) << "element (" << r << ", " << c << ")";
              }
          }
}

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  const Tensor x = F({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f}, {7});
  // No zero point: uint8.
  absl::StatusOr<Tensor> u8 = RunOne(10, "QuantizeLinear", {x, F({1}, {})});
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_EQ(u8->dtype(), DType::kUInt8);
  EXPECT_THAT(Values(*u8), ElementsAre(0, 2, 2, 0, 0, 255, 0));
  // A negative zero point is added after rounding, before saturation.
  absl::StatusOr<Tensor> i8 = RunOne(13, "QuantizeLinear", {x, F({1}, {}), Of(DType::kInt8, {-3}, {})});
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_THAT(Values(*i8), ElementsAre(-3, -1, -1, -3, -5, 127, -128));
  // int16 and uint16 saturate to their own ranges.
  absl::StatusOr<Tensor> i16 = RunOne(21, "QuantizeLinear", {F({1e6f, -2.5f}, {2}), F({1}, {}), Of(DType::kInt16, {0}, {})});
  ASSERT_TRUE(i16.ok()) << i16.status();
  EXPECT_THAT(Values(*i16), ElementsAre(32767, -2));
  absl::StatusOr<Tensor> u16 = RunOne(21, "QuantizeLinear", {F({1e6f, 3.5f}, {2}), F({1}, {}), Of(DType::kUInt16, {0}, {})});
  ASSERT_TRUE(u16.ok()) << u16.status();
  EXPECT_THAT(Values(*u16), ElementsAre(65535, 4));
}

TEST(QuantizeLinear, PerAxisAndBlockedScales) {
  // Scales [1, 2, 4] and zero points [0, 10, 100] along axis 1.
  const Tensor x = F({2, 4, 8, -2, 5, -400}, {2, 3});
  absl::StatusOr<Tensor> axis = RunOne(13, "QuantizeLinear", {x, F({1, 2, 4}, {3}), Of(DType::kUInt8, {0, 10, 100}, {3})});
  ASSERT_TRUE(axis.ok()) << axis.status();
  EXPECT_THAT(Values(*axis), ElementsAre(2, 12, 102, 0, 12, 0));
  // Blocks of 2 along axis 1 of a [2, 5] input: 3 scales per row, the last block short.
  const Tensor xb = F({1, 2, 3, 4, 5, 10, 20, 30, 40, 50}, {2, 5});
  absl::StatusOr<Tensor> blocked = RunOne(21, "QuantizeLinear", {xb, F({1, 2, 4, 10, 20, 40}, {2, 3})},
                                          Ints({{"axis", 1}, {"block_size", 2}, {"output_dtype", int64_t(DType::kInt8)}}));
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_EQ(blocked->dtype(), DType::kInt8);
  // 3 / 2 = 1.5 -> 2, 5 / 4 = 1.25 -> 1, 30 / 20 = 1.5 -> 2, 50 / 40 -> 1.
  EXPECT_THAT(Values(*blocked), ElementsAre(1, 2, 2, 2, 1, 1, 2, 2, 2, 1));
  // Negative axis.
  absl::StatusOr<Tensor> neg = RunOne(13, "QuantizeLinear", {x, F({1, 2, 4}, {3}), Of(DType::kUInt8, {0, 10, 100}, {3})},
                                      Ints({{"axis", -1}}));
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_THAT(Values(*neg), ElementsAre(2, 12, 102, 0, 12, 0));
}

TEST(QuantizeLinear, PackedTypesWithOddCounts) {
  const Tensor x = F({-9, -1.5f, 0.5f, 7.4f, 20}, {5});
  absl::StatusOr<Tensor> i4 = RunOne(21, "QuantizeLinear", {x, F({1}, {}), Of(DType::kInt4, {0}, {})});
  ASSERT_TRUE(i4.ok()) << i4.status();
  EXPECT_EQ(i4->dtype(), DType::kInt4);
  EXPECT_THAT(Values(*i4), ElementsAre(-8, -2, 0, 7, 7));
  absl::StatusOr<Tensor> u4 = RunOne(21, "QuantizeLinear", {x, F({1}, {}), Of(DType::kUInt4, {8}, {})});
  ASSERT_TRUE(u4.ok()) << u4.status();
  EXPECT_THAT(Values(*u4), ElementsAre(0, 6, 8, 15, 15));
  absl::StatusOr<Tensor> i2 = RunOne(25, "QuantizeLinear", {F({-3, 0.6f, 1.5f}, {3}), F({1}, {}), Of(DType::kInt2, {0}, {})});
  ASSERT_TRUE(i2.ok()) << i2.status();
  EXPECT_THAT(Values(*i2), ElementsAre(-2, 1, 1));
  absl::StatusOr<Tensor> u2 = RunOne(25, "QuantizeLinear", {F({-3, 0.6f, 2.5f}, {3}), F({1}, {}), Of(DType::kUInt2, {1}, {})});
  ASSERT_TRUE(u2.ok()) << u2.status();
  EXPECT_THAT(Values(*u2), ElementsAre(0, 2, 3));
}

TEST(QuantizeLinear, Float8AndFloat4WithSaturate) {
  const Tensor x = F({1000, -1000, 0.3f}, {3});
  absl::StatusOr<Tensor> sat = RunOne(19, "QuantizeLinear", {x, F({1}, {}), Of(DType::kFloat8E4M3FN, {0}, {})});
  ASSERT_TRUE(sat.ok()) << sat.status();
  EXPECT_THAT(Values(*sat), ElementsAre(448, -448, 0.3125));
  absl::StatusOr<Tensor> nosat = RunOne(19, "QuantizeLinear", {x, F({1}, {}), Of(DType::kFloat8E4M3FN, {0}, {})},
                                        Ints({{"saturate", 0}}));
  ASSERT_TRUE(nosat.ok()) << nosat.status();
  EXPECT_TRUE(std::isnan(Values(*nosat)[0]));
  absl::StatusOr<Tensor> e5m2 = RunOne(19, "QuantizeLinear", {F({1e6f, -1e6f}, {2}), F({1}, {}), Of(DType::kFloat8E5M2, {0}, {})},
                                       Ints({{"saturate", 0}}));
  ASSERT_TRUE(e5m2.ok()) << e5m2.status();
  EXPECT_THAT(Values(*e5m2), ElementsAre(std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()));
  // float4e2m1 saturates to 6; 2.5 is a tie between 2 and 3 -> 2 (even mantissa).
  absl::StatusOr<Tensor> f4 = RunOne(23, "QuantizeLinear", {F({100, 2.5f, -0.25f}, {3}), F({1}, {}),
                                                            Of(DType::kFloat4E2M1, {0}, {})});
  ASSERT_TRUE(f4.ok()) << f4.status();
  EXPECT_THAT(Values(*f4), ElementsAre(6, 2, -0.0));
}

TEST(QuantizeLinear, DivisionInTheScalesTypeOrPrecision) {
  // 2.5004 is 2.5 in float16 (a tie, rounded to 2) but rounds to 3 in float.
  const Tensor x = F({2.5004f}, {1});
  absl::StatusOr<Tensor> f32 = RunOne(23, "QuantizeLinear", {x, F({1}, {}), Of(DType::kInt8, {0}, {})});
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_THAT(Values(*f32), ElementsAre(3));
  absl::StatusOr<Tensor> f16 = RunOne(23, "QuantizeLinear", {x, Of(DType::kFloat16, {1}, {}), Of(DType::kInt8, {0}, {})});
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_THAT(Values(*f16), ElementsAre(2));
  absl::StatusOr<Tensor> p = RunOne(23, "QuantizeLinear", {x, F({1}, {}), Of(DType::kInt8, {0}, {})},
                                    Ints({{"precision", int64_t(DType::kFloat16)}}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Values(*p), ElementsAre(2));
}

TEST(DequantizeLinear, PerTensorPerAxisBlockedAndTypes) {
  absl::StatusOr<Tensor> i8 = RunOne(10, "DequantizeLinear", {Of(DType::kInt8, {-128, 0, 127}, {3}), F({0.5f}, {}),
                                                              Of(DType::kInt8, {-1}, {})});
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_EQ(i8->dtype(), DType::kFloat);
  EXPECT_THAT(Values(*i8), ElementsAre(-63.5, 0.5, 64));
  // Per-axis over an odd count of uint4 values.
  absl::StatusOr<Tensor> u4 = RunOne(21, "DequantizeLinear", {Of(DType::kUInt4, {1, 15, 7}, {3}), F({1, 2, 3}, {3}),
                                                              Of(DType::kUInt4, {1, 1, 1}, {3})},
                                     Ints({{"axis", 0}}));
  ASSERT_TRUE(u4.ok()) << u4.status();
  EXPECT_THAT(Values(*u4), ElementsAre(0, 28, 18));
  // Blocks of 2 rows along axis 0 of a [3, 2] input.
  absl::StatusOr<Tensor> blocked = RunOne(21, "DequantizeLinear", {Of(DType::kInt8, {1, 2, 3, 4, 5, 6}, {3, 2}),
                                                                   F({1, 10, 100, 1000}, {2, 2})},
                                          Ints({{"axis", 0}, {"block_size", 2}}));
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_THAT(Values(*blocked), ElementsAre(1, 20, 3, 40, 500, 6000));
  absl::StatusOr<Tensor> i32 = RunOne(13, "DequantizeLinear", {Tensor::FromVector<int32_t>({100000}, {1}), F({2}, {}),
                                                               Tensor::FromVector<int32_t>({-5}, {})});
  ASSERT_TRUE(i32.ok()) << i32.status();
  EXPECT_THAT(Values(*i32), ElementsAre(200010));
  absl::StatusOr<Tensor> f16 = RunOne(23, "DequantizeLinear", {Of(DType::kInt8, {1}, {1}), F({0.1f}, {})},
                                      Ints({{"output_dtype", int64_t(DType::kFloat16)}}));
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ(f16->dtype(), DType::kFloat16);
  EXPECT_EQ(f16->data<Float16>()[0].bits, ToFloat16(0.1f).bits);
  absl::StatusOr<Tensor> e4m3 = RunOne(19, "DequantizeLinear", {Of(DType::kFloat8E4M3FN, {-3.5, 448}, {2}), F({2}, {})});
  ASSERT_TRUE(e4m3.ok()) << e4m3.status();
  EXPECT_THAT(Values(*e4m3), ElementsAre(-7, 896));
  absl::StatusOr<Tensor> i2 = RunOne(25, "DequantizeLinear", {Of(DType::kInt2, {-2, -1, 0, 1, 1}, {5}), F({3}, {})});
  ASSERT_TRUE(i2.ok()) << i2.status();
  EXPECT_THAT(Values(*i2), ElementsAre(-6, -3, 0, 3, 3));
}

TEST(QuantizeOps, BadAxesAndShapesAreErrors) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<Tensor> axis = RunOne(13, "QuantizeLinear", {x, F({1, 2, 3}, {3})}, Ints({{"axis", 2}}));
  ASSERT_FALSE(axis.ok());
  EXPECT_THAT(Message(axis.status()), HasSubstr("axis"));
  absl::StatusOr<Tensor> len = RunOne(13, "QuantizeLinear", {x, F({1, 2}, {2})});
  ASSERT_FALSE(len.ok());
  EXPECT_THAT(Message(len.status()), HasSubstr("per-axis scale must be 1-D with x's dim 3 at axis 1"));
  absl::StatusOr<Tensor> zp = RunOne(13, "DequantizeLinear", {Of(DType::kInt8, {1, 2, 3, 4, 5, 6}, {2, 3}), F({1, 2, 3}, {3}),
                                                              Of(DType::kInt8, {0}, {})});
  ASSERT_FALSE(zp.ok());
  EXPECT_THAT(Message(zp.status()), HasSubstr("zero point's shape [] must be the scale's [3]"));
  absl::StatusOr<Tensor> block = RunOne(21, "QuantizeLinear", {x, F({1, 2}, {2, 1})}, Ints({{"block_size", 2}}));
  ASSERT_FALSE(block.ok());
  EXPECT_THAT(Message(block.status()), HasSubstr("blocked scale must be x's shape with ceil(3 / block_size 2)"));
  absl::StatusOr<Tensor> old = RunOne(10, "QuantizeLinear", {x, F({1, 2, 3}, {3})});
  ASSERT_FALSE(old.ok());
  EXPECT_THAT(Message(old.status()), HasSubstr("scalar before opset 13"));
  absl::StatusOr<Tensor> dtype = RunOne(21, "QuantizeLinear", {x, F({1}, {}), Of(DType::kInt8, {0}, {})},
                                        Ints({{"output_dtype", int64_t(DType::kUInt8)}}));
  ASSERT_FALSE(dtype.ok());
  EXPECT_THAT(Message(dtype.status()), HasSubstr("output_dtype uint8 differs from y_zero_point's int8"));
  EXPECT_FALSE(RunOne(21, "QuantizeLinear", {x, F({1}, {})}, Ints({{"block_size", -1}})).ok());
  // A block larger than the axis: one block (and no overflow in ceil).
  absl::StatusOr<Tensor> huge = RunOne(21, "QuantizeLinear", {x, F({1, 2, 3, 4, 5, 6}, {2, 3}), Of(DType::kInt8, {0, 0, 0, 0, 0, 0}, {2, 3})},
                                       Ints({{"axis", 0}, {"block_size", std::numeric_limits<int64_t>::max()}}));
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(Message(huge.status()), HasSubstr("ceil(2 / block_size 9223372036854775807) at axis 0"));
  absl::StatusOr<Tensor> one = RunOne(21, "QuantizeLinear", {x, F({1, 2, 4}, {1, 3}), Of(DType::kInt8, {0, 0, 0}, {1, 3})},
                                      Ints({{"axis", 0}, {"block_size", std::numeric_limits<int64_t>::max()}}));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(Values(*one), ElementsAre(1, 1, 1, 4, 2, 2));
}

TEST(DynamicQuantizeLinear, ScaleAndZeroPointFromTheRange) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(11, "DynamicQuantizeLinear", {F({-1, 0, 1, 2.5f}, {4})}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  const float scale = 3.5f / 255.0f;
  EXPECT_THAT(Values((*out)[0]), ElementsAre(0, 73, 146, 255));
  EXPECT_EQ((*out)[1].data<float>()[0], scale);
  EXPECT_THAT(Values((*out)[2]), ElementsAre(73));
  // All zeros: a range of 1.
  absl::StatusOr<std::vector<Tensor>> zeros = RunNode(11, "DynamicQuantizeLinear", {F({0, 0}, {2})}, 3);
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_THAT(Values((*zeros)[0]), ElementsAre(0, 0));
  EXPECT_EQ((*zeros)[1].data<float>()[0], 1.0f / 255.0f);
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  const Tensor a = Of(DType::kUInt8, {1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = Of(DType::kInt8, {1, -1, 0, 2, -3, 1}, {3, 2});
  absl::StatusOr<Tensor> c = RunOne(10, "MatMulInteger", {a, b, Of(DType::kUInt8, {1, 3}, {2}), Of(DType::kInt8, {0, 1}, {2})});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dtype(), DType::kInt32);
  EXPECT_THAT(Values(*c), ElementsAre(-6, 1, -8, 0));
  absl::StatusOr<Tensor> bad = RunOne(10, "MatMulInteger", {a, b, Of(DType::kUInt8, {1, 3, 4}, {3})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("one per row of A"));
}

// Rows known only at run time: the output keeps the rank, the rows' dims as
// they are and B's columns (what rewrites downstream read); known inner dims
// that differ are refused at session creation.
TEST(MatMulInteger, InfersTheDimsItKnowsBeforeRunning) {
  for (int64_t k : {8, 5}) {
    ModelBuilder m(10);
    m.Input("a", DType::kUInt8, {-1, -1, 8}).Output("c", DType::kInt32, {-1, -1, -1});
    m.Initializer("b", Tensor::Zeros(DType::kInt8, {k, 4}));
    m.Node("MatMulInteger", {"a", "b"}, {"c"});
    absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
    if (k == 5) {
      ASSERT_FALSE(s.ok());
      EXPECT_THAT(Message(s.status()), HasSubstr("inner dimensions differ"));
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->outputs()[0].type.ToString(), "int32[N0,N1,4]");  // the input's symbols
    absl::StatusOr<std::vector<Tensor>> c = (*s)->Run({{"a", Tensor::Zeros(DType::kUInt8, {2, 3, 8})}});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)[0].shape(), (Shape{2, 3, 4}));
  }
}

TEST(MatMulInteger, AgreesWithAPlainProductAcrossShapes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5}, {5, 4}}, {{2, 1, 3, 7}, {4, 7, 2}}, {{5}, {5, 3}}, {{2, 4}, {4}}, {{0, 3}, {3, 2}}, {{1, 17, 9}, {9, 33}},
      {{3, 2, 300}, {300, 5}}, {{2, 2, 40}, {2, 40, 3}}};
  uint32_t seed = 7;
  for (DType ta : {DType::kUInt8, DType::kInt8})
    for (DType tb : {DType::kUInt8, DType::kInt8})
      for (const auto& [sa, sb] : shapes) {
        const Tensor a = RandomUniform(ta, sa, seed++, ta == DType::kInt8 ? -128 : 0, ta == DType::kInt8 ? 128 : 256);
        const Tensor b = RandomUniform(tb, sb, seed++, tb == DType::kInt8 ? -128 : 0, tb == DType::kInt8 ? 128 : 256);
        // Zero points or none; int8 B runs on oneDNN, uint8 B on the reference.
        const double zav = seed % 4 < 2 ? 3 : 0, zbv = seed % 4 < 2 ? 5 : 0;
        const Tensor za = Of(ta, {zav}, {}), zb = Of(tb, {zbv}, {});
        absl::StatusOr<Tensor> c = RunOne(10, "MatMulInteger", {a, b, za, zb});
        ASSERT_TRUE(c.ok()) << c.status();
        // The plain product, through NumPy's matmul semantics, in double.
        Shape a2 = sa, b2 = sb;
        if (a2.size() == 1) a2.insert(a2.begin(), 1);
        if (b2.size() == 1) b2.push_back(1);
        const int64_t M = a2[a2.size() - 2], K = a2.back(), N = b2.back();
        const Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
        Shape batch(std::max(ba.size(), bb.size()), 1);
        for (size_t d = 0; d < batch.size(); ++d) {
          const size_t pa = batch.size() - ba.size(), pb = batch.size() - bb.size();
          batch[d] = std::max(d >= pa ? ba[d - pa] : 1, d >= pb ? bb[d - pb] : 1);
        }
        const std::vector<int64_t> stride_a = BroadcastStrides(ba, batch), stride_b = BroadcastStrides(bb, batch);
        const int64_t batches = ElementCount(batch);
        ASSERT_EQ(c->size(), batches * M * N);
        for (int64_t t = 0; t < batches; ++t)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double acc = 0;
              int64_t oa = 0, ob = 0;
              for (int64_t d = int64_t(batch.size()) - 1, r = t; d >= 0; r /= batch[size_t(d)], --d) {
                oa += (r % batch[size_t(d)]) * stride_a[size_t(d)];
                ob += (r % batch[size_t(d)]) * stride_b[size_t(d)];
              }
              for (int64_t k = 0; k < K; ++k)
                acc += (GetDouble(a, (oa * M + m) * K + k) - zav) * (GetDouble(b, (ob * K + k) * N + n) - zbv);
              ASSERT_EQ(GetDouble(*c, (t * M + m) * N + n), acc) << LowerName(ta) << " x " << LowerName(tb);
            }
      }
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPointsOnBothPaths) {
  // int8 B runs on oneDNN (zero points applied as row and column sums),
  // uint8 B on the reference: both against the plain sum.
  const int64_t M = 7, K = 129, N = 5;
  uint32_t seed = 40;
  for (DType ta : {DType::kUInt8, DType::kInt8})
    for (DType tb : {DType::kInt8, DType::kUInt8}) {
      const double alo = ta == DType::kInt8 ? -128 : 0, blo = tb == DType::kInt8 ? -128 : 0;
      const Tensor a = RandomUniform(ta, {M, K}, seed++, alo, alo + 256);
      const Tensor b = RandomUniform(tb, {K, N}, seed++, blo, blo + 256);
      const Tensor za = RandomUniform(ta, {M}, seed++, alo, alo + 256);
      const Tensor zb = RandomUniform(tb, {N}, seed++, blo, blo + 256);
      absl::StatusOr<Tensor> c = RunOne(10, "MatMulInteger", {a, b, za, zb});
      ASSERT_TRUE(c.ok()) << c.status();
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += (GetDouble(a, m * K + k) - GetDouble(za, m)) * (GetDouble(b, k * N + n) - GetDouble(zb, n));
          ASSERT_EQ(GetDouble(*c, m * N + n), acc) << LowerName(ta) << " x " << LowerName(tb) << " at " << m << ", " << n;
        }
    }
}

TEST(QLinearMatMul, RequantizesWithRoundingAndSaturation) {
  // (A - 1) = [2, 4]; (B - 2) = [[0, 253], [1, 253]]; C = [4, 1518];
  // times 0.5 * 0.25 / 0.25 = 0.5, plus 10: [12, 769 -> 255].
  const Tensor a = Of(DType::kUInt8, {3, 5}, {1, 2});
  const Tensor b = Of(DType::kUInt8, {2, 255, 3, 255}, {2, 2});
  absl::StatusOr<Tensor> y = RunOne(10, "QLinearMatMul", {a, F({0.5f}, {}), Of(DType::kUInt8, {1}, {}), b, F({0.25f}, {}),
                                                           Of(DType::kUInt8, {2}, {}), F({0.25f}, {}), Of(DType::kUInt8, {10}, {})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(12, 255));
  // int8 output: C = 5 times 0.5 = 2.5, less 3 = -0.5, rounded after adding
  // the zero point (as ONNX's reference does): 0.
  absl::StatusOr<Tensor> tie = RunOne(21, "QLinearMatMul", {Of(DType::kInt8, {5}, {1, 1}), F({0.5f}, {}), Of(DType::kInt8, {0}, {}),
                                                             Of(DType::kInt8, {1}, {1, 1}), F({1}, {}), Of(DType::kInt8, {0}, {}),
                                                             F({1}, {}), Of(DType::kInt8, {-3}, {})});
  ASSERT_TRUE(tie.ok()) << tie.status();
  EXPECT_THAT(Values(*tie), ElementsAre(0));
}

}  // namespace
}  // namespace onnx_mini
