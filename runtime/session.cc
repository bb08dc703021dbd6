#include "runtime/session.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <new>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/alignment.h"
#include "runtime/loader.h"
#include "runtime/registry.h"
#include "runtime/rewrite.h"

namespace onnx_mini {
namespace {

// Nodes whose inputs are all constants and whose inputs and outputs are this
// small are evaluated once at session creation, so shape functions downstream
// see their values.
constexpr int64_t kFoldLimit = 1 << 16;
// Folding a node runs at most this many nodes and loop iterations of its
// subgraphs: a constant Loop of 2^62 iterations is left to the runs, which
// RunOptions can stop, rather than hanging session creation.
constexpr int64_t kFoldChecks = 1 << 16;

// Where a value's storage comes from: the caller (graph inputs), the session's
// constants, or a step's output. Views share their input's root.
// kShared: made by a kernel that sets its outputs (sequences, control flow):
// it may share storage with anything that kernel saw, so it is never taken.
enum class RootKind { kCaller, kConstant, kSession, kShared };

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

unsigned KindBit(const ValueType& t) {
  switch (t.kind) {
    case ValueType::Kind::kTensor: return kTensorKind;
    case ValueType::Kind::kSequence: return kSequenceKind;
    case ValueType::Kind::kOptional:
      return t.content == ValueType::Kind::kSequence ? kOptionalSequenceKind : kOptionalTensorKind;
    default: return 0;
  }
}

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
    if (!t.supported()) return NotImplemented(node, absl::StrCat("input ", i, " of type ", t.ToString()));
    const TypeConstraint& c = row.def.types[size_t(f->constraint)];
    if (!(c.kinds & KindBit(t)))
      return error(absl::StrCat("input ", i, " is ", t.ToString(), ": type ", c.name, " admits no ",
                                t.kind == ValueType::Kind::kTensor ? "tensor" : "such value"));
    if (t.dtype == DType::kUndefined) return error(absl::StrCat("the element type of input ", i, " is unknown"));
    if (!c.types.contains(t.dtype)) return NotImplemented(node, t.dtype);
    if (c.heterogeneous) continue;
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
    if (c.heterogeneous) continue;
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
  // A declared kind the op does not produce is left to the op (and to the
  // run); the element type and dims merge as a tensor's.
  if (declared.kind != inferred.kind || !declared.supported() || declared.content != inferred.content)
    return absl::OkStatus();
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

// The byte range [begin, end) of a tensor's elements, with its index in a list.
struct ByteRange {
  const char* begin;
  const char* end;
  size_t index;
};

ByteRange RangeOf(const Tensor& t, size_t index) {
  const char* p = static_cast<const char*>(t.raw());
  return {p, p + t.bytes(), index};
}

// Ranges sorted by start, with the running maximum of their ends, to find
// every range a query overlaps without comparing all pairs.
class RangeIndex {
 public:
  void Add(const Tensor& t, size_t index) {
    if (t.defined() && t.bytes() > 0) ranges_.push_back(RangeOf(t, index));
  }
  void Finish() {
    std::sort(ranges_.begin(), ranges_.end(), [](const ByteRange& a, const ByteRange& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.index < b.index;
    });
    max_end_.resize(ranges_.size());
    for (size_t i = 0; i < ranges_.size(); ++i)
      max_end_[i] = i == 0 ? ranges_[i].end : std::max(max_end_[i - 1], ranges_[i].end);
  }
  // Calls f(index) for every range that overlaps t.
  template <class F>
  void ForEachOverlap(const Tensor& t, F&& f) const {
    if (!t.defined() || t.bytes() == 0) return;
    const ByteRange q = RangeOf(t, 0);
    size_t i = size_t(std::lower_bound(ranges_.begin(), ranges_.end(), q.end,
                                       [](const ByteRange& r, const char* p) { return r.begin < p; }) -
                      ranges_.begin());
    while (i-- > 0 && max_end_[i] > q.begin)
      if (ranges_[i].end > q.begin) f(ranges_[i].index);
  }
  const std::vector<ByteRange>& sorted() const { return ranges_; }

 private:
  std::vector<ByteRange> ranges_;
  std::vector<const char*> max_end_;
};

// Borrowed memory must be aligned to its element type (a misaligned float
// load is undefined behaviour).
absl::Status CheckAligned(const std::string& what, const Tensor& t) {
  if (!t.defined() || t.bytes() == 0) return absl::OkStatus();
  const size_t align = ElementAlignment(t.dtype());
  const uintptr_t address = reinterpret_cast<uintptr_t>(t.raw());
  if (address % align == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s: its memory at %p is not aligned to %d bytes, as %s needs",
                                                    what, t.raw(), align, LowerName(t.dtype())));
}

// The caller's bool memory may hold bytes other than 0 and 1 (a 0/255 mask,
// a NumPy view of uint8): a kernel loading such a byte as bool is undefined
// behaviour (Not gives 254, Cast gives 255.0). Returns a copy in which every
// nonzero byte is 1, charged to the budget, or an undefined tensor when the
// bytes are all 0 and 1 already. The caller's memory is never written.
absl::StatusOr<Tensor> NormalizedBools(const std::string& what, const Tensor& t,
                                       const std::shared_ptr<MemoryBudget>& budget) {
  if (!t.defined() || t.dtype() != DType::kBool || t.size() <= 0) return Tensor();
  const unsigned char* in = static_cast<const unsigned char*>(t.raw());
  const size_t n = size_t(t.size());
  unsigned char seen = 0;
  for (size_t i = 0; i < n; ++i) seen |= in[i];
  if ((seen & 0xFE) == 0) return Tensor();
  absl::StatusOr<Tensor> copy = Tensor::MakeUninitialized(DType::kBool, t.shape(), budget);
  if (!copy.ok())
    return absl::Status(copy.status().code(),
                        absl::StrCat(what, " holds bytes other than 0 and 1; its normalized copy: ",
                                     copy.status().message()));
  unsigned char* out = static_cast<unsigned char*>(copy->raw());
  for (size_t i = 0; i < n; ++i) out[i] = in[i] != 0;
  return copy;
}

// An input value with its bool tensors (or sequence items) normalized.
absl::StatusOr<Value> NormalizedValue(const std::string& what, const Value& v,
                                      const std::shared_ptr<MemoryBudget>& budget) {
  if (v.is_tensor()) {
    ASSIGN_OR_RETURN(Tensor t, NormalizedBools(what, v.tensor(), budget));
    return t.defined() ? Value(std::move(t)) : v;
  }
  if (!v.is_sequence() || v.sequence_dtype() != DType::kBool) return v;
  std::vector<Tensor> items = v.sequence();
  bool changed = false;
  for (size_t k = 0; k < items.size(); ++k) {
    ASSIGN_OR_RETURN(Tensor t, NormalizedBools(absl::StrCat(what, " item ", k), items[k], budget));
    if (!t.defined()) continue;
    items[k] = std::move(t);
    changed = true;
  }
  return changed ? Value::Sequence(v.sequence_dtype(), std::move(items)) : v;
}

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

}  // namespace

namespace {

// The names a graph reads from outer scopes: read by its nodes (or by their
// subgraphs) or listed as its outputs, and defined nowhere inside it.
void FreeNames(const Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const ValueInfo& in : g.inputs) defined.insert(in.name);
  for (const auto& [name, tensor] : g.initializers) defined.insert(name);
  for (const Node& node : g.nodes)
    for (const std::string& o : node.outputs)
      if (!o.empty()) defined.insert(o);
  const auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  };
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs) read(in);
    for (const auto& [key, a] : node.attributes) {
      std::set<std::string> inner;
      if (a.g) FreeNames(*a.g, inner);
      for (const auto& sub : a.graphs)
        if (sub) FreeNames(*sub, inner);
      for (const std::string& name : inner) read(name);
    }
  }
  for (const ValueInfo& o : g.outputs) read(o.name);
}

// The names a node's subgraphs read from the node's scope.
std::set<std::string> ImplicitInputs(const Node& node) {
  std::set<std::string> names;
  for (const auto& [key, a] : node.attributes) {
    if (a.g) FreeNames(*a.g, names);
    for (const auto& sub : a.graphs)
      if (sub) FreeNames(*sub, names);
  }
  return names;
}

// Whether a run-time value fits a declared type (kind, element type, and
// with `check_dims` the shape: not for a subgraph's inputs, whose shapes may
// change from one iteration to the next).
absl::Status CheckValue(const std::string& what, const ValueType& type, const Value& v, bool check_dims = true) {
  const auto fits_dims = [&](const Shape& shape) {
    if (!type.dims || !check_dims) return true;
    if (type.dims->size() != shape.size()) return false;
    for (size_t i = 0; i < shape.size(); ++i)
      if ((*type.dims)[i].known() && (*type.dims)[i].value != shape[i]) return false;
    return true;
  };
  const ValueType::Kind want = type.unwrapped().kind;
  if (v.is_none()) {
    if (type.kind == ValueType::Kind::kOptional) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(what, " has no data"));
  }
  if ((want == ValueType::Kind::kTensor) != v.is_tensor())
    return absl::InvalidArgumentError(absl::StrCat(what, " must be ", type.ToString(), ", got ", v.ToString()));
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    if (t.size() < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has no data"));
    if (t.dtype() != type.dtype)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be ", LowerName(type.dtype), ", got ", LowerName(t.dtype())));
    if (!fits_dims(t.shape()))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must have shape ", type.ToString(), ", got ", ShapeToString(t.shape())));
    return absl::OkStatus();
  }
  if (v.sequence_dtype() != type.dtype)
    return absl::InvalidArgumentError(absl::StrCat(what, " must be ", type.ToString(), ", got a sequence of ",
                                                   LowerName(v.sequence_dtype())));
  for (size_t k = 0; k < v.sequence().size(); ++k) {
    const Tensor& item = v.sequence()[k];
    if (!item.defined() || item.dtype() != type.dtype || !fits_dims(item.shape()))
      return absl::InvalidArgumentError(absl::StrCat(what, ": item ", k, " must be ", type.element().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

// A planned graph: the model's (owned by the Session) or a subgraph of one of
// its nodes (owned by the enclosing plan, planned by the node's Infer).
struct Session::Impl : public Subgraph, public SubgraphPlanner {
  Graph owned_graph;               // the model's graph (top level only)
  const Graph* graph = nullptr;    // the graph planned here
  const Impl* parent = nullptr;    // the enclosing plan of a subgraph
  const OpRegistry* ops = nullptr;
  SessionOptions options;
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
  std::vector<Step> steps;
  std::vector<std::unique_ptr<Impl>> subgraphs;  // planned by steps' Infer
  // The storage plan, by value index: each value's storage root and where
  // the root's storage comes from.
  std::vector<int> root;
  std::vector<RootKind> root_kind;
  // Per graph output: the step producing it (-1: a constant or graph input),
  // and the input position whose memory a caller's buffer for it may share
  // (the op updates that input in place and no later step reads it), or -1.
  std::vector<int> output_step, output_position, bound_in_place;
  // With SessionOptions::profile (top level only): nanoseconds per step over
  // all runs, and the number of runs.
  std::unique_ptr<std::atomic<int64_t>[]> step_ns;
  mutable std::atomic<int64_t> profiled_runs{0};

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
  absl::Status RunStep(const Step& step, std::vector<Value>& values, const std::vector<Tensor>& bound,
                       const RunControl* control = nullptr) const;
  // Runs the plan on `values` (constants, inputs and captures filled in).
  // `control`: the run's RunOptions, nullptr when nothing can stop it.
  absl::Status Execute(std::vector<Value>& values, const std::vector<std::vector<Tensor>>* direct,
                       const RunControl* control = nullptr) const;
  // Runs a subgraph: inputs in order, outer-scope values from `outer`.
  absl::Status RunGraph(std::vector<Value> inputs, const std::vector<Value>& outer,
                        std::vector<Value>* outputs, const RunControl* control = nullptr) const;

  // Subgraph
  const std::vector<ValueInfo>& inputs() const override { return input_infos; }
  const std::vector<ValueInfo>& outputs() const override { return output_infos; }
  // SubgraphPlanner
  absl::StatusOr<const Subgraph*> Plan(const Node& node, const Graph& sub,
                                       const std::vector<ValueType>& input_types) override {
    auto child = std::make_unique<Impl>();
    child->graph = &sub;
    child->parent = this;
    child->ops = ops;
    child->options = options;
    absl::Status s = child->Build(&input_types);
    if (!s.ok())
      return absl::Status(s.code(), absl::StrCat(node.Describe(), ", subgraph '", sub.name, "': ", s.message()));
    subgraphs.push_back(std::move(child));
    return subgraphs.back().get();
  }
};

absl::Status Session::Impl::Build(const std::vector<ValueType>* given) {
  threads = options.threads > 0 ? options.threads : omp_get_max_threads();
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
    RETURN_IF_ERROR(step.op->Infer(ictx));
    RETURN_IF_ERROR(CheckOutputs(node, *row, ictx.outputs(), bound));
    const bool makes_outputs = row->def.makes_outputs;
    step.is_static = makes_outputs || (shapes_known && !ictx.needs_values());
    step.output_types = ictx.outputs();
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
    if (all_constant && tensors_only && !row->def.random && constant_elements <= kFoldLimit &&
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
  PlanStorage();
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
  return absl::OkStatus();
}

// Drops the session's references to constant v's data (the graph's
// initializer too); its storage is freed unless someone else holds it (the
// caller's copy of the graph).
void Session::Impl::FreeConstant(int v) {
  Tensor& c = constants[size_t(v)];
  const Tensor hollow = c.Hollow();
  auto it = owned_graph.initializers.find(value_names[size_t(v)]);
  if (it != owned_graph.initializers.end() && it->second.storage() == c.storage()) it->second = hollow;
  constant_storage.erase(c.storage().get());
  constant_storage.insert(hollow.storage().get());
  c = hollow;
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
  for (size_t v = 0; v < n_values; ++v)
    if (last_use[v] >= 0 && !is_output[v] && !constants[v].defined())
      steps[size_t(last_use[v])].release.push_back(int(v));
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
  for (size_t s = 0; s < steps.size(); ++s) {
    Step& step = steps[s];
    step.reuse.assign(step.outputs.size(), -1);
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const Alias* a = step.row->alias(o);
      if (!a || a->kind != Alias::kInPlace || step.outputs[o] < 0 || size_t(a->input) >= step.num_explicit)
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
      position = produced_at[size_t(v)];
      const Alias* a = steps[size_t(s)].row->alias(size_t(position));
      if (a && a->kind == Alias::kInPlace && size_t(a->input) < steps[size_t(s)].num_explicit) {
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
  StepContext(const Session::Impl& plan, const Node& node, std::vector<const Value*> inputs,
              std::vector<Value>& outputs, const std::vector<ValueType>& types, const RegisteredOp& row,
              const OpPlan* op_plan, const std::vector<Value>& frame, const RunControl* control)
      : graph_(plan), node_(node), inputs_(std::move(inputs)), outputs_(outputs), types_(types), row_(row),
        plan_(op_plan), frame_(frame), control_(control) {
    for (const ValueType& t : types_) shapes_.push_back(t.concrete_shape().value_or(Shape{}));
  }

  const Node& node() const override { return node_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const Tensor* input(size_t i) const override {
    return i < inputs_.size() && inputs_[i] && inputs_[i]->is_tensor() ? &inputs_[i]->tensor() : nullptr;
  }
  const Value* value(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return node_.has_output(i); }
  Tensor& output(size_t i) override { return outputs_[i].tensor(); }
  void set_output(size_t i, Tensor view) override {
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
  std::vector<const Value*> inputs_;
  std::vector<Value>& outputs_;
  const std::vector<ValueType>& types_;
  std::vector<Shape> shapes_;
  const RegisteredOp& row_;
  const OpPlan* plan_;
  const std::vector<Value>& frame_;
  const RunControl* control_;
  bool misused_ = false;
};

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
  std::vector<const Value*> in_values(step.num_explicit, nullptr);
  std::vector<const Tensor*> in_ptrs(step.num_explicit, nullptr);
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
  const OpPlan* plan = step.plan.get();
  std::vector<ValueType> run_types;
  std::shared_ptr<const OpPlan> run_plan;
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
    InferContext ictx(node, in_type_ptrs, in_ptrs);
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
    types = &run_types;
    plan = run_plan.get();
  }

  // Every buffer the kernel writes exists before it runs: a caller's
  // buffer, an input's storage taken in place, or a new allocation.
  std::vector<Value> results(step.outputs.size());
  for (size_t i = 0; i < step.outputs.size() && !makes_outputs; ++i) {
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
  StepContext ctx(*this, node, in_values, results, *types, *step.row, plan, values, control);
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
  if (step_ns) {
    for (size_t s = 0; s < steps.size(); ++s) {
      RETURN_IF_ERROR(check(s));
      const auto start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(RunStep(steps[s], values, direct ? (*direct)[s] : kNone, control));
      step_ns[s].fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start).count(),
                           std::memory_order_relaxed);
    }
    profiled_runs.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }
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
  for (size_t v = 0; v < constants.size(); ++v)
    if (constants[v].defined()) values[v] = constants[v];
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

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(Graph graph, const OpRegistry& ops,
                                                         const SessionOptions& options) {
  // A rewrite must never make a valid model fail: a fused kernel can be
  // stricter than the pattern it replaces (a scale that broadcasts the
  // normalized values to a wider shape, say). If the rewritten graph does not
  // plan, the graph as written is planned instead; its error, if any, names
  // the model's own nodes.
  std::optional<Graph> as_written;  // dropped before Prepare, which may free initializers
  if (options.graph_rewrites) {
    Graph rewritten = graph;  // tensors share their storage
    if (RewriteGraph(rewritten) > 0) {
      as_written = std::move(graph);
      graph = std::move(rewritten);
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->owned_graph = std::move(graph);
  impl->graph = &impl->owned_graph;
  impl->ops = &ops;
  impl->options = options;
  absl::Status built;
  try {
    built = impl->Build();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while creating the session");
  }
  if (!built.ok() && as_written) {
    SessionOptions plain = options;
    plain.graph_rewrites = false;
    return Create(std::move(*as_written), ops, plain);
  }
  RETURN_IF_ERROR(built);
  as_written.reset();
  try {
    RETURN_IF_ERROR(impl->Prepare());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while creating the session");
  }
  if (options.profile) {
    impl->step_ns.reset(new std::atomic<int64_t>[impl->steps.size()]);
    for (size_t s = 0; s < impl->steps.size(); ++s) impl->step_ns[s] = 0;
  }
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

void Session::ResetProfile() const {
  const Impl& im = *impl_;
  if (!im.step_ns) return;
  for (size_t s = 0; s < im.steps.size(); ++s) im.step_ns[s] = 0;
  im.profiled_runs = 0;
}

std::string Session::Profile() const {
  const Impl& im = *impl_;
  const int64_t runs = im.profiled_runs.load();
  if (!im.step_ns || runs == 0) return "";
  struct Total {
    int64_t ns = 0, nodes = 0;
  };
  std::map<std::string, Total> by_op;
  int64_t all = 0;
  for (size_t s = 0; s < im.steps.size(); ++s) {
    const Node& node = *im.steps[s].node;
    Total& t = by_op[node.domain.empty() ? node.op_type : absl::StrCat(node.domain, "::", node.op_type)];
    t.ns += im.step_ns[s].load();
    t.nodes += 1;
    all += im.step_ns[s].load();
  }
  std::vector<std::pair<std::string, Total>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::string out = absl::StrFormat("%-32s %10s %6s %6s\n", "op (per run, over " + std::to_string(runs) + " runs)",
                                    "ms", "%", "nodes");
  for (const auto& [op, t] : rows)
    out += absl::StrFormat("%-32s %10.4f %6.1f %6d\n", op, double(t.ns) / 1e6 / double(runs),
                           all ? 100.0 * double(t.ns) / double(all) : 0.0, t.nodes);
  out += absl::StrFormat("%-32s %10.4f\n", "all nodes", double(all) / 1e6 / double(runs));
  return out;
}

absl::StatusOr<std::unique_ptr<Session>> Session::Load(const std::string& path, const OpRegistry& ops,
                                                       const SessionOptions& options) {
  ASSIGN_OR_RETURN(Graph g, LoadModel(path));
  return Create(std::move(g), ops, options);
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->input_infos; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->output_infos; }
const Graph& Session::graph() const { return *impl_->graph; }
size_t Session::MemoryUsed() const { return impl_->budget->used(); }

absl::Status Session::ValidateValues(const std::vector<NamedValue>& inputs) const {
  const Impl& im = *impl_;
  std::set<std::string> given;
  for (const NamedValue& in : inputs) {
    const ValueInfo* info = nullptr;
    if (auto it = im.value_index.find(in.name); it != im.value_index.end() && im.input_position[size_t(it->second)] >= 0)
      info = &im.input_infos[size_t(im.input_position[size_t(it->second)])];
    if (info == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("'", in.name, "' is not an input of the model"));
    if (!given.insert(in.name).second)
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' is given twice"));
    const std::string what = absl::StrCat("input '", in.name, "'");
    RETURN_IF_ERROR(CheckValue(what, info->type, in.value));
    if (in.value.is_tensor()) RETURN_IF_ERROR(CheckAligned(what, in.value.tensor()));
    if (in.value.is_sequence())
      for (size_t k = 0; k < in.value.sequence().size(); ++k)
        RETURN_IF_ERROR(CheckAligned(absl::StrCat(what, " item ", k), in.value.sequence()[k]));
  }
  for (const ValueInfo& vi : im.input_infos)
    if (!given.count(vi.name))
      return absl::InvalidArgumentError(absl::StrCat("input '", vi.name, "' is missing"));
  return absl::OkStatus();
}

absl::Status Session::ValidateInputs(const std::vector<NamedTensor>& inputs) const {
  std::vector<NamedValue> values;
  values.reserve(inputs.size());
  for (const NamedTensor& in : inputs) {
    if (!in.tensor.defined())
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' has no data"));
    values.push_back({in.name, in.tensor});
  }
  return ValidateValues(values);
}

absl::Status Session::RunValues(const std::vector<NamedValue>& inputs, std::vector<Value>* outputs) const {
  return RunValues(inputs, outputs, RunOptions{});
}

absl::Status Session::RunValues(const std::vector<NamedValue>& inputs, std::vector<Value>* outputs,
                                const RunOptions& run_options) const {
  try {
    const RunControl control(run_options);
    const Impl& im = *impl_;
    RETURN_IF_ERROR(ValidateValues(inputs));
    std::vector<Value> values(im.value_names.size());
    for (size_t v = 0; v < im.constants.size(); ++v)
      if (im.constants[v].defined()) values[v] = im.constants[v];
    for (const NamedValue& in : inputs) {
      ASSIGN_OR_RETURN(values[size_t(im.value_index.at(in.name))],
                       NormalizedValue(absl::StrCat("input '", in.name, "'"), in.value, im.budget));
    }
    RETURN_IF_ERROR(im.Execute(values, nullptr, control.active() ? &control : nullptr));
    // Hand out only memory this run made: a tensor that may share a constant's,
    // an input's or a subgraph's storage is copied (sequence items always).
    outputs->clear();
    for (size_t k = 0; k < im.output_values.size(); ++k) {
      const int v = im.output_values[k];
      const Value& out = values[size_t(v)];
      if (out.is_sequence()) {
        std::vector<Tensor> items;
        for (const Tensor& item : out.sequence()) {
          ASSIGN_OR_RETURN(Tensor copy, item.Clone(im.budget));
          items.push_back(std::move(copy));
        }
        outputs->push_back(Value::Sequence(out.sequence_dtype(), std::move(items)));
      } else if (out.is_tensor() && im.root_kind[size_t(im.root[size_t(v)])] != RootKind::kSession) {
        ASSIGN_OR_RETURN(Tensor copy, out.tensor().Clone(im.budget));
        outputs->push_back(std::move(copy));
      } else {
        outputs->push_back(out);
      }
    }
    return absl::OkStatus();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory for a kernel's temporary buffers");
  }
}

// Tensors are checked against the budget before they are allocated; what
// remains is the kernels' small temporaries (std::vector): if even those
// cannot be had, the caller gets a status, not an exception.
absl::Status Session::Run(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs) const {
  return Run(inputs, outputs, RunOptions{});
}

absl::Status Session::Run(const std::vector<NamedTensor>& inputs, std::vector<Tensor>* outputs,
                          const RunOptions& run_options) const {
  try {
    return RunUnguarded(inputs, outputs, run_options);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory for a kernel's temporary buffers");
  }
}

absl::Status Session::RunUnguarded(const std::vector<NamedTensor>& given, std::vector<Tensor>* outputs,
                                   const RunOptions& run_options) const {
  const RunControl control(run_options);
  const Impl& im = *impl_;
  for (const auto* list : {&im.input_infos, &im.output_infos})
    for (const ValueInfo& vi : *list)
      if (!vi.type.is_tensor())
        return absl::UnimplementedError(absl::StrCat("not implemented: sequence and optional values in the "
                                                     "tensor interface ('", vi.name, "' is ", vi.type.ToString(),
                                                     "; Session::RunValues takes them)"));
  RETURN_IF_ERROR(ValidateInputs(given));
  // bool inputs with bytes other than 0 and 1 run on normalized copies; the
  // caller's memory is then read no more (a buffer over it is like any other).
  std::vector<NamedTensor> normalized;
  for (size_t i = 0; i < given.size(); ++i) {
    ASSIGN_OR_RETURN(Tensor copy, NormalizedBools(absl::StrCat("input '", given[i].name, "'"), given[i].tensor,
                                                  im.budget));
    if (!copy.defined()) continue;
    if (normalized.empty()) normalized = given;
    normalized[i].tensor = std::move(copy);
  }
  const std::vector<NamedTensor>& inputs = normalized.empty() ? given : normalized;
  std::vector<Value> values(im.value_names.size());
  for (size_t v = 0; v < im.constants.size(); ++v)
    if (im.constants[v].defined()) values[v] = im.constants[v];
  for (const NamedTensor& in : inputs) values[size_t(im.value_index.at(in.name))] = in.tensor;

  outputs->resize(im.output_values.size());
  const size_t n_out = outputs->size();
  std::vector<bool> bound(n_out, false);
  // Caller buffers may not overlap each other: one buffer cannot hold two
  // results (sorted by address: linear in the number of outputs).
  RangeIndex buffers;
  for (size_t k = 0; k < n_out; ++k) {
    const Tensor& buffer = (*outputs)[k];
    if (!buffer.defined()) continue;
    bound[k] = true;
    RETURN_IF_ERROR(CheckAligned(absl::StrCat("output '", im.output_infos[k].name, "': the caller's buffer"), buffer));
    buffers.Add(buffer, k);
  }
  buffers.Finish();
  const char* furthest = nullptr;
  size_t furthest_k = 0;
  for (const ByteRange& r : buffers.sorted()) {
    if (furthest != nullptr && r.begin < furthest) {
      const auto [a, b] = std::minmax(furthest_k, r.index);
      return absl::InvalidArgumentError(absl::StrCat(
          "outputs '", im.output_infos[a].name, "' and '", im.output_infos[b].name,
          "' are bound to overlapping memory: each caller's buffer must be its own"));
    }
    if (furthest == nullptr || r.end > furthest) furthest = r.end, furthest_k = r.index;
  }

  // Caller buffers: written directly by the producing step unless the buffer
  // overlaps an input's memory; then only an op updating that very input in
  // place, with no later reader, may write it. Otherwise the result is copied
  // into it after the last step.
  RangeIndex input_ranges;
  for (size_t i = 0; i < inputs.size(); ++i) input_ranges.Add(inputs[i].tensor, i);
  input_ranges.Finish();
  std::vector<std::vector<Tensor>> direct(im.steps.size());
  std::vector<bool> copy_at_end(n_out, false);
  for (size_t k = 0; k < n_out; ++k) {
    if (!bound[k]) continue;
    const Tensor& buffer = (*outputs)[k];
    const int s = im.output_step[k];
    const int position = im.output_position[k];
    bool safe = s >= 0 && !im.steps[size_t(s)].row->def.makes_outputs;
    if (safe) {
      const Alias* a = im.steps[size_t(s)].row->alias(size_t(position));
      safe = !(a && a->kind == Alias::kView);
    }
    if (safe)
      input_ranges.ForEachOverlap(buffer, [&](size_t i) {
        const NamedTensor& in = inputs[i];
        const int taken = im.bound_in_place[k];
        const Step& step = im.steps[size_t(s)];
        safe = safe && taken >= 0 && buffer.raw() == in.tensor.raw() && buffer.bytes() == in.tensor.bytes() &&
               im.root[size_t(step.inputs[size_t(taken)])] == im.value_index.at(in.name);
      });
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
  RETURN_IF_ERROR(im.Execute(values, &direct, control.active() ? &control : nullptr));
  // Check every caller buffer before writing any: a mismatch writes nothing.
  for (size_t k = 0; k < n_out; ++k) {
    if (!copy_at_end[k]) continue;
    const Tensor& v = values[size_t(im.output_values[k])].tensor();
    const Tensor& buffer = (*outputs)[k];
    if (v.dtype() != buffer.dtype() || v.shape() != buffer.shape())
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", im.value_names[size_t(im.output_values[k])], "': the caller's buffer is ",
          LowerName(buffer.dtype()), ShapeToString(buffer.shape()), " but the result is ", LowerName(v.dtype()),
          ShapeToString(v.shape())));
  }
  // Every result is read before any caller buffer is written: an output that
  // views an input (y1 = Identity(x)) must not see a buffer over x (y2 =
  // Neg(x) bound to x) already written, whatever the order of the outputs.
  // First the outputs handed out: only memory the session allocated for this
  // run goes out as is; one that views a constant, a caller's input or
  // buffer, or that a kernel making its outputs may share with anything it
  // saw, is copied now.
  std::unordered_set<const Storage*> foreign;
  for (const NamedTensor& in : inputs) foreign.insert(in.tensor.storage().get());
  for (size_t k = 0; k < n_out; ++k)
    if (bound[k]) foreign.insert((*outputs)[k].storage().get());
  std::vector<Tensor> handed(n_out);
  for (size_t k = 0; k < n_out; ++k) {
    if (bound[k]) continue;
    const int value = im.output_values[k];
    const Tensor& v = values[size_t(value)].tensor();
    const bool shared = (v.storage() && !v.storage()->owned()) ||
                        im.root_kind[size_t(im.root[size_t(value)])] == RootKind::kShared ||
                        im.constant_storage.count(v.storage().get()) || foreign.count(v.storage().get());
    if (shared) {
      ASSIGN_OR_RETURN(handed[k], v.Clone(im.budget));
    } else {
      handed[k] = v;
    }
  }
  // Then the results copied into caller buffers: one whose memory overlaps
  // another such buffer is copied aside first (its own buffer it may
  // overlap: CopyElements moves as memmove does).
  RangeIndex targets;
  for (size_t k = 0; k < n_out; ++k)
    if (copy_at_end[k]) targets.Add((*outputs)[k], k);
  targets.Finish();
  std::vector<Tensor> sources(n_out);
  for (size_t k = 0; k < n_out; ++k) {
    if (!copy_at_end[k]) continue;
    const Tensor& v = values[size_t(im.output_values[k])].tensor();
    bool aside = false;
    targets.ForEachOverlap(v, [&](size_t j) { aside = aside || j != k; });
    if (aside) {
      ASSIGN_OR_RETURN(sources[k], v.Clone(im.budget));
    } else {
      sources[k] = v;
    }
  }
  values.clear();  // the sources and handed-out tensors hold what they need
  for (size_t k = 0; k < n_out; ++k) {
    if (copy_at_end[k]) CopyElements(sources[k], (*outputs)[k], im.threads);
    else if (!bound[k]) (*outputs)[k] = std::move(handed[k]);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<NamedTensor>& inputs) const {
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(Run(inputs, &outputs));
  return outputs;
}

}  // namespace onnx_mini
