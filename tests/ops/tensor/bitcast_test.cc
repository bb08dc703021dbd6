// ops/tensor/bitcast.cc: BitCast reinterprets bytes between types of one width.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

auto To(DType d) {
  return [d](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(d)); };
}

TEST(BitCast, ReinterpretsBytesKeepingTheShape) {
  absl::StatusOr<Tensor> out = RunOne(26, "BitCast", {F({1.0f, -2.0f, 0.0f, -0.0f}, {2, 2})}, To(DType::kInt32));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{2, 2}));
  EXPECT_THAT(Values(*out), ElementsAre(0x3f800000, int32_t(0xc0000000), 0, int32_t(0x80000000)));
  // uint16 65535 is int16 -1; int8 -1 is uint8 255.
  absl::StatusOr<Tensor> u16 = RunOne(26, "BitCast", {Tensor::FromVector<uint16_t>({65535, 7}, {2})}, To(DType::kInt16));
  ASSERT_TRUE(u16.ok()) << u16.status();
  EXPECT_THAT(Values(*u16), ElementsAre(-1, 7));
  absl::StatusOr<Tensor> i8 = RunOne(26, "BitCast", {Tensor::FromVector<int8_t>({-1, 3}, {2})}, To(DType::kUInt8));
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_THAT(Values(*i8), ElementsAre(255, 3));
  // Bytes other than 0 and 1 become true, never an invalid bool.
  absl::StatusOr<Tensor> b = RunOne(26, "BitCast", {Tensor::FromVector<uint8_t>({0, 1, 2, 255}, {4})}, To(DType::kBool));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(Values(*b), ElementsAre(0, 1, 1, 1));
  // Odd counts of 4-bit elements: the packed bytes as they are.
  Tensor u4 = Tensor::Zeros(DType::kUInt4, {3});
  SetDouble(u4, 0, 15); SetDouble(u4, 1, 9); SetDouble(u4, 2, 1);
  absl::StatusOr<Tensor> i4 = RunOne(26, "BitCast", {u4}, To(DType::kInt4));
  ASSERT_TRUE(i4.ok()) << i4.status();
  EXPECT_THAT(Values(*i4), ElementsAre(-1, -7, 1));
  absl::StatusOr<Tensor> scalar = RunOne(26, "BitCast", {Tensor::FromVector<double>({1.0}, {})}, To(DType::kInt64));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->shape(), Shape{});
  EXPECT_EQ(scalar->data<int64_t>()[0], int64_t(0x3ff0000000000000));
}

TEST(BitCast, RejectsWidthsThatDifferAndStrings) {
  absl::StatusOr<Tensor> wide = RunOne(26, "BitCast", {F({1}, {1})}, To(DType::kInt64));
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(Message(wide.status()), HasSubstr("one bit width: float has 32 bits, int64 has 64"));
  absl::StatusOr<Tensor> str = RunOne(26, "BitCast", {F({1}, {1})}, To(DType::kString));
  ASSERT_FALSE(str.ok());
  EXPECT_THAT(Message(str.status()), HasSubstr("not a non-string element type"));
}

}  // namespace
}  // namespace onnx_mini
