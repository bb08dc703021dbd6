// onnx-run: runs an ONNX model on given, stored or random inputs and reports
// its outputs and timing.
#include <algorithm>
#include <regex>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ops/ops.h"
#include "runtime/element.h"
#include "runtime/session.h"
#include "runtime/status_macros.h"
#include "runtime/tensor_io.h"
#include "runtime/thread_pool.h"
#include "tools/json.h"
#include "tools/omp_defaults.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

constexpr char kUsage[] =
    "usage: onnx-run [MODEL] [--input NAME=FILE]... [--input-dir DIR] [--random-inputs]\n"
    "                [--output-dir DIR] [--repeat N] [--warmup N] [--threads N] [--memory-limit BYTES]\n"
    "                [--timeout SECONDS] [--json] [--no-rewrites] [--profile] [--profile-json FILE]\n"
    "                [--bind]\n"
    "Runs MODEL (default: the bundled " ONNX_MINI_DEFAULT_MODEL ", with random inputs).\n"
    "Inputs are TensorProto .pb or NumPy .npy files; --input-dir reads input_K.pb for the\n"
    "K-th graph input; --random-inputs fills the rest from declared shapes (seed 42).\n"
    "--output-dir writes output_K.pb (output_K.npy if over 2 GiB), all or nothing.\n"
    "--repeat N times N runs and reports their median and minimum, after --warmup untimed\n"
    "runs (default 1 when N > 1, else 0).\n"
    "--memory-limit caps the session's tensors (K, M, G suffixes; default 3/4 of RAM).\n"
    "--timeout stops any run that takes longer than SECONDS (fractions allowed), with an error.\n"
    "--json prints one JSON object.\n"
    "--no-rewrites runs the graph as written (no fused-pattern rewrites).\n"
    "--profile prints the time per run spent in each op type, subgraph nodes under their own op\n"
    "types (an If's or Loop's own time as 'If (self)'), and the slowest nodes (timed runs; not\n"
    "with --json).\n"
    "--profile-json FILE writes the timed runs' per-node events (subgraph nodes included) as a\n"
    "Chrome trace in onnxruntime's profile format (Perfetto, chrome://tracing).\n"
    "--bind gives the timed runs caller buffers for the outputs, made after the warm-up: an\n"
    "output of a past/cache input's dtype and shape is bound to that input's memory (a KV\n"
    "cache updated in place, as onnxruntime-genai's shared buffer), the others preallocated.\n";

struct Options {
  std::string model = ONNX_MINI_DEFAULT_MODEL;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string input_dir, output_dir, profile_json;
  bool random_inputs = false, json = false, rewrites = true, profile = false, bind = false;
  bool random_default = true;  // the bundled model runs on random inputs unless given some
  int repeat = 1, threads = 0;
  int warmup = -1;  // -1: one untimed run when repeat > 1, none otherwise
  size_t memory_limit = 0;  // 0: the session's default
  int64_t timeout_ms = 0;   // 0: none
};

// A byte count with an optional K, M or G suffix (powers of 1024).
bool ParseBytes(const std::string& s, size_t& out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] < '0' || s[0] > '9' || errno != 0) return false;
  const std::string suffix(end);
  const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
  if (shift < 0 || v == 0 || v > (~0ull >> shift)) return false;
  out = size_t(v << shift);
  return true;
}

// Seconds, fractions allowed, as whole milliseconds rounded up (a positive
// timeout never becomes none); at most a year.
bool ParseSeconds(const std::string& s, int64_t& ms) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !(v > 0) || v > 366.0 * 86400) return false;
  ms = int64_t(std::ceil(v * 1000));
  return true;
}

bool ParseInt(const std::string& s, int& out) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v > 1000000) return false;
  out = int(v);
  return true;
}

absl::StatusOr<Options> ParseArgs(int argc, char** argv) {
  Options o;
  bool have_model = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> absl::StatusOr<std::string> {
      const std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      return std::string(argv[++i]);
    };
    auto is = [&](const char* flag) { return arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0; };
    if (is("--input")) {
      ASSIGN_OR_RETURN(std::string v, value("--input"));
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        return absl::InvalidArgumentError("--input takes NAME=FILE");
      o.inputs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (is("--input-dir")) {
      ASSIGN_OR_RETURN(std::string v, value("--input-dir"));
      o.input_dir = v;
    } else if (is("--output-dir")) {
      ASSIGN_OR_RETURN(std::string v, value("--output-dir"));
      o.output_dir = v;
    } else if (is("--repeat") || is("--threads") || is("--warmup")) {
      const char* flag = is("--repeat") ? "--repeat" : is("--threads") ? "--threads" : "--warmup";
      const bool repeat = flag == std::string("--repeat");
      ASSIGN_OR_RETURN(std::string v, value(flag));
      int n;
      if (!ParseInt(v, n) || (repeat && n < 1))
        return absl::InvalidArgumentError(absl::StrCat(flag, " takes a number, got '", v, "'"));
      (repeat ? o.repeat : flag == std::string("--threads") ? o.threads : o.warmup) = n;
    } else if (is("--memory-limit")) {
      ASSIGN_OR_RETURN(std::string v, value("--memory-limit"));
      if (!ParseBytes(v, o.memory_limit))
        return absl::InvalidArgumentError(absl::StrCat("--memory-limit takes a byte count (K, M, G suffixes), got '", v, "'"));
    } else if (is("--timeout")) {
      ASSIGN_OR_RETURN(std::string v, value("--timeout"));
      if (!ParseSeconds(v, o.timeout_ms))
        return absl::InvalidArgumentError(absl::StrCat("--timeout takes a positive number of seconds, got '", v, "'"));
    } else if (arg == "--random-inputs") {
      o.random_inputs = true;
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (is("--profile-json")) {
      ASSIGN_OR_RETURN(o.profile_json, value("--profile-json"));
    } else if (arg == "--bind") {
      o.bind = true;
    } else if (arg == "--no-rewrites") {
      o.rewrites = false;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg.rfind("--", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    } else if (!have_model) {
      o.model = arg;
      have_model = true;
      o.random_default = false;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
  }
  return o;
}

Tensor RandomTensor(const ValueType& type, std::mt19937& rng) {
  Shape shape;
  if (type.dims)
    for (const Dim& d : *type.dims) shape.push_back(d.known() ? d.value : 1);
  Tensor t = Tensor::Zeros(type.dtype, shape);
  const DTypeKind kind = Info(type.dtype).kind;
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (kind == DTypeKind::kString) t.data<std::string>()[i] = absl::StrCat("s", small(rng));
    else if (kind == DTypeKind::kBool) SetDouble(t, i, small(rng) % 2);
    else if (kind == DTypeKind::kFloat || kind == DTypeKind::kComplex) SetDouble(t, i, real(rng));
    else SetDouble(t, i, small(rng));
  }
  return t;
}


// The first few values of a tensor, as JSON-compatible text.
std::vector<std::string> FirstValues(const Tensor& t, int64_t limit) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < std::min(limit, t.size()); ++i) {
    if (t.dtype() == DType::kString) {
      out.push_back(absl::StrCat("\"", JsonEscape(t.data<std::string>()[i]), "\""));
      continue;
    }
    const double v = GetDouble(t, i);
    if (std::isnan(v)) out.push_back("\"nan\"");
    else if (std::isinf(v)) out.push_back(v > 0 ? "\"inf\"" : "\"-inf\"");
    else out.push_back(absl::StrFormat("%.6g", v));
  }
  return out;
}

// Writes output_K.pb (output_K.npy for a tensor too large for a TensorProto)
// all or nothing: every output goes to a temporary file first, and they are
// renamed into place only when all were written.
absl::Status WriteOutputs(const std::string& dir, const std::vector<Tensor>& outputs,
                          const std::vector<ValueInfo>& info) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::vector<std::string> finals, temps;
  const auto remove_all = [](const std::vector<std::string>& files) {
    for (const std::string& f : files) std::remove(f.c_str());
  };
  for (size_t k = 0; k < outputs.size(); ++k) {
    const bool npy = !FitsTensorProto(outputs[k]);
    finals.push_back((fs::path(dir) / absl::StrCat("output_", k, npy ? ".npy" : ".pb")).string());
    temps.push_back((fs::path(dir) / absl::StrCat(".output_", k, npy ? ".npy" : ".pb", ".tmp")).string());
    absl::Status s = WriteTensorFile(temps.back(), outputs[k], info[k].name);
    if (!s.ok()) {
      remove_all(temps);
      return absl::Status(s.code(), absl::StrCat("output '", info[k].name, "': ", s.message()));
    }
  }
  for (size_t k = 0; k < finals.size(); ++k) {
    if (std::rename(temps[k].c_str(), finals[k].c_str()) != 0) {
      const std::string why = std::strerror(errno);
      remove_all(std::vector<std::string>(finals.begin(), finals.begin() + long(k)));
      remove_all(temps);
      return absl::PermissionDeniedError(absl::StrCat("cannot write '", finals[k], "': ", why, "; no output was written"));
    }
  }
  return absl::OkStatus();
}

int Fail(const std::string& message) {
  std::cerr << "onnx-run: " << message << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  absl::StatusOr<Options> parsed = ParseArgs(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "onnx-run: " << parsed.status().message() << "\n" << kUsage;
    return 2;
  }
  const Options& o = *parsed;
  SessionOptions so;
  so.threads = o.threads;
  so.memory_limit = o.memory_limit;
  so.graph_rewrites = o.rewrites;
  so.profile = o.profile;
  so.trace = !o.profile_json.empty();
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Load(o.model, BuiltinOps(), so);
  if (!session.ok()) return Fail(std::string(session.status().message()));

  // Inputs: explicit files, then the input_K.pb layout, then random values.
  std::map<std::string, Tensor> given;
  for (const auto& [name, file] : o.inputs) {
    absl::StatusOr<NamedTensorFile> t = ReadTensorFile(file);
    if (!t.ok()) return Fail(std::string(t.status().message()));
    given[name] = t->tensor;
  }
  const std::vector<ValueInfo>& inputs = (*session)->inputs();
  if (!o.input_dir.empty()) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (given.count(inputs[k].name)) continue;
      const std::string file = (fs::path(o.input_dir) / absl::StrCat("input_", k, ".pb")).string();
      if (!fs::exists(file)) continue;
      absl::StatusOr<NamedTensorFile> t = ReadTensorFile(file);
      if (!t.ok()) return Fail(std::string(t.status().message()));
      given[inputs[k].name] = t->tensor;
    }
  }
  std::mt19937 rng(42);
  std::vector<NamedTensor> feeds;
  for (const ValueInfo& in : inputs) {
    auto it = given.find(in.name);
    if (it != given.end()) {
      feeds.push_back({in.name, it->second});
    } else if (o.random_inputs || o.random_default) {
      feeds.push_back({in.name, RandomTensor(in.type, rng)});
    } else {
      return Fail(absl::StrCat("no value for input '", in.name, "' (", in.type.ToString(),
                               "); pass --input, --input-dir or --random-inputs"));
    }
  }
  for (const auto& [name, t] : given) {
    bool known = false;
    for (const ValueInfo& in : inputs) known = known || in.name == name;
    if (!known) return Fail(absl::StrCat("'", name, "' is not an input of the model"));
  }

  // Untimed warm-up runs first: the first run pays for page faults, the
  // memory pool's first blocks and oneDNN's primitive creation.
  std::vector<Tensor> outputs;
  RunOptions run_options;
  run_options.timeout_ms = o.timeout_ms;
  const int warmup = std::max(o.warmup >= 0 ? o.warmup : o.repeat > 1 ? 1 : 0, o.bind ? 1 : 0);
  for (int r = 0; r < warmup; ++r) {
    outputs.clear();
    absl::Status s = (*session)->Run(feeds, &outputs, run_options);
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  // --bind: the warm-up's output shapes give the buffers (a KV-cache input
  // whose output matches it in place, each input at most once).
  std::vector<Tensor> bound;
  if (o.bind) {
    std::vector<bool> used(feeds.size(), false);
    const std::regex cache_name("past|cache|pk|pv");
    for (const Tensor& out : outputs) {
      Tensor buffer;
      for (size_t i = 0; i < feeds.size() && !buffer.defined(); ++i)
        if (!used[i] && std::regex_search(feeds[i].name, cache_name) && feeds[i].tensor.dtype() == out.dtype() &&
            feeds[i].tensor.shape() == out.shape()) {
          used[i] = true;
          buffer = feeds[i].tensor;
        }
      bound.push_back(buffer.defined() ? buffer : Tensor::Zeros(out.dtype(), out.shape()));
    }
  }
  (*session)->ResetProfile();
  const ParallelCounts counts_before = ParallelCountsSoFar();
  std::vector<double> times;
  for (int r = 0; r < o.repeat; ++r) {
    outputs = bound;
    auto start = std::chrono::steady_clock::now();
    absl::Status s = (*session)->Run(feeds, &outputs, run_options);
    auto end = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail(std::string(s.message()));
    times.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const double min = times.front();

  const std::vector<ValueInfo>& out_info = (*session)->outputs();
  if (!o.output_dir.empty()) {
    absl::Status s = WriteOutputs(o.output_dir, outputs, out_info);
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  if (!o.profile_json.empty()) {
    absl::Status s = (*session)->WriteTrace(o.profile_json);
    if (!s.ok()) return Fail(std::string(s.message()));
  }

  if (o.json) {
    std::vector<std::string> items;
    for (size_t k = 0; k < outputs.size(); ++k)
      items.push_back(absl::StrFormat(
          "{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [%s], \"values\": [%s]}",
          JsonEscape(out_info[k].name), LowerName(outputs[k].dtype()),
          absl::StrJoin(outputs[k].shape(), ", "), absl::StrJoin(FirstValues(outputs[k], 8), ", ")));
    std::cout << absl::StrFormat(
        "{\"model\": \"%s\", \"outputs\": [%s], \"repeat\": %d, \"warmup\": %d, "
        "\"threads\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f}\n",
        JsonEscape(o.model), absl::StrJoin(items, ", "), o.repeat, warmup, o.threads, median, min);
  } else {
    std::cout << "model: " << o.model << "\n";
    for (size_t k = 0; k < outputs.size(); ++k)
      std::cout << absl::StrFormat("output %s: %s %s [%s%s]\n", out_info[k].name,
                                   LowerName(outputs[k].dtype()), ShapeToString(outputs[k].shape()),
                                   absl::StrJoin(FirstValues(outputs[k], 8), ", "),
                                   outputs[k].size() > 8 ? ", ..." : "");
    std::cout << absl::StrFormat("time: median %.4f ms, min %.4f ms over %d run%s (after %d untimed)\n",
                                 median, min, o.repeat, o.repeat == 1 ? "" : "s", warmup);
    std::cout << (*session)->Profile();
    if (o.profile) {
      // Which loops woke another thread: with --threads 2 a small model should show none.
      const ParallelCounts after = ParallelCountsSoFar();
      std::cout << absl::StrFormat(
          "parallel loops per run: %.1f split (%.1f all on the caller: no worker came in time, or after a run "
          "of such loops the pool kept it there), "
          "%.1f oneDNN calls on an OpenMP team\n",
          double(after.pool_loops - counts_before.pool_loops) / o.repeat,
          double(after.unhelped_loops - counts_before.unhelped_loops) / o.repeat,
          double(after.omp_teams - counts_before.omp_teams) / o.repeat);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ReexecWithOmpWaitDefault(argv);
  return Main(argc, argv);
}
