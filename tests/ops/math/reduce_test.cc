// ops/math/reduce.cc: reductions, ArgMax, ArgMin, Softmax, TopK, LpNormalization, MeanVarianceNormalization.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

const auto keepdims = [](int64_t v) { return [v](onnx::NodeProto& n) { SetAttr(n, "keepdims", v); }; };

// The reduction over `axes` (an attribute at opset 11, an input at 18),
// with keepdims, checked against hand-computed values and shape.
void ExpectReduce(const std::string& op, const Tensor& x, std::vector<int64_t> axes, bool keep, const Shape& shape,
                  const std::vector<double>& want, double tol = 1e-5) {
  for (int64_t opset : {11, 18}) {
    absl::StatusOr<Tensor> y;
    const Tensor axes_tensor = I(axes, {int64_t(axes.size())});
    if (opset >= 18) {
      y = [&]() -> absl::StatusOr<Tensor> {
        auto r = RunNode(opset, op, {x, axes_tensor}, 1, keepdims(keep), {false, true});
        if (!r.ok()) return r.status();
        return (*r)[0];
      }();
    } else {
      y = RunOne(opset, op, {x}, [&](onnx::NodeProto& n) {
        SetAttr(n, "axes", axes);
        SetAttr(n, "keepdims", int64_t(keep));
      });
    }
    ASSERT_TRUE(y.ok()) << op << "-" << opset << ": " << y.status();
    EXPECT_EQ(y->shape(), shape) << op << "-" << opset;
    EXPECT_THAT(Values(*y), Pointwise(DoubleNear(tol), want)) << op << "-" << opset;
  }
}

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

TEST(Reduce, EveryReductionAlongAnAxisWithAndWithoutKeepdims) {
  const Tensor x = F({1, -2, 3, 4, 5, -6}, {2, 3});
  ExpectReduce("ReduceMin", x, {1}, true, {2, 1}, {-2, -6});
  ExpectReduce("ReduceMax", x, {-1}, true, {2, 1}, {3, 5});
  ExpectReduce("ReduceSum", x, {1}, false, {2}, {2, 3});
  ExpectReduce("ReduceMean", x, {1}, false, {2}, {2.0 / 3, 1});
  ExpectReduce("ReduceProd", x, {1}, true, {2, 1}, {-6, -120});
  ExpectReduce("ReduceL1", x, {-1}, false, {2}, {6, 15});
  ExpectReduce("ReduceL2", x, {1}, false, {2}, {std::sqrt(14.0), std::sqrt(77.0)});
  ExpectReduce("ReduceLogSum", x, {1}, false, {2}, {std::log(2.0), std::log(3.0)});
  ExpectReduce("ReduceLogSumExp", x, {1}, false, {2},
               {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)),
                std::log(std::exp(4.0) + std::exp(5.0) + std::exp(-6.0))});
  ExpectReduce("ReduceSumSquare", x, {1}, true, {2, 1}, {14, 77});
  // Along axis 0 (negative: -2), and over both axes.
  ExpectReduce("ReduceMin", x, {-2}, false, {3}, {1, -2, -6});
  ExpectReduce("ReduceProd", x, {0}, true, {1, 3}, {4, -10, -18});
  ExpectReduce("ReduceL1", x, {0}, false, {3}, {5, 7, 9});
  ExpectReduce("ReduceSumSquare", x, {0}, false, {3}, {17, 29, 45});
  ExpectReduce("ReduceL2", x, {0, 1}, false, {}, {std::sqrt(91.0)});
  ExpectReduce("ReduceMin", x, {1, 0}, true, {1, 1}, {-6});
}

TEST(Reduce, NoAxesReducesEverythingOrNothingWithNoopWithEmptyAxes) {
  const Tensor x = F({1, 2, 4, 8}, {2, 2});
  // Without axes: every dim, keepdims or not.
  absl::StatusOr<Tensor> all = RunOne(18, "ReduceProd", {x});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->shape(), Shape({1, 1}));
  EXPECT_THAT(Values(*all), ElementsAre(64));
  all = RunOne(11, "ReduceLogSum", {x}, keepdims(0));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->shape(), Shape({}));
  EXPECT_NEAR(Values(*all)[0], std::log(15.0), 1e-6);
  // noop_with_empty_axes: the reduction step is the identity, the rest still
  // applies (|x| for L1, x^2 for SumSquare, log x for LogSum), as the spec says.
  const auto noop = [](onnx::NodeProto& n) { SetAttr(n, "noop_with_empty_axes", int64_t(1)); };
  const Tensor y = F({-1, 2, 4, -8}, {2, 2});
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"ReduceMin", {-1, 2, 4, -8}},   {"ReduceProd", {-1, 2, 4, -8}},   {"ReduceL1", {1, 2, 4, 8}},
      {"ReduceL2", {1, 2, 4, 8}},      {"ReduceSumSquare", {1, 4, 16, 64}}, {"ReduceLogSumExp", {-1, 2, 4, -8}}};
  for (const auto& [op, want] : cases) {
    absl::StatusOr<Tensor> out = RunOne(18, op, {y}, noop);
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    EXPECT_EQ(out->shape(), Shape({2, 2})) << op;
    EXPECT_THAT(Values(*out), Pointwise(DoubleNear(1e-6), want)) << op;
    // An explicitly empty axes input is the same.
    auto with_input = RunNode(18, op, {y, I({}, {0})}, 1, noop, {false, true});
    ASSERT_TRUE(with_input.ok()) << op << ": " << with_input.status();
    EXPECT_THAT(Values((*with_input)[0]), Pointwise(DoubleNear(1e-6), want)) << op;
  }
  absl::StatusOr<Tensor> log = RunOne(18, "ReduceLogSum", {x}, noop);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_THAT(Values(*log), Pointwise(DoubleNear(1e-6), {0.0, std::log(2.0), std::log(4.0), std::log(8.0)}));
}

TEST(Reduce, EmptySetsGiveTheIdentityOfEachReduction) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = Tensor::Zeros(DType::kFloat, {2, 0, 3});
  const std::vector<std::pair<std::string, double>> cases = {
      {"ReduceMin", inf},       {"ReduceMax", -inf},         {"ReduceProd", 1},      {"ReduceSum", 0},
      {"ReduceL1", 0},          {"ReduceL2", 0},             {"ReduceSumSquare", 0}, {"ReduceLogSum", -inf},
      {"ReduceLogSumExp", -inf}};
  for (const auto& [op, want] : cases) {
    ExpectReduce(op, x, {1}, true, {2, 1, 3}, std::vector<double>(6, want));
    ExpectReduce(op, x, {0, 1}, false, {3}, std::vector<double>(3, want));
  }
  // Integers: the type's extremes for min and max.
  const Tensor xi = Tensor::Zeros(DType::kInt32, {0, 2});
  absl::StatusOr<Tensor> min = RunOne(13, "ReduceMin", {xi}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{0}); });
  ASSERT_TRUE(min.ok()) << min.status();
  EXPECT_EQ(min->shape(), Shape({1, 2}));
  EXPECT_EQ(min->data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  absl::StatusOr<Tensor> max = RunOne(13, "ReduceMax", {xi}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{0}); });
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(max->data<int32_t>()[1], std::numeric_limits<int32_t>::min());
  absl::StatusOr<Tensor> prod = RunOne(18, "ReduceProd", {xi});
  ASSERT_TRUE(prod.ok()) << prod.status();
  EXPECT_EQ(prod->data<int32_t>()[0], 1);
  // A kept dim of 0 beside the reduced one: an empty output.
  absl::StatusOr<Tensor> none = RunOne(13, "ReduceMin", {xi}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{1}); });
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), Shape({0, 1}));
}

TEST(Reduce, ElementTypes) {
  // int32: exact; L2 and the logs compute in double and truncate.
  const Tensor i32 = Tensor::FromVector<int32_t>({3, 4, -2, 5}, {2, 2});
  EXPECT_THAT(Values(*RunOne(18, "ReduceSumSquare", {i32})), ElementsAre(54));
  EXPECT_THAT(Values(*RunOne(18, "ReduceL1", {i32})), ElementsAre(14));
  EXPECT_THAT(Values(*RunOne(18, "ReduceProd", {i32})), ElementsAre(-120));
  EXPECT_THAT(Values(*RunOne(18, "ReduceMin", {i32})), ElementsAre(-2));
  auto l2 = RunNode(18, "ReduceL2", {i32, I({1}, {1})}, 1, keepdims(0), {false, true});
  ASSERT_TRUE(l2.ok()) << l2.status();
  EXPECT_EQ((*l2)[0].dtype(), DType::kInt32);
  EXPECT_THAT(Values((*l2)[0]), ElementsAre(5, 5));  // 5 and sqrt(29) = 5.39 truncated
  EXPECT_THAT(Values(*RunOne(18, "ReduceLogSum", {Tensor::FromVector<int64_t>({1, 2}, {2})})), ElementsAre(1));
  EXPECT_THAT(Values(*RunOne(18, "ReduceLogSumExp", {Tensor::FromVector<int64_t>({0, 0}, {2})})), ElementsAre(0));
  // Unsigned: |x| is x; products wrap.
  const Tensor u8 = Tensor::FromVector<uint8_t>({200, 100}, {2});
  EXPECT_THAT(Values(*RunOne(18, "ReduceL1", {u8})), ElementsAre(44));  // 300 mod 256
  EXPECT_THAT(Values(*RunOne(18, "ReduceProd", {u8})), ElementsAre(32));  // 20000 mod 256
  EXPECT_THAT(Values(*RunOne(18, "ReduceMin", {u8})), ElementsAre(100));
  const Tensor i64 = Tensor::FromVector<int64_t>({int64_t(1) << 40, 1 << 20, -3}, {3});
  EXPECT_THAT(Values(*RunOne(18, "ReduceProd", {i64})), ElementsAre(-3.0 * std::ldexp(1.0, 60)));
  // Double and the 16-bit floats.
  const Tensor d = Tensor::FromVector<double>({1000, 1000}, {2});
  EXPECT_NEAR(Values(*RunOne(18, "ReduceLogSumExp", {d}))[0], 1000 + std::log(2.0), 1e-9);
  Tensor h = Tensor::Zeros(DType::kFloat16, {2});
  SetDouble(h, 0, 3);
  SetDouble(h, 1, -4);
  absl::StatusOr<Tensor> hl2 = RunOne(18, "ReduceL2", {h});
  ASSERT_TRUE(hl2.ok()) << hl2.status();
  EXPECT_EQ(hl2->dtype(), DType::kFloat16);
  EXPECT_THAT(Values(*hl2), ElementsAre(5));
  Tensor bf = Tensor::Zeros(DType::kBFloat16, {2});
  SetDouble(bf, 0, 0.5);
  SetDouble(bf, 1, 4);
  EXPECT_THAT(Values(*RunOne(18, "ReduceProd", {bf})), ElementsAre(2));
  // bool (ReduceMin-20): the minimum is "all".
  auto all = RunNode(20, "ReduceMin", {B({true, false, true, true}, {2, 2}), I({1}, {1})}, 1, keepdims(0), {false, true});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Values((*all)[0]), ElementsAre(0, 1));
  EXPECT_EQ(Message(RunOne(18, "ReduceMin", {B({true}, {1})}).status()),
            "not implemented: ai.onnx::ReduceMin opset 18 for bool");
}

TEST(Reduce, NanAndInfinities) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(Values(*RunOne(18, "ReduceMin", {F({1, nan, -3}, {3})}))[0]));
  EXPECT_TRUE(std::isnan(Values(*RunOne(18, "ReduceLogSumExp", {F({1, nan, inf}, {3})}))[0]));
  EXPECT_EQ(Values(*RunOne(18, "ReduceLogSumExp", {F({-inf, -inf}, {2})}))[0], -double(inf));
  EXPECT_EQ(Values(*RunOne(18, "ReduceLogSumExp", {F({inf, 1}, {2})}))[0], double(inf));
  EXPECT_NEAR(Values(*RunOne(18, "ReduceLogSumExp", {F({-inf, 2}, {2})}))[0], 2.0, 1e-6);
}

TEST(Reduce, AxesOutOfRangeAreErrors) {
  const Tensor x = F({1, 2, 3, 4}, {2, 2});
  for (const std::string op : {"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                               "ReduceSumSquare"}) {
    auto bad = RunNode(18, op, {x, I({2}, {1})}, 1, {}, {false, true});
    EXPECT_THAT(Message(bad.status()), HasSubstr("axis 2 is out of range for rank 2")) << op;
    absl::StatusOr<Tensor> old = RunOne(11, op, {x}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{-3}); });
    EXPECT_THAT(Message(old.status()), HasSubstr("axis -3 is out of range for rank 2")) << op;
    // Axes known only at run time are checked then.
    OpTester t;
    t.op = op;
    t.opset = 18;
    t.inputs = {x, I({5}, {1})};
    EXPECT_THAT(Message(t.Run().status()), HasSubstr("axis 5 is out of range")) << op;
  }
}

// X [A, B, C] over axes {0, 2} takes the general path (the reduced dims are
// not adjacent); its transpose [B, A, C] over {1, 2} takes the block fast
// path, and accumulates each output's elements in the same order: the two
// must agree exactly, for every reduction, type, odd and empty shape, and
// thread count.
TEST(Reduce, FastPathMatchesTheGeneralPath) {
  const std::vector<std::string> ops = {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1",
                                        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  const std::vector<Shape> shapes = {{3, 5, 7}, {1, 4, 1}, {2, 1, 3}, {0, 3, 2}, {37, 3, 901}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kInt32, DType::kInt64, DType::kUInt8})
    for (const Shape& s : shapes) {
      const int64_t a = s[0], b = s[1], c = s[2];
      const Tensor x = Random(dtype, s, seed++);
      Tensor y = Tensor::Zeros(dtype, {b, a, c});
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < b; ++j)
          for (int64_t k = 0; k < c; ++k) SetDouble(y, (j * a + i) * c + k, GetDouble(x, (i * b + j) * c + k));
      for (const std::string& op : ops) {
        auto general = RunNode(18, op, {x, I({0, 2}, {2})}, 1, keepdims(0), {false, true}, 2);
        auto fast = RunNode(18, op, {y, I({2, -2}, {2})}, 1, keepdims(0), {false, true}, 2);
        ASSERT_TRUE(general.ok() && fast.ok()) << op << ": " << general.status() << " " << fast.status();
        const std::vector<double> want = Values((*general)[0]), got = Values((*fast)[0]);
        ASSERT_EQ(got.size(), size_t(b));
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
              << op << " " << LowerName(dtype) << " " << ShapeToString(s) << " [" << i << "]: " << got[i] << " vs "
              << want[i];
      }
    }
}

TEST(ArgMin, FirstOrLastMinimumAlongAnAxis) {
  const Tensor x = F({1, 3, 1, 2, 0, 0}, {2, 3});
  const auto attrs = [](int64_t axis, int64_t keep, int64_t last) {
    return [=](onnx::NodeProto& n) {
      SetAttr(n, "axis", axis);
      SetAttr(n, "keepdims", keep);
      SetAttr(n, "select_last_index", last);
    };
  };
  absl::StatusOr<Tensor> y = RunOne(13, "ArgMin", {x}, attrs(1, 1, 0));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2, 1}));
  EXPECT_THAT(Values(*y), ElementsAre(0, 1));
  y = RunOne(12, "ArgMin", {x}, attrs(-1, 0, 1));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2}));
  EXPECT_THAT(Values(*y), ElementsAre(2, 2));
  y = RunOne(1, "ArgMin", {x});  // default axis 0, keepdims
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 3}));
  EXPECT_THAT(Values(*y), ElementsAre(0, 1, 1));
  y = RunOne(11, "ArgMin", {Tensor::FromVector<int32_t>({5, -7, 9, -7}, {4})}, attrs(0, 0, 0));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({}));
  EXPECT_THAT(Values(*y), ElementsAre(1));
  // NaN is the extreme of both: the first, or the last with select_last_index.
  const float nan = std::nanf("");
  const Tensor with_nan = F({3, nan, -1, nan, 5}, {5});
  for (const std::string op : {"ArgMin", "ArgMax"}) {
    EXPECT_THAT(Values(*RunOne(13, op, {with_nan}, attrs(0, 0, 0))), ElementsAre(1)) << op;
    EXPECT_THAT(Values(*RunOne(13, op, {with_nan}, attrs(0, 0, 1))), ElementsAre(3)) << op;
  }
  EXPECT_THAT(Message(RunOne(13, "ArgMin", {x}, attrs(2, 1, 0)).status()), HasSubstr("axis 2 is out of range"));
  EXPECT_THAT(Message(RunOne(13, "ArgMin", {F({}, {2, 0})}, attrs(1, 1, 0)).status()),
              HasSubstr("ArgMin over the empty axis 1"));
}

TEST(LpNormalization, L1AndL2AlongAnAxisZeroNormGivesZero) {
  const Tensor x = F({3, 4, 0, 0, -1, 3}, {3, 2});
  const auto attrs = [](int64_t axis, int64_t p) {
    return [=](onnx::NodeProto& n) {
      SetAttr(n, "axis", axis);
      SetAttr(n, "p", p);
    };
  };
  absl::StatusOr<Tensor> y = RunOne(1, "LpNormalization", {x});  // p = 2, axis -1
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {0.6, 0.8, 0.0, 0.0, -1 / std::sqrt(10.0), 3 / std::sqrt(10.0)}));
  y = RunOne(22, "LpNormalization", {x}, attrs(1, 1));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {3.0 / 7, 4.0 / 7, 0.0, 0.0, -0.25, 0.75}));
  y = RunOne(22, "LpNormalization", {x}, attrs(0, 1));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {0.75, 4.0 / 7, 0.0, 0.0, -0.25, 3.0 / 7}));
  Tensor d = Tensor::FromVector<double>({6, 8}, {1, 2});
  y = RunOne(22, "LpNormalization", {d}, attrs(-1, 2));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(0.6, 0.8));
  EXPECT_THAT(Message(RunOne(22, "LpNormalization", {x}, attrs(1, 3)).status()), HasSubstr("p = 3 must be 1 or 2"));
  EXPECT_THAT(Message(RunOne(22, "LpNormalization", {x}, attrs(2, 2)).status()), HasSubstr("axis 2 is out of range"));
  y = RunOne(22, "LpNormalization", {F({}, {0, 2})}, attrs(0, 2));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({0, 2}));
}

TEST(MeanVarianceNormalization, PerChannelByDefaultAndOverGivenAxes) {
  // Channel 0 holds 1, 3, 5, 7 (mean 4, std sqrt(5)); channel 1 is constant.
  const Tensor x = F({1, 3, 2, 2, 5, 7, 2, 2}, {2, 2, 1, 2});
  absl::StatusOr<Tensor> y = RunOne(13, "MeanVarianceNormalization", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  const double s = std::sqrt(5.0);
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-3 / s, -1 / s, 0.0, 0.0, 1 / s, 3 / s, 0.0, 0.0}));
  // Over the last axis only: each pair (a, b) becomes (-1, 1) or (0, 0).
  y = RunOne(9, "MeanVarianceNormalization", {x}, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{-1}); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-6), {-1, 1, 0, 0, -1, 1, 0, 0}));
  EXPECT_THAT(Message(RunOne(13, "MeanVarianceNormalization", {F({1, 2}, {2})}).status()),
              HasSubstr("axis 2 is out of range for rank 1"));
  Tensor h = Tensor::Zeros(DType::kFloat16, {1, 1, 1, 2});
  SetDouble(h, 0, 1);
  SetDouble(h, 1, 3);
  y = RunOne(13, "MeanVarianceNormalization", {h});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), Pointwise(DoubleNear(1e-3), {-1, 1}));
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
