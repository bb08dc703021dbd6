// ops/math/binary.cc: the broadcasting elementwise ops against plain reference computations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "ops/common.h"
#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The reference: explicit multi-index broadcasting in double.
double ReferenceBinary(const std::string& op, double a, double b, bool integer) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  return integer ? std::trunc(a / b) : a / b;
}

TEST(BinaryOps, BroadcastingAcrossDtypesAndShapes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5}, {3, 5}}, {{2, 3, 5}, {5}}, {{2, 1, 5}, {3, 1}}, {{1}, {4, 1, 3}},
      {{}, {7}}, {{2, 0, 3}, {1, 3}}, {{7, 1}, {1, 9}}, {{1, 1, 1}, {}}};
  const std::vector<DType> dtypes = {DType::kFloat, DType::kDouble, DType::kInt32, DType::kInt64,
                                     DType::kUInt8, DType::kInt8, DType::kUInt64, DType::kFloat16,
                                     DType::kBFloat16, DType::kInt16, DType::kUInt16, DType::kUInt32};
  uint32_t seed = 1;
  for (const std::string op : {"Add", "Sub", "Mul", "Div"})
    for (DType dtype : dtypes)
      for (const auto& [sa, sb] : shapes) {
        Tensor a = Random(dtype, sa, seed++), b = Random(dtype, sb, seed++);
        absl::StatusOr<Tensor> out = RunOne(14, op, {a, b});
        ASSERT_TRUE(out.ok()) << op << " " << LowerName(dtype) << ": " << out.status();
        const Shape& os = out->shape();
        const std::vector<int64_t> ia = BroadcastStrides(sa, os), ib = BroadcastStrides(sb, os);
        const bool integer = Info(dtype).kind != DTypeKind::kFloat;
        Tensor expected = Tensor::Zeros(dtype, os);
        for (int64_t o = 0; o < ElementCount(os); ++o) {
          int64_t rem = o, pa = 0, pb = 0;
          for (int64_t d = int64_t(os.size()) - 1; d >= 0; --d) {
            const int64_t idx = rem % os[size_t(d)];
            rem /= os[size_t(d)];
            pa += idx * ia[size_t(d)];
            pb += idx * ib[size_t(d)];
          }
          SetDouble(expected, o, ReferenceBinary(op, GetDouble(a, pa), GetDouble(b, pb), integer));
        }
        for (int64_t o = 0; o < ElementCount(os); ++o) {
          if (integer && (op == "Sub" || op == "Mul")) {
            // Unsigned and narrow types wrap: compare in the type.
            EXPECT_EQ(GetDouble(*out, o), GetDouble(expected, o)) << op << " " << LowerName(dtype);
          } else {
            EXPECT_NEAR(GetDouble(*out, o), GetDouble(expected, o),
                        1e-6 * std::fabs(GetDouble(expected, o)) + 1e-9)
                << op << " " << LowerName(dtype) << " at " << o;
          }
        }
      }
}

TEST(BinaryOps, LargeInputsTakeTheThreadedPathAndAgree) {
  Tensor a = Random(DType::kFloat, {300, 1, 513}, 5), b = Random(DType::kFloat, {7, 513}, 6);
  absl::StatusOr<Tensor> one = RunOne(14, "Mul", {a, b}, {}, 1);
  absl::StatusOr<Tensor> two = RunOne(14, "Mul", {a, b}, {}, 2);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->shape(), Shape({300, 7, 513}));
  EXPECT_EQ(std::memcmp(one->raw(), two->raw(), one->bytes()), 0);
  EXPECT_EQ(one->data<float>()[(299 * 7 + 6) * 513 + 512],
            a.data<float>()[299 * 513 + 512] * b.data<float>()[6 * 513 + 512]);
}

TEST(BinaryOps, MismatchedDtypesAreRejected) {
  absl::StatusOr<Tensor> out = RunOne(14, "Add", {Random(DType::kFloat, {2}, 1), Random(DType::kDouble, {2}, 2)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("input 1 is double but input 0 is float: both have type T"));
}

TEST(Elementwise, WhereBroadcastsThreeWays) {
  auto out = RunNode(16, "Where", {B({true, false}, {2, 1, 1}), F({1, 2, 3}, {1, 3}), F({-1}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 1, 3}));
  EXPECT_THAT(Values((*out)[0]), ElementsAre(1, 2, 3, -1, -1, -1));
  auto strings = RunNode(16, "Where", {B({true, false}, {2}), Tensor::FromVector<std::string>({"a", "b"}, {2}),
                                       Tensor::FromVector<std::string>({"x"}, {1})});
  ASSERT_TRUE(strings.ok()) << strings.status();
  EXPECT_EQ((*strings)[0].data<std::string>()[1], "x");
}

TEST(Elementwise, ComparisonsLogicAndModPow) {
  auto less = RunNode(13, "Less", {F({1, 5}, {2, 1}), F({2, 3, 6}, {3})});
  ASSERT_TRUE(less.ok());
  EXPECT_EQ((*less)[0].dtype(), DType::kBool);
  EXPECT_THAT(Values((*less)[0]), ElementsAre(1, 1, 1, 0, 0, 1));
  auto equal = RunNode(19, "Equal", {Tensor::FromVector<std::string>({"a", "b"}, {2}),
                                     Tensor::FromVector<std::string>({"b"}, {1})});
  ASSERT_TRUE(equal.ok());
  EXPECT_THAT(Values((*equal)[0]), ElementsAre(0, 1));
  auto both = RunNode(7, "And", {B({true, true, false}, {3}), B({true}, {1})});
  EXPECT_THAT(Values((*both)[0]), ElementsAre(1, 1, 0));
  // Integer Mod follows the divisor's sign; fmod the dividend's.
  Tensor x = I({-7, 7, -7, 7}, {4}), y = I({3, -3, -3, 3}, {4});
  EXPECT_THAT(Values((*RunNode(13, "Mod", {x, y}))[0]), ElementsAre(2, -2, -1, 1));
  EXPECT_THAT(Values((*RunNode(13, "Mod", {x, y}, 1, [](onnx::NodeProto& n) { SetAttr(n, "fmod", int64_t(1)); }))[0]),
              ElementsAre(-1, 1, -1, 1));
  EXPECT_THAT(Message(RunNode(13, "Mod", {x, I({0, 1, 1, 1}, {4})}).status()), HasSubstr("modulo by zero"));
  EXPECT_THAT(Message(RunNode(13, "Mod", {F({1}, {1}), F({1}, {1})}).status()), HasSubstr("requires fmod = 1"));
  // Pow with an exponent of another type.
  EXPECT_THAT(Values((*RunNode(15, "Pow", {F({2, 3}, {2}), I({3}, {1})}))[0]), ElementsAre(8, 27));
}

TEST(BinaryOps, IntegerArithmeticWrapsWithoutUndefinedBehaviour) {
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  Tensor a = Tensor::FromVector<int32_t>({kMax, kMin, kMin, 7}, {4});
  Tensor b = Tensor::FromVector<int32_t>({1, -1, -1, -2}, {4});
  absl::StatusOr<Tensor> sum = RunOne(14, "Add", {a, b});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->data<int32_t>()[0], kMin);  // MAX + 1 wraps
  absl::StatusOr<Tensor> quotient = RunOne(14, "Div", {a, b});
  ASSERT_TRUE(quotient.ok()) << quotient.status();
  EXPECT_EQ(quotient->data<int32_t>()[1], kMin);  // MIN / -1 wraps to MIN
  EXPECT_EQ(quotient->data<int32_t>()[3], -3);    // truncates toward zero
  absl::StatusOr<Tensor> product = RunOne(14, "Mul", {Tensor::FromVector<int8_t>({100}, {1}), Tensor::FromVector<int8_t>({3}, {1})});
  ASSERT_TRUE(product.ok()) << product.status();
  EXPECT_EQ(product->data<int8_t>()[0], int8_t(44));  // 300 mod 256
}

TEST(BinaryOps, IntegerPowOfANanOrHugeResultIsDefined) {
  // The float result is converted without UB: NaN gives 0, out of range saturates
  // to int64 and keeps the low bits.
  Tensor base = Tensor::FromVector<int32_t>({2, 2, 3}, {3});
  Tensor exponent = Tensor::FromVector<float>({std::nanf(""), 100.0f, 2.0f}, {3});
  absl::StatusOr<Tensor> out = RunOne(15, "Pow", {base, exponent});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->data<int32_t>()[0], 0);
  EXPECT_EQ(out->data<int32_t>()[1], int32_t(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(out->data<int32_t>()[2], 9);
}

TEST(BinaryOps, TypesOutsideTheRowFailAtCreation) {
  // Pow-15's base is int32/int64/floats: int8 is not implemented, up front.
  absl::StatusOr<Tensor> out = RunOne(15, "Pow", {Tensor::FromVector<int8_t>({2}, {1}), Tensor::FromVector<float>({2}, {1})});
  EXPECT_EQ(Message(out.status()), "not implemented: ai.onnx::Pow opset 15 for int8");
  out = RunOne(14, "And", {Tensor::FromVector<float>({1}, {1}), Tensor::FromVector<float>({1}, {1})});
  EXPECT_EQ(Message(out.status()), "not implemented: ai.onnx::And opset 14 for float");
}

// ---- Opsets 1 to 6: broadcasting only with broadcast = 1, B onto A ----

TEST(BinaryOps, LegacyBroadcastAttributes) {
  const Tensor a = Random(DType::kFloat, {2, 3, 4}, 3);
  auto bcast = [](int64_t axis) {
    return [axis](onnx::NodeProto& n) {
      SetAttr(n, "broadcast", int64_t(1));
      if (axis >= 0) SetAttr(n, "axis", axis);
    };
  };
  // B = (3,) at axis 1: b[j] is added along A's second dim.
  const Tensor b = F({10, 20, 30}, {3});
  absl::StatusOr<Tensor> y = RunOne(6, "Add", {a, b}, bcast(1));
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(y->data<float>()[i], a.data<float>()[i] + b.data<float>()[(i / 4) % 3]);
  // Without axis, B matches A's trailing dims; a scalar B broadcasts too (opset 1, consumed_inputs ignored).
  const Tensor c = Random(DType::kFloat, {3, 4}, 4);
  y = RunOne(1, "Mul", {a, c}, [](onnx::NodeProto& n) {
    SetAttr(n, "broadcast", int64_t(1));
    SetAttr(n, "consumed_inputs", std::vector<int64_t>{0, 0});
  });
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(y->data<float>()[i], a.data<float>()[i] * c.data<float>()[i % 12]);
  y = RunOne(6, "Sub", {a, F({1}, {})}, bcast(-1));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->data<float>()[5], a.data<float>()[5] - 1);
  // Comparisons and logic too.
  absl::StatusOr<Tensor> less = RunOne(1, "Less", {F({1, 5, 2, 8}, {2, 2}), F({6, 3}, {2})}, bcast(0));  // B along rows
  ASSERT_TRUE(less.ok()) << less.status();
  EXPECT_THAT(Values(*less), ElementsAre(1, 1, 1, 0));
  // Equal shapes without the attribute; anything else is an error naming the shapes.
  y = RunOne(6, "Div", {a, a});
  ASSERT_TRUE(y.ok()) << y.status();
  y = RunOne(6, "Add", {a, b});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("without broadcast = 1 (opset 6) the inputs must have one shape"));
  y = RunOne(6, "Add", {a, F({1, 2}, {2})}, bcast(1));
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("does not broadcast onto A"));
  y = RunOne(6, "Add", {b, a}, bcast(-1));  // B larger than A
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("does not fit A"));
}

// ---- PRelu, Max, Min, Mean ----

TEST(PRelu, SlopeBroadcastsToXAcrossTypes) {
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    Tensor x = Random(dtype, {2, 3, 5}, 1);
    for (int64_t i = 0; i < x.size(); i += 2) SetDouble(x, i, -GetDouble(x, i));
    for (const Shape& ss : std::vector<Shape>{{3, 1}, {5}, {1}, {2, 3, 5}, {}}) {
      const Tensor slope = Random(dtype, ss, 2);
      absl::StatusOr<Tensor> y = RunOne(16, "PRelu", {x, slope});
      ASSERT_TRUE(y.ok()) << LowerName(dtype) << ": " << y.status();
      const std::vector<int64_t> st = BroadcastStrides(slope.shape(), x.shape());
      for (int64_t i = 0; i < x.size(); ++i) {
        const int64_t idx[3] = {i / 15, (i / 5) % 3, i % 5};
        const double s = GetDouble(slope, idx[0] * st[0] + idx[1] * st[1] + idx[2] * st[2]);
        const double v = GetDouble(x, i), want = v < 0 ? v * s : v;
        EXPECT_NEAR(GetDouble(*y, i), want, 1e-2 * std::fabs(want)) << LowerName(dtype);
      }
    }
  }
  // Unidirectional: the slope may not grow X.
  absl::StatusOr<Tensor> y = RunOne(16, "PRelu", {F({1, 2}, {2, 1}), F({1, 2, 3}, {3})});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("slope of shape [3] does not broadcast to X of shape [2,1]"));
}

TEST(Variadic, MaxMinMeanBroadcastAcrossTypes) {
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kUInt8,
                      DType::kInt32, DType::kInt64, DType::kUInt64, DType::kUInt16}) {
    const Tensor a = Random(dtype, {2, 1, 5}, 1), b = Random(dtype, {3, 1}, 2), c = Random(dtype, {5}, 3);
    const bool is_float = Info(dtype).kind == DTypeKind::kFloat;
    for (const std::string op : {"Max", "Min", "Mean"}) {
      if (op == "Mean" && !is_float) continue;
      absl::StatusOr<Tensor> y = RunOne(13, op, {a, b, c});
      ASSERT_TRUE(y.ok()) << op << " " << LowerName(dtype) << ": " << y.status();
      ASSERT_EQ(y->shape(), (Shape{2, 3, 5}));
      for (int64_t i = 0; i < y->size(); ++i) {
        const int64_t p = i / 15, q = (i / 5) % 3, r = i % 5;
        const double va = GetDouble(a, p * 5 + r), vb = GetDouble(b, q), vc = GetDouble(c, r);
        const double want = op == "Max" ? std::max({va, vb, vc}) : op == "Min" ? std::min({va, vb, vc}) : (va + vb + vc) / 3;
        EXPECT_NEAR(GetDouble(*y, i), want, 1e-2 * std::fabs(want)) << op << " " << LowerName(dtype);
      }
    }
  }
  // One input is a copy; a NaN wins in Max and Min; legacy opsets take equal shapes.
  absl::StatusOr<Tensor> one = RunOne(13, "Mean", {F({1, 2}, {2})});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(Values(*one), ElementsAre(1, 2));
  absl::StatusOr<Tensor> nan = RunOne(13, "Max", {F({1, NAN}, {2}), F({NAN, 3}, {2})});
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan(nan->data<float>()[0]) && std::isnan(nan->data<float>()[1]));
  // Empty tensors broadcast to empty results.
  for (const std::string op : {"Max", "Min", "Mean", "Sum"}) {
    absl::StatusOr<Tensor> empty = RunOne(13, op, {Tensor::Zeros(DType::kFloat, {2, 0}), F({1}, {1})});
    ASSERT_TRUE(empty.ok()) << op << ": " << empty.status();
    EXPECT_EQ(empty->shape(), (Shape{2, 0}));
  }
  absl::StatusOr<Tensor> empty = RunOne(16, "PRelu", {Tensor::Zeros(DType::kFloat, {0, 3}), F({1, 2, 3}, {3})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), (Shape{0, 3}));
  absl::StatusOr<Tensor> old = RunOne(6, "Min", {F({1, 4}, {2}), F({3, 2}, {2})});
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_THAT(Values(*old), ElementsAre(1, 2));
}

TEST(BinaryOps, BitwiseOpsOnEveryIntegerTypeWithBroadcast) {
  // 0b1100 op 0b1010 and -1 (all bits) op 5, the second input broadcast.
  for (DType dtype : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32, DType::kUInt32,
                      DType::kInt64, DType::kUInt64}) {
    Tensor a = Tensor::Zeros(dtype, {2, 2}), b = Tensor::Zeros(dtype, {2});
    const bool is_signed = Info(dtype).kind == DTypeKind::kSigned;
    const double all = is_signed ? -1 : 255;  // all bits of int8 and uint8
    SetDouble(a, 0, 12); SetDouble(a, 1, 12); SetDouble(a, 2, all); SetDouble(a, 3, 0);
    SetDouble(b, 0, 10); SetDouble(b, 1, 5);
    absl::StatusOr<Tensor> band = RunOne(18, "BitwiseAnd", {a, b});
    absl::StatusOr<Tensor> bor = RunOne(18, "BitwiseOr", {a, b});
    absl::StatusOr<Tensor> bxor = RunOne(18, "BitwiseXor", {a, b});
    ASSERT_TRUE(band.ok() && bor.ok() && bxor.ok()) << LowerName(dtype) << ": " << band.status() << bor.status();
    EXPECT_THAT(Values(*band), ElementsAre(8, 4, 10, 0)) << LowerName(dtype);
    EXPECT_THAT(Values(*bor), ElementsAre(14, 13, all, 5)) << LowerName(dtype);
    // all ^ 10: -11 signed, max - 10 unsigned.
    EXPECT_THAT(Values(*bxor), ElementsAre(6, 9, is_signed ? -11 : 245, 5)) << LowerName(dtype);
  }
  EXPECT_FALSE(RunOne(18, "BitwiseAnd", {F({1}, {1}), F({1}, {1})}).ok());
}

TEST(BinaryOps, BitShiftBothDirectionsAndWideShifts) {
  for (DType dtype : {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    const int bits = Info(dtype).bits;
    Tensor x = Tensor::Zeros(dtype, {4}), s = Tensor::Zeros(dtype, {4});
    const double top = std::ldexp(1.0, bits - 1);  // the highest bit
    SetDouble(x, 0, 1); SetDouble(x, 1, 3); SetDouble(x, 2, top); SetDouble(x, 3, 7);
    if (dtype == DType::kUInt64) x.data<uint64_t>()[2] = uint64_t(1) << 63;  // beyond int64, which SetDouble clamps to
    SetDouble(s, 0, 3); SetDouble(s, 1, 1); SetDouble(s, 2, 1); SetDouble(s, 3, bits);
    auto dir = [](const char* d) { return [d](onnx::NodeProto& n) { SetAttr(n, "direction", std::string(d)); }; };
    absl::StatusOr<Tensor> left = RunOne(11, "BitShift", {x, s}, dir("LEFT"));
    absl::StatusOr<Tensor> right = RunOne(11, "BitShift", {x, s}, dir("RIGHT"));
    ASSERT_TRUE(left.ok() && right.ok()) << left.status() << right.status();
    // The top bit shifted left leaves the type; a shift by the width gives 0.
    EXPECT_THAT(Values(*left), ElementsAre(8, 6, 0, 0)) << LowerName(dtype);
    EXPECT_THAT(Values(*right), ElementsAre(0, 1, top / 2, 0)) << LowerName(dtype);
    absl::StatusOr<Tensor> bad = RunOne(11, "BitShift", {x, s}, dir("UP"));
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(Message(bad.status()), HasSubstr("LEFT or RIGHT"));
  }
}

TEST(BinaryOps, XorOfBoolsWithBroadcast) {
  absl::StatusOr<Tensor> out = RunOne(7, "Xor", {B({true, false, false, true}, {2, 2}), B({true, false}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(0, 0, 1, 1));
  // Opset 1: B onto A only with broadcast = 1.
  absl::StatusOr<Tensor> old = RunOne(1, "Xor", {B({true, false, true, false}, {2, 2}), B({false, true}, {2})},
                                      [](onnx::NodeProto& n) { SetAttr(n, "broadcast", int64_t(1)); });
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_THAT(Values(*old), ElementsAre(1, 1, 1, 1));
}

}  // namespace
}  // namespace onnx_mini
