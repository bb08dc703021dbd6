// Profiling: the timed execution of a graph's steps (SessionOptions::profile
// and ::trace), the per-node events and their Chrome-trace JSON in
// onnxruntime's profile format, and Session::Profile()'s tables.
#include "runtime/session/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/json_escape.h"
#include "runtime/session/impl.h"

namespace onnx_mini {
namespace session_detail {
namespace {

// onnxruntime's names of element types in its traces.
const char* TraceTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat: return "float";
    case DType::kDouble: return "double";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kFloat16: return "MLFloat16";
    case DType::kBFloat16: return "BFloat16";
    case DType::kFloat8E4M3FN: return "Float8E4M3FN";
    case DType::kFloat8E4M3FNUZ: return "Float8E4M3FNUZ";
    case DType::kFloat8E5M2: return "Float8E5M2";
    case DType::kFloat8E5M2FNUZ: return "Float8E5M2FNUZ";
    case DType::kUInt4: return "UInt4x2";
    case DType::kInt4: return "Int4x2";
    case DType::kFloat4E2M1: return "Float4E2M1x2";
    default: return nullptr;
  }
}

// [{"float":[2,3]},{"seq(int64)":[4]}]
void AppendTypeShapes(std::string& out, const std::vector<TraceValue>& values, size_t begin, size_t end) {
  out += '[';
  for (size_t i = begin; i < end; ++i) {
    const TraceValue& v = values[i];
    if (i > begin) out += ',';
    const char* name = TraceTypeName(v.dtype);
    const std::string type = name ? name : LowerName(v.dtype);
    out += "{\"";
    if (v.kind == TraceValue::kSequence) absl::StrAppend(&out, "seq(", type, ")");
    else if (v.kind == TraceValue::kNone) out += "none";
    else out += type;
    out += "\":[";
    for (size_t d = 0; d < v.shape.size(); ++d) absl::StrAppend(&out, d ? "," : "", v.shape[d]);
    out += "]}";
  }
  out += ']';
}

}  // namespace

int64_t Tracer::ThreadId() {
  thread_local const int64_t id = int64_t(syscall(SYS_gettid));
  return id;
}

void Tracer::Record(TraceEvent&& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

void Tracer::RecordSession(const char* name, int64_t start_ns) {
  TraceEvent e;
  e.session_name = name;
  e.start_ns = start_ns;
  e.end_ns = Now();
  e.tid = ThreadId();
  Record(std::move(e));
}

size_t Tracer::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

void Tracer::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  dropped_ = 0;
}

std::string Tracer::Json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ToJson(events_, dropped_);
}

std::string Tracer::ToJson(const std::vector<TraceEvent>& events, int64_t dropped) {
  // By start time, an enclosing event (If) before those it contains.
  std::vector<const TraceEvent*> order;
  order.reserve(events.size());
  for (const TraceEvent& e : events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  const int64_t pid = int64_t(getpid());
  std::string out = "[\n";
  out.reserve(order.size() * 320);
  bool first = true;
  const auto head = [&](const char* cat, int64_t tid, int64_t start_ns, int64_t end_ns) {
    if (!first) out += ",\n";
    first = false;
    // Whole microseconds as onnxruntime writes them; both ends rounded down,
    // so a node stays inside the If or Loop that ran it.
    const int64_t ts = start_ns / 1000, dur = end_ns / 1000 - ts;
    absl::StrAppend(&out, "{\"cat\" : \"", cat, "\",\"pid\" :", pid, ",\"tid\" :", tid, ",\"dur\" :", dur,
                    ",\"ts\" :", ts, ",\"ph\" : \"X\",\"name\" :\"");
  };
  for (const TraceEvent* e : order) {
    if (e->node == nullptr) {
      head("Session", e->tid, e->start_ns, e->end_ns);
      absl::StrAppend(&out, e->session_name, "\",\"args\" : {}}");
      continue;
    }
    head("Node", e->tid, e->start_ns, e->end_ns);
    AppendJsonEscaped(out, e->node->name);
    size_t activation = 0, parameter = 0, output = 0;
    for (size_t i = 0; i < e->values.size(); ++i) {
      const TraceValue& v = e->values[i];
      if (v.kind != TraceValue::kTensor) continue;
      (i >= e->num_inputs ? output : v.constant ? parameter : activation) += v.bytes;
    }
    out += "\",\"args\" : {\"op_name\" : \"";
    AppendJsonEscaped(out, e->node->op_type);
    absl::StrAppend(&out, "\",\"provider\" : \"CPUExecutionProvider\",\"node_index\" : \"", e->node->node_index,
                    "\",\"activation_size\" : \"", activation, "\",\"parameter_size\" : \"", parameter,
                    "\",\"output_size\" : \"", output, "\",\"input_type_shape\" : ");
    AppendTypeShapes(out, e->values, 0, e->num_inputs);
    out += ",\"output_type_shape\" : ";
    AppendTypeShapes(out, e->values, e->num_inputs, e->values.size());
    out += "}}";
  }
  if (dropped > 0) {
    if (!first) out += ",\n";
    const int64_t end = order.empty() ? 0 : order.back()->end_ns / 1000;
    absl::StrAppend(&out, "{\"cat\" : \"Session\",\"pid\" :", pid, ",\"tid\" :", ThreadId(), ",\"dur\" :0,\"ts\" :",
                    end, ",\"ph\" : \"X\",\"name\" :\"dropped_events\",\"args\" : {\"count\" : \"", dropped,
                    "\"}}");
  }
  out += "\n]\n";
  return out;
}

absl::Status Tracer::Write(const std::string& path) {
  std::vector<TraceEvent> taken;
  int64_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken.swap(events_);
    std::swap(dropped, dropped_);
  }
  const std::string json = ToJson(taken, dropped);
  // Written whole or not at all: a temporary beside it, renamed.
  const std::string tmp = path + ".tmp";
  bool ok = false;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    ok = f && f.write(json.data(), std::streamsize(json.size())) && f.flush();
  }
  if (ok) ok = std::rename(tmp.c_str(), path.c_str()) == 0;
  if (ok) return absl::OkStatus();
  std::remove(tmp.c_str());
  // Put the events back (before any recorded since) for a later attempt.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken.insert(taken.end(), std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.swap(taken);
    dropped_ += dropped;
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot write the profile to '", path, "'"));
}

}  // namespace session_detail

using session_detail::Step;
using session_detail::TraceEvent;
using session_detail::Tracer;
using session_detail::TraceValue;

namespace {

// A node's name in traces and tables: its own, or "<op>_<index>" like onnxruntime's.
std::string NodeLabel(const Node& node, int64_t index) {
  return node.name.empty() ? absl::StrCat(node.op_type, "_", index) : node.name;
}

// The attribute of `node` that holds `graph` ("then_branch", "body").
std::string AttributeOf(const Node& node, const Graph* graph) {
  for (const auto& [name, attr] : node.attributes) {
    if (attr.g.get() == graph) return name;
    for (size_t k = 0; k < attr.graphs.size(); ++k)
      if (attr.graphs[k].get() == graph) return absl::StrCat(name, "[", k, "]");
  }
  return "subgraph";
}

TraceValue Describe(const Value& v, bool constant) {
  TraceValue t;
  t.constant = constant;
  if (v.is_tensor()) {
    t.dtype = v.tensor().dtype();
    t.shape = v.tensor().shape();
    t.bytes = v.tensor().bytes();
  } else if (v.is_sequence()) {
    t.kind = TraceValue::kSequence;
    t.dtype = v.sequence_dtype();
    t.shape = {int64_t(v.sequence().size())};
  } else {
    t.kind = TraceValue::kNone;
  }
  return t;
}

}  // namespace

void Session::Impl::AttachProfiling(const std::string& prefix, const std::shared_ptr<Tracer>& with_tracer,
                                    bool aggregate) {
  tracer = with_tracer;
  if (aggregate) {
    step_ns.reset(new std::atomic<int64_t>[steps.size()]);
    step_calls.reset(new std::atomic<int64_t>[steps.size()]);
    for (size_t s = 0; s < steps.size(); ++s) step_ns[s] = 0, step_calls[s] = 0;
  }
  trace_nodes.assign(steps.size(), {});
  for (size_t s = 0; s < steps.size(); ++s) {
    const Node* node = steps[s].node;
    const bool in_graph = node >= graph->nodes.data() && node < graph->nodes.data() + graph->nodes.size();
    session_detail::TraceNode& t = trace_nodes[s];
    t.node_index = in_graph ? int64_t(node - graph->nodes.data()) : int64_t(s);
    t.name = prefix + NodeLabel(*node, t.node_index);  // "_kernel_time" added when written
    t.op_type = node->op_type;
  }
  for (const std::unique_ptr<Impl>& sub : subgraphs) {
    size_t s = 0;
    while (s < steps.size() && steps[s].node != sub->owner) ++s;
    const std::string parent = s < steps.size() ? trace_nodes[s].name : prefix + "?";
    sub->AttachProfiling(absl::StrCat(parent, "/", AttributeOf(*sub->owner, sub->graph), "/"), with_tracer, aggregate);
  }
  for (session_detail::TraceNode& t : trace_nodes) t.name += "_kernel_time";
}

absl::Status Session::Impl::ExecuteProfiled(std::vector<Value>& values,
                                            const std::vector<std::vector<Tensor>>* direct,
                                            const session_detail::RunControl* control) const {
  static const std::vector<Tensor> kNone;
  Tracer* tr = tracer.get();
  const int64_t graph_start = tr ? tr->Now() : 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    if (control != nullptr)
      RETURN_IF_ERROR(control->Check(*step.node, direct != nullptr && !(*direct)[s].empty()));
    TraceEvent event;
    if (tr) {
      // The inputs now: the step releases those it reads last.
      event.values.reserve(step.num_explicit + step.outputs.size());
      for (size_t i = 0; i < step.num_explicit; ++i)
        if (step.inputs[i] >= 0)
          event.values.push_back(Describe(values[size_t(step.inputs[i])], constants[size_t(step.inputs[i])].defined()));
      event.num_inputs = uint32_t(event.values.size());
      event.start_ns = tr->Now();
    }
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(RunStep(step, values, direct ? (*direct)[s] : kNone, control));
    if (step_ns) {
      step_ns[s].fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
          std::memory_order_relaxed);
      step_calls[s].fetch_add(1, std::memory_order_relaxed);
    }
    if (tr) {
      event.end_ns = tr->Now();
      for (int v : step.outputs)
        if (v >= 0) event.values.push_back(Describe(values[size_t(v)], false));
      event.node = &trace_nodes[s];
      event.tid = Tracer::ThreadId();
      tr->Record(std::move(event));
    }
  }
  if (tr) tr->RecordSession("SequentialExecutor::Execute", graph_start);
  if (parent == nullptr && step_ns) profiled_runs.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

namespace {

struct NodeTime {
  std::string name, op;
  int64_t self_ns = 0, calls = 0;
};

// Every step of `im` and its subgraphs: its time less its subgraphs' (self).
void CollectTimes(const Session::Impl& im, std::vector<NodeTime>& out) {
  std::vector<int64_t> inner(im.steps.size(), 0);
  for (const std::unique_ptr<Session::Impl>& sub : im.subgraphs) {
    for (size_t s = 0; s < im.steps.size(); ++s) {
      if (im.steps[s].node != sub->owner) continue;
      for (size_t t = 0; t < sub->steps.size(); ++t) inner[s] += sub->step_ns[t].load();
      break;
    }
    CollectTimes(*sub, out);
  }
  for (size_t s = 0; s < im.steps.size(); ++s) {
    const Node& node = *im.steps[s].node;
    NodeTime t;
    t.name = im.trace_nodes[s].name.substr(0, im.trace_nodes[s].name.size() - std::string("_kernel_time").size());
    t.op = node.domain.empty() ? node.op_type : absl::StrCat(node.domain, "::", node.op_type);
    if (inner[s] > 0 || std::any_of(im.subgraphs.begin(), im.subgraphs.end(),
                                    [&](const auto& sub) { return sub->owner == &node; }))
      t.op += " (self)";
    t.self_ns = std::max<int64_t>(0, im.step_ns[s].load() - inner[s]);
    t.calls = im.step_calls[s].load();
    out.push_back(std::move(t));
  }
}

void ResetTimes(const Session::Impl& im) {
  for (size_t s = 0; s < im.steps.size(); ++s) im.step_ns[s] = 0, im.step_calls[s] = 0;
  im.inferred_steps = 0;
  im.reused_steps = 0;
  for (const std::unique_ptr<Session::Impl>& sub : im.subgraphs) ResetTimes(*sub);
}

// Steps planned at run time (Infer called) and steps that reused the last run's plan, subgraphs included.
void CountReplans(const Session::Impl& im, int64_t& inferred, int64_t& reused) {
  inferred += im.inferred_steps.load();
  reused += im.reused_steps.load();
  for (const std::unique_ptr<Session::Impl>& sub : im.subgraphs) CountReplans(*sub, inferred, reused);
}

}  // namespace

void Session::ResetProfile() const {
  const Impl& im = *impl_;
  if (im.tracer) im.tracer->Clear();
  if (!im.step_ns) return;
  ResetTimes(im);
  im.profiled_runs = 0;
}

std::string Session::Profile() const {
  const Impl& im = *impl_;
  const int64_t runs = im.profiled_runs.load();
  if (!im.step_ns || runs == 0) return "";
  std::vector<NodeTime> nodes;
  CollectTimes(im, nodes);
  struct Total {
    int64_t ns = 0, nodes = 0, calls = 0;
  };
  std::map<std::string, Total> by_op;
  int64_t all = 0;
  for (size_t s = 0; s < im.steps.size(); ++s) all += im.step_ns[s].load();
  for (const NodeTime& n : nodes) {
    if (n.calls == 0) continue;  // a branch never taken
    Total& t = by_op[n.op];
    t.ns += n.self_ns;
    t.nodes += 1;
    t.calls += n.calls;
  }
  const double per_run = 1e6 * double(runs);
  const auto percent = [&](int64_t ns) { return all ? 100.0 * double(ns) / double(all) : 0.0; };
  std::vector<std::pair<std::string, Total>> rows(by_op.begin(), by_op.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::string out = absl::StrFormat("%-32s %10s %6s %6s %8s\n", "op (per run, over " + std::to_string(runs) + " runs)",
                                    "ms", "%", "nodes", "calls");
  for (const auto& [op, t] : rows)
    out += absl::StrFormat("%-32s %10.4f %6.1f %6d %8.1f\n", op, double(t.ns) / per_run, percent(t.ns), t.nodes,
                           double(t.calls) / double(runs));
  out += absl::StrFormat("%-32s %10.4f\n", "all nodes", double(all) / per_run);
  int64_t inferred = 0, reused = 0;
  CountReplans(im, inferred, reused);
  out += absl::StrFormat("nodes re-inferred per run: %.1f (run-time plans reused: %.1f)\n",
                         double(inferred) / double(runs), double(reused) / double(runs));
  // The nodes that took longest (self time: a Loop's body nodes are listed
  // on their own), subgraph nodes named through their parents.
  std::stable_sort(nodes.begin(), nodes.end(), [](const NodeTime& a, const NodeTime& b) { return a.self_ns > b.self_ns; });
  size_t ran = 0;
  for (const NodeTime& n : nodes) ran += n.calls > 0;
  const size_t top = std::min<size_t>(ran, 15);
  out += absl::StrFormat("\n%-32s %10s %6s %8s  %s\n", "op", "ms", "%", "calls",
                         "node (per run, top " + std::to_string(top) + ")");
  for (size_t i = 0, shown = 0; i < nodes.size() && shown < top; ++i) {
    if (nodes[i].calls == 0) continue;
    ++shown;
    out += absl::StrFormat("%-32s %10.4f %6.1f %8.1f  %s\n", nodes[i].op, double(nodes[i].self_ns) / per_run,
                           percent(nodes[i].self_ns), double(nodes[i].calls) / double(runs), nodes[i].name);
  }
  return out;
}

}  // namespace onnx_mini
