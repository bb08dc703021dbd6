// The registry, shape inference and the executor, through small models.
#include "runtime/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <thread>

#include "runtime/element.h"
#include "runtime/loader.h"
#include "runtime/registry.h"
#include "runtime/sanitizers.h"
#include "tests/ops/graph_util.h"
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

TEST(Session, ProfileTimesEachOpTypeOverTheRuns) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {2, 3}).Output("y", DType::kFloat, {}, false);
  m.Node("Relu", {"a"}, {"r"});
  m.Node("Mul", {"r", "r"}, {"y"});
  SessionOptions profiled;
  profiled.profile = true;
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build(profiled), plain = m.Build();
  ASSERT_TRUE(s.ok() && plain.ok());
  EXPECT_EQ((*s)->Profile(), "");  // no run yet
  Tensor a = Tensor::FromVector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  for (int r = 0; r < 3; ++r) ASSERT_TRUE((*s)->Run({{"a", a}}).ok());
  ASSERT_TRUE((*plain)->Run({{"a", a}}).ok());
  const std::string table = (*s)->Profile();
  EXPECT_THAT(table, HasSubstr("over 3 runs"));
  EXPECT_THAT(table, HasSubstr("Relu"));
  EXPECT_THAT(table, HasSubstr("Mul"));
  EXPECT_THAT(table, HasSubstr("all nodes"));
  EXPECT_EQ((*plain)->Profile(), "");  // not asked for
  (*s)->ResetProfile();
  EXPECT_EQ((*s)->Profile(), "");
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

// A declared scalar fed as a one-element tensor of shape [1] (as onnxruntime
// takes it: the JS front ends of silero VAD feed `sr` so) runs as the scalar;
// only [1], only for rank 0.
TEST(Executor, ADeclaredScalarGivenAsShapeOneRunsAsGiven) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3}).Input("s", DType::kFloat, {}).Input("v", DType::kFloat, {1});
  m.Output("y", DType::kFloat, {3}).Output("id", DType::kFloat, {}).Output("w", DType::kFloat, {1});
  m.Node("Mul", {"x", "s"}, {"y"});
  m.Node("Identity", {"s"}, {"id"});
  m.Node("Identity", {"v"}, {"w"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  const Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3});
  const Tensor one = Tensor::FromVector<float>({4}, {1});
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({{"x", x}, {"s", one}, {"v", one}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3}));
  EXPECT_EQ((*out)[0].data<float>()[2], 12.0f);
  // As given, as onnxruntime 1.30 returns it (it warns that {} was expected).
  EXPECT_EQ((*out)[1].shape(), Shape({1}));
  EXPECT_EQ((*out)[1].data<float>()[0], 4.0f);
  // A caller's buffer of the shape onnxruntime gives is taken.
  std::vector<Tensor> bound(3);
  bound[1] = Tensor::FromVector<float>({0}, {1});
  ASSERT_TRUE((*s)->Run({{"x", x}, {"s", one}, {"v", one}}, &bound).ok());
  EXPECT_EQ(bound[1].data<float>()[0], 4.0f);
  EXPECT_EQ(bound[0].data<float>()[1], 8.0f);
  // A declared scalar given as a scalar stays one.
  out = (*s)->Run({{"x", x}, {"s", Tensor::FromVector<float>({5}, {})}, {"v", one}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), Shape{});
  EXPECT_EQ((*out)[0].data<float>()[2], 15.0f);
  // RunValues too.
  std::vector<Value> values;
  ASSERT_TRUE((*s)->RunValues({{"x", x}, {"s", one}, {"v", one}}, &values).ok());
  EXPECT_EQ(values[1].tensor().shape(), Shape({1}));
  EXPECT_EQ(values[0].tensor().data<float>()[1], 8.0f);
  // Any other shape for the scalar, and a scalar for a declared [1], are refused.
  const Tensor two = Tensor::FromVector<float>({4, 4}, {2});
  const Tensor one_one = Tensor::FromVector<float>({4}, {1, 1});
  const Tensor scalar = Tensor::FromVector<float>({4}, {});
  EXPECT_THAT(Message((*s)->Run({{"x", x}, {"s", two}, {"v", one}}).status()),
              HasSubstr("input 's' must have shape float[], got [2]"));
  EXPECT_THAT(Message((*s)->Run({{"x", x}, {"s", one_one}, {"v", one}}).status()),
              HasSubstr("input 's' must have shape float[], got [1,1]"));
  EXPECT_THAT(Message((*s)->Run({{"x", x}, {"s", scalar}, {"v", scalar}}).status()),
              HasSubstr("input 'v' must have shape float[1], got []"));
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

// A small result of a constant larger than the folding limit folds too (the
// Slices exporters put between a weight and its LSTM): here the Slice's value
// reaches Reshape's inference at creation.
TEST(Executor, ASmallSliceOfALargeConstantIsFolded) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 3}).Output("y", DType::kFloat, {}, false);
  std::vector<int64_t> big(70000, 7);
  big[0] = 3;
  big[1] = 2;
  SetAttr(m.Node("Constant", {}, {"big"}), "value", Tensor::FromVector<int64_t>(big, {70000}));
  SetAttr(m.Node("Constant", {}, {"starts"}), "value", Tensor::FromVector<int64_t>({0}, {1}));
  SetAttr(m.Node("Constant", {}, {"ends"}), "value", Tensor::FromVector<int64_t>({2}, {1}));
  m.Node("Slice", {"big", "starts", "ends"}, {"shape"});
  m.Node("Reshape", {"x", "shape"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->outputs()[0].type.ToString(), "float[3,2]");
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 2}));
  EXPECT_EQ((*out)[0].data<float>()[5], 6.0f);
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

TEST(Signature, ArityAndSharedTypesAreCheckedFromTheRow) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {2}).Input("b", DType::kFloat, {2}).Input("c", DType::kFloat, {2});
  m.Output("y", DType::kFloat, {2});
  m.Node("Add", {"a", "b", "c"}, {"y"});
  EXPECT_THAT(Message(m.Build().status()), HasSubstr("Add node 'Add_1': takes 2 inputs, got 3"));
  ModelBuilder w(17);
  w.Input("c", DType::kFloat, {2}).Input("x", DType::kFloat, {2}).Input("y", DType::kFloat, {2});
  w.Output("z", DType::kFloat, {2});
  w.Node("Where", {"c", "x", "y"}, {"z"});
  EXPECT_EQ(Message(w.Build().status()), "not implemented: ai.onnx::Where opset 17 for float");
}

// The review's repro: output A of Neg(X) bound to X's memory while a later
// step B = Sub(X, 1) still reads X. B must see the original X.
TEST(Plan, BoundOutputOverAnInputReadLaterIsCopiedAtTheEnd) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {4}).Output("a", DType::kFloat, {4}).Output("b", DType::kFloat, {4});
  m.Initializer("one", Tensor::FromVector<float>({1}, {}));
  m.Node("Neg", {"x"}, {"a"});
  m.Node("Sub", {"x", "one"}, {"b"});
  std::unique_ptr<Session> s = *m.Build();
  float x[4] = {1, 2, 3, 4};
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {4}, x), Tensor()};
  ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {4}, x)}}, &outputs).ok());
  const float* b = outputs[1].data<float>();
  EXPECT_EQ(b[0], 0.0f);
  EXPECT_EQ(b[3], 3.0f);
  EXPECT_EQ(x[0], -1.0f);  // A landed in the caller's buffer after the last reader
  EXPECT_EQ(x[3], -4.0f);
}

TEST(Plan, BoundOutputOverItsOwnInputIsUpdatedInPlaceWhenNothingReadsItLater) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3}).Output("a", DType::kFloat, {3});
  m.Node("Neg", {"x"}, {"a"});
  std::unique_ptr<Session> s = *m.Build();
  float x[3] = {1, 2, 3};
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {3}, x)};
  ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {3}, x)}}, &outputs).ok());
  EXPECT_EQ(outputs[0].raw(), static_cast<void*>(x));
  EXPECT_EQ(x[0], -1.0f);
  EXPECT_EQ(x[2], -3.0f);
  // Partly overlapping the input is never in place: computed elsewhere, then copied.
  float y[4] = {1, 2, 3, 4};
  outputs = {Tensor::Borrow(DType::kFloat, {3}, y + 1)};
  ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {3}, y)}}, &outputs).ok());
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[3], -3.0f);
}

TEST(Plan, InPlaceNeverTakesStorageAViewStillReads) {
  // z views y; Neg(y) is y's last direct use, but z is read after it.
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {4}).Output("w", DType::kFloat, {4}).Output("v", DType::kFloat, {2, 2});
  m.Initializer("shape", Tensor::FromVector<int64_t>({2, 2}, {2}));
  m.Initializer("one", Tensor::FromVector<float>({1}, {}));
  m.Node("Add", {"x", "x"}, {"y"});
  m.Node("Reshape", {"y", "shape"}, {"z"});
  m.Node("Neg", {"y"}, {"w"});
  m.Node("Sub", {"z", "one"}, {"v"});
  std::unique_ptr<Session> s = *m.Build();
  absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", Tensor::FromVector<float>({1, 2, 3, 4}, {4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[3], -8.0f);
  EXPECT_EQ((*out)[1].data<float>()[0], 1.0f);
  EXPECT_EQ((*out)[1].data<float>()[3], 7.0f);
}

TEST(Plan, DynamicShapesAreInferredPerRun) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1, 3}).Output("y", DType::kFloat, {}, false);
  m.Node("Transpose", {"x"}, {"t"});
  m.Node("Neg", {"t"}, {"y"});
  std::unique_ptr<Session> s = *m.Build();
  for (int64_t n : {2, 5, 1}) {
    std::vector<float> v;
    for (int64_t i = 0; i < n * 3; ++i) v.push_back(float(i));
    absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", Tensor::FromVector<float>(v, {n, 3})}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (Shape{3, n}));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < n; ++j) EXPECT_EQ((*out)[0].data<float>()[i * n + j], -v[size_t(j * 3 + i)]);
  }
}

// A run reuses the last run's plan of a step whose inputs have the same
// shapes (and, for values Infer reads, the same bytes); anything else infers
// again. The profile counts both.
TEST(Plan, RunTimePlansAreReusedWhileShapesAndReadValuesRepeat) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1, 3}).Input("shape", DType::kInt64, {2}).Output("y", DType::kFloat, {}, false);
  m.Node("Transpose", {"x"}, {"t"});
  m.Node("Reshape", {"t", "shape"}, {"r"});  // reads the shape's values
  m.Node("Neg", {"r"}, {"y"});
  SessionOptions profiled;
  profiled.profile = true;
  std::unique_ptr<Session> s = *m.Build(profiled);
  const auto run = [&](int64_t n, std::vector<int64_t> shape) {
    std::vector<float> v;
    for (int64_t i = 0; i < n * 3; ++i) v.push_back(float(i));
    return s->Run({{"x", Tensor::FromVector<float>(v, {n, 3})}, {"shape", Tensor::FromVector<int64_t>(shape, {2})}});
  };
  const auto counts = [&] {
    const std::string p = s->Profile();
    const size_t at = p.find("nodes re-inferred per run: ");
    return at == std::string::npos ? std::string("none") : p.substr(at, p.find('\n', at) - at);
  };
  // Three steps planned at the first run; the second reuses all three.
  for (int r = 0; r < 2; ++r) {
    absl::StatusOr<std::vector<Tensor>> out = run(2, {3, 2});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (Shape{3, 2}));
    EXPECT_EQ((*out)[0].data<float>()[1], -3.0f);  // t[0][1] = x[1][0]
  }
  EXPECT_EQ(counts(), "nodes re-inferred per run: 1.5 (run-time plans reused: 1.5)");
  // The same shapes, other shape values: Reshape and Neg infer again, Transpose does not.
  s->ResetProfile();
  absl::StatusOr<std::vector<Tensor>> out = run(2, {2, 3});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(counts(), "nodes re-inferred per run: 2.0 (run-time plans reused: 1.0)");
  // A bad value after a reused plan is still an error, and the session stays usable.
  absl::StatusOr<std::vector<Tensor>> bad = run(2, {4, 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("Reshape"));
  // Another row count: every step infers.
  s->ResetProfile();
  out = run(4, {3, 4});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 4}));
  EXPECT_EQ((*out)[0].data<float>()[5], -4.0f);  // t[1][1] = x[1][1] = 4
  EXPECT_EQ(counts(), "nodes re-inferred per run: 3.0 (run-time plans reused: 0.0)");
  out = run(2, {3, 2});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 2}));
}

TEST(Plan, AnOutputThatCannotBeAllocatedIsAnErrorAndTheSessionStaysUsable) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {-1, 1}).Input("b", DType::kFloat, {1, -1}).Output("y", DType::kFloat, {}, false);
  m.Node("Add", {"a", "b"}, {"y"});
  std::unique_ptr<Session> s = *m.Build();
  // 300000 x 300000 floats (360 GB) is under the size limit but cannot be allocated
  // here; the address-space limit makes sure of it (not under ASan, whose
  // shadow memory needs the address space; there the kernel's overcommit check refuses).
#ifndef ONNX_MINI_ASAN
  rlimit saved{};
  getrlimit(RLIMIT_AS, &saved);
  rlimit tight = saved;
  tight.rlim_cur = rlim_t(64) << 30;
  setrlimit(RLIMIT_AS, &tight);
#endif
  absl::StatusOr<std::vector<Tensor>> big = s->Run({{"a", Tensor::Zeros(DType::kFloat, {300000, 1})},
                                                     {"b", Tensor::Zeros(DType::kFloat, {1, 300000})}});
#ifndef ONNX_MINI_ASAN
  setrlimit(RLIMIT_AS, &saved);
#endif
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  EXPECT_THAT(Message(big.status()), HasSubstr("out of memory"));
  absl::StatusOr<std::vector<Tensor>> small = s->Run({{"a", Tensor::FromVector<float>({1, 2}, {2, 1})},
                                                       {"b", Tensor::FromVector<float>({10, 20}, {1, 2})}});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ((*small)[0].data<float>()[3], 22.0f);
}

TEST(Tensor, StorageBytesNeverOverflows) {
  EXPECT_EQ(StorageBytes(DType::kInt4, 5), 3u);
  EXPECT_EQ(StorageBytes(DType::kUInt2, 9), 3u);
  EXPECT_EQ(StorageBytes(DType::kInt4, INT64_MAX), size_t(INT64_MAX) / 2 + 1);
  EXPECT_EQ(StorageBytes(DType::kComplex128, INT64_MAX), SIZE_MAX);
  EXPECT_EQ(StorageBytes(DType::kFloat, -3), 0u);
}

TEST(Plan, AnUnrequestedRequiredOutputGetsAScratchBuffer) {
  // LayerNormalization's Y is required; with its name left empty the kernel
  // still writes it (into scratch), and the requested Mean comes out right.
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 2}).Input("s", DType::kFloat, {2}).Output("mean", DType::kFloat, {}, false);
  m.Node("LayerNormalization", {"x", "s"}, {"", "mean"});
  std::unique_ptr<Session> s = *m.Build();
  absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", Tensor::FromVector<float>({1, 3, 5, 9}, {2, 2})},
                                                     {"s", Tensor::FromVector<float>({1, 1}, {2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[0], 2.0f);
  EXPECT_EQ((*out)[0].data<float>()[1], 7.0f);
  // A node whose only output is unnamed runs harmlessly.
  ModelBuilder n(17);
  n.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
  n.Node("Neg", {"x"}, {""});
  n.Node("Abs", {"x"}, {"y"});
  absl::StatusOr<std::vector<Tensor>> y = (*n.Build())->Run({{"x", Tensor::FromVector<float>({-1, 2}, {2})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->at(0).data<float>()[0], 1.0f);
}

TEST(Plan, AValueListedTwiceAsAGraphOutputFillsBothCallerBuffers) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
  m.Node("Neg", {"x"}, {"y"});
  std::unique_ptr<Session> s = *m.Build();
  float a[2] = {0, 0}, b[2] = {0, 0};
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {2}, a), Tensor::Borrow(DType::kFloat, {2}, b)};
  ASSERT_TRUE(s->Run({{"x", Tensor::FromVector<float>({1, 2}, {2})}}, &outputs).ok());
  EXPECT_EQ(a[1], -2.0f);
  EXPECT_EQ(b[1], -2.0f);
}

// ---- Bound outputs that alias inputs or each other (issue #23) ----

// y2 = Neg(x) bound to x's own memory beside y1 = Identity(x), a view of x:
// y1 is x from before the run whatever the order of the graph's outputs
// (the bound output used to be written before the view was copied out).
TEST(Alias, AViewOfAnInputIsReadBeforeABoundOutputOverwritesTheInput) {
  for (bool neg_first : {true, false}) {
    ModelBuilder m(17);
    m.Input("x", DType::kFloat, {4});
    if (neg_first) m.Output("y2", DType::kFloat, {4}).Output("y1", DType::kFloat, {4});
    else m.Output("y1", DType::kFloat, {4}).Output("y2", DType::kFloat, {4});
    m.Node("Neg", {"x"}, {"y2"});
    m.Node("Identity", {"x"}, {"y1"});
    std::unique_ptr<Session> s = *m.Build();
    float x[4] = {1, 2, 3, 4};
    const size_t neg = neg_first ? 0 : 1;
    std::vector<Tensor> outputs(2);
    outputs[neg] = Tensor::Borrow(DType::kFloat, {4}, x);
    ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {4}, x)}}, &outputs).ok());
    const Tensor& y1 = outputs[1 - neg];
    EXPECT_NE(y1.raw(), static_cast<void*>(x));
    EXPECT_EQ(std::vector<float>(y1.data<float>(), y1.data<float>() + 4), (std::vector<float>{1, 2, 3, 4}))
        << "neg first: " << neg_first;
    EXPECT_EQ(std::vector<float>(x, x + 4), (std::vector<float>{-1, -2, -3, -4}));
    // Bound too: y1 into its own buffer, the same answer.
    float x2[4] = {1, 2, 3, 4}, b1[4] = {0, 0, 0, 0};
    outputs.assign(2, Tensor());
    outputs[neg] = Tensor::Borrow(DType::kFloat, {4}, x2);
    outputs[1 - neg] = Tensor::Borrow(DType::kFloat, {4}, b1);
    ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {4}, x2)}}, &outputs).ok());
    EXPECT_EQ(std::vector<float>(b1, b1 + 4), (std::vector<float>{1, 2, 3, 4})) << "neg first: " << neg_first;
    EXPECT_EQ(std::vector<float>(x2, x2 + 4), (std::vector<float>{-1, -2, -3, -4}));
  }
}

// The same with a KV cache: Flatten(past) beside TensorScatter's present
// bound to past.
TEST(Alias, AViewOfTheCacheIsReadBeforeTheBoundPresentOverwritesIt) {
  ModelBuilder m(24, 10);
  m.Input("past", DType::kFloat, {1, 3, 2}).Input("update", DType::kFloat, {1, 1, 2});
  m.Input("write_indices", DType::kInt64, {1});
  m.Output("present", DType::kFloat, {1, 3, 2}).Output("flat", DType::kFloat, {1, 6});
  SetAttr(m.Node("TensorScatter", {"past", "update", "write_indices"}, {"present"}), "axis", int64_t(1));
  m.Node("Flatten", {"past"}, {"flat"});
  std::unique_ptr<Session> s = *m.Build();
  float past[6] = {1, 2, 3, 4, 5, 6};
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {1, 3, 2}, past), Tensor()};
  absl::Status st = s->Run({{"past", Tensor::Borrow(DType::kFloat, {1, 3, 2}, past)},
                            {"update", Tensor::FromVector<float>({70, 80}, {1, 1, 2})},
                            {"write_indices", Tensor::FromVector<int64_t>({1}, {1})}},
                           &outputs);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(std::vector<float>(past, past + 6), (std::vector<float>{1, 2, 70, 80, 5, 6}));
  const float* flat = outputs[1].data<float>();
  EXPECT_EQ(std::vector<float>(flat, flat + 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// A subgraph's output is the outer input itself (If then Identity(x)): its
// value is read before the bound Neg(x) overwrites x.
TEST(Alias, AnIfOutputOverAnInputIsReadBeforeABoundOutputOverwritesIt) {
  ModelBuilder then_b(17), else_b(17);
  then_b.Node("Identity", {"x"}, {"t"});
  then_b.Output("t", DType::kFloat, {3});
  else_b.Node("Abs", {"x"}, {"e"});
  else_b.Output("e", DType::kFloat, {3});
  ModelBuilder m(17);
  m.Input("c", DType::kBool, {}).Input("x", DType::kFloat, {3});
  m.Output("n", DType::kFloat, {3}).Output("y", DType::kFloat, {3});
  m.Node("Neg", {"x"}, {"n"});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"y"});
  SetGraph(n, "then_branch", Body(then_b, "then"));
  SetGraph(n, "else_branch", Body(else_b, "else"));
  std::unique_ptr<Session> s = *m.Build();
  float x[3] = {1, -2, 3};
  bool c = true;
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {3}, x), Tensor()};
  ASSERT_TRUE(s->Run({{"c", Tensor::Borrow(DType::kBool, {}, &c)}, {"x", Tensor::Borrow(DType::kFloat, {3}, x)}},
                     &outputs)
                  .ok());
  EXPECT_EQ(std::vector<float>(x, x + 3), (std::vector<float>{-1, 2, -3}));
  const float* y = outputs[1].data<float>();
  EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{1, -2, 3}));
}

// A bound output over the input's allocation shifted by one element: the
// result is moved in (as memmove), on 2 threads over 4 MiB (split copies
// used to read elements already overwritten; ASan: memcpy-param-overlap).
TEST(Alias, ABoundOutputOverlappingAnInputAtAnOffsetGetsTheRightValues) {
  constexpr int64_t n = int64_t(1) << 20;
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {n}).Output("y", DType::kFloat, {n}).Output("z", DType::kFloat, {n});
  m.Node("Identity", {"x"}, {"y"});
  m.Node("Neg", {"x"}, {"z"});
  SessionOptions options;
  options.threads = 2;
  std::unique_ptr<Session> s = *m.Build(options);
  for (int shift : {1, -1}) {
    std::vector<float> memory(size_t(n) + 1);
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = float(i);
    float* x = memory.data() + (shift < 0 ? 1 : 0);
    float* y = x + shift;
    for (const char* bind : {"y", "z"}) {
      std::vector<float> before(x, x + n);
      std::vector<Tensor> outputs(2);
      outputs[bind[0] == 'y' ? 0 : 1] = Tensor::Borrow(DType::kFloat, {n}, y);
      ASSERT_TRUE(s->Run({{"x", Tensor::Borrow(DType::kFloat, {n}, x)}}, &outputs).ok());
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += y[i] != (bind[0] == 'y' ? before[size_t(i)] : -before[size_t(i)]);
      EXPECT_EQ(wrong, 0) << "shift " << shift << ", bound " << bind;
      // The unbound output saw x from before the move too.
      const Tensor& other = outputs[bind[0] == 'y' ? 1 : 0];
      EXPECT_EQ(other.data<float>()[n - 1], bind[0] == 'y' ? -before[size_t(n - 1)] : before[size_t(n - 1)]);
      for (size_t i = 0; i < memory.size(); ++i) memory[i] = float(i);
    }
  }
}

TEST(Alias, CopyElementsMovesOverlappingRanges) {
  constexpr int64_t n = int64_t(1) << 20;
  for (int shift : {1, -1, 1000, -70000}) {
    std::vector<int32_t> memory(size_t(n) + 70000);
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = int32_t(i);
    int32_t* src = memory.data() + 70000 * (shift < 0);
    const std::vector<int32_t> before(src, src + n);
    Tensor from = Tensor::Borrow(DType::kInt32, {n}, src), to = Tensor::Borrow(DType::kInt32, {n}, src + shift);
    CopyElements(from, to, 2);
    EXPECT_TRUE(std::equal(before.begin(), before.end(), src + shift)) << shift;
  }
}

// Two bound outputs over the same memory (y1 = Relu(x), y2 = Transpose(y1)):
// no buffer can hold both, so the run is refused, naming both, before
// anything is written.
TEST(Alias, BoundOutputsOverlappingEachOtherAreRefused) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 3}).Output("y1", DType::kFloat, {2, 3}).Output("y2", DType::kFloat, {3, 2});
  m.Node("Relu", {"x"}, {"y1"});
  m.Node("Transpose", {"y1"}, {"y2"});
  std::unique_ptr<Session> s = *m.Build();
  const Tensor x = Tensor::FromVector<float>({-1, 2, -3, 4, -5, 6}, {2, 3});
  float buffer[7] = {9, 9, 9, 9, 9, 9, 9};
  for (int offset : {0, 1}) {
    std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {2, 3}, buffer),
                                   Tensor::Borrow(DType::kFloat, {3, 2}, buffer + offset)};
    absl::Status st = s->Run({{"x", x}}, &outputs);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
    EXPECT_THAT(Message(st), HasSubstr("outputs 'y1' and 'y2' are bound to overlapping memory"));
    EXPECT_EQ(buffer[0], 9.0f);
    EXPECT_EQ(buffer[6], 9.0f);
  }
  // Side by side is fine.
  float a[6], b[6];
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {2, 3}, a), Tensor::Borrow(DType::kFloat, {3, 2}, b)};
  ASSERT_TRUE(s->Run({{"x", x}}, &outputs).ok());
  EXPECT_EQ(std::vector<float>(b, b + 6), (std::vector<float>{0, 4, 2, 0, 0, 6}));
}

TEST(Alias, MisalignedMemoryIsRefused) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
  m.Node("Neg", {"x"}, {"y"});
  std::unique_ptr<Session> s = *m.Build();
  alignas(8) char memory[16] = {};
  std::vector<Tensor> outputs;
  absl::Status st = s->Run({{"x", Tensor::Borrow(DType::kFloat, {2}, memory + 1)}}, &outputs);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_THAT(Message(st), HasSubstr("input 'x': its memory at"));
  EXPECT_THAT(Message(st), HasSubstr("is not aligned to 4 bytes, as float needs"));
  outputs = {Tensor::Borrow(DType::kFloat, {2}, memory + 2)};
  st = s->Run({{"x", Tensor::FromVector<float>({1, 2}, {2})}}, &outputs);
  EXPECT_THAT(Message(st), HasSubstr("output 'y': the caller's buffer: its memory at"));
}

// ---- bool memory with bytes other than 0 and 1 (issue #23) ----

// Any nonzero byte is true: the ops see the normalized mask, the caller's
// memory is left as it was.
TEST(BoolBytes, InputsAreNormalizedForEveryOp) {
  ModelBuilder m(17);
  m.Input("b", DType::kBool, {5});
  m.Output("not", DType::kBool, {5}).Output("eq", DType::kBool, {5}).Output("f", DType::kFloat, {5});
  m.Output("nz", DType::kInt64, {1, -1});
  m.Initializer("t", Tensor::FromVector<bool>({true}, {}));
  m.Node("Not", {"b"}, {"not"});
  m.Node("Equal", {"b", "t"}, {"eq"});
  SetAttr(m.Node("Cast", {"b"}, {"f"}), "to", int64_t(DType::kFloat));
  m.Node("NonZero", {"b"}, {"nz"});
  std::unique_ptr<Session> s = *m.Build();
  uint8_t bytes[5] = {0, 255, 2, 0, 1};
  const Tensor b = Tensor::Borrow(DType::kBool, {5}, bytes);
  for (bool as_values : {false, true}) {
    std::vector<Tensor> out;
    if (as_values) {
      std::vector<Value> values;
      ASSERT_TRUE(s->RunValues({{"b", b}}, &values).ok());
      for (const Value& v : values) out.push_back(v.tensor());
    } else {
      absl::StatusOr<std::vector<Tensor>> r = s->Run({{"b", b}});
      ASSERT_TRUE(r.ok()) << r.status();
      out = *r;
    }
    const uint8_t* no = static_cast<const uint8_t*>(out[0].raw());
    EXPECT_EQ(std::vector<uint8_t>(no, no + 5), (std::vector<uint8_t>{1, 0, 0, 1, 0}));
    const uint8_t* eq = static_cast<const uint8_t*>(out[1].raw());
    EXPECT_EQ(std::vector<uint8_t>(eq, eq + 5), (std::vector<uint8_t>{0, 1, 1, 0, 1}));
    EXPECT_EQ(std::vector<float>(out[2].data<float>(), out[2].data<float>() + 5),
              (std::vector<float>{0, 1, 1, 0, 1}));
    EXPECT_EQ(out[3].shape(), (Shape{1, 3}));
    EXPECT_EQ(std::vector<int64_t>(out[3].data<int64_t>(), out[3].data<int64_t>() + 3),
              (std::vector<int64_t>{1, 2, 4}));
  }
  EXPECT_EQ(std::vector<uint8_t>(bytes, bytes + 5), (std::vector<uint8_t>{0, 255, 2, 0, 1}));
  // Not bound to the mask's own memory: the result lands there, normalized.
  std::vector<Tensor> outputs = {b, Tensor(), Tensor(), Tensor()};
  ASSERT_TRUE(s->Run({{"b", b}}, &outputs).ok());
  EXPECT_EQ(std::vector<uint8_t>(bytes, bytes + 5), (std::vector<uint8_t>{1, 0, 0, 1, 0}));
  EXPECT_EQ(outputs[3].shape(), (Shape{1, 3}));  // NonZero read the mask from before
}

TEST(BoolBytes, SequenceItemsAreNormalized) {
  // A sequence input: Not of its second item.
  ModelBuilder q(17);
  onnx::ValueInfoProto* in = q.graph().add_input();
  in->set_name("seq");
  onnx::TypeProto::Tensor* t = in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
  t->set_elem_type(int32_t(DType::kBool));
  t->mutable_shape()->add_dim()->set_dim_value(3);
  q.Output("not", DType::kBool, {3});
  q.Initializer("one", Tensor::FromVector<int64_t>({1}, {}));
  q.Node("SequenceAt", {"seq", "one"}, {"item"});
  q.Node("Not", {"item"}, {"not"});
  std::unique_ptr<Session> s = *q.Build();
  uint8_t first[3] = {0, 0, 0}, second[3] = {7, 0, 128};
  std::vector<Value> out;
  absl::Status st = s->RunValues({{"seq", Seq({Tensor::Borrow(DType::kBool, {3}, first),
                                                Tensor::Borrow(DType::kBool, {3}, second)})}},
                                 &out);
  ASSERT_TRUE(st.ok()) << st;
  const uint8_t* no = static_cast<const uint8_t*>(out[0].tensor().raw());
  EXPECT_EQ(std::vector<uint8_t>(no, no + 3), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(second[0], 7);
}

// ---- Many outputs: names are looked up, not scanned (issue #23) ----

// 20,000 outputs, each Identity(x) or Neg(x), some bound: session creation
// and runs are linear in the outputs (this took seconds when each output's
// name was compared with every other's).
TEST(ManyOutputs, EveryOutputIsRightAndBoundOnesAreWritten) {
  constexpr int kOutputs = 20000;
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2});
  for (int i = 0; i < kOutputs; ++i) {
    const std::string name = "y" + std::to_string(i);
    m.Output(name, DType::kFloat, {2});
    m.Node(i % 2 ? "Neg" : "Identity", {"x"}, {name});
  }
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<float> bound(2 * kOutputs / 10, -7.0f);
  std::vector<Tensor> outputs(kOutputs);
  for (int i = 0; i < kOutputs; i += 10) outputs[size_t(i)] = Tensor::Borrow(DType::kFloat, {2}, &bound[size_t(i / 5)]);
  ASSERT_TRUE((*s)->Run({{"x", Tensor::FromVector<float>({3, -4}, {2})}}, &outputs).ok());
  for (int i = 0; i < kOutputs; ++i) {
    const float sign = i % 2 ? -1.0f : 1.0f;
    ASSERT_EQ(outputs[size_t(i)].data<float>()[0], 3 * sign) << i;
    ASSERT_EQ(outputs[size_t(i)].data<float>()[1], -4 * sign) << i;
  }
  EXPECT_EQ(bound[0], 3.0f);
  EXPECT_EQ(bound.back(), -4.0f);
}

// ---- Hostile sizes: every case is a clear error naming the node, never a crash ----

TEST(Limits, ExpandToAHugeShapeIsAnErrorNamingTheNode) {
  // [1e5, 1e5] floats (40 GB) used to leave an undefined output that the
  // kernel then wrote through (SIGSEGV), alone or feeding a Transpose.
  for (bool transpose : {false, true}) {
    ModelBuilder m(17);
    m.Input("x", DType::kFloat, {1}).Initializer("shape", Tensor::FromVector<int64_t>({100000, 100000}, {2}));
    m.Output("y", DType::kFloat, {}, false);
    m.Node("Expand", {"x", "shape"}, {transpose ? "e" : "y"}).set_name("big");
    if (transpose) m.Node("Transpose", {"e"}, {"y"});
    absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({{"x", Tensor::FromVector<float>({1}, {1})}});
    ASSERT_FALSE(out.ok());
    EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << out.status();
    EXPECT_THAT(Message(out.status()), HasSubstr("'big'"));
    EXPECT_THAT(Message(out.status()), HasSubstr("[100000,100000]"));
  }
}

TEST(Limits, ConstantOfShapeAndRangeTooLargeFailInsteadOfAnUndefinedValue) {
  // Constant folding used to store the undefined tensor of a failed
  // allocation: exit 0 with a data_type 0 output, or "input 0 is required"
  // from the next node.
  ModelBuilder m(17);
  m.Initializer("shape", Tensor::FromVector<int64_t>({100000, 100000}, {2}));
  m.Output("y", DType::kFloat, {}, false);
  m.Node("ConstantOfShape", {"shape"}, {"c"}).set_name("fill");
  m.Node("Neg", {"c"}, {"y"});
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(Message(out.status()), HasSubstr("'fill'"));
  EXPECT_THAT(Message(out.status()), HasSubstr("out of memory"));

  // Range of 2e11 elements: float (800 GB) exceeds the memory limit, int64
  // (1.6 TB) the largest tensor.
  for (DType dtype : {DType::kFloat, DType::kInt64}) {
    ModelBuilder r(17);
    r.Output("y", dtype, {}, false);
    Tensor start = Tensor::Zeros(dtype, {}), limit = Tensor::Zeros(dtype, {}), delta = Tensor::Zeros(dtype, {});
    SetDouble(limit, 0, 2e11);
    SetDouble(delta, 0, 1);
    r.Initializer("start", start).Initializer("limit", limit).Initializer("delta", delta);
    r.Node("Range", {"start", "limit", "delta"}, {"y"}).set_name("range");
    absl::StatusOr<std::unique_ptr<Session>> rs = r.Build();
    absl::Status status = rs.ok() ? (*rs)->Run({}).status() : rs.status();
    ASSERT_FALSE(status.ok()) << LowerName(dtype);
    EXPECT_THAT(Message(status), HasSubstr("'range'"));
    // (2e11 in float is 199999995904.)
    EXPECT_THAT(Message(status), HasSubstr(dtype == DType::kFloat ? "[199999995904]" : "[200000000000]"));
  }
}

TEST(Limits, TheSessionMemoryLimitIsCheckedBeforeAllocatingAndGivenBack) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {1}).Input("shape", DType::kInt64, {2}).Output("y", DType::kFloat, {}, false);
  m.Node("Expand", {"x", "shape"}, {"e"}).set_name("grow");
  m.Node("Neg", {"e"}, {"y"});
  SessionOptions options;
  options.memory_limit = size_t(1) << 20;
  std::unique_ptr<Session> s = *m.Build(options);
  const auto run = [&](int64_t n) {
    return s->Run({{"x", Tensor::FromVector<float>({2}, {1})},
                   {"shape", Tensor::FromVector<int64_t>({n, n}, {2})}});
  };
  // 1024 x 1024 floats are 4 MiB: over the 1 MiB limit.
  absl::StatusOr<std::vector<Tensor>> big = run(1024);
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(big.status()));
  EXPECT_THAT(Message(big.status()), HasSubstr("'grow'"));
  EXPECT_THAT(Message(big.status()), HasSubstr("exceed the session's memory limit of 1048576 bytes"));
  // 256 x 256 (256 KiB, twice: e and y) fits, every time: freed tensors give their bytes back.
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::vector<Tensor>> ok = run(256);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ((*ok)[0].data<float>()[0], -2.0f);
  }
  // Outputs the caller keeps are charged until freed: 4 kept outputs of 256 KiB fill the budget.
  std::vector<std::vector<Tensor>> kept;
  absl::Status last;
  for (int i = 0; i < 5 && last.ok(); ++i) {
    absl::StatusOr<std::vector<Tensor>> out = run(256);
    if (out.ok()) kept.push_back(*out);
    else last = out.status();
  }
  EXPECT_TRUE(absl::IsResourceExhausted(last)) << last;
  kept.clear();
  EXPECT_TRUE(run(256).ok());
}

TEST(Signature, AnEmptyNameInAVariadicListIsAnError) {
  // Found by fuzz-run: Concat(a, "") passed the signature check (a trailing
  // empty name) and Infer read the absent input (SIGSEGV).
  ModelBuilder m(13);
  m.Input("a", DType::kFloat, {2}).Output("y", DType::kFloat, {}, false);
  SetAttr(m.Node("Concat", {"a", ""}, {"y"}), "axis", int64_t(0));
  EXPECT_THAT(Message(m.Build().status()),
              HasSubstr("input 1 is empty, but every input of a variadic list is required"));
}

// ---- RunOptions: stopping a run ----

// test.stop::Raise: y = x, and sets the flag `raised` points at: a node that
// stops the run from inside it, at a known step.
std::atomic<bool>* raised = nullptr;
class RaiseOp : public Op {
 public:
  explicit RaiseOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    std::copy(x.data<float>(), x.data<float>() + x.size(), ctx.output(0).data<float>());
    if (raised != nullptr) raised->store(true);
    return absl::OkStatus();
  }
};

std::unique_ptr<Session> StopSession(const OpRegistry& ops, const ModelBuilder& m) {
  absl::StatusOr<Graph> g = LoadModelFromBytes(m.Serialize(), "");
  EXPECT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(*std::move(g), ops);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

TEST(RunOptions, TheTerminateFlagStopsARunAtTheNextNodeAndWritesNothing) {
  OpRegistry ops(&BuiltinOps());
  ASSERT_TRUE(ops.Add({"test.stop", "Raise", Versions{1}, "T", "T", {{"T", {DType::kFloat}}}, MakeOp<RaiseOp>}).ok());
  // t = Raise(x), y = Neg(t): the flag is set by the first step, the run
  // stops before the second; y is a caller's buffer, left as it was.
  ModelBuilder m(17);
  m.Opset("test.stop", 1);
  m.Input("x", DType::kFloat, {3}).Output("y", DType::kFloat, {3});
  m.Node("Raise", {"x"}, {"t"}, "test.stop");
  m.Node("Neg", {"t"}, {"y"}).set_name("neg");
  std::unique_ptr<Session> s = StopSession(ops, m);
  ASSERT_NE(s, nullptr);
  std::atomic<bool> stop{false};
  raised = &stop;
  RunOptions options;
  options.terminate = &stop;
  const Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3});
  std::vector<Tensor> out = {Tensor::FromVector<float>({7, 7, 7}, {3})};
  absl::Status st = s->Run({{"x", x}}, &out, options);
  EXPECT_TRUE(absl::IsCancelled(st)) << st;
  EXPECT_EQ(Message(st), "run cancelled: terminate flag set (stopped at Neg node 'neg')");
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 3), (std::vector<float>{7, 7, 7}));
  // Set before the run: it stops before the first node (RunValues too).
  raised = nullptr;
  std::vector<Value> values;
  st = s->RunValues({{"x", x}}, &values, options);
  EXPECT_THAT(Message(st), HasSubstr("terminate flag set (stopped at Raise node"));
  EXPECT_TRUE(values.empty());
  // Cleared, the session runs again; without options nothing is checked.
  stop = false;
  ASSERT_TRUE(s->Run({{"x", x}}, &out, options).ok());
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 3), (std::vector<float>{-1, -2, -3}));
  stop = true;
  EXPECT_TRUE(s->Run({{"x", x}}, &out).ok());
}

TEST(RunOptions, ARunThatHasWrittenACallersBufferFinishes) {
  OpRegistry ops(&BuiltinOps());
  ASSERT_TRUE(ops.Add({"test.stop", "Raise", Versions{1}, "T", "T", {{"T", {DType::kFloat}}}, MakeOp<RaiseOp>}).ok());
  // y = Neg(x) first (written straight into the caller's buffer when bound),
  // then t = Raise(x) sets the flag, then z = Neg(t).
  ModelBuilder m(17);
  m.Opset("test.stop", 1);
  m.Input("x", DType::kFloat, {3}).Output("y", DType::kFloat, {3}).Output("z", DType::kFloat, {3});
  m.Node("Neg", {"x"}, {"y"});
  m.Node("Raise", {"x"}, {"t"}, "test.stop");
  m.Node("Neg", {"t"}, {"z"}).set_name("late");
  std::unique_ptr<Session> s = StopSession(ops, m);
  ASSERT_NE(s, nullptr);
  std::atomic<bool> stop{false};
  raised = &stop;
  RunOptions options;
  options.terminate = &stop;
  const Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3});
  // Nothing bound: stopped before the last node.
  std::vector<Tensor> out;
  absl::Status st = s->Run({{"x", x}}, &out, options);
  EXPECT_EQ(Message(st), "run cancelled: terminate flag set (stopped at Neg node 'late')");
  // y bound: its buffer holds this run's result, so the run completes (a
  // stopped run writes no caller memory).
  stop = false;
  out = {Tensor::FromVector<float>({7, 7, 7}, {3}), Tensor()};
  st = s->Run({{"x", x}}, &out, options);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(stop.load());
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 3), (std::vector<float>{-1, -2, -3}));
  EXPECT_EQ(std::vector<float>(out[1].data<float>(), out[1].data<float>() + 3), (std::vector<float>{-1, -2, -3}));
  raised = nullptr;
}

TEST(RunOptions, ADeadlineStopsARunawayLoop) {
  // v = Loop(2^62, v0): the body adds one each iteration.
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("v", DType::kFloat, {2});
  body.Node("Add", {"v", "one"}, {"v_out"});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Output("c_out", DType::kBool, {}).Output("v_out", DType::kFloat, {2});
  onnx::GraphProto body_graph = body.graph();
  body_graph.set_name("body");
  ModelBuilder m(17);
  m.Input("M", DType::kInt64, {}).Input("v0", DType::kFloat, {2}).Output("v", DType::kFloat, {2});
  m.Initializer("one", Tensor::FromVector<float>({1, 1}, {2}));
  onnx::NodeProto& loop = m.Node("Loop", {"M", "", "v0"}, {"v"});
  onnx::AttributeProto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body_graph;
  auto s = m.Build();
  ASSERT_TRUE(s.ok()) << s.status();
  RunOptions options;
  options.timeout_ms = 20;
  const Tensor v0 = Tensor::FromVector<float>({0, 2}, {2});
  std::vector<Tensor> out;
  absl::Status st = (*s)->Run({{"M", Tensor::FromVector<int64_t>({int64_t(1) << 62}, {})}, {"v0", v0}}, &out, options);
  EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
  EXPECT_THAT(Message(st), HasSubstr("run cancelled: deadline of 20 ms exceeded at "));
  // The same options, a run that ends in time.
  out.clear();
  st = (*s)->Run({{"M", Tensor::FromVector<int64_t>({5}, {})}, {"v0", v0}}, &out, options);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 2), (std::vector<float>{5, 7}));
}

}  // namespace
}  // namespace onnx_mini
