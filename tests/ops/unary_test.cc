// ops/unary.cc: the one-input elementwise ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Elementwise, UnaryOpsOnLargeInputsAgreeAcrossThreadCounts) {
  Tensor x = RandomUniform(DType::kFloat, {3, 100000}, 1);
  for (const char* op : {"Tanh", "Sigmoid", "Erf", "Neg", "Sqrt"}) {
    Tensor in = x;
    if (std::string(op) == "Sqrt") {
      in = *x.Clone();
      for (int64_t i = 0; i < in.size(); ++i) in.data<float>()[i] = std::fabs(in.data<float>()[i]);
    }
    auto one = RunNode(13, op, {in}, 1, {}, {}, 1);
    auto two = RunNode(13, op, {in}, 1, {}, {}, 2);
    ASSERT_TRUE(one.ok() && two.ok()) << op;
    EXPECT_EQ(std::memcmp((*one)[0].raw(), (*two)[0].raw(), (*one)[0].bytes()), 0) << op;
    const double v = in.data<float>()[12345];
    const double want = std::string(op) == "Tanh" ? std::tanh(v) : std::string(op) == "Sigmoid" ? 1 / (1 + std::exp(-v))
                      : std::string(op) == "Erf" ? std::erf(v) : std::string(op) == "Neg" ? -v : std::sqrt(v);
    EXPECT_NEAR((*one)[0].data<float>()[12345], want, 1e-6) << op;
  }
  auto gelu = RunNode(20, "Gelu", {F({-1, 0, 2}, {3})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "approximate", std::string("tanh")); });
  EXPECT_NEAR((*gelu)[0].data<float>()[2], 1.9545977, 1e-5);
}

TEST(Elementwise, IntegerNegAndAbsOfMinWrap) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor x = Tensor::FromVector<int64_t>({kMin, -5, 5}, {3});
  absl::StatusOr<Tensor> neg = RunOne(13, "Neg", {x});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ(neg->data<int64_t>()[0], kMin);
  EXPECT_EQ(neg->data<int64_t>()[1], 5);
  absl::StatusOr<Tensor> abs = RunOne(13, "Abs", {x});
  ASSERT_TRUE(abs.ok()) << abs.status();
  EXPECT_EQ(abs->data<int64_t>()[0], kMin);
  EXPECT_EQ(abs->data<int64_t>()[1], 5);
}

}  // namespace
}  // namespace onnx_mini
