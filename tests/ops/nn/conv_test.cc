// ops/nn/conv.cc: Conv and ConvTranspose against naive loops written here, for
// float and bfloat16 (oneDNN), double and float16 (the reference kernel).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "ops/nn/spatial.h"
#include "runtime/cpu.h"
#include "runtime/element.h"
#include "runtime/thread_pool.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct ConvCase {
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // empty: the defaults
  std::string auto_pad = "";
  bool bias = true;
  std::vector<int64_t> output_padding = {}, output_shape = {};  // ConvTranspose only
};

// The multi-index of flat position `at` in `shape`.
std::vector<int64_t> Unflatten(int64_t at, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = at % shape[d];
    at /= shape[d];
  }
  return idx;
}
int64_t Flatten(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d) at = at * shape[d] + idx[d];
  return at;
}

std::vector<int64_t> Or(const std::vector<int64_t>& v, size_t n, int64_t fallback) {
  return v.empty() ? std::vector<int64_t>(n, fallback) : v;
}

// Pads per spatial dim (begin, end) and output sizes of a forward convolution.
void ForwardGeometry(const ConvCase& c, std::vector<int64_t>& pb, std::vector<int64_t>& pe, Shape& out) {
  const size_t r = c.x.size() - 2;
  const auto s = Or(c.strides, r, 1), d = Or(c.dilations, r, 1), pads = Or(c.pads, 2 * r, 0);
  pb.assign(r, 0);
  pe.assign(r, 0);
  out.assign(r, 0);
  for (size_t i = 0; i < r; ++i) {
    const int64_t in = c.x[2 + i], ext = (c.w[2 + i] - 1) * d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in + s[i] - 1) / s[i];
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      pe[i] = total - pb[i];
    } else {
      if (c.auto_pad != "VALID") {
        pb[i] = pads[i];
        pe[i] = pads[r + i];
      }
      out[i] = (in + pb[i] + pe[i] - ext) / s[i] + 1;
    }
  }
}

// Y = conv(X, W) + B in double, every output position by its definition.
std::vector<double> NaiveConv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b, Shape& y_shape) {
  const size_t r = c.x.size() - 2;
  std::vector<int64_t> pb, pe;
  Shape out;
  ForwardGeometry(c, pb, pe, out);
  const auto s = Or(c.strides, r, 1), d = Or(c.dilations, r, 1);
  const int64_t M = c.w[0], Cg = c.w[1], Mg = M / c.group;
  y_shape = {c.x[0], M};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  const Shape kernel(c.w.begin() + 2, c.w.end());
  std::vector<double> y(size_t(ElementCount(y_shape)));
  for (int64_t at = 0; at < int64_t(y.size()); ++at) {
    const std::vector<int64_t> yi = Unflatten(at, y_shape);
    const int64_t n = yi[0], m = yi[1], g = m / Mg;
    double acc = b ? GetDouble(*b, m) : 0;
    for (int64_t cc = 0; cc < Cg; ++cc)
      for (int64_t k = 0; k < ElementCount(kernel); ++k) {
        const std::vector<int64_t> ki = Unflatten(k, kernel);
        std::vector<int64_t> xi = {n, g * Cg + cc};
        bool inside = true;
        for (size_t i = 0; i < r; ++i) {
          const int64_t p = yi[2 + i] * s[i] - pb[i] + ki[i] * d[i];
          inside = inside && p >= 0 && p < c.x[2 + i];
          xi.push_back(p);
        }
        if (!inside) continue;
        std::vector<int64_t> wi = {m, cc};
        wi.insert(wi.end(), ki.begin(), ki.end());
        acc += GetDouble(x, Flatten(xi, c.x)) * GetDouble(w, Flatten(wi, c.w));
      }
    y[size_t(at)] = acc;
  }
  return y;
}

// ConvTranspose by its definition: every input element times the kernel, added at i * s - pb + k * d.
std::vector<double> NaiveConvTranspose(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b,
                                       Shape& y_shape) {
  const size_t r = c.x.size() - 2;
  const auto s = Or(c.strides, r, 1), d = Or(c.dilations, r, 1), pads = Or(c.pads, 2 * r, 0);
  const auto op = Or(c.output_padding, r, 0);
  const int64_t C = c.x[1], Cg = C / c.group, Mg = c.w[1], M = Mg * c.group;
  std::vector<int64_t> pb(r);
  y_shape = {c.x[0], M};
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = s[i] * (c.x[2 + i] - 1) + op[i] + (c.w[2 + i] - 1) * d[i] + 1;
    if (!c.output_shape.empty() || c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      const int64_t want = c.output_shape.empty() ? c.x[2 + i] * s[i] : c.output_shape[i];
      const int64_t total = full - want;
      const int64_t half = int64_t(std::floor(double(total) / 2));
      pb[i] = c.auto_pad == "SAME_UPPER" ? half : total - half;
      y_shape.push_back(want);
    } else {
      pb[i] = pads[i];
      y_shape.push_back(full - pads[i] - pads[r + i]);
    }
  }
  std::vector<double> y(size_t(ElementCount(y_shape)));
  for (int64_t at = 0; at < int64_t(y.size()); ++at) y[size_t(at)] = b ? GetDouble(*b, Unflatten(at, y_shape)[1]) : 0;
  const Shape kernel(c.w.begin() + 2, c.w.end());
  for (int64_t xa = 0; xa < x.size(); ++xa) {
    const std::vector<int64_t> xi = Unflatten(xa, c.x);
    const int64_t n = xi[0], ic = xi[1], g = ic / Cg;
    for (int64_t mm = 0; mm < Mg; ++mm)
      for (int64_t k = 0; k < ElementCount(kernel); ++k) {
        const std::vector<int64_t> ki = Unflatten(k, kernel);
        std::vector<int64_t> yi = {n, g * Mg + mm};
        bool inside = true;
        for (size_t i = 0; i < r; ++i) {
          const int64_t p = xi[2 + i] * s[i] - pb[i] + ki[i] * d[i];
          inside = inside && p >= 0 && p < y_shape[2 + i];
          yi.push_back(p);
        }
        if (!inside) continue;
        std::vector<int64_t> wi = {ic, mm};
        wi.insert(wi.end(), ki.begin(), ki.end());
        y[size_t(Flatten(yi, y_shape))] += GetDouble(x, xa) * GetDouble(w, Flatten(wi, c.w));
      }
  }
  return y;
}

Attrs ConvAttrs(const ConvCase& c) {
  return [c](onnx::NodeProto& n) {
    if (c.group != 1) SetAttr(n, "group", c.group);
    if (!c.strides.empty()) SetAttr(n, "strides", c.strides);
    if (!c.dilations.empty()) SetAttr(n, "dilations", c.dilations);
    if (!c.pads.empty()) SetAttr(n, "pads", c.pads);
    if (!c.auto_pad.empty()) SetAttr(n, "auto_pad", c.auto_pad);
    if (!c.output_padding.empty()) SetAttr(n, "output_padding", c.output_padding);
    if (!c.output_shape.empty()) SetAttr(n, "output_shape", c.output_shape);
  };
}

void CheckAgainstNaive(const char* op, const std::vector<ConvCase>& cases, bool transposed) {
  for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kDouble, DType::kFloat16}) {
    uint32_t seed = 1;
    for (const ConvCase& c : cases) {
      const std::string what = absl::StrCat(op, " ", LowerName(dt), " x ", ShapeToString(c.x), " w ",
                                            ShapeToString(c.w), " group ", c.group, " ", c.auto_pad);
      Tensor x = RandomUniform(dt, c.x, seed++), w = RandomUniform(dt, c.w, seed++);
      const int64_t m = transposed ? c.w[1] * c.group : c.w[0];
      Tensor b = RandomUniform(dt, {m}, seed++);
      std::vector<Tensor> inputs = {x, w};
      if (c.bias) inputs.push_back(b);
      // Constant weights: the shapes are static, so the plan (and oneDNN's primitive) is made once.
      OpTester t;
      t.op = op;
      t.opset = 11;
      t.inputs = inputs;
      t.constant = {false, true, true};
      t.attrs = ConvAttrs(c);
      absl::StatusOr<Tensor> y = t.RunOne();
      ASSERT_TRUE(y.ok()) << what << ": " << y.status();
      Shape want_shape;
      const std::vector<double> want = transposed ? NaiveConvTranspose(c, x, w, c.bias ? &b : nullptr, want_shape)
                                                  : NaiveConv(c, x, w, c.bias ? &b : nullptr, want_shape);
      ASSERT_EQ(y->shape(), want_shape) << what;
      const double tol = dt == DType::kBFloat16 ? 0.03 : dt == DType::kFloat16 ? 0.02 : dt == DType::kFloat ? 1e-4 : 1e-10;
      for (int64_t i = 0; i < y->size(); ++i)
        ASSERT_NEAR(GetDouble(*y, i), want[size_t(i)], tol * (1 + std::fabs(want[size_t(i)]))) << what << " at " << i;
    }
  }
}

TEST(Conv, MatchesTheDefinitionIn1d2d3dWithGroupsStridesDilationsAndPads) {
  CheckAgainstNaive("Conv",
                    {
                        {{1, 1, 5, 5}, {1, 1, 3, 3}},
                        {{2, 3, 7}, {4, 3, 3}, 1, {2}, {}, {1, 2}},
                        {{1, 4, 9, 8}, {6, 2, 3, 2}, 2, {2, 1}, {2, 1}, {1, 0, 2, 1}},
                        {{2, 6, 5, 6}, {6, 1, 3, 3}, 6, {1, 1}, {}, {1, 1, 1, 1}},  // depthwise
                        {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 1}, 1, {1, 2, 1}, {1, 1, 2}, {0, 1, 0, 1, 0, 0}},
                        {{1, 3, 7, 6}, {2, 3, 3, 2}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
                        {{1, 3, 7, 6}, {2, 3, 2, 3}, 1, {2, 3}, {}, {}, "SAME_LOWER", false},
                        {{1, 3, 7, 6}, {2, 3, 3, 3}, 1, {2, 2}, {}, {}, "VALID"},
                        {{3, 5, 11, 13}, {8, 5, 5, 3}, 1, {3, 2}, {2, 1}, {2, 1, 1, 2}},
                    },
                    false);
}

TEST(Conv, RandomGeometriesMatchTheDefinitionOrAreRefusedByName) {
  // 150 random geometries (fixed seed): each either runs and matches the
  // definition or fails with a message naming the node, never crashes.
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  std::vector<ConvCase> valid;
  for (int t = 0; t < 150; ++t) {
    const size_t r = size_t(pick(1, 3));
    ConvCase c;
    c.group = pick(1, 3);
    const int64_t cg = pick(1, 2), mg = pick(1, 2);
    c.x = {pick(1, 2), cg * c.group};
    c.w = {mg * c.group, cg};
    for (size_t i = 0; i < r; ++i) {
      c.x.push_back(pick(1, 6));
      c.w.push_back(pick(1, 3));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
    }
    for (size_t i = 0; i < 2 * r; ++i) c.pads.push_back(pick(0, 2));
    const int64_t mode = pick(0, 5);
    if (mode == 1) c.auto_pad = "SAME_UPPER";
    if (mode == 2) c.auto_pad = "SAME_LOWER";
    if (mode == 3) c.auto_pad = "VALID";
    if (mode != 0 && mode <= 3) c.pads.clear();
    c.bias = pick(0, 1) == 1;
    std::vector<int64_t> pb, pe;
    Shape out;
    ForwardGeometry(c, pb, pe, out);
    bool ok = true;
    for (size_t i = 0; i < r; ++i)
      ok = ok && c.x[2 + i] + pb[i] + pe[i] >= (c.w[2 + i] - 1) * c.dilations[i] + 1;
    if (ok) {
      valid.push_back(c);
      continue;
    }
    auto y = RunOne(11, "Conv", {RandomUniform(DType::kFloat, c.x, 1), RandomUniform(DType::kFloat, c.w, 2)}, ConvAttrs(c));
    EXPECT_THAT(Message(y.status()), HasSubstr("larger than the padded input")) << ShapeToString(c.x);
  }
  EXPECT_GT(valid.size(), 50u);
  CheckAgainstNaive("Conv", valid, false);
}

TEST(ConvTranspose, MatchesTheDefinitionWithOutputPaddingOutputShapeAndGroups) {
  ConvCase with_shape{{1, 2, 3, 4}, {2, 3, 3, 3}, 1, {2, 2}};
  with_shape.output_shape = {8, 9};
  ConvCase beyond{{1, 1, 3, 3}, {1, 2, 3, 3}, 1, {3, 2}};  // the full output is 9 x 7
  beyond.output_shape = {10, 8};
  ConvCase beyond_upper = beyond;
  beyond_upper.auto_pad = "SAME_UPPER";
  ConvCase with_padding{{1, 2, 3, 3}, {2, 2, 3, 2}, 1, {3, 2}, {}, {1, 2, 1, 0}};
  with_padding.output_padding = {1, 1};
  ConvCase same{{2, 1, 4, 3}, {1, 2, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"};
  ConvCase same_lower = same;
  same_lower.auto_pad = "SAME_LOWER";
  CheckAgainstNaive("ConvTranspose",
                    {
                        {{1, 1, 3, 3}, {1, 2, 3, 3}},
                        {{2, 3, 5}, {3, 2, 3}, 1, {2}, {}, {1, 0}},
                        {{1, 4, 3, 4}, {4, 3, 2, 2}, 2, {2, 1}, {2, 2}},
                        {{1, 2, 2, 3, 2}, {2, 2, 2, 2, 2}, 1, {1, 2, 2}},
                        with_shape,
                        beyond,
                        beyond_upper,
                        with_padding,
                        same,
                        same_lower,
                    },
                    true);
}

TEST(Conv, HandValues) {
  // 3x3 input, 2x2 kernel of ones: each output is the sum of a 2x2 block, plus the bias.
  auto y = RunOne(11, "Conv", {F({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}), F({1, 1, 1, 1}, {1, 1, 2, 2}), F({10}, {1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({1, 1, 2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(22, 26, 34, 38));
  // ConvTranspose of [1, 2] with kernel [1, 10], stride 2: [1, 10, 2, 20].
  y = RunOne(11, "ConvTranspose", {F({1, 2}, {1, 1, 2}), F({1, 10}, {1, 1, 2})},
             [](onnx::NodeProto& n) { SetAttr(n, "strides", std::vector<int64_t>{2}); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(1, 10, 2, 20));
  // Opset 1 and 22 rows are the same op.
  for (int64_t opset : {1, 22}) {
    y = RunOne(opset, "Conv", {F({1, 2, 3}, {1, 1, 3}), F({1, -1}, {1, 1, 2})});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(Values(*y), ElementsAre(-1, -1));
  }
}

// Conv -> MaxPool -> AveragePool, as a model: with dynamic dims the plans are
// made per run; with static ones once, and runs from several threads share them.
std::unique_ptr<Session> ConvPoolModel(const std::vector<int64_t>& dims) {
  ModelBuilder m(11);
  m.Input("x", DType::kFloat, dims)
      .Initializer("w", RandomUniform(DType::kFloat, {4, 3, 3, 3}, 7))
      .Output("y", DType::kFloat, {}, false);
  SetAttr(m.Node("Conv", {"x", "w"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttr(m.Node("MaxPool", {"c"}, {"p"}), "kernel_shape", std::vector<int64_t>{2, 2});
  onnx::NodeProto& avg = m.Node("AveragePool", {"p"}, {"y"});
  SetAttr(avg, "kernel_shape", std::vector<int64_t>{3, 3});
  SetAttr(avg, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto session = m.Build();
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

TEST(Conv, DynamicShapesPlanPerRunAndStaticPlansAreSharedAcrossThreads) {
  std::unique_ptr<Session> dynamic = ConvPoolModel({-1, 3, -1, -1});
  std::unique_ptr<Session> fixed = ConvPoolModel({2, 3, 9, 8});
  ASSERT_TRUE(dynamic && fixed);
  Tensor x = RandomUniform(DType::kFloat, {2, 3, 9, 8}, 3);
  auto want = fixed->Run({{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ((*want)[0].shape(), Shape({2, 4, 8, 7}));
  for (const Shape& shape : {Shape{2, 3, 9, 8}, Shape{1, 3, 5, 12}, Shape{2, 3, 9, 8}}) {
    auto got = dynamic->Run({{"x", shape == Shape{2, 3, 9, 8} ? x : RandomUniform(DType::kFloat, shape, 4)}});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].shape(), Shape({shape[0], 4, shape[2] - 1, shape[3] - 1}));
    if (shape == Shape{2, 3, 9, 8}) {
      EXPECT_EQ(Values((*got)[0]), Values((*want)[0]));
    }
  }
  std::vector<std::vector<double>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        auto got = fixed->Run({{"x", x}});
        if (got.ok()) results[t] = Values((*got)[0]);
      }
    });
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, Values((*want)[0]));
}

TEST(QLinearConv, RequantizesPerOutputChannelWithBias) {
  // X - 10 = [0, 10, 20, 30]; 1x1 kernels W - w_zero_point = [1, -1];
  // bias [4, 0]; multipliers 0.5 * [1, 0.25] / 1; plus 5, then rounded as
  // ONNX's reference does (-2.5 + 5 = 2.5 rounds to 2).
  const Tensor x = Tensor::FromVector<uint8_t>({10, 20, 30, 40}, {1, 1, 2, 2});
  const Tensor w = Tensor::FromVector<int8_t>({1, -2}, {2, 1, 1, 1});
  auto y = RunOne(10, "QLinearConv",
                  {x, F({0.5f}, {}), Tensor::FromVector<uint8_t>({10}, {}), w, F({1, 0.25f}, {2}),
                   Tensor::FromVector<int8_t>({0, -1}, {2}), F({1}, {}), Tensor::FromVector<uint8_t>({5}, {}),
                   Tensor::FromVector<int32_t>({4, 0}, {2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kUInt8);
  EXPECT_EQ(y->shape(), (Shape{1, 2, 2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(7, 12, 17, 22, 5, 4, 2, 1));
  auto bad = RunOne(10, "QLinearConv",
                    {x, F({0.5f, 1}, {2}), Tensor::FromVector<uint8_t>({10}, {}), w, F({1}, {}),
                     Tensor::FromVector<int8_t>({0}, {}), F({1}, {}), Tensor::FromVector<uint8_t>({5}, {})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("x_scale [2] must have one element"));
}

// Constant weights are reordered into oneDNN's layout once and kept: the
// results are those of weights given at run time, at every later run too.
TEST(Conv, KeptConstantWeightsMatchRunTimeWeights) {
  for (DType dt : {DType::kFloat, DType::kBFloat16}) {
    const Tensor x = RandomUniform(dt, {2, 4, 9, 7}, 1), w = RandomUniform(dt, {6, 2, 3, 3}, 2);
    const Tensor b = RandomUniform(dt, {6}, 3);
    const auto attrs = [](onnx::NodeProto& n) {
      SetAttr(n, "group", int64_t(2));
      SetAttr(n, "pads", std::vector<int64_t>{1, 0, 1, 2});
    };
    auto plain = RunNode(11, "Conv", {x, w, b}, 1, attrs);
    ASSERT_TRUE(plain.ok()) << plain.status();
    ModelBuilder m(11);
    m.Input("x", dt, {2, 4, 9, 7}).Initializer("w", w).Initializer("b", b).Output("y", dt, {}, false);
    attrs(m.Node("Conv", {"x", "w", "b"}, {"y"}));
    auto session = m.Build();
    ASSERT_TRUE(session.ok()) << session.status();
    for (int run = 0; run < 3; ++run) {
      auto kept = (*session)->Run({{"x", x}});
      ASSERT_TRUE(kept.ok()) << kept.status();
      EXPECT_EQ(Values((*kept)[0]), Values((*plain)[0])) << LowerName(dt) << " run " << run;
    }
  }
}

TEST(ConvInteger, SubtractsZeroPointsPerTensorAndPerOutputChannel) {
  // X uint8 [[10, 11], [12, 13]] with zero point 10; two 1x1 int8 filters [2] and [-1]
  // with zero points 0 and -1 (per output channel).
  Tensor x = Tensor::FromVector<uint8_t>({10, 11, 12, 13}, {1, 1, 2, 2});
  Tensor w = Tensor::FromVector<int8_t>({2, -1}, {2, 1, 1, 1});
  auto y = RunOne(10, "ConvInteger",
                  {x, w, Tensor::FromVector<uint8_t>({10}, {}), Tensor::FromVector<int8_t>({0, -1}, {2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kInt32);
  // (x - 10) * 2 and (x - 10) * (-1 - -1) = 0.
  EXPECT_THAT(Values(*y), ElementsAre(0, 2, 4, 6, 0, 0, 0, 0));
  // Without zero points, 2x2 kernel of ones over int8 with a pad: sums of the 2x2 blocks.
  y = RunOne(10, "ConvInteger",
             {Tensor::FromVector<int8_t>({1, -2, 3, -4}, {1, 1, 2, 2}), Tensor::FromVector<uint8_t>({1, 1, 1, 1}, {1, 1, 2, 2})},
             [](onnx::NodeProto& n) { SetAttr(n, "pads", std::vector<int64_t>{0, 0, 1, 0}); });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(-2, -1));
  EXPECT_THAT(Message(RunOne(10, "ConvInteger", {x, w, Tensor::FromVector<uint8_t>({1, 2}, {2})}).status()),
              HasSubstr("x_zero_point [2] must have one element"));
  EXPECT_THAT(Message(RunOne(10, "ConvInteger", {x, w, Tensor(), Tensor::FromVector<int8_t>({0, 1, 2}, {3})}).status()),
              HasSubstr("w_zero_point [3] must have one element or one per output channel"));
}

TEST(Conv, NoInputChannelsLeaveTheBias) {
  // C = 0: every output is its channel's bias, for oneDNN's type and the reference's.
  for (DType dt : {DType::kFloat, DType::kDouble}) {
    Tensor b = Tensor::Zeros(dt, {2});
    SetDouble(b, 0, 1.5);
    SetDouble(b, 1, -2);
    auto y = RunOne(11, "Conv", {Tensor::Zeros(dt, {1, 0, 2, 2}), Tensor::Zeros(dt, {2, 0, 1, 1}), b});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(Values(*y), ElementsAre(1.5, 1.5, 1.5, 1.5, -2, -2, -2, -2));
  }
}

TEST(Conv, EmptyBatchGivesAnEmptyOutput) {
  auto y = RunOne(11, "Conv", {Tensor::Zeros(DType::kFloat, {0, 2, 4, 4}), F(std::vector<float>(18, 1), {1, 2, 3, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({0, 1, 2, 2}));
}

TEST(Conv, BadShapesAndAttributesAreNamed) {
  Tensor x = F(std::vector<float>(16, 1), {1, 1, 4, 4});
  auto err = [&](const std::vector<Tensor>& in, Attrs attrs, const char* op = "Conv") {
    return Message(RunOne(11, op, in, attrs).status());
  };
  EXPECT_THAT(err({x, F(std::vector<float>(18, 1), {1, 2, 3, 3})}, {}), HasSubstr("X's channels must be W's second dim"));
  EXPECT_THAT(err({x, F(std::vector<float>(25, 1), {1, 1, 5, 5})}, {}), HasSubstr("larger than the padded input"));
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3})},
                  [](onnx::NodeProto& n) { SetAttr(n, "auto_pad", std::string("SAME")); }),
              HasSubstr("auto_pad 'SAME' is not"));
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3})},
                  [](onnx::NodeProto& n) { SetAttr(n, "strides", std::vector<int64_t>{0, 1}); }),
              HasSubstr("strides value 0 must be in [1, 2^31)"));
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3})},
                  [](onnx::NodeProto& n) { SetAttr(n, "pads", std::vector<int64_t>{1, 1}); }),
              HasSubstr("pads has 2 values; 2 spatial dims need 4"));
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3})},
                  [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); }),
              HasSubstr("kernel_shape [2,2] differs from the weights' [3,3]"));
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3}), F({1, 2}, {2})}, {}), HasSubstr("B [2] must be (1)"));
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3})},
                  [](onnx::NodeProto& n) {
                    SetAttr(n, "strides", std::vector<int64_t>{2, 2});
                    SetAttr(n, "output_padding", std::vector<int64_t>{2, 0});
                  },
                  "ConvTranspose"),
              HasSubstr("output_padding 2 must be less than the stride 2"));
  EXPECT_THAT(err({F(std::vector<float>(16, 1), {1, 1, 1, 1, 4, 4}), F(std::vector<float>(1, 1), {1, 1, 1, 1, 1, 1})}, {}),
              HasSubstr("not implemented: ai.onnx::Conv opset 11 for 4 spatial dims"));
  EXPECT_THAT(err({F({1, 2}, {1, 2}), F({1, 2}, {1, 2})}, {}), HasSubstr("rank of at least 3"));
}

// What oneDNN allocates for a convolution (its scratchpad, the blocked
// copies of the input and output, the reordered weights it keeps) counts
// against the session's budget: refused, Run says no and the op runs its
// reference kernel; granted, the kept weights stay charged.
TEST(Conv, OneDnnBuffersAreChargedToTheBudget) {
  Window w;
  w.rank = 2;
  w.in = {1, 32, 32};
  w.k = {1, 3, 3};
  w.out = {1, 30, 30};
  const std::shared_ptr<const OneDnnForward> dnn = MakeOneDnnConv(DType::kFloat, w, 1, 16, 32, 1, false, false);
  ASSERT_NE(dnn, nullptr);
  std::vector<float> x(16 * 32 * 32, 1.0f), wt(32 * 16 * 3 * 3, 0.5f), y(32 * 30 * 30, -1.0f);
  const auto tiny = std::make_shared<MemoryBudget>(1024);
  EXPECT_FALSE(dnn->Run(x.data(), wt.data(), nullptr, y.data(), 1, true, tiny));
  EXPECT_EQ(tiny->used(), 0u);
  const auto ample = std::make_shared<MemoryBudget>(size_t(1) << 30);
  ASSERT_TRUE(dnn->Run(x.data(), wt.data(), nullptr, y.data(), 1, true, ample));
  EXPECT_GT(ample->used(), 0u);  // the kept weights, in oneDNN's blocked layout
  EXPECT_FLOAT_EQ(y[0], 16 * 9 * 0.5f);
  EXPECT_FLOAT_EQ(y.back(), 16 * 9 * 0.5f);
}

// A conv primitive never lands on oneDNN's ref implementation where its
// jit takes the case channels last: silero VAD's 258-channel depthwise 1-D
// conv with a channels-last Y (its reader a conv) took 0.36 ms on ref:any.
TEST(Conv, OneDnnPrimitiveAvoidsRefWhereAJitTakesIt) {
  if (!CpuTargetUsable(CpuTarget::kAvx512, HostCpuFeatures())) GTEST_SKIP() << "the case is AVX-512's";
  for (int64_t c : {258, 16, 32})
    for (int layout = 0; layout < 4; ++layout) {
      Window w;
      w.rank = 1;
      w.in = {1, 1, 24};
      w.k = {1, 1, 5};
      w.pb = {0, 0, 2};
      w.pe = {0, 0, 2};
      w.out = {1, 1, 24};
      ConvFusion f;
      f.src_channels_last = layout & 1;
      f.dst_channels_last = layout & 2;
      f.post = {ConvPostOp{}};  // Relu
      const std::shared_ptr<const OneDnnForward> dnn = MakeOneDnnConv(DType::kFloat, w, 1, c, c, c, true, false, f);
      ASSERT_NE(dnn, nullptr);
      const std::string impl = dnn->Impl(1);
      EXPECT_FALSE(impl.empty());
      EXPECT_NE(impl.rfind("ref", 0), 0u) << c << " channels, layout " << layout << ": " << impl;
      // And it computes: each output the bias plus the taps inside the input.
      std::vector<float> x(size_t(c * 24), 1.0f), wt(size_t(c * 5), 0.5f), b(size_t(c), 0.25f), y(size_t(c * 24), -1.0f);
      ASSERT_TRUE(dnn->Run(x.data(), wt.data(), b.data(), y.data(), 1));
      EXPECT_FLOAT_EQ(y[0], 0.25f + 3 * 0.5f);
      EXPECT_FLOAT_EQ(y[size_t(f.dst_channels_last ? 12 * c : 12)], 0.25f + 5 * 0.5f);  // channel 0, position 12
    }
}

// Under a memory limit too small for oneDNN's buffers, Conv gives the same
// values through its reference kernel.
TEST(Conv, RunsUnderALimitTooSmallForOneDnnBuffers) {
  // (Below AVX2 our kernels leave this conv to oneDNN: kernels/conv/direct.h
  // would take it on an AVX2 host, with packed weights of its own.)
  ScopedCpuFeaturesForTesting baseline(CpuTarget::kBaseline);
  const Tensor x = RandomUniform(DType::kFloat, {1, 16, 32, 32}, 7);
  const Tensor wt = RandomUniform(DType::kFloat, {32, 16, 3, 3}, 8);
  OpTester t;
  t.op = "Conv";
  t.inputs = {x, wt};
  t.constant = {false, true};
  absl::StatusOr<Tensor> want = t.RunOne();
  ASSERT_TRUE(want.ok()) << want.status();
  t.memory_limit = size_t(32 * 30 * 30 * 4) + 4096;  // Y and little else
  absl::StatusOr<Tensor> got = t.RunOne();
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<double> a = Values(*want), b = Values(*got);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4 * (1 + std::abs(a[i]))) << i;
}

// A conv split into parts (output rows of each image, one single-threaded
// primitive each, on the pool) gives the whole primitive's bytes, for every
// layout of X and Y (NCHW ones reordered around the parts), a residual, a
// batch, strides, pads and dilations cutting across the parts, 1-D and
// depthwise convs, float and bfloat16; a split whose part would hold pads
// alone is not made.
TEST(Conv, SplitIntoPartsMatchesTheWholePrimitive) {
  struct SplitCase {
    int rank;
    int64_t n, c, m, group, in0, in1, k0, k1, s0, d0, pb0, pe0, p1;
    int64_t parts;
  };
  const SplitCase cases[] = {
      {2, 1, 24, 24, 1, 74, 32, 3, 1, 1, 1, 0, 0, 0, 4},   // oww's 3x1
      {2, 2, 8, 16, 1, 17, 9, 3, 3, 2, 1, 1, 2, 1, 3},    // batch, stride 2, uneven pads
      {2, 1, 16, 16, 16, 20, 12, 3, 3, 1, 2, 2, 2, 1, 4},  // depthwise, dilation 2
      {1, 3, 5, 7, 1, 1, 40, 1, 5, 1, 1, 0, 0, 2, 2},     // 1-D (rows are the length)
      {2, 1, 1, 8, 1, 30, 10, 3, 3, 1, 1, 1, 1, 1, 8},    // one input channel
  };
  int made[2] = {0, 0};  // splits made: float, bfloat16
  const bool bf16 = CpuTargetUsable(CpuTarget::kAvx512, HostCpuFeatures());
  for (DType dt : {DType::kFloat, DType::kBFloat16}) {
    // oneDNN has bfloat16 convolutions only on AVX-512 (elsewhere its
    // reference, which the conv declines for ours).
    if (dt == DType::kBFloat16 && !bf16) continue;
    for (const SplitCase& sc : cases) {
      Window w;
      w.rank = sc.rank;
      const size_t j = size_t(kMaxSpatial - sc.rank);
      w.in[j] = sc.in0;
      w.k[j] = sc.k0;
      w.s[j] = sc.s0;
      w.d[j] = sc.d0;
      w.pb[j] = sc.pb0;
      w.pe[j] = sc.pe0;
      if (sc.rank == 2) {
        w.in[2] = sc.in1;
        w.k[2] = sc.k1;
        w.pb[2] = w.pe[2] = sc.p1;
      }
      for (size_t i = 0; i < size_t(kMaxSpatial); ++i)
        w.out[i] = (w.in[i] + w.pb[i] + w.pe[i] - (w.k[i] - 1) * w.d[i] - 1) / w.s[i] + 1;
      const int64_t xs = sc.n * sc.c * w.in_size(), ys = sc.n * sc.m * w.out_size();
      const Tensor x = RandomUniform(dt, {xs}, 11), wt = RandomUniform(dt, {sc.m * sc.c / sc.group * w.k_size()}, 12);
      const Tensor b = RandomUniform(dt, {sc.m}, 13), z = RandomUniform(dt, {ys}, 14);
      for (int layout = 0; layout < 8; ++layout) {
        ConvFusion f;
        f.src_channels_last = layout & 1;
        f.dst_channels_last = layout & 2;
        const bool residual = layout & 4;
        if (residual) f.post.push_back({ConvPostOp::kAdd, 0, 0});
        f.post.push_back({ConvPostOp::kLeakyRelu, 0.1f, 0});
        const auto whole = MakeOneDnnConv(dt, w, sc.n, sc.c, sc.m, sc.group, true, false, f);
        const std::string what = absl::StrCat(LowerName(dt), " rank ", sc.rank, " n ", sc.n, " c ", sc.c, " layout ",
                                              layout);
        ASSERT_NE(whole, nullptr) << what;
        const auto split = MakeOneDnnConvSplit(dt, w, sc.n, sc.c, sc.m, sc.group, true, f, sc.parts, whole->Impl(1));
        // None where a part would run another implementation (oneDNN picks
        // by shape: a host may do so for some of these), which gives other bytes.
        if (!split) continue;
        ++made[dt == DType::kFloat ? 0 : 1];
        EXPECT_GE(split->parts.size(), 2u) << what;
        Tensor want = Tensor::Zeros(dt, {ys}), got = Tensor::Zeros(dt, {ys});
        ASSERT_TRUE(whole->Run(x.raw(), wt.raw(), b.raw(), want.raw(), 1, true, nullptr,
                               residual ? z.raw() : nullptr))
            << what;
        for (int threads : {1, 2}) {
          ASSERT_TRUE(split->Run(x.raw(), wt.raw(), b.raw(), got.raw(), threads, true, nullptr,
                                 residual ? z.raw() : nullptr))
              << what;
          const std::vector<double> a = Values(want), c = Values(got);
          for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], c[i]) << what << " threads " << threads << " at " << i;
        }
        // A residual is required when the post-ops add one, and refused otherwise.
        EXPECT_FALSE(split->Run(x.raw(), wt.raw(), b.raw(), got.raw(), 2, true, nullptr,
                                residual ? nullptr : z.raw()))
            << what;
      }
    }
  }
  EXPECT_GT(made[0], 0) << "no float split made";
  if (bf16) {
    EXPECT_GT(made[1], 0);
  }
  // Six one-row parts of a 2-row input padded by 3: the first part's window
  // lies in the pads (oneDNN takes such a conv only by a GEMM, which no split
  // runs: the impl named here lets the check of the pads come first).
  Window w;
  w.rank = 2;
  w.in = {1, 2, 4};
  w.k = {1, 3, 1};
  w.pb = {0, 3, 0};
  w.pe = {0, 3, 0};
  w.out = {1, 6, 4};
  EXPECT_EQ(MakeOneDnnConvSplit(DType::kFloat, w, 1, 16, 16, 1, false, {}, 6, "jit:avx2"), nullptr);
  // A GEMM's sums run in another order channels last than NCHW: no split.
  EXPECT_EQ(MakeOneDnnConvSplit(DType::kFloat, w, 1, 16, 16, 1, false, {}, 2, "x64:gemm:jit"), nullptr);
  // A 3x3 conv: split when its parts run the whole's implementation.
  w.in = {1, 8, 8};
  w.k = {1, 3, 3};
  w.pb = w.pe = {0, 1, 1};
  w.out = {1, 8, 8};
  const auto whole = MakeOneDnnConv(DType::kFloat, w, 1, 16, 16, 1, false, false);
  ASSERT_NE(whole, nullptr);
  const std::string impl = whole->Impl(1);
  EXPECT_NE(MakeOneDnnConvSplit(DType::kFloat, w, 1, 16, 16, 1, false, {}, 2, impl), nullptr) << impl;
  EXPECT_EQ(MakeOneDnnConvSplit(DType::kDouble, w, 1, 16, 16, 1, false, {}, 2, impl), nullptr);
  EXPECT_EQ(MakeOneDnnConvSplit(DType::kFloat, w, 1, 16, 16, 1, false, {}, 2, impl + "?"), nullptr);
}


// A float conv the size rule gives one oneDNN thread runs whole on 1 thread
// and split into parts (OneDnnConvSplit) on 2: the same bytes either way, as
// every loop of the pool gives (tests/ops/threads_test.cc).
TEST(Conv, OneAndTwoThreadsGiveTheSameBytes) {
  struct C {
    const char* what;
    Shape x, w;
    int64_t group;
  };
  const C cases[] = {
      {"3x3 16 to 16", {1, 16, 32, 32}, {16, 16, 3, 3}, 1},
      {"1x1 64 to 64", {1, 64, 24, 24}, {64, 64, 1, 1}, 1},
      {"depthwise 3x3 128", {1, 128, 32, 32}, {128, 1, 3, 3}, 128},
      {"1-D 5 taps 64 to 64", {1, 64, 1, 400}, {64, 64, 1, 5}, 1},
      {"batch 2, groups 4, 3x3", {2, 32, 20, 20}, {32, 8, 3, 3}, 4},
  };
  for (DType dt : {DType::kFloat, DType::kBFloat16})
  for (const C& c : cases) {
    OpTester t;
    t.op = "Conv";
    t.opset = 11;
    t.inputs = {RandomUniform(dt, c.x, 41), RandomUniform(dt, c.w, 42), RandomUniform(dt, {c.w[0]}, 43)};
    t.constant = {false, true, true};
    const int64_t group = c.group;
    t.attrs = [group](onnx::NodeProto& n) {
      SetAttr(n, "pads", std::vector<int64_t>{0, 1, 0, 1});
      SetAttr(n, "group", group);
    };
    t.threads = 1;
    absl::StatusOr<Tensor> one = t.RunOne();
    ASSERT_TRUE(one.ok()) << c.what << ": " << one.status();
    t.threads = 2;
    absl::StatusOr<Tensor> two = t.RunOne();
    ASSERT_TRUE(two.ok()) << c.what << ": " << two.status();
    int64_t differ = 0;
    double worst = 0;
    for (int64_t i = 0; i < one->size(); ++i) {
      const double a = GetDouble(*one, i), b = GetDouble(*two, i);
      if (a != b) ++differ, worst = std::max(worst, std::abs(a - b));
    }
    EXPECT_EQ(differ, 0) << LowerName(dt) << " " << c.what << ": " << differ << " of " << one->size() << " differ, by up to " << worst;
  }
}

// The split's decision (ConvParts): a conv worth two parts but under 2 M
// multiply-adds splits only while a worker is awake; one of 2 M or more
// splits with the workers asleep too (the caller starts while one wakes),
// unless the pool keeps its loops on the caller. A chain of such
// convs gives the same bytes on 1 and 2 threads, split or whole, run after run.
TEST(Conv, SplitsSmallConvsOnlyForAnAwakeWorkerAndGivesTheSameBytes) {
  // oneDNN's convs (below AVX2 ours leave them to it: kernels/conv/direct.h
  // would take these on an AVX2 host, on the pool's ParallelFor).
  ScopedCpuFeaturesForTesting baseline(CpuTarget::kBaseline);
  // side 24: 16 x 16 x 9 x 576 = 1.3 M multiply-adds a conv; side 32: 2.4 M.
  auto make = [](int threads, int64_t side) {
    ModelBuilder m(11);
    m.Input("x", DType::kFloat, {1, 16, side, side}).Output("y", DType::kFloat, {}, false);
    std::string in = "x";
    for (int i = 0; i < 4; ++i) {
      const std::string w = "w" + std::to_string(i), out = i == 3 ? "y" : "c" + std::to_string(i);
      m.Initializer(w, RandomUniform(DType::kFloat, {16, 16, 3, 3}, uint32_t(50 + i)));
      SetAttr(m.Node("Conv", {in, w}, {out}), "pads", std::vector<int64_t>{1, 1, 1, 1});
      in = out;
    }
    SessionOptions options;
    options.threads = threads;
    auto session = m.Build(options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  };
  for (const int64_t side : {24, 32}) {
    SCOPED_TRACE("side " + std::to_string(side));
    std::unique_ptr<Session> one = make(1, side), two = make(2, side);
    ASSERT_TRUE(one && two);
    const Tensor x = RandomUniform(DType::kFloat, {1, 16, side, side}, 49);
    auto want = one->Run({{"x", x}});
    ASSERT_TRUE(want.ok()) << want.status();
    auto same = [&](int run) {
      auto got = two->Run({{"x", x}});
      ASSERT_TRUE(got.ok()) << got.status();
      int64_t differ = 0;
      for (int64_t i = 0; i < (*want)[0].size(); ++i) differ += GetDouble((*want)[0], i) != GetDouble((*got)[0], i);
      EXPECT_EQ(differ, 0) << "run " << run;
    };
    // The workers asleep before each run: big convs split, every one of the
    // four, or (a wake slower than their parts, so the pool keeps its loops
    // on the caller) every fourth; small ones run whole. (On a loaded machine
    // a worker may start its spin late, inside a run, and a small conv then
    // splits: some run without a split is asked of them.)
    int whole_runs = 0;
    for (int run = 0; run < 10; ++run) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const int64_t loops_before = ParallelCountsSoFar().pool_loops;
      same(run);
      const int64_t loops = ParallelCountsSoFar().pool_loops - loops_before;
      EXPECT_LE(loops, 4) << "run " << run;  // at most one loop a conv
      if (side == 32) {
        EXPECT_GE(loops, 1) << "run " << run;
      }
      whole_runs += loops == 0;
    }
    if (side == 24) {
      EXPECT_GT(whole_runs, 0);
    }
    // A loop of the pool before each run: its worker spins after it, and the
    // small convs may split (retried: on a loaded machine the worker may not
    // run in time, and the pool may be keeping loops on the caller a while).
    int64_t split = 0;
    for (int run = 0; run < 300 && split == 0; ++run) {
      std::atomic<int64_t> total{0};
      ParallelFor(2, int64_t(4 * kMinThreadWork), WorkPerIndex{1}, [&](int64_t b, int64_t e) { total += e - b; });
      ASSERT_EQ(total.load(), int64_t(4 * kMinThreadWork));
      const int64_t loops_before = ParallelCountsSoFar().pool_loops;
      same(run);
      split = ParallelCountsSoFar().pool_loops - loops_before;
      EXPECT_LE(split, 4);  // at most one loop a conv
    }
    EXPECT_GT(split, 0);
  }
}

}  // namespace
}  // namespace onnx_mini
