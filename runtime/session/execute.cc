// Execution: the steps in order, the kernels' contexts, subgraph runs.
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "runtime/session/impl.h"

namespace onnx_mini {

using session_detail::CheckOutputSize;
using session_detail::CheckValue;
using session_detail::RunControl;
using session_detail::Step;

namespace {

// A step's inputs and outputs, inline for the usual counts: a run allocates
// nothing for them.
using InputList = absl::InlinedVector<const Value*, 8>;
using TensorPtrList = absl::InlinedVector<const Tensor*, 8>;
using OutputList = absl::InlinedVector<Value, 4>;

std::vector<Shape> ConcreteShapes(const std::vector<ValueType>& types) {
  std::vector<Shape> shapes;
  shapes.reserve(types.size());
  for (const ValueType& t : types) shapes.push_back(t.concrete_shape().value_or(Shape{}));
  return shapes;
}

class StepContext : public KernelContext {
 public:
  StepContext(const Session::Impl& plan, const Node& node, const InputList& inputs, OutputList& outputs,
              const std::vector<Shape>& shapes, const RegisteredOp& row, const OpPlan* op_plan,
              const std::vector<Value>& frame, const RunControl* control)
      : graph_(plan), node_(node), inputs_(inputs), outputs_(outputs), shapes_(shapes), row_(row),
        plan_(op_plan), frame_(frame), control_(control) {}

  const Node& node() const override { return node_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const Tensor* input(size_t i) const override {
    return i < inputs_.size() && inputs_[i] && inputs_[i]->is_tensor() ? &inputs_[i]->tensor() : nullptr;
  }
  const Value* value(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return node_.has_output(i); }
  Tensor& output(size_t i) override { return outputs_[i].tensor(); }
  void set_output_view(size_t i, Tensor view) override {
    const Alias* a = row_.alias(i);
    if (a && a->kind == Alias::kView) outputs_[i] = std::move(view);
    else misused_ = true;
  }
  void set_value(size_t i, Value value) override {
    // A view of a sequence or optional is the value itself.
    const Alias* a = row_.alias(i);
    if ((row_.def.makes_outputs || (a && a->kind == Alias::kView)) && i < outputs_.size())
      outputs_[i] = std::move(value);
    else misused_ = true;
  }
  absl::Status RunSubgraph(const Subgraph& graph, std::vector<Value> inputs,
                           std::vector<Value>* outputs) const override;
  const Shape& output_shape(size_t i) const override { return shapes_[i]; }
  int threads() const override;
  const std::shared_ptr<MemoryBudget>& budget() const override;
  absl::Status CheckCancelled() const override {
    return control_ != nullptr ? control_->Check(node_) : absl::OkStatus();
  }
  bool misused() const { return misused_; }

 protected:
  const OpPlan* plan_ptr() const override { return plan_; }

 private:
  const Session::Impl& graph_;
  const Node& node_;
  const InputList& inputs_;
  OutputList& outputs_;
  const std::vector<Shape>& shapes_;
  const RegisteredOp& row_;
  const OpPlan* plan_;
  const std::vector<Value>& frame_;
  const RunControl* control_;
  bool misused_ = false;
};

// Run-time plans reused across runs: whether `memo` was made from inputs
// like these (dtypes, shapes, and the bytes of those Infer read), and the
// memo of a new plan (nullptr when an input is not a plain tensor or Infer
// read a large or string value: those steps infer at every run).
bool SameInputs(const session_detail::RunPlan& memo, const TensorPtrList& in) {
  if (memo.dtypes.size() != in.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == nullptr ? memo.dtypes[i] != DType::kUndefined
                         : in[i]->dtype() != memo.dtypes[i] || in[i]->shape() != memo.shapes[i])
      return false;
    if (memo.was_read[i] &&
        (in[i]->bytes() != memo.read[i].size() || std::memcmp(in[i]->raw(), memo.read[i].data(), memo.read[i].size())))
      return false;
  }
  return true;
}
constexpr size_t kMaxReadBytes = 4096;
std::shared_ptr<const session_detail::RunPlan> MakeRunPlan(const InputList& values, const TensorPtrList& in,
                                                           const std::vector<bool>& read,
                                                           std::vector<ValueType> types,
                                                           std::shared_ptr<const OpPlan> plan) {
  auto memo = std::make_shared<session_detail::RunPlan>();
  memo->dtypes.assign(in.size(), DType::kUndefined);
  memo->shapes.resize(in.size());
  memo->read.resize(in.size());
  memo->was_read.assign(in.size(), false);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == nullptr) {
      if (values[i] != nullptr) return nullptr;  // a sequence or optional
      continue;
    }
    memo->dtypes[i] = in[i]->dtype();
    memo->shapes[i] = in[i]->shape();
    if (i >= read.size() || !read[i]) continue;
    if (in[i]->dtype() == DType::kString || in[i]->bytes() > kMaxReadBytes) return nullptr;
    const char* p = static_cast<const char*>(in[i]->raw());
    memo->read[i].assign(p, p + in[i]->bytes());
    memo->was_read[i] = true;
  }
  memo->output_shapes = ConcreteShapes(types);
  memo->types = std::move(types);
  memo->plan = std::move(plan);
  return memo;
}

}  // namespace

int StepContext::threads() const { return graph_.threads; }
const std::shared_ptr<MemoryBudget>& StepContext::budget() const { return graph_.budget; }

absl::Status StepContext::RunSubgraph(const Subgraph& graph, std::vector<Value> inputs,
                                      std::vector<Value>* outputs) const {
  // Every Subgraph an op holds was planned by this session (InferContext::subgraph).
  const auto& sub = static_cast<const Session::Impl&>(graph);
  if (sub.parent != &graph_) return absl::InternalError(node_.Describe() + ": a subgraph of another graph");
  absl::Status s = sub.RunGraph(std::move(inputs), frame_, outputs, control_);
  // Named as at planning: the user sees which Loop, Scan or If ran out of memory (say).
  if (!s.ok())
    return absl::Status(s.code(), absl::StrCat(node_.Describe(), ", subgraph '", sub.graph->name, "': ", s.message()));
  return s;
}

absl::Status Session::Impl::RunStep(const Step& step, std::vector<Value>& values, const std::vector<Tensor>& bound,
                                    const RunControl* control) const {
  const Node& node = *step.node;
  InputList in_values(step.num_explicit, nullptr);
  TensorPtrList in_ptrs(step.num_explicit, nullptr);
  bool planned = step.is_static;
  const bool makes_outputs = step.row->def.makes_outputs;
  for (size_t i = 0; i < step.num_explicit; ++i) {
    const int v = step.inputs[i];
    if (v < 0) continue;
    in_values[i] = &values[size_t(v)];
    if (!values[size_t(v)].is_tensor()) continue;
    in_ptrs[i] = &values[size_t(v)].tensor();
    planned = planned && (makes_outputs || in_ptrs[i]->shape() == step.input_shapes[i]);
  }
  // The plan: made at creation, or made now from the real inputs.
  const std::vector<ValueType>* types = &step.output_types;
  const std::vector<Shape>* shapes = &step.output_shapes;
  const OpPlan* plan = step.plan.get();
  std::vector<ValueType> run_types;
  std::vector<Shape> run_shapes;
  std::shared_ptr<const OpPlan> run_plan;
  std::shared_ptr<const session_detail::RunPlan> memo;
  if (!planned) {
    memo = std::atomic_load(&step.last_run);
    if (memo && SameInputs(*memo, in_ptrs)) {
      types = &memo->types;
      shapes = &memo->output_shapes;
      plan = memo->plan.get();
      planned = true;
      reused_steps.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!planned) {
    std::vector<ValueType> in_types(step.num_explicit);
    std::vector<const ValueType*> in_type_ptrs(step.num_explicit, nullptr);
    for (size_t i = 0; i < step.num_explicit; ++i) {
      if (in_ptrs[i]) {
        in_types[i] = ValueType::Of(in_ptrs[i]->dtype(), in_ptrs[i]->shape());
        in_type_ptrs[i] = &in_types[i];
      } else if (in_values[i]) {  // a sequence or optional: its planned type
        in_type_ptrs[i] = &value_types[size_t(step.inputs[i])];
      }
    }
    InferContext ictx(node, in_type_ptrs, std::vector<const Tensor*>(in_ptrs.begin(), in_ptrs.end()));
    RETURN_IF_ERROR(step.op->Infer(ictx));
    run_types = ictx.outputs();
    run_plan = ictx.plan();
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      const ValueType& t = run_types[i];
      if (!step.has_buffer(i) || !t.is_tensor()) continue;
      std::optional<Shape> shape = t.concrete_shape();
      if (!shape || t.dtype == DType::kUndefined)
        // (An embedder's row whose output sizes depend on values must make its outputs.)
        return absl::InternalError(absl::StrCat(node.Describe(), ": the op's Infer left output ", i, " as ",
                                                t.ToString(), " on inputs of known shapes (a row whose output "
                                                "sizes depend on input values sets OpDef::makes_outputs)"));
      RETURN_IF_ERROR(CheckOutputSize(node, i, t.dtype, *shape));
    }
    inferred_steps.fetch_add(1, std::memory_order_relaxed);
    memo = MakeRunPlan(in_values, in_ptrs, ictx.values_read(), run_types, run_plan);
    if (memo) std::atomic_store(&step.last_run, memo);
    types = &run_types;
    run_shapes = ConcreteShapes(run_types);
    shapes = &run_shapes;
    plan = run_plan.get();
  }

  // Every buffer the kernel writes exists before it runs: a caller's
  // buffer, an input's storage taken in place, or a new allocation.
  OutputList results(step.outputs.size());
  for (size_t i = 0; i < step.outputs.size() && !makes_outputs; ++i) {
    if (!step.has_buffer(i)) continue;
    const Alias* alias = step.row->alias(i);
    if (alias && alias->kind == Alias::kView) continue;  // the kernel sets a view
    const DType dtype = (*types)[i].dtype;
    const Shape& shape = (*shapes)[i];
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
  StepContext ctx(*this, node, in_values, results, *shapes, *step.row, plan, values, control);
  RETURN_IF_ERROR(step.op->Compute(ctx));
  if (ctx.misused())
    return absl::InternalError(absl::StrCat(node.Describe(), ": the kernel set an output its row does not let it set"));
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const int v = step.outputs[i];
    if (v < 0) continue;
    if (results[i].is_none() && (*types)[i].kind != ValueType::Kind::kOptional)
      return absl::InternalError(absl::StrCat(node.Describe(), ": the kernel produced no output ", i));
    if (makes_outputs && !bound.empty() && i < bound.size() && bound[i].defined())
      return absl::InternalError(absl::StrCat(node.Describe(), ": a caller's buffer for a made output"));
    values[size_t(v)] = std::move(results[i]);
  }
  for (int v : step.release) values[size_t(v)] = Value();
  return absl::OkStatus();
}

absl::Status Session::Impl::Execute(std::vector<Value>& values, const std::vector<std::vector<Tensor>>* direct,
                                    const RunControl* control) const {
  static const std::vector<Tensor> kNone;
  // Every step boundary is a cancellation point.
  const auto check = [&](size_t s) {
    return control != nullptr ? control->Check(*steps[s].node, direct != nullptr && !(*direct)[s].empty())
                              : absl::OkStatus();
  };
  if (step_ns || tracer) return ExecuteProfiled(values, direct, control);  // trace.cc
  for (size_t s = 0; s < steps.size(); ++s) {
    RETURN_IF_ERROR(check(s));
    RETURN_IF_ERROR(RunStep(steps[s], values, direct ? (*direct)[s] : kNone, control));
  }
  return absl::OkStatus();
}

absl::Status Session::Impl::RunGraph(std::vector<Value> inputs, const std::vector<Value>& outer,
                                     std::vector<Value>* outputs, const RunControl* control) const {
  if (inputs.size() != input_values.size())
    return absl::InternalError(absl::StrCat("subgraph '", graph->name, "' takes ", input_values.size(),
                                            " inputs, got ", inputs.size()));
  std::vector<Value> values(value_names.size());
  FillConstants(values);
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(CheckValue(absl::StrCat("subgraph '", graph->name, "' input '", input_infos[i].name, "'"),
                               input_infos[i].type, inputs[i], false));
    values[size_t(input_values[i])] = std::move(inputs[i]);
  }
  for (auto [v, o] : captures) values[size_t(v)] = outer[size_t(o)];
  RETURN_IF_ERROR(Execute(values, nullptr, control));
  outputs->clear();
  for (int v : output_values) outputs->push_back(values[size_t(v)]);
  return absl::OkStatus();
}

}  // namespace onnx_mini
