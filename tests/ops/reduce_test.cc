// ops/reduce.cc: reductions, ArgMax, Softmax, TopK.
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

TEST(Reduce, AxesKeepdimsEmptyAndSoftmax) {
  Tensor x = F({1, 5, 3, 4, 2, 6}, {2, 3});
  auto max = RunNode(18, "ReduceMax", {x, I({-1}, {1})}, 1, {}, {false, true});
  EXPECT_EQ((*max)[0].shape(), Shape({2, 1}));
  EXPECT_THAT(Values((*max)[0]), ElementsAre(5, 6));
  auto sum = RunNode(13, "ReduceSum", {x}, 1, [](onnx::NodeProto& n) { SetAttr(n, "keepdims", int64_t(0)); });
  EXPECT_THAT(Values((*sum)[0]), ElementsAre(21));
  auto noop = RunNode(13, "ReduceSum", {x, I({}, {0})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "noop_with_empty_axes", int64_t(1)); }, {false, true});
  EXPECT_THAT(Values((*noop)[0]), ElementsAre(1, 5, 3, 4, 2, 6));
  auto mean_empty = RunNode(18, "ReduceMean", {F({}, {0, 2}), I({0}, {1})}, 1, {}, {false, true});
  ASSERT_TRUE(mean_empty.ok()) << mean_empty.status();
  EXPECT_TRUE(std::isnan((*mean_empty)[0].data<float>()[0]));
  auto argmax = RunNode(13, "ArgMax", {F({1, 3, 3}, {3})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "select_last_index", int64_t(1)); });
  EXPECT_THAT(Values((*argmax)[0]), ElementsAre(2));
  auto topk = RunNode(11, "TopK", {F({1, 3, 3, 2}, {4}), I({3}, {1})}, 2, {}, {false, true});
  ASSERT_TRUE(topk.ok()) << topk.status();
  EXPECT_THAT(Values((*topk)[0]), ElementsAre(3, 3, 2));
  EXPECT_THAT(Values((*topk)[1]), ElementsAre(1, 2, 3));
  // Softmax on a large input along a middle axis: rows sum to 1 with any thread count.
  Tensor big = RandomUniform(DType::kFloat, {64, 50, 40}, 3);
  auto soft = RunNode(13, "Softmax", {big}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-2)); }, {}, 2);
  ASSERT_TRUE(soft.ok());
  double total = 0;
  for (int64_t k = 0; k < 50; ++k) total += (*soft)[0].data<float>()[(7 * 50 + k) * 40 + 9];
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(Reduce, AxesAreInt64AsTheSchemaSays) {
  // int32 axes used to be read as int64; now they are refused up front.
  absl::StatusOr<Tensor> out = RunOne(13, "ReduceSum", {F({1, 2, 3, 4}, {2, 2}), Tensor::FromVector<int32_t>({1}, {1})});
  EXPECT_EQ(Message(out.status()), "not implemented: ai.onnx::ReduceSum opset 13 for int32");
  out = RunOne(13, "ReduceSum", {F({1, 2, 3, 4}, {2, 2}), I({1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(3, 7));
  // Axes given at run time (not constant) are read per run.
  OpTester t;
  t.op = "ReduceMax";
  t.opset = 18;
  t.inputs = {F({1, 5, 3, 4}, {2, 2}), I({0}, {1})};
  absl::StatusOr<Tensor> max = t.RunOne();
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_THAT(Values(*max), ElementsAre(3, 5));
}

TEST(Reduce, IntegerMeanOverNothingIsZeroAndIntegerSumsWrap) {
  absl::StatusOr<Tensor> mean = RunOne(18, "ReduceMean", {Tensor::Zeros(DType::kInt32, {2, 0}), I({1}, {1})});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(mean->shape(), (Shape{2, 1}));
  EXPECT_EQ(mean->data<int32_t>()[0], 0);
  absl::StatusOr<Tensor> fmean = RunOne(18, "ReduceMean", {Tensor::Zeros(DType::kFloat, {2, 0}), I({1}, {1})});
  ASSERT_TRUE(fmean.ok()) << fmean.status();
  EXPECT_TRUE(std::isnan(fmean->data<float>()[0]));
  const int8_t big = 100;
  absl::StatusOr<Tensor> sum = RunOne(13, "ReduceSum", {Tensor::FromVector<int8_t>({big, big, big}, {3})});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->data<int8_t>()[0], int8_t(44));  // 300 mod 256
}

TEST(TopK, NanRanksAboveEveryNumberAndTiesKeepTheLowerIndex) {
  const float nan = std::nanf("");
  Tensor x = F({3, nan, 5, 3, nan, -1}, {6});
  auto largest = RunNode(11, "TopK", {x, I({4}, {1})}, 2);
  ASSERT_TRUE(largest.ok()) << largest.status();
  EXPECT_THAT(Values((*largest)[1]), ElementsAre(1, 4, 2, 0));
  EXPECT_TRUE(std::isnan((*largest)[0].data<float>()[0]));
  EXPECT_EQ((*largest)[0].data<float>()[2], 5.0f);
  auto smallest = RunNode(11, "TopK", {x, I({6}, {1})}, 2, [](onnx::NodeProto& n) { SetAttr(n, "largest", int64_t(0)); });
  ASSERT_TRUE(smallest.ok()) << smallest.status();
  EXPECT_THAT(Values((*smallest)[1]), ElementsAre(5, 0, 3, 2, 1, 4));
}

TEST(Reduce, EmptyTensorsWithHugeDimsNeitherOverflowNorLoop) {
  const int64_t kBig = int64_t(1) << 30;
  const Tensor t = Tensor::Zeros(DType::kFloat, {kBig, 0, kBig});
  const auto axis = [](int64_t v) { return [v](onnx::NodeProto& n) { SetAttr(n, "axis", v); }; };
  // 2^60 empty (outer, inner) iterations if the kernels looped over the dims.
  absl::StatusOr<std::vector<Tensor>> out = RunNode(13, "Softmax", {t}, 1, axis(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), t.shape());
  out = RunNode(13, "TopK", {t, I({0}, {1})}, 2, axis(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), t.shape());
  out = RunNode(13, "ArgMax", {t}, 1, axis(0));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 0, kBig}));
  // ArgMax over an empty axis with elements left to answer for is an error,
  // not a read of the empty input.
  EXPECT_THAT(Message(RunNode(13, "ArgMax", {F({}, {2, 0})}, 1, axis(1)).status()),
              HasSubstr("ArgMax over the empty axis 1"));
}

TEST(Softmax, LogSoftmaxAndHardmaxOnOneAxisAndFlattened) {
  const Tensor x = Random(DType::kFloat, {2, 3, 4}, 5);
  // Reference: normalize over `size` consecutive groups of `n` elements with stride `inner`.
  auto check = [&](const std::string& op, int64_t opset, int64_t axis, int64_t outer, int64_t n, int64_t inner) {
    absl::StatusOr<Tensor> y = RunOne(opset, op, {x}, [axis](onnx::NodeProto& node) { SetAttr(node, "axis", axis); });
    ASSERT_TRUE(y.ok()) << op << "-" << opset << ": " << y.status();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        double max = -INFINITY, sum = 0;
        int64_t best = -1;
        for (int64_t k = 0; k < n; ++k) {
          const double v = x.data<float>()[(o * n + k) * inner + e];
          if (v > max) { max = v; best = k; }
        }
        for (int64_t k = 0; k < n; ++k) sum += std::exp(x.data<float>()[(o * n + k) * inner + e] - max);
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = (o * n + k) * inner + e;
          const double want = op == "Hardmax" ? (k == best) : x.data<float>()[i] - max - std::log(sum);
          EXPECT_NEAR(y->data<float>()[i], want, 1e-5) << op << "-" << opset << " axis " << axis;
        }
      }
  };
  for (const std::string op : {"LogSoftmax", "Hardmax"}) {
    check(op, 13, 1, 2, 3, 4);   // one axis
    check(op, 13, -1, 6, 4, 1);
    check(op, 11, 1, 2, 12, 1);  // before 13: flattened from axis on
    check(op, 1, 0, 1, 24, 1);
  }
  // The default axis: -1 from 13, 1 before.
  absl::StatusOr<Tensor> now = RunOne(13, "Hardmax", {F({1, 3, 2, 5, 4, 0}, {2, 3})});
  absl::StatusOr<Tensor> old = RunOne(11, "Hardmax", {F({1, 3, 2, 5, 4, 0}, {1, 2, 3})});
  ASSERT_TRUE(now.ok() && old.ok());
  EXPECT_THAT(Values(*now), ElementsAre(0, 1, 0, 1, 0, 0));
  EXPECT_THAT(Values(*old), ElementsAre(0, 0, 0, 1, 0, 0));
  // Ties: the first maximum.
  absl::StatusOr<Tensor> ties = RunOne(13, "Hardmax", {F({2, 2, 1}, {3})});
  ASSERT_TRUE(ties.ok());
  EXPECT_THAT(Values(*ties), ElementsAre(1, 0, 0));
}

TEST(TopK, KIsAnAttributeBeforeOpset10) {
  absl::StatusOr<std::vector<Tensor>> y =
      RunNode(1, "TopK", {F({3, 1, 4, 1, 5, 9}, {2, 3})}, 2, [](onnx::NodeProto& n) { SetAttr(n, "k", int64_t(2)); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values((*y)[0]), ElementsAre(4, 3, 9, 5));
  EXPECT_THAT(Values((*y)[1]), ElementsAre(2, 0, 2, 1));
  y = RunNode(1, "TopK", {F({3, 1}, {2})}, 2);
  ASSERT_FALSE(y.ok());
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Sums over the last axes take the row path; over other axes, the general
// one: both against a double reference, across row lengths.
TEST(Reduce, TrailingRowsAndOtherAxesAgreeWithADoubleReference) {
  for (DType dt : {DType::kFloat, DType::kFloat16, DType::kDouble})
    for (int64_t n : {0, 1, 17, 1000})
      for (const char* op : {"ReduceSum", "ReduceMean"}) {
        const Tensor x = RandomUniform(dt, {3, 2, n}, uint32_t(n + 1));
        for (const std::vector<int64_t>& axes : {std::vector<int64_t>{-1}, std::vector<int64_t>{1, 2},
                                                 std::vector<int64_t>{0}, std::vector<int64_t>{0, 2}}) {
          auto y = RunNode(18, op, {x, I(axes, {int64_t(axes.size())})});
          ASSERT_TRUE(y.ok()) << y.status();
          const Tensor& out = (*y)[0];
          // The reference: every output element from the input indices it covers.
          std::vector<double> sum(size_t(out.size()), 0.0);
          std::vector<int64_t> cnt(size_t(out.size()), 0);
          const bool r0 = std::count(axes.begin(), axes.end(), 0) > 0, r1 = std::count(axes.begin(), axes.end(), 1) > 0;
          const bool r2 = std::count(axes.begin(), axes.end(), 2) + std::count(axes.begin(), axes.end(), -1) > 0;
          for (int64_t a = 0; a < 3; ++a)
            for (int64_t b = 0; b < 2; ++b)
              for (int64_t c = 0; c < n; ++c) {
                const int64_t o = ((r0 ? 0 : a) * (r1 ? 1 : 2) + (r1 ? 0 : b)) * (r2 ? 1 : n) + (r2 ? 0 : c);
                sum[size_t(o)] += GetDouble(x, (a * 2 + b) * n + c);
                ++cnt[size_t(o)];
              }
          const double tol = dt == DType::kFloat16 ? 2e-3 : 1e-6;
          for (int64_t o = 0; o < out.size(); ++o) {
            const double want = std::string(op) == "ReduceMean" ? sum[size_t(o)] / double(cnt[size_t(o)]) : sum[size_t(o)];
            if (std::isnan(want)) EXPECT_TRUE(std::isnan(GetDouble(out, o)));
            else EXPECT_NEAR(GetDouble(out, o), want, tol * (1 + std::fabs(want))) << op << " n " << n << " " << LowerName(dt);
          }
        }
      }
}

}  // namespace
}  // namespace onnx_mini
