// The op interface. The session turns every node into an Op once, through the
// factory of its registry row, which parses and validates the attributes. The
// row declares the node's signature (arity, the element-type constraints of
// every input and output, which outputs alias which inputs), and the session
// checks it before the op sees anything. Then:
//   Infer   validates what the row cannot express (shapes, values, attribute
//           combinations), derives the outputs' types and makes the plan the
//           kernel needs (an OpPlan). With static shapes it runs once, at
//           session creation; otherwise once per run, on the real inputs.
//   Compute runs on validated inputs and the plan; it re-derives nothing.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/cpu.h"
#include "runtime/graph.h"
#include "runtime/status_macros.h"
#include "runtime/type_set.h"

namespace onnx_mini {

// What Infer hands to Compute beyond the output types: slice ranges, pads,
// reduced axes, the attention problem... Ops derive their own plan type.
struct OpPlan {
  virtual ~OpPlan() = default;
};

// A graph attribute (the branches of If, the bodies of Loop, Scan and
// SequenceMap) planned by the session once, at its creation, with the input
// types the op gives it; it reads outer-scope values by name.
class Subgraph {
 public:
  virtual ~Subgraph() = default;
  // The subgraph's inputs and outputs with the types inferred when planned.
  virtual const std::vector<ValueInfo>& inputs() const = 0;
  virtual const std::vector<ValueInfo>& outputs() const = 0;
};

// Plans subgraphs for InferContext::subgraph (the session implements it).
class SubgraphPlanner {
 public:
  virtual ~SubgraphPlanner() = default;
  virtual absl::StatusOr<const Subgraph*> Plan(const Node& node, const Graph& graph,
                                               const std::vector<ValueType>& input_types) = 0;
};

// Inputs and outputs of one node during shape inference.
class InferContext {
 public:
  InferContext(const Node& node, std::vector<const ValueType*> input_types,
               std::vector<const Tensor*> input_values)
      : node_(node), types_(std::move(input_types)), values_(std::move(input_values)),
        outputs_(node.outputs.size()) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return node_.opset; }
  size_t num_inputs() const { return types_.size(); }
  bool has_input(size_t i) const { return i < types_.size() && types_[i] != nullptr; }
  // The input's type; has_input(i) must hold. The session has checked it
  // against the row's type constraints; its dtype is known.
  const ValueType& input(size_t i) const { return *types_[i]; }
  // The input's value when known (always at run time; for initializers and
  // folded constants at session creation), else nullptr. Asking for a value
  // that is not known yet makes the session infer this node again at every run.
  const Tensor* value(size_t i) const {
    const Tensor* v = i < values_.size() ? values_[i] : nullptr;
    if (v == nullptr && has_input(i)) needs_values_ = true;
    if (v != nullptr) {
      if (values_read_.size() <= i) values_read_.resize(i + 1);
      values_read_[i] = true;
    }
    return v;
  }
  bool needs_values() const { return needs_values_; }
  // What the session knows of an integer input's elements before running
  // when its value is not known (a shape read by Shape from a value of
  // known rank, gathered, unsqueezed, concatenated with constants): each a
  // known value, a symbol or unknown (Dim's value -1); else nullptr.
  const std::vector<Dim>* dims_value(size_t i) const { return i < dims_values_.size() ? dims_values_[i] : nullptr; }
  void set_dims_values(std::vector<const std::vector<Dim>*> d) { dims_values_ = std::move(d); }
  // Per input: whether Infer read its value (a run's plan made from them is
  // reused only while those values are the same).
  const std::vector<bool>& values_read() const { return values_read_; }

  size_t num_outputs() const { return outputs_.size(); }
  bool output_requested(size_t i) const { return node_.has_output(i); }
  // Sets output i's type (and shape, as far as known).
  void set_output(size_t i, ValueType t) {
    if (i < outputs_.size()) outputs_[i] = std::move(t);
  }
  const std::vector<ValueType>& outputs() const { return outputs_; }

  // The plan for Compute (optional: ops that need only the output shapes set none).
  void set_plan(std::shared_ptr<const OpPlan> plan) { plan_ = std::move(plan); }
  const std::shared_ptr<const OpPlan>& plan() const { return plan_; }

  // Plans the graph attribute `attr` with these input types (for rows that
  // make their outputs, whose Infer runs once, at session creation). The
  // subgraph lives as long as the session.
  absl::StatusOr<const Subgraph*> subgraph(const std::string& attr, const std::vector<ValueType>& input_types) const {
    const Attribute* a = node_.attr(attr);
    if (a == nullptr || a->type != AttrType::kGraph || a->g == nullptr)
      return Error("attribute '" + attr + "' must be a graph");
    if (planner_ == nullptr)
      return absl::InternalError(node_.Describe() + ": subgraphs are planned only at session creation");
    return planner_->Plan(node_, *a->g, input_types);
  }
  void set_planner(SubgraphPlanner* planner) { planner_ = planner; }

  // An InvalidArgument error that names the node, the rule and the values.
  absl::Status Error(const std::string& rule) const {
    return absl::InvalidArgumentError(absl::StrCat(node_.Describe(), ": ", rule));
  }

 private:
  SubgraphPlanner* planner_ = nullptr;
  const Node& node_;
  std::vector<const ValueType*> types_;
  std::vector<const Tensor*> values_;
  std::vector<const std::vector<Dim>*> dims_values_;
  std::vector<ValueType> outputs_;
  std::shared_ptr<const OpPlan> plan_;
  mutable bool needs_values_ = false;
  mutable std::vector<bool> values_read_;
};

// Inputs and outputs of one node during a run.
class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual const Node& node() const = 0;
  virtual size_t num_inputs() const = 0;
  // nullptr for an absent optional input (or one that is not a tensor).
  virtual const Tensor* input(size_t i) const = 0;
  // Any input as a value (tensor, sequence or none); nullptr when absent.
  virtual const Value* value(size_t i) const = 0;
  virtual size_t num_outputs() const = 0;
  virtual bool output_requested(size_t i) const = 0;
  // The output buffer, allocated before Compute with the shape Infer derived
  // (uninitialized: the kernel writes it in full). It may be a caller's
  // buffer or, for an output the row lets alias an input, that input's own
  // storage (compare raw() to tell). Not for outputs the row declares views.
  virtual Tensor& output(size_t i) = 0;
  // Makes output i a view of existing storage (no copy); only for outputs the
  // row declares as views (Alias::kView) of an input. (InferContext::set_output
  // sets an output's type.)
  virtual void set_output_view(size_t i, Tensor view) = 0;
  // Sets output i, for rows that make their outputs (OpDef::makes_outputs).
  virtual void set_value(size_t i, Value value) = 0;
  // Runs a subgraph planned by Infer, with outer-scope values from this
  // node's graph; `outputs` gets the subgraph's outputs.
  virtual absl::Status RunSubgraph(const Subgraph& graph, std::vector<Value> inputs,
                                   std::vector<Value>* outputs) const = 0;
  // The shape Infer derived for output i.
  virtual const Shape& output_shape(size_t i) const = 0;
  virtual int threads() const = 0;
  // The session's memory budget (null: none). A kernel charges it for
  // everything it allocates beyond its planned outputs: the values a row
  // makes, workspaces proportional to the inputs, accumulated iterations.
  virtual const std::shared_ptr<MemoryBudget>& budget() const = 0;
  // A tensor charged to the budget (zero-filled when `zero`), for workspaces
  // and made outputs; ResourceExhausted naming the node, the bytes and the
  // limit before anything is allocated when over it.
  absl::StatusOr<Tensor> NewTensor(DType dtype, Shape shape, bool zero = false) const {
    absl::StatusOr<Tensor> t =
        zero ? Tensor::Make(dtype, std::move(shape), budget()) : Tensor::MakeUninitialized(dtype, std::move(shape), budget());
    if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(node().Describe(), ": ", t.status().message()));
    return t;
  }
  // Charges `count` elements of `element_bytes` (checked) to the budget for a
  // workspace held elsewhere (a std::vector, per-thread buffers), until the
  // reservation is destroyed: call before allocating it. One atomic add.
  absl::StatusOr<MemoryReservation> Reserve(int64_t count, size_t element_bytes, const char* what) const {
    MemoryReservation r(budget());
    RETURN_IF_ERROR(Grow(r, count, element_bytes, what));
    return r;
  }
  absl::Status Grow(MemoryReservation& r, int64_t count, size_t element_bytes, const char* what) const {
    if (r.bytes() == 0) r = MemoryReservation(budget());  // a default-made one: charge this session
    absl::Status s = r.Grow(count, element_bytes, what);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(node().Describe(), ": ", s.message()));
    return s;
  }
  // OK, or the status that stops the run (RunOptions: the terminate flag
  // set, the deadline passed), naming this node. Kernels that loop for long
  // (Loop, Scan, SequenceMap) check it once per iteration and return it.
  virtual absl::Status CheckCancelled() const { return absl::OkStatus(); }
  // The plan Infer made; Plan must be the type Infer set.
  template <class Plan>
  const Plan& plan() const {
    return static_cast<const Plan&>(*plan_ptr());
  }
  // An InvalidArgument error that names the node and the rule (for checks
  // that depend on data, such as index ranges).
  absl::Status Error(const std::string& rule) const {
    return absl::InvalidArgumentError(absl::StrCat(node().Describe(), ": ", rule));
  }

 protected:
  virtual const OpPlan* plan_ptr() const = 0;
};

// What Op::Prepare sees of its node at session creation.
class PrepareContext {
 public:
  virtual ~PrepareContext() = default;
  virtual const Node& node() const = 0;
  virtual size_t num_inputs() const = 0;
  // Input i's value when it is an initializer or a folded constant (the same
  // tensor every run sees), else nullptr.
  virtual const Tensor* constant(size_t i) const = 0;
  // The session's intra-op thread count.
  virtual int threads() const = 0;
  // The session's memory budget (possibly null). What the op keeps (packed
  // weights) is charged to it for the op's lifetime.
  virtual const std::shared_ptr<MemoryBudget>& budget() const = 0;
  // The CPU target the kernels run on now: a packed blob records it, and is
  // used by no kernel of another target.
  CpuTarget target() const { return ActiveCpuTarget(); }
  // The op no longer needs constant input i's original: it keeps a form of
  // its own (a packed weight) that Compute works from alone, with every
  // thread count and row count. The session frees the original once no
  // other reader needs it (another node, a graph output, a subgraph, the
  // caller's own copy of the graph). Compute still sees the input, with its
  // dtype and shape but no data (raw() is nullptr) when freed.
  virtual void release(size_t i) = 0;
  // The blob `make` derives from constant input i (say, the weight packed for
  // the GEMM), shared by every node of the session that asks for the same
  // constant and `kind` (two MatMuls reading one weight: packed once). `kind`
  // names the blob's type and layout; `make` charges what it allocates to
  // budget() and may return null (then nothing is cached).
  template <class T, class Make>
  std::shared_ptr<const T> Shared(size_t i, const std::string& kind, Make make) {
    return std::static_pointer_cast<const T>(
        SharedBlob(i, kind, [&]() -> std::shared_ptr<const void> { return make(); }));
  }

 protected:
  virtual std::shared_ptr<const void> SharedBlob(size_t i, const std::string& kind,
                                                 const std::function<std::shared_ptr<const void>()>& make) = 0;
};

// One node's op: made once per node by its row's factory, used by every run
// (from several threads at once: Infer and Compute must not modify the op).
class Op {
 public:
  virtual ~Op() = default;
  virtual absl::Status Infer(InferContext& ctx) const = 0;
  virtual absl::Status Compute(KernelContext& ctx) const = 0;
  // Session-creation work on the node's constant inputs, done once, before
  // any run and single-threaded: e.g. a weight reordered into the layout a
  // kernel wants (PrepareContext). The op may keep what it derives (this is
  // the one call that may modify it); Compute must still work when Prepare
  // kept nothing, unless Prepare released an input's original
  // (PrepareContext::release), when Compute works from what it kept. Not
  // called for nodes the session folds. Default: nothing to prepare.
  virtual absl::Status Prepare(PrepareContext& ctx) {
    (void)ctx;
    return absl::OkStatus();
  }
};

// Parses and validates the node's attributes into an op.
using OpFactory = absl::StatusOr<std::unique_ptr<Op>> (*)(const Node& node);

// The factory of an op whose constructor O(const Node&) cannot fail.
template <class O>
absl::StatusOr<std::unique_ptr<Op>> MakeOp(const Node& node) {
  return std::unique_ptr<Op>(new O(node));
}

// The kinds of value a type constraint admits (bits). Its TypeSet constrains
// the tensor, or the elements of the sequence or optional.
enum KindSet : unsigned {
  kTensorKind = 1,
  kSequenceKind = 2,
  kOptionalTensorKind = 4,
  kOptionalSequenceKind = 8,
  kOptionalKind = kOptionalTensorKind | kOptionalSequenceKind,
  kAnyKind = kTensorKind | kSequenceKind | kOptionalKind,
};

// A named set of element types, as in an ONNX schema's type constraints.
// Positions sharing a constraint share one element type, unless it is
// heterogeneous (the variadic values of If, Loop, Scan, SequenceMap).
struct TypeConstraint {
  std::string name;
  TypeSet types;
  unsigned kinds = kTensorKind;
  bool heterogeneous = false;
};

// Positions in a row's signature, named at the row: Out{1}, In{3}.
struct Out {
  int index;
};
struct In {
  int index;
};

// Which output shares which input's storage. Rows write InPlace(Out{1}, In{3})
// or View(Out{0}, In{0}); the tags name each index, so either order reads
// right (onnxruntime's MayInplace takes the input first).
struct Alias {
  enum Kind {
    kInPlace,  // the kernel may be handed the input's storage as the output buffer
    kView,     // the output is always a view of the input (KernelContext::set_output_view)
  };
  constexpr Alias(Kind k, Out o, In i) : output(o.index), input(i.index), kind(k) {}
  int output;
  int input;
  Kind kind;
};
constexpr Alias InPlace(Out o, In i) { return Alias(Alias::kInPlace, o, i); }
constexpr Alias InPlace(In i, Out o) { return Alias(Alias::kInPlace, o, i); }
constexpr Alias View(Out o, In i) { return Alias(Alias::kView, o, i); }
constexpr Alias View(In i, Out o) { return Alias(Alias::kView, o, i); }

// The op domains onnx-mini implements rows for.
inline constexpr const char* kOnnxDomain = "";  // ai.onnx (also spelled "ai.onnx" in models)
inline constexpr const char* kMlDomain = "ai.onnx.ml";
inline constexpr const char* kPreviewDomain = "ai.onnx.preview";
inline constexpr const char* kMsDomain = "com.microsoft";  // onnxruntime's contrib ops (ops/contrib/)
inline constexpr const char* kInternalDomain = "onnx_mini";  // fused nodes the graph rewrites make

// The opset versions a row implements: Versions{24} is 24 and later,
// Versions{13, 17} is 13 to 17.
struct Versions {
  int since;
  int last = 0;  // 0: no end
};

// Flags a row may add after its factory: the kernel makes its outputs, or
// its outputs are random draws (see OpDef::makes_outputs and OpDef::random).
struct MakesOutputs {};
struct RandomDraws {};
inline constexpr MakesOutputs kMakesOutputs{};
inline constexpr RandomDraws kRandomDraws{};

// One row of the op registry: an implementation of (domain, op_type) for the
// opset versions since_version..last_version (0 = no end).
//
// `inputs` and `outputs` are signatures, one word per position naming a type
// constraint, with a suffix: none for required, `?` for optional, `*` for a
// variadic tail of one or more (`*?`: zero or more). "T T", "T1 T2? I*". Positions
// that share a constraint share one element type, which must be in its set.
//
// A row reads {kOnnxDomain, "Pad", Versions{11}, "T I T? Tind?", "T", {types...}, PadOp::Create}
// followed by any of InPlace(...), View(...), kMakesOutputs, kRandomDraws.
struct OpDef {
  template <class... Options>
  OpDef(std::string domain, std::string op_type, Versions versions, std::string inputs, std::string outputs,
        std::vector<TypeConstraint> types, OpFactory create, Options... options)
      : domain(std::move(domain)),
        op_type(std::move(op_type)),
        since_version(versions.since),
        last_version(versions.last),
        inputs(std::move(inputs)),
        outputs(std::move(outputs)),
        types(std::move(types)),
        create(create) {
    (Apply(options), ...);
  }

  std::string domain;  // kOnnxDomain ("") for ai.onnx
  std::string op_type;
  int since_version = 1;
  int last_version = 0;
  std::string inputs;
  std::string outputs;
  std::vector<TypeConstraint> types;
  OpFactory create = nullptr;
  std::vector<Alias> aliases = {};
  // The kernel makes every output itself (KernelContext::set_value): values
  // whose size only the run tells (sequences, control flow). The session
  // allocates nothing for them; their Infer runs once, at session creation,
  // from the types (the kernel checks what depends on the run's values).
  bool makes_outputs = false;
  // The outputs are random draws (RandomNormal, Bernoulli...): never folded
  // into constants at session creation, so that every run draws anew.
  bool random = false;

 private:
  void Apply(Alias a) { aliases.push_back(a); }
  void Apply(MakesOutputs) { makes_outputs = true; }
  void Apply(RandomDraws) { random = true; }
};

// "not implemented: ai.onnx::Op opset N for <what>".
absl::Status NotImplemented(const Node& node, const std::string& what);
absl::Status NotImplemented(const Node& node, DType dtype);

}  // namespace onnx_mini
