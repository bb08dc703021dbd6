// Control flow: If, Loop and Scan. Their subgraphs are planned once, when the
// session is created (InferContext::subgraph, with the input types the op
// gives them), and run through that plan at every branch or iteration. A
// subgraph reads outer-scope values by name: the session passes the ones it
// reads in as implicit inputs of the node.
//
// The rows make their outputs (a loop's trip count and a carried value's
// shape are known only at run time): Infer derives the types through the
// subgraphs once, and the kernels check what depends on the run (the
// condition's and trip count's values, the shapes of iteration outputs).
#include <algorithm>

#include "ops/common.h"
#include "ops/ops.h"
#include "ops/control/sequence.h"

namespace onnx_mini {
namespace {

// A type that holds for both (branch outputs, a loop's initial and
// per-iteration carried values): the element type must agree.
absl::StatusOr<ValueType> MergeTypes(const InferContext& ctx, const std::string& what, const ValueType& a,
                                     const ValueType& b) {
  // An optional and its content (a loop-carried optional filled by the body).
  if ((a.kind == ValueType::Kind::kOptional) != (b.kind == ValueType::Kind::kOptional) &&
      a.unwrapped().kind == b.unwrapped().kind) {
    ASSIGN_OR_RETURN(ValueType inner, MergeTypes(ctx, what, a.unwrapped(), b.unwrapped()));
    return ValueType::OptionalOf(inner);
  }
  if (a.kind != b.kind || (a.kind == ValueType::Kind::kOptional && a.content != b.content))
    return ctx.Error(absl::StrCat(what, " is ", a.ToString(), " and ", b.ToString()));
  if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype)
    return ctx.Error(absl::StrCat(what, " is ", a.ToString(), " and ", b.ToString()));
  ValueType out = a;
  if (out.dtype == DType::kUndefined) out.dtype = b.dtype;
  out.dims = MergeDims(a.dims, b.dims);
  return out;
}

// The single element of a scalar-like tensor (shape [] or [1]...).
absl::StatusOr<const Tensor*> SingleElement(const KernelContext& ctx, const Tensor* t, const char* what) {
  if (t == nullptr) return ctx.Error(absl::StrCat(what, " must be a tensor"));
  if (t->size() != 1)
    return ctx.Error(absl::StrCat(what, " must hold one element, got shape ", ShapeToString(t->shape())));
  return t;
}

// The iterations' scan outputs kept for stacking, charged to the session's
// budget as they come: the stacked output's bytes (which the kept items,
// shared or not, will take again) and each item's bookkeeping. A loop whose
// outputs outgrow the budget stops at the iteration that crosses it, naming
// the node, rather than after millions of iterations.
struct ScanItems {
  std::vector<Tensor> items;
  MemoryReservation reserved;
  absl::Status Add(const KernelContext& ctx, const Tensor& t) {
    const size_t bytes = t.bytes() + kItemOverheadBytes + t.shape().size() * sizeof(int64_t);
    RETURN_IF_ERROR(ctx.Grow(reserved, 1, bytes, "the scan outputs accumulated over the iterations"));
    items.push_back(t);
    return absl::OkStatus();
  }
};

// Stacks one tensor per iteration along a new axis; `reverse` stacks them
// last first. With no iteration, a [0, ...] tensor of the planned type.
absl::StatusOr<Tensor> StackIterations(const KernelContext& ctx, ScanItems scan, int64_t axis, bool reverse,
                                       const ValueType& planned) {
  std::vector<Tensor>& items = scan.items;
  if (items.empty()) {
    std::optional<Shape> shape = planned.concrete_shape();
    if (planned.dtype == DType::kUndefined || !shape)
      return ctx.Error("a scan output of no iterations needs a known element type and shape");
    shape->insert(shape->begin() + std::clamp<int64_t>(axis, 0, int64_t(shape->size())), 0);
    return ctx.NewTensor(planned.dtype, *shape);
  }
  if (reverse) std::reverse(items.begin(), items.end());
  scan.reserved.Reset();  // the stacked tensor takes its bytes now
  return ConcatItems(ctx, items, axis, /*stack=*/true);
}

// ---- If ----

struct IfPlan : OpPlan {
  const Subgraph* then_branch = nullptr;
  const Subgraph* else_branch = nullptr;
};

class IfOp : public Op {
 public:
  explicit IfOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    auto plan = std::make_shared<IfPlan>();
    ASSIGN_OR_RETURN(plan->then_branch, ctx.subgraph("then_branch", {}));
    ASSIGN_OR_RETURN(plan->else_branch, ctx.subgraph("else_branch", {}));
    const auto& t = plan->then_branch->outputs();
    const auto& e = plan->else_branch->outputs();
    if (t.size() != ctx.num_outputs() || e.size() != ctx.num_outputs())
      return ctx.Error(absl::StrCat("the node has ", ctx.num_outputs(), " outputs but the branches ", t.size(),
                                    " and ", e.size()));
    for (size_t i = 0; i < t.size(); ++i) {
      ASSIGN_OR_RETURN(ValueType out, MergeTypes(ctx, absl::StrCat("output ", i, " of the branches"), t[i].type,
                                                 e[i].type));
      ctx.set_output(i, out);
    }
    ctx.set_plan(plan);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const auto& plan = ctx.plan<IfPlan>();
    ASSIGN_OR_RETURN(const Tensor* cond, SingleElement(ctx, ctx.input(0), "the condition"));
    std::vector<Value> outputs;
    RETURN_IF_ERROR(ctx.RunSubgraph(cond->data<bool>()[0] ? *plan.then_branch : *plan.else_branch, {}, &outputs));
    for (size_t i = 0; i < outputs.size(); ++i) ctx.set_value(i, std::move(outputs[i]));
    return absl::OkStatus();
  }
};

// ---- Loop ----

struct LoopPlan : OpPlan {
  const Subgraph* body = nullptr;
  size_t carried = 0;  // N loop-carried values; the other outputs are scan outputs
  std::vector<ValueType> scan_types;  // per iteration
};

class LoopOp : public Op {
 public:
  explicit LoopOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    const size_t n = ctx.num_inputs() > 2 ? ctx.num_inputs() - 2 : 0;
    if (ctx.num_outputs() < n)
      return ctx.Error(absl::StrCat("has ", n, " loop-carried values but only ", ctx.num_outputs(), " outputs"));
    for (size_t i = 2; i < ctx.num_inputs(); ++i)
      if (!ctx.has_input(i)) return ctx.Error(absl::StrCat("loop-carried input ", i, " is absent"));
    if (ctx.has_input(0) && ctx.input(0).dims && ctx.input(0).rank() > 1)
      return ctx.Error(absl::StrCat("the trip count M must be a scalar, got ", ctx.input(0).ToString()));
    std::vector<ValueType> body_inputs = {ValueType::Of(DType::kInt64, {}), ValueType::Of(DType::kBool, {})};
    for (size_t i = 2; i < ctx.num_inputs(); ++i) body_inputs.push_back(ctx.input(i));
    auto plan = std::make_shared<LoopPlan>();
    ASSIGN_OR_RETURN(plan->body, ctx.subgraph("body", body_inputs));
    const auto& outs = plan->body->outputs();
    const size_t k = ctx.num_outputs() - n;
    if (plan->body->inputs().size() != 2 + n || outs.size() != 1 + n + k)
      return ctx.Error(absl::StrCat("the body takes ", plan->body->inputs().size(), " inputs and gives ",
                                    outs.size(), " outputs; with ", n, " loop-carried values and ", k,
                                    " scan outputs it must take ", 2 + n, " and give ", 1 + n + k));
    const ValueType& cond = outs[0].type;
    if (!cond.is_tensor() || (cond.dtype != DType::kUndefined && cond.dtype != DType::kBool))
      return ctx.Error(absl::StrCat("the body's condition output is ", cond.ToString(), ", not bool"));
    plan->carried = n;
    for (size_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(ValueType t, MergeTypes(ctx, absl::StrCat("loop-carried value ", i), ctx.input(2 + i),
                                               outs[1 + i].type));
      ctx.set_output(i, t);
    }
    for (size_t j = 0; j < k; ++j) {
      ValueType t = outs[1 + n + j].type;
      if (!t.is_tensor())
        return ctx.Error(absl::StrCat("scan output ", j, " is ", t.ToString(), ": scan outputs are tensors"));
      plan->scan_types.push_back(t);
      if (t.dims) t.dims->insert(t.dims->begin(), Dim{});
      ctx.set_output(n + j, t);
    }
    ctx.set_plan(plan);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const auto& plan = ctx.plan<LoopPlan>();
    int64_t trips = INT64_MAX;
    if (ctx.value(0)) {
      ASSIGN_OR_RETURN(const Tensor* m, SingleElement(ctx, ctx.input(0), "the trip count M"));
      trips = m->data<int64_t>()[0];
    }
    bool cond = true;
    if (ctx.value(1)) {
      ASSIGN_OR_RETURN(const Tensor* c, SingleElement(ctx, ctx.input(1), "the condition"));
      cond = c->data<bool>()[0];
    }
    std::vector<Value> carried;
    for (size_t i = 0; i < plan.carried; ++i) carried.push_back(*ctx.value(2 + i));
    std::vector<ScanItems> scans(plan.scan_types.size());
    std::vector<Value> results;
    for (int64_t i = 0; i < trips && cond; ++i) {
      RETURN_IF_ERROR(ctx.CheckCancelled());  // an empty body has no node boundary
      ASSIGN_OR_RETURN(Tensor iter, ctx.NewTensor(DType::kInt64, {}));
      iter.data<int64_t>()[0] = i;
      ASSIGN_OR_RETURN(Tensor cond_in, ctx.NewTensor(DType::kBool, {}));
      cond_in.data<bool>()[0] = cond;
      std::vector<Value> args = {std::move(iter), std::move(cond_in)};
      for (Value& v : carried) args.push_back(std::move(v));
      RETURN_IF_ERROR(ctx.RunSubgraph(*plan.body, std::move(args), &results));
      ASSIGN_OR_RETURN(const Tensor* c, SingleElement(ctx, results[0].is_tensor() ? &results[0].tensor() : nullptr,
                                                      "the body's condition output"));
      if (c->dtype() != DType::kBool) return ctx.Error("the body's condition output must be bool");
      cond = c->data<bool>()[0];
      carried.assign(results.begin() + 1, results.begin() + 1 + std::ptrdiff_t(plan.carried));
      for (size_t j = 0; j < scans.size(); ++j) {
        const Value& s = results[1 + plan.carried + j];
        if (!s.is_tensor())
          return ctx.Error(absl::StrCat("scan output ", j, " of iteration ", i, " is ", s.ToString()));
        RETURN_IF_ERROR(scans[j].Add(ctx, s.tensor()));
      }
    }
    for (size_t i = 0; i < plan.carried; ++i) ctx.set_value(i, std::move(carried[i]));
    for (size_t j = 0; j < scans.size(); ++j) {
      ASSIGN_OR_RETURN(Tensor stacked, StackIterations(ctx, std::move(scans[j]), 0, false, plan.scan_types[j]));
      ctx.set_value(plan.carried + j, std::move(stacked));
    }
    return absl::OkStatus();
  }
};

// ---- Scan ----

// Scan-8 has a batch axis 0 (scan inputs iterate along axis 1, every batch
// entry for its own sequence_lens) and only input directions; Scan-9 and
// later have no batch axis but per-input and per-output axes and directions.
struct ScanPlan : OpPlan {
  const Subgraph* body = nullptr;
  size_t states = 0, scan_inputs = 0, scan_outputs = 0;
  std::vector<int64_t> input_axes, output_axes;  // normalized (Scan-9+)
  std::vector<bool> input_reverse, output_reverse;
  std::vector<ValueType> scan_types;  // per-iteration scan outputs
};

class ScanOp : public Op {
 public:
  explicit ScanOp(const Node& node)
      : batched_(node.opset < 9),
        num_scan_inputs_(node.attr_int("num_scan_inputs", -1)),
        input_directions_(node.attr_ints(node.opset < 9 ? "directions" : "scan_input_directions")),
        output_directions_(node.attr_ints("scan_output_directions")),
        input_axes_(node.attr_ints("scan_input_axes")),
        output_axes_(node.attr_ints("scan_output_axes")) {}

  absl::Status Infer(InferContext& ctx) const override {
    const size_t first = batched_ ? 1 : 0;  // Scan-8's sequence_lens comes first
    const size_t given = ctx.num_inputs() - first;
    if (num_scan_inputs_ < 1 || size_t(num_scan_inputs_) > given)
      return ctx.Error(absl::StrCat("num_scan_inputs ", num_scan_inputs_, " must be in [1, ", given, "]"));
    auto plan = std::make_shared<ScanPlan>();
    plan->scan_inputs = size_t(num_scan_inputs_);
    plan->states = given - plan->scan_inputs;
    if (ctx.num_outputs() < plan->states)
      return ctx.Error(absl::StrCat("has ", plan->states, " state values but only ", ctx.num_outputs(), " outputs"));
    plan->scan_outputs = ctx.num_outputs() - plan->states;
    const auto check_count = [&](const std::vector<int64_t>& v, size_t want, const char* name) -> absl::Status {
      if (!v.empty() && v.size() != want)
        return ctx.Error(absl::StrCat(name, " has ", v.size(), " entries, expected ", want));
      for (int64_t d : v)
        if (std::string(name).find("directions") != std::string::npos && d != 0 && d != 1)
          return ctx.Error(absl::StrCat(name, " holds ", d, ": directions are 0 or 1"));
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(check_count(input_directions_, plan->scan_inputs, batched_ ? "directions" : "scan_input_directions"));
    RETURN_IF_ERROR(check_count(output_directions_, plan->scan_outputs, "scan_output_directions"));
    RETURN_IF_ERROR(check_count(input_axes_, plan->scan_inputs, "scan_input_axes"));
    RETURN_IF_ERROR(check_count(output_axes_, plan->scan_outputs, "scan_output_axes"));
    for (size_t i = 0; i < plan->scan_inputs; ++i)
      plan->input_reverse.push_back(!input_directions_.empty() && input_directions_[i] == 1);
    for (size_t j = 0; j < plan->scan_outputs; ++j)
      plan->output_reverse.push_back(!output_directions_.empty() && output_directions_[j] == 1);
    if (batched_ && ctx.has_input(0) && ctx.input(0).dtype != DType::kInt64)
      return ctx.Error("sequence_lens must be int64");

    // The body's inputs: the states, then one slice of each scan input.
    std::vector<ValueType> body_inputs;
    Dim length;  // the sequence length, when known
    for (size_t i = 0; i < given; ++i) {
      ValueType t = ctx.input(first + i);
      if (!t.is_tensor()) return ctx.Error(absl::StrCat("input ", first + i, " is ", t.ToString(), ", not a tensor"));
      const bool scanned = i >= plan->states;
      const size_t s = i - plan->states;
      if (!t.dims) {
        if (scanned) plan->input_axes.push_back(input_axes_.empty() ? 0 : input_axes_[s]);
        if (scanned && plan->input_axes.back() < 0) return ctx.Error("scan_input_axes must be known for inputs of unknown rank");
        body_inputs.push_back(t);
        continue;
      }
      if (batched_) {
        if (t.rank() < (scanned ? 2 : 1))
          return ctx.Error(absl::StrCat("input ", first + i, " of rank ", t.rank(), " has no batch",
                                        scanned ? " and sequence axes" : " axis"));
        t.dims->erase(t.dims->begin());  // the batch axis
        if (scanned) {
          length = (*t.dims)[0];
          t.dims->erase(t.dims->begin());
        }
      } else if (scanned) {
        ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, input_axes_.empty() ? 0 : input_axes_[s], t.rank(),
                                                     "scan_input_axes entry"));
        plan->input_axes.push_back(axis);
        length = (*t.dims)[size_t(axis)];
        t.dims->erase(t.dims->begin() + axis);
      }
      body_inputs.push_back(t);
    }
    ASSIGN_OR_RETURN(plan->body, ctx.subgraph("body", body_inputs));
    const auto& outs = plan->body->outputs();
    if (plan->body->inputs().size() != given || outs.size() != ctx.num_outputs())
      return ctx.Error(absl::StrCat("the body takes ", plan->body->inputs().size(), " inputs and gives ",
                                    outs.size(), " outputs; it must take ", given, " and give ", ctx.num_outputs()));
    for (size_t i = 0; i < plan->states; ++i) {
      ASSIGN_OR_RETURN(ValueType t, MergeTypes(ctx, absl::StrCat("state ", i), body_inputs[i], outs[i].type));
      if (batched_ && t.dims) t.dims->insert(t.dims->begin(), ctx.input(first + i).dims->front());
      ctx.set_output(i, t);
    }
    for (size_t j = 0; j < plan->scan_outputs; ++j) {
      ValueType t = outs[plan->states + j].type;
      if (!t.is_tensor()) return ctx.Error(absl::StrCat("scan output ", j, " is ", t.ToString()));
      plan->scan_types.push_back(t);
      if (t.dims) {
        if (batched_) {
          t.dims->insert(t.dims->begin(), length);
          const ValueType& batch_source = ctx.input(first + plan->states);
          t.dims->insert(t.dims->begin(), batch_source.dims ? batch_source.dims->front() : Dim{});
        } else {
          ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, output_axes_.empty() ? 0 : output_axes_[j],
                                                       t.rank() + 1, "scan_output_axes entry"));
          plan->output_axes.push_back(axis);
          t.dims->insert(t.dims->begin() + axis, length);
        }
      } else if (!batched_) {
        const int64_t axis = output_axes_.empty() ? 0 : output_axes_[j];
        if (axis < 0) return ctx.Error("scan_output_axes must be known for outputs of unknown rank");
        plan->output_axes.push_back(axis);
      }
      ctx.set_output(plan->states + j, t);
    }
    ctx.set_plan(plan);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    return batched_ ? ComputeBatched(ctx) : ComputeUnbatched(ctx);
  }

 private:
  // Runs the body over `length` iterations: `states` in and out, scan input
  // i sliced at each iteration by `slice(i, t)`, scan outputs collected.
  template <class Slice>
  absl::Status Iterate(const KernelContext& ctx, const ScanPlan& plan, int64_t length, std::vector<Value>& states,
                       Slice slice, std::vector<ScanItems>& scans) const {
    std::vector<Value> results;
    for (int64_t t = 0; t < length; ++t) {
      RETURN_IF_ERROR(ctx.CheckCancelled());
      std::vector<Value> args = states;
      for (size_t i = 0; i < plan.scan_inputs; ++i) {
        ASSIGN_OR_RETURN(Tensor part, slice(i, plan.input_reverse[i] ? length - 1 - t : t));
        args.push_back(std::move(part));
      }
      RETURN_IF_ERROR(ctx.RunSubgraph(*plan.body, std::move(args), &results));
      states.assign(results.begin(), results.begin() + std::ptrdiff_t(plan.states));
      for (size_t j = 0; j < plan.scan_outputs; ++j) {
        const Value& s = results[plan.states + j];
        if (!s.is_tensor()) return ctx.Error(absl::StrCat("scan output ", j, " is ", s.ToString()));
        RETURN_IF_ERROR(scans[j].Add(ctx, s.tensor()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ComputeUnbatched(KernelContext& ctx) const {
    const auto& plan = ctx.plan<ScanPlan>();
    int64_t length = -1;
    std::vector<const Tensor*> scanned;
    for (size_t i = 0; i < plan.scan_inputs; ++i) {
      const Tensor* x = ctx.input(plan.states + i);
      int64_t axis = plan.input_axes[i];
      if (axis < 0 || axis >= x->rank())
        return ctx.Error(absl::StrCat("scan input ", i, " of rank ", x->rank(), " has no axis ", axis));
      if (length >= 0 && x->dim(axis) != length)
        return ctx.Error(absl::StrCat("scan input ", i, " has length ", x->dim(axis), " but scan input 0 has ", length));
      length = x->dim(axis);
      if (Info(x->dtype()).packed()) return NotImplemented(ctx.node(), x->dtype());
      scanned.push_back(x);
    }
    std::vector<Value> states;
    for (size_t i = 0; i < plan.states; ++i) states.push_back(*ctx.value(i));
    std::vector<ScanItems> scans(plan.scan_outputs);
    RETURN_IF_ERROR(Iterate(ctx, plan, length, states, [&](size_t i, int64_t t) {
      return SliceAxis(ctx, *scanned[i], plan.input_axes[i], t, 1, true);
    }, scans));
    for (size_t i = 0; i < plan.states; ++i) ctx.set_value(i, std::move(states[i]));
    for (size_t j = 0; j < plan.scan_outputs; ++j) {
      ASSIGN_OR_RETURN(Tensor stacked, StackIterations(ctx, std::move(scans[j]), plan.output_axes[j],
                                                       plan.output_reverse[j], plan.scan_types[j]));
      ctx.set_value(plan.states + j, std::move(stacked));
    }
    return absl::OkStatus();
  }

  absl::Status ComputeBatched(KernelContext& ctx) const {
    const auto& plan = ctx.plan<ScanPlan>();
    const size_t first = 1;
    int64_t batch = -1, max_length = -1;
    for (size_t i = 0; i < plan.states + plan.scan_inputs; ++i) {
      const Tensor* x = ctx.input(first + i);
      const bool scanned = i >= plan.states;
      if (x->rank() < (scanned ? 2 : 1))
        return ctx.Error(absl::StrCat("input ", first + i, " of shape ", ShapeToString(x->shape()),
                                      " has no batch", scanned ? " and sequence axes" : " axis"));
      if (batch >= 0 && x->dim(0) != batch)
        return ctx.Error(absl::StrCat("input ", first + i, " has batch ", x->dim(0), ", expected ", batch));
      batch = x->dim(0);
      if (scanned) {
        if (max_length >= 0 && x->dim(1) != max_length)
          return ctx.Error(absl::StrCat("input ", first + i, " has sequence length ", x->dim(1), ", expected ", max_length));
        max_length = x->dim(1);
      }
      if (Info(x->dtype()).packed()) return NotImplemented(ctx.node(), x->dtype());
    }
    // Per batch entry: a length, the final states' and scan outputs' lists
    // (a [2^40, 0] input has no elements but as many entries).
    ASSIGN_OR_RETURN(MemoryReservation entries, ctx.Reserve(batch, sizeof(int64_t) + (plan.states + plan.scan_outputs) *
                                                                                     (sizeof(ScanItems) + kItemOverheadBytes),
                                                            "the batch entries"));
    std::vector<int64_t> lengths(size_t(batch), max_length);
    if (const Tensor* lens = ctx.input(0)) {
      if (lens->rank() != 1 || lens->dim(0) != batch)
        return ctx.Error(absl::StrCat("sequence_lens must have shape [", batch, "], got ", ShapeToString(lens->shape())));
      for (int64_t b = 0; b < batch; ++b) {
        lengths[size_t(b)] = lens->data<int64_t>()[b];
        if (lengths[size_t(b)] < 0 || lengths[size_t(b)] > max_length)
          return ctx.Error(absl::StrCat("sequence_lens[", b, "] = ", lengths[size_t(b)], " is outside [0, ",
                                        max_length, "]"));
      }
    }
    std::vector<ScanItems> final_states(plan.states);
    std::vector<std::vector<ScanItems>> scans(plan.scan_outputs);  // [output][batch], the items by t
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Value> states;
      for (size_t i = 0; i < plan.states; ++i) {
        ASSIGN_OR_RETURN(Tensor s, SliceAxis(ctx, *ctx.input(first + i), 0, b, 1, true));
        states.push_back(std::move(s));
      }
      std::vector<Tensor> rows;  // this entry of each scan input
      for (size_t i = 0; i < plan.scan_inputs; ++i) {
        ASSIGN_OR_RETURN(Tensor row, SliceAxis(ctx, *ctx.input(first + plan.states + i), 0, b, 1, true));
        rows.push_back(std::move(row));
      }
      std::vector<ScanItems> per_entry(plan.scan_outputs);
      RETURN_IF_ERROR(Iterate(ctx, plan, lengths[size_t(b)], states, [&](size_t i, int64_t t) {
        return SliceAxis(ctx, rows[i], 0, t, 1, true);
      }, per_entry));
      for (size_t i = 0; i < plan.states; ++i) {
        if (!states[i].is_tensor()) return ctx.Error(absl::StrCat("state ", i, " is ", states[i].ToString()));
        RETURN_IF_ERROR(final_states[i].Add(ctx, states[i].tensor()));
      }
      for (size_t j = 0; j < plan.scan_outputs; ++j) scans[j].push_back(std::move(per_entry[j]));
    }
    for (size_t i = 0; i < plan.states; ++i) {
      // With no batch entry, the state keeps its input's shape ([0, ...]).
      const Tensor& in = *ctx.input(first + i);
      const Shape entry(in.shape().begin() + 1, in.shape().end());
      ASSIGN_OR_RETURN(Tensor stacked, StackIterations(ctx, std::move(final_states[i]), 0, false,
                                                       ValueType::Of(in.dtype(), entry)));
      ctx.set_value(i, std::move(stacked));
    }
    // Scan outputs: [batch, max_length, ...], zeros past an entry's length.
    for (size_t j = 0; j < plan.scan_outputs; ++j) {
      const Tensor* model = nullptr;
      for (const auto& entry : scans[j])
        if (!entry.items.empty()) model = &entry.items[0];
      Shape shape;
      DType dtype = plan.scan_types[j].dtype;
      if (model) {
        shape = model->shape();
        dtype = model->dtype();
      } else {
        std::optional<Shape> planned = plan.scan_types[j].concrete_shape();
        if (!planned || dtype == DType::kUndefined)
          return ctx.Error("a scan output of no iterations needs a known element type and shape");
        shape = *planned;
      }
      const int64_t count = ElementCount(shape);
      shape.insert(shape.begin(), {batch, max_length});
      for (auto& entry : scans[j]) entry.reserved.Reset();  // `out` takes their bytes now
      ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(dtype, shape, /*zero=*/true));
      for (int64_t b = 0; b < batch; ++b)
        for (size_t t = 0; t < scans[j][size_t(b)].items.size(); ++t) {
          const Tensor& item = scans[j][size_t(b)].items[t];
          if (item.dtype() != dtype || ElementCount(item.shape()) != count || (model && item.shape() != model->shape()))
            return ctx.Error(absl::StrCat("scan output ", j, " changes shape across iterations: ",
                                          ShapeToString(item.shape())));
          CopyBlock(item, 0, out, (b * max_length + int64_t(t)) * count, count);
        }
      ctx.set_value(plan.states + j, std::move(out));
    }
    return absl::OkStatus();
  }

  bool batched_;
  int64_t num_scan_inputs_;
  std::vector<int64_t> input_directions_, output_directions_, input_axes_, output_axes_;
};

}  // namespace

std::vector<OpDef> ControlFlowOps() {
  // The values flowing through: any element type, tensors, sequences and
  // optionals (If, Loop: sequences from 13, optionals from 16), each its own.
  const TypeConstraint values{"V", kAllTypes, kAnyKind, true};
  return {
      {kOnnxDomain, "If", Versions{1}, "B", "V*", {{"B", kBool}, values}, MakeOp<IfOp>, kMakesOutputs},
      {kOnnxDomain, "Loop", Versions{1}, "I? B? V*", "V*", {{"I", kInt64}, {"B", kBool}, values}, MakeOp<LoopOp>,
       kMakesOutputs},
      {kOnnxDomain, "Scan", Versions{8, 8}, "I? V*", "V*", {{"I", kInt64}, {"V", kUnpackedTypes, kTensorKind, true}},
       MakeOp<ScanOp>,
       kMakesOutputs},
      {kOnnxDomain, "Scan", Versions{9}, "V*", "V*", {{"V", kUnpackedTypes, kTensorKind, true}}, MakeOp<ScanOp>,
       kMakesOutputs},
  };
}

}  // namespace onnx_mini
