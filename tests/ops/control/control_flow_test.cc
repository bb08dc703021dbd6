// If, Loop and Scan (ops/control/control_flow.cc) against plain references: branches
// and loop bodies reading outer-scope values (nested too), carried values,
// scan outputs with axes and directions, Scan-8's batches and sequence_lens,
// error paths, storage safety, and that a body is planned once.
#include <gtest/gtest.h>

#include <atomic>

#include "ops/common.h"
#include "runtime/loader.h"
#include "runtime/registry.h"
#include "tests/ops/budget_util.h"
#include "tests/ops/graph_util.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

// y = If(c) then x + outer else Neg(outer)[:1] (branches of different shapes).
ModelBuilder IfModel() {
  ModelBuilder then_b(17), else_b(17);
  then_b.Node("Add", {"x", "outer"}, {"t"});
  then_b.Output("t", DType::kFloat, {3});
  else_b.Initializer("starts", I({0}, {1})).Initializer("ends", I({1}, {1}));
  else_b.Node("Neg", {"outer"}, {"n"});
  else_b.Node("Slice", {"n", "starts", "ends"}, {"e"});
  else_b.Output("e", DType::kFloat, {1});
  ModelBuilder m(17);
  m.Input("c", DType::kBool, {}).Input("x", DType::kFloat, {3}).Input("o", DType::kFloat, {3});
  m.Node("Relu", {"o"}, {"outer"});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"y"});
  SetGraph(n, "then_branch", Body(then_b, "then"));
  SetGraph(n, "else_branch", Body(else_b, "else"));
  m.Output("y", DType::kFloat, {-1});
  return m;
}

TEST(ControlFlowTest, IfRunsOneBranchWithOuterScopeValues) {
  ModelBuilder m = IfModel();
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  // The merged type: float of rank 1, its length the declared symbol.
  EXPECT_EQ((*session)->outputs()[0].type.ToString(), "float[N0]");  // the declared symbol
  const Tensor x = F({1, 2, 3}, {3}), o = F({-1, 5, 0.5f}, {3});
  auto yes = (*session)->Run({{"c", B({true}, {})}, {"x", x}, {"o", o}});
  ASSERT_TRUE(yes.ok()) << yes.status();
  EXPECT_EQ(Values((*yes)[0]), (std::vector<double>{1, 7, 3.5}));
  auto no = (*session)->Run({{"c", B({false}, {})}, {"x", x}, {"o", F({4, 5, 6}, {3})}});
  ASSERT_TRUE(no.ok()) << no.status();
  EXPECT_EQ(Values((*no)[0]), (std::vector<double>{-4}));
}

TEST(ControlFlowTest, IfBranchesMustAgreeOnElementTypes) {
  ModelBuilder then_b(17), else_b(17);
  then_b.Initializer("a", F({1}, {1}));
  then_b.Node("Identity", {"a"}, {"t"});
  then_b.Output("t", DType::kFloat, {1});
  else_b.Initializer("b", I({1}, {1}));
  else_b.Node("Identity", {"b"}, {"e"});
  else_b.Output("e", DType::kInt64, {1});
  ModelBuilder m(17);
  m.Input("c", DType::kBool, {});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"y"});
  SetGraph(n, "then_branch", Body(then_b, "then"));
  SetGraph(n, "else_branch", Body(else_b, "else"));
  m.Output("y", DType::kFloat, {1});
  auto session = m.Build();
  ASSERT_FALSE(session.ok());
  EXPECT_NE(Message(session.status()).find("output 0 of the branches is float[1] and int64[1]"), std::string::npos)
      << session.status();
}

// Loop: carried (sum, prod), scan output sum per iteration; the body adds
// the outer value `step` and stops when sum exceeds `limit` (cond output).
ModelBuilder LoopModel(bool with_cond_stop) {
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("cond_in", DType::kBool, {});
  body.Input("sum_in", DType::kFloat, {2}).Input("prod_in", DType::kFloat, {2});
  SetAttr(body.Node("Cast", {"i"}, {"fi"}), "to", int64_t(1));
  body.Node("Add", {"sum_in", "step"}, {"s1"});
  body.Node("Add", {"s1", "fi"}, {"sum_out"});
  body.Node("Mul", {"prod_in", "sum_out"}, {"prod_out"});
  body.Node("Identity", {"sum_out"}, {"scan"});
  if (with_cond_stop) {
    SetAttr(body.Node("ReduceSum", {"sum_out"}, {"total"}), "keepdims", int64_t(0));
    body.Node("Less", {"total", "limit"}, {"cond_out"});
  } else {
    body.Node("Identity", {"cond_in"}, {"cond_out"});
  }
  body.Output("cond_out", DType::kBool, {}).Output("sum_out", DType::kFloat, {2});
  body.Output("prod_out", DType::kFloat, {2}).Output("scan", DType::kFloat, {2});
  ModelBuilder m(17);
  m.Input("M", DType::kInt64, {}).Input("s0", DType::kFloat, {2}).Input("p0", DType::kFloat, {2});
  m.Input("step", DType::kFloat, {2}).Input("limit", DType::kFloat, {});
  m.Initializer("true", B({true}, {}));
  SetGraph(m.Node("Loop", {"M", "true", "s0", "p0"}, {"sum", "prod", "scans"}), "body", Body(body));
  m.Output("sum", DType::kFloat, {2}).Output("prod", DType::kFloat, {2}).Output("scans", DType::kFloat, {-1, 2});
  return m;
}

struct LoopReference {
  std::vector<float> sum, prod, scans;
  int64_t iterations = 0;
};

LoopReference RunLoopReference(int64_t m, std::vector<float> s, std::vector<float> p, const std::vector<float>& step,
                               float limit, bool with_cond_stop) {
  LoopReference r;
  bool cond = true;
  for (int64_t i = 0; i < m && cond; ++i) {
    for (size_t k = 0; k < 2; ++k) {
      s[k] = s[k] + step[k] + float(i);
      p[k] = p[k] * s[k];
      r.scans.push_back(s[k]);
    }
    if (with_cond_stop) cond = s[0] + s[1] < limit;
    ++r.iterations;
  }
  r.sum = s;
  r.prod = p;
  return r;
}

TEST(ControlFlowTest, LoopCarriesStateAndStacksScanOutputs) {
  for (bool stop : {false, true})
    for (int64_t trips : {0, 1, 4, 9}) {
      SCOPED_TRACE(absl::StrCat("trips ", trips, stop ? " with a stop condition" : ""));
      auto session = LoopModel(stop).Build();
      ASSERT_TRUE(session.ok()) << session.status();
      const std::vector<float> s0 = {0.5f, -1}, p0 = {1, 2}, step = {1, 0.25f};
      const float limit = 12;
      auto out = (*session)->Run({{"M", I({trips}, {})}, {"s0", F(s0, {2})}, {"p0", F(p0, {2})},
                                  {"step", F(step, {2})}, {"limit", F({limit}, {})}});
      ASSERT_TRUE(out.ok()) << out.status();
      LoopReference want = RunLoopReference(trips, s0, p0, step, limit, stop);
      EXPECT_EQ(Values((*out)[0]), Values(F(want.sum, {2})));
      EXPECT_EQ(Values((*out)[1]), Values(F(want.prod, {2})));
      EXPECT_EQ((*out)[2].shape(), (Shape{want.iterations, 2}));
      EXPECT_EQ(Values((*out)[2]), Values(F(want.scans, {want.iterations, 2})));
    }
}

TEST(ControlFlowTest, LoopTripCountMustBeOneElement) {
  auto session = LoopModel(false).Build();
  ASSERT_TRUE(session.ok());
  // M is declared a scalar: a [2] M is refused before the loop runs.
  auto out = (*session)->Run({{"M", I({1, 2}, {2})}, {"s0", F({0, 0}, {2})}, {"p0", F({1, 1}, {2})},
                              {"step", F({1, 1}, {2})}, {"limit", F({1}, {})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(Message(out.status()).find("input 'M' must have shape int64[]"), std::string::npos) << out.status();
}

// A Loop inside an If branch whose body reads a value of the top graph:
// outer-scope values pass through two levels.
TEST(ControlFlowTest, NestedSubgraphsReadTheTopGraph) {
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("acc", DType::kFloat, {3});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Node("Add", {"acc", "top"}, {"acc_out"});
  body.Output("c_out", DType::kBool, {}).Output("acc_out", DType::kFloat, {3});
  ModelBuilder then_b(17);
  then_b.Initializer("three", I({3}, {}));
  SetGraph(then_b.Node("Loop", {"three", "", "x"}, {"r"}), "body", Body(body, "loop_body"));
  then_b.Output("r", DType::kFloat, {3});
  ModelBuilder else_b(17);
  else_b.Node("Identity", {"x"}, {"r2"});
  else_b.Output("r2", DType::kFloat, {3});
  ModelBuilder m(17);
  m.Input("c", DType::kBool, {}).Input("x", DType::kFloat, {3}).Input("t", DType::kFloat, {3});
  m.Node("Abs", {"t"}, {"top"});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"y"});
  SetGraph(n, "then_branch", Body(then_b, "then"));
  SetGraph(n, "else_branch", Body(else_b, "else"));
  m.Output("y", DType::kFloat, {3});
  auto out = RunModel(m, {{"c", B({true}, {})}, {"x", F({1, 2, 3}, {3})}, {"t", F({-1, 0.5f, 2}, {3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0].tensor()), (std::vector<double>{4, 3.5, 9}));
  auto other = RunModel(m, {{"c", B({false}, {})}, {"x", F({1, 2, 3}, {3})}, {"t", F({-1, 0.5f, 2}, {3})}});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(Values((*other)[0].tensor()), (std::vector<double>{1, 2, 3}));
}

// A value a branch returns as it is (an outer-scope value) is not
// overwritten by a later op that updates that value in place.
TEST(ControlFlowTest, OuterValuesPassedThroughAreNotTakenInPlace) {
  ModelBuilder then_b(17), else_b(17);
  then_b.Node("Identity", {"x"}, {"t"});
  then_b.Output("t", DType::kFloat, {3});
  else_b.Node("Identity", {"x"}, {"e"});
  else_b.Output("e", DType::kFloat, {3});
  ModelBuilder m(17);
  m.Input("c", DType::kBool, {}).Input("a", DType::kFloat, {3});
  m.Node("Neg", {"a"}, {"x"});
  onnx::NodeProto& n = m.Node("If", {"c"}, {"y"});
  SetGraph(n, "then_branch", Body(then_b, "then"));
  SetGraph(n, "else_branch", Body(else_b, "else"));
  m.Node("Relu", {"x"}, {"z"});  // the last reader of x
  m.Output("y", DType::kFloat, {3}).Output("z", DType::kFloat, {3});
  auto out = RunModel(m, {{"c", B({true}, {})}, {"a", F({1, -2, 3}, {3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0].tensor()), (std::vector<double>{-1, 2, -3}));
  EXPECT_EQ(Values((*out)[1].tensor()), (std::vector<double>{0, 2, 0}));
}

// Scan-9+: a running sum over axis `in_axis` of x (reversed with
// `in_reverse`), scan output stacked at `out_axis` (reversed with `out_reverse`).
TEST(ControlFlowTest, ScanAxesAndDirectionsMatchAReference) {
  const Shape shape = {3, 4, 2};
  const Tensor x = Random(DType::kFloat, shape, 5);
  for (int64_t in_axis : {0, 1, -1})
    for (int64_t out_axis : {0, 1, -1})
      for (int64_t in_reverse : {0, 1})
        for (int64_t out_reverse : {0, 1}) {
          SCOPED_TRACE(absl::StrCat("in axis ", in_axis, " out axis ", out_axis, " reverse ", in_reverse, out_reverse));
          const int64_t ia = in_axis < 0 ? in_axis + 3 : in_axis;
          Shape slice = shape;
          slice.erase(slice.begin() + ia);
          const int64_t length = shape[size_t(ia)];
          ModelBuilder body(17);
          body.Input("acc", DType::kFloat, {slice[0], slice[1]}).Input("xi", DType::kFloat, {slice[0], slice[1]});
          body.Node("Add", {"acc", "xi"}, {"acc_out"});
          body.Node("Identity", {"acc_out"}, {"scan"});
          body.Output("acc_out", DType::kFloat, {slice[0], slice[1]}).Output("scan", DType::kFloat, {slice[0], slice[1]});
          ModelBuilder m(11);
          m.Input("init", DType::kFloat, {slice[0], slice[1]}).Input("x", DType::kFloat, {3, 4, 2});
          onnx::NodeProto& n = m.Node("Scan", {"init", "x"}, {"final", "ys"});
          SetGraph(n, "body", Body(body));
          SetAttr(n, "num_scan_inputs", int64_t(1));
          SetAttr(n, "scan_input_axes", std::vector<int64_t>{in_axis});
          SetAttr(n, "scan_output_axes", std::vector<int64_t>{out_axis});
          SetAttr(n, "scan_input_directions", std::vector<int64_t>{in_reverse});
          SetAttr(n, "scan_output_directions", std::vector<int64_t>{out_reverse});
          m.Output("final", DType::kFloat, {slice[0], slice[1]}).Output("ys", DType::kFloat, {}, false);
          const Tensor init = Random(DType::kFloat, slice, 6);
          auto out = RunModel(m, {{"init", init}, {"x", x}});
          ASSERT_TRUE(out.ok()) << out.status();
          // Reference: partial sums per iteration t, read at x[.., idx(t), ..].
          std::vector<std::vector<double>> partial;
          std::vector<double> acc = Values(init);
          for (int64_t t = 0; t < length; ++t) {
            const int64_t idx = in_reverse ? length - 1 - t : t;
            for (int64_t a = 0; a < slice[0]; ++a)
              for (int64_t b = 0; b < slice[1]; ++b) {
                int64_t c[3];
                int64_t k = 0;
                for (int64_t d = 0; d < 3; ++d) c[d] = d == ia ? idx : (k++ == 0 ? a : b);
                acc[size_t(a * slice[1] + b)] += double(x.data<float>()[(c[0] * 4 + c[1]) * 2 + c[2]]);
              }
            partial.push_back(acc);
          }
          EXPECT_EQ(Values((*out)[0].tensor()), Values(F(std::vector<float>(acc.begin(), acc.end()), slice)));
          const int64_t oa = out_axis < 0 ? out_axis + 3 : out_axis;
          Shape ys_shape = slice;
          ys_shape.insert(ys_shape.begin() + oa, length);
          const Tensor& ys = (*out)[1].tensor();
          ASSERT_EQ(ys.shape(), ys_shape);
          for (int64_t i = 0; i < ys.size(); ++i) {
            int64_t rem = i, c[3];
            for (int64_t d = 2; d >= 0; --d) {
              c[d] = rem % ys_shape[size_t(d)];
              rem /= ys_shape[size_t(d)];
            }
            int64_t t = c[oa], k = 0, ab[2];
            for (int64_t d = 0; d < 3; ++d)
              if (d != oa) ab[k++] = c[d];
            if (out_reverse) t = length - 1 - t;
            EXPECT_FLOAT_EQ(ys.data<float>()[i], float(partial[size_t(t)][size_t(ab[0] * slice[1] + ab[1])]));
          }
        }
}

// Scan-8: batch axis 0, scan along axis 1, each batch entry its own length;
// scan outputs past an entry's length are zeros.
TEST(ControlFlowTest, Scan8BatchesWithSequenceLengths) {
  ModelBuilder body(8);
  body.Input("acc", DType::kFloat, {2}).Input("xi", DType::kFloat, {2});
  body.Node("Add", {"acc", "xi"}, {"acc_out"});
  body.Node("Identity", {"acc_out"}, {"scan"});
  body.Output("acc_out", DType::kFloat, {2}).Output("scan", DType::kFloat, {2});
  for (int64_t reverse : {0, 1}) {
    ModelBuilder m(8);
    m.Input("lens", DType::kInt64, {3}).Input("init", DType::kFloat, {3, 2}).Input("x", DType::kFloat, {3, 4, 2});
    onnx::NodeProto& n = m.Node("Scan", {"lens", "init", "x"}, {"final", "ys"});
    SetGraph(n, "body", Body(body));
    SetAttr(n, "num_scan_inputs", int64_t(1));
    SetAttr(n, "directions", std::vector<int64_t>{reverse});
    m.Output("final", DType::kFloat, {3, 2}).Output("ys", DType::kFloat, {3, 4, 2});
    const Tensor x = Random(DType::kFloat, {3, 4, 2}, 9), init = Random(DType::kFloat, {3, 2}, 10);
    const std::vector<int64_t> lens = {4, 0, 2};
    auto out = RunModel(m, {{"lens", I(lens, {3})}, {"init", init}, {"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> final_want, ys_want(24, 0.0);
    for (int64_t b = 0; b < 3; ++b) {
      double acc[2] = {init.data<float>()[b * 2], init.data<float>()[b * 2 + 1]};
      for (int64_t t = 0; t < lens[size_t(b)]; ++t) {
        const int64_t idx = reverse ? lens[size_t(b)] - 1 - t : t;
        for (int64_t k = 0; k < 2; ++k) {
          acc[k] = float(acc[k] + x.data<float>()[(b * 4 + idx) * 2 + k]);
          ys_want[size_t((b * 4 + t) * 2 + k)] = acc[k];
        }
      }
      final_want.push_back(acc[0]);
      final_want.push_back(acc[1]);
    }
    EXPECT_EQ(Values((*out)[0].tensor()), final_want);
    EXPECT_EQ(Values((*out)[1].tensor()), ys_want);
    // No batch entry: empty outputs of the right shapes.
    ModelBuilder empty(8);
    empty.Input("init", DType::kFloat, {0, 2}).Input("x", DType::kFloat, {0, 4, 2});
    onnx::NodeProto& e = empty.Node("Scan", {"", "init", "x"}, {"final", "ys"});
    SetGraph(e, "body", Body(body));
    SetAttr(e, "num_scan_inputs", int64_t(1));
    empty.Output("final", DType::kFloat, {0, 2}).Output("ys", DType::kFloat, {0, 4, 2});
    auto none = RunModel(empty, {{"init", Tensor::Zeros(DType::kFloat, {0, 2})},
                                 {"x", Tensor::Zeros(DType::kFloat, {0, 4, 2})}});
    ASSERT_TRUE(none.ok()) << none.status();
    EXPECT_EQ((*none)[0].tensor().shape(), (Shape{0, 2}));
    EXPECT_EQ((*none)[1].tensor().shape(), (Shape{0, 4, 2}));
    auto bad = RunModel(m, {{"lens", I({5, 0, 0}, {3})}, {"init", init}, {"x", x}});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(Message(bad.status()).find("sequence_lens[0] = 5 is outside [0, 4]"), std::string::npos) << bad.status();
  }
}

TEST(ControlFlowTest, ScanAttributesAreChecked) {
  ModelBuilder body(17);
  body.Input("xi", DType::kFloat, {2});
  body.Node("Identity", {"xi"}, {"y"});
  body.Output("y", DType::kFloat, {2});
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 2});
  onnx::NodeProto& n = m.Node("Scan", {"x"}, {"ys"});
  SetGraph(n, "body", Body(body));
  SetAttr(n, "num_scan_inputs", int64_t(1));
  SetAttr(n, "scan_input_axes", std::vector<int64_t>{2});
  m.Output("ys", DType::kFloat, {3, 2});
  auto session = m.Build();
  ASSERT_FALSE(session.ok());
  EXPECT_NE(Message(session.status()).find("scan_input_axes entry 2 is out of range for rank 2"), std::string::npos)
      << session.status();
}

// Every element type the rows declare passes through If, Loop (carried and
// scanned) and Scan (state and scanned).
TEST(ControlFlowTest, EveryDeclaredTypeRuns) {
  for (int code = 1; code <= kMaxDTypeCode; ++code) {
    const DType dtype = DType(code);
    if (!kAllTypes.contains(dtype)) continue;
    SCOPED_TRACE(LowerName(dtype));
    const bool scanned = kUnpackedTypes.contains(dtype);  // Scan and scan outputs copy elements
    ModelBuilder branch(17);
    branch.Node("Identity", {"x"}, {"bx"});
    branch.Output("bx", dtype, {2, 2});
    ModelBuilder body(17);
    body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("v", dtype, {2, 2});
    body.Node("Identity", {"c"}, {"c_out"});
    body.Node("Identity", {"v"}, {"v_out"});
    body.Output("c_out", DType::kBool, {}).Output("v_out", dtype, {2, 2});
    if (scanned) {
      body.Node("Identity", {"v"}, {"s_out"});
      body.Output("s_out", dtype, {2, 2});
    }
    ModelBuilder scan_body(17);
    scan_body.Input("st", dtype, {2}).Input("xi", dtype, {2});
    scan_body.Node("Identity", {"xi"}, {"st_out"});
    scan_body.Node("Identity", {"st"}, {"y"});
    scan_body.Output("st_out", dtype, {2}).Output("y", dtype, {2});
    ModelBuilder m(19);
    m.Input("c", DType::kBool, {}).Input("x", dtype, {2, 2});
    m.Initializer("two", I({2}, {}));
    onnx::NodeProto& n = m.Node("If", {"c"}, {"chosen"});
    SetGraph(n, "then_branch", Body(branch, "then"));
    SetGraph(n, "else_branch", Body(branch, "else"));
    std::vector<std::string> loop_out = {"carried"};
    if (scanned) loop_out.push_back("stacked");
    SetGraph(m.Node("Loop", {"two", "", "x"}, loop_out), "body", Body(body));
    m.Output("chosen", dtype, {2, 2}).Output("carried", dtype, {2, 2});
    if (scanned) {
      m.Initializer("st0", Tensor::Zeros(dtype, {2}));
      onnx::NodeProto& s = m.Node("Scan", {"st0", "x"}, {"st", "ys"});
      SetGraph(s, "body", Body(scan_body, "scan_body"));
      SetAttr(s, "num_scan_inputs", int64_t(1));
      m.Output("stacked", dtype, {2, 2, 2}).Output("st", dtype, {2}).Output("ys", dtype, {2, 2});
    }
    auto out = RunModel(m, {{"c", B({true}, {})}, {"x", Tensor::Zeros(dtype, {2, 2})}});
    ASSERT_TRUE(out.ok()) << out.status();
    for (const Value& v : *out) EXPECT_EQ(v.tensor().dtype(), dtype);
  }
}

// A custom op that counts how often its factory runs: a loop body is planned
// once, at session creation, however many iterations run.
std::atomic<int> planned_count{0};

class CountedOp : public Op {
 public:
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    CopyElements(*ctx.input(0), ctx.output(0));
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<Op>> MakeCounted(const Node&) {
  ++planned_count;
  return std::unique_ptr<Op>(new CountedOp());
}

TEST(ControlFlowTest, ALoopBodyIsPlannedOnce) {
  OpRegistry registry(&BuiltinOps());
  ASSERT_TRUE(registry.Add({"test.counted", "Counted", Versions{1}, "T", "T", {{"T", kFloatTypes}}, MakeCounted}).ok());
  ModelBuilder body(17);
  body.Opset("test.counted", 1);
  body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("v", DType::kFloat, {2});
  body.Node("Counted", {"v"}, {"w"}, "test.counted");
  body.Node("Add", {"w", "one"}, {"v_out"});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Output("c_out", DType::kBool, {}).Output("v_out", DType::kFloat, {2});
  ModelBuilder m(17);
  m.Opset("test.counted", 1);
  m.Input("M", DType::kInt64, {}).Input("v0", DType::kFloat, {2});
  m.Initializer("one", F({1, 1}, {2}));
  SetGraph(m.Node("Loop", {"M", "", "v0"}, {"v"}), "body", Body(body));
  m.Output("v", DType::kFloat, {2});

  absl::StatusOr<Graph> g = LoadModelFromBytes(m.Serialize(), "");
  ASSERT_TRUE(g.ok()) << g.status();
  planned_count = 0;
  // Rewrites off: their inference of the body (InferSubgraphTypes) makes its ops once more.
  SessionOptions options;
  options.graph_rewrites = false;
  auto session = Session::Create(*std::move(g), registry, options);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(planned_count.load(), 1);
  for (int run = 0; run < 3; ++run) {
    auto out = (*session)->Run({{"M", I({7}, {})}, {"v0", F({0, 2}, {2})}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values((*out)[0]), (std::vector<double>{7, 9}));
  }
  EXPECT_EQ(planned_count.load(), 1);
}

// RunOptions: every iteration of Loop, Scan and SequenceMap is a cancellation
// point, even when the body has no node (whose boundaries are the others).
// Without the check each of these runs would finish (or, the Loop, never).
TEST(ControlFlowTest, EmptyBodiedLoopsStopAtTheirDeadline) {
  RunOptions options;
  options.timeout_ms = 5;
  {  // v = Loop(2^62, v0) with a body that passes its inputs through.
    ModelBuilder body(17);
    body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("v", DType::kFloat, {2});
    body.Output("c", DType::kBool, {}).Output("v", DType::kFloat, {2});
    ModelBuilder m(17);
    m.Input("M", DType::kInt64, {}).Input("v0", DType::kFloat, {2}).Output("v", DType::kFloat, {2});
    SetGraph(m.Node("Loop", {"M", "", "v0"}, {"v"}), "body", Body(body));
    auto session = m.Build();
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<Tensor> out;
    absl::Status st = (*session)->Run({{"M", I({int64_t(1) << 62}, {})}, {"v0", F({1, 2}, {2})}}, &out, options);
    EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
    EXPECT_NE(Message(st).find("deadline of 5 ms exceeded at Loop node"), std::string::npos) << st;
    out.clear();
    ASSERT_TRUE((*session)->Run({{"M", I({3}, {})}, {"v0", F({1, 2}, {2})}}, &out, options).ok());
    EXPECT_EQ(Values(out[0]), (std::vector<double>{1, 2}));
  }
  {  // Scan over 2^22 elements: final = init, ys = x.
    ModelBuilder body(17);
    body.Input("acc", DType::kFloat, {}).Input("xi", DType::kFloat, {});
    body.Output("acc", DType::kFloat, {}).Output("xi", DType::kFloat, {});
    ModelBuilder m(11);
    m.Input("init", DType::kFloat, {}).Input("x", DType::kFloat, {-1});
    onnx::NodeProto& n = m.Node("Scan", {"init", "x"}, {"final", "ys"});
    SetGraph(n, "body", Body(body));
    SetAttr(n, "num_scan_inputs", int64_t(1));
    m.Output("final", DType::kFloat, {}).Output("ys", DType::kFloat, {-1});
    auto session = m.Build();
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<Tensor> out;
    absl::Status st =
        (*session)->Run({{"init", F({1}, {})}, {"x", Tensor::Zeros(DType::kFloat, {1 << 22})}}, &out, options);
    EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
    EXPECT_NE(Message(st).find("at Scan node"), std::string::npos) << st;
  }
  {  // SequenceMap over 2^18 items.
    ModelBuilder body(17);
    body.Input("item", DType::kFloat, {});
    body.Output("item", DType::kFloat, {});
    ModelBuilder m(17);
    AddValueInfo(m.graph().mutable_input(), "seq", DType::kFloat, "sequence");
    SetGraph(m.Node("SequenceMap", {"seq"}, {"mapped"}), "body", Body(body));
    AddValueInfo(m.graph().mutable_output(), "mapped", DType::kFloat, "sequence");
    auto session = m.Build();
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<Value> out;
    absl::Status st =
        (*session)->RunValues({{"seq", Seq(std::vector<Tensor>(1 << 18, F({1}, {})))}}, &out, options);
    EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
    EXPECT_NE(Message(st).find("at SequenceMap node"), std::string::npos) << st;
  }
}

// A Loop whose inputs are all constants is folded at session creation only
// within a budget of nodes and iterations: a runaway one is left to the runs
// (where RunOptions can stop it) rather than hanging creation.
TEST(ControlFlowTest, AConstantRunawayLoopIsNotFoldedAtCreation) {
  const auto model = [](int64_t trips) {  // y = x + Loop(trips, v0 = [0, 1]) adding one per iteration
    ModelBuilder body(17);
    body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("v", DType::kFloat, {2});
    body.Node("Add", {"v", "one"}, {"v_out"});
    body.Output("c", DType::kBool, {}).Output("v_out", DType::kFloat, {2});
    ModelBuilder m(17);
    m.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
    m.Initializer("M", I({trips}, {})).Initializer("v0", F({0, 1}, {2})).Initializer("one", F({1, 1}, {2}));
    SetGraph(m.Node("Loop", {"M", "", "v0"}, {"v"}), "body", Body(body));
    m.Node("Add", {"v", "x"}, {"y"});
    return m.Build();
  };
  auto session = model(int64_t(1) << 62);
  ASSERT_TRUE(session.ok()) << session.status();
  RunOptions options;
  options.timeout_ms = 5;
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run({{"x", F({1, 1}, {2})}}, &out, options);
  EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
  // A short constant Loop is still folded; the answer is the same.
  auto folded = model(3);
  ASSERT_TRUE(folded.ok()) << folded.status();
  out.clear();
  ASSERT_TRUE((*folded)->Run({{"x", F({1, 1}, {2})}}, &out, options).ok());
  EXPECT_EQ(Values(out[0]), (std::vector<double>{4, 5}));
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: a loop's accumulated values count against the
// session's memory budget. An empty body whose scan outputs are the
// iteration number and an outer value (no new tensor per iteration but the
// counter) still grows the stacked outputs and the kept items: the run stops
// at the iteration that crosses the limit, naming the Loop.
TEST(ControlFlowTest, LoopScanOutputsCountAgainstTheMemoryLimit) {
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {});
  body.Output("c", DType::kBool, {}).Output("i", DType::kInt64, {}).Output("x", DType::kFloat, {256});
  ModelBuilder m(17);
  m.Input("M", DType::kInt64, {}).Input("x", DType::kFloat, {256});
  onnx::NodeProto& loop = m.Node("Loop", {"M", ""}, {"is", "xs"});
  loop.set_name("loop");
  SetGraph(loop, "body", Body(body));
  m.Output("is", DType::kInt64, {-1}).Output("xs", DType::kFloat, {-1, 256});
  std::vector<float> xv(256);
  for (size_t k = 0; k < xv.size(); ++k) xv[k] = float(k) / 4;
  const Tensor x = F(xv, {256});
  // 4096 iterations stack 4 MiB of x: over a 1 MiB limit; 16 fit.
  const std::vector<Value> out = RunOverThenUnderBudget(m, {{"M", I({4096}, {})}, {"x", x}}, size_t(1) << 20,
                                                        "loop", {{"M", I({16}, {})}, {"x", x}});
  ASSERT_EQ(out.size(), 2u);
  const Tensor& is = out[0].tensor();
  const Tensor& xs = out[1].tensor();
  ASSERT_EQ(is.shape(), (Shape{4096}));
  ASSERT_EQ(xs.shape(), (Shape{4096, 256}));
  for (int64_t k = 0; k < 4096; ++k) ASSERT_EQ(is.data<int64_t>()[k], k);
  for (int64_t k = 0; k < xs.size(); ++k) ASSERT_EQ(xs.data<float>()[k], xv[size_t(k % 256)]);
}

// An empty-body Loop with only a scan output of the counter: each iteration
// keeps a few hundred bytes (the counter's block and its bookkeeping), all of
// them charged: 3 million iterations do not fit 64 MiB.
TEST(ControlFlowTest, AnEmptyBodyLoopsKeptIterationsAreCharged) {
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {});
  body.Output("c", DType::kBool, {}).Output("i", DType::kInt64, {});
  ModelBuilder m(17);
  m.Input("M", DType::kInt64, {});
  onnx::NodeProto& loop = m.Node("Loop", {"M", ""}, {"is"});
  loop.set_name("counter");
  SetGraph(loop, "body", Body(body));
  m.Output("is", DType::kInt64, {-1});
  const std::vector<Value> out = RunOverThenUnderBudget(m, {{"M", I({3000000}, {})}}, size_t(64) << 20, "counter",
                                                        {{"M", I({1000}, {})}});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].tensor().size(), 3000000);
  EXPECT_EQ(out[0].tensor().data<int64_t>()[2999999], 2999999);
}

// Scan's stacked outputs and per-iteration slices, Scan-9+ and Scan-8.
TEST(ControlFlowTest, ScanOutputsCountAgainstTheMemoryLimit) {
  for (int64_t opset : {8, 17}) {
    SCOPED_TRACE(opset);
    const bool batched = opset < 9;
    ModelBuilder body(opset);
    body.Input("xi", DType::kFloat, {256});
    body.Node("Neg", {"xi"}, {"yi"});
    body.Output("yi", DType::kFloat, {256});
    ModelBuilder m(opset);
    m.Input("x", DType::kFloat, batched ? std::vector<int64_t>{1, -1, 256} : std::vector<int64_t>{-1, 256});
    onnx::NodeProto& n = m.Node("Scan", batched ? std::vector<std::string>{"", "x"} : std::vector<std::string>{"x"},
                                {"ys"});
    n.set_name("scan");
    SetAttr(n, "num_scan_inputs", int64_t(1));
    SetGraph(n, "body", Body(body));
    m.Output("ys", DType::kFloat, {}, false);
    const auto input = [&](int64_t length) {
      Shape shape = batched ? Shape{1, length, 256} : Shape{length, 256};
      Tensor t = Tensor::Zeros(DType::kFloat, shape);
      for (int64_t k = 0; k < t.size(); ++k) t.data<float>()[k] = float(k % 1000);
      return t;
    };
    // 4096 rows of 1 KiB: 4 MiB of outputs over a 1 MiB limit (the input is the caller's).
    const std::vector<Value> out =
        RunOverThenUnderBudget(m, {{"x", input(4096)}}, size_t(1) << 20, "scan", {{"x", input(16)}});
    ASSERT_EQ(out.size(), 1u);
    const Tensor& ys = out[0].tensor();
    ASSERT_EQ(ys.size(), 4096 * 256);
    for (int64_t k = 0; k < ys.size(); ++k) ASSERT_EQ(ys.data<float>()[k], -float(k % 1000));
  }
}

}  // namespace
}  // namespace onnx_mini
