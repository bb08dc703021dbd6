// Profiling (runtime/session/trace.cc): the per-node trace events, subgraph
// nodes included, their Chrome-trace JSON read back with a JSON parser, and
// Session::Profile()'s tables over subgraphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/session.h"
#include "runtime/status_macros.h"
#include "tests/ops/graph_util.h"
#include "tools/json.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// x float [3,2], trips int64 []:
//   seq = SplitToSequence(x) ("split"), mapped = SequenceMap(seq) { Relu "seq_relu" } ("map"),
//   r = ConcatFromSequence(mapped) ("concat"),
//   final, ys = Scan(init = 0 [2], r) { Add "scan_add", Identity (unnamed) } ("scan"),
//   z = Loop(trips, final) { Identity "cond", If(cond) "inner" { Mul "mul" } else { Identity "keep" } } ("loop").
// z = 2^trips * sum over rows of Relu(x).
ModelBuilder Nested() {
  ModelBuilder map_body(17);
  map_body.Input("item", DType::kFloat, {1, 2});
  map_body.Node("Relu", {"item"}, {"relu_out"}).set_name("seq_relu");
  map_body.Output("relu_out", DType::kFloat, {1, 2});

  ModelBuilder scan_body(17);
  scan_body.Input("acc", DType::kFloat, {2}).Input("xi", DType::kFloat, {2});
  scan_body.Node("Add", {"acc", "xi"}, {"acc_out"}).set_name("scan_add");
  scan_body.Node("Identity", {"acc_out"}, {"y"}).clear_name();  // named "Identity_1" as onnxruntime would
  scan_body.Output("acc_out", DType::kFloat, {2}).Output("y", DType::kFloat, {2});

  ModelBuilder then_branch(17), else_branch(17);
  then_branch.Node("Mul", {"acc_in", "two"}, {"doubled"}).set_name("mul");
  then_branch.Output("doubled", DType::kFloat, {2});
  else_branch.Node("Identity", {"acc_in"}, {"kept"}).set_name("keep");
  else_branch.Output("kept", DType::kFloat, {2});
  ModelBuilder loop_body(17);
  loop_body.Input("i", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("acc_in", DType::kFloat, {2});
  loop_body.Node("Identity", {"cond_in"}, {"cond_out"}).set_name("cond");
  onnx::NodeProto& inner = loop_body.Node("If", {"cond_in"}, {"acc_out"});
  inner.set_name("inner");
  SetGraph(inner, "then_branch", Body(then_branch, "then"));
  SetGraph(inner, "else_branch", Body(else_branch, "else"));
  loop_body.Output("cond_out", DType::kBool, {}).Output("acc_out", DType::kFloat, {2});

  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 2}).Input("trips", DType::kInt64, {}).Output("z", DType::kFloat, {2});
  m.Initializer("init", Tensor::Zeros(DType::kFloat, {2}));
  m.Initializer("two", Tensor::FromVector<float>({2}, {}));
  m.Node("SplitToSequence", {"x"}, {"seq"}).set_name("split");
  onnx::NodeProto& map = m.Node("SequenceMap", {"seq"}, {"mapped"});
  map.set_name("map");
  SetGraph(map, "body", Body(map_body));
  onnx::NodeProto& concat = m.Node("ConcatFromSequence", {"mapped"}, {"r"});
  concat.set_name("concat");
  SetAttr(concat, "axis", int64_t(0));
  onnx::NodeProto& scan = m.Node("Scan", {"init", "r"}, {"final", "ys"});
  scan.set_name("scan");
  SetGraph(scan, "body", Body(scan_body));
  SetAttr(scan, "num_scan_inputs", int64_t(1));
  onnx::NodeProto& loop = m.Node("Loop", {"trips", "", "final"}, {"z"});
  loop.set_name("loop");
  SetGraph(loop, "body", Body(loop_body));
  return m;
}

const Tensor kX = Tensor::FromVector<float>({1, -2, 3, 4, -5, 6}, {3, 2});

std::vector<NamedTensor> NestedInputs(int64_t trips) {
  return {{"x", kX}, {"trips", Tensor::FromVector<int64_t>({trips}, {})}};
}

JsonValue Parse(const std::string& text) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(ParseJson(text, &v, &error)) << error << "\n" << text.substr(0, 2000);
  EXPECT_EQ(v.kind, JsonValue::kArray);
  return v;
}

std::string Str(const JsonValue& event, const std::string& key) {
  const JsonValue* v = event.Find(key);
  return v && v->kind == JsonValue::kString ? v->string : "";
}
double Num(const JsonValue& event, const std::string& key) {
  const JsonValue* v = event.Find(key);
  return v && v->kind == JsonValue::kNumber ? v->number : -1;
}
const JsonValue& Args(const JsonValue& event) {
  static const JsonValue kEmpty;
  const JsonValue* a = event.Find("args");
  return a ? *a : kEmpty;
}
// [{"float":[2,3]}] -> "float[2,3]"
std::string TypeShapes(const JsonValue& list) {
  std::string out;
  for (const JsonValue& item : list.array)
    for (const auto& [type, dims] : item.object) {
      out += (out.empty() ? "" : " ") + type + "[";
      for (size_t d = 0; d < dims.array.size(); ++d) out += (d ? "," : "") + std::to_string(int64_t(dims.array[d].number));
      out += "]";
    }
  return out;
}

std::map<std::string, int> CountByName(const JsonValue& trace, const std::string& cat) {
  std::map<std::string, int> n;
  for (const JsonValue& e : trace.array)
    if (Str(e, "cat") == cat) ++n[Str(e, "name")];
  return n;
}

TEST(Trace, EveryNodeRunInsideEverySubgraphIsAnEvent) {
  SessionOptions options;
  options.trace = true;
  absl::StatusOr<std::unique_ptr<Session>> s = Nested().Build(options);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int r = 0; r < 2; ++r) {
    absl::StatusOr<std::vector<Tensor>> z = (*s)->Run(NestedInputs(2));
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ((*z)[0].data<float>()[0], 4 * (1 + 3 + 0));
    EXPECT_EQ((*z)[0].data<float>()[1], 4 * (0 + 4 + 6));
  }
  const JsonValue trace = Parse((*s)->TraceJson());
  const std::map<std::string, int> nodes = CountByName(trace, "Node");
  const std::map<std::string, int> expected = {
      {"split_kernel_time", 2}, {"map_kernel_time", 2}, {"map/body/seq_relu_kernel_time", 6},
      {"concat_kernel_time", 2}, {"scan_kernel_time", 2}, {"scan/body/scan_add_kernel_time", 6},
      {"scan/body/Identity_1_kernel_time", 6}, {"loop_kernel_time", 2}, {"loop/body/cond_kernel_time", 4},
      {"loop/body/inner_kernel_time", 4}, {"loop/body/inner/then_branch/mul_kernel_time", 4}};
  EXPECT_EQ(nodes, expected);
  const std::map<std::string, int> session = CountByName(trace, "Session");
  EXPECT_EQ(session.at("session_initialization"), 1);
  EXPECT_EQ(session.at("model_run"), 2);
  // Per run: the model's graph, 3 map items, 3 scan steps, 2 loop iterations and their 2 branches.
  EXPECT_EQ(session.at("SequentialExecutor::Execute"), 2 * (1 + 3 + 3 + 2 + 2));

  // Every event in onnxruntime's form.
  const double tid = Num(trace.array[0], "tid");
  for (const JsonValue& e : trace.array) {
    EXPECT_EQ(Str(e, "ph"), "X");
    EXPECT_GE(Num(e, "dur"), 0);
    EXPECT_GE(Num(e, "ts"), 0);
    EXPECT_EQ(Num(e, "tid"), tid);  // one thread ran everything here
  }
  // A body node inside its Loop's span (events sorted by start, an enclosing one first).
  double loop_start = -1, loop_end = -1;
  int inside = 0;
  for (const JsonValue& e : trace.array) {
    const std::string name = Str(e, "name");
    if (name == "loop_kernel_time") loop_start = Num(e, "ts"), loop_end = loop_start + Num(e, "dur");
    if (name == "loop/body/inner/then_branch/mul_kernel_time") {
      EXPECT_GE(Num(e, "ts"), loop_start);
      EXPECT_LE(Num(e, "ts") + Num(e, "dur"), loop_end);
      ++inside;
    }
  }
  EXPECT_EQ(inside, 4);

  // Args: op_name, sizes, types and shapes.
  std::map<std::string, const JsonValue*> by_name;
  for (const JsonValue& e : trace.array) by_name[Str(e, "name")] = &e;
  const JsonValue& relu = Args(*by_name.at("map/body/seq_relu_kernel_time"));
  EXPECT_EQ(Str(relu, "op_name"), "Relu");
  EXPECT_EQ(Str(relu, "provider"), "CPUExecutionProvider");
  EXPECT_EQ(Str(relu, "node_index"), "0");
  EXPECT_EQ(TypeShapes(*relu.Find("input_type_shape")), "float[1,2]");
  EXPECT_EQ(TypeShapes(*relu.Find("output_type_shape")), "float[1,2]");
  EXPECT_EQ(Str(relu, "activation_size"), "8");
  EXPECT_EQ(Str(relu, "output_size"), "8");
  const JsonValue& map = Args(*by_name.at("map_kernel_time"));
  EXPECT_EQ(Str(map, "op_name"), "SequenceMap");
  EXPECT_EQ(TypeShapes(*map.Find("input_type_shape")), "seq(float)[3]");
  const JsonValue& scan = Args(*by_name.at("scan_kernel_time"));
  EXPECT_EQ(TypeShapes(*scan.Find("input_type_shape")), "float[2] float[3,2]");
  EXPECT_EQ(TypeShapes(*scan.Find("output_type_shape")), "float[2] float[3,2]");
  EXPECT_EQ(Str(scan, "parameter_size"), "8");  // init, an initializer
  EXPECT_EQ(Str(scan, "activation_size"), "24");
  EXPECT_EQ(Str(scan, "node_index"), "3");
  const JsonValue& mul = Args(*by_name.at("loop/body/inner/then_branch/mul_kernel_time"));
  EXPECT_EQ(TypeShapes(*mul.Find("input_type_shape")), "float[2] float[]");
  const JsonValue& loop = Args(*by_name.at("loop_kernel_time"));
  EXPECT_EQ(TypeShapes(*loop.Find("input_type_shape")), "int64[] float[2]");  // the absent cond left out

  // WriteTrace writes the same and forgets it; recording goes on.
  const std::string path = (std::filesystem::temp_directory_path() / "onnx_mini_trace_test.json").string();
  const size_t before = (*s)->TraceJson().size();
  ASSERT_TRUE((*s)->WriteTrace(path).ok());
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str().size(), before);
  EXPECT_EQ(Parse(text.str()).array.size(), trace.array.size());
  std::remove(path.c_str());
  EXPECT_EQ((*s)->TraceJson(), "[\n\n]\n");
  ASSERT_TRUE((*s)->Run(NestedInputs(0)).ok());
  const std::map<std::string, int> again = CountByName(Parse((*s)->TraceJson()), "Node");
  EXPECT_EQ(again.count("loop/body/cond_kernel_time"), 0u);
  EXPECT_EQ(again.at("scan/body/scan_add_kernel_time"), 3);
}

TEST(Trace, ProfileTableCountsSubgraphNodesUnderTheirOwnOpTypes) {
  SessionOptions options;
  options.profile = true;
  absl::StatusOr<std::unique_ptr<Session>> s = Nested().Build(options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->TraceJson(), "");  // no trace asked for
  for (int r = 0; r < 4; ++r) ASSERT_TRUE((*s)->Run(NestedInputs(2)).ok());
  const std::string table = (*s)->Profile();
  // op, then nodes and calls per run.
  const auto row = [&](const std::string& op) {
    const size_t at = table.find("\n" + op + " ");
    if (at == std::string::npos) return std::string("missing");
    std::istringstream line(table.substr(at + 1 + op.size(), table.find('\n', at + 1) - at - 1 - op.size()));
    double ms = 0, percent = 0, nodes = 0, calls = 0;
    line >> ms >> percent >> nodes >> calls;
    return absl::StrCat(nodes, " ", calls);
  };
  EXPECT_EQ(row("Relu"), "1 3");
  EXPECT_EQ(row("Add"), "1 3");
  EXPECT_EQ(row("Identity"), "2 5");    // the scan body's (3 calls) and "cond" (2); "keep" never ran
  EXPECT_EQ(row("Mul"), "1 2");
  EXPECT_EQ(row("If (self)"), "1 2");   // the If's own time, its branch's nodes under their op types
  EXPECT_EQ(row("Loop (self)"), "1 1");
  EXPECT_EQ(row("Scan (self)"), "1 1");
  EXPECT_EQ(row("SequenceMap (self)"), "1 1");
  EXPECT_EQ(row("SplitToSequence"), "1 1");
  EXPECT_THAT(table, HasSubstr("over 4 runs"));
  EXPECT_THAT(table, HasSubstr("all nodes"));
  EXPECT_THAT(table, HasSubstr(" 2.0  loop/body/inner/then_branch/mul\n"));
  EXPECT_THAT(table, HasSubstr(" 3.0  scan/body/Identity_1\n"));
  EXPECT_THAT(table, Not(HasSubstr("keep")));
  EXPECT_FALSE((*s)->WriteTrace("unused.json").ok());  // FailedPrecondition: no trace
  (*s)->ResetProfile();
  EXPECT_EQ((*s)->Profile(), "");
}

TEST(Trace, ConcurrentRunsRecordEveryEvent) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {64}).Output("y", DType::kFloat, {64});
  m.Node("Relu", {"a"}, {"r"}).clear_name();
  m.Node("Neg", {"r"}, {"y"}).clear_name();
  SessionOptions options;
  options.trace = true;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build(options);
  ASSERT_TRUE(s.ok()) << s.status();
  const Tensor a = Tensor::Zeros(DType::kFloat, {64});
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < 25; ++r)
        if (!(*s)->Run({{"a", a}}).ok()) ++failed;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  const JsonValue trace = Parse((*s)->TraceJson());
  const std::map<std::string, int> nodes = CountByName(trace, "Node");
  EXPECT_EQ(nodes.at("Relu_0_kernel_time"), 100);
  EXPECT_EQ(nodes.at("Neg_1_kernel_time"), 100);
  EXPECT_EQ(CountByName(trace, "Session").at("model_run"), 100);
  std::set<double> tids;
  for (const JsonValue& e : trace.array)
    if (Str(e, "name") == "model_run") tids.insert(Num(e, "tid"));
  EXPECT_GE(tids.size(), 1u);
  EXPECT_LE(tids.size(), 4u);
}

TEST(Trace, EventsPastTheCapAreCountedAsDropped) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {4}).Output("y", DType::kFloat, {4});
  m.Node("Relu", {"a"}, {"y"});
  SessionOptions options;
  options.trace = true;
  options.trace_max_events = 5;  // session_initialization, then 2 runs' 3 events each = 7
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build(options);
  ASSERT_TRUE(s.ok()) << s.status();
  const Tensor a = Tensor::Zeros(DType::kFloat, {4});
  for (int r = 0; r < 2; ++r) ASSERT_TRUE((*s)->Run({{"a", a}}).ok());
  const JsonValue trace = Parse((*s)->TraceJson());
  ASSERT_EQ(trace.array.size(), 6u);
  const JsonValue& last = trace.array.back();
  EXPECT_EQ(Str(last, "name"), "dropped_events");
  EXPECT_EQ(Str(Args(last), "count"), "2");
  // A file that cannot be written: an error, nothing lost, nothing left.
  const std::string bad = "/nonexistent_dir_for_trace_test/t.json";
  absl::Status st = (*s)->WriteTrace(bad);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("cannot write the profile to '" + bad + "'"));
  EXPECT_EQ(Parse((*s)->TraceJson()).array.size(), 6u);
  // Written: the recording starts afresh, under the cap again.
  const std::string path = (std::filesystem::temp_directory_path() / "onnx_mini_trace_cap.json").string();
  ASSERT_TRUE((*s)->WriteTrace(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::remove(path.c_str());
  ASSERT_TRUE((*s)->Run({{"a", a}}).ok());
  EXPECT_EQ(Parse((*s)->TraceJson()).array.size(), 3u);
  (*s)->ResetProfile();  // drops the events too
  EXPECT_EQ((*s)->TraceJson(), "[\n\n]\n");
}

}  // namespace
}  // namespace onnx_mini
