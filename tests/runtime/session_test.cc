// The registry, shape inference and the executor, through small models.
#include "runtime/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "runtime/registry.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(Registry, UnknownOpFailsAtCreationWithItsName) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
  m.Node("Frobnicate", {"x"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsUnimplemented(s.status()));
  EXPECT_EQ(Message(s.status()), "not implemented: ai.onnx::Frobnicate opset 17");
}

TEST(Registry, UnsupportedDtypeFailsAtCreation) {
  ModelBuilder m(17);
  m.Input("a", DType::kString, {2}).Input("b", DType::kString, {2}).Output("y", DType::kString, {2});
  m.Node("Add", {"a", "b"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(Message(s.status()), "not implemented: ai.onnx::Add opset 17 for string");
}

TEST(Inference, BroadcastContradictionNamesNodeAndShapes) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {2, 3}).Input("b", DType::kFloat, {4}).Output("y", DType::kFloat, {}, false);
  m.Node("Add", {"a", "b"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()), HasSubstr("Add node 'Add_1'"));
  EXPECT_THAT(Message(s.status()), HasSubstr("shapes [2,3] and [4] do not broadcast (dim 1: 3 vs 4)"));
}

TEST(Inference, DeclaredTypeContradictionIsAnError) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 3}).Output("y", DType::kFloat, {3, 3});
  m.Node("Identity", {"x"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()), HasSubstr("declared float[3,3] but the op produces float[2,3]"));
}

TEST(Inference, SymbolicDimsFlowAndConcreteShapesAreCheckedAtRun) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {-1, 3}).Input("b", DType::kFloat, {-1, 1}).Output("y", DType::kFloat, {}, false);
  m.Node("Mul", {"a", "b"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->outputs()[0].type.ToString(), "float[N0,3]");  // a shared symbol survives
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::FromVector<float>({10, 100}, {2, 1});
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({{"a", a}, {"b", b}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[5], 600.0f);
  Tensor bad = Tensor::FromVector<float>({1, 2, 3}, {3, 1});
  absl::StatusOr<std::vector<Tensor>> err = (*s)->Run({{"a", a}, {"b", bad}});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(Message(err.status()), HasSubstr("do not broadcast"));
  // The session stays usable after a failed run.
  EXPECT_TRUE((*s)->Run({{"a", a}, {"b", b}}).ok());
}

TEST(Inference, ReshapeElementCountMismatch) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 3}).Initializer("s", Tensor::FromVector<int64_t>({4, -1}, {2}));
  m.Output("y", DType::kFloat, {}, false);
  m.Node("Reshape", {"x", "s"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()), HasSubstr("cannot reshape float[2,3] (6 elements) to [4,-1]"));
}

// x -> Add(x, 1) -> Mul(., 2) -> y, with the nodes listed out of order.
std::unique_ptr<Session> Chain(int threads = 0) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1}).Output("y", DType::kFloat, {-1});
  m.Initializer("one", Tensor::FromVector<float>({1}, {}));
  m.Initializer("two", Tensor::FromVector<float>({2}, {}));
  m.Node("Mul", {"t", "two"}, {"y"});
  m.Node("Add", {"x", "one"}, {"t"});
  SessionOptions o;
  o.threads = threads;
  return *m.Build(o);
}

TEST(Executor, TopologicalOrderAndRepeatedRuns) {
  std::unique_ptr<Session> s = Chain();
  for (int r = 0; r < 3; ++r) {
    Tensor x = Tensor::FromVector<float>({float(r), 1}, {2});
    absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data<float>()[0], 2.0f * float(r + 1));
  }
}

TEST(Executor, BadInputsAreClearErrors) {
  std::unique_ptr<Session> s = Chain();
  EXPECT_THAT(Message(s->Run({}).status()), HasSubstr("input 'x' is missing"));
  Tensor i = Tensor::FromVector<int32_t>({1}, {1});
  EXPECT_THAT(Message(s->Run({{"x", i}}).status()), HasSubstr("input 'x' must be float, got int32"));
  Tensor f2 = Tensor::FromVector<float>({1, 2}, {1, 2});
  EXPECT_THAT(Message(s->Run({{"x", f2}}).status()), HasSubstr("must have shape float[N0], got [1,2]"));
  Tensor f = Tensor::FromVector<float>({1}, {1});
  EXPECT_THAT(Message(s->Run({{"x", f}, {"z", f}}).status()), HasSubstr("'z' is not an input"));
}

TEST(Executor, ConcurrentRunsOnOneSession) {
  std::unique_ptr<Session> s = Chain(1);
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        std::vector<float> v(1000, float(t));
        Tensor x = Tensor::FromVector(v, {1000});
        absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", x}});
        if (!out.ok() || (*out)[0].data<float>()[999] != 2.0f * float(t + 1)) return;
      }
      ok[size_t(t)] = 1;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(ok[size_t(t)], 1) << t;
}

TEST(Executor, WritesIntoCallerBuffersAndBorrowsInputs) {
  std::unique_ptr<Session> s = Chain();
  float in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {3}, out)};
  ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {3}, in)}}, &outputs).ok());
  EXPECT_EQ(out[2], 8.0f);
  EXPECT_EQ(outputs[0].raw(), static_cast<void*>(out));
  EXPECT_EQ(in[0], 1.0f);  // the input is untouched
  // The output buffer may be the input's own memory.
  outputs = {Tensor::Borrow(DType::kFloat, {3}, in)};
  ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {3}, in)}}, &outputs).ok());
  EXPECT_EQ(in[0], 4.0f);
  EXPECT_EQ(in[2], 8.0f);
  // A caller buffer of the wrong shape is rejected before anything is written.
  float small[2] = {-1, -1};
  outputs = {Tensor::Borrow(DType::kFloat, {2}, small)};
  absl::Status bad = s->Run({{"x", Tensor::Borrow(DType::kFloat, {3}, in)}}, &outputs);
  EXPECT_THAT(Message(bad), HasSubstr("caller's buffer is float[2]"));
  EXPECT_EQ(small[0], -1.0f);
}

TEST(Executor, IntermediateBuffersAreReusedInPlace) {
  // t = x + 1 is an intermediate whose last use is Mul: Mul writes into it.
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {4}).Output("y", DType::kFloat, {4}).Output("x_out", DType::kFloat, {4});
  m.Initializer("one", Tensor::FromVector<float>({1}, {}));
  m.Node("Add", {"x", "one"}, {"t"});
  m.Node("Mul", {"t", "t"}, {"u"});
  m.Node("Add", {"u", "one"}, {"y"});
  m.Node("Identity", {"x"}, {"x_out"});
  std::unique_ptr<Session> s = *m.Build();
  Tensor x = Tensor::FromVector<float>({0, 1, 2, 3}, {4});
  absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[3], 17.0f);
  // A graph output that is a view of the caller's input comes back as a copy.
  EXPECT_NE((*out)[1].raw(), x.raw());
  EXPECT_EQ((*out)[1].data<float>()[3], 3.0f);
}

TEST(Executor, OptionalInputsAndConstantFolding) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 3}).Output("y", DType::kFloat, {3, 2});
  onnx::NodeProto& c = m.Node("Constant", {}, {"shape"});
  SetAttr(c, "value", Tensor::FromVector<int64_t>({3, 2}, {2}));
  m.Node("Reshape", {"x", "shape"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  // The folded Constant let inference find the exact output shape.
  EXPECT_EQ((*s)->outputs()[0].type.ToString(), "float[3,2]");
}

TEST(Executor, CyclesAndDanglingInputsAreErrors) {
  ModelBuilder cycle(17);
  cycle.Input("x", DType::kFloat, {1}).Output("y", DType::kFloat, {1});
  cycle.Node("Add", {"x", "b"}, {"a"});
  cycle.Node("Add", {"x", "a"}, {"b"});
  cycle.Node("Identity", {"a"}, {"y"});
  EXPECT_THAT(Message(cycle.Build().status()), HasSubstr("cycle"));
  ModelBuilder dangling(17);
  dangling.Input("x", DType::kFloat, {1}).Output("y", DType::kFloat, {1});
  dangling.Node("Add", {"x", "nowhere"}, {"y"});
  EXPECT_THAT(Message(dangling.Build().status()), HasSubstr("input 'nowhere' is not a graph input"));
}

TEST(Executor, IntegerDivisionByZeroIsAnErrorNotACrash) {
  ModelBuilder m(17);
  m.Input("a", DType::kInt32, {2}).Input("b", DType::kInt32, {2}).Output("y", DType::kInt32, {2});
  m.Node("Div", {"a", "b"}, {"y"});
  std::unique_ptr<Session> s = *m.Build();
  Tensor a = Tensor::FromVector<int32_t>({7, INT32_MIN}, {2});
  Tensor ok = Tensor::FromVector<int32_t>({-2, -1}, {2});
  absl::StatusOr<std::vector<Tensor>> out = s->Run({{"a", a}, {"b", ok}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].data<int32_t>()[0], -3);  // truncates toward zero
  EXPECT_EQ((*out)[0].data<int32_t>()[1], INT32_MIN);  // wraps, no trap
  Tensor zero = Tensor::FromVector<int32_t>({1, 0}, {2});
  EXPECT_THAT(Message(s->Run({{"a", a}, {"b", zero}}).status()), HasSubstr("division by zero"));
}

}  // namespace
}  // namespace onnx_mini
