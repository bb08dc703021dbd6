// ops/tensor/cast.cc and ops/tensor/constant.cc: Cast, CastLike and Constant.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Cast, AmongNumericTypesAgainstElementConversions) {
  const std::vector<DType> types = {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
                                    DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64,
                                    DType::kUInt64, DType::kBool, DType::kFloat8E4M3FN,
                                    DType::kFloat8E5M2FNUZ, DType::kInt4, DType::kUInt4,
                                    DType::kFloat4E2M1, DType::kInt2, DType::kFloat8E8M0};
  const std::vector<double> values = {0, 1, -1, 2.5, -3.75, 7, 100, -0.0};
  Tensor src = Tensor::FromVector<double>(values, {int64_t(values.size())});
  for (DType to : types) {
    absl::StatusOr<Tensor> out =
        RunOne(25, "Cast", {src}, [&](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(to)); });
    ASSERT_TRUE(out.ok()) << LowerName(to) << ": " << out.status();
    ASSERT_EQ(out->dtype(), to);
    Tensor expected = Tensor::Zeros(to, src.shape());
    for (int64_t i = 0; i < src.size(); ++i) SetDouble(expected, i, values[size_t(i)]);
    for (int64_t i = 0; i < src.size(); ++i) EXPECT_EQ(GetDouble(*out, i), GetDouble(expected, i)) << LowerName(to) << " " << i;
  }
  // Spot values: truncation toward zero, int4 wrap, float8 saturation.
  EXPECT_EQ(GetDouble(*RunOne(25, "Cast", {src}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kInt32)); }), 4), -3);
  EXPECT_EQ(GetDouble(*RunOne(25, "Cast", {src}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kInt4)); }), 6), 4);   // 100 wraps to 4
  EXPECT_EQ(GetDouble(*RunOne(25, "Cast", {src}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kUInt2)); }), 5), 3);  // 7 -> 3
  Tensor big = Tensor::FromVector<float>({1000.f, -1e9f}, {2});
  absl::StatusOr<Tensor> sat = RunOne(19, "Cast", {big}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kFloat8E4M3FN)); });
  EXPECT_EQ(GetDouble(*sat, 0), 448);
  EXPECT_EQ(GetDouble(*sat, 1), -448);
  absl::StatusOr<Tensor> nosat = RunOne(19, "Cast", {big}, [](onnx::NodeProto& n) {
    SetAttr(n, "to", int64_t(DType::kFloat8E4M3FN));
    SetAttr(n, "saturate", int64_t(0));
  });
  EXPECT_TRUE(std::isnan(GetDouble(*nosat, 0)));
}

TEST(Cast, BadTargetsAreRejected) {
  absl::StatusOr<Tensor> bad = RunOne(19, "Cast", {Random(DType::kFloat, {1}, 1)},
                                      [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(99)); });
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'to' = 99 is not an element type"));
}

// Numbers to strings as NumPy's astype(str) prints them, with the spec's
// literals for NaN and the infinities.
TEST(Cast, NumbersToStrings) {
  auto text = [](const Tensor& x, int64_t opset = 19) {
    absl::StatusOr<Tensor> y =
        RunOne(opset, "Cast", {x}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kString)); });
    EXPECT_TRUE(y.ok()) << y.status();
    if (!y.ok()) return std::vector<std::string>{};
    EXPECT_EQ(y->dtype(), DType::kString);
    return std::vector<std::string>(y->data<std::string>(), y->data<std::string>() + y->size());
  };
  EXPECT_THAT(text(F({0.1f, 1.0f, -0.0f, 1e10f, 1e16f, 1e-5f, 0.0001f, 123456789.0f, 1.5e-7f, 3.4028235e38f}, {10})),
              ElementsAre("0.1", "1.0", "-0.0", "10000000000.0", "1e+16", "1e-05", "0.0001", "123456790.0",
                          "1.5e-07", "3.4028235e+38"));
  EXPECT_THAT(text(F({NAN, INFINITY, -INFINITY}, {3})), ElementsAre("NaN", "INF", "-INF"));
  EXPECT_THAT(text(Tensor::FromVector<double>({0.1, 1.0 / 3, 1e16, 2.5e-300}, {4})),
              ElementsAre("0.1", "0.3333333333333333", "1e+16", "2.5e-300"));
  // float16 and bfloat16: the shortest text of their own precision.
  EXPECT_THAT(text(Tensor::FromVector<Float16>({ToFloat16(0.1f), ToFloat16(65504.f)}, {2})), ElementsAre("0.1", "65500.0"));
  EXPECT_THAT(text(Tensor::FromVector<BFloat16>({ToBFloat16(0.1f)}, {1})), ElementsAre("0.1"));
  EXPECT_THAT(text(Tensor::FromVector<int8_t>({-128, 0, 127}, {3})), ElementsAre("-128", "0", "127"));
  EXPECT_THAT(text(Tensor::FromVector<uint64_t>({18446744073709551615ull}, {1})), ElementsAre("18446744073709551615"));
  EXPECT_THAT(text(B({true, false}, {2})), ElementsAre("True", "False"));
  EXPECT_TRUE(text(F({}, {0, 3})).empty());
  // Cast-1 names the type.
  absl::StatusOr<Tensor> named = RunOne(1, "Cast", {I({7}, {1})}, [](onnx::NodeProto& n) { SetAttr(n, "to", std::string("STRING")); });
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->data<std::string>()[0], "7");
}

TEST(Cast, StringsToNumbers) {
  auto cast = [](std::vector<std::string> s, DType to) {
    return RunOne(19, "Cast", {Tensor::FromVector(s, {int64_t(s.size())})},
                  [to](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(to)); });
  };
  absl::StatusOr<Tensor> f = cast({"3.14", " 1e-5 ", "1E8", "+2", "-0", "NaN", "inf", "+INF", "-Inf", "infinity", "1e39"},
                                  DType::kFloat);
  ASSERT_TRUE(f.ok()) << f.status();
  const float* v = f->data<float>();
  EXPECT_EQ(v[0], 3.14f);
  EXPECT_EQ(v[1], 1e-5f);
  EXPECT_EQ(v[2], 1e8f);
  EXPECT_EQ(v[3], 2.0f);
  EXPECT_TRUE(v[4] == 0 && std::signbit(v[4]));
  EXPECT_TRUE(std::isnan(v[5]));
  EXPECT_EQ(v[6], INFINITY);
  EXPECT_EQ(v[7], INFINITY);
  EXPECT_EQ(v[8], -INFINITY);
  EXPECT_EQ(v[9], INFINITY);
  EXPECT_EQ(v[10], INFINITY);  // beyond float: infinity, like a double-to-float cast
  absl::StatusOr<Tensor> d = cast({"0.1", "1e400", "-1e-400"}, DType::kDouble);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->data<double>()[0], 0.1);
  EXPECT_EQ(d->data<double>()[1], INFINITY);
  EXPECT_TRUE(d->data<double>()[2] == 0 && std::signbit(d->data<double>()[2]));
  // Integers: exact in 64 bits, wrapped to narrower types, fractions truncated.
  absl::StatusOr<Tensor> i = cast({"9007199254740993", "-5", "100.5", "1e3", "-2.7"}, DType::kInt64);
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(std::vector<int64_t>(i->data<int64_t>(), i->data<int64_t>() + 5),
              ElementsAre(9007199254740993, -5, 100, 1000, -2));
  absl::StatusOr<Tensor> u = cast({"18446744073709551615"}, DType::kUInt64);
  EXPECT_EQ(u->data<uint64_t>()[0], 18446744073709551615ull);
  absl::StatusOr<Tensor> i8 = cast({"300", "-129"}, DType::kInt8);
  EXPECT_THAT(Values(*i8), ElementsAre(44, 127));
  absl::StatusOr<Tensor> h = cast({"0.1", "65504"}, DType::kFloat16);
  EXPECT_THAT(Values(*h), ElementsAre(double(ToFloat(ToFloat16(0.1f))), 65504));
  absl::StatusOr<Tensor> b = cast({"True", "false", "0", "2", "0.0"}, DType::kBool);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(Values(*b), ElementsAre(1, 0, 0, 1, 0));
  absl::StatusOr<Tensor> i4 = cast({"7", "-8"}, DType::kInt4);
  EXPECT_THAT(Values(*i4), ElementsAre(7, -8));
  // Round trips: a float's text reads back to the same float.
  const std::vector<float> floats = {0.1f, 1.0f / 3, 3.4028235e38f, 1.4e-45f, -123.456f};
  absl::StatusOr<Tensor> t = RunOne(19, "Cast", {F(floats, {5})}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kString)); });
  absl::StatusOr<Tensor> back = RunOne(19, "Cast", {*t}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kFloat)); });
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t k = 0; k < floats.size(); ++k) EXPECT_EQ(back->data<float>()[k], floats[k]) << t->data<std::string>()[k];
  // CastLike to and from strings.
  absl::StatusOr<Tensor> like = RunOne(19, "CastLike", {Tensor::FromVector<std::string>({"2.5"}, {1}), F({0}, {1})});
  ASSERT_TRUE(like.ok()) << like.status();
  EXPECT_EQ(like->data<float>()[0], 2.5f);
  // Text that is not a number is an error naming the element.
  for (DType to : {DType::kFloat, DType::kInt32, DType::kBool, DType::kDouble}) {
    absl::StatusOr<Tensor> bad = cast({"1", "12abc", "x"}, to);
    ASSERT_FALSE(bad.ok()) << LowerName(to);
    EXPECT_THAT(Message(bad.status()), HasSubstr("element 1 '12abc' is not a number")) << LowerName(to);
  }
  for (const char* text : {"", " ", "+", "+-1", "--1", "1e", "0x10", "nanx"})
    EXPECT_FALSE(cast({text}, DType::kFloat).ok()) << "'" << text << "'";
}

TEST(Constant, EveryValueAttribute) {
  auto constant = [](const std::function<void(onnx::NodeProto&)>& attrs) {
    ModelBuilder m(13);
    m.Output("out", DType::kUndefined, {}, false);
    attrs(m.Node("Constant", {}, {"out"}));
    absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
    if (!s.ok()) return absl::StatusOr<Tensor>(s.status());
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({});
    if (!out.ok()) return absl::StatusOr<Tensor>(out.status());
    return absl::StatusOr<Tensor>((*out)[0]);
  };
  EXPECT_EQ(constant([](onnx::NodeProto& n) { SetAttr(n, "value_float", 2.5f); })->data<float>()[0], 2.5f);
  EXPECT_EQ(constant([](onnx::NodeProto& n) { SetAttr(n, "value_ints", std::vector<int64_t>{4, 5}); })->shape(), Shape({2}));
  EXPECT_EQ(constant([](onnx::NodeProto& n) { SetAttr(n, "value_string", std::string("hi")); })->data<std::string>()[0], "hi");
  absl::StatusOr<Tensor> none = constant([](onnx::NodeProto&) {});
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("exactly one value attribute"));
}

TEST(Cast, ToIsATypeNameBeforeOpset6) {
  absl::StatusOr<Tensor> y = RunOne(1, "Cast", {F({1.5f, -2.5f}, {2})}, [](onnx::NodeProto& n) { SetAttr(n, "to", std::string("INT32")); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kInt32);
  EXPECT_THAT(Values(*y), ElementsAre(1, -2));
  y = RunOne(5, "Cast", {F({1}, {1})}, [](onnx::NodeProto& n) { SetAttr(n, "to", std::string("REAL")); });
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("'REAL' is not an element type"));
}

}  // namespace
}  // namespace onnx_mini
