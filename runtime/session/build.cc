// Session::Impl::Build: interning, topological order, the signature checks,
// inference, constant folding and preparation, node by node; then the
// storage plan. And the planning of subgraphs (SubgraphPlanner::Plan).
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/outer_scope.h"
#include "runtime/session/impl.h"
#include "runtime/symbolic_dim.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

using session_detail::CheckInputs;
using session_detail::CheckOutputs;
using session_detail::CheckOutputSize;
using session_detail::MergeDeclared;
using session_detail::RunControl;
using session_detail::Step;

// Nodes whose inputs are all constants and whose inputs and outputs are this
// small are evaluated once at session creation, so shape functions downstream
// see their values.
constexpr int64_t kFoldLimit = 1 << 16;
// Inputs up to this size fold too when the outputs are within kFoldLimit: the
// Slices and Concats exporters put between a weight and its LSTM or MatMul
// (silero VAD re-sliced 64K-element weights in an If body at every run).
constexpr int64_t kFoldInputLimit = 1 << 20;
// Folding a node runs at most this many nodes and loop iterations of its
// subgraphs: a constant Loop of 2^62 iterations is left to the runs, which
// RunOptions can stop, rather than hanging session creation.
constexpr int64_t kFoldChecks = 1 << 16;

// A value's elements as dims when not known before running but read from
// shapes (ONNX's data propagation, for the shape ops exporters spell x.size(k)
// with): what node computes of an integer value of rank <= 1, from its
// inputs' known elements (`dv`: by input; constants' are their values).
// Shape of a value of known rank; Gather (axis 0) of constant indices;
// Unsqueeze, Squeeze, Reshape, Identity and Cast to int64 keeping the order;
// Concat on axis 0; Add and Sub of such elements (symbolic sums, see
// runtime/symbolic_dim.h), one side of one element broadcast. Else nullopt.
std::optional<std::vector<Dim>> DimsValue(const Node& node, const std::vector<const ValueType*>& types,
                                          const std::vector<const Tensor*>& values,
                                          const std::vector<const std::vector<Dim>*>& dv, const ValueType& out) {
  if (!node.domain.empty() || !out.is_tensor() || !out.dims || out.dims->size() > 1 ||
      (out.dtype != DType::kInt64 && out.dtype != DType::kInt32))
    return std::nullopt;
  // Input i's elements: known dims, or a constant's values.
  const auto elements = [&](size_t i) -> std::optional<std::vector<Dim>> {
    if (i < dv.size() && dv[i]) return *dv[i];
    const Tensor* t = i < values.size() ? values[i] : nullptr;
    if (!t || t->shape().size() > 1 || (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32))
      return std::nullopt;
    std::vector<Dim> d;
    for (int64_t k = 0; k < t->size(); ++k)
      d.push_back(Dim::Known(t->dtype() == DType::kInt64 ? t->data<int64_t>()[k] : t->data<int32_t>()[k]));
    for (Dim& x : d)
      if (x.value < 0) x = Dim{};  // -1 in a shape: not a dim
    return d;
  };
  const std::string& op = node.op_type;
  if (op == "Shape") {
    if (types.empty() || !types[0] || !types[0]->is_tensor() || !types[0]->dims) return std::nullopt;
    const std::vector<Dim>& d = *types[0]->dims;
    const int64_t r = int64_t(d.size());
    const auto clamp = [r](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r); };
    const int64_t start = clamp(node.attr_int("start", 0)), end = node.attr("end") ? clamp(node.attr_int("end", r)) : r;
    return std::vector<Dim>(d.begin() + start, d.begin() + std::max(start, end));
  }
  if (op == "Gather") {
    const std::optional<std::vector<Dim>> in = elements(0);
    const Tensor* at = values.size() == 2 ? values[1] : nullptr;
    if (!in || !at || node.attr_int("axis", 0) != 0 || at->shape().size() > 1 ||
        (at->dtype() != DType::kInt64 && at->dtype() != DType::kInt32))
      return std::nullopt;
    const int64_t n = int64_t(in->size());
    std::vector<Dim> d;
    for (int64_t k = 0; k < at->size(); ++k) {
      int64_t j = at->dtype() == DType::kInt64 ? at->data<int64_t>()[k] : at->data<int32_t>()[k];
      if (j < -n || j >= n) return std::nullopt;
      d.push_back((*in)[size_t(j < 0 ? j + n : j)]);
    }
    return d;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Identity" || op == "Cast") {
    std::optional<std::vector<Dim>> in = elements(0);
    if (!in || (op == "Cast" && out.dtype != DType::kInt64)) return std::nullopt;
    return in;
  }
  if ((op == "Add" || op == "Sub") && node.inputs.size() == 2) {
    const std::optional<std::vector<Dim>> a = elements(0), b = elements(1);
    if (!a || !b || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return std::nullopt;
    std::vector<Dim> d;
    for (size_t k = 0; k < std::max(a->size(), b->size()); ++k) {
      const Dim& x = (*a)[a->size() == 1 ? 0 : k];
      const Dim& y = (*b)[b->size() == 1 ? 0 : k];
      d.push_back(op == "Add" ? AddDims(x, y) : SubtractDims(x, y));
    }
    return d;
  }
  if (op == "Concat" && node.attr_int("axis", 0) == 0) {
    std::vector<Dim> d;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::optional<std::vector<Dim>> in = elements(i);
      if (!in) return std::nullopt;
      d.insert(d.end(), in->begin(), in->end());
    }
    return d;
  }
  return std::nullopt;
}

}  // namespace

absl::Status Session::Impl::Build(const std::vector<ValueType>* given) {
  threads = options.threads > 0 ? options.threads : DefaultThreads();
  budget = parent != nullptr ? parent->budget
                            : std::make_shared<MemoryBudget>(options.memory_limit > 0 ? options.memory_limit
                                                                                      : DefaultMemoryLimit());
  shared_blobs = parent != nullptr ? parent->shared_blobs : std::make_shared<std::map<BlobKey, SharedBlob>>();
  const Graph& g = *graph;
  for (auto& [name, tensor] : g.initializers) {
    int v = Intern(name);
    constants[size_t(v)] = tensor;
    value_types[size_t(v)] = ValueType::Of(tensor.dtype(), tensor.shape());
  }
  if (given && given->size() != g.inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("the subgraph has ", g.inputs.size(), " inputs, the op gives it ", given->size()));
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ValueInfo& in = g.inputs[i];
    ValueType type = in.type;
    if (given) {
      // The op's type, with what the subgraph declares where the op cannot tell.
      const ValueType& declared = in.type;
      type = (*given)[i];
      if (declared.supported() && type.kind == declared.kind) {
        if (declared.dtype != DType::kUndefined && type.dtype != DType::kUndefined && declared.dtype != type.dtype)
          return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' is declared ", declared.ToString(),
                                                         " but the op gives ", type.ToString()));
        if (type.dtype == DType::kUndefined) type.dtype = declared.dtype;
        if (!type.dims) type.dims = declared.dims;
      }
      // The rewrites' view: what holds at every iteration (a Loop's carried
      // value may change shape; the op gives the first iteration's).
      if (relax_loop_inputs) type.dims.reset();
    }
    if (!type.supported())
      return absl::UnimplementedError(absl::StrCat("not implemented: graph input '", in.name,
                                                   "' of type ", type.ToString()));
    if (type.dtype == DType::kUndefined)
      return absl::InvalidArgumentError(absl::StrCat("graph input '", in.name, "' has no element type"));
    int v = Intern(in.name);
    value_types[size_t(v)] = type;
    input_values.push_back(v);
  }
  for (const ValueInfo& out : g.outputs)
    if (!out.type.supported() && !(given && out.type.kind == ValueType::Kind::kUnknown))
      return absl::UnimplementedError(absl::StrCat("not implemented: graph output '", out.name,
                                                   "' of type ", out.type.ToString()));
  // A subgraph's reads of outer-scope values: constants there are constants
  // here; the others are captured at each run.
  if (parent) {
    std::set<std::string> free;
    FreeNames(g, free);
    for (const std::string& name : free) {
      auto it = parent->value_index.find(name);
      if (it == parent->value_index.end() || value_index.count(name)) continue;
      const int v = Intern(name);
      value_types[size_t(v)] = parent->value_types[size_t(it->second)];
      const Tensor& c = parent->constants[size_t(it->second)];
      if (c.defined()) constants[size_t(v)] = c;
      else captures.push_back({v, it->second});
    }
  }

  // Topological order (Kahn), with a clear error for names nothing produces.
  std::map<std::string, size_t> producer;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (const std::string& o : g.nodes[n].outputs)
      if (!o.empty()) {
        if (producer.count(o) || value_index.count(o))
          return absl::InvalidArgumentError(absl::StrCat(
              g.nodes[n].Describe(), ": value '", o, "' is defined more than once"));
        producer[o] = n;
      }
  std::vector<int> pending(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> consumers(g.nodes.size());
  std::vector<std::vector<std::string>> implicit(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::set<size_t> deps;
    for (const std::string& name : ImplicitInputs(g.nodes[n])) implicit[n].push_back(name);
    const auto depend = [&](const std::string& in, const char* what) -> absl::Status {
      if (in.empty() || value_index.count(in)) return absl::OkStatus();
      auto it = producer.find(in);
      if (it == producer.end())
        return absl::InvalidArgumentError(absl::StrCat(
            g.nodes[n].Describe(), ": ", what, " '", in, "' is not a graph input, an initializer or "
            "the output of any node"));
      deps.insert(it->second);
      return absl::OkStatus();
    };
    for (const std::string& in : g.nodes[n].inputs) RETURN_IF_ERROR(depend(in, "input"));
    for (const std::string& in : implicit[n]) RETURN_IF_ERROR(depend(in, "the outer-scope value"));
    deps.erase(n);
    pending[n] = int(deps.size());
    for (size_t d : deps) consumers[d].push_back(n);
  }
  std::deque<size_t> ready;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (pending[n] == 0) ready.push_back(n);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (size_t c : consumers[n])
      if (--pending[c] == 0) ready.push_back(c);
  }
  if (order.size() != g.nodes.size())
    return absl::InvalidArgumentError("the graph has a cycle");

  // Every value gets its slot now: the loop below keeps pointers into value_types.
  for (const Node& node : g.nodes)
    for (const std::string& o : node.outputs)
      if (!o.empty()) Intern(o);

  // The graph outputs by name (a name may be listed more than once), so that
  // merging their declared types costs a lookup per node output, not a scan.
  std::map<std::string, std::vector<size_t>> graph_output_positions;
  for (size_t k = 0; k < g.outputs.size(); ++k) graph_output_positions[g.outputs[k].name].push_back(k);

  // Per node: its row, its op, the signature check, inference, and constant folding.
  std::map<int, std::vector<Dim>> dims_values;  // by value index: DimsValue's
  for (size_t n : order) {
    const Node& node = g.nodes[n];
    ASSIGN_OR_RETURN(const RegisteredOp* row, ops->Find(node.domain, node.op_type, node.opset));
    Step step;
    step.node = &node;
    step.row = row;
    std::vector<const ValueType*> in_types;
    std::vector<const Tensor*> in_values;
    bool all_constant = true, shapes_known = true;
    int64_t constant_elements = 0;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        step.inputs.push_back(-1);
        in_types.push_back(nullptr);
        in_values.push_back(nullptr);
        step.input_shapes.emplace_back();
        continue;
      }
      int v = value_index.at(in);
      step.inputs.push_back(v);
      in_types.push_back(&value_types[size_t(v)]);
      const Tensor& c = constants[size_t(v)];
      in_values.push_back(c.defined() ? &c : nullptr);
      all_constant = all_constant && c.defined();
      if (c.defined()) constant_elements += c.size();
      std::optional<Shape> shape = value_types[size_t(v)].concrete_shape();
      shapes_known = shapes_known && shape.has_value() && value_types[size_t(v)].is_tensor();
      step.input_shapes.push_back(shape.value_or(Shape{}));
    }
    step.num_explicit = step.inputs.size();
    for (const std::string& in : implicit[n]) {
      const int v = value_index.at(in);
      step.inputs.push_back(v);
      all_constant = all_constant && constants[size_t(v)].defined();
    }
    std::vector<DType> bound;
    RETURN_IF_ERROR(CheckInputs(node, *row, in_types, bound));
    ASSIGN_OR_RETURN(step.op, row->def.create(node));
    InferContext ictx(node, in_types, in_values);
    ictx.set_planner(this);
    std::vector<const std::vector<Dim>*> in_dims(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (step.inputs[i] >= 0 && !in_values[i])
        if (auto it = dims_values.find(step.inputs[i]); it != dims_values.end()) in_dims[i] = &it->second;
    ictx.set_dims_values(in_dims);
    RETURN_IF_ERROR(step.op->Infer(ictx));
    std::optional<std::vector<Dim>> dims_value;
    if (node.outputs.size() == 1 && node.has_output(0))
      dims_value = DimsValue(node, in_types, in_values, in_dims, ictx.outputs()[0]);
    RETURN_IF_ERROR(CheckOutputs(node, *row, ictx.outputs(), bound));
    const bool makes_outputs = row->def.makes_outputs;
    step.is_static = makes_outputs || (shapes_known && !ictx.needs_values());
    step.output_types = ictx.outputs();
    for (const ValueType& t : step.output_types) step.output_shapes.push_back(t.concrete_shape().value_or(Shape{}));
    for (size_t i = 0; i < node.outputs.size(); ++i)
      step.scratch.push_back(!makes_outputs && !node.has_output(i) &&
                             row->output(i)->kind == RegisteredOp::Formal::kRequired);
    bool tensors_only = true;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueType& t = step.output_types[i];
      tensors_only = tensors_only && t.is_tensor();
      if (makes_outputs || (!node.has_output(i) && !step.scratch[i])) continue;
      std::optional<Shape> shape = t.concrete_shape();
      if (!shape || t.dtype == DType::kUndefined) step.is_static = false;
      else RETURN_IF_ERROR(CheckOutputSize(node, i, t.dtype, *shape));
    }
    if (step.is_static) step.plan = ictx.plan();
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.has_output(i)) {
        step.outputs.push_back(-1);
        continue;
      }
      int v = value_index.at(node.outputs[i]);
      ValueType t = ictx.outputs()[i];
      auto declared = g.value_types.find(node.outputs[i]);
      if (declared != g.value_types.end())
        RETURN_IF_ERROR(MergeDeclared(node, node.outputs[i], declared->second, t));
      if (auto listed = graph_output_positions.find(node.outputs[i]); listed != graph_output_positions.end())
        for (size_t k : listed->second) {
          const ValueInfo& out = g.outputs[k];
          RETURN_IF_ERROR(MergeDeclared(node, out.name, out.type, t));
        }
      value_types[size_t(v)] = std::move(t);
      step.outputs.push_back(v);
    }
    if (dims_value) {
      // Every element known (a Shape of known dims, say): a constant, as
      // folded; a graph output still computed, as written.
      const int v = value_index.at(node.outputs[0]);
      const ValueType& t = step.output_types[0];
      const bool all_known =
          !graph_output_positions.count(node.outputs[0]) &&
          std::all_of(dims_value->begin(), dims_value->end(), [](const Dim& d) { return d.known(); });
      if (all_known && t.dtype == DType::kInt64 && t.dims && (t.dims->size() == 1 || dims_value->size() == 1)) {
        std::vector<int64_t> e;
        for (const Dim& d : *dims_value) e.push_back(d.value);
        Tensor c = Tensor::FromVector(e, t.dims->empty() ? Shape{} : Shape{int64_t(e.size())});
        constants[size_t(v)] = std::move(c);
        continue;
      }
      dims_values[v] = *std::move(dims_value);
    }
    // Fold small constant subgraphs (their outputs too: a tiny shape input
    // must not make the session build a huge tensor at creation).
    int64_t output_elements = 0;
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.has_output(i)) {
        const std::optional<Shape> shape = step.output_types[i].concrete_shape();
        const int64_t count = shape ? ElementCount(*shape) : -1;
        output_elements = count < 0 || output_elements > kFoldLimit ? kFoldLimit + 1 : output_elements + count;
      }
    // (A node without inputs, a Constant, holds its value already: always folded.)
    if (all_constant && tensors_only && !row->def.random && constant_elements <= kFoldInputLimit &&
        (step.inputs.empty() || output_elements <= kFoldLimit)) {
      std::vector<Value> values(constants.begin(), constants.end());
      const RunControl bounded(RunOptions{}, kFoldChecks);
      if (RunStep(step, values, {}, &bounded).ok()) {
        bool folded = true;
        for (int v : step.outputs) folded = folded && (v < 0 || values[size_t(v)].is_tensor());
        if (folded) {
          for (int v : step.outputs)
            if (v >= 0) constants[size_t(v)] = values[size_t(v)].tensor();
          continue;
        }
      }
      // Folding failed: the same error will come from the run.
    }
    if (types_only) continue;  // the types are known; no kernel will run
    steps.push_back(std::move(step));  // prepared by Prepare(), once the whole session has planned
  }

  for (const ValueInfo& out : g.outputs) {
    auto it = value_index.find(out.name);
    if (it == value_index.end())
      return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name, "' is never produced"));
    output_values.push_back(it->second);
  }
  input_position.assign(value_names.size(), -1);
  for (const ValueInfo& in : g.inputs) {
    input_position[size_t(value_index.at(in.name))] = int(input_infos.size());
    input_infos.push_back({in.name, value_types[size_t(value_index.at(in.name))]});
  }
  for (const Tensor& c : constants)
    if (c.defined()) constant_storage.insert(c.storage().get());
  for (size_t i = 0; i < g.outputs.size(); ++i)
    output_infos.push_back({g.outputs[i].name, value_types[size_t(output_values[i])]});
  if (!types_only) PlanStorage();
  return absl::OkStatus();
}

namespace {

// What Op::Prepare sees of one step.
class StepPrepare : public PrepareContext {
 public:
  StepPrepare(Session::Impl& plan, const Step& step) : plan_(plan), step_(step) {}
  const Node& node() const override { return *step_.node; }
  size_t num_inputs() const override { return step_.num_explicit; }
  const Tensor* constant(size_t i) const override {
    if (i >= step_.num_explicit || step_.inputs[i] < 0) return nullptr;
    const Tensor& c = plan_.constants[size_t(step_.inputs[i])];
    return c.defined() ? &c : nullptr;
  }
  int threads() const override { return plan_.threads; }
  const std::shared_ptr<MemoryBudget>& budget() const override { return plan_.budget; }
  void release(size_t i) override {
    if (constant(i) != nullptr) released_.push_back(i);
  }
  const std::vector<size_t>& released() const { return released_; }

 protected:
  std::shared_ptr<const void> SharedBlob(size_t i, const std::string& kind,
                                         const std::function<std::shared_ptr<const void>()>& make) override {
    const Tensor* c = constant(i);
    if (c == nullptr) return nullptr;
    const Session::Impl::BlobKey key{c->storage().get(), c->dtype(), c->shape(), kind};
    auto it = plan_.shared_blobs->find(key);
    if (it != plan_.shared_blobs->end() && it->second.source.lock() == c->storage()) return it->second.blob;
    std::shared_ptr<const void> blob = make();
    if (blob) (*plan_.shared_blobs)[key] = {c->storage(), blob};
    return blob;
  }

 private:
  Session::Impl& plan_;
  const Step& step_;
  std::vector<size_t> released_;
};

}  // namespace

absl::Status Session::Impl::Prepare() {
  // A constant is freed when every read of it (explicit inputs, the
  // outer-scope reads of subgraphs) was released and it is no graph output.
  std::vector<int> readers(value_names.size(), 0), released(value_names.size(), 0);
  for (const Step& step : steps)
    for (int v : step.inputs)
      if (v >= 0) ++readers[size_t(v)];
  for (int v : output_values) ++readers[size_t(v)];
  for (Step& step : steps) {
    StepPrepare ctx(*this, step);
    RETURN_IF_ERROR(step.op->Prepare(ctx));
    for (size_t i : ctx.released()) {
      const int v = step.inputs[i];
      if (parent == nullptr && ++released[size_t(v)] == readers[size_t(v)]) FreeConstant(v);
    }
  }
  for (const std::unique_ptr<Impl>& sub : subgraphs) RETURN_IF_ERROR(sub->Prepare());
  for (size_t v = 0; v < constants.size(); ++v)
    if (readers[v] > 0 && constants[v].defined()) run_constants.push_back(int(v));
  run_constants_ready = true;
  return absl::OkStatus();
}

void Session::Impl::FillConstants(std::vector<Value>& values) const {
  if (run_constants_ready) {
    for (int v : run_constants)
      if (constants[size_t(v)].defined()) values[size_t(v)] = constants[size_t(v)];
    return;
  }
  for (size_t v = 0; v < constants.size(); ++v)
    if (constants[v].defined()) values[v] = constants[v];
}

// Drops the session's references to constant v's data (the graph's
// initializer too); its storage is freed unless someone else holds it (the
// caller's copy of the graph).
void Session::Impl::FreeConstant(int v) {
  Tensor& c = constants[size_t(v)];
  if (c.storage()) c.storage()->ReturnToSystemWhenFreed();
  const Tensor hollow = c.Hollow();
  auto it = owned_graph.initializers.find(value_names[size_t(v)]);
  if (it != owned_graph.initializers.end() && it->second.storage() == c.storage()) it->second = hollow;
  constant_storage.erase(c.storage().get());
  constant_storage.insert(hollow.storage().get());
  c = hollow;
}

}  // namespace onnx_mini
