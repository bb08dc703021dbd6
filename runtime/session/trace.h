// The profiling trace (SessionOptions::trace): an event per node run, subgraph
// nodes included, written as a Chrome trace in onnxruntime's profile format.
// Private to runtime/session/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace onnx_mini {
namespace session_detail {

// One input or output of a node run, as the trace shows it.
struct TraceValue {
  enum Kind : uint8_t { kTensor, kSequence, kNone };
  Kind kind = kTensor;
  bool constant = false;  // an initializer (onnxruntime's parameter_size)
  DType dtype = DType::kUndefined;
  Shape shape;            // a sequence: {its length}
  size_t bytes = 0;
};

// What a step's events share, made once at creation.
struct TraceNode {
  std::string name;     // "<qualified node name>_kernel_time"
  std::string op_type;  // onnxruntime's op_name (no domain)
  int64_t node_index = 0;
};

struct TraceEvent {
  const TraceNode* node = nullptr;  // null: a session event
  const char* session_name = nullptr;
  int64_t start_ns = 0, end_ns = 0;  // since the tracer's start
  int64_t tid = 0;
  uint32_t num_inputs = 0;
  std::vector<TraceValue> values;  // inputs, then outputs
};

// Collects events from any thread (one lock per event: profiling is on only
// when asked for), up to `max_events`; beyond that they are counted as dropped.
class Tracer {
 public:
  explicit Tracer(size_t max_events) : start_(std::chrono::steady_clock::now()), max_events_(max_events) {}
  int64_t Now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  }
  static int64_t ThreadId();
  void Record(TraceEvent&& event);
  // A "Session" event (static name) from `start_ns` to now.
  void RecordSession(const char* name, int64_t start_ns);
  // Writes the events recorded so far to `path` as a JSON array, then forgets
  // them; on failure nothing is forgotten and nothing is left at `path`.
  absl::Status Write(const std::string& path);
  // The JSON of the events recorded so far (tests, tools).
  std::string Json() const;
  void Clear();
  size_t size() const;

 private:
  static std::string ToJson(const std::vector<TraceEvent>& events, int64_t dropped);
  const std::chrono::steady_clock::time_point start_;
  const size_t max_events_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  int64_t dropped_ = 0;
};

}  // namespace session_detail
}  // namespace onnx_mini
