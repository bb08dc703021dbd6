// ops/math/math.cc: CumSum, CumProd, Det.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::function<void(onnx::NodeProto&)> Scan(int64_t exclusive, int64_t reverse) {
  return [=](onnx::NodeProto& n) {
    SetAttr(n, "exclusive", exclusive);
    SetAttr(n, "reverse", reverse);
  };
}
const Tensor kAxis0 = I({0}, {});

TEST(CumSum, ExclusiveAndReverse) {
  const Tensor x = F({1, 2, 3}, {3});
  EXPECT_THAT(Values(*RunOne(11, "CumSum", {x, kAxis0}, Scan(0, 0))), ElementsAre(1, 3, 6));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, kAxis0}, Scan(1, 0))), ElementsAre(0, 1, 3));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, kAxis0}, Scan(0, 1))), ElementsAre(6, 5, 3));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, kAxis0}, Scan(1, 1))), ElementsAre(5, 3, 0));
}

TEST(CumSum, AxesTypesAndEmptyDims) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, I({0}, {})})), ElementsAre(1, 2, 3, 5, 7, 9));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, I({1}, {})})), ElementsAre(1, 3, 6, 4, 9, 15));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, Tensor::FromVector<int32_t>({-1}, {1})})),
              ElementsAre(1, 3, 6, 4, 9, 15));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {x, I({-2}, {})}, Scan(1, 1))), ElementsAre(4, 5, 6, 0, 0, 0));
  // Integers are exact and wrap; doubles and 16-bit floats.
  const Tensor i8 = Tensor::FromVector<int8_t>({100, 100, -56}, {3});
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {i8, kAxis0})), ElementsAre(100, -56, -112));
  const Tensor i64 = Tensor::FromVector<int64_t>({int64_t(1) << 53, 1}, {2});
  EXPECT_EQ(RunOne(14, "CumSum", {i64, kAxis0})->data<int64_t>()[1], (int64_t(1) << 53) + 1);
  const Tensor u32 = Tensor::FromVector<uint32_t>({4000000000u, 1}, {2});
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {u32, kAxis0})), ElementsAre(4000000000u, 4000000001u));
  EXPECT_THAT(Values(*RunOne(14, "CumSum", {Tensor::FromVector<double>({0.5, 0.25}, {2}), kAxis0})),
              ElementsAre(0.5, 0.75));
  Tensor h = Tensor::Zeros(DType::kFloat16, {2});
  SetDouble(h, 0, 1.5);
  SetDouble(h, 1, 2);
  absl::StatusOr<Tensor> hy = RunOne(14, "CumSum", {h, kAxis0});
  ASSERT_TRUE(hy.ok()) << hy.status();
  EXPECT_EQ(hy->dtype(), DType::kFloat16);
  EXPECT_THAT(Values(*hy), ElementsAre(1.5, 3.5));
  // Empty dims, even huge ones.
  const int64_t kBig = int64_t(1) << 40;
  absl::StatusOr<Tensor> empty = RunOne(14, "CumSum", {Tensor::Zeros(DType::kFloat, {kBig, 0, kBig}), I({2}, {})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({kBig, 0, kBig}));
  // Axis given at run time.
  OpTester t;
  t.op = "CumSum";
  t.opset = 14;
  t.inputs = {x, I({1}, {})};
  absl::StatusOr<Tensor> run = t.RunOne();
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_THAT(Values(*run), ElementsAre(1, 3, 6, 4, 9, 15));
}

TEST(CumSum, BadAxesAreErrors) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT(Message(RunOne(14, "CumSum", {x, I({2}, {})}).status()), HasSubstr("axis 2 is out of range for rank 2"));
  EXPECT_THAT(Message(RunOne(14, "CumSum", {x, I({-3}, {})}).status()), HasSubstr("axis -3 is out of range"));
  EXPECT_THAT(Message(RunOne(14, "CumSum", {x, I({0, 1}, {2})}).status()), HasSubstr("axis must be a scalar"));
  EXPECT_THAT(Message(RunOne(14, "CumSum", {F({1}, {}), I({0}, {})}).status()), HasSubstr("out of range for rank 0"));
  OpTester t;
  t.op = "CumSum";
  t.opset = 14;
  t.inputs = {x, I({7}, {})};
  EXPECT_THAT(Message(t.Run().status()), HasSubstr("axis 7 is out of range"));
}

TEST(CumProd, ExclusiveReverseAndTypes) {
  const Tensor x = F({1, 2, 3}, {3});
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {x, kAxis0}, Scan(0, 0))), ElementsAre(1, 2, 6));
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {x, kAxis0}, Scan(1, 0))), ElementsAre(1, 1, 2));
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {x, kAxis0}, Scan(0, 1))), ElementsAre(6, 6, 3));
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {x, kAxis0}, Scan(1, 1))), ElementsAre(6, 3, 1));
  const Tensor m = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {m, I({0}, {})})), ElementsAre(1, 2, 3, 4, 10, 18));
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {m, I({-1}, {})})), ElementsAre(1, 2, 6, 4, 20, 120));
  const Tensor u8 = Tensor::FromVector<uint8_t>({16, 16, 3}, {3});
  EXPECT_THAT(Values(*RunOne(26, "CumProd", {u8, kAxis0})), ElementsAre(16, 0, 0));  // 256 wraps to 0
  EXPECT_FALSE(RunOne(25, "CumProd", {x, kAxis0}).ok());  // new in opset 26
}

TEST(Det, BatchedWithPivotingAndSingular) {
  absl::StatusOr<Tensor> y = RunOne(11, "Det", {F({1, 2, 3, 4}, {2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({}));
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-2.0}));
  // A zero in the first pivot needs a row swap; a singular matrix is 0.
  y = RunOne(22, "Det", {F({0, 1, 2, 1, 0, 3, 4, -3, 8, 1, 2, 3, 2, 4, 6, 0, 0, 1}, {2, 3, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2}));
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-5), {-2.0, 0.0}));
  // Batch dims, double.
  y = RunOne(22, "Det", {Tensor::FromVector<double>({2, 0, 0, 3, 0, 1, 1, 0, 1, 1, 1, 1}, {3, 1, 2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({3, 1}));
  EXPECT_THAT(Values(*y), ElementsAre(6, -1, 0));
  Tensor h = Tensor::Zeros(DType::kFloat16, {2, 2});
  SetDouble(h, 0, 0.5);
  SetDouble(h, 3, 4);
  y = RunOne(22, "Det", {h});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kFloat16);
  EXPECT_THAT(Values(*y), ElementsAre(2));
  // 0 x 0 matrices have determinant 1; an empty batch gives an empty output.
  y = RunOne(22, "Det", {F({}, {2, 0, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1, 1));
  y = RunOne(22, "Det", {F({}, {0, 3, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({0}));
  EXPECT_THAT(Message(RunOne(22, "Det", {F({1, 2, 3, 4, 5, 6}, {2, 3})}).status()),
              HasSubstr("is not a batch of square matrices"));
  EXPECT_THAT(Message(RunOne(22, "Det", {F({1, 2}, {2})}).status()), HasSubstr("must be [*, M, M]"));
}

}  // namespace
}  // namespace onnx_mini
