#include "runtime/session.h"

#include <omp.h>

#include <deque>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/loader.h"
#include "runtime/registry.h"

namespace onnx_mini {
namespace {

// Nodes whose inputs are all constants and this small are evaluated once at
// session creation, so shape functions downstream see their values.
constexpr int64_t kFoldLimit = 1 << 16;

struct Step {
  const Node* node;
  const OpDef* op;
  std::unique_ptr<OpKernel> kernel;
  std::vector<int> inputs;   // value index, -1 if absent
  std::vector<int> outputs;  // value index, -1 if not requested
  std::vector<int> release;  // values whose last use is this step
};

// Merges a declared type into an inferred one; a contradiction is an error.
absl::Status MergeDeclared(const Node& node, const std::string& name, const ValueType& declared,
                           ValueType& inferred) {
  if (declared.kind != ValueType::Kind::kTensor) return absl::OkStatus();
  if (declared.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined &&
      declared.dtype != inferred.dtype)
    return absl::InvalidArgumentError(absl::StrCat(
        node.Describe(), ": output '", name, "' is declared ", LowerName(declared.dtype),
        " but the op produces ", LowerName(inferred.dtype)));
  if (inferred.dtype == DType::kUndefined) inferred.dtype = declared.dtype;
  if (!declared.dims) return absl::OkStatus();
  if (!inferred.dims) {
    inferred.dims = declared.dims;
    return absl::OkStatus();
  }
  if (declared.dims->size() != inferred.dims->size())
    return absl::InvalidArgumentError(absl::StrCat(
        node.Describe(), ": output '", name, "' is declared ", declared.ToString(),
        " but the op produces ", inferred.ToString(), " (rank differs)"));
  for (size_t i = 0; i < declared.dims->size(); ++i) {
    Dim& have = (*inferred.dims)[i];
    const Dim& want = (*declared.dims)[i];
    if (have.known() && want.known() && have.value != want.value)
      return absl::InvalidArgumentError(absl::StrCat(
          node.Describe(), ": output '", name, "' is declared ", declared.ToString(),
          " but the op produces ", inferred.ToString()));
    if (!have.known()) have = want;
  }
  return absl::OkStatus();
}

bool Overlaps(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.bytes() == 0 || b.bytes() == 0) return false;
  const char* a0 = static_cast<const char*>(a.raw());
  const char* b0 = static_cast<const char*>(b.raw());
  return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

}  // namespace

struct Session::Impl {
  Graph graph;
  SessionOptions options;
  int threads = 1;
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, int> value_index;
  std::vector<std::string> value_names;
  std::vector<ValueType> value_types;
  std::vector<Tensor> constants;  // by value index; undefined if not constant
  std::vector<int> input_values, output_values;
  std::vector<bool> is_graph_output;
  std::vector<Step> steps;

  int Intern(const std::string& name) {
    auto [it, inserted] = value_index.emplace(name, int(value_names.size()));
    if (inserted) {
      value_names.push_back(name);
      value_types.emplace_back();
      constants.emplace_back();
    }
    return it->second;
  }

  absl::Status Build();
  // Runs one step on `values`; `outputs` and `caller_bound` describe
  // caller-provided graph output buffers (may be null/empty).
  absl::Status RunStep(const Step& step, std::vector<Tensor>& values, std::vector<Tensor>* outputs,
                       const std::vector<bool>& caller_bound) const;
};

absl::Status Session::Impl::Build() {
  threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  for (auto& [name, tensor] : graph.initializers) {
    int v = Intern(name);
    constants[size_t(v)] = tensor;
    value_types[size_t(v)] = ValueType::Of(tensor.dtype(), tensor.shape());
  }
  for (const ValueInfo& in : graph.inputs) {
    if (in.type.kind != ValueType::Kind::kTensor)
      return absl::UnimplementedError(absl::StrCat("not implemented: graph input '", in.name,
                                                   "' of type ", in.type.ToString()));
    if (in.type.dtype == DType::kUndefined)
      return absl::InvalidArgumentError(absl::StrCat("graph input '", in.name, "' has no element type"));
    int v = Intern(in.name);
    value_types[size_t(v)] = in.type;
    input_values.push_back(v);
  }
  for (const ValueInfo& out : graph.outputs)
    if (out.type.kind != ValueType::Kind::kTensor)
      return absl::UnimplementedError(absl::StrCat("not implemented: graph output '", out.name,
                                                   "' of type ", out.type.ToString()));

  // Topological order (Kahn), with a clear error for names nothing produces.
  std::map<std::string, size_t> producer;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (const std::string& o : graph.nodes[n].outputs)
      if (!o.empty()) {
        if (producer.count(o) || value_index.count(o))
          return absl::InvalidArgumentError(absl::StrCat(
              graph.nodes[n].Describe(), ": value '", o, "' is defined more than once"));
        producer[o] = n;
      }
  std::vector<int> pending(graph.nodes.size(), 0);
  std::vector<std::vector<size_t>> consumers(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    std::set<size_t> deps;
    for (const std::string& in : graph.nodes[n].inputs) {
      if (in.empty() || value_index.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return absl::InvalidArgumentError(absl::StrCat(
            graph.nodes[n].Describe(), ": input '", in, "' is not a graph input, an initializer or "
            "the output of any node"));
      deps.insert(it->second);
    }
    pending[n] = int(deps.size());
    for (size_t d : deps) consumers[d].push_back(n);
  }
  std::deque<size_t> ready;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (pending[n] == 0) ready.push_back(n);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (size_t c : consumers[n])
      if (--pending[c] == 0) ready.push_back(c);
  }
  if (order.size() != graph.nodes.size())
    return absl::InvalidArgumentError("the graph has a cycle");

  // Every value gets its slot now: the loop below keeps pointers into value_types.
  for (const Node& node : graph.nodes)
    for (const std::string& o : node.outputs)
      if (!o.empty()) Intern(o);

  // Inference, kernel creation and constant folding, node by node.
  for (size_t n : order) {
    const Node& node = graph.nodes[n];
    absl::StatusOr<const OpDef*> op = FindOp(node);
    if (!op.ok()) return op.status();
    Step step;
    step.node = &node;
    step.op = *op;
    std::vector<const ValueType*> in_types;
    std::vector<const Tensor*> in_values;
    bool all_constant = true;
    int64_t constant_elements = 0;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        step.inputs.push_back(-1);
        in_types.push_back(nullptr);
        in_values.push_back(nullptr);
        continue;
      }
      int v = value_index.at(in);
      step.inputs.push_back(v);
      in_types.push_back(&value_types[size_t(v)]);
      const Tensor& c = constants[size_t(v)];
      in_values.push_back(c.defined() ? &c : nullptr);
      all_constant = all_constant && c.defined();
      if (c.defined()) constant_elements += c.size();
    }
    InferContext ictx(node, in_types, in_values);
    absl::Status s = step.op->infer(ictx);
    if (!s.ok()) return s;
    std::vector<const ValueType*> out_types;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) {
        step.outputs.push_back(-1);
        out_types.push_back(nullptr);
        continue;
      }
      int v = value_index.at(node.outputs[i]);
      ValueType t = ictx.outputs()[i];
      auto declared = graph.value_types.find(node.outputs[i]);
      if (declared != graph.value_types.end()) {
        s = MergeDeclared(node, node.outputs[i], declared->second, t);
        if (!s.ok()) return s;
      }
      for (const ValueInfo& out : graph.outputs)
        if (out.name == node.outputs[i]) {
          s = MergeDeclared(node, out.name, out.type, t);
          if (!s.ok()) return s;
        }
      value_types[size_t(v)] = std::move(t);
      step.outputs.push_back(v);
      out_types.push_back(&value_types[size_t(v)]);
    }
    KernelInfo info{node, in_types, out_types, in_values};
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel = step.op->create(info);
    if (!kernel.ok()) return kernel.status();
    step.kernel = *std::move(kernel);
    if (all_constant && constant_elements <= kFoldLimit) {
      std::vector<Tensor> values(constants);
      if (RunStep(step, values, nullptr, {}).ok()) {
        for (int v : step.outputs)
          if (v >= 0) constants[size_t(v)] = values[size_t(v)];
        continue;
      }
      // Folding failed: the same error will come from the run.
    }
    steps.push_back(std::move(step));
  }

  for (const ValueInfo& out : graph.outputs) {
    auto it = value_index.find(out.name);
    if (it == value_index.end())
      return absl::InvalidArgumentError(absl::StrCat("graph output '", out.name, "' is never produced"));
    output_values.push_back(it->second);
  }
  for (const ValueInfo& in : graph.inputs) inputs.push_back({in.name, value_types[size_t(value_index.at(in.name))]});
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    outputs.push_back({graph.outputs[i].name, value_types[size_t(output_values[i])]});

  // Last uses: a value is released after the last step that reads it,
  // unless it is a graph output or a constant.
  is_graph_output.assign(value_names.size(), false);
  for (int v : output_values) is_graph_output[size_t(v)] = true;
  std::vector<int> last_use(value_names.size(), -1);
  for (size_t s2 = 0; s2 < steps.size(); ++s2)
    for (int v : steps[s2].inputs)
      if (v >= 0) last_use[size_t(v)] = int(s2);
  for (size_t v = 0; v < last_use.size(); ++v)
    if (last_use[v] >= 0 && !is_graph_output[v] && !constants[v].defined())
      steps[size_t(last_use[v])].release.push_back(int(v));
  return absl::OkStatus();
}

namespace {

class StepContext : public KernelContext {
 public:
  StepContext(std::vector<const Tensor*> inputs, std::vector<Tensor*> outputs,
              std::vector<ValueType> output_types, int threads, const Tensor* reusable)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)),
        types_(std::move(output_types)), threads_(threads), reusable_(reusable) {}

  size_t num_inputs() const override { return inputs_.size(); }
  const Tensor* input(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < outputs_.size() && outputs_[i]; }
  Tensor& output(size_t i) override {
    Tensor& out = *outputs_[i];
    if (!out.defined()) {
      const Shape shape = *types_[i].concrete_shape();
      if (i == 0 && reusable_ != nullptr) {
        out = reusable_->Reshaped(shape);
      } else {
        // Kernels write their outputs in full; the size was checked before.
        absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(types_[i].dtype, shape);
        if (t.ok()) out = *std::move(t);
      }
    }
    return out;
  }
  void set_output(size_t i, Tensor view) override { *outputs_[i] = std::move(view); }
  Shape output_shape(size_t i) const override { return types_[i].concrete_shape().value_or(Shape{}); }
  int threads() const override { return threads_; }

 private:
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> outputs_;
  std::vector<ValueType> types_;
  int threads_;
  const Tensor* reusable_;
};

}  // namespace

absl::Status Session::Impl::RunStep(const Step& step, std::vector<Tensor>& values,
                                    std::vector<Tensor>* graph_out,
                                    const std::vector<bool>& caller_bound) const {
  {
    const Node& node = *step.node;
    std::vector<const Tensor*> in_ptrs;
    std::vector<ValueType> in_types(step.inputs.size());
    std::vector<const ValueType*> in_type_ptrs;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      int v = step.inputs[i];
      if (v < 0 || !values[size_t(v)].defined()) {
        in_ptrs.push_back(nullptr);
        in_type_ptrs.push_back(nullptr);
        continue;
      }
      const Tensor& t = values[size_t(v)];
      in_ptrs.push_back(&t);
      in_types[i] = ValueType::Of(t.dtype(), t.shape());
      in_type_ptrs.push_back(&in_types[i]);
    }
    InferContext ictx(node, in_type_ptrs, in_ptrs);
    ictx.set_running(true);
    absl::Status s = step.op->infer(ictx);
    if (!s.ok()) return s;

    // Output buffers: caller-bound graph outputs, else allocated on demand.
    std::vector<Tensor> results(step.outputs.size());
    std::vector<Tensor*> out_ptrs(step.outputs.size(), nullptr);
    std::vector<int> bound_to(step.outputs.size(), -1);
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      int v = step.outputs[i];
      if (v < 0) continue;
      const ValueType& t = ictx.outputs()[i];
      std::optional<Shape> shape = t.concrete_shape();
      if (!shape || t.dtype == DType::kUndefined)
        return absl::InternalError(absl::StrCat(node.Describe(), ": output ", i,
                                                " has no concrete type at run time: ", t.ToString()));
      // Refuse absurd sizes here, before a kernel could ask for the buffer.
      const int64_t count = ElementCount(*shape);
      if (count < 0 || StorageBytes(t.dtype, count) > kMaxTensorBytes)
        return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": output ", i, " of shape ",
                                                       ShapeToString(*shape), " is too large"));
      out_ptrs[i] = &results[i];
      if (graph_out == nullptr) continue;
      for (size_t k = 0; k < output_values.size(); ++k) {
        if (output_values[k] != v || !caller_bound[k]) continue;
        const Tensor& buf = (*graph_out)[k];
        if (buf.dtype() != t.dtype || buf.shape() != *shape)
          return absl::InvalidArgumentError(absl::StrCat(
              "output '", value_names[size_t(v)], "': the caller's buffer is ", LowerName(buf.dtype()),
              ShapeToString(buf.shape()), " but the result is ", LowerName(t.dtype), ShapeToString(*shape)));
        // A caller buffer that overlaps an input is safe only for the input
        // the kernel declares it can update in place.
        bool unsafe = false;
        for (size_t j = 0; j < in_ptrs.size(); ++j)
          if (in_ptrs[j] && Overlaps(buf, *in_ptrs[j]) &&
              !(i == 0 && int(j) == step.op->inplace_input && buf.raw() == in_ptrs[j]->raw()))
            unsafe = true;
        if (!unsafe) results[i] = buf;
        bound_to[i] = int(k);
      }
    }
    // In-place reuse of an input whose last use is here and that nobody else holds.
    const Tensor* reusable = nullptr;
    const int in_place = step.op->inplace_input;
    if (in_place >= 0 && size_t(in_place) < step.inputs.size() && step.outputs.size() > 0 &&
        step.outputs[0] >= 0 && !results[0].defined()) {
      int v = step.inputs[size_t(in_place)];
      const ValueType& t = ictx.outputs()[0];
      if (v >= 0 && std::find(step.release.begin(), step.release.end(), v) != step.release.end() &&
          values[size_t(v)].defined() &&
          values[size_t(v)].storage()->owned() && values[size_t(v)].storage().use_count() == 1 &&
          values[size_t(v)].dtype() == t.dtype &&
          values[size_t(v)].size() == ElementCount(*t.concrete_shape())) {
        bool used_twice = false;
        for (size_t j = 0; j < step.inputs.size(); ++j)
          if (int(j) != in_place && step.inputs[j] == v) used_twice = true;
        if (!used_twice) reusable = &values[size_t(v)];
      }
    }
    StepContext ctx(in_ptrs, out_ptrs, ictx.outputs(), threads, reusable);
    s = step.kernel->Compute(ctx);
    if (!s.ok()) return s;

    for (size_t i = 0; i < step.outputs.size(); ++i) {
      int v = step.outputs[i];
      if (v < 0) continue;
      Tensor& r = results[i];
      if (!r.defined())  // the kernel did not produce it: zeros, never stale memory
        r = Tensor::Zeros(ictx.outputs()[i].dtype, *ictx.outputs()[i].concrete_shape());
      if (bound_to[i] >= 0) {
        Tensor& buf = (*graph_out)[size_t(bound_to[i])];
        if (r.raw() != buf.raw()) CopyElements(r, buf, threads);
        r = buf;
      }
      values[size_t(v)] = std::move(r);
    }
    for (int v : step.release) values[size_t(v)] = Tensor();
  }
  return absl::OkStatus();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(Graph graph, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->graph = std::move(graph);
  impl->options = options;
  absl::Status s = impl->Build();
  if (!s.ok()) return s;
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Session>> Session::Load(const std::string& path,
                                                       const SessionOptions& options) {
  absl::StatusOr<Graph> g = LoadModel(path);
  if (!g.ok()) return g.status();
  return Create(*std::move(g), options);
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }
const Graph& Session::graph() const { return impl_->graph; }

absl::Status Session::Run(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs) const {
  const Impl& im = *impl_;
  std::vector<Tensor> values(im.value_names.size());
  for (size_t v = 0; v < im.constants.size(); ++v) values[v] = im.constants[v];
  std::set<std::string> given;
  for (const NamedTensor& in : inputs) {
    const ValueInfo* info = nullptr;
    for (const ValueInfo& vi : im.inputs)
      if (vi.name == in.name) info = &vi;
    if (info == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("'", in.name, "' is not an input of the model"));
    if (!given.insert(in.name).second)
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' is given twice"));
    const Tensor& t = in.tensor;
    if (!t.defined() || t.size() < 0)
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' has no data"));
    if (t.dtype() != info->type.dtype)
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' must be ",
                                                     LowerName(info->type.dtype), ", got ",
                                                     LowerName(t.dtype())));
    if (info->type.dims) {
      bool ok = info->type.dims->size() == t.shape().size();
      for (size_t i = 0; ok && i < t.shape().size(); ++i)
        ok = !(*info->type.dims)[i].known() || (*info->type.dims)[i].value == t.shape()[i];
      if (!ok)
        return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' must have shape ",
                                                       info->type.ToString(), ", got ",
                                                       ShapeToString(t.shape())));
    }
    values[size_t(im.value_index.at(in.name))] = t;
  }
  for (const ValueInfo& vi : im.inputs)
    if (!given.count(vi.name))
      return absl::InvalidArgumentError(absl::StrCat("input '", vi.name, "' is missing"));

  outputs->resize(im.output_values.size());
  std::vector<bool> caller_bound(outputs->size());
  for (size_t k = 0; k < outputs->size(); ++k) caller_bound[k] = (*outputs)[k].defined();
  for (const Step& step : im.steps) {
    absl::Status s = im.RunStep(step, values, outputs, caller_bound);
    if (!s.ok()) return s;
  }
  for (size_t k = 0; k < im.output_values.size(); ++k) {
    if (caller_bound[k]) {
      // A graph output that is a constant or a graph input never passed
      // through a step: copy it into the caller's buffer here.
      const Tensor& v = values[size_t(im.output_values[k])];
      if (v.raw() != (*outputs)[k].raw()) {
        if (v.dtype() != (*outputs)[k].dtype() || v.shape() != (*outputs)[k].shape())
          return absl::InvalidArgumentError(absl::StrCat("output '", im.value_names[size_t(im.output_values[k])],
                                                         "': the caller's buffer does not match"));
        CopyElements(v, (*outputs)[k]);
      }
      continue;
    }
    const Tensor& v = values[size_t(im.output_values[k])];
    // Never hand out a view of an input or constant that the caller might
    // not expect to alias; borrowed inputs are the caller's own memory.
    // Hand out only memory the session allocated for this run: an output that
    // views a constant or a caller's input is copied.
    bool shared = v.storage() && !v.storage()->owned();
    for (const Tensor& c : im.constants) shared = shared || (c.defined() && c.storage() == v.storage());
    for (const NamedTensor& in : inputs) shared = shared || in.tensor.storage() == v.storage();
    (*outputs)[k] = shared ? v.Clone() : v;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<NamedTensor>& inputs) const {
  std::vector<Tensor> outputs;
  absl::Status s = Run(inputs, &outputs);
  if (!s.ok()) return s;
  return outputs;
}

}  // namespace onnx_mini
