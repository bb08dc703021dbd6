// onnx-conformance: runs ONNX backend test folders
// (DIR/test_*/model.onnx + test_data_set_N/{input,output}_K.pb) and reports
// PASS, FAIL, UNSUPPORTED or ERROR per case, with a per-op summary.
//
// Each case runs in a forked child process, so that nothing a case does (a
// hang or a crash) can take the runner down; the parent never runs a model.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/element.h"
#include "ops/ops.h"
#include "runtime/loader.h"
#include "runtime/session.h"
#include "runtime/tensor_io.h"
#include "tools/json.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

constexpr char kUsage[] =
    "usage: onnx-conformance DIR... [--filter REGEX] [--jobs N] [--json FILE] [--expect FILE]\n"
    "                        [--tolerances FILE] [--threads N] [--timeout SECONDS] [--quiet]\n"
    "                        [--no-rewrites] [--require-all]\n"
    "--no-rewrites runs each model as written (SessionOptions::graph_rewrites off).\n"
    "--require-all exits 1 unless every case passes (the project's own oracle cases).\n";

// Whether sessions rewrite fused patterns (--no-rewrites turns it off); set
// once, before any case runs.
bool g_rewrites = true;

struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
};

struct CaseResult {
  std::string name;
  std::string status;  // PASS, FAIL, UNSUPPORTED, ERROR
  std::string op;
  std::string message;
  double max_abs_err = 0;
  std::vector<std::string> node_ops;
};

// ---- Comparison, as the ONNX backend runner does it ----

struct Comparison {
  bool ok = true;
  double max_abs = 0;
  std::string detail;
};

Comparison Compare(const Tensor& expected, const Tensor& actual, const Tolerance& tol) {
  Comparison c;
  if (expected.dtype() != actual.dtype()) {
    c.ok = false;
    c.detail = absl::StrCat("dtype ", LowerName(actual.dtype()), ", expected ", LowerName(expected.dtype()));
    return c;
  }
  if (expected.shape() != actual.shape()) {
    c.ok = false;
    c.detail = absl::StrCat("shape ", ShapeToString(actual.shape()), ", expected ",
                            ShapeToString(expected.shape()));
    return c;
  }
  const DTypeKind kind = Info(expected.dtype()).kind;
  double worst_excess = 0;
  for (int64_t i = 0; i < expected.size(); ++i) {
    if (kind == DTypeKind::kString) {
      if (expected.data<std::string>()[i] != actual.data<std::string>()[i]) {
        c.ok = false;
        // Both strings, escaped and cut short, so that the message says what differs.
        const auto shown = [](const std::string& v) {
          return absl::StrCat("'", absl::Utf8SafeCHexEscape(v.substr(0, 60)), v.size() > 60 ? "'..." : "'");
        };
        c.detail = absl::StrCat("string mismatch at flat index ", i, ": ", shown(actual.data<std::string>()[i]),
                                ", expected ", shown(expected.data<std::string>()[i]));
        return c;
      }
      continue;
    }
    std::vector<std::pair<double, double>> pairs;
    if (expected.dtype() == DType::kComplex64) {
      auto e = expected.data<Complex64>()[i], a = actual.data<Complex64>()[i];
      pairs = {{e.real(), a.real()}, {e.imag(), a.imag()}};
    } else if (expected.dtype() == DType::kComplex128) {
      auto e = expected.data<Complex128>()[i], a = actual.data<Complex128>()[i];
      pairs = {{e.real(), a.real()}, {e.imag(), a.imag()}};
    } else {
      pairs = {{GetDouble(expected, i), GetDouble(actual, i)}};
    }
    for (auto [e, a] : pairs) {
      if (std::isnan(e) && std::isnan(a)) continue;
      const bool exact = kind != DTypeKind::kFloat && kind != DTypeKind::kComplex;
      double diff = std::fabs(e - a);
      if (std::isinf(e) || std::isinf(a)) diff = e == a ? 0 : HUGE_VAL;
      if (std::isnan(e) != std::isnan(a)) diff = HUGE_VAL;
      const double allowed = exact ? 0 : tol.atol + tol.rtol * std::fabs(e);
      if (diff > c.max_abs || std::isnan(c.max_abs)) c.max_abs = diff;
      if (diff > allowed && diff - allowed >= worst_excess) {
        worst_excess = diff - allowed;
        c.ok = false;
        c.detail = absl::StrFormat("flat index %d: got %.9g, expected %.9g (abs err %.3g, rel err %.3g)",
                                   i, a, e, diff, e != 0 ? diff / std::fabs(e) : diff);
      }
    }
  }
  return c;
}

// Values element by element: the same kind, the same number of items, each
// item compared as a tensor.
Comparison CompareValues(const Value& expected, const Value& actual, const Tolerance& tol) {
  Comparison c;
  const auto kind = [](const Value& v) { return v.is_tensor() ? "a tensor" : v.is_sequence() ? "a sequence" : "none"; };
  if (expected.is_tensor() != actual.is_tensor() || expected.is_sequence() != actual.is_sequence()) {
    c.ok = false;
    c.detail = absl::StrCat(kind(actual), ", expected ", kind(expected));
    return c;
  }
  if (expected.is_tensor()) return Compare(expected.tensor(), actual.tensor(), tol);
  if (expected.is_none()) return c;
  if (expected.sequence().size() != actual.sequence().size() ||
      (expected.sequence().empty() && expected.sequence_dtype() != actual.sequence_dtype())) {
    c.ok = false;
    c.detail = absl::StrCat("a sequence of ", actual.sequence().size(), " ", LowerName(actual.sequence_dtype()),
                            ", expected ", expected.sequence().size(), " ", LowerName(expected.sequence_dtype()));
    return c;
  }
  for (size_t i = 0; i < expected.sequence().size(); ++i) {
    Comparison item = Compare(expected.sequence()[i], actual.sequence()[i], tol);
    c.max_abs = std::max(c.max_abs, item.max_abs);
    if (!item.ok) {
      item.detail = absl::StrCat("item ", i, ": ", item.detail);
      return item;
    }
  }
  return c;
}

// Outputs drawn at random have no expected values: only what is defined is
// compared, the element type and shape and, where the expected values are all
// 0 or 1 (Bernoulli draws, also in their expanded form), that the actual ones are.
Comparison CompareRandom(const Value& expected, const Value& actual) {
  Comparison c;
  if (!expected.is_tensor() || !actual.is_tensor()) return CompareValues(expected, actual, Tolerance{});
  const Tensor& e = expected.tensor();
  const Tensor& a = actual.tensor();
  if (e.dtype() != a.dtype() || e.shape() != a.shape()) {
    c.ok = false;
    c.detail = absl::StrCat("random values of ", LowerName(a.dtype()), " ", ShapeToString(a.shape()), ", expected ",
                            LowerName(e.dtype()), " ", ShapeToString(e.shape()));
    return c;
  }
  if (!IsCastable(e.dtype())) return c;
  for (int64_t i = 0; i < e.size(); ++i)
    if (GetDouble(e, i) != 0 && GetDouble(e, i) != 1) return c;
  for (int64_t i = 0; i < a.size(); ++i)
    if (GetDouble(a, i) != 0 && GetDouble(a, i) != 1) {
      c.ok = false;
      c.detail = absl::StrFormat("flat index %d: got %.9g, expected a random 0 or 1", i, GetDouble(a, i));
      return c;
    }
  return c;
}

// The graph values that depend on a random op's draws (the node's op type,
// or one inside its subgraphs, is a random op), found from the model.
void MarkRandom(const Graph& g, std::set<std::string>& random) {
  static const std::set<std::string> kRandomOps = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                   "RandomUniformLike", "Bernoulli", "Multinomial"};
  std::function<bool(const Node&)> draws = [&](const Node& n) {
    if (kRandomOps.count(n.op_type)) return true;
    for (const auto& [name, a] : n.attributes) {
      std::vector<const Graph*> subs = {a.g.get()};
      for (const auto& sub : a.graphs) subs.push_back(sub.get());
      for (const Graph* sub : subs)
        for (size_t i = 0; sub != nullptr && i < sub->nodes.size(); ++i)
          if (draws(sub->nodes[i])) return true;
    }
    return false;
  };
  for (bool grew = true; grew;) {  // to a fixed point, whatever the order of the nodes
    grew = false;
    for (const Node& n : g.nodes) {
      bool is_random = draws(n);
      for (const std::string& in : n.inputs) is_random = is_random || random.count(in) > 0;
      for (const std::string& out : n.outputs)
        if (is_random && !out.empty()) grew = random.insert(out).second || grew;
    }
  }
}

// ---- One case, in the child ----

// The session configuration entries of CASE/ort_session.json (onnxruntime-node's session
// options, under which the oracle harness computed the expected outputs) that onnx-mini has:
// "extra": {"session": {"qdq_matmulnbits_accuracy_level": "0".."4"}}.
absl::Status ApplyOrtSessionOptions(const fs::path& dir, SessionOptions& options) {
  std::ifstream in(dir / "ort_session.json");
  if (!in) return absl::OkStatus();
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  JsonValue root;
  std::string error;
  if (!ParseJson(text, &root, &error)) return absl::InvalidArgumentError("ort_session.json: " + error);
  const JsonValue* extra = root.Find("extra");
  const JsonValue* session = extra ? extra->Find("session") : nullptr;
  const JsonValue* level = session ? session->Find("qdq_matmulnbits_accuracy_level") : nullptr;
  if (!level) return absl::OkStatus();
  if (level->kind != JsonValue::kString || level->string.size() != 1 || level->string[0] < '0' ||
      level->string[0] > '4')
    return absl::InvalidArgumentError("ort_session.json: qdq_matmulnbits_accuracy_level must be \"0\" to \"4\"");
  options.dq_matmul_accuracy_level = level->string[0] - '0';
  return absl::OkStatus();
}

CaseResult RunCase(const fs::path& dir, const Tolerance& tol, int threads) {
  CaseResult r;
  r.name = dir.filename().string();
  absl::StatusOr<Graph> graph = LoadModel((dir / "model.onnx").string());
  if (!graph.ok()) {
    r.status = absl::IsUnimplemented(graph.status()) ? "UNSUPPORTED" : "ERROR";
    r.message = std::string(graph.status().message());
    return r;
  }
  for (const Node& n : graph->nodes) r.node_ops.push_back(n.op_type);
  std::set<std::string> random;
  MarkRandom(*graph, random);
  SessionOptions options;
  options.threads = threads;
  options.graph_rewrites = g_rewrites;
  if (absl::Status st = ApplyOrtSessionOptions(dir, options); !st.ok()) {
    r.status = "ERROR";
    r.message = std::string(st.message());
    return r;
  }
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*std::move(graph), BuiltinOps(), options);
  if (!session.ok()) {
    r.status = absl::IsUnimplemented(session.status()) ? "UNSUPPORTED" : "ERROR";
    r.message = std::string(session.status().message());
    return r;
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    r.status = "ERROR";
    r.message = "no test_data_set_* folder";
    return r;
  }
  const std::vector<ValueInfo>& inputs = (*session)->inputs();
  const std::vector<ValueInfo>& outputs = (*session)->outputs();
  for (const fs::path& set : sets) {
    std::vector<NamedValue> feeds;
    for (size_t k = 0;; ++k) {
      const fs::path file = set / absl::StrCat("input_", k, ".pb");
      if (!fs::exists(file)) break;
      if (k >= inputs.size()) {
        r.status = "ERROR";
        r.message = absl::StrCat(set.filename().string(), " has more inputs than the model (", inputs.size(), ")");
        return r;
      }
      absl::StatusOr<Value> t = ReadValueFile(file.string(), inputs[k].type);
      if (!t.ok()) {
        r.status = "UNSUPPORTED";
        r.message = absl::StrCat("input ", k, ": ", t.status().message());
        return r;
      }
      feeds.push_back({inputs[k].name, *std::move(t)});
    }
    // An optional input without a file is none.
    for (size_t k = feeds.size(); k < inputs.size(); ++k)
      if (inputs[k].type.kind == ValueType::Kind::kOptional) feeds.push_back({inputs[k].name, Value()});
    std::vector<Value> got;
    absl::Status s = (*session)->RunValues(feeds, &got);
    if (!s.ok()) {
      r.status = absl::IsUnimplemented(s) ? "UNSUPPORTED" : "ERROR";
      r.message = std::string(s.message());
      return r;
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const fs::path file = set / absl::StrCat("output_", k, ".pb");
      // The file holds the declared kind (an optional output that the graph
      // fills with a tensor is an OptionalProto).
      const ValueType& declared = (*session)->graph().outputs[k].type;
      absl::StatusOr<Value> want = ReadValueFile(file.string(), declared.supported() ? declared : outputs[k].type);
      if (!want.ok()) {
        r.status = "ERROR";
        r.message = absl::StrCat("expected output ", k, ": ", want.status().message());
        return r;
      }
      const bool drawn = random.count(outputs[k].name) > 0;
      if (drawn)
        r.message = absl::StrCat("output '", outputs[k].name,
                                 "' is random: its element type and shape compared (and values in {0, 1} where expected)");
      Comparison c = drawn ? CompareRandom(*want, got[k]) : CompareValues(*want, got[k], tol);
      r.max_abs_err = std::max(r.max_abs_err, c.max_abs);
      if (!c.ok) {
        r.status = "FAIL";
        r.message = absl::StrCat(set.filename().string(), " output ", k, " '", outputs[k].name, "': ", c.detail);
        return r;
      }
    }
  }
  r.status = "PASS";
  return r;
}

// ---- Wire format between child and parent: one tab-separated line ----

std::string Clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string Encode(const CaseResult& r) {
  return absl::StrCat(r.status, "\t", absl::StrFormat("%.6g", r.max_abs_err), "\t",
                      absl::StrJoin(r.node_ops, ","), "\t", Clean(r.message), "\n");
}

void Decode(const std::string& line, CaseResult& r) {
  std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits('\t', 3));
  if (parts.size() < 4) {
    r.status = "ERROR";
    r.message = "the case process ended without a result";
    return;
  }
  r.status = parts[0];
  r.max_abs_err = std::strtod(parts[1].c_str(), nullptr);
  if (!parts[2].empty()) r.node_ops = absl::StrSplit(parts[2], ',');
  r.message = parts[3];
  while (!r.message.empty() && r.message.back() == '\n') r.message.pop_back();
}

// ---- The parent: a pool of forked children ----

struct Running {
  pid_t pid;
  int fd;
  size_t index;
  std::string output;
  std::chrono::steady_clock::time_point start;
};

void RunAll(const std::vector<fs::path>& dirs, std::vector<CaseResult>& results,
            const std::map<std::string, Tolerance>& tolerances, int jobs, int threads,
            int timeout_s, bool quiet) {
  std::vector<Running> running;
  size_t next = 0, done = 0;
  while (done < dirs.size()) {
    while (next < dirs.size() && int(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) {
        results[next].status = "ERROR";
        results[next].message = "pipe failed";
        ++next, ++done;
        continue;
      }
      std::cout.flush();
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        auto it = tolerances.find(results[next].name);
        CaseResult r = RunCase(dirs[next], it == tolerances.end() ? Tolerance{} : it->second, threads);
        const std::string line = Encode(r);
        size_t off = 0;
        while (off < line.size()) {
          ssize_t w = write(fds[1], line.data() + off, line.size() - off);
          if (w <= 0) break;
          off += size_t(w);
        }
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next, "", std::chrono::steady_clock::now()});
      ++next;
    }
    std::vector<pollfd> polls;
    for (const Running& r : running) polls.push_back({r.fd, POLLIN, 0});
    poll(polls.data(), polls.size(), 200);
    for (size_t i = 0; i < running.size();) {
      Running& r = running[i];
      bool finished = false;
      if (polls[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t n = read(r.fd, buf, sizeof(buf));
        if (n > 0) r.output.append(buf, size_t(n));
        else finished = true;
      }
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
      CaseResult& result = results[r.index];
      if (!finished && elapsed > timeout_s) {
        kill(r.pid, SIGKILL);
        finished = true;
        r.output = absl::StrCat("ERROR\t0\t\ttimed out after ", timeout_s, " s\n");
      }
      if (!finished) {
        ++i;
        continue;
      }
      close(r.fd);
      int wstatus = 0;
      waitpid(r.pid, &wstatus, 0);
      Decode(r.output, result);
      if (WIFSIGNALED(wstatus) && r.output.empty()) {
        result.status = "ERROR";
        result.message = absl::StrCat("crashed with signal ", WTERMSIG(wstatus));
      }
      if (!quiet) std::cout << result.status << " " << result.name
                            << (result.message.empty() ? "" : ": " + result.message) << "\n";
      ++done;
      running.erase(running.begin() + long(i));
      polls.erase(polls.begin() + long(i));
    }
  }
}

// The op a case is about: the op whose snake_case name the case name starts
// with (longest match), else its only node's op, else its first node's op.
std::string CaseOp(const CaseResult& r, const std::set<std::string>& known_ops) {
  std::map<std::string, std::string> by_key;
  for (const std::string& op : known_ops) {
    std::string key;
    for (char c : op) key += char(std::tolower(c));
    by_key[key] = op;
  }
  std::vector<std::string> tokens = absl::StrSplit(r.name.substr(r.name.rfind("test_", 0) == 0 ? 5 : 0), '_');
  for (size_t k = tokens.size(); k > 0; --k) {
    std::string key;
    for (size_t i = 0; i < k; ++i) key += tokens[i];
    for (char& c : key) c = char(std::tolower(c));
    auto it = by_key.find(key);
    if (it != by_key.end()) return it->second;
  }
  if (!r.node_ops.empty()) return r.node_ops[0];
  return "?";
}

std::set<std::string> ReadNameList(const std::string& path, bool& ok) {
  std::set<std::string> names;
  std::ifstream in(path);
  ok = bool(in);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty()) names.insert(line);
  }
  return names;
}

// Tolerance overrides: "case rtol atol  # reason" per line.
std::map<std::string, Tolerance> ReadTolerances(const std::string& path, bool& ok) {
  std::map<std::string, Tolerance> out;
  std::ifstream in(path);
  ok = bool(in);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string name;
    Tolerance t;
    if (fields >> name >> t.rtol >> t.atol) out[name] = t;
  }
  return out;
}


int Main(int argc, char** argv) {
  std::vector<std::string> roots;
  std::string filter, json_path, expect_path, tolerance_path;
  int jobs = 2, threads = 1, timeout_s = 300;
  bool quiet = false, require_all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "onnx-conformance: " << arg << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&]() {
      const std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 100000) {
        std::cerr << "onnx-conformance: " << arg << " takes a positive number, got '" << v << "'\n";
        std::exit(2);
      }
      return int(n);
    };
    if (arg == "--filter") filter = value();
    else if (arg == "--jobs") jobs = number();
    else if (arg == "--threads") threads = number();
    else if (arg == "--timeout") timeout_s = number();
    else if (arg == "--json") json_path = value();
    else if (arg == "--expect") expect_path = value();
    else if (arg == "--tolerances") tolerance_path = value();
    else if (arg == "--quiet") quiet = true;
    else if (arg == "--no-rewrites") g_rewrites = false;
    else if (arg == "--require-all") require_all = true;
    else if (arg == "--help" || arg == "-h") { std::cout << kUsage; return 0; }
    else if (arg.rfind("--", 0) == 0) { std::cerr << "onnx-conformance: unknown option " << arg << "\n" << kUsage; return 2; }
    else roots.push_back(arg);
  }
  if (roots.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  std::regex pattern;
  try {
    pattern = std::regex(filter.empty() ? ".*" : filter);
  } catch (const std::regex_error&) {
    std::cerr << "onnx-conformance: invalid --filter regex '" << filter << "'\n";
    return 2;
  }
  std::vector<fs::path> dirs;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      std::cerr << "onnx-conformance: '" << root << "' is not a folder\n";
      return 2;
    }
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && name.rfind("test_", 0) == 0 && std::regex_search(name, pattern))
        dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename() < b.filename();
  });
  std::map<std::string, Tolerance> tolerances;
  if (!tolerance_path.empty()) {
    bool ok;
    tolerances = ReadTolerances(tolerance_path, ok);
    if (!ok) {
      std::cerr << "onnx-conformance: cannot read " << tolerance_path << "\n";
      return 2;
    }
  }
  std::vector<CaseResult> results(dirs.size());
  for (size_t i = 0; i < dirs.size(); ++i) results[i].name = dirs[i].filename().string();
  RunAll(dirs, results, tolerances, jobs, threads, timeout_s, quiet);

  std::set<std::string> known_ops;
  for (const CaseResult& r : results)
    if (r.node_ops.size() == 1) known_ops.insert(r.node_ops[0]);
  for (CaseResult& r : results) r.op = CaseOp(r, known_ops);

  // Per-op summary.
  std::map<std::string, std::map<std::string, int>> per_op;
  std::map<std::string, int> totals;
  for (const CaseResult& r : results) {
    per_op[r.op][r.status]++;
    totals[r.status]++;
  }
  std::cout << absl::StrFormat("\n%-32s %6s %6s %6s %6s\n", "op", "PASS", "FAIL", "UNSUP", "ERROR");
  for (const auto& [op, op_counts] : per_op) {
    const std::map<std::string, int>& counts = op_counts;  // (clang 14 cannot capture a structured binding)
    auto get = [&](const char* s) { auto it = counts.find(s); return it == counts.end() ? 0 : it->second; };
    std::cout << absl::StrFormat("%-32s %6d %6d %6d %6d\n", op, get("PASS"), get("FAIL"),
                                 get("UNSUPPORTED"), get("ERROR"));
  }
  std::cout << absl::StrFormat("%-32s %6d %6d %6d %6d   (%d cases)\n", "total", totals["PASS"],
                               totals["FAIL"], totals["UNSUPPORTED"], totals["ERROR"],
                               int(results.size()));

  if (!json_path.empty()) {
    std::vector<std::string> items;
    for (const CaseResult& r : results)
      items.push_back(absl::StrFormat(
          "{\"name\": \"%s\", \"status\": \"%s\", \"op\": \"%s\", \"message\": \"%s\", \"max_abs_err\": %s}",
          JsonEscape(r.name), r.status, JsonEscape(r.op), JsonEscape(r.message),
          std::isfinite(r.max_abs_err) ? absl::StrFormat("%.6g", r.max_abs_err) : "null"));
    const std::string json = absl::StrFormat(
        "{\"cases\": [\n%s\n], \"summary\": {\"total\": %d, \"pass\": %d, \"fail\": %d, "
        "\"unsupported\": %d, \"error\": %d}}\n",
        absl::StrJoin(items, ",\n"), int(results.size()), totals["PASS"], totals["FAIL"],
        totals["UNSUPPORTED"], totals["ERROR"]);
    absl::Status s = WriteFileAtomically(json_path, json);
    if (!s.ok()) std::cerr << "onnx-conformance: " << s.message() << "\n";
  }

  int exit_code = 0;
  if (!expect_path.empty()) {
    bool ok;
    std::set<std::string> expected = ReadNameList(expect_path, ok);
    if (!ok) {
      std::cerr << "onnx-conformance: cannot read " << expect_path << "\n";
      return 2;
    }
    std::set<std::string> seen;
    for (const CaseResult& r : results) {
      seen.insert(r.name);
      if (expected.count(r.name) && r.status != "PASS") {
        std::cout << "EXPECTED TO PASS: " << r.name << " is " << r.status << ": " << r.message << "\n";
        exit_code = 1;
      }
    }
    for (const std::string& name : expected)
      if (!seen.count(name) && filter.empty()) {
        std::cout << "EXPECTED TO PASS: " << name << " was not found\n";
        exit_code = 1;
      }
    for (const CaseResult& r : results)
      if (r.status == "PASS" && !expected.count(r.name))
        std::cout << "NEWLY PASSING (not on the expect list): " << r.name << "\n";
  }
  if (require_all)
    for (const CaseResult& r : results)
      if (r.status != "PASS") {
        std::cout << "NOT PASSING: " << r.name << " is " << r.status << ": " << r.message << "\n";
        exit_code = 1;
      }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
