// What onnx-decode's two loops share (tools/onnx_decode.cc, the bundled
// decoder; tools/onnx_decode_genai.cc, onnxruntime-genai folders): errors,
// owning handles of the C API's objects, tensors, running a session, the
// options, results and their report, the progress line and the greedy choice.
// The C API only, as onnx-decode is written.
#pragma once

#include "onnx_mini.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#ifndef ONNX_MINI_DECODER_DIR
#define ONNX_MINI_DECODER_DIR "testdata/decoder"
#endif

namespace onnx_decode {

// ---- Errors ------------------------------------------------------------------

// Thrown on any failure; main prints it. Everything held is freed by the
// destructors on the way out.
struct Failure {
  std::string message;
  int exit_code = 1;
};

// Throws the status's message (a no-op for null).
void Check(om_status* status);

[[noreturn]] inline void Fail(const std::string& message, int exit_code = 1) { throw Failure{message, exit_code}; }

// ---- Owning handles and tensors ----------------------------------------------

struct TensorFree {
  void operator()(om_tensor* t) const { om_tensor_free(t); }
};
struct SessionFree {
  void operator()(om_session* s) const { om_session_free(s); }
};
struct OptionsFree {
  void operator()(om_session_options* o) const { om_session_options_free(o); }
};
using Tensor = std::unique_ptr<om_tensor, TensorFree>;
using Session = std::unique_ptr<om_session, SessionFree>;
using SessionOptions = std::unique_ptr<om_session_options, OptionsFree>;

// Caller-owned float memory, 64-byte aligned and zero-filled: the static and
// sliding caches.
class CacheBuffer {
 public:
  explicit CacheBuffer(size_t count) : count_(count) {
    const size_t bytes = std::max<size_t>(64, (count * sizeof(float) + 63) / 64 * 64);
    data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (data_ == nullptr) Fail("cannot allocate " + std::to_string(bytes) + " bytes for a cache");
    std::memset(data_, 0, bytes);
  }
  ~CacheBuffer() { std::free(data_); }
  CacheBuffer(const CacheBuffer&) = delete;
  CacheBuffer& operator=(const CacheBuffer&) = delete;
  float* data() { return data_; }
  size_t count() const { return count_; }

 private:
  float* data_ = nullptr;
  size_t count_ = 0;
};

Tensor CreateTensor(int32_t elem_type, const std::vector<int64_t>& dims);
Tensor Int64Tensor(const std::vector<int64_t>& dims, const std::vector<int64_t>& values);
Tensor BoolTensor(const std::vector<int64_t>& dims, const std::vector<uint8_t>& values);
// A tensor over `count` floats of the caller's memory (no copy).
Tensor WrapFloats(float* data, size_t count, const std::vector<int64_t>& dims);
// Overwrites the values of an int64 tensor (same element count).
void SetInt64(om_tensor* t, const std::vector<int64_t>& values);

// ---- Running a session ---------------------------------------------------------

struct Feed {
  const char* name;
  const om_tensor* tensor;
};
struct Fetch {
  const char* name;
  om_tensor* bound;  // nullptr: the runtime allocates the result
};

// Runs `session`; returns one entry per fetch: the new tensor for the
// runtime-allocated ones, null for the bound ones.
std::vector<Tensor> Run(const om_session* session, const std::vector<Feed>& feeds, const std::vector<Fetch>& fetches);

// The session of the model file at `path`; the error names the file.
Session OpenSession(const std::string& path, const om_session_options* options);

// Session options with `threads` intra-op threads (0: all cores).
SessionOptions MakeSessionOptions(int threads);

// ---- Options and results -------------------------------------------------------

// The bundled decoder's KV-cache kinds.
enum class Kind { kDynamic, kStatic, kSliding };

struct Options {
  std::string model_dir = ONNX_MINI_DECODER_DIR;
  std::vector<Kind> kinds = {Kind::kDynamic, Kind::kStatic, Kind::kSliding};
  std::vector<std::string> prompts = {"Hello", "The quick brown fox", "onnx-mini decodes"};
  int64_t tokens = 16;
  int64_t cache_len = 256;
  int threads = 0;
  bool quiet = false, step_times = false;
  // onnxruntime-genai folders:
  std::string cache;                             // --cache as given ("" when not)
  std::vector<std::vector<int64_t>> prompt_ids;  // --prompt-ids
  bool prompts_given = false;                    // --batch-prompts
  std::string expect_tokens;                     // --expect-tokens FILE
  int64_t max_length = 0;                        // --max-length (0: the config's search.max_length)
};

// The default prompts of a genai folder (those of testdata/genai_int4/expected_tokens.txt).
inline constexpr char kGenaiPrompts[] = "1 5 6 7 8 9|1 11 12|1 300 200 100 50 25 12 6 3";

// "1 2 3|4 5" -> {{1, 2, 3}, {4, 5}}; throws a usage Failure.
std::vector<std::vector<int64_t>> ParsePromptIds(const std::string& v);

struct Result {
  std::vector<std::vector<int64_t>> tokens;  // [row][token]
  int64_t prefill_tokens = 0;
  double prefill_ms = 0;
  std::vector<double> step_ms;  // one per decode step
};

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point start);

// Prints a result: each row's tokens (labelled), prefill and decode rates,
// and with `step_times` each step's time.
void Report(const char* name, const std::vector<std::string>& labels, bool step_times, const Result& r);

// ---- The loops' shared steps ---------------------------------------------------

// The progress line on stderr ("[label] what i/n"), on a terminal only and
// not with --quiet; cleared by End and on destruction.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet);
  ~ProgressLine() { End(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void Show(const char* label, const char* what, int64_t i, int64_t n);
  void End();

 private:
  bool on_ = false, shown_ = false;
};

// The data of a float [rows, seq, vocab] logits tensor; otherwise an error
// beginning with `what` ("the logits are").
const float* LogitsData(om_tensor* logits, int64_t rows, int64_t seq, int64_t vocab, const std::string& what);

// Greedy choice: the highest of `vocab` logits, ties to the lowest id; a NaN
// is an error naming the row and token.
int64_t Argmax(const float* logits, int64_t vocab, int64_t row, int64_t token);

// ---- onnxruntime-genai folders (tools/onnx_decode_genai.cc) ---------------------

// Whether `dir` holds genai_config.json.
bool IsGenaiFolder(const std::string& dir);

// Runs the folder's decoder with the options; returns the exit code.
int GenaiMain(Options options);

}  // namespace onnx_decode
