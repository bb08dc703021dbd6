// The C API (runtime/onnx_mini.h) over Session, Tensor and OpRegistry. Every
// entry point catches what C++ could throw, so nothing crosses the boundary.
#include "runtime/onnx_mini.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/alignment.h"
#include "runtime/loader.h"
#include "runtime/registry.h"
#include "runtime/session.h"
#include "runtime/status_macros.h"

using namespace onnx_mini;

struct om_status {
  om_status_code code;
  std::string message;
};

struct om_tensor {
  Tensor tensor;
};

struct om_value {
  Value value;
};

struct om_session_options {
  SessionOptions options;
  std::string profile_prefix;  // profiling: the trace file's prefix ("" when off)
};

struct om_run_options {
  std::atomic<bool> terminate{false};  // set from any thread while runs are in flight
  std::atomic<int64_t> timeout_ms{0};
};

namespace {

// Returned when even a status cannot be allocated; om_status_free ignores it.
om_status kOutOfMemory{OM_OUT_OF_MEMORY, "out of memory"};

// The message is copied inside the try: building a status never throws.
om_status* MakeStatus(om_status_code code, absl::string_view message) {
  if (code == OM_OK) return nullptr;
  try {
    return new om_status{code, std::string(message)};
  } catch (...) {
    return &kOutOfMemory;
  }
}

om_status* FromAbsl(const absl::Status& s) {
  if (s.ok()) return nullptr;
  om_status_code code = OM_INTERNAL;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      code = OM_INVALID_ARGUMENT;
      break;
    case absl::StatusCode::kNotFound:
      code = OM_NOT_FOUND;
      break;
    case absl::StatusCode::kUnimplemented:
      code = OM_NOT_IMPLEMENTED;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = OM_OUT_OF_MEMORY;
      break;
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
      code = OM_CANCELLED;
      break;
    default:
      break;
  }
  return MakeStatus(code, std::string(s.message()));
}

absl::Status ToAbsl(om_status* s) {
  if (s == nullptr) return absl::OkStatus();
  absl::Status out;
  switch (s->code) {
    case OM_INVALID_ARGUMENT: out = absl::InvalidArgumentError(s->message); break;
    case OM_NOT_FOUND: out = absl::NotFoundError(s->message); break;
    case OM_NOT_IMPLEMENTED: out = absl::UnimplementedError(s->message); break;
    case OM_OUT_OF_MEMORY: out = absl::ResourceExhaustedError(s->message); break;
    case OM_CANCELLED: out = absl::CancelledError(s->message); break;
    default: out = absl::InternalError(s->message); break;
  }
  om_status_free(s);
  return out;
}

om_status* Invalid(absl::string_view message) { return MakeStatus(OM_INVALID_ARGUMENT, message); }

// Runs `body` (returning om_status*) with every exception turned into a status.
template <class F>
om_status* Guard(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return &kOutOfMemory;
  } catch (const std::exception& e) {
    try {
      return MakeStatus(OM_INTERNAL, absl::StrCat("internal error: ", e.what()));
    } catch (...) {
      return &kOutOfMemory;
    }
  } catch (...) {
    return MakeStatus(OM_INTERNAL, "internal error");
  }
}

#define OM_REQUIRE(arg) \
  if ((arg) == nullptr) return Invalid(#arg " is NULL")

absl::StatusOr<Shape> ShapeFrom(const int64_t* dims, size_t rank) {
  if (rank > size_t(kMaxRank)) return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is too large"));
  if (rank > 0 && dims == nullptr) return absl::InvalidArgumentError("dims is NULL");
  Shape shape(dims, dims + rank);
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 0)
      return absl::InvalidArgumentError(absl::StrCat("dim ", i, " is ", shape[i], " (sizes are >= 0)"));
  if (ElementCount(shape) < 0)
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(shape), " has too many elements"));
  return shape;
}

absl::Status CheckElemType(int32_t code) {
  if (!IsValidDType(code)) return absl::InvalidArgumentError(absl::StrCat("unknown element type ", code));
  return absl::OkStatus();
}

// Where string elements cannot go: caller memory (om_tensor_wrap) and custom ops.
absl::Status CheckNumericElemType(int32_t code, absl::string_view where) {
  RETURN_IF_ERROR(CheckElemType(code));
  if (DType(code) == DType::kString)
    return absl::InvalidArgumentError(absl::StrCat("string tensors cannot be ", where));
  return absl::OkStatus();
}

// The custom ops, their rows in a registry that falls back to the built-in
// one. Sessions are created under a shared lock, rows are added under an
// exclusive one; rows are never removed, so sessions may keep pointers to them.
struct CustomOps {
  std::shared_mutex mutex;
  OpRegistry registry{&BuiltinOps()};
  // The registered definitions with their strings, by (domain, op_type).
  struct Def {
    om_custom_op op;
    std::string domain, op_type;
  };
  std::map<std::pair<std::string, std::string>, std::vector<std::unique_ptr<Def>>> defs;
};

CustomOps& Custom() {
  static CustomOps* custom = new CustomOps;  // never destroyed: sessions may outlive static destruction
  return *custom;
}

}  // namespace

// ---- Custom op contexts ----

struct om_node {
  const Node* node;
};

struct om_infer_context {
  InferContext* ctx;
  om_node node;
  std::vector<std::vector<int64_t>> input_dims;
};

namespace {

// What a custom op's infer callback said at session creation: the input
// shapes it saw where they were concrete, and the output types it set.
struct CustomPlan : OpPlan {
  std::vector<std::optional<Shape>> input_shapes;
  std::vector<ValueType> outputs;
};

// A node of a custom op: forwards to the embedder's callbacks. Its row makes
// its outputs (OpDef::makes_outputs): an output whose shape infer cannot
// tell from the input shapes is allocated by the compute callback
// (om_kernel_allocate_output), as onnxruntime's custom kernels may do.
class CustomOp : public Op {
 public:
  CustomOp(const Node& node, const om_custom_op& def) : def_(def) {}

  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    CustomOps& c = Custom();  // the caller (Session::Create) holds the shared lock
    auto it = c.defs.find({node.domain, node.op_type});
    if (it != c.defs.end())
      for (const auto& d : it->second)
        if (d->op.since_version <= node.opset && (d->op.last_version == 0 || node.opset <= d->op.last_version))
          return std::unique_ptr<Op>(new CustomOp(node, d->op));
    return NotImplemented(node, "custom op without a definition");
  }

  // Runs once, at session creation (the row makes its outputs).
  absl::Status Infer(InferContext& ctx) const override {
    RETURN_IF_ERROR(CallInfer(ctx));
    auto plan = std::make_shared<CustomPlan>();
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      std::optional<Shape> shape;
      if (ctx.has_input(i)) shape = ctx.input(i).concrete_shape();
      plan->input_shapes.push_back(std::move(shape));
    }
    plan->outputs = ctx.outputs();
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override;

 private:
  absl::Status CallInfer(InferContext& ctx) const {
    om_infer_context c{&ctx, {&ctx.node()}, {}};
    c.input_dims.resize(ctx.num_inputs());
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      for (const Dim& d : *ctx.input(i).dims) c.input_dims[i].push_back(d.known() ? d.value : -1);
    }
    om_status* s = def_.infer(def_.user_data, &c);
    if (s != nullptr) {
      absl::Status e = ToAbsl(s);
      return absl::Status(e.code(), absl::StrCat(ctx.node().Describe(), ": ", e.message()));
    }
    for (size_t i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.output_requested(i) && ctx.outputs()[i].dtype == DType::kUndefined)
        return ctx.Error(absl::StrCat("the custom op's infer callback did not set output ", i));
    return absl::OkStatus();
  }

  const om_custom_op& def_;
};

}  // namespace

struct om_kernel_context {
  KernelContext* ctx;
  om_node node;
  std::vector<om_tensor> inputs;
  std::vector<om_tensor> outputs;  // undefined until allocated
  std::vector<ValueType> types;    // the outputs' types for these inputs
};

namespace {

absl::Status CustomOp::Compute(KernelContext& ctx) const {
  const CustomPlan& plan = ctx.plan<CustomPlan>();
  om_kernel_context c{&ctx, {&ctx.node()}, {}, {}, plan.outputs};
  c.inputs.resize(ctx.num_inputs());
  bool as_planned = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor* t = ctx.input(i);
    if (t == nullptr) continue;
    c.inputs[i].tensor = *t;
    as_planned = as_planned && i < plan.input_shapes.size() && plan.input_shapes[i] == t->shape();
  }
  if (!as_planned) {
    // Shapes not known at creation: infer again on these inputs' shapes.
    std::vector<ValueType> types(ctx.num_inputs());
    std::vector<const ValueType*> type_ptrs(ctx.num_inputs(), nullptr);
    std::vector<const Tensor*> values(ctx.num_inputs(), nullptr);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (const Tensor* t = ctx.input(i)) {
        types[i] = ValueType::Of(t->dtype(), t->shape());
        type_ptrs[i] = &types[i];
        values[i] = t;
      }
    }
    InferContext ictx(ctx.node(), type_ptrs, values);
    RETURN_IF_ERROR(CallInfer(ictx));
    for (size_t i = 0; i < ictx.num_outputs(); ++i)
      if (ctx.output_requested(i) && ictx.outputs()[i].dtype != plan.outputs[i].dtype)
        return ctx.Error(absl::StrCat("the custom op's infer callback gave output ", i, " the element type ",
                                      LowerName(ictx.outputs()[i].dtype), " at run time but ",
                                      LowerName(plan.outputs[i].dtype), " at session creation"));
    c.types = ictx.outputs();
  }
  c.outputs.resize(ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const std::optional<Shape> shape = c.types[i].concrete_shape();
    if (!shape || c.types[i].dtype == DType::kUndefined) continue;  // the compute callback allocates it
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(c.types[i].dtype, *shape, ctx.budget());
    if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(ctx.node().Describe(), ": output ", i, ": ",
                                                                      t.status().message()));
    c.outputs[i].tensor = *std::move(t);
  }
  om_status* s = def_.compute(def_.user_data, &c);
  if (s != nullptr) {
    absl::Status e = ToAbsl(s);
    return absl::Status(e.code(), absl::StrCat(ctx.node().Describe(), ": ", e.message()));
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.output_requested(i)) continue;
    Tensor& out = c.outputs[i].tensor;
    if (!out.defined())
      return ctx.Error(absl::StrCat("the custom op's compute callback did not allocate output ", i,
                                    ", whose shape its infer callback left as ", c.types[i].ToString(),
                                    " (om_kernel_allocate_output)"));
    // C code may store any byte in a bool: downstream kernels read 0 or 1.
    if (out.dtype() == DType::kBool) {
      uint8_t* bytes = static_cast<uint8_t*>(out.raw());
      for (int64_t k = 0; k < out.size(); ++k) bytes[k] = bytes[k] != 0;
    }
    ctx.set_value(i, Value(std::move(out)));
  }
  return absl::OkStatus();
}

}  // namespace

// ---- Sessions ----

struct om_session {
  std::unique_ptr<Session> session;
  // The introspection answers, stable for the session's life.
  struct Info {
    std::string name;
    om_type_kind kind = OM_TYPE_TENSOR;
    int32_t elem_type = 0;
    bool ranked = false;
    std::vector<int64_t> dims;
    std::vector<std::string> dim_names;
    std::vector<const char*> dim_name_ptrs;
  };
  std::vector<Info> inputs, outputs;
  // Name -> index (the first, for a name listed twice), for runs over many names.
  std::map<std::string, size_t> input_index, output_index;
  // om_session_metadata's answer: the strings live in the session's graph.
  struct Metadata {
    std::shared_ptr<const ModelMetadata> model;
    std::vector<const char*> keys, values, opset_domains;
    std::vector<int64_t> opset_versions;
    om_model_metadata c{};
  } metadata;
  // Profiling: the trace files' prefix ("" when off), when the current
  // recording began (its file's name).
  std::string profile_prefix;
  // Every file written, never overwritten by a later one; om_session_end_profiling's paths point here.
  std::set<std::string> profile_paths;
  std::chrono::system_clock::time_point profile_start;
  std::mutex profile_mutex;
};

namespace {

std::vector<om_session::Info> Describe(const std::vector<ValueInfo>& values) {
  std::vector<om_session::Info> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    om_session::Info& info = out[i];
    const ValueType& type = values[i].type;
    info.name = values[i].name;
    info.kind = type.kind == ValueType::Kind::kSequence ? OM_TYPE_SEQUENCE
                : type.kind != ValueType::Kind::kOptional ? OM_TYPE_TENSOR
                : type.content == ValueType::Kind::kSequence ? OM_TYPE_OPTIONAL_SEQUENCE
                                                             : OM_TYPE_OPTIONAL_TENSOR;
    info.elem_type = int32_t(values[i].type.dtype);
    // A sequence has no shape of its own: onnxruntime reports [] (no dims).
    if (info.kind == OM_TYPE_SEQUENCE || info.kind == OM_TYPE_OPTIONAL_SEQUENCE) {
      info.ranked = true;
      continue;
    }
    info.ranked = values[i].type.dims.has_value();
    if (info.ranked)
      for (const Dim& d : *values[i].type.dims) {
        info.dims.push_back(d.known() ? d.value : -1);
        info.dim_names.push_back(d.symbol);
      }
    for (const std::string& n : info.dim_names) info.dim_name_ptrs.push_back(n.c_str());
  }
  return out;
}

// Fills om_session_metadata's answer once, from the graph the session keeps.
void SetMetadata(om_session& session) {
  const Graph& graph = session.session->graph();
  om_session::Metadata& m = session.metadata;
  m.model = graph.metadata ? graph.metadata : std::make_shared<const ModelMetadata>();
  const ModelMetadata& model = *m.model;
  for (const auto& [key, value] : model.props) {
    m.keys.push_back(key.c_str());
    m.values.push_back(value.c_str());
  }
  for (const auto& [domain, version] : model.opset_imports) {
    m.opset_domains.push_back(domain.c_str());
    m.opset_versions.push_back(version);
  }
  m.c.producer_name = model.producer_name.c_str();
  m.c.producer_version = model.producer_version.c_str();
  m.c.domain = model.domain.c_str();
  m.c.description = model.doc_string.c_str();
  m.c.graph_name = graph.name.c_str();
  m.c.graph_description = model.graph_doc_string.c_str();
  m.c.version = model.model_version;
  m.c.custom_count = m.keys.size();
  m.c.custom_keys = m.keys.data();
  m.c.custom_values = m.values.data();
  m.c.opset_count = m.opset_domains.size();
  m.c.opset_domains = m.opset_domains.data();
  m.c.opset_versions = m.opset_versions.data();
}

om_status* FinishCreate(absl::StatusOr<Graph> graph, const om_session_options* options, om_session** out) {
  if (!graph.ok()) return FromAbsl(graph.status());
  const SessionOptions opts = options ? options->options : SessionOptions{};
  CustomOps& c = Custom();
  absl::StatusOr<std::unique_ptr<Session>> s;
  {
    std::shared_lock lock(c.mutex);
    s = Session::Create(*std::move(graph), c.registry, opts);
  }
  if (!s.ok()) return FromAbsl(s.status());
  auto session = std::make_unique<om_session>();
  session->session = *std::move(s);
  session->inputs = Describe(session->session->inputs());
  session->outputs = Describe(session->session->outputs());
  for (size_t i = 0; i < session->inputs.size(); ++i) session->input_index.emplace(session->inputs[i].name, i);
  for (size_t i = 0; i < session->outputs.size(); ++i) session->output_index.emplace(session->outputs[i].name, i);
  SetMetadata(*session);
  if (options != nullptr) session->profile_prefix = options->profile_prefix;
  session->profile_start = std::chrono::system_clock::now();
  *out = session.release();
  return nullptr;
}

// Output `k` of a run asks for `name`: its graph output index, each asked for once.
om_status* FindOutput(const om_session& session, const char* name, size_t k, std::vector<bool>& asked, int* index) {
  if (name == nullptr) return Invalid(absl::StrCat("output name ", k, " is NULL"));
  auto found = session.output_index.find(name);
  if (found == session.output_index.end()) return Invalid(absl::StrCat("'", name, "' is not an output of the model"));
  if (asked[found->second]) return Invalid(absl::StrCat("output '", name, "' is asked for twice"));
  asked[found->second] = true;
  *index = int(found->second);
  return nullptr;
}

om_status* Info(const std::vector<om_session::Info>& infos, size_t index, const char* what, om_value_info* info) {
  if (index >= infos.size())
    return Invalid(absl::StrCat(what, " index ", index, " is out of range (the model has ", infos.size(), ")"));
  const om_session::Info& i = infos[index];
  info->name = i.name.c_str();
  info->elem_type = i.elem_type;
  info->rank = i.ranked ? int64_t(i.dims.size()) : -1;
  info->dims = i.ranked ? i.dims.data() : nullptr;
  info->dim_names = i.ranked ? i.dim_name_ptrs.data() : nullptr;
  return nullptr;
}

// The session's RunOptions for a run with `options` (NULL: nothing stops it).
RunOptions ToRunOptions(const om_run_options* options) {
  RunOptions r;
  if (options != nullptr) {
    r.terminate = &options->terminate;
    r.timeout_ms = options->timeout_ms.load(std::memory_order_relaxed);
  }
  return r;
}

}  // namespace

extern "C" {

const char* om_version(void) { return "0.6.0"; }

om_status* om_status_create(om_status_code code, const char* message) {
  return MakeStatus(code, message ? message : "");
}
om_status_code om_status_get_code(const om_status* status) { return status ? status->code : OM_OK; }
const char* om_status_message(const om_status* status) { return status ? status->message.c_str() : ""; }
void om_status_free(om_status* status) {
  if (status != &kOutOfMemory) delete status;
}

const char* om_elem_type_name(int32_t elem_type) {
  return IsValidDType(elem_type) ? Name(DType(elem_type)) : "UNDEFINED";
}

// ---- Tensors ----

om_status* om_tensor_create(int32_t elem_type, const int64_t* dims, size_t rank, om_tensor** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = nullptr;
    if (absl::Status s = CheckElemType(elem_type); !s.ok()) return FromAbsl(s);
    absl::StatusOr<Shape> shape = ShapeFrom(dims, rank);
    if (!shape.ok()) return FromAbsl(shape.status());
    absl::StatusOr<Tensor> t = Tensor::Make(DType(elem_type), *std::move(shape));
    if (!t.ok()) return FromAbsl(t.status());
    *out = new om_tensor{*std::move(t)};
    return nullptr;
  });
}

om_status* om_tensor_wrap(int32_t elem_type, const int64_t* dims, size_t rank, void* data, size_t byte_size,
                          om_tensor** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = nullptr;
    if (absl::Status s = CheckNumericElemType(elem_type, "wrapped (use om_tensor_create_strings)"); !s.ok())
      return FromAbsl(s);
    absl::StatusOr<Shape> shape = ShapeFrom(dims, rank);
    if (!shape.ok()) return FromAbsl(shape.status());
    const size_t needed = StorageBytes(DType(elem_type), ElementCount(*shape));
    if (byte_size < needed)
      return Invalid(absl::StrCat("a ", LowerName(DType(elem_type)), ShapeToString(*shape), " tensor needs ", needed,
                                  " bytes, the memory given holds ", byte_size));
    if (data == nullptr && needed > 0) return Invalid("data is NULL");
    // Kernels load elements as their C type: misaligned memory is refused
    // (copy it to aligned memory first).
    const size_t align = ElementAlignment(DType(elem_type));
    if (needed > 0 && reinterpret_cast<uintptr_t>(data) % align != 0)
      return Invalid(absl::StrCat("data at 0x", absl::Hex(reinterpret_cast<uintptr_t>(data)),
                                  " is not aligned to ", align, " bytes, as ", LowerName(DType(elem_type)),
                                  " elements need"));
    *out = new om_tensor{Tensor::Borrow(DType(elem_type), *std::move(shape), data)};
    return nullptr;
  });
}

void om_tensor_free(om_tensor* tensor) { delete tensor; }

om_status* om_tensor_elem_type(const om_tensor* tensor, int32_t* elem_type) {
  OM_REQUIRE(tensor);
  OM_REQUIRE(elem_type);
  *elem_type = int32_t(tensor->tensor.dtype());
  return nullptr;
}

om_status* om_tensor_shape(const om_tensor* tensor, const int64_t** dims, size_t* rank) {
  OM_REQUIRE(tensor);
  OM_REQUIRE(dims);
  OM_REQUIRE(rank);
  *dims = tensor->tensor.shape().data();
  *rank = tensor->tensor.shape().size();
  return nullptr;
}

om_status* om_tensor_element_count(const om_tensor* tensor, int64_t* count) {
  OM_REQUIRE(tensor);
  OM_REQUIRE(count);
  *count = tensor->tensor.size();
  return nullptr;
}

om_status* om_tensor_data(om_tensor* tensor, void** data) {
  OM_REQUIRE(tensor);
  OM_REQUIRE(data);
  if (tensor->tensor.dtype() == DType::kString)
    return Invalid("a string tensor has no element memory to hand out: read and write its elements with "
                   "om_tensor_get_string and om_tensor_set_string");
  *data = tensor->tensor.raw();
  return nullptr;
}

om_status* om_tensor_const_data(const om_tensor* tensor, const void** data) {
  OM_REQUIRE(data);
  void* mutable_data = nullptr;
  om_status* st = om_tensor_data(const_cast<om_tensor*>(tensor), &mutable_data);
  *data = mutable_data;
  return st;
}

om_status* om_tensor_byte_size(const om_tensor* tensor, size_t* bytes) {
  OM_REQUIRE(tensor);
  OM_REQUIRE(bytes);
  if (tensor->tensor.dtype() == DType::kString)
    return Invalid("a string tensor has no byte size: its elements are strings of their own lengths "
                   "(om_tensor_get_string)");
  *bytes = tensor->tensor.bytes();
  return nullptr;
}

// ---- String tensors ----

namespace {
// Element `index` of a string tensor, or an error naming what is wrong.
om_status* StringElement(const om_tensor* tensor, int64_t index, std::string** element) {
  const Tensor& t = tensor->tensor;
  if (t.dtype() != DType::kString)
    return Invalid(absl::StrCat("the tensor is ", LowerName(t.dtype()), ", not a string tensor"));
  if (index < 0 || index >= t.size())
    return Invalid(absl::StrCat("string index ", index, " is out of range (the tensor has ", t.size(),
                                " elements)"));
  // Elements are std::string objects; a const handle's are read only through get.
  *element = const_cast<std::string*>(t.data<std::string>()) + index;
  return nullptr;
}
}  // namespace

om_status* om_tensor_create_strings(const int64_t* dims, size_t rank, const char* const* strings,
                                    const size_t* lengths, size_t count, om_tensor** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = nullptr;
    absl::StatusOr<Shape> shape = ShapeFrom(dims, rank);
    if (!shape.ok()) return FromAbsl(shape.status());
    if (uint64_t(ElementCount(*shape)) != uint64_t(count))
      return Invalid(absl::StrCat("count is ", count, " but shape ", ShapeToString(*shape), " has ",
                                  ElementCount(*shape), " elements"));
    if (count > 0 && strings == nullptr) return Invalid("strings is NULL");
    for (size_t i = 0; i < count; ++i)
      if (strings[i] == nullptr && (lengths == nullptr || lengths[i] != 0))
        return Invalid(absl::StrCat("string ", i, " is NULL"));
    absl::StatusOr<Tensor> t = Tensor::Make(DType::kString, *std::move(shape));
    if (!t.ok()) return FromAbsl(t.status());
    std::string* elements = t->data<std::string>();
    for (size_t i = 0; i < count; ++i) {
      if (lengths == nullptr) elements[i] = strings[i];
      else if (lengths[i] > 0) elements[i].assign(strings[i], lengths[i]);
    }
    *out = new om_tensor{*std::move(t)};
    return nullptr;
  });
}

om_status* om_tensor_get_string(const om_tensor* tensor, int64_t index, const char** data, size_t* length) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(tensor);
    OM_REQUIRE(data);
    OM_REQUIRE(length);
    std::string* element = nullptr;
    if (om_status* st = StringElement(tensor, index, &element)) return st;
    *data = element->c_str();
    *length = element->size();
    return nullptr;
  });
}

om_status* om_tensor_set_string(om_tensor* tensor, int64_t index, const char* data, size_t length) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(tensor);
    if (data == nullptr && length > 0) return Invalid("data is NULL");
    std::string* element = nullptr;
    if (om_status* st = StringElement(tensor, index, &element)) return st;
    // assign leaves the element as it was if it throws (out of memory).
    if (length == 0) element->clear();
    else element->assign(data, length);
    return nullptr;
  });
}

// ---- Options ----

om_status* om_session_options_create(om_session_options** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = new om_session_options;
    return nullptr;
  });
}

om_status* om_session_options_set_intra_op_threads(om_session_options* options, int threads) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(options);
    if (threads < 0) return Invalid(absl::StrCat("intra-op threads must be >= 0 (0 = all cores), got ", threads));
    options->options.threads = threads;
    return nullptr;
  });
}

om_status* om_session_options_set_memory_limit(om_session_options* options, uint64_t bytes) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(options);
    options->options.memory_limit = size_t(bytes);
    return nullptr;
  });
}

om_status* om_session_options_set_graph_rewrites(om_session_options* options, int enabled) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(options);
    if (enabled != 0 && enabled != 1) return Invalid(absl::StrCat("graph rewrites must be 0 or 1, got ", enabled));
    options->options.graph_rewrites = enabled != 0;
    return nullptr;
  });
}

om_status* om_session_options_add_config_entry(om_session_options* options, const char* key, const char* value) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(options);
    OM_REQUIRE(key);
    OM_REQUIRE(value);
    const std::string k = key, v = value;
    if (k == "session.qdq_matmulnbits_accuracy_level") {
      if (v.size() != 1 || v[0] < '0' || v[0] > '4')
        return Invalid(absl::StrCat("session.qdq_matmulnbits_accuracy_level must be 0 to 4, got '", v, "'"));
      options->options.dq_matmul_accuracy_level = v[0] - '0';
      return nullptr;
    }
    return MakeStatus(OM_NOT_IMPLEMENTED, absl::StrCat("not implemented: session config entry '", k, "'"));
  });
}

om_status* om_session_options_enable_profiling(om_session_options* options, const char* file_prefix) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(options);
    options->profile_prefix = file_prefix != nullptr ? file_prefix : "";
    options->options.trace = !options->profile_prefix.empty();
    return nullptr;
  });
}

void om_session_options_free(om_session_options* options) { delete options; }

om_status* om_run_options_create(om_run_options** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = new om_run_options;
    return nullptr;
  });
}

om_status* om_run_options_set_terminate(om_run_options* options, int terminate) {
  OM_REQUIRE(options);
  if (terminate != 0 && terminate != 1)
    return Guard([&] { return Invalid(absl::StrCat("terminate must be 0 or 1, got ", terminate)); });
  options->terminate.store(terminate != 0, std::memory_order_relaxed);
  return nullptr;
}

om_status* om_run_options_set_timeout_ms(om_run_options* options, int64_t timeout_ms) {
  OM_REQUIRE(options);
  if (timeout_ms < 0)
    return Guard([&] { return Invalid(absl::StrCat("timeout must be >= 0 ms (0 = none), got ", timeout_ms)); });
  options->timeout_ms.store(timeout_ms, std::memory_order_relaxed);
  return nullptr;
}

void om_run_options_free(om_run_options* options) { delete options; }

// ---- Sessions ----

om_status* om_session_create(const char* model_path, const om_session_options* options, om_session** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = nullptr;
    OM_REQUIRE(model_path);
    return FinishCreate(LoadModel(model_path), options, out);
  });
}

om_status* om_session_create_from_memory(const void* model_data, size_t model_size, const char* base_dir,
                                         const om_session_options* options, om_session** out) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(out);
    *out = nullptr;
    if (model_data == nullptr && model_size > 0) return Invalid("model_data is NULL");
    const std::string bytes(static_cast<const char*>(model_data), model_size);
    return FinishCreate(LoadModelFromBytes(bytes, base_dir ? base_dir : ""), options, out);
  });
}

void om_session_free(om_session* session) { delete session; }

om_status* om_session_input_count(const om_session* session, size_t* count) {
  OM_REQUIRE(session);
  OM_REQUIRE(count);
  *count = session->inputs.size();
  return nullptr;
}

om_status* om_session_output_count(const om_session* session, size_t* count) {
  OM_REQUIRE(session);
  OM_REQUIRE(count);
  *count = session->outputs.size();
  return nullptr;
}

om_status* om_session_input_info(const om_session* session, size_t index, om_value_info* info) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(session);
    OM_REQUIRE(info);
    return Info(session->inputs, index, "input", info);
  });
}

om_status* om_session_output_info(const om_session* session, size_t index, om_value_info* info) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(session);
    OM_REQUIRE(info);
    return Info(session->outputs, index, "output", info);
  });
}

// ---- Model metadata ----

om_status* om_session_metadata(const om_session* session, om_model_metadata* out) {
  OM_REQUIRE(session);
  OM_REQUIRE(out);
  *out = session->metadata.c;
  return nullptr;
}

om_status* om_session_run(const om_session* session, const char* const* input_names, const om_tensor* const* inputs,
                          size_t input_count, const char* const* output_names, om_tensor** outputs,
                          size_t output_count) {
  return om_session_run_with_options(session, nullptr, input_names, inputs, input_count, output_names, outputs,
                                     output_count);
}

om_status* om_session_run_with_options(const om_session* session, const om_run_options* run_options,
                                       const char* const* input_names, const om_tensor* const* inputs,
                                       size_t input_count, const char* const* output_names, om_tensor** outputs,
                                       size_t output_count) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(session);
    for (const auto* list : {&session->session->inputs(), &session->session->outputs()})
      for (const ValueInfo& vi : *list)
        if (!vi.type.is_tensor())
          return Invalid(absl::StrCat("'", vi.name, "' is ", vi.type.ToString(),
                                      ": a model with sequence or optional values runs with om_session_run_values"));
    if (input_count > 0 && (input_names == nullptr || inputs == nullptr)) return Invalid("inputs are NULL");
    if (output_count > 0 && (output_names == nullptr || outputs == nullptr)) return Invalid("outputs are NULL");
    std::vector<NamedTensor> feeds(input_count);
    // Symbolic dims bound by the inputs' shapes, to check bound outputs up front.
    std::map<std::string, int64_t> symbols;
    std::set<const void*> input_memory;
    for (size_t i = 0; i < input_count; ++i) {
      if (input_names[i] == nullptr) return Invalid(absl::StrCat("input name ", i, " is NULL"));
      if (inputs[i] == nullptr) return Invalid(absl::StrCat("input '", input_names[i], "' is NULL"));
      feeds[i] = {input_names[i], inputs[i]->tensor};
      if (inputs[i]->tensor.size() > 0) input_memory.insert(inputs[i]->tensor.raw());
      auto found = session->input_index.find(input_names[i]);
      if (found == session->input_index.end()) continue;  // ValidateInputs names it
      const om_session::Info& info = session->inputs[found->second];
      if (info.dims.size() == inputs[i]->tensor.shape().size())
        for (size_t d = 0; d < info.dims.size(); ++d)
          if (!info.dim_names[d].empty()) symbols.emplace(info.dim_names[d], inputs[i]->tensor.shape()[d]);
    }
    if (absl::Status s = session->session->ValidateInputs(feeds); !s.ok()) return FromAbsl(s);
    // Which graph output each requested name is, and the caller's buffers.
    const std::vector<om_session::Info>& infos = session->outputs;
    std::vector<int> requested(output_count, -1);
    std::vector<Tensor> results(infos.size());
    std::vector<bool> asked(infos.size(), false);
    for (size_t k = 0; k < output_count; ++k) {
      if (om_status* st = FindOutput(*session, output_names[k], k, asked, &requested[k])) return st;
      if (outputs[k] == nullptr) continue;
      const om_session::Info& info = infos[size_t(requested[k])];
      const Tensor& buffer = outputs[k]->tensor;
      bool fits = info.elem_type == 0 || int32_t(buffer.dtype()) == info.elem_type;
      // A declared scalar may be [1] (computed from a scalar input given as
      // [1]); the run checks the buffer against the result before writing.
      if (info.ranked && !(info.dims.empty() && buffer.shape() == Shape{1})) {
        fits = fits && info.dims.size() == buffer.shape().size();
        // A symbolic dim the inputs bind is checked up front too, so that a
        // mis-sized buffer fails before any output is written; except for a
        // buffer that is also an input's memory (a KV cache bound in place):
        // onnxruntime-genai's models declare present.N.key [.., total_sequence_length, ..],
        // the mask's width, while a shared-buffer step's present is the whole
        // past buffer. The run checks that one against the real result.
        const bool in_place = buffer.size() > 0 && input_memory.count(buffer.raw()) > 0;
        for (size_t d = 0; fits && d < info.dims.size(); ++d) {
          int64_t want = info.dims[d];
          if (want < 0 && !info.dim_names[d].empty() && !in_place) {
            auto it = symbols.find(info.dim_names[d]);
            if (it != symbols.end()) want = it->second;
          }
          fits = want < 0 || want == buffer.shape()[d];
        }
      }
      if (!fits) {
        std::vector<Dim> dims;
        for (size_t d = 0; d < info.dims.size(); ++d) dims.push_back({info.dims[d], info.dim_names[d]});
        return Invalid(absl::StrCat("output '", info.name, "': the caller's buffer is ", LowerName(buffer.dtype()),
                                    ShapeToString(buffer.shape()), " but the output is ",
                                    LowerName(DType(info.elem_type)), info.ranked ? DimsToString(dims) : "",
                                    symbols.empty() ? "" : " with the inputs given"));
      }
      results[size_t(requested[k])] = buffer;
    }
    if (absl::Status s = session->session->Run(feeds, &results, ToRunOptions(run_options)); !s.ok())
      return FromAbsl(s);
    // Hand out the runtime-allocated results; allocate every wrapper first so
    // that a failure leaves the NULL slots NULL.
    std::vector<std::unique_ptr<om_tensor>> fresh(output_count);
    for (size_t k = 0; k < output_count; ++k)
      if (outputs[k] == nullptr) fresh[k] = std::make_unique<om_tensor>(om_tensor{results[size_t(requested[k])]});
    for (size_t k = 0; k < output_count; ++k)
      if (fresh[k]) outputs[k] = fresh[k].release();
    return nullptr;
  });
}

// ---- Profiling ----

om_status* om_session_end_profiling(om_session* session, const char** path) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(session);
    OM_REQUIRE(path);
    if (session->profile_prefix.empty())
      return Invalid("profiling is off: the session was made without om_session_options_enable_profiling");
    std::lock_guard<std::mutex> lock(session->profile_mutex);
    // onnxruntime's name: the prefix and when the recording began (local
    // time, to the millisecond); a later name of this session never repeats one.
    const auto start = session->profile_start;
    const std::time_t seconds = std::chrono::system_clock::to_time_t(start);
    std::tm local{};
    localtime_r(&seconds, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &local);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(start.time_since_epoch()).count() % 1000;
    const std::string base = absl::StrCat(session->profile_prefix, "_", stamp, "_", ms < 100 ? "0" : "",
                                          ms < 10 ? "0" : "", ms);
    std::string name = base + ".json";
    for (int k = 2; session->profile_paths.count(name); ++k) name = absl::StrCat(base, "_", k, ".json");
    const auto now = std::chrono::system_clock::now();
    if (om_status* st = FromAbsl(session->session->WriteTrace(name))) return st;
    // A set's strings do not move: each path stays valid as long as the
    // session (a caller in another thread may still be reading the last one).
    *path = session->profile_paths.insert(name).first->c_str();
    session->profile_start = now;
    return nullptr;
  });
}

// ---- Sequences and optionals ----

namespace {
om_status* Kind(const std::vector<om_session::Info>& infos, size_t index, const char* what, int32_t* kind) {
  if (index >= infos.size())
    return Invalid(absl::StrCat(what, " index ", index, " is out of range (the model has ", infos.size(), ")"));
  *kind = infos[index].kind;
  return nullptr;
}

om_status* NewValue(Value v, om_value** out) {
  *out = new om_value{std::move(v)};
  return nullptr;
}
}  // namespace

om_status* om_session_input_kind(const om_session* session, size_t index, int32_t* kind) {
  OM_REQUIRE(session);
  OM_REQUIRE(kind);
  return Guard([&] { return Kind(session->inputs, index, "input", kind); });
}

om_status* om_session_output_kind(const om_session* session, size_t index, int32_t* kind) {
  OM_REQUIRE(session);
  OM_REQUIRE(kind);
  return Guard([&] { return Kind(session->outputs, index, "output", kind); });
}

om_status* om_value_create_tensor(const om_tensor* tensor, om_value** out) {
  OM_REQUIRE(out);
  *out = nullptr;
  OM_REQUIRE(tensor);
  return Guard([&] { return NewValue(tensor->tensor, out); });
}

om_status* om_value_create_sequence(int32_t elem_type, const om_tensor* const* items, size_t count,
                                    om_value** out) {
  OM_REQUIRE(out);
  *out = nullptr;
  return Guard([&]() -> om_status* {
    if (count > 0 && items == nullptr) return Invalid("items is NULL");
    if (absl::Status s = CheckElemType(elem_type); !s.ok()) return FromAbsl(s);
    std::vector<Tensor> tensors;
    tensors.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (items[i] == nullptr) return Invalid(absl::StrCat("item ", i, " is NULL"));
      if (int32_t(items[i]->tensor.dtype()) != elem_type)
        return Invalid(absl::StrCat("item ", i, " is ", LowerName(items[i]->tensor.dtype()), ", the sequence is ",
                                    LowerName(DType(elem_type))));
      tensors.push_back(items[i]->tensor);
    }
    return NewValue(Value::Sequence(DType(elem_type), std::move(tensors)), out);
  });
}

om_status* om_value_create_none(om_value** out) {
  OM_REQUIRE(out);
  *out = nullptr;
  return Guard([&] { return NewValue(Value(), out); });
}

void om_value_free(om_value* value) { delete value; }

om_status* om_value_get_kind(const om_value* value, int32_t* kind) {
  OM_REQUIRE(value);
  OM_REQUIRE(kind);
  const Value& v = value->value;
  *kind = v.is_tensor() ? OM_VALUE_TENSOR : v.is_sequence() ? OM_VALUE_SEQUENCE : OM_VALUE_NONE;
  return nullptr;
}

om_status* om_value_elem_type(const om_value* value, int32_t* elem_type) {
  OM_REQUIRE(value);
  OM_REQUIRE(elem_type);
  const Value& v = value->value;
  *elem_type = v.is_tensor() ? int32_t(v.tensor().dtype()) : v.is_sequence() ? int32_t(v.sequence_dtype()) : 0;
  return nullptr;
}

om_status* om_value_tensor_count(const om_value* value, size_t* count) {
  OM_REQUIRE(value);
  OM_REQUIRE(count);
  const Value& v = value->value;
  *count = v.is_tensor() ? 1 : v.is_sequence() ? v.sequence().size() : 0;
  return nullptr;
}

om_status* om_value_get_tensor(const om_value* value, size_t index, om_tensor** tensor) {
  OM_REQUIRE(value);
  OM_REQUIRE(tensor);
  *tensor = nullptr;
  const Value& v = value->value;
  return Guard([&]() -> om_status* {
    const size_t count = v.is_tensor() ? 1 : v.is_sequence() ? v.sequence().size() : 0;
    if (index >= count)
      return Invalid(absl::StrCat("tensor index ", index, " is out of range (the value holds ", count, ")"));
    *tensor = new om_tensor{v.is_tensor() ? v.tensor() : v.sequence()[index]};
    return nullptr;
  });
}

om_status* om_session_run_values(const om_session* session, const char* const* input_names,
                                 const om_value* const* inputs, size_t input_count,
                                 const char* const* output_names, om_value** outputs, size_t output_count) {
  return om_session_run_values_with_options(session, nullptr, input_names, inputs, input_count, output_names,
                                            outputs, output_count);
}

om_status* om_session_run_values_with_options(const om_session* session, const om_run_options* run_options,
                                              const char* const* input_names, const om_value* const* inputs,
                                              size_t input_count, const char* const* output_names,
                                              om_value** outputs, size_t output_count) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(session);
    if (input_count > 0 && (input_names == nullptr || inputs == nullptr)) return Invalid("inputs are NULL");
    if (output_count > 0 && (output_names == nullptr || outputs == nullptr)) return Invalid("outputs are NULL");
    std::vector<NamedValue> feeds(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      if (input_names[i] == nullptr) return Invalid(absl::StrCat("input name ", i, " is NULL"));
      if (inputs[i] == nullptr) return Invalid(absl::StrCat("input '", input_names[i], "' is NULL"));
      feeds[i] = {input_names[i], inputs[i]->value};
    }
    std::vector<int> requested(output_count, -1);
    std::vector<bool> asked(session->outputs.size(), false);
    for (size_t k = 0; k < output_count; ++k) {
      if (om_status* st = FindOutput(*session, output_names[k], k, asked, &requested[k])) return st;
      if (outputs[k] != nullptr)
        return Invalid(absl::StrCat("output '", output_names[k], "': om_session_run_values makes its outputs; "
                                    "the slot must be NULL"));
    }
    std::vector<Value> results;
    // Only the outputs asked for are copied out of the run (a sequence's items always are).
    if (absl::Status s = session->session->RunValues(feeds, &results, ToRunOptions(run_options), &asked); !s.ok())
      return FromAbsl(s);
    // Every wrapper first, so that a failure leaves the slots NULL.
    std::vector<std::unique_ptr<om_value>> fresh(output_count);
    for (size_t k = 0; k < output_count; ++k)
      fresh[k] = std::make_unique<om_value>(om_value{results[size_t(requested[k])]});
    for (size_t k = 0; k < output_count; ++k) outputs[k] = fresh[k].release();
    return nullptr;
  });
}

// ---- Custom ops ----

om_status* om_register_custom_op(const om_custom_op* op) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(op);
    OM_REQUIRE(op->domain);
    OM_REQUIRE(op->op_type);
    OM_REQUIRE(op->infer);
    OM_REQUIRE(op->compute);
    if (op->op_type[0] == '\0') return Invalid("op_type is empty");
    if (op->since_version < 1 || (op->last_version != 0 && op->last_version < op->since_version))
      return Invalid(absl::StrCat("version range ", op->since_version, "..", op->last_version, " is empty"));
    if (op->input_count > 64 || op->output_count == 0 || op->output_count > 64)
      return Invalid(absl::StrCat("a custom op has 0 to 64 inputs and 1 to 64 outputs, not ", op->input_count,
                                  " and ", op->output_count));
    auto def = std::make_unique<CustomOps::Def>();
    def->op = *op;
    // The loader reads "ai.onnx" as "": the default domain has one name.
    def->domain = std::strcmp(op->domain, "ai.onnx") == 0 ? "" : op->domain;
    def->op_type = op->op_type;
    def->op.domain = def->domain.c_str();
    def->op.op_type = def->op_type.c_str();
    // Every position its own constraint: any element type but string.
    // Outputs of shapes known only in compute: the kernel makes them.
    OpDef row(def->domain, def->op_type, Versions{op->since_version, op->last_version}, "", "", {}, CustomOp::Create,
              kMakesOutputs);
    const TypeSet any = AllTypes::set() - TypeSet{DType::kString};
    for (size_t i = 0; i < op->input_count; ++i) {
      absl::StrAppend(&row.inputs, i ? " " : "", "I", i);
      row.types.push_back({absl::StrCat("I", i), any});
    }
    for (size_t i = 0; i < op->output_count; ++i) {
      absl::StrAppend(&row.outputs, i ? " " : "", "O", i);
      row.types.push_back({absl::StrCat("O", i), any});
    }
    CustomOps& c = Custom();
    std::unique_lock lock(c.mutex);
    // The definition is stored before its row is added, and taken back out
    // when the registry refuses the row (or throws): no row without its
    // definition, no definition a refused registration left behind.
    const std::pair<std::string, std::string> key{def->domain, def->op_type};
    auto& defs = c.defs[key];
    const auto forget = [&] {
      defs.pop_back();
      if (defs.empty()) c.defs.erase(key);
    };
    defs.push_back(std::move(def));
    absl::Status added;
    try {
      added = c.registry.Add(std::move(row));
    } catch (...) {
      forget();
      throw;
    }
    if (!added.ok()) {
      forget();
      return FromAbsl(added);
    }
    return nullptr;
  });
}

om_status* om_infer_node(const om_infer_context* context, const om_node** node) {
  OM_REQUIRE(context);
  OM_REQUIRE(node);
  *node = &context->node;
  return nullptr;
}

om_status* om_kernel_node(const om_kernel_context* context, const om_node** node) {
  OM_REQUIRE(context);
  OM_REQUIRE(node);
  *node = &context->node;
  return nullptr;
}

namespace {
om_status* FindAttr(const om_node* node, const char* name, AttrType type, const Attribute** out) {
  OM_REQUIRE(node);
  OM_REQUIRE(name);
  const Attribute* a = node->node->attr(name);
  if (a == nullptr)
    return MakeStatus(OM_NOT_FOUND, absl::StrCat(node->node->Describe(), " has no attribute '", name, "'"));
  if (a->type != type)
    return Invalid(absl::StrCat(node->node->Describe(), ": attribute '", name, "' has another type"));
  *out = a;
  return nullptr;
}
}  // namespace

om_status* om_node_attr_int(const om_node* node, const char* name, int64_t* value) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(value);
    const Attribute* a = nullptr;
    if (om_status* s = FindAttr(node, name, AttrType::kInt, &a)) return s;
    *value = a->i;
    return nullptr;
  });
}

om_status* om_node_attr_float(const om_node* node, const char* name, float* value) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(value);
    const Attribute* a = nullptr;
    if (om_status* s = FindAttr(node, name, AttrType::kFloat, &a)) return s;
    *value = a->f;
    return nullptr;
  });
}

om_status* om_node_attr_string(const om_node* node, const char* name, const char** value) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(value);
    const Attribute* a = nullptr;
    if (om_status* s = FindAttr(node, name, AttrType::kString, &a)) return s;
    *value = a->s.c_str();
    return nullptr;
  });
}

om_status* om_infer_input(const om_infer_context* context, size_t index, int32_t* elem_type, const int64_t** dims,
                          int64_t* rank) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(context);
    OM_REQUIRE(elem_type);
    OM_REQUIRE(dims);
    OM_REQUIRE(rank);
    const InferContext& ctx = *context->ctx;
    if (index >= ctx.num_inputs() || !ctx.has_input(index))
      return Invalid(absl::StrCat(ctx.node().Describe(), ": input ", index, " is absent"));
    const ValueType& t = ctx.input(index);
    *elem_type = int32_t(t.dtype);
    *rank = t.rank();
    *dims = t.dims ? context->input_dims[index].data() : nullptr;
    return nullptr;
  });
}

om_status* om_infer_set_output(om_infer_context* context, size_t index, int32_t elem_type, const int64_t* dims,
                               size_t rank) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(context);
    InferContext& ctx = *context->ctx;
    if (index >= ctx.num_outputs())
      return Invalid(absl::StrCat(ctx.node().Describe(), ": output ", index, " does not exist"));
    if (absl::Status s = CheckNumericElemType(elem_type, "custom op outputs"); !s.ok()) return FromAbsl(s);
    if (rank > size_t(kMaxRank) || (rank > 0 && dims == nullptr))
      return Invalid(absl::StrCat(ctx.node().Describe(), ": output ", index, " has a bad shape"));
    ValueType t;
    t.dtype = DType(elem_type);
    t.dims.emplace();
    for (size_t d = 0; d < rank; ++d) t.dims->push_back(dims[d] >= 0 ? Dim::Known(dims[d]) : Dim{});
    ctx.set_output(index, std::move(t));
    return nullptr;
  });
}

om_status* om_kernel_input(const om_kernel_context* context, size_t index, const om_tensor** tensor) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(context);
    OM_REQUIRE(tensor);
    if (index >= context->inputs.size() || !context->inputs[index].tensor.defined())
      return Invalid(absl::StrCat(context->node.node->Describe(), ": input ", index, " is absent"));
    *tensor = &context->inputs[index];
    return nullptr;
  });
}

om_status* om_kernel_output(om_kernel_context* context, size_t index, om_tensor** tensor) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(context);
    OM_REQUIRE(tensor);
    if (index >= context->outputs.size())
      return Invalid(absl::StrCat(context->node.node->Describe(), ": output ", index, " does not exist"));
    if (!context->outputs[index].tensor.defined())
      return Invalid(absl::StrCat(context->node.node->Describe(), ": output ", index, " has no buffer yet: its shape ",
                                  context->types[index].ToString(),
                                  " is known only now (allocate it with om_kernel_allocate_output)"));
    *tensor = &context->outputs[index];
    return nullptr;
  });
}

om_status* om_kernel_allocate_output(om_kernel_context* context, size_t index, const int64_t* dims, size_t rank,
                                     om_tensor** tensor) {
  return Guard([&]() -> om_status* {
    OM_REQUIRE(context);
    OM_REQUIRE(tensor);
    const Node& node = *context->node.node;
    if (index >= context->outputs.size())
      return Invalid(absl::StrCat(node.Describe(), ": output ", index, " does not exist"));
    absl::StatusOr<Shape> shape = ShapeFrom(dims, rank);
    if (!shape.ok())
      return Invalid(absl::StrCat(node.Describe(), ": output ", index, ": ", shape.status().message()));
    const ValueType& type = context->types[index];
    // The shape must be one the infer callback allowed (its known dims).
    bool fits = !type.dims || type.dims->size() == rank;
    for (size_t d = 0; fits && type.dims && d < rank; ++d)
      fits = !(*type.dims)[d].known() || (*type.dims)[d].value == (*shape)[d];
    if (!fits)
      return Invalid(absl::StrCat(node.Describe(), ": output ", index, " of shape ", ShapeToString(*shape),
                                  " does not fit ", type.ToString(), ", the shape its infer callback set"));
    om_tensor& out = context->outputs[index];
    if (out.tensor.defined()) {
      if (out.tensor.shape() != *shape)
        return Invalid(absl::StrCat(node.Describe(), ": output ", index, " is already allocated with shape ",
                                    ShapeToString(out.tensor.shape())));
      *tensor = &out;
      return nullptr;
    }
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(type.dtype, *shape, context->ctx->budget());
    if (!t.ok())
      return FromAbsl(absl::Status(t.status().code(), absl::StrCat(node.Describe(), ": output ", index, ": ",
                                                                   t.status().message())));
    out.tensor = *std::move(t);
    *tensor = &out;
    return nullptr;
  });
}

}  // extern "C"
