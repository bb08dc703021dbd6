// Common-subexpression elimination: two nodes of the same op (domain, type,
// opset), the same attributes and the same inputs compute the same outputs;
// the later one's readers read the first one's, and it goes. Exporters write
// such copies per layer (the sdpa form's causal-mask Where, once per layer;
// TorchScript's Shape(x) for each x.size(k)).
//
// Inputs are the same when they are the same value, or both constants (of
// up to kMaxConstantBytes) of the same dtype, shape and bytes; attributes
// compare by value (tensors up to the same size). Never merged: random ops
// (the registry's RandomDraws rows) and Dropout unless provably in inference
// mode (each draw differs), nodes with subgraphs (If, Loop, Scan: not
// compared), ops the registry does not know, a node whose output is a graph
// output or read by a subgraph (its name must stay). Nodes are visited in
// topological order, so a merge makes their readers' copies merge too.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/outer_scope.h"
#include "runtime/registry.h"
#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {
namespace {

constexpr size_t kMaxConstantBytes = 4096;

void AppendBytes(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }
void AppendInt(std::string& key, int64_t v) { AppendBytes(key, &v, sizeof v); }
void AppendString(std::string& key, const std::string& s) {
  AppendInt(key, int64_t(s.size()));
  key += s;
}

// A tensor by value, or false when too large, a string tensor or without data.
bool AppendTensor(std::string& key, const Tensor& t) {
  if (!t.defined() || !t.raw() || t.dtype() == DType::kString || t.bytes() > kMaxConstantBytes) return false;
  AppendInt(key, int64_t(t.dtype()));
  AppendInt(key, t.rank());
  for (int64_t d : t.shape()) AppendInt(key, d);
  AppendBytes(key, t.raw(), t.bytes());
  return true;
}

bool AppendAttribute(std::string& key, const Attribute& a) {
  // Only the kinds Attribute holds whole (a sparse tensor's or a list of types' may not be).
  switch (a.type) {
    case AttrType::kFloat: case AttrType::kInt: case AttrType::kString: case AttrType::kTensor:
    case AttrType::kFloats: case AttrType::kInts: case AttrType::kStrings: case AttrType::kTensors:
    case AttrType::kTypeProto:
      break;
    default:
      return false;
  }
  AppendString(key, a.name);
  AppendInt(key, int64_t(a.type));
  AppendBytes(key, &a.f, sizeof a.f);
  AppendInt(key, a.i);
  AppendString(key, a.s);
  if (a.t.defined() && !AppendTensor(key, a.t)) return false;
  AppendInt(key, int64_t(a.floats.size()));
  if (!a.floats.empty()) AppendBytes(key, a.floats.data(), a.floats.size() * sizeof(float));
  AppendInt(key, int64_t(a.ints.size()));
  if (!a.ints.empty()) AppendBytes(key, a.ints.data(), a.ints.size() * sizeof(int64_t));
  AppendInt(key, int64_t(a.strings.size()));
  for (const std::string& s : a.strings) AppendString(key, s);
  AppendInt(key, int64_t(a.tensors.size()));
  for (const Tensor& t : a.tensors)
    if (!AppendTensor(key, t)) return false;
  AppendString(key, a.tp.ToString());
  return true;
}

// Dropout draws only in training mode: opset < 7 with is_test 0, or opset
// 12+ with a training_mode input that is not a constant false.
bool DropoutInference(const Node& node, const Index& ix) {
  if (node.opset < 7) return node.attr_int("is_test", 0) != 0;
  if (node.opset < 12 || !node.has_input(2)) return true;
  const Tensor* t = ix.Constant(node.inputs[2]);
  return t && t->raw() && t->dtype() == DType::kBool && t->size() == 1 && !t->data<bool>()[0];
}

}  // namespace

int EliminateCommonSubexpressions(Graph& g, const InPlace* place, const OpRegistry& ops, const RewriteOptions& options,
                                  std::optional<std::optional<GraphTypes>>& types) {
  const std::vector<bool> none(g.nodes.size(), false);
  Index ix(g, none, ops, options, place);
  if (types) ix.Adopt(std::move(*types));
  types.reset();
  const auto keep_types = [&] {  // the graph unchanged: its types stay good for the layout passes
    if (ix.inferred()) types = ix.TakeTypes();
    return 0;
  };
  // Topological order (Kahn over the names the nodes make); a cycle is the session's to report.
  std::map<std::string, size_t> producer;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (const std::string& o : g.nodes[n].outputs)
      if (!o.empty()) producer.emplace(o, n);
  std::vector<int> pending(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> readers(g.nodes.size());
  std::set<std::string> outer_reads;  // names subgraphs read: kept
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::set<size_t> deps;
    std::set<std::string> implicit = ImplicitInputs(g.nodes[n]);
    outer_reads.insert(implicit.begin(), implicit.end());
    for (const std::string& in : g.nodes[n].inputs)
      if (auto it = producer.find(in); !in.empty() && it != producer.end()) deps.insert(it->second);
    for (const std::string& in : implicit)
      if (auto it = producer.find(in); it != producer.end()) deps.insert(it->second);
    deps.erase(n);
    pending[n] = int(deps.size());
    for (size_t d : deps) readers[d].push_back(n);
  }
  std::vector<size_t> order;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (pending[n] == 0) order.push_back(n);
  for (size_t k = 0; k < order.size(); ++k)
    for (size_t r : readers[order[k]])
      if (--pending[r] == 0) order.push_back(r);
  if (order.size() != g.nodes.size()) return keep_types();

  std::set<std::string> graph_outputs;
  for (const ValueInfo& o : g.outputs) graph_outputs.insert(o.name);
  std::map<std::string, std::string> renamed;  // a merged node's output -> the kept node's
  std::map<std::string, size_t> seen;          // key -> the first node with it
  std::vector<bool> dead(g.nodes.size(), false);
  int merged = 0;
  for (size_t n : order) {
    Node& node = g.nodes[n];
    for (std::string& in : node.inputs)
      if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
    absl::StatusOr<const RegisteredOp*> row = ops.Find(node.domain, node.op_type, node.opset);
    if (!row.ok() || (*row)->def.random) continue;
    if (node.op_type == "Dropout" && node.domain.empty() && !DropoutInference(node, ix)) continue;
    std::string key;
    AppendString(key, node.domain);
    AppendString(key, node.op_type);
    AppendInt(key, node.opset);
    AppendInt(key, int64_t(node.inputs.size()));
    // Split without sizes cuts into as many parts as it has outputs.
    if (node.op_type == "Split" && node.domain.empty()) AppendInt(key, int64_t(node.outputs.size()));
    for (const std::string& in : node.inputs) {
      const Tensor* c = in.empty() ? nullptr : ix.Constant(in);
      std::string value;
      if (c && AppendTensor(value, *c)) key += 'c' + std::to_string(value.size()) + ':' + value;
      else key += 'v' + std::to_string(in.size()) + ':' + in;
    }
    bool comparable = true;
    AppendInt(key, int64_t(node.attributes.size()));
    for (const auto& [name, a] : node.attributes) comparable = comparable && AppendAttribute(key, a);
    if (!comparable) continue;
    auto [it, first] = seen.emplace(key, n);
    if (first) continue;
    Node& kept = g.nodes[it->second];
    bool movable = true;
    for (const std::string& o : node.outputs)
      movable = movable && (o.empty() || (!graph_outputs.count(o) && !outer_reads.count(o)));
    if (!movable) continue;
    if (kept.outputs.size() < node.outputs.size()) kept.outputs.resize(node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      if (kept.outputs[i].empty()) kept.outputs[i] = node.outputs[i];  // an output the kept node skipped
      else {
        renamed[node.outputs[i]] = kept.outputs[i];
        g.value_types.erase(node.outputs[i]);
      }
    }
    dead[n] = true;
    ++merged;
  }
  if (merged == 0) return keep_types();
  std::vector<Node> live;
  live.reserve(g.nodes.size() - size_t(merged));
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!dead[n]) live.push_back(std::move(g.nodes[n]));
  g.nodes = std::move(live);
  return merged;
}

}  // namespace rewrite
}  // namespace onnx_mini
