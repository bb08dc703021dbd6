#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {

Attribute IntAttr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}
Attribute FloatAttr(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = v;
  return a;
}

namespace {

// Nodes whose removal changes what a run does though nothing reads them:
// the random ops (one generator may serve several), kept.
bool Draws(const Node& n) {
  static const char* const kRandom[] = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                        "Bernoulli", "Multinomial"};
  for (const char* op : kRandom)
    if (n.op_type == op) return true;
  return false;
}

bool HasSubgraph(const Node& n) {
  for (const auto& [name, a] : n.attributes)
    if (a.type == AttrType::kGraph || a.type == AttrType::kGraphs) return true;
  return false;
}

}  // namespace

int Index::DropUnread(std::vector<bool>& dead) const {
  std::map<std::string, int> live;  // reads by live nodes (their subgraphs' included)
  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    if (dead[n]) continue;
    for (const std::string& in : g_.nodes[n].inputs)
      if (!in.empty()) ++live[in];
    for (const std::string& in : ImplicitInputs(g_.nodes[n])) ++live[in];
  }
  const auto reads = [&](const std::string& v) {
    auto it = live.find(v);
    return it == live.end() ? 0 : it->second;
  };
  std::vector<std::string> work;
  for (const auto& [name, before] : uses_)
    if (before > 0 && reads(name) == 0) work.push_back(name);
  int dropped = 0;
  while (!work.empty()) {
    const std::string v = std::move(work.back());
    work.pop_back();
    auto it = producer_.find(v);
    if (it == producer_.end() || dead[it->second]) continue;
    const Node& p = g_.nodes[it->second];
    if (!p.domain.empty() || HasSubgraph(p) || Draws(p)) continue;
    bool unread = true;
    for (const std::string& o : p.outputs) unread = unread && (o.empty() || (!IsOutput(o) && reads(o) == 0));
    if (!unread) continue;
    dead[it->second] = true;
    ++dropped;
    for (const std::string& in : p.inputs)
      if (!in.empty() && --live[in] == 0) work.push_back(in);
  }
  return dropped;
}

bool LastDimIs(const Index& ix, const std::string& x, int64_t n) {
  const auto d = ix.DimsOf(x);
  return d && !d->empty() && d->back() == n;
}

}  // namespace rewrite
}  // namespace onnx_mini
