// runtime/rewrite/cse.cc: nodes computing the same thing merged, and those
// that must stay apart (random draws, other attributes or constants, names
// a graph output or a subgraph holds).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/status_macros.h"
#include "tests/ops/graph_util.h"
#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;

std::vector<NamedTensor> X(uint32_t seed = 1) {
  return {{"x", RandomUniform(DType::kFloat, {3, 4}, seed, -2, 2)}};
}

TEST(RewriteCse, SameOpAndInputsMergeWithTheirReaders) {
  // Two Shape(x)[0] chains and two Relu(x): one of each left, and the Adds
  // reading the copies become copies themselves (merged in the same walk).
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1, 4}).Output("y", DType::kFloat, {-1, 4});
  m.Initializer("i0", Tensor::FromVector<int64_t>({0}, {}));
  m.Initializer("j0", Tensor::FromVector<int64_t>({0}, {}));  // same value, another name
  m.Node("Shape", {"x"}, {"s1"});
  m.Node("Shape", {"x"}, {"s2"});
  m.Node("Gather", {"s1", "i0"}, {"g1"});
  m.Node("Gather", {"s2", "j0"}, {"g2"});
  SetAttr(m.Node("Cast", {"g1"}, {"f1"}), "to", int64_t(1));
  SetAttr(m.Node("Cast", {"g2"}, {"f2"}), "to", int64_t(1));
  m.Node("Relu", {"x"}, {"r1"});
  m.Node("Relu", {"x"}, {"r2"});
  m.Node("Add", {"r1", "f1"}, {"a1"});
  m.Node("Add", {"r2", "f2"}, {"a2"});
  m.Node("Mul", {"a1", "a2"}, {"y"});
  EXPECT_THAT(RunBothWaysMany(m, {X(1), {{"x", RandomUniform(DType::kFloat, {5, 4}, 2, -2, 2)}}}, 0),
              ElementsAre("Shape", "Gather", "Cast", "Relu", "Add", "Mul"));
}

TEST(RewriteCse, OtherAttributesOrConstantsStayApart) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 4}).Output("y", DType::kFloat, {3, 4});
  m.Initializer("two", Tensor::FromVector<float>({2}, {}));
  m.Initializer("two_1d", Tensor::FromVector<float>({2}, {1}));  // the same number, another shape
  m.Initializer("two_d", Tensor::FromVector<double>({2}, {}));
  m.Initializer("three", Tensor::FromVector<float>({3}, {}));
  SetAttr(m.Node("Softmax", {"x"}, {"s0"}), "axis", int64_t(0));
  SetAttr(m.Node("Softmax", {"x"}, {"s1"}), "axis", int64_t(1));
  m.Node("Mul", {"s0", "two"}, {"m0"});
  m.Node("Mul", {"s0", "two_1d"}, {"m1"});
  m.Node("Mul", {"s0", "three"}, {"m2"});
  m.Node("Sum", {"s1", "m0", "m1", "m2"}, {"y"});
  EXPECT_THAT(RunBothWays(m, X(), 0), ElementsAre("Softmax", "Softmax", "Mul", "Mul", "Mul", "Sum"));
}

TEST(RewriteCse, RandomDrawsAndTrainingDropoutStayApart) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 4}).Output("y", DType::kFloat, {3, 4}).Output("z", DType::kFloat, {3, 4});
  m.Node("RandomUniformLike", {"x"}, {"u1"});
  m.Node("RandomUniformLike", {"x"}, {"u2"});
  m.Node("Add", {"u1", "u2"}, {"y"});
  m.Initializer("ratio", Tensor::FromVector<float>({0.5f}, {}));
  m.Initializer("train", Tensor::FromVector<bool>({true}, {}));
  m.Node("Dropout", {"x", "ratio", "train"}, {"d1"});
  m.Node("Dropout", {"x", "ratio", "train"}, {"d2"});
  m.Node("Add", {"d1", "d2"}, {"z"});
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(OpTypes(**s), ElementsAre("RandomUniformLike", "RandomUniformLike", "Add", "Dropout", "Dropout", "Add"));
}

TEST(RewriteCse, InferenceDropoutMergesAndTheKeptNodeTakesTheMask) {
  // The first Dropout skips its mask, the second asks for it: the kept node gives it.
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 4}).Output("y", DType::kFloat, {3, 4});
  m.Node("Dropout", {"x"}, {"d1"});
  m.Node("Dropout", {"x"}, {"d2", "mask"});
  SetAttr(m.Node("Cast", {"mask"}, {"one"}), "to", int64_t(1));
  m.Node("Sum", {"d1", "d2", "one"}, {"y"});
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(OpTypes(**s), ElementsAre("Dropout", "Cast", "Sum"));
  EXPECT_THAT(s.value()->graph().nodes[0].outputs, ElementsAre("d1", "mask"));
  const std::vector<NamedTensor> in = X();
  auto y = (*s)->Run(in);
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*y)[0].data<float>()[i], 2 * in[0].tensor.data<float>()[i] + 1);
}

TEST(RewriteCse, GraphOutputsAndSubgraphReadsKeepTheirNodes) {
  // r2 is a graph output and r3 is read by the If branch: their names stay.
  ModelBuilder then_branch(17), else_branch(17);
  then_branch.Output("t", DType::kFloat, {3, 4});
  then_branch.Node("Neg", {"r3"}, {"t"});
  else_branch.Output("e", DType::kFloat, {3, 4});
  else_branch.Node("Identity", {"x"}, {"e"});
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 4}).Input("c", DType::kBool, {});
  m.Output("y", DType::kFloat, {3, 4}).Output("r2", DType::kFloat, {3, 4}).Output("z", DType::kFloat, {3, 4});
  m.Node("Relu", {"x"}, {"r1"});
  m.Node("Relu", {"x"}, {"r2"});
  m.Node("Relu", {"x"}, {"r3"});
  m.Node("Relu", {"x"}, {"r4"});  // merged into r1
  m.Node("Add", {"r1", "r4"}, {"y"});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"z"});
  SetGraph(n, "then_branch", Body(then_branch, "then"));
  SetGraph(n, "else_branch", Body(else_branch, "else"));
  std::vector<NamedTensor> in = X();
  in.push_back({"c", Tensor::FromVector<bool>({true}, {})});
  EXPECT_THAT(RunBothWays(m, in, 0), ElementsAre("Relu", "Relu", "Relu", "Add", "If"));
}

TEST(RewriteCse, ConstantNodesMergeByValueIfNodesNever) {
  // Two Constant nodes of one value are one; two If nodes with the same branches stay two (not compared).
  ModelBuilder then_branch(17), else_branch(17);
  then_branch.Output("t", DType::kFloat, {3, 4});
  then_branch.Node("Neg", {"x"}, {"t"});
  else_branch.Output("e", DType::kFloat, {3, 4});
  else_branch.Node("Identity", {"x"}, {"e"});
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 4}).Input("c", DType::kBool, {}).Output("y", DType::kFloat, {3, 4});
  SetAttr(m.Node("Constant", {}, {"k1"}), "value", Tensor::FromVector<float>({1.5f}, {}));
  SetAttr(m.Node("Constant", {}, {"k2"}), "value", Tensor::FromVector<float>({1.5f}, {}));
  SetAttr(m.Node("Constant", {}, {"k3"}), "value", Tensor::FromVector<float>({2.5f}, {}));
  for (const char* out : {"i1", "i2"}) {
    onnx::NodeProto& n = m.Node("If", {"c"}, {out});
    SetGraph(n, "then_branch", Body(then_branch, "then"));
    SetGraph(n, "else_branch", Body(else_branch, "else"));
  }
  m.Node("Mul", {"i1", "k1"}, {"a"});
  m.Node("Mul", {"i2", "k2"}, {"b"});
  m.Node("Sum", {"a", "b", "k3"}, {"y"});
  std::vector<NamedTensor> in = X();
  in.push_back({"c", Tensor::FromVector<bool>({true}, {})});
  SessionOptions on;
  on.graph_rewrites = true;
  auto s = m.Build(on);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::string> ops = OpTypes(**s);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Constant"), 2);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "If"), 2);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Mul"), 2);  // their If inputs differ
  auto y = (*s)->Run(in);
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ((*y)[0].data<float>()[i], -3 * in[0].tensor.data<float>()[i] + 2.5f);
}

TEST(RewriteCse, InsideASubgraph) {
  ModelBuilder then_branch(17), else_branch(17);
  then_branch.Output("t", DType::kFloat, {3, 4});
  then_branch.Node("Exp", {"x"}, {"e1"});
  then_branch.Node("Exp", {"x"}, {"e2"});
  then_branch.Node("Sub", {"e1", "e2"}, {"t"});
  else_branch.Output("e", DType::kFloat, {3, 4});
  else_branch.Node("Identity", {"x"}, {"e"});
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 4}).Input("c", DType::kBool, {}).Output("z", DType::kFloat, {3, 4});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"z"});
  SetGraph(n, "then_branch", Body(then_branch, "then"));
  SetGraph(n, "else_branch", Body(else_branch, "else"));
  std::vector<NamedTensor> in = X();
  in.push_back({"c", Tensor::FromVector<bool>({true}, {})});
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  const Attribute* a = (*s)->graph().nodes.at(0).attr("then_branch");
  ASSERT_TRUE(a && a->g);
  std::vector<std::string> ops;
  for (const Node& node : a->g->nodes) ops.push_back(node.op_type);
  EXPECT_THAT(ops, ElementsAre("Exp", "Sub"));
  auto y = (*s)->Run(in);
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*y)[0].data<float>()[i], 0.0f);
}

TEST(RewriteCse, SplitsIntoOtherCountsStayApart) {
  // Split without sizes cuts into as many parts as it has outputs: halves and thirds of x differ.
  ModelBuilder m(13);
  m.Input("x", DType::kFloat, {6, 4}).Output("y", DType::kFloat, {-1, 4}).Output("z", DType::kFloat, {-1, 4});
  m.Node("Split", {"x"}, {"h1", "h2"});
  m.Node("Split", {"x"}, {"t1", "t2", "t3"});
  m.Node("Add", {"h1", "h2"}, {"y"});
  m.Node("Sum", {"t1", "t2", "t3"}, {"z"});
  EXPECT_THAT(RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {6, 4}, 1, -2, 2)}}, 0),
              ElementsAre("Split", "Split", "Add", "Sum"));
}

}  // namespace
}  // namespace onnx_mini
