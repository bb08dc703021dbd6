// Session: a loaded, validated and planned model that can be run many times,
// from several threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/graph.h"
#include "runtime/value.h"

namespace onnx_mini {

class OpRegistry;

struct SessionOptions {
  // Intra-op threads for the kernels; 0 means all cores.
  int threads = 0;
  // The most bytes the session's tensors (outputs, intermediate values,
  // folded constants) may hold at once, all concurrent runs together; checked
  // before each allocation. 0: DefaultMemoryLimit(), 3/4 of physical memory.
  // The model's initializers, loaded before the session, are not counted.
  size_t memory_limit = 0;
  // Rewrite decomposed patterns into fused kernels before planning
  // (runtime/rewrite/rewrite.h lists them). Off: the graph runs as written (to
  // debug, or to check a rewrite against the original).
  bool graph_rewrites = true;
  // The accuracy_level of the standard spelling of 4- and 8-bit weights
  // (DequantizeLinear + MatMul) once fused: 4 (int8 A, onnxruntime's default
  // for its session.qdq_matmulnbits_accuracy_level) or 0-3 (float); others
  // are refused by Session::Create.
  int dq_matmul_accuracy_level = 4;
  // Time every node run (inside If, Loop, Scan and SequenceMap bodies too,
  // at every iteration) for Session::Profile(). Costs two clock reads per node.
  bool profile = false;
  // Record an event per node run (subgraph nodes too: start, duration,
  // thread, op type, name qualified by its parents, input and output types
  // and shapes), a "model_run" event per run and a "session_initialization"
  // event, for Session::WriteTrace: onnxruntime's profiling. Events beyond
  // `trace_max_events` are counted as dropped, not kept.
  bool trace = false;
  size_t trace_max_events = 1000000;
};

// How one run may be stopped before it ends (onnxruntime's RunOptions). The
// run checks at every node boundary (in subgraphs too) and at every iteration
// of Loop, Scan and SequenceMap; a stopped run returns kCancelled (terminate)
// or kDeadlineExceeded (timeout), writes no output, and the session stays
// usable. Once a step has written into a caller's output buffer (a KV cache
// updated in place), the run is no longer stopped: it finishes, so that such
// buffers hold a whole run's results or are untouched.
struct RunOptions {
  // Set to true, from any thread, to stop the run; read with a relaxed load
  // at each check. The run never clears it (a run started with it set stops
  // before its first node). nullptr: none. Must outlive the run.
  const std::atomic<bool>* terminate = nullptr;
  // When > 0: the run stops once this many milliseconds have passed since it
  // started (the clock is read at each check only then).
  int64_t timeout_ms = 0;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class Session {
 public:
  // Validates the graph (types, shapes, ops, dtypes) and plans its execution,
  // with the ops of `ops` (BuiltinOps() from runtime/registry.h, or a registry of the
  // embedder's that falls back to it; it must outlive the session).
  // Unsupported ops or dtypes fail here with "not implemented: ...".
  static absl::StatusOr<std::unique_ptr<Session>> Create(Graph graph, const OpRegistry& ops,
                                                         const SessionOptions& options = {});
  // LoadModel + Create.
  static absl::StatusOr<std::unique_ptr<Session>> Load(const std::string& path, const OpRegistry& ops,
                                                       const SessionOptions& options = {});
  ~Session();

  // Graph inputs (initializers excluded) and outputs, with inferred types.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  const Graph& graph() const;

  // Checks that `inputs` name every graph input once, with its declared dtype
  // and a shape that fits the declared one (Run does this first).
  absl::Status ValidateInputs(const std::vector<NamedTensor>& inputs) const;

  // Runs the graph. Inputs are borrowed for the duration of the call; every
  // graph input must be given, with its declared dtype and a compatible
  // shape. `outputs` is resized to the number of graph outputs; an entry that
  // is already defined is a caller-provided buffer that the output is written
  // into (its dtype and shape must match the result). A caller buffer may be
  // the same memory as an input: an op that can update that input in place
  // does so when no later step reads the input; otherwise the result is
  // computed elsewhere and copied into the buffer after the last step.
  absl::Status Run(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs) const;
  // The same, stoppable (RunOptions).
  absl::Status Run(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs,
                   const RunOptions& run_options) const;

  // Convenience: runs and returns fresh outputs.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<NamedTensor>& inputs) const;

  // Runs a graph whose inputs or outputs may be sequences or optionals (Run
  // takes tensors only). Every graph input must be given; an optional input
  // may be a none Value. Outputs are fresh values. `wanted` (optional, a flag
  // per graph output): the outputs not wanted are left none, never copied.
  absl::Status RunValues(const std::vector<NamedValue>& inputs, std::vector<Value>* outputs) const;
  absl::Status RunValues(const std::vector<NamedValue>& inputs, std::vector<Value>* outputs,
                         const RunOptions& run_options, const std::vector<bool>* wanted = nullptr) const;
  // Checks inputs as RunValues does first.
  absl::Status ValidateValues(const std::vector<NamedValue>& inputs) const;

  // With SessionOptions::profile: a table of the time per run spent in each
  // op type's nodes (averaged over the runs so far), slowest first, and the
  // total. Empty without profiling or before the first run.
  std::string Profile() const;
  // Starts the profile afresh (after warm-up runs, say): the times and the
  // trace events recorded so far are dropped.
  void ResetProfile() const;
  // With SessionOptions::trace: writes the events recorded since creation (or
  // since the last WriteTrace or ResetProfile) to `path`, a JSON array of
  // Chrome trace events in onnxruntime's profile format (Perfetto and
  // chrome://tracing open it), and forgets them; recording goes on. A node
  // inside a subgraph is named "<parent>/<attribute>/<node>" ("If_0/
  // then_branch/Conv_3_kernel_time"). The file is written whole or not at
  // all. FailedPrecondition without SessionOptions::trace.
  absl::Status WriteTrace(const std::string& path) const;
  // The same events as JSON text, without forgetting them.
  std::string TraceJson() const;
  // The bytes held against the session's memory budget now: weights packed
  // at creation (once per weight, whichever nodes read it), folded
  // constants, and during a run its tensors and workspaces.
  size_t MemoryUsed() const;

  // The plan of a graph (internal: the model's, and its subgraphs').
  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  absl::Status RunValuesUnguarded(const std::vector<NamedValue>& inputs, std::vector<Value>* outputs,
                                  const RunOptions& run_options, const std::vector<bool>* wanted) const;
  absl::Status RunUnguarded(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs,
                            const RunOptions& run_options) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnx_mini
