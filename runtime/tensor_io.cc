#include "runtime/tensor_io.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx.pb.h"
#include "runtime/checked.h"
#include "runtime/loader.h"
#include "runtime/status_macros.h"

namespace onnx_mini {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// NumPy descr strings of the element types .npy can carry.
struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"f4", DType::kFloat},   {"f8", DType::kDouble},   {"f2", DType::kFloat16},
    {"i1", DType::kInt8},    {"u1", DType::kUInt8},    {"i2", DType::kInt16},
    {"u2", DType::kUInt16},  {"i4", DType::kInt32},    {"u4", DType::kUInt32},
    {"i8", DType::kInt64},   {"u8", DType::kUInt64},   {"b1", DType::kBool},
    {"c8", DType::kComplex64}, {"c16", DType::kComplex128},
};

// The text of a quoted value after `key` in the header dict.
std::string HeaderField(const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  at = header.find(':', at);
  if (at == std::string::npos) return "";
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  if (at >= header.size()) return "";
  if (header[at] == '\'') {
    size_t end = header.find('\'', at + 1);
    return end == std::string::npos ? "" : header.substr(at + 1, end - at - 1);
  }
  if (header[at] == '(') {
    size_t end = header.find(')', at);
    return end == std::string::npos ? "" : header.substr(at + 1, end - at - 1);
  }
  size_t end = header.find_first_of(",}", at);
  return header.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

absl::StatusOr<NamedTensorFile> ParseTensorProto(const std::string& bytes) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return absl::InvalidArgumentError("not a serialized TensorProto");
  ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto, ""));
  return NamedTensorFile{proto.name(), std::move(t)};
}

absl::StatusOr<Tensor> ParseNpy(const std::string& bytes) {
  auto bad = [](const std::string& why) { return absl::InvalidArgumentError("bad .npy file: " + why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return bad("no magic");
  const int major = uint8_t(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(bytes[8 + size_t(i)])) << (8 * i);
    offset = 12;
  }
  if (offset + header_len > bytes.size()) return bad("truncated header");
  const std::string header = bytes.substr(offset, header_len);
  const std::string descr = HeaderField(header, "descr");
  if (HeaderField(header, "fortran_order").find("True") != std::string::npos)
    return bad("fortran_order arrays are not supported");
  if (descr.size() < 2) return bad("no descr");
  if (descr[0] == '>') return bad("big-endian data is not supported");
  const std::string code = descr.substr(1);
  DType dtype = DType::kUndefined;
  for (const NpyType& t : kNpyTypes)
    if (code == t.descr) dtype = t.dtype;
  if (dtype == DType::kUndefined) return bad(absl::StrCat("unsupported descr '", descr, "'"));
  if (header.find("'shape'") == std::string::npos) return bad("no shape");
  Shape shape;
  std::stringstream dims(HeaderField(header, "shape"));
  std::string item;
  while (std::getline(dims, item, ',')) {
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    if (first == std::string::npos) continue;
    // Plain decimal digits only: "-1", "2x" or a value past int64 is an error, not a guess.
    const std::optional<int64_t> d = ParseNonNegative(std::string_view(item).substr(first, last - first + 1));
    if (!d) return bad(absl::StrCat("bad dim '", item, "'"));
    shape.push_back(*d);
  }
  const int64_t count = ElementCount(shape);
  if (count < 0) return bad("invalid shape");
  const size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset != StorageBytes(dtype, count))
    return bad(absl::StrCat("data holds ", bytes.size() - data_offset, " bytes, shape ",
                            ShapeToString(shape), " needs ", StorageBytes(dtype, count)));
  ASSIGN_OR_RETURN(Tensor t, Tensor::MakeUninitialized(dtype, shape));
  if (t.bytes()) std::memcpy(t.raw(), bytes.data() + data_offset, t.bytes());
  if (dtype == DType::kBool)  // a bool byte other than 0 or 1 is undefined to read: normalise
    for (int64_t i = 0; i < t.size(); ++i) t.data<uint8_t>()[i] = t.data<uint8_t>()[i] != 0;
  return t;
}

absl::StatusOr<NamedTensorFile> ReadTensorFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  if (bytes.compare(0, 6, "\x93NUMPY") == 0) {
    absl::StatusOr<Tensor> t = ParseNpy(bytes);
    if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
    return NamedTensorFile{"", *std::move(t)};
  }
  absl::StatusOr<NamedTensorFile> t = ParseTensorProto(bytes);
  if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  return t;
}

namespace {

absl::StatusOr<Value> SequenceFromProto(const onnx::SequenceProto& p, DType dtype) {
  // Element-type code 1 is "tensor"; an empty sequence may leave it out.
  if (p.elem_type() != 1 && !(p.elem_type() == 0 && p.tensor_values_size() == 0))
    return absl::UnimplementedError(
        absl::StrCat("not implemented: sequences of element kind ", p.elem_type(), " (only tensors)"));
  std::vector<Tensor> items;
  for (const auto& tp : p.tensor_values()) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, ""));
    if (dtype == DType::kUndefined) dtype = t.dtype();
    if (t.dtype() != dtype)
      return absl::InvalidArgumentError(absl::StrCat("sequence '", p.name(), "' mixes ", LowerName(dtype),
                                                     " and ", LowerName(t.dtype()), " items"));
    items.push_back(std::move(t));
  }
  return Value::Sequence(dtype, std::move(items));
}

}  // namespace

absl::StatusOr<Value> ParseValueProto(const std::string& bytes, const ValueType& type) {
  switch (type.kind) {
    case ValueType::Kind::kTensor: {
      ASSIGN_OR_RETURN(NamedTensorFile t, ParseTensorProto(bytes));
      return Value(std::move(t.tensor));
    }
    case ValueType::Kind::kSequence: {
      onnx::SequenceProto p;
      if (!p.ParseFromString(bytes)) return absl::InvalidArgumentError("not a serialized SequenceProto");
      return SequenceFromProto(p, type.dtype);
    }
    case ValueType::Kind::kOptional: {
      onnx::OptionalProto p;
      if (!p.ParseFromString(bytes)) return absl::InvalidArgumentError("not a serialized OptionalProto");
      if (p.has_tensor_value()) {
        ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p.tensor_value(), ""));
        return Value(std::move(t));
      }
      if (p.has_sequence_value()) return SequenceFromProto(p.sequence_value(), type.dtype);
      if (p.elem_type() == 0 || p.elem_type() == 1 || p.elem_type() == 3) return Value();  // none
      return absl::UnimplementedError(
          absl::StrCat("not implemented: optionals of element kind ", p.elem_type()));
    }
    default:
      return absl::UnimplementedError(absl::StrCat("not implemented: values of type ", type.ToString()));
  }
}

absl::StatusOr<Value> ReadValueFile(const std::string& path, const ValueType& type) {
  if (type.kind == ValueType::Kind::kTensor) {
    ASSIGN_OR_RETURN(NamedTensorFile t, ReadTensorFile(path));
    return Value(std::move(t.tensor));
  }
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  absl::StatusOr<Value> v = ParseValueProto(bytes, type);
  if (!v.ok()) return absl::Status(v.status().code(), absl::StrCat(path, ": ", v.status().message()));
  return v;
}

std::string SerializeTensorProto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  TensorToProto(tensor, name, &proto);
  return proto.SerializeAsString();
}

bool FitsTensorProto(const Tensor& tensor) {
  // The data plus a generous allowance for the name, dims and field tags.
  constexpr size_t kLimit = (size_t(1) << 31) - (size_t(1) << 20);
  if (tensor.dtype() != DType::kString) return tensor.bytes() + tensor.shape().size() * 11 < kLimit;
  size_t total = 0;
  for (int64_t i = 0; i < tensor.size(); ++i) total += tensor.data<std::string>()[i].size() + 6;
  return total < kLimit;
}

absl::Status WriteTensorFile(const std::string& path, const Tensor& tensor, const std::string& name) {
  const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  std::string header;
  if (npy) {
    const char* descr = nullptr;
    for (const NpyType& t : kNpyTypes)
      if (t.dtype == tensor.dtype()) descr = t.descr;
    if (descr == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("'", path, "': .npy has no type for ", LowerName(tensor.dtype())));
    const int width = Info(tensor.dtype()).bits / 8;
    std::string shape = absl::StrJoin(tensor.shape(), ", ");
    if (tensor.rank() == 1) shape += ",";  // a 1-tuple: "(4,)"
    std::string dict = absl::StrCat("{'descr': '", width == 1 ? "|" : "<", descr, "', 'fortran_order': False, 'shape': (",
                                    shape, "), }");
    // Version 2.0 (4-byte header length); data aligned to 64 bytes.
    const size_t unpadded = 12 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict.push_back('\n');
    const uint32_t len = uint32_t(dict.size());
    header = std::string("\x93NUMPY\x02\x00", 8);
    for (int i = 0; i < 4; ++i) header.push_back(char((len >> (8 * i)) & 0xff));
    header += dict;
  } else if (!FitsTensorProto(tensor)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "': a ", LowerName(tensor.dtype()),
                                                   ShapeToString(tensor.shape()), " tensor does not fit a TensorProto (2 GiB)"));
  } else {
    header = SerializeTensorProto(tensor, name);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  out.write(header.data(), std::streamsize(header.size()));
  if (npy && tensor.bytes()) out.write(static_cast<const char*>(tensor.raw()), std::streamsize(tensor.bytes()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", tmp, "'"));
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) {
      std::remove(tmp.c_str());
      return absl::DataLossError(absl::StrCat("cannot write '", tmp, "'"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace onnx_mini
