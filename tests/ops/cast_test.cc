// ops/cast.cc and ops/constant.cc: Cast, CastLike and Constant.
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

TEST(Cast, StringsAndBadTargetsAreRejected) {
  Tensor s = Tensor::FromVector<std::string>({"1"}, {1});
  absl::StatusOr<Tensor> out = RunOne(19, "Cast", {s}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(1)); });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(out.status().message()), "not implemented: ai.onnx::Cast opset 19 for string");
  absl::StatusOr<Tensor> bad = RunOne(19, "Cast", {Random(DType::kFloat, {1}, 1)},
                                      [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(99)); });
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'to' = 99 is not an element type"));
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
