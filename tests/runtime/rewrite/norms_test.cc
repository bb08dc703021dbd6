// runtime/rewrite/norms.cc: RMSNorm and LayerNorm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

struct RmsForm {
  bool square_by_mul;   // Mul(x, x) instead of Pow(x, 2)
  int inverse;          // 0: Reciprocal(Sqrt) then Mul, 1: Div(1, Sqrt) then Mul, 2: Div(x, Sqrt),
                        // 3: Pow(., -0.5) then Mul
  bool weight_first;    // Mul(w, y) instead of Mul(y, w)
  int64_t opset;        // ReduceMean's axes: an attribute before 18, an input from 18
};

// The decomposed RMSNorm as exporters write it, in every variant the rewrite takes.
ModelBuilder RmsModel(const RmsForm& f, DType dt, int64_t hidden, bool mean_is_output = false) {
  ModelBuilder m(f.opset);
  m.Input("x", dt, {2, -1, hidden}).Output("y", dt, {2, -1, hidden});
  m.Initializer("w", RandomUniform(dt, {hidden}, 5, 0.5, 1.5));
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {}));
  Tensor eps = RandomUniform(dt, {}, 1, 1e-5, 1e-5);
  m.Initializer("eps", eps);
  m.Initializer("one", RandomUniform(dt, {}, 1, 1, 1));
  if (f.square_by_mul) m.Node("Mul", {"x", "x"}, {"sq"});
  else m.Node("Pow", {"x", "two"}, {"sq"});
  if (f.opset >= 18) {
    m.Initializer("axes", Tensor::FromVector(std::vector<int64_t>{-1}, {1}));
    m.Node("ReduceMean", {"sq", "axes"}, {"mean"});
  } else {
    SetAttr(m.Node("ReduceMean", {"sq"}, {"mean"}), "axes", std::vector<int64_t>{-1});
  }
  if (mean_is_output) m.Output("mean", dt, {2, -1, 1});
  m.Node("Add", {"mean", "eps"}, {"var"});
  if (f.inverse != 3) m.Node("Sqrt", {"var"}, {"std"});
  if (f.inverse == 3) {  // dynamo's rsqrt
    m.Initializer("minus_half", RandomUniform(dt, {}, 1, -0.5, -0.5));
    m.Node("Pow", {"var", "minus_half"}, {"inv"});
    m.Node("Mul", {"x", "inv"}, {"normed"});
  } else if (f.inverse == 0) {
    m.Node("Reciprocal", {"std"}, {"inv"});
    m.Node("Mul", {"x", "inv"}, {"normed"});
  } else if (f.inverse == 1) {
    m.Node("Div", {"one", "std"}, {"inv"});
    m.Node("Mul", {"inv", "x"}, {"normed"});
  } else {
    m.Node("Div", {"x", "std"}, {"normed"});
  }
  if (f.weight_first) m.Node("Mul", {"w", "normed"}, {"y"});
  else m.Node("Mul", {"normed", "w"}, {"y"});
  return m;
}

TEST(Rewrite, DecomposedRmsNormBecomesRMSNormalization) {
  for (DType dt : {DType::kFloat, DType::kFloat16}) {
    for (bool by_mul : {false, true})
      for (int inverse : {0, 1, 2, 3})
        for (bool weight_first : {false, true})
          for (int64_t opset : {17, 18}) {
            const RmsForm f{by_mul, inverse, weight_first, opset};
            for (int64_t hidden : {1, 17, 64}) {
              const Tensor x = RandomUniform(dt, {2, 3, hidden}, uint32_t(hidden));
              const std::vector<std::string> ops =
                  RunBothWays(RmsModel(f, dt, hidden), {{"x", x}}, dt == DType::kFloat ? 1e-5 : 2e-3);
              EXPECT_THAT(ops, ::testing::ElementsAre("RMSNormalization"))
                  << LowerName(dt) << " mul " << by_mul << " inverse " << inverse << " weight first "
                  << weight_first << " opset " << opset;
            }
          }
  }
}

// HF's RMSNorm as torch exports it: x.to(float32), the norm in float, then
// .to(input_dtype) before the weight: Casts around the pattern (no-ops in a
// float32 model), and the mean over axes [2] or [-1].
ModelBuilder CastRmsModel(DType dt, int64_t axis, bool cast_read_elsewhere) {
  const DType work = DType::kFloat;
  ModelBuilder m(18);
  m.Input("x", dt, {2, -1, 8}).Output("y", dt, {2, -1, 8});
  if (cast_read_elsewhere) m.Output("xc", work, {2, -1, 8});
  m.Initializer("w", RandomUniform(dt, {8}, 5, 0.5, 1.5));
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {}));
  m.Initializer("eps", Tensor::FromVector(std::vector<float>{1e-6f}, {}));
  m.Initializer("axes", Tensor::FromVector(std::vector<int64_t>{axis}, {1}));
  SetAttr(m.Node("Cast", {"x"}, {"xc"}), "to", int64_t(work));
  m.Node("Pow", {"xc", "two"}, {"sq"});
  m.Node("ReduceMean", {"sq", "axes"}, {"mean"});
  m.Node("Add", {"mean", "eps"}, {"var"});
  m.Node("Sqrt", {"var"}, {"std"});
  m.Node("Reciprocal", {"std"}, {"inv"});
  m.Node("Mul", {"xc", "inv"}, {"normed"});
  SetAttr(m.Node("Cast", {"normed"}, {"nc"}), "to", int64_t(dt));
  m.Node("Mul", {"w", "nc"}, {"y"});
  return m;
}

TEST(Rewrite, RmsNormThroughNoOpCastsFuses) {
  const Tensor x = RandomUniform(DType::kFloat, {2, 3, 8}, 4);
  for (int64_t axis : {-1, 2})
    EXPECT_THAT(RunBothWays(CastRmsModel(DType::kFloat, axis, false), {{"x", x}}, 1e-5),
                ::testing::ElementsAre("RMSNormalization"))
        << "axis " << axis;
  // The first Cast has another reader: it stays, and the fused node reads it.
  EXPECT_THAT(RunBothWays(CastRmsModel(DType::kFloat, -1, true), {{"x", x}}, 1e-5),
              ::testing::ElementsAre("Cast", "RMSNormalization"));
  // A 16-bit model's Casts are real (the norm in float, rounded to 16 bits
  // before the weight): RMSNormalization over the 16-bit x with its
  // statistics in float, the normalized value no longer rounded before w.
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const Tensor x16 = RandomUniform(dt, {2, 3, 8}, 4);
    const double tol = dt == DType::kFloat16 ? 2e-3 : 1.6e-2;
    EXPECT_THAT(RunBothWays(CastRmsModel(dt, -1, false), {{"x", x16}}, tol),
                ::testing::ElementsAre("RMSNormalization"));
    // The widening Cast read elsewhere stays; the norm still reads the 16-bit x.
    auto s = CastRmsModel(dt, -1, true).Build();
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_THAT(OpTypes(**s), ::testing::ElementsAre("Cast", "RMSNormalization"));
    EXPECT_EQ((*s)->graph().nodes[1].inputs[0], "x");
    EXPECT_EQ((*s)->graph().nodes[1].attr_int("stash_type", 0), 1);
  }
}

// The narrowing Cast to another type than w's, or a widening Cast from
// another type than w's: the fused op could not take both, the graph stays.
TEST(Rewrite, RmsNormThroughMismatchedCastsIsKept) {
  ModelBuilder m(18);
  m.Input("x", DType::kFloat16, {2, 3, 8}).Output("y", DType::kBFloat16, {2, 3, 8});
  m.Initializer("w", RandomUniform(DType::kBFloat16, {8}, 5, 0.5, 1.5));
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {}));
  m.Initializer("eps", Tensor::FromVector(std::vector<float>{1e-6f}, {}));
  m.Initializer("axes", Tensor::FromVector(std::vector<int64_t>{-1}, {1}));
  SetAttr(m.Node("Cast", {"x"}, {"xc"}), "to", int64_t(DType::kFloat));
  m.Node("Pow", {"xc", "two"}, {"sq"});
  m.Node("ReduceMean", {"sq", "axes"}, {"mean"});
  m.Node("Add", {"mean", "eps"}, {"var"});
  m.Node("Sqrt", {"var"}, {"std"});
  m.Node("Div", {"xc", "std"}, {"normed"});
  SetAttr(m.Node("Cast", {"normed"}, {"nc"}), "to", int64_t(DType::kBFloat16));
  m.Node("Mul", {"w", "nc"}, {"y"});
  const Tensor x = RandomUniform(DType::kFloat16, {2, 3, 8}, 4);
  EXPECT_THAT(RunBothWays(m, {{"x", x}}, 1e-2), ::testing::Not(::testing::Contains("RMSNormalization")));
}

TEST(Rewrite, RmsNormIsKeptWhenAnIntermediateIsUsedElsewhere) {
  const RmsForm f{false, 0, false, 18};
  const Tensor x = RandomUniform(DType::kFloat, {2, 4, 8}, 3);
  const std::vector<std::string> ops = RunBothWays(RmsModel(f, DType::kFloat, 8, true), {{"x", x}}, 1e-6);
  // The mean is a graph output: no RMSNorm, but Pow(x, 2) still becomes Mul.
  EXPECT_THAT(ops, ::testing::ElementsAre("Mul", "ReduceMean", "Add", "Sqrt", "Reciprocal", "Mul", "Mul"));
}

// A scale that widens the normalized values ([2, 1] * [3] -> [2, 3]) is valid
// ONNX that RMSNormalization refuses: the session plans the graph as written.
TEST(Rewrite, AFusedNodeThatWouldFailFallsBackToTheGraphAsWritten) {
  ModelBuilder m(18);
  m.Input("x", DType::kFloat, {2, 1}).Output("y", DType::kFloat, {2, 3});
  m.Initializer("w", Tensor::FromVector(std::vector<float>{1, 2, 3}, {3}));
  m.Initializer("eps", Tensor::FromVector(std::vector<float>{0}, {}));
  m.Initializer("axes", Tensor::FromVector(std::vector<int64_t>{-1}, {1}));
  m.Node("Mul", {"x", "x"}, {"sq"});
  m.Node("ReduceMean", {"sq", "axes"}, {"mean"});
  m.Node("Add", {"mean", "eps"}, {"var"});
  m.Node("Sqrt", {"var"}, {"std"});
  m.Node("Div", {"x", "std"}, {"normed"});
  m.Node("Mul", {"normed", "w"}, {"y"});
  const Tensor x = Tensor::FromVector(std::vector<float>{2, -4}, {2, 1});
  const std::vector<std::string> ops = RunBothWays(m, {{"x", x}}, 1e-6);
  EXPECT_EQ(ops.size(), 6u);  // as written
  auto s = m.Build(SessionOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  auto y = (*s)->Run({{"x", x}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(Values((*y)[0]), ::testing::ElementsAre(1, 2, 3, -1, -2, -3));
}

TEST(Rewrite, RmsNormOverAnotherAxisIsKept) {
  ModelBuilder m(18);
  m.Input("x", DType::kFloat, {3, 5}).Output("y", DType::kFloat, {3, 5});
  m.Initializer("w", RandomUniform(DType::kFloat, {5}, 5));
  m.Initializer("eps", Tensor::FromVector(std::vector<float>{1e-5f}, {}));
  m.Initializer("axes", Tensor::FromVector(std::vector<int64_t>{0}, {1}));
  m.Node("Mul", {"x", "x"}, {"sq"});
  m.Node("ReduceMean", {"sq", "axes"}, {"mean"});
  m.Node("Add", {"mean", "eps"}, {"var"});
  m.Node("Sqrt", {"var"}, {"std"});
  m.Node("Div", {"x", "std"}, {"normed"});
  m.Node("Mul", {"normed", "w"}, {"y"});
  EXPECT_EQ(RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {3, 5}, 9)}}, 1e-6).size(), 6u);
}

// The decomposed LayerNorm of older exporters (opset < 17).
ModelBuilder LayerNormModel(DType dt, int64_t hidden, bool square_by_mul, bool swapped, int64_t opset) {
  ModelBuilder m(opset);
  m.Input("x", dt, {-1, 3, hidden}).Output("y", dt, {-1, 3, hidden});
  m.Initializer("g", RandomUniform(dt, {hidden}, 5, 0.5, 1.5));
  m.Initializer("b", RandomUniform(dt, {hidden}, 6));
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {}));
  m.Initializer("eps", RandomUniform(dt, {}, 1, 1e-5, 1e-5));
  const auto mean = [&](const std::string& in, const std::string& out) {
    if (opset >= 18) m.Node("ReduceMean", {in, "axes"}, {out});
    else SetAttr(m.Node("ReduceMean", {in}, {out}), "axes", std::vector<int64_t>{-1});
  };
  if (opset >= 18) m.Initializer("axes", Tensor::FromVector(std::vector<int64_t>{-1}, {1}));
  mean("x", "m");
  m.Node("Sub", {"x", "m"}, {"d"});
  if (square_by_mul) m.Node("Mul", {"d", "d"}, {"sq"});
  else m.Node("Pow", {"d", "two"}, {"sq"});
  mean("sq", "var");
  m.Node("Add", swapped ? std::vector<std::string>{"eps", "var"} : std::vector<std::string>{"var", "eps"}, {"ve"});
  m.Node("Sqrt", {"ve"}, {"s"});
  m.Node("Div", {"d", "s"}, {"n"});
  m.Node("Mul", swapped ? std::vector<std::string>{"g", "n"} : std::vector<std::string>{"n", "g"}, {"gn"});
  m.Node("Add", swapped ? std::vector<std::string>{"b", "gn"} : std::vector<std::string>{"gn", "b"}, {"y"});
  return m;
}

TEST(Rewrite, DecomposedLayerNormBecomesLayerNormalization) {
  for (DType dt : {DType::kFloat, DType::kFloat16})
    for (bool by_mul : {false, true})
      for (bool swapped : {false, true})
        for (int64_t opset : {13, 18})
          for (int64_t hidden : {1, 17, 64}) {
            const Tensor x = RandomUniform(dt, {2, 3, hidden}, uint32_t(hidden), -3, 5);
            EXPECT_THAT(RunBothWays(LayerNormModel(dt, hidden, by_mul, swapped, opset), {{"x", x}},
                                    dt == DType::kFloat ? 1e-5 : 4e-3),
                        ::testing::ElementsAre("LayerNormalization"))
                << LowerName(dt) << " mul " << by_mul << " swapped " << swapped << " opset " << opset;
          }
  // x - mean also a graph output: no LayerNorm; what remains is an RMSNorm
  // of the centred value (the same arithmetic), with the mean, Sub and Add kept.
  ModelBuilder m = LayerNormModel(DType::kFloat, 8, false, false, 17);
  m.Output("d", DType::kFloat, {-1, 3, 8});
  EXPECT_THAT(RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {2, 3, 8}, 1)}}, 1e-5),
              ::testing::ElementsAre("ReduceMean", "Sub", "RMSNormalization", "Add"));
}

// RMSNorm and LayerNorm whose last dim is known only at run time: a 1-D
// scale broadcasts against a last dim of 1 in the pattern but not in the
// fused op, so the rules need the last dim known and equal to the scale's
// length; the session (one per way) runs both shapes.
TEST(Rewrite, NormsWithALastDimKnownOnlyAtRunTimeAreKept) {
  const RmsForm f{true, 2, false, 18};
  ModelBuilder rms = RmsModel(f, DType::kFloat, 4);
  rms.graph().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->clear_dim_value();
  rms.graph().mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->clear_dim_value();
  const std::vector<std::vector<NamedTensor>> runs = {{{"x", RandomUniform(DType::kFloat, {2, 3, 4}, 1)}},
                                                       {{"x", RandomUniform(DType::kFloat, {2, 3, 1}, 2)}}};
  EXPECT_THAT(RunBothWaysMany(rms, runs, 1e-6), ::testing::Not(::testing::Contains("RMSNormalization")));
  ModelBuilder ln = LayerNormModel(DType::kFloat, 4, false, false, 17);
  ln.graph().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->clear_dim_value();
  ln.graph().mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->clear_dim_value();
  const std::vector<std::vector<NamedTensor>> ln_runs = {{{"x", RandomUniform(DType::kFloat, {2, 3, 4}, 1)}},
                                                          {{"x", RandomUniform(DType::kFloat, {2, 3, 1}, 2)}}};
  EXPECT_THAT(RunBothWaysMany(ln, ln_runs, 1e-6), ::testing::Not(::testing::Contains("LayerNormalization")));
  // The same last dim known (4): fused, and named as the user's last node.
  ModelBuilder named = RmsModel(f, DType::kFloat, 4);
  named.graph().mutable_node(named.graph().node_size() - 1)->set_name("final_scale");
  auto s = named.Build(SessionOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_THAT(OpTypes(**s), ::testing::ElementsAre("RMSNormalization"));
  EXPECT_EQ((*s)->graph().nodes[0].name, "final_scale");
}

}  // namespace
}  // namespace onnx_mini
