// runtime/rewrite/conv.cc: BatchNormalization folded into Conv, activations
// and a residual Add fused as FusedConv's post-ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/op.h"
#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;

double Tol(DType dt) { return dt == DType::kFloat16 ? 2e-2 : dt == DType::kDouble ? 1e-9 : 1e-4; }

// Conv(x, w, b?) -> "c" over x (2, c, 7, 6), kernel 3x3, pads 1, M output channels.
void AddConv(ModelBuilder& m, DType dt, int64_t c, int64_t mo, int64_t group, bool bias, const std::string& out,
             uint32_t seed) {
  const std::string w = out + "_w", b = out + "_b";
  m.Initializer(w, RandomUniform(dt, {mo, c / group, 3, 3}, seed, -0.5, 0.5));
  std::vector<std::string> in = {"x", w};
  if (bias) {
    m.Initializer(b, RandomUniform(dt, {mo}, seed + 1, -1, 1));
    in.push_back(b);
  }
  auto& n = m.Node("Conv", in, {out});
  SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1});
  if (group > 1) SetAttr(n, "group", group);
}

void AddBatchNorm(ModelBuilder& m, DType dt, int64_t mo, const std::string& in, const std::string& out,
                  uint32_t seed) {
  m.Initializer(out + "_s", RandomUniform(dt, {mo}, seed, 0.5, 2));
  m.Initializer(out + "_b", RandomUniform(dt, {mo}, seed + 1, -1, 1));
  m.Initializer(out + "_m", RandomUniform(dt, {mo}, seed + 2, -1, 1));
  m.Initializer(out + "_v", RandomUniform(dt, {mo}, seed + 3, 0.1, 3));
  auto& n = m.Node("BatchNormalization", {in, out + "_s", out + "_b", out + "_m", out + "_v"}, {out});
  SetAttr(n, "epsilon", 1e-3f);
}

TEST(Rewrite, ConvBatchNormActivationBecomesFusedConv) {
  const std::vector<std::string> acts = {"Relu",    "LeakyRelu", "Clip", "Clip6", "HardSigmoid",
                                         "HardSwish", "Sigmoid", "SiLU", "Tanh", "Max", "Min"};
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16})
    for (const std::string& act : acts) {
      ModelBuilder m(17);
      m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 6, 1, true, "c", 1);
      AddBatchNorm(m, dt, 6, "c", "n", 3);
      if (act == "SiLU") {
        m.Node("Sigmoid", {"n"}, {"s"});
        m.Node("Mul", {"n", "s"}, {"y"});
      } else if (act == "Clip" || act == "Clip6") {
        m.Initializer("lo", Tensor::Zeros(dt, {}));
        Tensor hi = Tensor::Zeros(dt, {});
        SetDouble(hi, 0, act == "Clip" ? 0.75 : 6);
        m.Initializer("hi", hi);
        m.Node("Clip", {"n", "lo", "hi"}, {"y"});
      } else if (act == "Max" || act == "Min") {
        // A one-element constant of the conv's rank: a clip with one bound.
        Tensor c = Tensor::Zeros(dt, {1, 1, 1, 1});
        SetDouble(c, 0, act == "Max" ? -0.375 : 0.3125);  // exact in every float type
        m.Initializer("c1", c);
        if (act == "Max") m.Node("Max", {"n", "c1"}, {"y"});
        else m.Node("Min", {"c1", "n"}, {"y"});
      } else {
        auto& n = m.Node(act, {"n"}, {"y"});
        if (act == "LeakyRelu") SetAttr(n, "alpha", 0.3f);
        if (act == "HardSigmoid") SetAttr(n, "alpha", 0.25f);
      }
      const Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
      EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("FusedConv")) << LowerName(dt) << " " << act;
    }
}

TEST(Rewrite, BatchNormFoldsIntoGroupedAndUnbiasedConv) {
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kBFloat16})
    for (bool bias : {false, true})
      for (int64_t group : {1, 2, 4}) {  // 4: depthwise
        ModelBuilder m(15);
        m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false);
        AddConv(m, dt, 4, 4, group, bias, "c", 5);
        AddBatchNorm(m, dt, 4, "c", "y", 7);
        const Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 11, -2, 2);
        EXPECT_THAT(RunBothWays(m, {{"x", x}}, dt == DType::kBFloat16 ? 5e-2 : Tol(dt)), ElementsAre("Conv"))
            << LowerName(dt) << " bias " << bias << " group " << group;
      }
}

// ConvTranspose's W is (C, M / group, k...): BN's channel, and a per-channel
// scale's or shift's, is W's second axis within each group's block of input
// channels. Stride 2 with a 2x2 kernel (the pixel path at group 1) and a 3x3
// of stride 1 with pads and an output padding (oneDNN's, or the reference);
// PaddleOCR's spelling: no bias, an Add of (1, M, 1, 1), then BN.
TEST(Rewrite, ScaleShiftAndBatchNormFoldIntoConvTranspose) {
  for (DType dt : {DType::kFloat, DType::kDouble})
    for (bool bias : {false, true})
      for (int64_t group : {1, 2})
        for (int64_t k : {2, 3})
          for (int spelling = 0; spelling < 3; ++spelling) {  // BN; Add, BN; Mul, Add, BN
            SCOPED_TRACE(LowerName(dt) + " bias " + std::to_string(bias) + " group " + std::to_string(group) +
                         " kernel " + std::to_string(k) + " spelling " + std::to_string(spelling));
            ModelBuilder m(15);
            m.Input("x", dt, {2, 4, 5, 3}).Output("y", dt, {}, false);
            m.Initializer("w", RandomUniform(dt, {4, 6 / group, k, k}, 5, -0.5, 0.5));
            std::vector<std::string> in = {"x", "w"};
            if (bias) {
              m.Initializer("b", RandomUniform(dt, {6}, 6, -1, 1));
              in.push_back("b");
            }
            auto& n = m.Node("ConvTranspose", in, {"c"});
            if (k == 2) {
              SetAttr(n, "strides", std::vector<int64_t>{2, 2});
            } else {
              SetAttr(n, "strides", std::vector<int64_t>{2, 1});
              SetAttr(n, "pads", std::vector<int64_t>{1, 0, 0, 1});
              SetAttr(n, "output_padding", std::vector<int64_t>{1, 0});
            }
            if (group > 1) SetAttr(n, "group", group);
            std::string last = "c";
            if (spelling == 2) {
              m.Initializer("scale", RandomUniform(dt, {6, 1, 1}, 8, 0.5, 2));
              m.Node("Mul", {"scale", last}, {"scaled"});
              last = "scaled";
            }
            if (spelling >= 1) {
              m.Initializer("shift", RandomUniform(dt, {1, 6, 1, 1}, 9, -1, 1));
              m.Node("Add", {last, "shift"}, {"shifted"});
              last = "shifted";
            }
            AddBatchNorm(m, dt, 6, last, "y", 7);
            const Tensor x = RandomUniform(dt, {2, 4, 5, 3}, 11, -2, 2);
            EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("ConvTranspose"));
          }
}

// y + y * s (PP-OCRv4's residual squeeze-excite) -> y * (s + 1), in every
// order of both ops; s per channel, or of y's own shape (still right). Not
// where the product is read elsewhere too, nor before opset 7 (broadcasting
// by attributes), nor in 16-bit floats (s + 1 would round s's low bits away).
TEST(Rewrite, ScaleResidualBecomesOneProduct) {
  for (DType dt : {DType::kFloat, DType::kDouble})
    for (int order = 0; order < 4; ++order)
      for (bool per_channel : {true, false}) {
        SCOPED_TRACE(LowerName(dt) + " order " + std::to_string(order) + " per channel " +
                     std::to_string(per_channel));
        const Shape sy = {2, 6, 5, 4}, ss = per_channel ? Shape{2, 6, 1, 1} : sy;
        ModelBuilder m(13);
        m.Input("y", dt, sy).Input("s", dt, ss).Output("z", dt, {}, false);
        if (order % 2 == 0) m.Node("Mul", {"y", "s"}, {"p"});
        else m.Node("Mul", {"s", "y"}, {"p"});
        if (order / 2 == 0) m.Node("Add", {"y", "p"}, {"z"});
        else m.Node("Add", {"p", "y"}, {"z"});
        const Tensor y = RandomUniform(dt, sy, 3, -2, 2), s = RandomUniform(dt, ss, 4, 0, 1);
        EXPECT_THAT(RunBothWays(m, {{"y", y}, {"s", s}}, Tol(dt)), ElementsAre("Add", "Mul"));
      }
  for (int other = 0; other < 4; ++other) {
    // 0: the product an output too; 1: read by another node; 2: opset 6
    // (same shapes); 3: float16.
    SCOPED_TRACE("other " + std::to_string(other));
    const DType dt = other == 3 ? DType::kFloat16 : DType::kFloat;
    const Shape sy = {2, 6, 5, 4}, ss = other == 2 ? sy : Shape{2, 6, 1, 1};
    ModelBuilder m(other == 2 ? 6 : 13);
    m.Input("y", dt, sy).Input("s", dt, ss).Output("z", dt, {}, false);
    if (other <= 1) m.Output(other == 0 ? "p" : "t", dt, {}, false);
    m.Node("Mul", {"y", "s"}, {"p"});
    m.Node("Add", {"y", "p"}, {"z"});
    if (other == 1) m.Node("Neg", {"p"}, {"t"});
    const Tensor y = RandomUniform(dt, sy, 3, -2, 2), s = RandomUniform(dt, ss, 4, 0, 1);
    if (other == 1)
      EXPECT_THAT(RunBothWays(m, {{"y", y}, {"s", s}}, Tol(dt)), ElementsAre("Mul", "Add", "Neg"));
    else
      EXPECT_THAT(RunBothWays(m, {{"y", y}, {"s", s}}, Tol(dt)), ElementsAre("Mul", "Add"));
  }
}

TEST(Rewrite, ResidualAddOnEitherSideBecomesFusedConv) {
  for (DType dt : {DType::kFloat, DType::kDouble})
    for (bool conv_first : {false, true}) {
      // y = Relu(BN(Conv(x)) + z); u = Conv(x) + Relu(...) of another conv: both sides conv outputs.
      ModelBuilder m(17);
      m.Input("x", dt, {2, 4, 7, 6}).Input("z", dt, {2, 6, 7, 6}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 6, 2, false, "c", 1);
      AddBatchNorm(m, dt, 6, "c", "n", 3);
      if (conv_first) m.Node("Add", {"n", "z"}, {"a"});
      else m.Node("Add", {"z", "n"}, {"a"});
      m.Node("Relu", {"a"}, {"r"});
      AddConv(m, dt, 4, 6, 1, true, "d", 13);
      m.Node("HardSwish", {"d"}, {"h"});
      if (conv_first) m.Node("Add", {"h", "r"}, {"y"});
      else m.Node("Add", {"r", "h"}, {"y"});
      const Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
      const Tensor z = RandomUniform(dt, {2, 6, 7, 6}, 10, -2, 2);
      // The first FusedConv: BN, Add(z), Relu; the second: HardSwish, Add(the first's output).
      EXPECT_THAT(RunBothWays(m, {{"x", x}, {"z", z}}, Tol(dt)), ElementsAre("FusedConv", "FusedConv"))
          << LowerName(dt) << " conv first " << conv_first;
    }
}

TEST(Rewrite, ConvNotFusedWhereAnIntermediateIsSeen) {
  const DType dt = DType::kFloat;
  const Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
  {
    // The conv's output is a graph output: nothing fused.
    ModelBuilder m(17);
    m.Input("x", dt, {2, 4, 7, 6}).Output("c", dt, {}, false).Output("y", dt, {}, false);
    AddConv(m, dt, 4, 6, 1, true, "c", 1);
    AddBatchNorm(m, dt, 6, "c", "y", 3);
    EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("Conv", "BatchNormalization"));
  }
  {
    // The conv's output read twice: nothing fused.
    ModelBuilder m(17);
    m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false).Output("t", dt, {}, false);
    AddConv(m, dt, 4, 6, 1, true, "c", 1);
    m.Node("Relu", {"c"}, {"y"});
    m.Node("Tanh", {"c"}, {"t"});
    EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("Conv", "Relu", "Tanh"));
  }
  {
    // The BN's output is a graph output: folded into the conv, the Relu not fused.
    ModelBuilder m(17);
    m.Input("x", dt, {2, 4, 7, 6}).Output("n", dt, {}, false).Output("y", dt, {}, false);
    AddConv(m, dt, 4, 6, 1, true, "c", 1);
    AddBatchNorm(m, dt, 6, "c", "n", 3);
    m.Node("Relu", {"n"}, {"y"});
    EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("Conv", "Relu"));
  }
  {
    // A broadcast residual ((1, 6, 1, 1)), a Clip with min > max, a BN of a scale known only at run time: left as written.
    ModelBuilder m(17);
    m.Input("x", dt, {2, 4, 7, 6}).Input("z", dt, {1, 6, 1, 1}).Input("s", dt, {6}).Output("y", dt, {}, false);
    m.Output("v", dt, {}, false).Output("q", dt, {}, false);
    AddConv(m, dt, 4, 6, 1, true, "c", 1);
    m.Node("Add", {"c", "z"}, {"y"});
    AddConv(m, dt, 4, 6, 1, true, "d", 3);
    m.Initializer("lo", Tensor::FromVector(std::vector<float>{1}, {}));
    m.Initializer("hi", Tensor::FromVector(std::vector<float>{0}, {}));
    m.Node("Clip", {"d", "lo", "hi"}, {"v"});
    // A BN whose scale is not a constant.
    AddConv(m, dt, 4, 6, 1, true, "e", 5);
    m.Initializer("q_b", RandomUniform(dt, {6}, 1, -1, 1));
    m.Initializer("q_m", RandomUniform(dt, {6}, 2, -1, 1));
    m.Initializer("q_v", RandomUniform(dt, {6}, 3, 0.1, 3));
    m.Node("BatchNormalization", {"e", "s", "q_b", "q_m", "q_v"}, {"q"});
    const Tensor z = RandomUniform(dt, {1, 6, 1, 1}, 10, -2, 2);
    const Tensor s = RandomUniform(dt, {6}, 12, 0.5, 2);
    const std::vector<std::string> ops = RunBothWays(m, {{"x", x}, {"z", z}, {"s", s}}, Tol(dt));
    EXPECT_THAT(ops, ElementsAre("Conv", "Add", "Conv", "Clip", "Conv", "BatchNormalization"));
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

TEST(Rewrite, ConvScaleAndShiftFoldAndHardSwishFuses) {
  for (DType dt : {DType::kFloat, DType::kDouble})
    for (int form = 0; form < 4; ++form) {
      // y = HardSwish(Conv(x) * s + c) spelled x * Clip(x + 3, 0, 6) / 6, s and c of
      // one value, (M, 1, 1) or (1, M, 1, 1) constants.
      ModelBuilder m(13);
      m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 6, 2, form % 2 == 0, "c", 1);
      const Shape ks = form == 0 ? Shape{1} : form == 1 ? Shape{6, 1, 1} : form == 2 ? Shape{1, 6, 1, 1} : Shape{};
      m.Initializer("s", RandomUniform(dt, ks, 3, 0.5, 2));
      m.Initializer("k", RandomUniform(dt, ks, 4, -1, 1));
      if (form == 1) m.Node("Mul", {"s", "c"}, {"p"});
      else m.Node("Mul", {"c", "s"}, {"p"});
      if (form == 3) m.Node("Add", {"k", "p"}, {"a"});
      else m.Node("Add", {"p", "k"}, {"a"});
      Tensor three = Tensor::Zeros(dt, {}), zero = Tensor::Zeros(dt, {}), six = Tensor::Zeros(dt, {});
      SetDouble(three, 0, 3);
      SetDouble(six, 0, 6);
      m.Initializer("three", three).Initializer("zero", zero).Initializer("six", six);
      if (form == 2) m.Node("Add", {"three", "a"}, {"a3"});
      else m.Node("Add", {"a", "three"}, {"a3"});
      m.Node("Clip", {"a3", "zero", "six"}, {"cl"});
      if (form == 3) m.Node("Mul", {"cl", "a"}, {"h"});
      else m.Node("Mul", {"a", "cl"}, {"h"});
      if (form == 1) {
        Tensor sixth = Tensor::Zeros(dt, {});
        SetDouble(sixth, 0, 1.0 / 6);
        m.Initializer("sixth", sixth);
        m.Node("Mul", {"h", "sixth"}, {"y"});
      } else {
        m.Node("Div", {"h", "six"}, {"y"});
      }
      const Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -3, 3);
      EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("FusedConv")) << LowerName(dt) << " form " << form;
    }
  // A shift of another channel count or of the spatial dims: left as written.
  const DType dt = DType::kFloat;
  ModelBuilder m(13);
  m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false).Output("z", dt, {}, false);
  AddConv(m, dt, 4, 6, 1, true, "c", 1);
  m.Initializer("k", RandomUniform(dt, {1, 1, 1, 6}, 4, -1, 1));
  m.Node("Add", {"c", "k"}, {"y"});
  AddConv(m, dt, 4, 6, 1, true, "d", 2);  // other weights: not one conv merged (cse.cc)
  m.Initializer("k2", RandomUniform(dt, {1, 1, 6, 1, 1}, 4, -1, 1));
  m.Node("Mul", {"d", "k2"}, {"z"});
  const Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -3, 3);
  EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("Conv", "Add", "Conv", "Mul"));
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

TEST(Rewrite, ConvChainsKeepChannelsLastBetweenConvs) {
  for (DType dt : {DType::kFloat, DType::kBFloat16})
    for (bool two_readers : {false, true}) {
      // x -> Conv -> Relu -> depthwise Conv -> BN -> HardSwish -> 1x1 Conv -> y (and a
      // second 1x1 Conv reading the same value -> z): the values between convs only convs read.
      ModelBuilder m(17);
      m.Input("x", dt, {2, 4, 9, 7}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 8, 1, true, "c", 1);
      m.Node("Relu", {"c"}, {"r"});
      m.Initializer("dw_w", RandomUniform(dt, {8, 1, 3, 3}, 2, -0.5, 0.5));
      SetAttr(m.Node("Conv", {"r", "dw_w"}, {"d"}, ""), "group", int64_t(8));
      AddBatchNorm(m, dt, 8, "d", "n", 3);
      m.Node("HardSwish", {"n"}, {"h"});
      m.Initializer("pw_w", RandomUniform(dt, {6, 8, 1, 1}, 4, -0.5, 0.5));
      m.Node("Conv", {"h", "pw_w"}, {"y"});
      if (two_readers) {
        m.Output("z", dt, {}, false);
        m.Initializer("pw2_w", RandomUniform(dt, {5, 8, 1, 1}, 5, -0.5, 0.5));
        m.Node("Conv", {"h", "pw2_w"}, {"z"});
      }
      const Tensor x = RandomUniform(dt, {2, 4, 9, 7}, 9, -2, 2);
      const std::vector<std::string> ops = RunBothWays(m, {{"x", x}}, dt == DType::kBFloat16 ? 5e-2 : Tol(dt));
      EXPECT_EQ(ops, std::vector<std::string>(two_readers ? 4 : 3, "FusedConv")) << LowerName(dt);
    }
}

// FusedConv's channels_last flags, also on the reference path (float16):
// the same values as Conv between Transposes that lay X and Y out so.
TEST(Rewrite, FusedConvChannelsLastMatchesConvBetweenTransposes) {
  for (DType dt : {DType::kFloat, DType::kFloat16})
    for (int flags = 1; flags < 4; ++flags) {
      const bool src_cl = flags & 1, dst_cl = flags & 2;
      ModelBuilder m(17);
      m.Input("x", dt, {2, 3, 5, 4}).Output("y", dt, {}, false).Output("ref", dt, {}, false);
      m.Initializer("w", RandomUniform(dt, {6, 3, 3, 3}, 2, -0.5, 0.5));
      m.Initializer("b", RandomUniform(dt, {6}, 3, -0.5, 0.5));
      m.Initializer("xs", Tensor::FromVector(std::vector<int64_t>{2, 3, 5, 4}, {4}));
      m.Initializer("ys", Tensor::FromVector(std::vector<int64_t>{2, 5, 4, 6}, {4}));
      std::string xin = "x";
      if (src_cl) {  // NHWC bytes under an NCHW shape
        SetAttr(m.Node("Transpose", {"x"}, {"xt"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
        m.Node("Reshape", {"xt", "xs"}, {"xl"});
        xin = "xl";
      }
      auto& f = m.Node("FusedConv", {xin, "w", "b"}, {dst_cl ? "yl" : "y"}, kInternalDomain);
      SetAttr(f, "pads", std::vector<int64_t>{1, 1, 1, 1});
      SetAttr(f, "channels_last", std::vector<int64_t>{src_cl ? 1 : 0, dst_cl ? 1 : 0});
      if (dst_cl) {
        m.Node("Reshape", {"yl", "ys"}, {"yt"});
        SetAttr(m.Node("Transpose", {"yt"}, {"y"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
      }
      SetAttr(m.Node("Conv", {"x", "w", "b"}, {"ref"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
      m.Opset(kInternalDomain, 1);
      SessionOptions off;
      off.graph_rewrites = false;
      auto s = m.Build(off);
      ASSERT_TRUE(s.ok()) << s.status();
      auto out = (*s)->Run({{"x", RandomUniform(dt, {2, 3, 5, 4}, 7, -2, 2)}});
      ASSERT_TRUE(out.ok()) << out.status();
      const Tensor& y = (*out)[0];
      const Tensor& ref = (*out)[1];
      ASSERT_EQ(y.shape(), ref.shape());
      for (int64_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(Agree(GetDouble(y, i), GetDouble(ref, i), Tol(dt))) << LowerName(dt) << " flags " << flags << " [" << i << "]";
    }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

TEST(Rewrite, FoldedConvDropsTheConstantsOnlyThePatternRead) {
  const DType dt = DType::kFloat;
  ModelBuilder m(17);
  m.Input("x", dt, {1, 4, 5, 5}).Output("y", dt, {}, false).Output("z", dt, {}, false);
  AddConv(m, dt, 4, 6, 1, true, "c", 1);
  AddBatchNorm(m, dt, 6, "c", "y", 3);
  // A second conv sharing c's weights: they stay.
  m.Node("Conv", {"x", "c_w"}, {"z"});
  SessionOptions on;
  on.graph_rewrites = true;
  auto s = m.Build(on);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::string> names;
  for (const auto& [name, t] : (*s)->graph().initializers) names.push_back(name);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("c_w", "y/folded_W", "y/folded_B")) << ::testing::PrintToString(names);
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

TEST(Rewrite, AffineAfterAConvActivationBecomesALinearPostOp) {
  for (DType dt : {DType::kFloat, DType::kDouble})
    for (bool scalars_first : {false, true}) {
      // PP-LCNetV3's block: Conv -> HardSwish -> Mul(a) -> Add(b) -> Conv (and the
      // value between the convs then channels last).
      ModelBuilder m(17);
      m.Input("x", dt, {2, 4, 6, 5}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 6, 1, true, "c", 1);
      m.Node("HardSwish", {"c"}, {"h"});
      Tensor a = Tensor::Zeros(dt, {1}), b = Tensor::Zeros(dt, {});
      SetDouble(a, 0, 1.25);
      SetDouble(b, 0, -0.375);
      m.Initializer("a", a).Initializer("b", b);
      if (scalars_first) {
        m.Node("Mul", {"a", "h"}, {"s"});
        m.Node("Add", {"b", "s"}, {"t"});
      } else {
        m.Node("Mul", {"h", "a"}, {"s"});
        m.Node("Add", {"s", "b"}, {"t"});
      }
      m.Initializer("w2", RandomUniform(dt, {3, 6, 1, 1}, 4, -0.5, 0.5));
      m.Node("Conv", {"t", "w2"}, {"y"});
      const Tensor x = RandomUniform(dt, {2, 4, 6, 5}, 9, -3, 3);
      // The second conv is a FusedConv only to read its input channels last (float, not double).
      EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)),
                  ElementsAre("FusedConv", dt == DType::kFloat ? "FusedConv" : "Conv"))
          << LowerName(dt);
    }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

TEST(Rewrite, PaddleLcNetBlockFusesWhole) {
  const DType dt = DType::kFloat;
  // PP-LCNetV3 as PaddleOCR exports it: Conv -> * s + k (one value each) ->
  // x * Clip(x + 3, 0, 6) / 6 -> * a + b -> Conv.
  ModelBuilder m(13);
  m.Input("x", dt, {1, 4, 6, 5}).Output("y", dt, {}, false);
  AddConv(m, dt, 4, 6, 1, false, "c", 1);
  auto scalar = [&](const std::string& name, double v) {
    Tensor t = Tensor::Zeros(dt, {1});
    SetDouble(t, 0, v);
    m.Initializer(name, t);
  };
  scalar("s", 0.8);
  scalar("k", 0.3);
  scalar("three", 3);
  scalar("zero", 0);
  scalar("six", 6);
  scalar("a", 1.3);
  scalar("b", -0.2);
  m.Node("Mul", {"s", "c"}, {"p"});
  m.Node("Add", {"p", "k"}, {"q"});
  m.Node("Add", {"q", "three"}, {"q3"});
  m.Node("Clip", {"q3", "zero", "six"}, {"cl"});
  m.Node("Mul", {"q", "cl"}, {"qm"});
  m.Node("Div", {"qm", "six"}, {"h"});
  m.Node("Mul", {"a", "h"}, {"ha"});
  m.Node("Add", {"ha", "b"}, {"t"});
  m.Initializer("w2", RandomUniform(dt, {3, 6, 1, 1}, 4, -0.5, 0.5));
  m.Node("Conv", {"t", "w2"}, {"y"});
  const Tensor x = RandomUniform(dt, {1, 4, 6, 5}, 9, -3, 3);
  // The scale and shift in the weights, HardSwish then a * x + b as post-ops, the
  // value between the convs channels last.
  EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("FusedConv", "FusedConv"));
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// FusedConv's post-op chains against the unfused ops; two Linear steps (or a
// Linear and a HardSigmoid) run on the reference: oneDNN 2.6 gets them wrong.
TEST(Rewrite, FusedConvPostOpChainsMatchTheUnfusedOps) {
  const std::vector<std::vector<std::string>> chains = {{"Linear", "Relu", "Linear"}, {"Linear", "HardSwish", "Relu"},
    {"Relu", "Linear"}, {"Linear", "Tanh"}, {"HardSwish", "Linear"}, {"Linear", "Linear"}, {"HardSigmoid", "Relu"}, {"Sigmoid", "HardSigmoid"}};
  for (const auto& chain : chains) {
    const DType dt = DType::kFloat;
    ModelBuilder m(17);
    m.Input("x", dt, {1, 4, 6, 5}).Output("y", dt, {}, false).Output("ref", dt, {}, false);
    m.Initializer("w", RandomUniform(dt, {6, 4, 3, 3}, 2, -0.5, 0.5));
    auto& f = m.Node("FusedConv", {"x", "w"}, {"y"}, kInternalDomain);
    onnx::AttributeProto* a = f.add_attribute();
    a->set_name("activations"); a->set_type(onnx::AttributeProto::STRINGS);
    onnx::AttributeProto* al = f.add_attribute();
    al->set_name("alphas"); al->set_type(onnx::AttributeProto::FLOATS);
    onnx::AttributeProto* be = f.add_attribute();
    be->set_name("betas"); be->set_type(onnx::AttributeProto::FLOATS);
    std::string prev = "c";
    m.Node("Conv", {"x", "w"}, {"c"});
    int i = 0;
    for (const std::string& op : chain) {
      a->add_strings(op);
      const float alpha = op == "Linear" ? 1.3f + i : op == "HardSigmoid" ? 0.2f : 0.f;
      const float beta = op == "Linear" ? -0.2f - i : op == "HardSigmoid" ? 0.5f : 0.f;
      al->add_floats(alpha);
      be->add_floats(beta);
      const std::string out = "r" + std::to_string(i++);
      if (op == "Linear") {
        m.Initializer(out + "a", Tensor::FromVector(std::vector<float>{alpha}, {}));
        m.Initializer(out + "b", Tensor::FromVector(std::vector<float>{beta}, {}));
        m.Node("Mul", {prev, out + "a"}, {out + "m"});
        m.Node("Add", {out + "m", out + "b"}, {out});
      } else {
        m.Node(op, {prev}, {out});
      }
      prev = out;
    }
    m.Node("Identity", {prev}, {"ref"});
    m.Opset(kInternalDomain, 1);
    SessionOptions off;
    off.graph_rewrites = false;
    auto s = m.Build(off);
    ASSERT_TRUE(s.ok()) << s.status();
    auto out = (*s)->Run({{"x", RandomUniform(dt, {1, 4, 6, 5}, 7, -2, 2)}});
    ASSERT_TRUE(out.ok()) << out.status();
    int bad = 0;
    for (int64_t k = 0; k < (*out)[0].size(); ++k)
      bad += !Agree(GetDouble((*out)[0], k), GetDouble((*out)[1], k), 1e-4);
    EXPECT_EQ(bad, 0) << ::testing::PrintToString(chain);
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// A NaN in X reaches every output pixel whose window holds it: the fused
// conv's activations keep it as the unfused ops do (Max and Min let NaN win,
// Clip keeps it), on oneDNN (float) and the reference (double, float16).
TEST(Rewrite, FusedConvActivationsKeepNaNAsTheUnfusedOps) {
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16})
    for (const std::string act : {"Relu", "LeakyRelu", "Clip", "Max", "Min", "HardSwish", "Tanh", "HardSigmoid", "Sigmoid"}) {
      SCOPED_TRACE(LowerName(dt) + " " + act);
      ModelBuilder m(17);
      m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 6, 1, true, "c", 1);
      if (act == "Clip") {
        m.Initializer("lo", Tensor::Zeros(dt, {}));
        Tensor hi = Tensor::Zeros(dt, {});
        SetDouble(hi, 0, 6);
        m.Initializer("hi", hi);
        m.Node("Clip", {"c", "lo", "hi"}, {"y"});
      } else if (act == "Max" || act == "Min") {
        Tensor c = Tensor::Zeros(dt, {1});
        SetDouble(c, 0, act == "Max" ? -0.375 : 0.3125);
        m.Initializer("c1", c);
        m.Node(act, {"c", "c1"}, {"y"});
      } else {
        m.Node(act, {"c"}, {"y"});
      }
      Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
      SetDouble(x, 3 * 6 + 2, std::nan(""));
      EXPECT_THAT(RunBothWays(m, {{"x", x}}, Tol(dt)), ElementsAre("FusedConv")) << LowerName(dt) << " " << act;
    }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// A residual Add into a conv whose input and output both stay channels last
// (a conv reads it, a conv reads its sum): Z, written NCHW, is reordered into
// the channels-last destination before the sum; also with a NaN in X (the
// Clip post-op then runs the reference on NCHW copies).
TEST(Rewrite, ChannelsLastConvWithResidualMatchesTheGraph) {
  for (bool nan : {false, true}) {
    const DType dt = DType::kFloat;
    ModelBuilder m(17);
    m.Input("x", dt, {2, 4, 7, 6}).Input("z", dt, {2, 6, 7, 6}).Output("y", dt, {}, false);
    AddConv(m, dt, 4, 6, 1, true, "c", 1);
    m.Initializer("w2", RandomUniform(dt, {6, 6, 1, 1}, 2, -0.5, 0.5));
    m.Node("Conv", {"c", "w2"}, {"c2"});
    m.Node("Add", {"z", "c2"}, {"s"});
    m.Initializer("lo", Tensor::Zeros(dt, {}));
    m.Initializer("hi", Tensor::FromVector(std::vector<float>{0.75f}, {}));
    m.Node("Clip", {"s", "lo", "hi"}, {"r"});
    m.Initializer("w3", RandomUniform(dt, {5, 6, 3, 3}, 3, -0.5, 0.5));
    SetAttr(m.Node("Conv", {"r", "w3"}, {"y"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
    if (nan) SetDouble(x, 20, std::nan(""));
    const Tensor z = RandomUniform(dt, {2, 6, 7, 6}, 10, -1, 1);
    EXPECT_EQ(RunBothWays(m, {{"x", x}, {"z", z}}, Tol(dt)), std::vector<std::string>(3, "FusedConv")) << nan;
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Residual blocks: a block's output is read by the next block's first conv
// (X) and added by its last (Z). It stays channels last when the adding
// conv's own output does (recursively: the last block's output is read by a
// conv alone), with the adder's Z flag set; a NaN runs the Clip post-op's
// reference on NCHW copies of X, Z and Y. Values as the graph as written.
TEST(Rewrite, ResidualBlockOutputsStayChannelsLastAsZ) {
  for (DType dt : {DType::kFloat, DType::kBFloat16})
    for (bool nan : {false, true}) {
      ModelBuilder m(17);
      m.Input("x", dt, {2, 4, 7, 6}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 6, 1, true, "a", 1);  // a = Conv(x)
      m.Initializer("wb", RandomUniform(dt, {6, 6, 3, 3}, 2, -0.5, 0.5));
      SetAttr(m.Node("Conv", {"a", "wb"}, {"b"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
      m.Node("Add", {"b", "a"}, {"s1"});
      m.Initializer("lo", Tensor::Zeros(dt, {}));
      m.Initializer("hi", dt == DType::kFloat ? Tensor::FromVector(std::vector<float>{1.5f}, {})
                                               : RandomUniform(dt, {}, 3, 1.4, 1.6));
      m.Node("Clip", {"s1", "lo", "hi"}, {"r"});  // r: read by Conv d (X) and FusedConv d (Z)
      m.Initializer("wd", RandomUniform(dt, {6, 6, 1, 1}, 4, -0.5, 0.5));
      m.Node("Conv", {"r", "wd"}, {"d"});
      m.Node("Add", {"r", "d"}, {"e"});
      m.Initializer("wf", RandomUniform(dt, {5, 6, 3, 3}, 5, -0.5, 0.5));
      SetAttr(m.Node("Conv", {"e", "wf"}, {"y"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
      Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
      if (nan) SetDouble(x, 20, std::nan(""));
      const double tol = dt == DType::kBFloat16 ? 5e-2 : Tol(dt);
      EXPECT_EQ(RunBothWays(m, {{"x", x}}, tol), std::vector<std::string>(4, "FusedConv")) << LowerName(dt) << nan;
      auto s = m.Build();
      ASSERT_TRUE(s.ok()) << s.status();
      std::vector<std::vector<int64_t>> flags;
      for (const Node& n : (*s)->graph().nodes) {
        const Attribute* a = n.attr("channels_last");
        flags.push_back(a ? a->ints : std::vector<int64_t>{});
      }
      // a: Y; b (+a, Clip): X, Y, Z; d (+r): X, Y, Z; f: X.
      EXPECT_EQ(flags, (std::vector<std::vector<int64_t>>{{0, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0}})) << LowerName(dt);
    }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Squeeze-excite: GlobalAveragePool(y) -> Conv -> Relu -> Conv -> HardSigmoid
// -> Mul(y, s) -> Conv. The first conv makes the pool's output as its second
// output, the last takes s as its channel scale and reads y, which then
// stays channels last; batch 2 (s per image), Mul either way round, a NaN
// (the HardSigmoid post-op's reference path), dynamic batch and spatial dims
// (s's shape then known from the pointwise convs between), float, bfloat16
// and float16 (the reference kernel) against the graph as written.
TEST(Rewrite, SqueezeExciteFoldsIntoTheConvsAround) {
  for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kFloat16})
    for (int variant = 0; variant < 4; ++variant) {
      const bool swap = variant == 1, nan = variant == 2, dynamic = variant == 3;
      ModelBuilder m(17);
      m.Input("x", dt, dynamic ? Shape{-1, 4, -1, -1} : Shape{2, 4, 7, 6}).Output("y", dt, {}, false);
      AddConv(m, dt, 4, 8, 1, true, "c", 1);
      m.Node("HardSwish", {"c"}, {"h"});
      m.Node("GlobalAveragePool", {"h"}, {"g"});
      m.Initializer("wq", RandomUniform(dt, {2, 8, 1, 1}, 2, -0.5, 0.5));
      m.Node("Conv", {"g", "wq"}, {"q"});
      m.Node("Relu", {"q"}, {"qr"});
      m.Initializer("wu", RandomUniform(dt, {8, 2, 1, 1}, 3, -0.5, 0.5));
      m.Node("Conv", {"qr", "wu"}, {"u"});
      m.Node("HardSigmoid", {"u"}, {"us"});
      m.Node("Mul", swap ? std::vector<std::string>{"us", "h"} : std::vector<std::string>{"h", "us"}, {"sm"});
      m.Initializer("wp", RandomUniform(dt, {5, 8, 3, 3}, 4, -0.5, 0.5));
      SetAttr(m.Node("Conv", {"sm", "wp"}, {"p"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
      m.Node("HardSigmoid", {"p"}, {"y"});
      Tensor x = RandomUniform(dt, {2, 4, 7, 6}, 9, -2, 2);
      if (nan) SetDouble(x, 20, std::nan(""));
      const double tol = dt == DType::kFloat ? Tol(dt) : 5e-2;
      const std::string what = absl::StrCat(LowerName(dt), " variant ", variant);
      EXPECT_EQ(RunBothWays(m, {{"x", x}}, tol), std::vector<std::string>(4, "FusedConv")) << what;
      auto s = m.Build();
      ASSERT_TRUE(s.ok()) << s.status();
      const std::vector<Node>& nodes = (*s)->graph().nodes;
      ASSERT_EQ(nodes.size(), 4u) << what;
      EXPECT_THAT(nodes[0].outputs, ElementsAre("h", "g")) << what;
      EXPECT_EQ(nodes[3].inputs[0], "h") << what;
      EXPECT_EQ(nodes[3].inputs.size(), 5u) << what;
      EXPECT_EQ(nodes[3].inputs[4], "us") << what;
      const Attribute* a = nodes[0].attr("channels_last");
      const bool oned = dt == DType::kFloat || dt == DType::kBFloat16;  // channels last: oneDNN's types
      const std::vector<int64_t> want = oned ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{};
      EXPECT_EQ(a ? a->ints : std::vector<int64_t>{}, want) << what;
    }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Convs the direct kernel suits (kernels/conv/direct.h: on an AVX2 host; on
// others oneDNN runs them, to the same values): a chain with X NCHW into the
// first (a channels-last copy), channels last between, Y NCHW out of the last,
// LeakyRelu + Max, a residual Add, and a NaN through Clip; values as the
// graph as written (oneDNN's plain Conv and the separate ops).
TEST(Rewrite, ConvsOnTheDirectKernelMatchTheGraph) {
  for (bool nan : {false, true}) {
    const DType dt = DType::kFloat;
    ModelBuilder m(17);
    m.Input("x", dt, {2, 16, 9, 7}).Input("z", dt, {2, 32, 9, 7}).Output("y", dt, {}, false);
    m.Initializer("w1", RandomUniform(dt, {32, 16, 3, 3}, 1, -0.5, 0.5));
    m.Initializer("b1", RandomUniform(dt, {32}, 2, -1, 1));
    SetAttr(m.Node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    SetAttr(m.Node("LeakyRelu", {"c1"}, {"l1"}), "alpha", 0.2f);
    m.Initializer("lo", Tensor::FromVector(std::vector<float>{-0.4f}, {1}));
    m.Node("Max", {"l1", "lo"}, {"a1"});
    m.Initializer("w2", RandomUniform(dt, {32, 32, 3, 3}, 3, -0.5, 0.5));
    SetAttr(m.Node("Conv", {"a1", "w2"}, {"c2"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    m.Node("Add", {"c2", "z"}, {"s2"});
    m.Initializer("zero", Tensor::Zeros(dt, {}));
    m.Initializer("six", Tensor::FromVector(std::vector<float>{6}, {}));
    m.Node("Clip", {"s2", "zero", "six"}, {"r2"});
    m.Initializer("w3", RandomUniform(dt, {48, 32, 1, 3}, 4, -0.5, 0.5));
    SetAttr(m.Node("Conv", {"r2", "w3"}, {"c3"}), "pads", std::vector<int64_t>{0, 1, 0, 1});
    m.Node("Relu", {"c3"}, {"y"});
    Tensor x = RandomUniform(dt, {2, 16, 9, 7}, 9, -2, 2);
    if (nan) SetDouble(x, 40, std::nan(""));
    const Tensor z = RandomUniform(dt, {2, 32, 9, 7}, 10, -1, 1);
    EXPECT_EQ(RunBothWays(m, {{"x", x}, {"z", z}}, Tol(dt)), std::vector<std::string>(3, "FusedConv")) << nan;
  }
}

}  // namespace
}  // namespace onnx_mini
