// Reading and writing tensors as files: serialized TensorProto (.pb, as in the
// ONNX test data) and NumPy .npy.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "runtime/graph.h"
#include "runtime/tensor.h"
#include "runtime/value.h"

namespace onnx_mini {

struct NamedTensorFile {
  std::string name;  // the TensorProto name; empty for .npy
  Tensor tensor;
};

// Reads a .npy file (by its magic bytes) or else a serialized TensorProto.
absl::StatusOr<NamedTensorFile> ReadTensorFile(const std::string& path);
// Parses a serialized TensorProto.
absl::StatusOr<NamedTensorFile> ParseTensorProto(const std::string& bytes);
// Parses the bytes of a .npy file.
absl::StatusOr<Tensor> ParseNpy(const std::string& bytes);

// Reads a serialized TensorProto, SequenceProto (of tensors) or OptionalProto
// (of a tensor or a sequence), as `type` (a tensor, sequence or optional type) says.
absl::StatusOr<Value> ReadValueFile(const std::string& path, const ValueType& type);
absl::StatusOr<Value> ParseValueProto(const std::string& bytes, const ValueType& type);

// Serializes `tensor` as a TensorProto named `name`.
std::string SerializeTensorProto(const Tensor& tensor, const std::string& name);

// Whether `tensor` fits a serialized TensorProto (protobuf refuses messages
// of 2 GiB and more).
bool FitsTensorProto(const Tensor& tensor);

// Writes `tensor` to `path`: as .npy when the path ends in ".npy" (an error
// for element types .npy has no code for), else as a TensorProto named `name`
// (an error if it does not fit one). Every write is checked; a failure may
// leave a partial file at `path` (callers write to a temporary name).
absl::Status WriteTensorFile(const std::string& path, const Tensor& tensor, const std::string& name);

// Writes `bytes` to `path` atomically (a temporary file, then rename), so a
// failure never leaves a half-written file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace onnx_mini
