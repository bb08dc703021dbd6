// Session: the public class (creation with the rewrites and their fallback,
// input checks, runs, caller buffers, the profile).
#include "runtime/session.h"

#include <algorithm>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/alignment.h"
#include "runtime/loader.h"
#include "runtime/rewrite/rewrite.h"
#include "runtime/session/impl.h"

namespace onnx_mini {
namespace {

using session_detail::CheckValue;
using session_detail::RootKind;
using session_detail::RunControl;
using session_detail::Step;

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

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(Graph graph, const OpRegistry& ops,
                                                         const SessionOptions& options) {
  if (options.dq_matmul_accuracy_level < 0 || options.dq_matmul_accuracy_level > 4)
    return absl::InvalidArgumentError(absl::StrCat("SessionOptions::dq_matmul_accuracy_level must be 0 to 4, got ",
                                                   options.dq_matmul_accuracy_level));
  // A rewrite must never make a valid model fail: a fused kernel can be
  // stricter than the pattern it replaces (a scale that broadcasts the
  // normalized values to a wider shape, say). If the rewritten graph does not
  // plan, the graph as written is planned instead; its error, if any, names
  // the model's own nodes.
  std::shared_ptr<session_detail::Tracer> tracer;
  if (options.trace) tracer = std::make_shared<session_detail::Tracer>(options.trace_max_events);
  std::optional<Graph> as_written;  // dropped before Prepare, which may free initializers
  if (options.graph_rewrites) {
    Graph rewritten = graph;  // tensors share their storage
    RewriteOptions rewrite;
    rewrite.dq_matmul_accuracy_level = options.dq_matmul_accuracy_level;
    if (RewriteGraph(rewritten, ops, rewrite) > 0) {
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
  // Profiling starts once the session is planned (folding constants at
  // creation runs nodes that are not the model's runs).
  if (options.profile || tracer) {
    impl->AttachProfiling("", tracer, options.profile);
    if (tracer) tracer->RecordSession("session_initialization", 0);
  }
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

absl::Status Session::WriteTrace(const std::string& path) const {
  if (!impl_->tracer)
    return absl::FailedPreconditionError("profiling is off: the session was made without SessionOptions::trace");
  return impl_->tracer->Write(path);
}

std::string Session::TraceJson() const { return impl_->tracer ? impl_->tracer->Json() : std::string(); }

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
                                const RunOptions& run_options, const std::vector<bool>* wanted) const {
  const Impl& im = *impl_;
  const int64_t start = im.tracer ? im.tracer->Now() : 0;
  absl::Status s = RunValuesUnguarded(inputs, outputs, run_options, wanted);
  if (im.tracer) im.tracer->RecordSession("model_run", start);
  return s;
}

absl::Status Session::RunValuesUnguarded(const std::vector<NamedValue>& inputs, std::vector<Value>* outputs,
                                         const RunOptions& run_options, const std::vector<bool>* wanted) const {
  try {
    const RunControl control(run_options);
    const Impl& im = *impl_;
    RETURN_IF_ERROR(ValidateValues(inputs));
    std::vector<Value> values(im.value_names.size());
    im.FillConstants(values);
    for (const NamedValue& in : inputs) {
      const int v = im.value_index.at(in.name);
      ASSIGN_OR_RETURN(values[size_t(v)], NormalizedValue(absl::StrCat("input '", in.name, "'"), in.value, im.budget));
    }
    RETURN_IF_ERROR(im.Execute(values, nullptr, control.active() ? &control : nullptr));
    // Hand out only memory this run made: a tensor that may share a constant's,
    // an input's or a subgraph's storage is copied (sequence items always).
    outputs->clear();
    for (size_t k = 0; k < im.output_values.size(); ++k) {
      const int v = im.output_values[k];
      const Value& out = values[size_t(v)];
      if (wanted != nullptr && (k >= wanted->size() || !(*wanted)[k])) {
        outputs->emplace_back();  // not asked for: no copy
      } else if (out.is_sequence()) {
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
  const int64_t start = impl_->tracer ? impl_->tracer->Now() : 0;
  absl::Status s;
  try {
    s = RunUnguarded(inputs, outputs, run_options);
  } catch (const std::bad_alloc&) {
    s = absl::ResourceExhaustedError("out of memory for a kernel's temporary buffers");
  }
  if (impl_->tracer) impl_->tracer->RecordSession("model_run", start);
  return s;
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
  im.FillConstants(values);
  for (const NamedTensor& in : inputs) {
    const int v = im.value_index.at(in.name);
    values[size_t(v)] = in.tensor;
  }

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
