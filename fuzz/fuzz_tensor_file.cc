// libFuzzer target: the tensor file reader (.npy and serialized TensorProto,
// told apart by the magic bytes as ReadTensorFile does). A tensor that parses
// must survive a round trip through the writer unchanged.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz/fuzz_common.h"
#include "runtime/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_mini;
  QuietProtobuf();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Tensor t;
  if (bytes.compare(0, 6, "\x93NUMPY") == 0) {
    absl::StatusOr<Tensor> npy = ParseNpy(bytes);
    if (!npy.ok()) return 0;
    t = *npy;
  } else {
    absl::StatusOr<NamedTensorFile> pb = ParseTensorProto(bytes);
    if (!pb.ok()) return 0;
    t = pb->tensor;
  }
  if (!t.defined() || t.size() < 0) __builtin_trap();  // a success is a real tensor
  absl::StatusOr<NamedTensorFile> back = ParseTensorProto(SerializeTensorProto(t, "t"));
  if (!back.ok() || back->tensor.dtype() != t.dtype() || back->tensor.shape() != t.shape()) __builtin_trap();
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < t.size(); ++i)
      if (back->tensor.data<std::string>()[i] != t.data<std::string>()[i]) __builtin_trap();
  } else if (t.bytes() && std::memcmp(back->tensor.raw(), t.raw(), t.bytes()) != 0) {
    __builtin_trap();
  }
  return 0;
}
