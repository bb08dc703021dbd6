// runtime/rewrite/swiglu.cc: Mul(Swish(g), u) -> SwiGLU(g, u), only where g and
// u have one shape in every run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;

// The Llama MLP: gate and up projections of one x (batch and sequence only
// known at run time), x * sigmoid(x) of the gate, times the up.
TEST(Rewrite, GateAndUpProjectionsBecomeSwiGlu) {
  for (bool swish_first : {false, true}) {
    ModelBuilder m(17);
    m.Input("x", DType::kFloat, {-1, -1, 8}).Output("y", DType::kFloat, {-1, -1, 12});
    m.Initializer("wg", RandomUniform(DType::kFloat, {8, 12}, 1, -1, 1));
    m.Initializer("wu", RandomUniform(DType::kFloat, {8, 12}, 2, -1, 1));
    m.Node("MatMul", {"x", "wg"}, {"g"});
    m.Node("MatMul", {"x", "wu"}, {"u"});
    m.Node("Sigmoid", {"g"}, {"s"});
    m.Node("Mul", {"g", "s"}, {"sw"});
    if (swish_first) m.Node("Mul", {"sw", "u"}, {"y"});
    else m.Node("Mul", {"u", "sw"}, {"y"});
    std::vector<std::vector<NamedTensor>> runs;
    uint32_t seed = 3;
    for (const Shape& s : {Shape{1, 5, 8}, Shape{2, 3, 8}, Shape{1, 1, 8}, Shape{3, 0, 8}, Shape{1, 1500, 8}})
      runs.push_back({{"x", RandomUniform(DType::kFloat, s, seed++, -12, 12)}});
    // The same vector SiLU and product as Swish and Mul: the same bits.
    EXPECT_THAT(RunBothWaysMany(m, runs, 0), ElementsAre("MatMul", "MatMul", "SwiGLU"));
  }
}

TEST(Rewrite, SwishTimesAValueOfTheSameKnownShapeBecomesSwiGlu) {
  for (DType dt : {DType::kFloat, DType::kFloat16, DType::kDouble}) {
    ModelBuilder m(24);
    m.Input("g", dt, {4, 6}).Input("u", dt, {4, 6}).Output("y", dt, {4, 6});
    onnx::NodeProto& swish = m.Node("Swish", {"g"}, {"sw"});
    SetAttr(swish, "alpha", 0.75f);
    m.Node("Mul", {"sw", "u"}, {"y"});
    const Tensor g = RandomUniform(dt, {4, 6}, 7, -9, 9), u = RandomUniform(dt, {4, 6}, 8, -2, 2);
    EXPECT_THAT(RunBothWays(m, {{"g", g}, {"u", u}}, dt == DType::kFloat16 ? 2e-3 : 1e-6), ElementsAre("SwiGLU"))
        << LowerName(dt);
  }
}

TEST(Rewrite, SwiGluIsNotMadeWhereTheMulBroadcastsOrMayBroadcast) {
  {  // u broadcasts over g's rows
    ModelBuilder m(17);
    m.Input("g", DType::kFloat, {4, 6}).Input("u", DType::kFloat, {6}).Output("y", DType::kFloat, {4, 6});
    m.Node("Sigmoid", {"g"}, {"s"});
    m.Node("Mul", {"g", "s"}, {"sw"});
    m.Node("Mul", {"sw", "u"}, {"y"});
    EXPECT_THAT(RunBothWays(m, {{"g", RandomUniform(DType::kFloat, {4, 6}, 1, -5, 5)}, {"u", F({1, 2, 3, 4, 5, 6}, {6})}}, 0),
                ElementsAre("Swish", "Mul"));
  }
  {  // dims known only at run time, not the same MatMul's: a run may broadcast
    ModelBuilder m(17);
    m.Input("g", DType::kFloat, {-1}).Input("u", DType::kFloat, {-1}).Output("y", DType::kFloat, {-1});
    m.Node("Sigmoid", {"g"}, {"s"});
    m.Node("Mul", {"g", "s"}, {"sw"});
    m.Node("Mul", {"sw", "u"}, {"y"});
    EXPECT_THAT(RunBothWaysMany(m,
                                {{{"g", RandomUniform(DType::kFloat, {5}, 1, -5, 5)}, {"u", F({2}, {1})}},
                                 {{"g", RandomUniform(DType::kFloat, {5}, 2, -5, 5)},
                                  {"u", RandomUniform(DType::kFloat, {5}, 3, -5, 5)}}},
                                0),
                ElementsAre("Swish", "Mul"));
  }
  {  // the Swish is also a graph output
    ModelBuilder m(17);
    m.Input("g", DType::kFloat, {3}).Input("u", DType::kFloat, {3}).Output("y", DType::kFloat, {3});
    m.Output("sw", DType::kFloat, {3});
    m.Node("Sigmoid", {"g"}, {"s"});
    m.Node("Mul", {"g", "s"}, {"sw"});
    m.Node("Mul", {"sw", "u"}, {"y"});
    EXPECT_THAT(RunBothWays(m, {{"g", F({-1, 0, 2}, {3})}, {"u", F({3, 4, 5}, {3})}}, 0), ElementsAre("Swish", "Mul"));
  }
}

TEST(Rewrite, SwishOfAValueTimesItselfBecomesSwiGluOfOneValueTwice) {
  // Mul(Swish(h), h): SwiGLU(h, h), its output given h's storage (A in place):
  // B is that storage too, read after the SiLU is written.
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {4, 6}).Output("y", DType::kFloat, {4, 6});
  m.Node("Neg", {"x"}, {"h"});
  m.Node("Sigmoid", {"h"}, {"s"});
  m.Node("Mul", {"h", "s"}, {"sw"});
  m.Node("Mul", {"sw", "h"}, {"y"});
  EXPECT_THAT(RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {4, 6}, 5, -4, 4)}}, 0),
              ElementsAre("Neg", "SwiGLU"));
}

TEST(Rewrite, SwiGluOfAValueAndAViewOfIt) {
  // u shares h's storage (a Reshape view, an Identity): SwiGLU's output may not.
  for (const char* op : {"Reshape", "Identity", "Flatten"}) {
    ModelBuilder m(17);
    m.Input("x", DType::kFloat, {4, 6}).Output("y", DType::kFloat, {4, 6});
    m.Initializer("shape", Tensor::FromVector<int64_t>({4, 6}, {2}));
    m.Node("Neg", {"x"}, {"h"});
    if (std::string(op) == "Reshape") m.Node("Reshape", {"h", "shape"}, {"u"});
    else m.Node(op, {"h"}, {"u"});
    m.Node("Sigmoid", {"h"}, {"s"});
    m.Node("Mul", {"h", "s"}, {"sw"});
    m.Node("Mul", {"sw", "u"}, {"y"});
    EXPECT_THAT(RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {4, 6}, 5, -4, 4)}}, 0),
                ElementsAre("Neg", op, "SwiGLU")) << op;
  }
}

}  // namespace
}  // namespace onnx_mini
