// The static memory plan: storage roots, last uses, in-place reuse, and which
// caller-bound outputs may share an input's memory.
#include "runtime/session/impl.h"

namespace onnx_mini {
namespace session_detail {

StoragePlan PlanStorage(size_t n_values, const std::vector<Tensor>& constants, const std::vector<int>& input_values,
                        const std::vector<std::pair<int, int>>& captures, const std::vector<Step>& steps,
                        const std::vector<int>& output_values) {
  StoragePlan plan;
  std::vector<int>& root = plan.root;
  std::vector<RootKind>& root_kind = plan.root_kind;
  root.resize(n_values);
  root_kind.assign(n_values, RootKind::kSession);
  for (size_t v = 0; v < n_values; ++v) {
    root[v] = int(v);
    if (constants[v].defined()) root_kind[v] = RootKind::kConstant;
  }
  for (int v : input_values) root_kind[size_t(v)] = RootKind::kCaller;
  for (auto [v, outer] : captures) root_kind[size_t(v)] = RootKind::kCaller;
  std::vector<int> producer(n_values, -1), produced_at(n_values, -1);
  // Storage a kernel that makes its outputs has seen may live on in them (a
  // sequence's items, a branch's result): it escapes, and is never taken.
  std::vector<bool> escaped(n_values, false);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (size_t o = 0; o < steps[s].outputs.size(); ++o) {
      const int v = steps[s].outputs[o];
      if (v < 0) continue;
      producer[size_t(v)] = int(s);
      produced_at[size_t(v)] = int(o);
      if (steps[s].row->def.makes_outputs) root_kind[size_t(v)] = RootKind::kShared;
      const Alias* a = steps[s].row->alias(o);
      if (a && a->kind == Alias::kView && size_t(a->input) < steps[s].inputs.size() &&
          steps[s].inputs[size_t(a->input)] >= 0) {
        root[size_t(v)] = root[size_t(steps[s].inputs[size_t(a->input)])];  // steps are in order
      }
    }
    if (steps[s].row->def.makes_outputs)
      for (int v : steps[s].inputs)
        if (v >= 0) escaped[size_t(root[size_t(v)])] = true;
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
  plan.release.resize(steps.size());
  for (size_t v = 0; v < n_values; ++v)
    if (last_use[v] >= 0 && !is_output[v] && !constants[v].defined())
      plan.release[size_t(last_use[v])].push_back(int(v));
  // An input's storage may be taken only when this step is the last to read it
  // and it reads it through that input alone.
  const auto may_take = [&](size_t s, size_t position) {
    const int v = steps[s].inputs[position];
    if (v < 0) return false;
    const int r = root[size_t(v)];
    if (last_read[size_t(r)] != int(s) || root_is_output[size_t(r)] || escaped[size_t(r)]) return false;
    for (size_t j = 0; j < steps[s].inputs.size(); ++j)
      if (j != position && steps[s].inputs[j] >= 0 && root[size_t(steps[s].inputs[j])] == r) return false;
    return true;
  };
  plan.reuse.resize(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    std::vector<int>& reuse = plan.reuse[s];
    reuse.assign(step.outputs.size(), -1);
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const Alias* a = step.row->alias(o);
      if (!a || a->kind != Alias::kInPlace || step.outputs[o] < 0 || size_t(a->input) >= step.num_explicit)
        continue;
      const int v = step.inputs[size_t(a->input)];
      if (v < 0 || root_kind[size_t(root[size_t(v)])] != RootKind::kSession || !may_take(s, size_t(a->input)))
        continue;
      bool taken = false;  // one output per input
      for (int other : reuse) taken = taken || other == a->input;
      if (!taken) reuse[o] = a->input;
    }
  }
  for (int v : output_values) {
    const int s = producer[size_t(v)];
    plan.output_step.push_back(s);
    int position = -1, in_place = -1;
    if (s >= 0) {
      position = produced_at[size_t(v)];
      const Alias* a = steps[size_t(s)].row->alias(size_t(position));
      if (a && a->kind == Alias::kInPlace && size_t(a->input) < steps[size_t(s)].num_explicit) {
        const int in = steps[size_t(s)].inputs[size_t(a->input)];
        if (in >= 0 && root_kind[size_t(root[size_t(in)])] == RootKind::kCaller && may_take(size_t(s), size_t(a->input)))
          in_place = a->input;
      }
    }
    plan.output_position.push_back(position);
    plan.bound_in_place.push_back(in_place);
  }
  return plan;
}

}  // namespace session_detail

void Session::Impl::PlanStorage() {
  session_detail::StoragePlan plan =
      session_detail::PlanStorage(value_names.size(), constants, input_values, captures, steps, output_values);
  root = std::move(plan.root);
  root_kind = std::move(plan.root_kind);
  for (size_t s = 0; s < steps.size(); ++s) {
    steps[s].release = std::move(plan.release[s]);
    steps[s].reuse = std::move(plan.reuse[s]);
  }
  output_step = std::move(plan.output_step);
  output_position = std::move(plan.output_position);
  bound_in_place = std::move(plan.bound_in_place);
}

}  // namespace onnx_mini
