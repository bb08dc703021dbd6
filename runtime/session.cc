#include "runtime/session.h"

#include <omp.h>

#include <deque>
#include <new>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/loader.h"
#include "runtime/registry.h"

namespace onnx_mini {
namespace {

// Nodes whose inputs are all constants and whose inputs and outputs are this
// small are evaluated once at session creation, so shape functions downstream
// see their values.
constexpr int64_t kFoldLimit = 1 << 16;

// Where a value's storage comes from: the caller (graph inputs), the session's
// constants, or a step's output. Views share their input's root.
enum class RootKind { kCaller, kConstant, kSession };

struct Step {
  const Node* node;
  const RegisteredOp* row;
  std::unique_ptr<Op> op;
  std::vector<int> inputs;   // value index, -1 if absent
  std::vector<int> outputs;  // value index, -1 if not requested
  std::vector<int> release;  // values whose last use is this step
  // The plan made at creation. When `is_static`, runs whose inputs have
  // `input_shapes` use it as is; otherwise Infer runs again on the real inputs.
  bool is_static = false;
  std::vector<Shape> input_shapes;
  std::vector<ValueType> output_types;
  std::shared_ptr<const OpPlan> plan;
  // Per output: the input position whose storage it takes (in place), or -1.
  // Decided at creation; with dynamic shapes a run checks dtype and size too.
  std::vector<int> reuse;
  // Per output: not requested, but a required output of the op, so the kernel
  // gets a scratch buffer for it (kernels check output_requested() only for
  // optional outputs).
  std::vector<bool> scratch;
  bool has_buffer(size_t i) const { return outputs[i] >= 0 || scratch[i]; }
};

// Checks a node's arity and input element types against its row's signature.
absl::Status CheckInputs(const Node& node, const RegisteredOp& row,
                         const std::vector<const ValueType*>& types, std::vector<DType>& bound) {
  size_t given = node.inputs.size();
  while (given > 0 && node.inputs[given - 1].empty()) --given;
  const auto error = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
  };
  const auto range = [](size_t lo, size_t hi) {
    return hi == SIZE_MAX ? absl::StrCat(lo, " or more") : lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, " to ", hi);
  };
  if (given < row.min_inputs || given > row.max_inputs)
    return error(absl::StrCat("takes ", range(row.min_inputs, row.max_inputs), " inputs, got ", given));
  if (node.outputs.size() < row.min_outputs || node.outputs.size() > row.max_outputs)
    return error(absl::StrCat("has ", range(row.min_outputs, row.max_outputs), " outputs, got ",
                              node.outputs.size()));
  bound.assign(row.def.types.size(), DType::kUndefined);
  std::vector<size_t> bound_by(row.def.types.size(), 0);
  for (size_t i = 0; i < types.size(); ++i) {
    const RegisteredOp::Formal* f = row.input(i);
    if (types[i] == nullptr) {
      if (f != nullptr && f->kind != RegisteredOp::Formal::kOptional && i < given)
        return error(absl::StrCat("input ", i, " is required"));
      // Variadic inputs are all present, trailing ones too: kernels read every one.
      if (f != nullptr && f->kind == RegisteredOp::Formal::kVariadic)
        return error(absl::StrCat("input ", i, " is empty, but every input of a variadic list is required"));
      continue;
    }
    const ValueType& t = *types[i];
    if (t.kind != ValueType::Kind::kTensor)
      return NotImplemented(node, absl::StrCat("input ", i, " of type ", t.ToString()));
    if (t.dtype == DType::kUndefined) return error(absl::StrCat("the element type of input ", i, " is unknown"));
    const TypeConstraint& c = row.def.types[size_t(f->constraint)];
    if (!c.types.contains(t.dtype)) return NotImplemented(node, t.dtype);
    DType& b = bound[size_t(f->constraint)];
    if (b == DType::kUndefined) {
      b = t.dtype;
      bound_by[size_t(f->constraint)] = i;
    } else if (b != t.dtype) {
      return error(absl::StrCat("input ", i, " is ", LowerName(t.dtype), " but input ",
                                bound_by[size_t(f->constraint)], " is ", LowerName(b),
                                ": both have type ", c.name));
    }
  }
  for (size_t i = 0; i < row.min_inputs && i < node.inputs.size(); ++i)
    if (node.inputs[i].empty()) return error(absl::StrCat("input ", i, " is required"));
  return absl::OkStatus();
}

// Checks the element types Infer gave the outputs against the signature.
absl::Status CheckOutputs(const Node& node, const RegisteredOp& row, const std::vector<ValueType>& outputs,
                          std::vector<DType>& bound) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!node.has_output(i)) continue;
    const RegisteredOp::Formal* f = row.output(i);
    const DType d = outputs[i].dtype;
    if (d == DType::kUndefined) continue;  // an op that cannot tell yet
    const TypeConstraint& c = row.def.types[size_t(f->constraint)];
    if (!c.types.contains(d)) return NotImplemented(node, d);
    DType& b = bound[size_t(f->constraint)];
    if (b == DType::kUndefined) b = d;
    else if (b != d)
      return absl::InternalError(absl::StrCat(node.Describe(), ": output ", i, " is ", LowerName(d),
                                              " but its type ", c.name, " is ", LowerName(b)));
  }
  return absl::OkStatus();
}

// Refuses an output too large to allocate, before any kernel could ask for it.
absl::Status CheckOutputSize(const Node& node, size_t i, DType dtype, const Shape& shape) {
  const int64_t count = ElementCount(shape);
  if (count < 0 || StorageBytes(dtype, count) > kMaxTensorBytes)
    return absl::InvalidArgumentError(
        absl::StrCat(node.Describe(), ": output ", i, " of shape ", ShapeToString(shape), " is too large"));
  return absl::OkStatus();
}

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
  const OpRegistry* ops = nullptr;
  SessionOptions options;
  int threads = 1;
  std::shared_ptr<MemoryBudget> budget;  // every tensor the session allocates
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, int> value_index;
  std::vector<std::string> value_names;
  std::vector<ValueType> value_types;
  std::vector<Tensor> constants;  // by value index; undefined if not constant
  std::vector<int> input_values, output_values;
  std::vector<Step> steps;
  // The storage plan, by value index: each value's storage root and where
  // the root's storage comes from.
  std::vector<int> root;
  std::vector<RootKind> root_kind;
  // Per graph output: the step producing it (-1: a constant or graph input),
  // and the input position whose memory a caller's buffer for it may share
  // (the op updates that input in place and no later step reads it), or -1.
  std::vector<int> output_step, output_position, bound_in_place;

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
  void PlanStorage();
  // Runs one step on `values`. `bound` holds, per step output, a caller's
  // buffer to write into directly (or an undefined tensor).
  absl::Status RunStep(const Step& step, std::vector<Tensor>& values, const std::vector<Tensor>& bound) const;
};

absl::Status Session::Impl::Build() {
  threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  budget = std::make_shared<MemoryBudget>(options.memory_limit > 0 ? options.memory_limit : DefaultMemoryLimit());
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

  // Per node: its row, its op, the signature check, inference, and constant folding.
  for (size_t n : order) {
    const Node& node = graph.nodes[n];
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
      shapes_known = shapes_known && shape.has_value();
      step.input_shapes.push_back(shape.value_or(Shape{}));
    }
    std::vector<DType> bound;
    RETURN_IF_ERROR(CheckInputs(node, *row, in_types, bound));
    ASSIGN_OR_RETURN(step.op, row->def.create(node));
    InferContext ictx(node, in_types, in_values);
    RETURN_IF_ERROR(step.op->Infer(ictx));
    RETURN_IF_ERROR(CheckOutputs(node, *row, ictx.outputs(), bound));
    step.is_static = shapes_known && !ictx.needs_values();
    step.output_types = ictx.outputs();
    for (size_t i = 0; i < node.outputs.size(); ++i)
      step.scratch.push_back(!node.has_output(i) && row->output(i)->kind == RegisteredOp::Formal::kRequired);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.has_output(i) && !step.scratch[i]) continue;
      const ValueType& t = step.output_types[i];
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
      auto declared = graph.value_types.find(node.outputs[i]);
      if (declared != graph.value_types.end())
        RETURN_IF_ERROR(MergeDeclared(node, node.outputs[i], declared->second, t));
      for (const ValueInfo& out : graph.outputs)
        if (out.name == node.outputs[i]) RETURN_IF_ERROR(MergeDeclared(node, out.name, out.type, t));
      value_types[size_t(v)] = std::move(t);
      step.outputs.push_back(v);
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
    if (all_constant && constant_elements <= kFoldLimit && (step.inputs.empty() || output_elements <= kFoldLimit)) {
      std::vector<Tensor> values(constants);
      if (RunStep(step, values, {}).ok()) {
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
  PlanStorage();
  return absl::OkStatus();
}

// The static memory plan: storage roots, last uses, in-place reuse, and which
// caller-bound outputs may share an input's memory.
void Session::Impl::PlanStorage() {
  const size_t n_values = value_names.size();
  root.resize(n_values);
  root_kind.assign(n_values, RootKind::kSession);
  for (size_t v = 0; v < n_values; ++v) {
    root[v] = int(v);
    if (constants[v].defined()) root_kind[v] = RootKind::kConstant;
  }
  for (int v : input_values) root_kind[size_t(v)] = RootKind::kCaller;
  std::vector<int> producer(n_values, -1);
  for (size_t s = 0; s < steps.size(); ++s)
    for (size_t o = 0; o < steps[s].outputs.size(); ++o) {
      const int v = steps[s].outputs[o];
      if (v < 0) continue;
      producer[size_t(v)] = int(s);
      const Alias* a = steps[s].row->alias(o);
      if (a && a->kind == Alias::kView && size_t(a->input) < steps[s].inputs.size() &&
          steps[s].inputs[size_t(a->input)] >= 0) {
        root[size_t(v)] = root[size_t(steps[s].inputs[size_t(a->input)])];  // steps are in order
      }
    }
  // The last step that reads each root's storage, through any of its views;
  // whether a graph output lives in it.
  std::vector<int> last_read(n_values, -1), last_use(n_values, -1);
  std::vector<bool> is_output(n_values, false), root_is_output(n_values, false);
  for (int v : output_values) {
    is_output[size_t(v)] = true;
    root_is_output[size_t(root[size_t(v)])] = true;
  }
  for (size_t s = 0; s < steps.size(); ++s)
    for (int v : steps[s].inputs)
      if (v >= 0) {
        last_use[size_t(v)] = int(s);
        last_read[size_t(root[size_t(v)])] = int(s);
      }
  for (size_t v = 0; v < n_values; ++v)
    if (last_use[v] >= 0 && !is_output[v] && !constants[v].defined())
      steps[size_t(last_use[v])].release.push_back(int(v));
  // An input's storage may be taken only when this step is the last to read it
  // and it reads it through that input alone.
  const auto may_take = [&](size_t s, size_t position) {
    const int v = steps[s].inputs[position];
    if (v < 0) return false;
    const int r = root[size_t(v)];
    if (last_read[size_t(r)] != int(s) || root_is_output[size_t(r)]) return false;
    for (size_t j = 0; j < steps[s].inputs.size(); ++j)
      if (j != position && steps[s].inputs[j] >= 0 && root[size_t(steps[s].inputs[j])] == r) return false;
    return true;
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    Step& step = steps[s];
    step.reuse.assign(step.outputs.size(), -1);
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const Alias* a = step.row->alias(o);
      if (!a || a->kind != Alias::kInPlace || step.outputs[o] < 0 || size_t(a->input) >= step.inputs.size())
        continue;
      const int v = step.inputs[size_t(a->input)];
      if (v < 0 || root_kind[size_t(root[size_t(v)])] != RootKind::kSession || !may_take(s, size_t(a->input)))
        continue;
      bool taken = false;  // one output per input
      for (int other : step.reuse) taken = taken || other == a->input;
      if (!taken) step.reuse[o] = a->input;
    }
  }
  for (int v : output_values) {
    const int s = producer[size_t(v)];
    output_step.push_back(s);
    int position = -1, in_place = -1;
    if (s >= 0) {
      for (size_t o = 0; o < steps[size_t(s)].outputs.size(); ++o)
        if (steps[size_t(s)].outputs[o] == v) position = int(o);
      const Alias* a = steps[size_t(s)].row->alias(size_t(position));
      if (a && a->kind == Alias::kInPlace && size_t(a->input) < steps[size_t(s)].inputs.size()) {
        const int in = steps[size_t(s)].inputs[size_t(a->input)];
        if (in >= 0 && root_kind[size_t(root[size_t(in)])] == RootKind::kCaller && may_take(size_t(s), size_t(a->input)))
          in_place = a->input;
      }
    }
    output_position.push_back(position);
    bound_in_place.push_back(in_place);
  }
}

namespace {

class StepContext : public KernelContext {
 public:
  StepContext(const Node& node, std::vector<const Tensor*> inputs, std::vector<Tensor>& outputs,
              const std::vector<ValueType>& types, const RegisteredOp& row, const OpPlan* plan, int threads)
      : node_(node), inputs_(std::move(inputs)), outputs_(outputs), types_(types), row_(row),
        plan_(plan), threads_(threads) {
    for (const ValueType& t : types_) shapes_.push_back(t.concrete_shape().value_or(Shape{}));
  }

  const Node& node() const override { return node_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const Tensor* input(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return node_.has_output(i); }
  Tensor& output(size_t i) override { return outputs_[i]; }
  void set_output(size_t i, Tensor view) override {
    const Alias* a = row_.alias(i);
    if (a && a->kind == Alias::kView) outputs_[i] = std::move(view);
    else misused_ = true;
  }
  const Shape& output_shape(size_t i) const override { return shapes_[i]; }
  int threads() const override { return threads_; }
  bool misused() const { return misused_; }

 protected:
  const OpPlan* plan_ptr() const override { return plan_; }

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor>& outputs_;
  const std::vector<ValueType>& types_;
  std::vector<Shape> shapes_;
  const RegisteredOp& row_;
  const OpPlan* plan_;
  int threads_;
  bool misused_ = false;
};

}  // namespace

absl::Status Session::Impl::RunStep(const Step& step, std::vector<Tensor>& values,
                                    const std::vector<Tensor>& bound) const {
  const Node& node = *step.node;
  std::vector<const Tensor*> in_ptrs(step.inputs.size(), nullptr);
  bool planned = step.is_static;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const int v = step.inputs[i];
    if (v < 0 || !values[size_t(v)].defined()) continue;
    in_ptrs[i] = &values[size_t(v)];
    planned = planned && in_ptrs[i]->shape() == step.input_shapes[i];
  }
  // The plan: made at creation, or made now from the real inputs.
  const std::vector<ValueType>* types = &step.output_types;
  const OpPlan* plan = step.plan.get();
  std::vector<ValueType> run_types;
  std::shared_ptr<const OpPlan> run_plan;
  if (!planned) {
    std::vector<ValueType> in_types(step.inputs.size());
    std::vector<const ValueType*> in_type_ptrs(step.inputs.size(), nullptr);
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (in_ptrs[i]) {
        in_types[i] = ValueType::Of(in_ptrs[i]->dtype(), in_ptrs[i]->shape());
        in_type_ptrs[i] = &in_types[i];
      }
    InferContext ictx(node, in_type_ptrs, in_ptrs);
    RETURN_IF_ERROR(step.op->Infer(ictx));
    run_types = ictx.outputs();
    run_plan = ictx.plan();
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (!step.has_buffer(i)) continue;
      const ValueType& t = run_types[i];
      std::optional<Shape> shape = t.concrete_shape();
      if (!shape || t.dtype == DType::kUndefined)
        return absl::InternalError(absl::StrCat(node.Describe(), ": output ", i,
                                                " has no concrete type at run time: ", t.ToString()));
      RETURN_IF_ERROR(CheckOutputSize(node, i, t.dtype, *shape));
    }
    types = &run_types;
    plan = run_plan.get();
  }

  // Every buffer the kernel writes exists before it runs: a caller's
  // buffer, an input's storage taken in place, or a new allocation.
  std::vector<Tensor> results(step.outputs.size());
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    if (!step.has_buffer(i)) continue;
    const Alias* alias = step.row->alias(i);
    if (alias && alias->kind == Alias::kView) continue;  // the kernel sets a view
    const DType dtype = (*types)[i].dtype;
    const Shape shape = *(*types)[i].concrete_shape();
    if (i < bound.size() && bound[i].defined()) {
      if (bound[i].dtype() != dtype || bound[i].shape() != shape)
        return absl::InvalidArgumentError(absl::StrCat(
            "output '", node.outputs[i], "': the caller's buffer is ", LowerName(bound[i].dtype()),
            ShapeToString(bound[i].shape()), " but the result is ", LowerName(dtype), ShapeToString(shape)));
      results[i] = bound[i];
      continue;
    }
    const int take = i < step.reuse.size() ? step.reuse[i] : -1;
    if (take >= 0 && in_ptrs[size_t(take)] && in_ptrs[size_t(take)]->dtype() == dtype &&
        in_ptrs[size_t(take)]->size() == ElementCount(shape)) {
      results[i] = in_ptrs[size_t(take)]->Reshaped(shape);
      continue;
    }
    absl::StatusOr<Tensor> made = Tensor::MakeUninitialized(dtype, shape, budget);
    if (!made.ok())
      return absl::Status(made.status().code(),
                          absl::StrCat(node.Describe(), ": output ", i, ": ", made.status().message()));
    results[i] = *std::move(made);
  }
  StepContext ctx(node, in_ptrs, results, *types, *step.row, plan, threads);
  RETURN_IF_ERROR(step.op->Compute(ctx));
  if (ctx.misused())
    return absl::InternalError(absl::StrCat(node.Describe(), ": the kernel set a view its row does not declare"));
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const int v = step.outputs[i];
    if (v < 0) continue;
    if (!results[i].defined())
      return absl::InternalError(absl::StrCat(node.Describe(), ": the kernel produced no output ", i));
    values[size_t(v)] = std::move(results[i]);
  }
  for (int v : step.release) values[size_t(v)] = Tensor();
  return absl::OkStatus();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(Graph graph, const OpRegistry& ops,
                                                         const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->graph = std::move(graph);
  impl->ops = &ops;
  impl->options = options;
  try {
    RETURN_IF_ERROR(impl->Build());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while creating the session");
  }
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Session>> Session::Load(const std::string& path, const OpRegistry& ops,
                                                       const SessionOptions& options) {
  ASSIGN_OR_RETURN(Graph g, LoadModel(path));
  return Create(std::move(g), ops, options);
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }
const Graph& Session::graph() const { return impl_->graph; }

absl::Status Session::ValidateInputs(const std::vector<NamedTensor>& inputs) const {
  const Impl& im = *impl_;
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
  }
  for (const ValueInfo& vi : im.inputs)
    if (!given.count(vi.name))
      return absl::InvalidArgumentError(absl::StrCat("input '", vi.name, "' is missing"));
  return absl::OkStatus();
}

// Tensors are checked against the budget before they are allocated; what
// remains is the kernels' small temporaries (std::vector): if even those
// cannot be had, the caller gets a status, not an exception.
absl::Status Session::Run(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs) const {
  try {
    return RunUnguarded(inputs, outputs);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory for a kernel's temporary buffers");
  }
}

absl::Status Session::RunUnguarded(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs) const {
  const Impl& im = *impl_;
  RETURN_IF_ERROR(ValidateInputs(inputs));
  std::vector<Tensor> values(im.value_names.size());
  for (size_t v = 0; v < im.constants.size(); ++v) values[v] = im.constants[v];
  for (const NamedTensor& in : inputs) values[size_t(im.value_index.at(in.name))] = in.tensor;

  // Caller buffers: written directly by the producing step unless the buffer
  // overlaps an input's memory; then only an op updating that very input in
  // place, with no later reader, may write it. Otherwise the result is copied
  // into it after the last step.
  outputs->resize(im.output_values.size());
  std::vector<std::vector<Tensor>> direct(im.steps.size());
  std::vector<bool> copy_at_end(outputs->size(), false);
  for (size_t k = 0; k < outputs->size(); ++k) {
    const Tensor& buffer = (*outputs)[k];
    if (!buffer.defined()) continue;
    const int s = im.output_step[k];
    const int position = im.output_position[k];
    bool safe = s >= 0;
    if (safe) {
      const Alias* a = im.steps[size_t(s)].row->alias(size_t(position));
      safe = !(a && a->kind == Alias::kView);
    }
    for (const NamedTensor& in : inputs) {
      if (!safe || !Overlaps(buffer, in.tensor)) continue;
      const int taken = im.bound_in_place[k];
      const Step& step = im.steps[size_t(s)];
      safe = taken >= 0 && buffer.raw() == in.tensor.raw() && buffer.bytes() == in.tensor.bytes() &&
             im.root[size_t(step.inputs[size_t(taken)])] == im.value_index.at(in.name);
    }
    if (!safe) {
      copy_at_end[k] = true;
      continue;
    }
    std::vector<Tensor>& slots = direct[size_t(s)];
    slots.resize(im.steps[size_t(s)].outputs.size());
    if (slots[size_t(position)].defined()) {  // the same value listed twice as a graph output
      copy_at_end[k] = true;
      continue;
    }
    slots[size_t(position)] = buffer;
  }
  for (size_t s = 0; s < im.steps.size(); ++s) RETURN_IF_ERROR(im.RunStep(im.steps[s], values, direct[s]));
  // Check every caller buffer before writing any: a mismatch writes nothing.
  for (size_t k = 0; k < im.output_values.size(); ++k) {
    if (!copy_at_end[k]) continue;
    const Tensor& v = values[size_t(im.output_values[k])];
    const Tensor& buffer = (*outputs)[k];
    if (v.dtype() != buffer.dtype() || v.shape() != buffer.shape())
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", im.value_names[size_t(im.output_values[k])], "': the caller's buffer is ",
          LowerName(buffer.dtype()), ShapeToString(buffer.shape()), " but the result is ", LowerName(v.dtype()),
          ShapeToString(v.shape())));
  }
  for (size_t k = 0; k < im.output_values.size(); ++k) {
    const Tensor& v = values[size_t(im.output_values[k])];
    if (copy_at_end[k]) {
      CopyElements(v, (*outputs)[k], im.threads);
      continue;
    }
    if ((*outputs)[k].defined()) continue;  // written directly
    // Hand out only memory the session allocated for this run: an output that
    // views a constant or a caller's input is copied.
    bool shared = v.storage() && !v.storage()->owned();
    for (const Tensor& c : im.constants) shared = shared || (c.defined() && c.storage() == v.storage());
    for (const NamedTensor& in : inputs) shared = shared || in.tensor.storage() == v.storage();
    if (shared) {
      ASSIGN_OR_RETURN((*outputs)[k], v.Clone(im.budget));
    } else {
      (*outputs)[k] = v;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<NamedTensor>& inputs) const {
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(Run(inputs, &outputs));
  return outputs;
}

}  // namespace onnx_mini
