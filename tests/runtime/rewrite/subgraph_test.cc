// runtime/rewrite/rewrite.cc: the rewrites inside subgraphs (If branches,
// Loop bodies, at any depth), with the body's view of its outer scope; and
// InferSubgraphTypes, the types they read there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/loader.h"
#include "runtime/registry.h"
#include "runtime/session/infer.h"
#include "tests/ops/graph_util.h"
#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;

const Shape kX = {2, 3, 9};  // 1-D convolutions, as silero VAD's

// The op types of the subgraph `attr` of the top-level node `node`.
std::vector<std::string> BranchOps(const Session& s, size_t node, const std::string& attr) {
  std::vector<std::string> ops;
  const Attribute* a = s.graph().nodes.at(node).attr(attr);
  if (a && a->g)
    for (const Node& n : a->g->nodes) ops.push_back(n.op_type);
  return ops;
}

// Conv(x, <p>w, <p>b) -> BatchNormalization(<p>bn_*) -> Relu -> `out`, in `b`;
// the weights are initializers of `holder` (the branch itself or an outer graph).
void ConvBnRelu(ModelBuilder& b, ModelBuilder& holder, const std::string& p, const std::string& out,
                const std::string& conv_out = "") {
  const std::string c = conv_out.empty() ? p + "c" : conv_out;
  holder.Initializer(p + "w", RandomUniform(DType::kFloat, {4, 3, 3}, 1, -0.5, 0.5));
  holder.Initializer(p + "b", RandomUniform(DType::kFloat, {4}, 2, -1, 1));
  holder.Initializer(p + "bn_s", RandomUniform(DType::kFloat, {4}, 3, 0.5, 2));
  holder.Initializer(p + "bn_b", RandomUniform(DType::kFloat, {4}, 4, -1, 1));
  holder.Initializer(p + "bn_m", RandomUniform(DType::kFloat, {4}, 5, -1, 1));
  holder.Initializer(p + "bn_v", RandomUniform(DType::kFloat, {4}, 6, 0.1, 3));
  SetAttr(b.Node("Conv", {"x", p + "w", p + "b"}, {c}), "pads", std::vector<int64_t>{1, 1});
  b.Node("BatchNormalization", {c, p + "bn_s", p + "bn_b", p + "bn_m", p + "bn_v"}, {p + "n"});
  b.Node("Relu", {p + "n"}, {out});
}

// y = If(s > 0) { then } else { else }, x float [2,3,9], s float [].
ModelBuilder IfModel(ModelBuilder& m, ModelBuilder& then_branch, ModelBuilder& else_branch) {
  m.Input("x", DType::kFloat, {2, 3, 9}).Input("s", DType::kFloat, {}).Output("y", DType::kFloat, {}, false);
  m.Initializer("zero", Tensor::FromVector<float>({0}, {}));
  m.Node("Greater", {"s", "zero"}, {"cond"});
  onnx::NodeProto& n = m.Node("If", {"cond"}, {"y"});
  SetGraph(n, "then_branch", Body(then_branch, "then"));
  SetGraph(n, "else_branch", Body(else_branch, "else"));
  return m;
}

std::vector<std::vector<NamedTensor>> BothBranches() {
  const Tensor x = RandomUniform(DType::kFloat, kX, 9, -2, 2);
  return {{{"x", x}, {"s", Tensor::FromVector<float>({1}, {})}}, {{"x", x}, {"s", Tensor::FromVector<float>({-1}, {})}}};
}

TEST(RewriteSubgraph, ConvBatchNormReluInIfBranchesBecomesFusedConv) {
  // then: the weights are the branch's own initializers; else: the model's (outer-scope constants).
  ModelBuilder m(17), then_branch(17), else_branch(17);
  ConvBnRelu(then_branch, then_branch, "t_", "ty");
  then_branch.Output("ty", DType::kFloat, {}, false);
  ConvBnRelu(else_branch, m, "e_", "ey");
  else_branch.Output("ey", DType::kFloat, {}, false);
  IfModel(m, then_branch, else_branch);
  EXPECT_THAT(RunBothWaysMany(m, BothBranches(), 1e-4), ElementsAre("Greater", "If"));
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(BranchOps(**s, 1, "then_branch"), ElementsAre("FusedConv"));
  EXPECT_THAT(BranchOps(**s, 1, "else_branch"), ElementsAre("FusedConv"));
  // The graph as written is left as it was (the rewritten branches are copies).
  SessionOptions off;
  off.graph_rewrites = false;
  auto plain = m.Build(off);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(BranchOps(**plain, 1, "then_branch"), ElementsAre("Conv", "BatchNormalization", "Relu"));
}

TEST(RewriteSubgraph, NestedIfInsideLoopBody) {
  // Loop(2, x) { If(cond_in) { Conv+BN+Relu over x, the weights the model's } else { Identity(x) } }:
  // the inner branch is two levels down, reads the model's input and initializers.
  ModelBuilder m(17), body(17), inner_then(17), inner_else(17);
  ConvBnRelu(inner_then, m, "i_", "iy");
  inner_then.Output("iy", DType::kFloat, {}, false);
  inner_else.Node("Relu", {"x"}, {"ey"});  // never taken (the loop's condition stays true)
  inner_else.Output("ey", DType::kFloat, {}, false);
  body.Input("i", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("acc", DType::kFloat, {}, false);
  onnx::NodeProto& inner = body.Node("If", {"cond_in"}, {"r"});
  SetGraph(inner, "then_branch", Body(inner_then, "then"));
  SetGraph(inner, "else_branch", Body(inner_else, "else"));
  body.Node("ReduceSum", {"r"}, {"sum"});
  body.Node("Add", {"acc", "sum"}, {"acc_out"});
  body.Node("Identity", {"cond_in"}, {"cond_out"});
  body.Output("cond_out", DType::kBool, {}).Output("acc_out", DType::kFloat, {}, false);
  m.Input("x", DType::kFloat, {2, 3, 9}).Output("y", DType::kFloat, {}, false);
  m.Initializer("trips", Tensor::FromVector<int64_t>({2}, {}));
  m.Initializer("acc0", Tensor::FromVector<float>({0}, {}));
  m.Initializer("yes", Tensor::FromVector<float>({1}, {}));
  SetAttr(m.Node("Cast", {"yes"}, {"go"}), "to", int64_t(DType::kBool));
  SetGraph(m.Node("Loop", {"trips", "go", "acc0"}, {"y"}), "body", Body(body));
  const Tensor x = RandomUniform(DType::kFloat, kX, 9, -2, 2);
  RunBothWays(m, {{"x", x}}, 1e-4);
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  const Graph& loop_body = *s.value()->graph().nodes.back().attr("body")->g;
  const Attribute* then_attr = loop_body.nodes.at(0).attr("then_branch");
  ASSERT_TRUE(then_attr && then_attr->g);
  std::vector<std::string> ops;
  for (const Node& n : then_attr->g->nodes) ops.push_back(n.op_type);
  EXPECT_THAT(ops, ElementsAre("FusedConv"));
}

TEST(RewriteSubgraph, NotFusedWhereAnIntermediateIsSeen) {
  const auto runs = BothBranches();
  {
    // In a branch: the conv's output is also a branch output.
    ModelBuilder m(17), then_branch(17), else_branch(17);
    ConvBnRelu(then_branch, then_branch, "t_", "ty");
    then_branch.Output("ty", DType::kFloat, {}, false).Output("t_c", DType::kFloat, {}, false);
    ConvBnRelu(else_branch, else_branch, "e_", "ey");
    else_branch.Output("ey", DType::kFloat, {}, false).Output("e_n", DType::kFloat, {}, false);
    IfModel(m, then_branch, else_branch);
    m.graph().mutable_node(1)->add_output("y2");
    m.Output("y2", DType::kFloat, {}, false);
    RunBothWaysMany(m, runs, 1e-4);
    auto s = m.Build();
    ASSERT_TRUE(s.ok()) << s.status();
    // then: the conv's output kept, nothing fused; else: BN folded, its output kept, Relu alone.
    EXPECT_THAT(BranchOps(**s, 1, "then_branch"), ElementsAre("Conv", "BatchNormalization", "Relu"));
    EXPECT_THAT(BranchOps(**s, 1, "else_branch"), ElementsAre("Conv", "Relu"));
  }
  {
    // In the model: a branch reads the conv's output, so the outer BN is not folded into it.
    ModelBuilder m(17), then_branch(17), else_branch(17);
    ConvBnRelu(m, m, "o_", "oy");
    then_branch.Node("Identity", {"o_c"}, {"ty"});
    then_branch.Output("ty", DType::kFloat, {}, false);
    else_branch.Node("Identity", {"oy"}, {"ey"});
    else_branch.Output("ey", DType::kFloat, {}, false);
    IfModel(m, then_branch, else_branch);
    m.Output("oy", DType::kFloat, {}, false);
    EXPECT_THAT(RunBothWaysMany(m, runs, 1e-4), ElementsAre("Conv", "BatchNormalization", "Relu", "Greater", "If"));
  }
  {
    // In a branch: a nested If reads the conv's output.
    ModelBuilder m(17), then_branch(17), else_branch(17), in_then(17), in_else(17);
    ConvBnRelu(then_branch, then_branch, "t_", "ty");
    in_then.Node("Identity", {"t_c"}, {"z"});
    in_then.Output("z", DType::kFloat, {}, false);
    in_else.Node("Neg", {"t_c"}, {"z2"});
    in_else.Output("z2", DType::kFloat, {}, false);
    onnx::NodeProto& inner = then_branch.Node("If", {"cond"}, {"tz"});
    SetGraph(inner, "then_branch", Body(in_then, "in_then"));
    SetGraph(inner, "else_branch", Body(in_else, "in_else"));
    then_branch.Node("Add", {"ty", "tz"}, {"tsum"});
    then_branch.Output("tsum", DType::kFloat, {}, false);
    ConvBnRelu(else_branch, else_branch, "e_", "ey");
    else_branch.Output("ey", DType::kFloat, {}, false);
    IfModel(m, then_branch, else_branch);
    RunBothWaysMany(m, runs, 1e-4);
    auto s = m.Build();
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_THAT(BranchOps(**s, 1, "then_branch"), ElementsAre("Conv", "BatchNormalization", "Relu", "If", "Add"));
    EXPECT_THAT(BranchOps(**s, 1, "else_branch"), ElementsAre("FusedConv"));
  }
}

TEST(RewriteSubgraph, InferSubgraphTypesSeesTheOuterScope) {
  // A branch reading an outer initializer and an outer input; a Loop body
  // whose carried value grows: its input's shape is not the first iteration's.
  ModelBuilder m(17), then_branch(17), else_branch(17), body(17);
  then_branch.Node("Mul", {"x", "k"}, {"ty"});
  then_branch.Output("ty", DType::kFloat, {}, false);
  else_branch.Node("Identity", {"x"}, {"ey"});
  else_branch.Output("ey", DType::kFloat, {}, false);
  IfModel(m, then_branch, else_branch);
  m.Initializer("k", Tensor::FromVector<float>({3}, {}));
  body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("acc", DType::kFloat, {2});
  SetAttr(body.Node("Concat", {"acc", "acc"}, {"acc_out"}), "axis", int64_t(0));
  body.Node("Identity", {"c"}, {"c_out"});
  body.Output("c_out", DType::kBool, {}).Output("acc_out", DType::kFloat, {}, false);
  m.Initializer("trips", Tensor::FromVector<int64_t>({3}, {}));
  m.Initializer("acc0", Tensor::FromVector<float>({1, 2}, {2}));
  SetGraph(m.Node("Loop", {"trips", "", "acc0"}, {"grown"}), "body", Body(body));
  m.Output("grown", DType::kFloat, {}, false);
  auto g = LoadModelFromBytes(m.Serialize(), "");
  ASSERT_TRUE(g.ok()) << g.status();
  const Graph& then_g = *g->nodes[1].attr("then_branch")->g;
  const Graph& body_g = *g->nodes[2].attr("body")->g;
  auto t = InferSubgraphTypes(*g, then_g, BuiltinOps());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->types.at("x").ToString(), ValueType::Of(DType::kFloat, kX).ToString());
  EXPECT_EQ(t->types.at("ty").ToString(), ValueType::Of(DType::kFloat, kX).ToString());
  ASSERT_TRUE(t->constants.count("k"));
  EXPECT_EQ(t->constants.at("k").data<float>()[0], 3.f);
  EXPECT_FALSE(t->constants.count("x"));
  auto b = InferSubgraphTypes(*g, body_g, BuiltinOps());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->types.at("acc").has_rank());  // [2], then [4], [8]: not known before running
  EXPECT_EQ(b->types.at("acc").dtype, DType::kFloat);
  // A graph that is no subgraph of the model's.
  EXPECT_FALSE(InferSubgraphTypes(*g, *g, BuiltinOps()).ok());
}

}  // namespace
}  // namespace onnx_mini
