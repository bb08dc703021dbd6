#include "runtime/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "onnx.pb.h"
#include "runtime/alignment.h"
#include "runtime/checked.h"
#include "runtime/status_macros.h"

namespace onnx_mini {
namespace {

namespace fs = std::filesystem;

absl::Status Invalid(const std::string& what) { return absl::InvalidArgumentError(what); }

// Protobuf messages are limited to 2 GiB.
constexpr uint64_t kMaxModelBytes = (uint64_t(1) << 31) - 1;

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `location` below `base_dir` once and checks what was opened, so the
// file checked is the file read (no window to swap it for a symlink): every
// component is opened relative to its parent with O_NOFOLLOW, so neither a
// symlink nor ".." can lead outside the folder; O_NONBLOCK, so a FIFO cannot
// block the open; then fstat on the descriptor must show a regular file.
absl::StatusOr<Fd> OpenExternal(const std::string& location, const std::string& base_dir,
                                const std::string& tensor, int64_t& file_size) {
  const auto error = [&](const std::string& why) {
    return Invalid(absl::StrCat("tensor '", tensor, "': external data '", location, "' ", why));
  };
  if (base_dir.empty())
    return Invalid(absl::StrCat("tensor '", tensor, "' uses external data, but the model has no folder"));
  const fs::path rel(location);
  if (location.empty() || rel.is_absolute() || location.find('\0') != std::string::npos)
    return error("must be a relative path");
  std::vector<std::string> parts;
  for (const fs::path& part : rel) {
    if (part == "..") return error("escapes the model folder");
    if (part.empty() || part == "." || part == "/") continue;
    parts.push_back(part.string());
  }
  if (parts.empty()) return error("names no file");
  Fd dir(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return error(absl::StrCat("cannot be read: the model folder '", base_dir, "' cannot be opened"));
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd sub(::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.get() < 0)
      return error(errno == ELOOP || errno == ENOTDIR
                       ? absl::StrCat("is refused: '", parts[i], "' is a symbolic link or not a folder")
                       : absl::StrCat("cannot be opened: ", std::strerror(errno)));
    dir = std::move(sub);
  }
  Fd file(::openat(dir.get(), parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0)
    return error(errno == ELOOP ? std::string("is a symbolic link (refused: it could lead outside the model folder)")
                                : absl::StrCat("cannot be opened: ", std::strerror(errno)));
  struct stat st;
  if (::fstat(file.get(), &st) != 0) return error(absl::StrCat("cannot be examined: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return error("is not a regular file");
  file_size = int64_t(st.st_size);
  return file;
}

// Reads exactly `bytes` bytes at `offset` of `fd` into `out`.
bool ReadAt(int fd, int64_t offset, size_t bytes, char* out) {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, out, std::min<size_t>(bytes, size_t(1) << 30), off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    offset += got;
    bytes -= size_t(got);
  }
  return true;
}

// Bool bytes other than 0 and 1 are normalised, so bool reads are well defined.
void NormalizeBools(Tensor& t) {
  if (t.dtype() != DType::kBool) return;
  uint8_t* b = t.data<uint8_t>();
  for (int64_t i = 0; i < t.size(); ++i) b[i] = b[i] != 0;
}

// Copies `count` values of a typed field into `out` through `convert`.
template <class Out, class Field, class Convert>
void FillFrom(const Field& field, Out* out, Convert convert) {
  for (int i = 0; i < field.size(); ++i) out[i] = convert(field.Get(i));
}

// Checks that the typed field of `dtype` holds `n` values and, when `t` is
// given, copies them into it. Called first without `t`, so that a shape with
// no data behind it fails before anything is allocated.
absl::Status FillFromTypedFields(const onnx::TensorProto& p, DType dtype, const Shape& shape, int64_t n,
                                 Tensor* t) {
  auto count_error = [&](int64_t got) {
    return Invalid(absl::StrCat("tensor '", p.name(), "' of shape ", ShapeToString(shape),
                                " (", Name(dtype), ") holds ", got, " values, expected ", n));
  };
  const DTypeInfo& info = Info(dtype);
  switch (dtype) {
    case DType::kFloat:
      if (p.float_data_size() != n) return count_error(p.float_data_size());
      if (t) FillFrom(p.float_data(), t->data<float>(), [](float v) { return v; });
      return absl::OkStatus();
    case DType::kComplex64:
      if (p.float_data_size() != 2 * n) return count_error(p.float_data_size() / 2);
      if (t) FillFrom(p.float_data(), t->data<float>(), [](float v) { return v; });
      return absl::OkStatus();
    case DType::kDouble:
      if (p.double_data_size() != n) return count_error(p.double_data_size());
      if (t) FillFrom(p.double_data(), t->data<double>(), [](double v) { return v; });
      return absl::OkStatus();
    case DType::kComplex128:
      if (p.double_data_size() != 2 * n) return count_error(p.double_data_size() / 2);
      if (t) FillFrom(p.double_data(), t->data<double>(), [](double v) { return v; });
      return absl::OkStatus();
    case DType::kInt64:
      if (p.int64_data_size() != n) return count_error(p.int64_data_size());
      if (t) FillFrom(p.int64_data(), t->data<int64_t>(), [](int64_t v) { return v; });
      return absl::OkStatus();
    case DType::kUInt32:
      if (p.uint64_data_size() != n) return count_error(p.uint64_data_size());
      if (t) FillFrom(p.uint64_data(), t->data<uint32_t>(), [](uint64_t v) { return uint32_t(v); });
      return absl::OkStatus();
    case DType::kUInt64:
      if (p.uint64_data_size() != n) return count_error(p.uint64_data_size());
      if (t) FillFrom(p.uint64_data(), t->data<uint64_t>(), [](uint64_t v) { return v; });
      return absl::OkStatus();
    case DType::kString:
      if (p.string_data_size() != n) return count_error(p.string_data_size());
      if (t) FillFrom(p.string_data(), t->data<std::string>(), [](const std::string& v) { return v; });
      return absl::OkStatus();
    default:
      break;
  }
  // Everything else lives in int32_data: one element per entry, or for the
  // packed types one byte (two or four elements) per entry.
  const int64_t entries = info.packed() ? int64_t(StorageBytes(dtype, n)) : n;
  if (p.int32_data_size() != entries)
    return count_error(info.packed() ? int64_t(p.int32_data_size()) * info.elements_per_byte()
                                     : p.int32_data_size());
  if (!t) return absl::OkStatus();
  const size_t width = info.packed() ? 1 : size_t(info.bits / 8);
  uint8_t* out = t->data<uint8_t>();
  for (int64_t i = 0; i < entries; ++i) {
    const uint32_t v = uint32_t(p.int32_data(int(i)));
    if (dtype == DType::kBool) {
      out[i] = v != 0;
    } else {
      std::memcpy(out + i * width, &v, width);  // little-endian low bytes
    }
  }
  return absl::OkStatus();
}

ValueType ConvertType(const onnx::TypeProto& tp, int depth = 0) {
  ValueType t;
  switch (tp.value_case()) {
    case onnx::TypeProto::kTensorType: {
      t.kind = ValueType::Kind::kTensor;
      const auto& tt = tp.tensor_type();
      t.dtype = IsValidDType(tt.elem_type()) ? DType(tt.elem_type()) : DType::kUndefined;
      if (tt.has_shape()) {
        t.dims.emplace();
        for (const auto& d : tt.shape().dim()) {
          Dim dim;
          if (d.has_dim_value() && d.dim_value() >= 0) dim.value = d.dim_value();
          if (d.has_dim_param()) dim.symbol = d.dim_param();
          t.dims->push_back(dim);
        }
      }
      return t;
    }
    case onnx::TypeProto::kSequenceType: {
      // A sequence of tensors; an element type left out is unknown.
      ValueType e = tp.sequence_type().has_elem_type() && depth < 8
                        ? ConvertType(tp.sequence_type().elem_type(), depth + 1)
                        : ValueType{};
      if (!tp.sequence_type().has_elem_type()) e.kind = ValueType::Kind::kTensor;
      if (e.kind != ValueType::Kind::kTensor) {
        t.kind = ValueType::Kind::kSequence;
        t.content = ValueType::Kind::kUnknown;  // a sequence of non-tensors
        return t;
      }
      return ValueType::SequenceOf(e);
    }
    case onnx::TypeProto::kMapType: t.kind = ValueType::Kind::kMap; return t;
    case onnx::TypeProto::kOptionalType: {
      ValueType e;
      e.kind = ValueType::Kind::kUnknown;
      if (tp.optional_type().has_elem_type() && depth < 8) e = ConvertType(tp.optional_type().elem_type(), depth + 1);
      if (!e.supported() || e.kind == ValueType::Kind::kOptional) {
        t.kind = ValueType::Kind::kOptional;
        t.content = ValueType::Kind::kUnknown;
        return t;
      }
      return ValueType::OptionalOf(e);
    }
    case onnx::TypeProto::kSparseTensorType: t.kind = ValueType::Kind::kSparseTensor; return t;
    default: t.kind = ValueType::Kind::kUnknown; return t;
  }
}

using FunctionKey = std::tuple<std::string, std::string, std::string>;  // domain, name, overload
using FunctionMap = std::map<FunctionKey, const onnx::FunctionProto*>;
using Opsets = std::map<std::string, int64_t>;

Opsets ConvertOpsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& ids) {
  Opsets opsets;
  for (const auto& id : ids) {
    const std::string domain = id.domain() == "ai.onnx" ? "" : id.domain();
    opsets[domain] = id.version();
  }
  return opsets;
}

// The most nodes model-local functions may expand to, all calls together.
constexpr int64_t kMaxInlinedNodes = int64_t(1) << 16;

// Inside a function body every name is renamed: formal inputs and outputs to
// the call's actual names (`rename`), every other name into a scope unique to
// the call. `caller` supplies the attribute references. Subgraphs of body
// nodes are renamed the same way, so that their reads of body values (outer
// scope) still find them; outside functions both are null and names stay.
struct Renaming {
  const std::map<std::string, std::string>* rename = nullptr;
  const std::map<std::string, Attribute>* caller = nullptr;
  std::string scope;
  std::string operator()(const std::string& name) const {
    if (name.empty() || caller == nullptr) return name;
    auto it = rename->find(name);
    return it == rename->end() ? scope + name : it->second;
  }
};

class GraphBuilder {
 public:
  GraphBuilder(const std::string& base_dir, const FunctionMap& functions)
      : base_dir_(base_dir), functions_(functions) {}
  // The graph whose initializers Build may empty once converted.
  void Consume(onnx::GraphProto* graph) { consumed_ = graph; }

  absl::StatusOr<Graph> Build(const onnx::GraphProto& gp, const Opsets& opsets, int depth,
                              const Renaming& names = {}) {
    if (depth > 64) return Invalid("subgraphs nested more than 64 deep");
    Graph g;
    g.name = gp.name();
    g.opsets = opsets;
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& init = gp.initializer(i);
      if (init.name().empty()) return Invalid("an initializer has no name");
      ASSIGN_OR_RETURN(Tensor t, &gp == consumed_ ? TakeTensorFromProto(*consumed_->mutable_initializer(i), base_dir_)
                                                  : TensorFromProto(init, base_dir_));
      g.initializers[names(init.name())] = std::move(t);
      // The model's own proto: its bytes go as soon as the tensor holds them
      // (a swap frees them; Clear would keep the capacity), so that the
      // proto and the tensors are not both whole in memory.
      if (&gp == consumed_) onnx::TensorProto().Swap(consumed_->mutable_initializer(i));
    }
    if (gp.sparse_initializer_size() > 0)
      return absl::UnimplementedError("not implemented: sparse initializers");
    for (const auto& vi : gp.input())
      if (!g.initializers.count(names(vi.name()))) g.inputs.push_back({names(vi.name()), ConvertType(vi.type())});
    for (const auto& vi : gp.output()) g.outputs.push_back({names(vi.name()), ConvertType(vi.type())});
    for (const auto& vi : gp.value_info()) g.value_types[names(vi.name())] = ConvertType(vi.type());
    for (const auto& np : gp.node()) {
      RETURN_IF_ERROR(AddNode(np, opsets, names, depth, g.nodes));
    }
    return g;
  }

 private:
  absl::StatusOr<Attribute> ConvertAttribute(const onnx::AttributeProto& ap, const Opsets& opsets,
                                             int depth, const Renaming& names) {
    Attribute a;
    a.name = ap.name();
    int type = ap.type();
    if (type == 0) {  // IR < 3 files may leave the type out: infer it from the field set
      if (ap.has_f()) type = 1;
      else if (ap.has_i()) type = 2;
      else if (ap.has_s()) type = 3;
      else if (ap.has_t()) type = 4;
      else if (ap.has_g()) type = 5;
      else if (ap.floats_size()) type = 6;
      else if (ap.ints_size()) type = 7;
      else if (ap.strings_size()) type = 8;
      else if (ap.tensors_size()) type = 9;
      else if (ap.graphs_size()) type = 10;
      else if (ap.has_tp()) type = 13;
    }
    a.type = AttrType(type);
    a.f = ap.f();
    a.i = ap.i();
    a.s = ap.s();
    a.floats.assign(ap.floats().begin(), ap.floats().end());
    a.ints.assign(ap.ints().begin(), ap.ints().end());
    a.strings.assign(ap.strings().begin(), ap.strings().end());
    if (ap.has_tp()) a.tp = ConvertType(ap.tp());
    if (ap.has_t()) {
      ASSIGN_OR_RETURN(Tensor t, TensorFromProto(ap.t(), base_dir_));
      a.t = std::move(t);
    }
    for (const auto& tp : ap.tensors()) {
      ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, base_dir_));
      a.tensors.push_back(std::move(t));
    }
    if (ap.has_g()) {
      ASSIGN_OR_RETURN(Graph sub, Build(ap.g(), opsets, depth + 1, names));
      a.g = std::make_shared<Graph>(std::move(sub));
    }
    for (const auto& gp : ap.graphs()) {
      ASSIGN_OR_RETURN(Graph sub, Build(gp, opsets, depth + 1, names));
      a.graphs.push_back(std::make_shared<Graph>(std::move(sub)));
    }
    return a;
  }

  // Converts one node, inlining it if it calls a model-local function.
  absl::Status AddNode(const onnx::NodeProto& np, const Opsets& opsets, const Renaming& names, int depth,
                       std::vector<Node>& out) {
    Node node;
    node.name = np.name();
    node.op_type = np.op_type();
    node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    const std::map<std::string, Attribute>* caller = names.caller;
    for (const auto& in : np.input()) node.inputs.push_back(names(in));
    for (const auto& o : np.output()) node.outputs.push_back(names(o));
    for (const auto& ap : np.attribute()) {
      if (!ap.ref_attr_name().empty()) {
        if (caller == nullptr)
          return Invalid(absl::StrCat(node.op_type, " node '", node.name, "': attribute '", ap.name(),
                                      "' refers to '", ap.ref_attr_name(), "' outside a function"));
        auto it = caller->find(ap.ref_attr_name());
        if (it == caller->end()) continue;  // not given and no default: the attribute is absent
        Attribute a = it->second;
        a.name = ap.name();
        node.attributes[a.name] = std::move(a);
        continue;
      }
      ASSIGN_OR_RETURN(Attribute a, ConvertAttribute(ap, opsets, depth, names));
      node.attributes[ap.name()] = std::move(a);
    }
    auto opset_it = opsets.find(node.domain);
    node.opset = opset_it == opsets.end() ? 0 : opset_it->second;

    auto fn = functions_.find({node.domain, node.op_type, np.overload()});
    if (fn == functions_.end()) {
      out.push_back(std::move(node));
      return absl::OkStatus();
    }
    if (depth > 32) return Invalid(absl::StrCat("function '", node.op_type, "' nests more than 32 deep"));
    // Depth alone does not bound the work: functions that each call the next
    // twice expand exponentially. Every body node inlined counts.
    inlined_ += fn->second->node_size();
    if (inlined_ > kMaxInlinedNodes)
      return Invalid(absl::StrCat("model-local functions expand to more than ", kMaxInlinedNodes,
                                  " nodes (while inlining '", node.op_type, "' called by node '", node.name, "')"));
    const onnx::FunctionProto& f = *fn->second;
    // Names inside the body: formal inputs and outputs map to the call's
    // actual names; every other name gets a scope unique to this call.
    std::map<std::string, std::string> body_rename;
    for (int i = 0; i < f.input_size(); ++i)
      body_rename[f.input(i)] = i < int(node.inputs.size()) ? node.inputs[size_t(i)] : "";
    for (int i = 0; i < f.output_size(); ++i)
      body_rename[f.output(i)] = i < int(node.outputs.size()) ? node.outputs[size_t(i)] : "";
    std::map<std::string, Attribute> call_attrs;
    for (const auto& def : f.attribute_proto()) {
      ASSIGN_OR_RETURN(Attribute a, ConvertAttribute(def, opsets, depth, {}));
      call_attrs[def.name()] = std::move(a);
    }
    for (auto& [key, a] : node.attributes) call_attrs[key] = a;
    Opsets body_opsets = opsets;
    for (const auto& [domain, version] : ConvertOpsets(f.opset_import())) body_opsets[domain] = version;
    Renaming body_names{&body_rename, &call_attrs, absl::StrCat("__", f.name(), "_", ++call_counter_, "__/")};
    for (const auto& body_node : f.node())
      RETURN_IF_ERROR(AddNode(body_node, body_opsets, body_names, depth + 1, out));
    return absl::OkStatus();
  }

  std::string base_dir_;
  onnx::GraphProto* consumed_ = nullptr;
  const FunctionMap& functions_;
  int64_t call_counter_ = 0;
  int64_t inlined_ = 0;  // body nodes inlined so far
};

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& p, const std::string& base_dir) {
  if (!IsValidDType(p.data_type()))
    return Invalid(absl::StrCat("tensor '", p.name(), "' has invalid element type ", p.data_type()));
  if (p.has_segment()) return absl::UnimplementedError("not implemented: segmented tensors");
  const DType dtype = DType(p.data_type());
  Shape shape(p.dims().begin(), p.dims().end());
  const int64_t count = ElementCount(shape);
  if (count < 0)
    return Invalid(absl::StrCat("tensor '", p.name(), "' has invalid dims ", ShapeToString(shape)));
  const size_t expected = StorageBytes(dtype, count);
  if (expected > kMaxTensorBytes)
    return Invalid(absl::StrCat("tensor '", p.name(), "' of shape ", ShapeToString(shape), " is too large"));

  // Decide where the bytes are and check their count before allocating, so a
  // lying shape cannot make us allocate more than the model holds.
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    if (dtype == DType::kString)
      return Invalid(absl::StrCat("tensor '", p.name(), "': string tensors cannot use external data"));
    std::string location;
    std::optional<int64_t> offset = 0, length;
    for (const auto& kv : p.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        const std::optional<int64_t> v = ParseNonNegative(kv.value());
        if (!v)
          return Invalid(absl::StrCat("tensor '", p.name(), "': external data ", kv.key(), " '", kv.value(),
                                      "' is not a non-negative integer"));
        (kv.key() == "offset" ? offset : length) = v;
      }
    }
    int64_t file_size = 0;
    ASSIGN_OR_RETURN(Fd fd, OpenExternal(location, base_dir, p.name(), file_size));
    if (*offset > file_size)
      return Invalid(absl::StrCat("tensor '", p.name(), "': external data offset ", *offset,
                                  " is past the end of '", location, "' (", file_size, " bytes)"));
    if (!length) length = file_size - *offset;
    if (*length > file_size - *offset)
      return Invalid(absl::StrCat("tensor '", p.name(), "': external data offset ", *offset, " + length ",
                                  *length, " is past the end of '", location, "' (", file_size, " bytes)"));
    if (uint64_t(*length) != expected)
      return Invalid(absl::StrCat("tensor '", p.name(), "' of shape ", ShapeToString(shape), " (", Name(dtype),
                                  ") needs ", expected, " bytes, has ", *length));
    ASSIGN_OR_RETURN(Tensor t, Tensor::MakeUninitialized(dtype, shape));
    if (!ReadAt(fd.get(), *offset, expected, static_cast<char*>(t.raw())))
      return Invalid(absl::StrCat("tensor '", p.name(), "': cannot read external data '", location, "'"));
    NormalizeBools(t);
    return t;
  }
  if (p.has_raw_data()) {
    if (dtype == DType::kString)
      return Invalid(absl::StrCat("tensor '", p.name(), "': string tensors cannot use raw_data"));
    if (p.raw_data().size() != expected)
      return Invalid(absl::StrCat("tensor '", p.name(), "' of shape ", ShapeToString(shape), " (", Name(dtype),
                                  ") needs ", expected, " bytes, has ", p.raw_data().size()));
    ASSIGN_OR_RETURN(Tensor t, Tensor::MakeUninitialized(dtype, shape));
    if (expected) std::memcpy(t.raw(), p.raw_data().data(), expected);
    NormalizeBools(t);
    return t;
  }
  RETURN_IF_ERROR(FillFromTypedFields(p, dtype, shape, count, nullptr));
  ASSIGN_OR_RETURN(Tensor t, Tensor::MakeUninitialized(dtype, shape));
  RETURN_IF_ERROR(FillFromTypedFields(p, dtype, shape, count, &t));
  return t;
}

absl::StatusOr<Tensor> TakeTensorFromProto(onnx::TensorProto& p, const std::string& base_dir) {
  if (!p.has_raw_data() || p.data_location() == onnx::TensorProto::EXTERNAL || p.has_segment() ||
      !IsValidDType(p.data_type()) || DType(p.data_type()) == DType::kString)
    return TensorFromProto(p, base_dir);
  const DType dtype = DType(p.data_type());
  Shape shape(p.dims().begin(), p.dims().end());
  const int64_t count = ElementCount(shape);
  if (count < 0 || StorageBytes(dtype, count) != p.raw_data().size() ||
      reinterpret_cast<uintptr_t>(p.raw_data().data()) % ElementAlignment(dtype) != 0)
    return TensorFromProto(p, base_dir);  // whose errors say what is wrong
  Tensor t = Tensor::Adopt(dtype, std::move(shape), std::unique_ptr<std::string>(p.release_raw_data()));
  NormalizeBools(t);
  return t;
}

void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(int32_t(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < t.size(); ++i) p->add_string_data(t.data<std::string>()[i]);
  } else {
    p->set_raw_data(t.raw(), t.bytes());
  }
}

namespace {

// Converts `model`, emptying its graph's initializers as it goes.
absl::StatusOr<Graph> Convert(onnx::ModelProto& model, const std::string& base_dir) {
  if (!model.has_graph()) return Invalid("not a valid ONNX model: it has no graph");
  if (model.ir_version() < 3 && model.opset_import_size() == 0)
    return Invalid(absl::StrCat("unsupported ONNX IR version ", model.ir_version(), " with no opset import"));
  FunctionMap functions;
  for (const auto& f : model.functions()) {
    const std::string domain = f.domain() == "ai.onnx" ? "" : f.domain();
    functions[{domain, f.name(), f.overload()}] = &f;
  }
  Opsets opsets = ConvertOpsets(model.opset_import());
  if (opsets.empty()) opsets[""] = 1;
  GraphBuilder builder(base_dir, functions);
  builder.Consume(model.mutable_graph());
  ASSIGN_OR_RETURN(Graph g, builder.Build(model.graph(), opsets, 0));
  g.ir_version = model.ir_version();
  auto metadata = std::make_shared<ModelMetadata>();
  metadata->producer_name = model.producer_name();
  metadata->producer_version = model.producer_version();
  metadata->domain = model.domain();
  metadata->doc_string = model.doc_string();
  metadata->model_version = model.model_version();
  metadata->graph_doc_string = model.graph().doc_string();
  for (const auto& p : model.metadata_props()) metadata->props.emplace_back(p.key(), p.value());
  for (const auto& id : model.opset_import())
    metadata->opset_imports.emplace_back(id.domain() == "ai.onnx" ? "" : id.domain(), id.version());
  g.metadata = std::move(metadata);
  return g;
}

}  // namespace

absl::StatusOr<Graph> LoadModelFromBytes(const std::string& bytes, const std::string& base_dir) {
  // Tensors are checked before they are allocated; protobuf's own parsing and
  // the graph's small vectors may still run out: a status, not an exception.
  try {
    onnx::ModelProto model;
    if (bytes.empty() || !model.ParseFromString(bytes))
      return Invalid("not a valid ONNX model: the protobuf does not parse");
    return Convert(model, base_dir);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory while loading the model");
  }
}

absl::StatusOr<Graph> LoadModel(const std::string& path) {
  // Opened once, non-blocking (a FIFO cannot hang the load) and checked to be
  // a regular file whose size is known before anything is allocated.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return absl::NotFoundError(absl::StrCat("cannot open model '", path, "': ", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Invalid(absl::StrCat("model '", path, "' is not a regular file"));
  if (uint64_t(st.st_size) > kMaxModelBytes)
    return Invalid(absl::StrCat("model '", path, "' has ", st.st_size, " bytes; a protobuf holds at most ",
                                kMaxModelBytes));
  // Parsed from the file through protobuf's small buffer: the file's bytes
  // are never whole in memory beside the parsed model.
  onnx::ModelProto model;
  try {
    google::protobuf::io::FileInputStream stream(fd.get());
    if (st.st_size == 0 || !model.ParseFromZeroCopyStream(&stream)) {
      if (stream.GetErrno() != 0)
        return Invalid(absl::StrCat("cannot read model '", path, "': ", std::strerror(stream.GetErrno())));
      return Invalid(absl::StrCat(path, ": not a valid ONNX model: the protobuf does not parse"));
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory for the ", st.st_size, " bytes of model '", path, "'"));
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  absl::StatusOr<Graph> g;
  try {
    g = Convert(model, dir.string());
  } catch (const std::bad_alloc&) {
    g = absl::ResourceExhaustedError("out of memory while loading the model");
  }
  if (!g.ok())
    return absl::Status(g.status().code(), absl::StrCat(path, ": ", g.status().message()));
  return g;
}

}  // namespace onnx_mini
