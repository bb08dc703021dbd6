// libFuzzer target: the model loader on arbitrary bytes. Every input must end
// in a Graph or an error status: no crash, sanitizer report, hang or blow-up.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "runtime/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx_mini::QuietProtobuf();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<onnx_mini::Graph> g = onnx_mini::LoadModelFromBytes(bytes, "");
  // An error must say what is wrong.
  if (!g.ok() && g.status().message().empty()) __builtin_trap();
  return 0;
}
