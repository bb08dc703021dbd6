// ops/nn/deform_conv.cc: DeformConv against its definition written here in
// double (multilinear sampling, zero outside), for float (the column buffer
// and oneDNN's product), double, float16 and bfloat16 (the reference
// kernel); float against double on the same inputs; zero offsets against
// Conv; hand values; named errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct DeformCase {
  Shape x, w;
  int64_t group = 1, offset_group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // empty: the defaults
  bool bias = false, mask = false;
};

std::vector<int64_t> Or(const std::vector<int64_t>& v, size_t n, int64_t fallback) {
  return v.empty() ? std::vector<int64_t>(n, fallback) : v;
}

Shape OutputDims(const DeformCase& c) {
  const size_t r = c.x.size() - 2;
  const auto s = Or(c.strides, r, 1), d = Or(c.dilations, r, 1), p = Or(c.pads, 2 * r, 0);
  Shape out;
  for (size_t i = 0; i < r; ++i) out.push_back((c.x[2 + i] + p[i] + p[r + i] - (c.w[2 + i] - 1) * d[i] - 1) / s[i] + 1);
  return out;
}

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

// The multi-index of flat position `at` in `shape`.
std::vector<int64_t> Unflatten(int64_t at, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = at % shape[d];
    at /= shape[d];
  }
  return idx;
}

// X[n, c] at the real position `pos`: the sum over the 2^rank corners around
// it of the product of their linear weights and the element (0 outside).
double Interpolate(const Tensor& x, int64_t n, int64_t c, const std::vector<double>& pos) {
  const size_t r = pos.size();
  double sum = 0;
  for (int corner = 0; corner < (1 << r); ++corner) {
    double weight = 1;
    int64_t at = n * x.shape()[1] + c;
    bool inside = true;
    for (size_t d = 0; d < r; ++d) {
      const double lo = std::floor(pos[d]);
      const bool up = (corner >> d) & 1;
      const int64_t i = int64_t(lo) + up;
      weight *= up ? pos[d] - lo : 1 - (pos[d] - lo);
      inside = inside && i >= 0 && i < x.shape()[2 + d];
      at = at * x.shape()[2 + d] + i;
    }
    if (inside && weight != 0) sum += weight * GetDouble(x, at);
  }
  return sum;
}

// Y by the definition, in double.
std::vector<double> NaiveDeformConv(const DeformCase& c, const Tensor& x, const Tensor& w, const Tensor& offset,
                                    const Tensor* b, const Tensor* mask) {
  const size_t r = c.x.size() - 2;
  const auto s = Or(c.strides, r, 1), d = Or(c.dilations, r, 1), p = Or(c.pads, 2 * r, 0);
  const Shape out = OutputDims(c), kernel(c.w.begin() + 2, c.w.end());
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], Cg = c.w[1], Mg = M / c.group;
  const int64_t K = Product(kernel), O = Product(out), Cog = C / c.offset_group;
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < M; ++oc)
      for (int64_t o = 0; o < O; ++o) {
        const auto oi = Unflatten(o, out);
        double acc = b ? GetDouble(*b, oc) : 0;
        for (int64_t cc = 0; cc < Cg; ++cc) {
          const int64_t ic = oc / Mg * Cg + cc, og = ic / Cog;
          for (int64_t k = 0; k < K; ++k) {
            const auto ki = Unflatten(k, kernel);
            std::vector<double> pos(r);
            for (size_t j = 0; j < r; ++j) {
              const int64_t ch = (og * K + k) * int64_t(r) + int64_t(j);
              pos[j] = double(oi[j] * s[j] - p[j] + ki[j] * d[j]) + GetDouble(offset, (n * offset.shape()[1] + ch) * O + o);
            }
            double v = Interpolate(x, n, ic, pos);
            if (mask) v *= GetDouble(*mask, (n * c.offset_group * K + og * K + k) * O + o);
            acc += GetDouble(w, (oc * Cg + cc) * K + k) * v;
          }
        }
        y.push_back(acc);
      }
  return y;
}

Attrs DeformAttrs(const DeformCase& c) {
  return [c](onnx::NodeProto& n) {
    if (c.group != 1) SetAttr(n, "group", c.group);
    if (c.offset_group != 1) SetAttr(n, "offset_group", c.offset_group);
    if (!c.strides.empty()) SetAttr(n, "strides", c.strides);
    if (!c.dilations.empty()) SetAttr(n, "dilations", c.dilations);
    if (!c.pads.empty()) SetAttr(n, "pads", c.pads);
  };
}

// `t`'s values as `dtype` (exact: the values come from float16).
Tensor As(const Tensor& t, DType dtype) {
  if (!t.defined()) return Tensor();
  Tensor r = Tensor::Zeros(dtype, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(r, i, GetDouble(t, i));
  return r;
}

// The case's inputs in float16 (X, W, offset, B or undefined, mask or undefined).
std::vector<Tensor> Inputs(const DeformCase& c, uint32_t seed) {
  const size_t r = c.x.size() - 2;
  const Shape out = OutputDims(c);
  const int64_t K = Product(Shape(c.w.begin() + 2, c.w.end()));
  Shape os = {c.x[0], c.offset_group * K * int64_t(r)}, ms = {c.x[0], c.offset_group * K};
  os.insert(os.end(), out.begin(), out.end());
  ms.insert(ms.end(), out.begin(), out.end());
  // Offsets reach past the input's edges, so taps fall partly and wholly outside.
  return {RandomUniform(DType::kFloat16, c.x, seed, -2, 2), RandomUniform(DType::kFloat16, c.w, seed + 1, -1, 1),
          RandomUniform(DType::kFloat16, os, seed + 2, -2.5, 2.5),
          c.bias ? RandomUniform(DType::kFloat16, {c.w[0]}, seed + 3, -1, 1) : Tensor(),
          c.mask ? RandomUniform(DType::kFloat16, ms, seed + 4, 0, 1) : Tensor()};
}

const DeformCase kCases[] = {
    {{1, 1, 3, 3}, {1, 1, 2, 2}},
    {{2, 3, 5, 7}, {4, 3, 3, 3}, 1, 1, {}, {}, {1, 1, 1, 1}, true, false},
    {{1, 4, 6, 5}, {6, 2, 3, 2}, 2, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}, true, true},
    {{2, 6, 7, 4}, {3, 6, 2, 3}, 1, 3, {1, 2}, {2, 1}, {0, 1, 1, 0}, false, true},
    {{1, 6, 4, 4}, {6, 1, 3, 3}, 6, 3, {}, {}, {1, 1, 1, 1}, true, true},  // depthwise
    {{1, 6, 9, 8}, {8, 3, 3, 3}, 2, 6, {2, 2}, {}, {1, 1, 1, 1}, true, true},
    {{2, 3, 11}, {2, 3, 3}, 1, 3, {2}, {2}, {2, 1}, true, true},                    // 1-D
    {{1, 2, 3, 4, 5}, {2, 2, 2, 2, 3}, 1, 2, {}, {1, 1, 2}, {0, 1, 1, 1, 0, 1}, true, true},  // 3-D
    {{1, 2, 1, 1}, {3, 2, 1, 1}, 1, 1, {}, {}, {}, true, true},                    // one pixel
};

TEST(DeformConv, MatchesTheDefinitionForEachTypeAcross1d2d3dGroupsAndOffsetGroups) {
  uint32_t seed = 1;
  for (const DeformCase& c : kCases) {
    SCOPED_TRACE(testing::PrintToString(c.x) + " " + testing::PrintToString(c.w));
    const std::vector<Tensor> in = Inputs(c, seed += 10);
    const std::vector<double> want = NaiveDeformConv(c, in[0], in[1], in[2], in[3].defined() ? &in[3] : nullptr,
                                                     in[4].defined() ? &in[4] : nullptr);
    std::vector<double> by_type[4];
    int t = 0;
    for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16}) {
      std::vector<Tensor> typed;
      for (const Tensor& v : in) typed.push_back(As(v, dt));
      // bfloat16 rounds the float16 inputs: its definition is on its own values.
      const std::vector<double> want_t =
          dt != DType::kBFloat16 ? want
                                 : NaiveDeformConv(c, typed[0], typed[1], typed[2], in[3].defined() ? &typed[3] : nullptr,
                                                   in[4].defined() ? &typed[4] : nullptr);
      const int64_t opset = dt == DType::kFloat16 ? 19 : 22;
      auto y = RunOne(opset, "DeformConv", typed, DeformAttrs(c));
      ASSERT_TRUE(y.ok()) << LowerName(dt) << ": " << y.status();
      Shape ys = {c.x[0], c.w[0]};
      for (int64_t v : OutputDims(c)) ys.push_back(v);
      EXPECT_EQ(y->shape(), ys);
      by_type[t] = Values(*y);
      ASSERT_EQ(by_type[t].size(), want_t.size());
      const double tol = dt == DType::kDouble ? 1e-9 : dt == DType::kFloat ? 1e-4 : dt == DType::kFloat16 ? 3e-2 : 6e-2;
      for (size_t i = 0; i < want_t.size(); ++i)
        ASSERT_NEAR(by_type[t][i], want_t[i], tol * (1 + std::fabs(want_t[i]))) << LowerName(dt) << " at " << i;
      ++t;
    }
    // The fast path (float: columns and oneDNN) against the reference kernel (double).
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(by_type[0][i], by_type[1][i], 1e-4 * (1 + std::fabs(want[i])));
  }
}

TEST(DeformConv, ZeroOffsetsAndNoMaskAreConv) {
  const DeformCase c = {{2, 4, 6, 5}, {6, 2, 3, 2}, 2, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}, true, false};
  std::vector<Tensor> in = Inputs(c, 7);
  for (DType dt : {DType::kFloat, DType::kDouble}) {
    std::vector<Tensor> typed;
    for (const Tensor& v : in) typed.push_back(As(v, dt));
    typed[2] = Tensor::Zeros(dt, in[2].shape());
    auto y = RunOne(19, "DeformConv", typed, DeformAttrs(c));
    auto conv = RunOne(11, "Conv", {typed[0], typed[1], typed[3]}, DeformAttrs(c));
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_TRUE(conv.ok()) << conv.status();
    const std::vector<double> a = Values(*y), b = Values(*conv);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i])));
  }
}

TEST(DeformConv, HandValues) {
  // ONNX's example: X = 0..8 (3x3), a 2x2 kernel of ones, no pads; tap (0,0)
  // at output (0,0) moves down by 0.5 and tap (1,0) at output (0,1) left by 0.1.
  for (DType dt : {DType::kFloat, DType::kDouble}) {
    Tensor x = Tensor::Zeros(dt, {1, 1, 3, 3}), w = Tensor::Zeros(dt, {1, 1, 2, 2});
    Tensor offset = Tensor::Zeros(dt, {1, 8, 2, 2});
    for (int i = 0; i < 9; ++i) SetDouble(x, i, i);
    for (int i = 0; i < 4; ++i) SetDouble(w, i, 1);
    SetDouble(offset, 0, 0.5);                    // channel 0 (tap (0,0), h), output (0,0)
    SetDouble(offset, 5 * 4 + 1, -0.1);           // channel 5 (tap (1,0), w), output (0,1)
    auto y = RunOne(19, "DeformConv", {x, w, offset});
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<double> v = Values(*y);
    const double want[] = {9.5, 11.9, 20, 24};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(v[size_t(i)], want[i], 1e-5);
    // A mask of one half on every tap, and a bias of 1: half of each, plus 1.
    Tensor mask = Tensor::Zeros(dt, {1, 4, 2, 2}), b = Tensor::Zeros(dt, {1});
    for (int i = 0; i < 16; ++i) SetDouble(mask, i, 0.5);
    SetDouble(b, 0, 1);
    y = RunOne(19, "DeformConv", {x, w, offset, b, mask});
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<double> h = Values(*y);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(h[size_t(i)], want[i] / 2 + 1, 1e-5);
    // Offsets that move every tap wholly outside the input leave the bias.
    Tensor far = Tensor::Zeros(dt, {1, 8, 2, 2});
    for (int i = 0; i < 32; ++i) SetDouble(far, i, i % 2 ? 1e30 : -7);
    y = RunOne(19, "DeformConv", {x, w, far, b});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(Values(*y), ElementsAre(1, 1, 1, 1));
  }
}

TEST(DeformConv, NoInputChannelsLeaveTheBiasAndAnEmptyBatchIsEmpty) {
  for (DType dt : {DType::kFloat, DType::kDouble}) {
    Tensor b = Tensor::Zeros(dt, {2});
    SetDouble(b, 0, 1.5);
    SetDouble(b, 1, -2);
    auto y = RunOne(19, "DeformConv",
                    {Tensor::Zeros(dt, {1, 0, 2, 2}), Tensor::Zeros(dt, {2, 0, 1, 1}), Tensor::Zeros(dt, {1, 2, 2, 2}), b});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(Values(*y), ElementsAre(1.5, 1.5, 1.5, 1.5, -2, -2, -2, -2));
    y = RunOne(19, "DeformConv",
               {Tensor::Zeros(dt, {0, 1, 3, 3}), Tensor::Zeros(dt, {1, 1, 2, 2}), Tensor::Zeros(dt, {0, 8, 2, 2})});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), Shape({0, 1, 2, 2}));
  }
}

TEST(DeformConv, BadShapesAndAttributesAreNamed) {
  Tensor x = F(std::vector<float>(32, 1), {1, 2, 4, 4});
  Tensor w = F(std::vector<float>(18, 1), {1, 2, 3, 3});
  Tensor offset = F(std::vector<float>(72, 0), {1, 18, 2, 2});
  auto err = [&](const std::vector<Tensor>& in, Attrs attrs = {}) {
    return Message(RunOne(19, "DeformConv", in, attrs).status());
  };
  EXPECT_THAT(err({x, F(std::vector<float>(9, 1), {1, 1, 3, 3}), offset}), HasSubstr("X's channels must be W's second dim"));
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "group", int64_t(2)); }),
              HasSubstr("X's channels must be W's second dim times group"));
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "group", int64_t(0)); }),
              HasSubstr("group 0 must be positive"));
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "offset_group", int64_t(-1)); }),
              HasSubstr("offset_group -1 must be positive"));
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "offset_group", int64_t(3)); }),
              HasSubstr("X's channels must be a multiple of offset_group"));
  // offset_group 2 wants 36 offset channels.
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "offset_group", int64_t(2)); }),
              HasSubstr("offset [1,18,2,2] must be [1,36,2,2]"));
  EXPECT_THAT(err({x, w, F(std::vector<float>(18 * 9, 0), {1, 18, 3, 3})}), HasSubstr("offset [1,18,3,3] must be [1,18,2,2]"));
  EXPECT_THAT(err({x, w, F(std::vector<float>(36, 0), {1, 9, 2, 2})}), HasSubstr("offset [1,9,2,2] must be [1,18,2,2]"));
  EXPECT_THAT(err({x, w, offset, Tensor(), F(std::vector<float>(72, 1), {1, 18, 2, 2})}),
              HasSubstr("mask [1,18,2,2] must be [1,9,2,2]"));
  EXPECT_THAT(err({x, w, offset, F({1, 2}, {2})}), HasSubstr("B [2] must be (1)"));
  EXPECT_THAT(err({x, F(std::vector<float>(50, 1), {1, 2, 5, 5}), offset}), HasSubstr("larger than the padded input"));
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); }),
              HasSubstr("kernel_shape [2,2] differs from the weights' [3,3]"));
  EXPECT_THAT(err({x, w, offset}, [](onnx::NodeProto& n) { SetAttr(n, "pads", std::vector<int64_t>{1, 1}); }),
              HasSubstr("pads has 2 values; 2 spatial dims need 4"));
  const int64_t big = int64_t(1) << 30;
  EXPECT_THAT(err({F({}, {1, 0, big, big, big}), F({}, {1, 0, big, big, big}), F({}, {1, 0, 1, 1, 1})}),
              HasSubstr("offset_group times the kernel's size is too large"));
  EXPECT_THAT(err({F({1, 2}, {1, 2}), F({1, 2}, {1, 2}), F({1, 2}, {1, 2})}), HasSubstr("must have one rank of at least 3"));
}

}  // namespace
}  // namespace onnx_mini
