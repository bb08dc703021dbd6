// Loading ONNX files: ModelProto to Graph, TensorProto to Tensor and back.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "runtime/graph.h"

namespace onnx {
class TensorProto;
}

namespace onnx_mini {

// Reads and converts a model file. External data is resolved relative to the
// model's folder. Model-local functions are inlined; subgraph attributes are
// parsed. Any malformed content is an InvalidArgument error naming what is wrong.
absl::StatusOr<Graph> LoadModel(const std::string& path);
// The same from serialized bytes; `base_dir` is where external data lives
// ("" forbids external data).
absl::StatusOr<Graph> LoadModelFromBytes(const std::string& bytes, const std::string& base_dir);

// Converts a TensorProto in any storage form: raw_data, the typed fields
// (packed 4- and 2-bit types included) or external data under `base_dir`.
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir);
// The same, taking raw_data's bytes out of `proto` as the tensor's storage, without a copy.
absl::StatusOr<Tensor> TakeTensorFromProto(onnx::TensorProto& proto, const std::string& base_dir);
// Serializes a tensor as raw_data (string_data for strings).
void TensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

}  // namespace onnx_mini
