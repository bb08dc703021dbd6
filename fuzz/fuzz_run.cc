// libFuzzer target: load a model, create a session and run it on inputs made
// from the declared types (unknown dims 1 to 3, values from a generator seeded
// by the model's bytes). Whatever the model, the result must be outputs or an
// error status: no crash, sanitizer report, hang or runaway allocation.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime/element.h"
#include "runtime/loader.h"
#include "runtime/registry.h"
#include "runtime/session.h"

namespace onnx_mini {
namespace {

// Inputs larger than this are not made (the run is skipped): the target looks
// for wrong handling of models, not for the cost of big inputs.
constexpr int64_t kMaxInputElements = 1 << 16;

bool MakeInput(const ValueType& type, std::mt19937_64& rng, Tensor& out) {
  Shape shape;
  if (type.dims)
    for (const Dim& d : *type.dims) shape.push_back(d.known() ? d.value : int64_t(rng() % 3 + 1));
  const int64_t count = ElementCount(shape);
  if (count < 0 || count > kMaxInputElements) return false;
  absl::StatusOr<Tensor> t = Tensor::Make(type.dtype, shape);
  if (!t.ok()) return false;
  const DTypeKind kind = Info(type.dtype).kind;
  for (int64_t i = 0; i < t->size(); ++i) {
    const uint64_t r = rng();
    if (kind == DTypeKind::kString) t->data<std::string>()[i] = std::string(r % 4, 'a');
    else if (kind == DTypeKind::kBool) SetDouble(*t, i, double(r % 2));
    else if (kind == DTypeKind::kFloat || kind == DTypeKind::kComplex) SetDouble(*t, i, double(int64_t(r % 2001) - 1000) / 64);
    else SetDouble(*t, i, double(int64_t(r % 9) - 2));  // small values, negatives included: indices, shapes, axes
  }
  out = *std::move(t);
  return true;
}

}  // namespace
}  // namespace onnx_mini

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_mini;
  QuietProtobuf();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Graph> graph = LoadModelFromBytes(bytes, "");
  if (!graph.ok()) return 0;
  SessionOptions options;
  options.threads = 1;
  // Far below the fuzzer's RSS limit, and small enough that legitimate work
  // on the largest allowed outputs stays well inside the timeout.
  options.memory_limit = size_t(64) << 20;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*std::move(graph), BuiltinOps(), options);
  if (!session.ok()) {
    if (session.status().message().empty()) __builtin_trap();
    return 0;
  }
  std::mt19937_64 rng(std::hash<std::string>()(bytes));
  std::vector<NamedTensor> feeds;
  for (const ValueInfo& in : (*session)->inputs()) {
    Tensor t;
    if (!MakeInput(in.type, rng, t)) return 0;
    feeds.push_back({in.name, t});
  }
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(feeds);
  if (out.ok()) {
    // A success is every output, each a real tensor of its declared type.
    if (out->size() != (*session)->outputs().size()) __builtin_trap();
    for (size_t k = 0; k < out->size(); ++k) {
      const Tensor& t = (*out)[k];
      if (!t.defined() || t.dtype() == DType::kUndefined || t.size() < 0) __builtin_trap();
    }
  } else if (out.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
