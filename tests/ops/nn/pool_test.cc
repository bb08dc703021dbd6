// ops/nn/pool.cc: the pools against naive loops written here, for float (oneDNN
// where it applies), double and float16 (the reference kernel); MaxPool's
// indices; the global pools; errors.
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

struct PoolCase {
  Shape x, kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  bool ceil = false, include_pad = false;
  std::string auto_pad = "";
};

std::vector<int64_t> Or(const std::vector<int64_t>& v, size_t n, int64_t fallback) {
  return v.empty() ? std::vector<int64_t>(n, fallback) : v;
}

// One spatial dim of the pool: output size and, for each output, the input
// positions of its taps (outside the input: -1) and how many lie in the
// input with its explicit pads.
struct Axis {
  int64_t out = 0;
  std::vector<std::vector<int64_t>> taps;
  std::vector<int64_t> padded;
};

Axis MakeAxis(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil, bool same_lower,
              bool same) {
  Axis a;
  const int64_t ext = (k - 1) * d + 1;
  if (same) {
    a.out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (a.out - 1) * s + ext - in);
    pb = same_lower ? total - total / 2 : total / 2;
    pe = total - pb;
  } else {
    const double exact = double(in + pb + pe - ext) / double(s) + 1;
    a.out = ceil ? int64_t(std::ceil(exact)) : int64_t(std::floor(exact));
    if (ceil && (a.out - 1) * s >= in + pb) --a.out;
  }
  for (int64_t o = 0; o < a.out; ++o) {
    std::vector<int64_t> taps;
    int64_t padded = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = o * s - pb + j * d;
      taps.push_back(p >= 0 && p < in ? p : -1);
      padded += p < in + pe;
    }
    a.taps.push_back(taps);
    a.padded.push_back(padded);
  }
  return a;
}

// The pool of a 4-D or 3-D X by its definition (op: "MaxPool", "AveragePool", "LpPool" with p = 2).
std::vector<double> NaivePool(const std::string& op, const PoolCase& c, const Tensor& x, Shape& y_shape) {
  const size_t r = c.x.size() - 2;
  const auto s = Or(c.strides, r, 1), d = Or(c.dilations, r, 1), pads = Or(c.pads, 2 * r, 0);
  std::vector<Axis> axes;
  for (size_t i = 0; i < r; ++i)
    axes.push_back(MakeAxis(c.x[2 + i], c.kernel[i], s[i], d[i], pads[i], pads[r + i], c.ceil,
                            c.auto_pad == "SAME_LOWER", !c.auto_pad.empty()));
  // Treat a 1-D pool as 2-D with a height of 1.
  const Axis one = MakeAxis(1, 1, 1, 1, 0, 0, false, false, false);
  const Axis& ah = r == 2 ? axes[0] : one;
  const Axis& aw = axes[r - 1];
  const int64_t H = r == 2 ? c.x[2] : 1, W = c.x.back();
  y_shape = {c.x[0], c.x[1]};
  for (const Axis& a : axes) y_shape.push_back(a.out);
  std::vector<double> y;
  for (int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane)
    for (int64_t oh = 0; oh < ah.out; ++oh)
      for (int64_t ow = 0; ow < aw.out; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t count = 0;
        for (int64_t h : ah.taps[size_t(oh)])
          for (int64_t w : aw.taps[size_t(ow)]) {
            if (h < 0 || w < 0) continue;
            const double v = GetDouble(x, (plane * H + h) * W + w);
            best = std::max(best, v);
            sum += op == "LpPool" ? v * v : v;
            ++count;
          }
        if (op == "MaxPool") y.push_back(best);
        else if (op == "LpPool") y.push_back(std::sqrt(sum));
        else y.push_back(sum / double(c.include_pad ? ah.padded[size_t(oh)] * aw.padded[size_t(ow)] : count));
      }
  return y;
}

TEST(Pools, MatchTheDefinitionWithStridesPadsDilationsCeilModeAndSame) {
  const std::vector<PoolCase> cases = {
      {{1, 1, 5, 5}, {2, 2}},
      {{2, 3, 7, 6}, {3, 2}, {2, 2}, {}, {1, 1, 0, 1}},
      {{1, 2, 8, 9}, {3, 3}, {2, 3}, {}, {}, true},
      {{1, 2, 8, 9}, {3, 3}, {2, 3}, {}, {1, 1, 1, 1}, true, true},  // ceil with pads counted
      {{1, 2, 8, 9}, {3, 3}, {2, 3}, {}, {1, 1, 1, 1}, false, true},
      {{1, 1, 9, 9}, {2, 3}, {1, 2}, {2, 2}, {}, false},
      {{1, 1, 9, 9}, {2, 3}, {3, 2}, {2, 1}, {1, 0, 1, 1}, true},
      {{2, 2, 11}, {3}, {2}, {}, {1, 1}},
      {{1, 3, 6, 7}, {3, 2}, {2, 2}, {}, {}, false, false, "SAME_UPPER"},
      {{1, 3, 6, 7}, {2, 3}, {2, 3}, {}, {}, false, false, "SAME_LOWER"},
  };
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"})
    for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kDouble, DType::kFloat16}) {
      uint32_t seed = 1;
      for (const PoolCase& c : cases) {
        const std::string what = absl::StrCat(op, " ", LowerName(dt), " x ", ShapeToString(c.x), " kernel ",
                                              ShapeToString(c.kernel), " case ", seed);
        Tensor x = RandomUniform(dt, c.x, seed++);
        // Dilations arrived in AveragePool-19 and LpPool-18; MaxPool-12 has every attribute.
        const int64_t opset = std::string(op) == "MaxPool" ? 12 : 19;
        auto y = RunOne(opset, op, {x}, [&](onnx::NodeProto& n) {
          SetAttr(n, "kernel_shape", c.kernel);
          if (!c.strides.empty()) SetAttr(n, "strides", c.strides);
          if (!c.dilations.empty()) SetAttr(n, "dilations", c.dilations);
          if (!c.pads.empty()) SetAttr(n, "pads", c.pads);
          if (c.ceil) SetAttr(n, "ceil_mode", int64_t(1));
          if (c.include_pad) SetAttr(n, "count_include_pad", int64_t(1));
          if (!c.auto_pad.empty()) SetAttr(n, "auto_pad", c.auto_pad);
        });
        ASSERT_TRUE(y.ok()) << what << ": " << y.status();
        Shape want_shape;
        const std::vector<double> want = NaivePool(op, c, x, want_shape);
        ASSERT_EQ(y->shape(), want_shape) << what;
        const double tol = dt == DType::kBFloat16 ? 0.02 : dt == DType::kFloat16 ? 0.01 : 1e-5;
        for (int64_t i = 0; i < y->size(); ++i)
          ASSERT_NEAR(GetDouble(*y, i), want[size_t(i)], tol * (1 + std::fabs(want[size_t(i)]))) << what << " at " << i;
      }
    }
}

TEST(Pools, RandomGeometriesMatchTheDefinition) {
  // 120 random 1-D and 2-D geometries (fixed seed) for the three pools, in
  // float (the row-wise pool kernel) and double (the reference).
  std::mt19937 rng(777);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  int ran = 0;
  for (int t = 0; t < 120; ++t) {
    const size_t r = size_t(pick(1, 2));
    PoolCase c;
    c.x = {pick(1, 2), pick(1, 3)};
    for (size_t i = 0; i < r; ++i) {
      c.x.push_back(pick(1, 7));
      c.kernel.push_back(pick(1, 3));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
    }
    // Pads smaller than the kernel, as ONNX asks.
    for (size_t i = 0; i < 2 * r; ++i) c.pads.push_back(pick(0, int(c.kernel[i % r]) - 1));
    c.ceil = pick(0, 1) == 1;
    c.include_pad = pick(0, 1) == 1;
    if (pick(0, 4) == 0) {
      c.auto_pad = pick(0, 1) ? "SAME_UPPER" : "SAME_LOWER";
      c.pads.clear();
      c.ceil = false;
    }
    bool fits = true;
    for (size_t i = 0; i < r; ++i) {
      const int64_t pads = c.pads.empty() ? 0 : c.pads[i] + c.pads[r + i];
      fits = fits && c.x[2 + i] + pads >= (c.kernel[i] - 1) * c.dilations[i] + 1;
    }
    if (!fits) continue;
    ++ran;
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"})
      for (DType dt : {DType::kFloat, DType::kDouble}) {
        Tensor x = RandomUniform(dt, c.x, uint32_t(t + 1));
        auto y = RunOne(std::string(op) == "MaxPool" ? 12 : 19, op, {x}, [&](onnx::NodeProto& n) {
          SetAttr(n, "kernel_shape", c.kernel);
          SetAttr(n, "strides", c.strides);
          SetAttr(n, "dilations", c.dilations);
          if (!c.pads.empty()) SetAttr(n, "pads", c.pads);
          if (!c.auto_pad.empty()) SetAttr(n, "auto_pad", c.auto_pad);
          SetAttr(n, "ceil_mode", int64_t(c.ceil));
          SetAttr(n, "count_include_pad", int64_t(c.include_pad));
        });
        const std::string what = absl::StrCat(op, " ", LowerName(dt), " case ", t);
        ASSERT_TRUE(y.ok()) << what << ": " << y.status();
        Shape want_shape;
        const std::vector<double> want = NaivePool(op, c, x, want_shape);
        ASSERT_EQ(y->shape(), want_shape) << what;
        for (int64_t i = 0; i < y->size(); ++i) {
          if (std::isnan(want[size_t(i)]) || std::isinf(want[size_t(i)])) continue;  // a window over pads alone
          ASSERT_NEAR(GetDouble(*y, i), want[size_t(i)], 1e-5 * (1 + std::fabs(want[size_t(i)]))) << what << " at " << i;
        }
      }
  }
  EXPECT_GT(ran, 40);
}

TEST(MaxPool, IndicesRowAndColumnMajorAndIntegerTypes) {
  // Per plane [[1, 9, 2], [8, 3, 7]] (and +10 in the second channel), 2x2 windows with stride 1.
  Tensor x = F({1, 9, 2, 8, 3, 7, 11, 19, 12, 18, 13, 17}, {1, 2, 2, 3});
  for (int64_t order : {0, 1}) {
    auto out = RunNode(12, "MaxPool", {x}, 2, [order](onnx::NodeProto& n) {
      SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2});
      SetAttr(n, "storage_order", order);
    });
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values((*out)[0]), ElementsAre(9, 9, 19, 19));
    // 9 sits at (0, 1): row-major 1, column-major 0 + 1 * 2 = 2; the second plane adds 6.
    const std::vector<double> want = order == 0 ? std::vector<double>{1, 1, 7, 7} : std::vector<double>{2, 2, 8, 8};
    EXPECT_EQ(Values((*out)[1]), want);
  }
  // Indices from opset 8 on.
  auto v8 = RunNode(8, "MaxPool", {x}, 2,
                    [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{1, 3}); });
  ASSERT_TRUE(v8.ok()) << v8.status();
  EXPECT_THAT(Values((*v8)[1]), ElementsAre(1, 3, 7, 9));
  for (DType dt : {DType::kInt8, DType::kUInt8}) {
    Tensor xi = Tensor::Zeros(dt, {1, 1, 2, 2});
    for (int i = 0; i < 4; ++i) SetDouble(xi, i, dt == DType::kInt8 ? -100 + i : 250 - i);
    auto y = RunOne(12, "MaxPool", {xi}, [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); });
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(Values(*y), ElementsAre(dt == DType::kInt8 ? -97 : 250));
  }
  EXPECT_THAT(Message(RunOne(11, "MaxPool", {Tensor::Zeros(DType::kInt8, {1, 1, 2, 2})}, [](onnx::NodeProto& n) {
                        SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2});
                      }).status()),
              HasSubstr("int8"));
}

TEST(GlobalPools, AverageMaxAndLpOverEverySpatialDim) {
  Tensor x = F({1, 2, 3, 4, -5, 6, 7, 8}, {1, 2, 2, 2});
  auto avg = RunOne(1, "GlobalAveragePool", {x});
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_EQ(avg->shape(), Shape({1, 2, 1, 1}));
  EXPECT_THAT(Values(*avg), ElementsAre(2.5, 4));
  auto mx = RunOne(1, "GlobalMaxPool", {x});
  EXPECT_THAT(Values(*mx), ElementsAre(4, 8));
  auto lp = RunOne(2, "GlobalLpPool", {x}, [](onnx::NodeProto& n) { SetAttr(n, "p", int64_t(1)); });
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_THAT(Values(*lp), ElementsAre(10, 26));
  // Five spatial dims are fine for the global pools; double and float16 run the reference.
  for (DType dt : {DType::kDouble, DType::kFloat16}) {
    Tensor x5 = Tensor::Zeros(dt, {1, 1, 1, 2, 1, 2, 1});
    for (int i = 0; i < 4; ++i) SetDouble(x5, i, i + 1);
    auto y = RunOne(22, "GlobalAveragePool", {x5});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), Shape({1, 1, 1, 1, 1, 1, 1}));
    EXPECT_THAT(Values(*y), ElementsAre(2.5));
  }
  EXPECT_THAT(Message(RunOne(1, "GlobalAveragePool", {Tensor::Zeros(DType::kFloat, {1, 1, 0})}).status()),
              HasSubstr("no spatial elements"));
}

TEST(GlobalPools, FloatAverageMatchesTheMeanInDoubleForOddPlanes) {
  // The float path sums in eight lanes: plane sizes below, at and past a multiple of 8.
  for (int64_t hw : {1, 7, 8, 9, 63, 1000})
    for (int threads : {1, 2}) {
      Tensor x = Tensor::Zeros(DType::kFloat, {3, 5, hw});
      for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = float((i * 7919) % 101) / 13.0f - 3.5f;
      auto y = RunOne(1, "GlobalAveragePool", {x}, nullptr, threads);
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ(y->shape(), Shape({3, 5, 1}));
      for (int64_t plane = 0; plane < 15; ++plane) {
        double sum = 0;
        for (int64_t e = 0; e < hw; ++e) sum += double(x.data<float>()[plane * hw + e]);
        EXPECT_NEAR(y->data<float>()[plane], sum / double(hw), 1e-5) << "hw " << hw << " plane " << plane;
      }
    }
}

TEST(LpPool, OpsetOneTakesAFloatP) {
  Tensor x = F({3, 4, 1, 1}, {1, 1, 4});
  auto y = RunOne(1, "LpPool", {x}, [](onnx::NodeProto& n) {
    SetAttr(n, "kernel_shape", std::vector<int64_t>{2});
    SetAttr(n, "strides", std::vector<int64_t>{2});
    SetAttr(n, "p", 2.0f);
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(5, DoubleNear(std::sqrt(2.0), 1e-6)));
  EXPECT_THAT(Message(RunOne(2, "LpPool", {x}, [](onnx::NodeProto& n) {
                        SetAttr(n, "kernel_shape", std::vector<int64_t>{2});
                        SetAttr(n, "p", int64_t(0));
                      }).status()),
              HasSubstr("p 0 must be positive"));
}

TEST(Pools, AHugeKernelOverPaddingCostsOnlyItsTaps) {
  // A 2^30 - 1 kernel over 2^30 - 2 leading pads and a 2x2 input: two rows of
  // output, the first over the pads and row 0, the second over both rows;
  // each a handful of taps, for float and double.
  // The same along the last dim (X transposed): its taps are a row's.
  for (bool last : {false, true})
  for (DType dt : {DType::kFloat, DType::kDouble})
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
      Tensor x = Tensor::Zeros(dt, {1, 1, 2, 2});
      for (int i = 0; i < 4; ++i) SetDouble(x, last ? (i % 2) * 2 + i / 2 : i, i + 1);
      auto y = RunOne(19, op, {x}, [&](onnx::NodeProto& n) {
        const int64_t k = (int64_t(1) << 30) - 1, pad = (int64_t(1) << 30) - 2;
        SetAttr(n, "kernel_shape", last ? std::vector<int64_t>{1, k} : std::vector<int64_t>{k, 1});
        SetAttr(n, "pads", last ? std::vector<int64_t>{0, pad, 0, 0} : std::vector<int64_t>{pad, 0, 0, 0});
      });
      ASSERT_TRUE(y.ok()) << op << ": " << y.status();
      ASSERT_EQ(y->shape(), Shape({1, 1, 2, 2}));
      const std::string o = op;
      const std::vector<double> want = o == "MaxPool"       ? std::vector<double>{1, 2, 3, 4}
                                       : o == "AveragePool" ? std::vector<double>{1, 2, 2, 3}
                                                            : std::vector<double>{1, 2, std::sqrt(10.0), std::sqrt(20.0)};
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(GetDouble(*y, last ? int64_t((i % 2) * 2 + i / 2) : int64_t(i)), want[i], 1e-5)
            << op << " " << LowerName(dt) << (last ? " along the last dim" : "");
    }
}

TEST(Pools, BadAttributesAndShapesAreNamed) {
  Tensor x = F(std::vector<float>(9, 1), {1, 1, 3, 3});
  EXPECT_THAT(Message(RunOne(11, "MaxPool", {x}).status()), HasSubstr("kernel_shape is required"));
  EXPECT_THAT(Message(RunOne(11, "AveragePool", {x}, [](onnx::NodeProto& n) {
                        SetAttr(n, "kernel_shape", std::vector<int64_t>{4, 4});
                      }).status()),
              HasSubstr("larger than the padded input"));
  EXPECT_THAT(Message(RunOne(11, "MaxPool", {x}, [](onnx::NodeProto& n) {
                        SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2});
                        SetAttr(n, "storage_order", int64_t(2));
                      }).status()),
              HasSubstr("storage_order 2 must be 0 or 1"));
  EXPECT_THAT(Message(RunOne(11, "MaxPool", {F({1, 2}, {1, 2})}, [](onnx::NodeProto& n) {
                        SetAttr(n, "kernel_shape", std::vector<int64_t>{2});
                      }).status()),
              HasSubstr("must be (N, C, spatial...)"));
  // An empty batch pools to an empty output.
  auto y = RunOne(11, "MaxPool", {Tensor::Zeros(DType::kFloat, {0, 2, 3, 3})},
                  [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({0, 2, 2, 2}));
}

}  // namespace
}  // namespace onnx_mini
