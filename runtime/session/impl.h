// Session::Impl, the plan of one graph (the model's or a subgraph's), and
// what the parts of runtime/session/ share: the steps, the run's controls,
// the signature checks and the storage plan. Private to runtime/session/.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/op.h"
#include "runtime/registry.h"
#include "runtime/session.h"
#include "runtime/session/trace.h"

namespace onnx_mini {
namespace session_detail {

// Where a value's storage comes from: the caller (graph inputs), the session's
// constants, or a step's output. Views share their input's root.
// kShared: made by a kernel that sets its outputs (sequences, control flow):
// it may share storage with anything that kernel saw, so it is never taken.
enum class RootKind { kCaller, kConstant, kSession, kShared };

// A plan made at run time, and the inputs it was made from.
struct RunPlan {
  std::vector<DType> dtypes;  // kUndefined: absent or not a tensor
  std::vector<Shape> shapes;
  std::vector<std::vector<char>> read;  // per input: the bytes Infer read, or empty
  std::vector<bool> was_read;
  std::vector<ValueType> types;
  std::vector<Shape> output_shapes;  // types' concrete shapes (empty where unknown)
  std::shared_ptr<const OpPlan> plan;
};

struct Step {
  const Node* node;
  const RegisteredOp* row;
  std::unique_ptr<Op> op;
  // Value index, -1 if absent: the node's inputs, then the outer-scope values
  // its subgraphs read (implicit inputs, for order and lifetimes).
  std::vector<int> inputs;
  size_t num_explicit = 0;
  std::vector<int> outputs;  // value index, -1 if not requested
  std::vector<int> release;  // values whose last use is this step
  // The plan made at creation. When `is_static`, runs whose inputs have
  // `input_shapes` use it as is; otherwise Infer runs again on the real inputs.
  bool is_static = false;
  std::vector<Shape> input_shapes;
  std::vector<ValueType> output_types;
  // output_types' concrete shapes (empty where unknown), made once: a run
  // reads them rather than building a Shape per output per step.
  std::vector<Shape> output_shapes;
  std::shared_ptr<const OpPlan> plan;
  // Per output: the input position whose storage it takes (in place), or -1.
  // Decided at creation; with dynamic shapes a run checks dtype and size too.
  std::vector<int> reuse;
  // Per output: not requested, but a required output of the op, so the kernel
  // gets a scratch buffer for it (kernels check output_requested() only for
  // optional outputs).
  std::vector<bool> scratch;
  bool has_buffer(size_t i) const { return outputs[i] >= 0 || scratch[i]; }
  // The plan the last run made on inputs the creation's plan did not cover
  // (dynamic shapes), reused by the next runs while their inputs have the
  // same dtypes and shapes and the values Infer read are the same bytes.
  // Read and replaced whole (std::atomic_load/store): runs may be concurrent.
  mutable std::shared_ptr<const RunPlan> last_run;
};

// A run's RunOptions, checked before every step (in subgraphs too) and at
// every iteration of the looping kernels (KernelContext::CheckCancelled).
class RunControl {
 public:
  // `max_checks` > 0: stop at that many checks (the budget of constant folding).
  explicit RunControl(const RunOptions& options, int64_t max_checks = 0)
      : terminate_(options.terminate), timeout_ms_(options.timeout_ms), max_checks_(max_checks) {
    // Past ~100 years is no deadline (the clock's arithmetic would overflow).
    if (timeout_ms_ <= 0 || timeout_ms_ > (int64_t(1) << 41)) timeout_ms_ = 0;
    if (timeout_ms_ > 0) deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  }
  // Whether there is anything to check: runs without skip the checks.
  bool active() const { return terminate_ != nullptr || timeout_ms_ > 0 || max_checks_ > 0; }
  // OK, or the status that stops the run at `node`. `writes_caller_memory`:
  // the step about to run writes a caller's output buffer; from then on the
  // run finishes, so that a stopped run has written nothing.
  absl::Status Check(const Node& node, bool writes_caller_memory = false) const {
    if (committed_.load(std::memory_order_relaxed)) return absl::OkStatus();
    if (terminate_ != nullptr && terminate_->load(std::memory_order_relaxed))
      return absl::CancelledError(absl::StrCat("run cancelled: terminate flag set (stopped at ", node.Describe(), ")"));
    if (timeout_ms_ > 0 && std::chrono::steady_clock::now() >= deadline_)
      return absl::DeadlineExceededError(
          absl::StrCat("run cancelled: deadline of ", timeout_ms_, " ms exceeded at ", node.Describe()));
    if (max_checks_ > 0 && checks_.fetch_add(1, std::memory_order_relaxed) >= max_checks_)
      return absl::CancelledError(absl::StrCat("stopped at ", node.Describe(), " after ", max_checks_, " steps"));
    if (writes_caller_memory) committed_.store(true, std::memory_order_relaxed);
    return absl::OkStatus();
  }

 private:
  const std::atomic<bool>* terminate_;
  int64_t timeout_ms_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t max_checks_;
  mutable std::atomic<int64_t> checks_{0};
  mutable std::atomic<bool> committed_{false};
};

// Signature checks (signature.cc).
// Checks a node's arity and input element types against its row's signature.
absl::Status CheckInputs(const Node& node, const RegisteredOp& row,
                         const std::vector<const ValueType*>& types, std::vector<DType>& bound);
// Checks the element types Infer gave the outputs against the signature.
absl::Status CheckOutputs(const Node& node, const RegisteredOp& row, const std::vector<ValueType>& outputs,
                          std::vector<DType>& bound);
// Refuses an output too large to allocate, before any kernel could ask for it.
absl::Status CheckOutputSize(const Node& node, size_t i, DType dtype, const Shape& shape);
// Merges a declared type into an inferred one; a contradiction is an error.
absl::Status MergeDeclared(const Node& node, const std::string& name, const ValueType& declared,
                           ValueType& inferred);
// Whether a run-time value fits a declared type (kind, element type, and
// with `check_dims` the shape: not for a subgraph's inputs, whose shapes may
// change from one iteration to the next).
absl::Status CheckValue(const std::string& what, const ValueType& type, const Value& v, bool check_dims = true);
// A graph input declared a scalar and given as a one-element tensor of shape
// [1] (onnxruntime runs it; the JS front ends of silero VAD feed `sr` so):
// CheckValue admits it and the run reads it as given (onnxruntime 1.30's
// outputs computed from it keep the [1]: a scalar would change their shapes).
bool ScalarGivenAsOne(const ValueType& type, const Value& v);

// The static memory plan of a graph's steps (storage_plan.cc): a pure
// function of the values and steps, so that it can be tested alone.
struct StoragePlan {
  // By value index: each value's storage root and where the root's storage
  // comes from.
  std::vector<int> root;
  std::vector<RootKind> root_kind;
  // Per step: the values whose last use it is (Step::release), and per
  // output the input position whose storage it takes, or -1 (Step::reuse).
  std::vector<std::vector<int>> release, reuse;
  // Per graph output: the step producing it (-1: a constant or graph input),
  // its position among that step's outputs, and the input position whose
  // memory a caller's buffer for it may share, or -1.
  std::vector<int> output_step, output_position, bound_in_place;
};
// `constants`: by value index, defined for the constants; `captures`: a
// subgraph's outer-scope values (value here, value in the parent).
StoragePlan PlanStorage(size_t n_values, const std::vector<Tensor>& constants, const std::vector<int>& input_values,
                        const std::vector<std::pair<int, int>>& captures, const std::vector<Step>& steps,
                        const std::vector<int>& output_values);

}  // namespace session_detail

// A planned graph: the model's (owned by the Session) or a subgraph of one of
// its nodes (owned by the enclosing plan, planned by the node's Infer).
struct Session::Impl : public Subgraph, public SubgraphPlanner {
  Graph owned_graph;               // the model's graph (top level only)
  const Graph* graph = nullptr;    // the graph planned here
  const Impl* parent = nullptr;    // the enclosing plan of a subgraph
  const OpRegistry* ops = nullptr;
  SessionOptions options;
  // InferGraphTypes: inference and folding only (no Prepare, no storage plan).
  bool types_only = false;
  // InferSubgraphTypes: subgraphs (Loop, Scan, SequenceMap bodies) planned
  // with their inputs' element types only (what holds at every iteration).
  bool relax_loop_inputs = false;
  int threads = 1;
  std::shared_ptr<MemoryBudget> budget;  // every tensor the session allocates (subgraphs share it)
  // Blobs ops derive from constants (PrepareContext::Shared), by the
  // constant's storage, dtype, shape and the blob's kind (subgraphs share it).
  struct SharedBlob {
    std::weak_ptr<Storage> source;  // a hit needs the very storage, not a new one at its address
    std::shared_ptr<const void> blob;
  };
  using BlobKey = std::tuple<const Storage*, DType, Shape, std::string>;
  std::shared_ptr<std::map<BlobKey, SharedBlob>> shared_blobs;
  std::vector<ValueInfo> input_infos, output_infos;
  std::map<std::string, int> value_index;
  std::vector<std::string> value_names;
  std::vector<ValueType> value_types;
  std::vector<Tensor> constants;  // by value index; undefined if not constant
  std::vector<int> input_values, output_values;
  // By value index: the value's position among the graph inputs, or -1.
  std::vector<int> input_position;
  // The storage of every constant, to tell outputs that share one (a run
  // hands out only memory it made).
  std::unordered_set<const Storage*> constant_storage;
  // Outer-scope values a subgraph reads: (value here, value in the parent).
  std::vector<std::pair<int, int>> captures;
  // The constants a run puts in its frame: those a step or a graph output
  // reads (a constant read only by folded nodes is left out: each one copied
  // is a Shape allocated at every run). Set by Prepare; until then (folding
  // at creation) every constant.
  std::vector<int> run_constants;
  bool run_constants_ready = false;
  // Puts the constants in a run's frame.
  void FillConstants(std::vector<Value>& values) const;
  std::vector<session_detail::Step> steps;
  std::vector<std::unique_ptr<Impl>> subgraphs;  // planned by steps' Infer
  // The storage plan, by value index: each value's storage root and where
  // the root's storage comes from.
  std::vector<int> root;
  std::vector<session_detail::RootKind> root_kind;
  // Per graph output: the step producing it (-1: a constant or graph input),
  // and the input position whose memory a caller's buffer for it may share
  // (the op updates that input in place and no later step reads it), or -1.
  std::vector<int> output_step, output_position, bound_in_place;
  // Profiling (trace.cc), set up once the session is planned. With
  // SessionOptions::profile: nanoseconds and calls per step over all runs
  // (subgraphs too), and the number of runs (top level). With ::trace: the
  // tracer every plan of the session shares, and each step's event names.
  std::unique_ptr<std::atomic<int64_t>[]> step_ns, step_calls;
  mutable std::atomic<int64_t> profiled_runs{0};
  std::shared_ptr<session_detail::Tracer> tracer;
  std::vector<session_detail::TraceNode> trace_nodes;
  const Node* owner = nullptr;  // the node whose subgraph this is
  std::vector<ValueType> given_types;  // the types owner gave its inputs (SubgraphTypes plans it again)
  // Steps planned at run time (Infer called) and steps that reused the last
  // run's plan, in this graph and its subgraphs, over all runs.
  mutable std::atomic<int64_t> inferred_steps{0}, reused_steps{0};

  int Intern(const std::string& name) {
    auto [it, inserted] = value_index.emplace(name, int(value_names.size()));
    if (inserted) {
      value_names.push_back(name);
      value_types.emplace_back();
      constants.emplace_back();
    }
    return it->second;
  }

  // `given`: for a subgraph, the types its op gives its inputs.
  absl::Status Build(const std::vector<ValueType>* given = nullptr);
  // Op::Prepare for every step, then for the subgraphs; frees the constants
  // whose every reader released them (top level only: a subgraph's
  // constants are its parent's).
  absl::Status Prepare();
  void FreeConstant(int v);
  void PlanStorage();
  // Runs one step on `values`. `bound` holds, per step output, a caller's
  // buffer to write into directly (or an undefined tensor).
  absl::Status RunStep(const session_detail::Step& step, std::vector<Value>& values, const std::vector<Tensor>& bound,
                       const session_detail::RunControl* control = nullptr) const;
  // Runs the plan on `values` (constants, inputs and captures filled in).
  // `control`: the run's RunOptions, nullptr when nothing can stop it.
  absl::Status Execute(std::vector<Value>& values, const std::vector<std::vector<Tensor>>* direct,
                       const session_detail::RunControl* control = nullptr) const;
  // Execute with each step timed and traced (trace.cc).
  absl::Status ExecuteProfiled(std::vector<Value>& values, const std::vector<std::vector<Tensor>>* direct,
                               const session_detail::RunControl* control) const;
  // Sets up profiling here and in the subgraphs; `prefix` qualifies node names.
  void AttachProfiling(const std::string& prefix, const std::shared_ptr<session_detail::Tracer>& with_tracer,
                       bool aggregate);
  // Runs a subgraph: inputs in order, outer-scope values from `outer`.
  absl::Status RunGraph(std::vector<Value> inputs, const std::vector<Value>& outer,
                        std::vector<Value>* outputs, const session_detail::RunControl* control = nullptr) const;

  // Subgraph
  const std::vector<ValueInfo>& inputs() const override { return input_infos; }
  const std::vector<ValueInfo>& outputs() const override { return output_infos; }
  // SubgraphPlanner
  absl::StatusOr<const Subgraph*> Plan(const Node& node, const Graph& sub,
                                       const std::vector<ValueType>& input_types) override {
    auto child = std::make_unique<Impl>();
    child->graph = &sub;
    child->parent = this;
    child->owner = &node;
    child->ops = ops;
    child->options = options;
    child->types_only = types_only;
    child->relax_loop_inputs = relax_loop_inputs;
    if (types_only) child->given_types = input_types;
    absl::Status s = child->Build(&input_types);
    if (!s.ok())
      return absl::Status(s.code(), absl::StrCat(node.Describe(), ", subgraph '", sub.name, "': ", s.message()));
    subgraphs.push_back(std::move(child));
    return subgraphs.back().get();
  }
};

}  // namespace onnx_mini
