// onnx-decode: greedy generation over the bundled Llama-style decoder
// (testdata/decoder), written against onnx-mini's C API only, the way a
// Transformers user writes the loop by hand: prefill a ragged batch, then
// decode one token per row per step, with each of the three KV-cache kinds:
//
//   dynamic  past_* in, present_* out (a new, longer tensor every step);
//            one batched prefill over the left-padded prompts.
//   static   caches of M rows allocated once by the caller and bound as both
//            the cache_* input and the present_* output, so each step writes
//            only its new row in place (TensorScatter) and attends over the
//            rows filled so far; each prompt is prefilled on its own.
//   sliding  the same over `window` slots written circularly; prompts longer
//            than the window go through sliding_prefill.onnx.
//
// Tokens are bytes (token id = byte value). With --model-dir DIR holding
// genai_config.json, onnx-decode runs that onnxruntime-genai folder instead
// (tools/onnx_decode_genai.cc): shared or dynamic caches. What both loops
// use is in tools/onnx_decode.h.
#include "onnx_decode.h"

#include <unistd.h>  // isatty

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "omp_defaults.h"

#ifndef ONNX_MINI_DECODER_DIR
#define ONNX_MINI_DECODER_DIR "testdata/decoder"
#endif

namespace onnx_decode {

void Check(om_status* status) {
  if (status == nullptr) return;
  Failure failure{om_status_message(status), 1};
  om_status_free(status);
  throw failure;
}

Tensor CreateTensor(int32_t elem_type, const std::vector<int64_t>& dims) {
  om_tensor* t = nullptr;
  Check(om_tensor_create(elem_type, dims.data(), dims.size(), &t));
  return Tensor(t);
}

Tensor Int64Tensor(const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  Tensor t = CreateTensor(OM_INT64, dims);
  void* data = nullptr;
  Check(om_tensor_data(t.get(), &data));
  if (!values.empty()) std::memcpy(data, values.data(), values.size() * sizeof(int64_t));
  return t;
}

Tensor BoolTensor(const std::vector<int64_t>& dims, const std::vector<uint8_t>& values) {
  Tensor t = CreateTensor(OM_BOOL, dims);
  void* data = nullptr;
  Check(om_tensor_data(t.get(), &data));
  size_t bytes = 0;
  Check(om_tensor_byte_size(t.get(), &bytes));
  if (bytes != values.size()) Fail("internal: a bool tensor of " + std::to_string(bytes) + " bytes");
  if (!values.empty()) std::memcpy(data, values.data(), values.size());
  return t;
}

Tensor WrapFloats(float* data, size_t count, const std::vector<int64_t>& dims) {
  om_tensor* t = nullptr;
  Check(om_tensor_wrap(OM_FLOAT, dims.data(), dims.size(), data, count * sizeof(float), &t));
  return Tensor(t);
}

void SetInt64(om_tensor* t, const std::vector<int64_t>& values) {
  void* data = nullptr;
  Check(om_tensor_data(t, &data));
  std::memcpy(data, values.data(), values.size() * sizeof(int64_t));
}

std::vector<Tensor> Run(const om_session* session, const std::vector<Feed>& feeds,
                        const std::vector<Fetch>& fetches) {
  std::vector<const char*> in_names, out_names;
  std::vector<const om_tensor*> ins;
  std::vector<om_tensor*> outs;
  for (const Feed& f : feeds) {
    in_names.push_back(f.name);
    ins.push_back(f.tensor);
  }
  for (const Fetch& f : fetches) {
    out_names.push_back(f.name);
    outs.push_back(f.bound);
  }
  om_status* status = om_session_run(session, in_names.data(), ins.data(), ins.size(), out_names.data(),
                                     outs.data(), outs.size());
  // Take what the runtime allocated before looking at the status, so that
  // nothing leaks whatever happened.
  std::vector<Tensor> results(fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i)
    if (fetches[i].bound == nullptr) results[i].reset(outs[i]);
  Check(status);
  for (size_t i = 0; i < fetches.size(); ++i)
    if (fetches[i].bound != nullptr && outs[i] != fetches[i].bound)
      Fail(std::string("the runtime replaced the bound output '") + fetches[i].name + "'");
  for (size_t i = 0; i < fetches.size(); ++i)
    if (fetches[i].bound == nullptr && results[i] == nullptr)
      Fail(std::string("the runtime returned no '") + fetches[i].name + "'");
  return results;
}

Session OpenSession(const std::string& path, const om_session_options* options) {
  om_session* s = nullptr;
  om_status* status = om_session_create(path.c_str(), options, &s);
  if (status != nullptr) {
    Failure failure{om_status_message(status), 1};
    om_status_free(status);
    om_session_free(s);
    if (failure.message.find(path) == std::string::npos) failure.message = path + ": " + failure.message;
    throw failure;
  }
  return Session(s);
}


SessionOptions MakeSessionOptions(int threads) {
  om_session_options* raw = nullptr;
  Check(om_session_options_create(&raw));
  SessionOptions options(raw);
  Check(om_session_options_set_intra_op_threads(raw, threads));
  return options;
}

ProgressLine::ProgressLine(bool quiet) : on_(!quiet && isatty(fileno(stderr))) {}

void ProgressLine::Show(const char* label, const char* what, int64_t i, int64_t n) {
  if (!on_) return;
  std::fprintf(stderr, "\r[%s] %s %lld/%lld   ", label, what, (long long)i, (long long)n);
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::End() {
  if (!shown_) return;
  std::fprintf(stderr, "\r%*s\r", 60, "");
  std::fflush(stderr);
  shown_ = false;
}

const float* LogitsData(om_tensor* logits, int64_t rows, int64_t seq, int64_t vocab, const std::string& what) {
  const int64_t* dims = nullptr;
  size_t rank = 0;
  Check(om_tensor_shape(logits, &dims, &rank));
  int32_t type = 0;
  Check(om_tensor_elem_type(logits, &type));
  if (type != OM_FLOAT || rank != 3 || dims[0] != rows || dims[1] != seq || dims[2] != vocab) {
    std::string got;
    for (size_t d = 0; d < rank; ++d) got += (d ? "," : "") + std::to_string(dims[d]);
    Fail(what + " " + om_elem_type_name(type) + "[" + got + "], expected FLOAT[" + std::to_string(rows) + "," +
         std::to_string(seq) + "," + std::to_string(vocab) + "]");
  }
  void* data = nullptr;
  Check(om_tensor_data(logits, &data));
  return static_cast<const float*>(data);
}

int64_t Argmax(const float* logits, int64_t vocab, int64_t row, int64_t token) {
  int64_t best = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    if (std::isnan(logits[v]))
      Fail("the logits of row " + std::to_string(row) + " token " + std::to_string(token) + " are NaN (id " +
           std::to_string(v) + ")");
    if (logits[v] > logits[best]) best = v;
  }
  return best;
}

std::vector<std::vector<int64_t>> ParsePromptIds(const std::string& v) {
  std::vector<std::vector<int64_t>> prompts;
  size_t begin = 0;
  while (true) {
    const size_t bar = v.find('|', begin);
    std::istringstream ids(v.substr(begin, bar == std::string::npos ? std::string::npos : bar - begin));
    std::vector<int64_t> row;
    std::string id;
    while (ids >> id) {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(id.c_str(), &end, 10);
      if (errno != 0 || *end != '\0' || n < 0)
        Fail("--prompt-ids: '" + id + "' in prompt " + std::to_string(prompts.size()) + " is not a token id", 2);
      row.push_back(n);
    }
    if (row.empty())
      Fail("--prompt-ids: prompt " + std::to_string(prompts.size()) +
               " is empty (prompts are token ids separated by spaces, prompts by '|')",
           2);
    prompts.push_back(std::move(row));
    if (bar == std::string::npos) break;
    begin = bar + 1;
  }
  return prompts;
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

namespace {
double Mean(const std::vector<double>& v, size_t begin, size_t end) {
  double sum = 0;
  for (size_t i = begin; i < end; ++i) sum += v[i];
  return end > begin ? sum / double(end - begin) : 0.0;
}
}  // namespace

void Report(const char* name, const std::vector<std::string>& labels, bool step_times, const Result& r) {
  for (size_t b = 0; b < r.tokens.size(); ++b) {
    std::printf("[%s] row %zu: \"%s\" ->", name, b, labels[b].c_str());
    for (int64_t t : r.tokens[b]) std::printf(" %lld", (long long)t);
    std::printf("\n");
  }
  const size_t steps = r.step_ms.size(), rows = r.tokens.size();
  size_t decoded = 0;  // tokens from the decode steps (a row stopped at eos makes fewer)
  for (const auto& row : r.tokens) decoded += row.empty() ? 0 : row.size() - 1;
  double decode_ms = 0;
  for (double ms : r.step_ms) decode_ms += ms;
  std::printf("[%s] prefill: %lld tokens in %.2f ms (%.0f tok/s); ", name, (long long)r.prefill_tokens,
              r.prefill_ms, r.prefill_ms > 0 ? double(r.prefill_tokens) * 1000.0 / r.prefill_ms : 0.0);
  std::printf("decode: %zu steps x %zu rows in %.2f ms (%.0f tok/s)", steps, rows, decode_ms,
              decode_ms > 0 ? double(decoded) * 1000.0 / decode_ms : 0.0);
  if (steps > 0) {
    const size_t k = std::min<size_t>(8, steps);
    std::printf("; per step: first-8 mean %.3f ms, last-8 mean %.3f ms", Mean(r.step_ms, 0, k),
                Mean(r.step_ms, steps - k, steps));
  }
  std::printf("\n");
  if (step_times)
    for (size_t s = 0; s < steps; ++s) std::printf("[%s] step %zu: %.3f ms\n", name, s + 1, r.step_ms[s]);
  std::fflush(stdout);
}

namespace {

constexpr char kUsage[] =
    "usage: onnx-decode [--model-dir DIR] [--cache dynamic|static|sliding|shared|all]\n"
    "                   [--batch-prompts \"text1|text2|...\"] [--prompt-ids \"1 2 3|4 5|...\"]\n"
    "                   [--tokens N] [--cache-len M] [--max-length M] [--expect-tokens FILE]\n"
    "                   [--threads T] [--step-times] [--quiet]\n"
    "Greedy generation over the bundled decoder (default DIR: " ONNX_MINI_DECODER_DIR ")\n"
    "or an onnxruntime-genai model folder (DIR with genai_config.json), through\n"
    "onnx-mini's C API, with each KV-cache kind:\n"
    "  --cache KIND       bundled decoder: dynamic (past/present tensors), static (a\n"
    "                     caller-owned cache of --cache-len rows updated in place), sliding\n"
    "                     (window slots written circularly) or all (default: the three in\n"
    "                     turn, checking that they generate the same tokens);\n"
    "                     genai folder: shared (one [B, kv, max_length, D] buffer per cache\n"
    "                     bound as both past and present), dynamic (present = past plus\n"
    "                     the new rows) or all (default: shared then dynamic, compared,\n"
    "                     when the config says past_present_share_buffer; else dynamic)\n"
    "  --batch-prompts P  the bundled decoder's prompts, separated by '|' (default: \"Hello|The\n"
    "                     quick brown fox|onnx-mini decodes\"); tokens are their UTF-8 bytes\n"
    "  --prompt-ids P     a genai folder's prompts as token ids (no tokenizer), prompts\n"
    "                     separated by '|' (default: \"" "1 5 6 7 8 9|1 11 12|1 300 200 100 50 25 12 6 3" "\");\n"
    "                     right-padded with pad_token_id; a row stops at eos_token_id\n"
    "  --tokens N         tokens to generate per prompt (default 16)\n"
    "  --cache-len M      rows of the static cache (default 256)\n"
    "  --max-length M     rows of the shared buffer (default: the config's search.max_length)\n"
    "  --expect-tokens F  compare the tokens with onnxruntime's (tools/oracle/genai_greedy.js);\n"
    "                     DIR/expected_tokens.txt is compared when made for the same prompts\n"
    "  --threads T        threads per run, 0 = all cores (default 0)\n"
    "  --step-times       print each decode step's time in ms\n"
    "  --quiet            no progress line on stderr\n"
    "Exit status: 0 done (and the kinds, modes and expected tokens agree), 1 error or\n"
    "disagreement, 2 bad usage.\n";

// ---- The model -----------------------------------------------------------------

struct Config {
  int64_t vocab = 0, layers = 0, kv_heads = 0, head_dim = 0, window = 0, max_position = 0;
};

Config ReadConfig(const std::string& dir) {
  const std::string path = dir + "/config.txt";
  std::ifstream in(path);
  if (!in) Fail("cannot read " + path + " (is --model-dir the decoder's folder?)");
  std::map<std::string, int64_t> values;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream fields(line);
    std::string key, value, rest;
    if (!(fields >> key)) continue;  // blank line
    char* end = nullptr;
    long long v = 0;
    if (fields >> value) v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || (fields >> rest))
      Fail(path + ":" + std::to_string(line_number) + ": expected 'key integer', got '" + line + "'");
    values[key] = v;
  }
  Config c;
  const std::pair<const char*, int64_t*> wanted[] = {{"vocab", &c.vocab},       {"layers", &c.layers},
                                                     {"kv_heads", &c.kv_heads}, {"head_dim", &c.head_dim},
                                                     {"window", &c.window},     {"max_position", &c.max_position}};
  for (const auto& [key, field] : wanted) {
    auto it = values.find(key);
    if (it == values.end()) Fail(path + ": no '" + key + "'");
    if (it->second <= 0 || it->second > (int64_t{1} << 24))
      Fail(path + ": '" + key + "' is " + std::to_string(it->second));
    *field = it->second;
  }
  return c;
}

// The per-layer input and output names, in the models' order.
struct Names {
  explicit Names(int64_t layers) {
    for (int64_t l = 0; l < layers; ++l)
      for (const char* kv : {"key", "value"}) {
        past.push_back("past_" + std::string(kv) + "_" + std::to_string(l));
        cache.push_back("cache_" + std::string(kv) + "_" + std::to_string(l));
        present.push_back("present_" + std::string(kv) + "_" + std::to_string(l));
      }
  }
  std::vector<std::string> past, cache, present;  // 2 * layers each: key_0, value_0, key_1, ...
};

// ---- Generation ------------------------------------------------------------------

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kDynamic: return "dynamic";
    case Kind::kStatic: return "static";
    case Kind::kSliding: return "sliding";
  }
  return "?";
}

// The shared state of one generation: prompts as token ids, the progress line.
class Generator {
 public:
  Generator(const Options& options, const Config& config)
      : options_(options),
        config_(config),
        names_(config.layers),
        rows_(int64_t(options.prompts.size())),
        session_options_(MakeSessionOptions(options.threads)),
        progress_(options.quiet) {
    for (const std::string& p : options.prompts) {
      std::vector<int64_t> ids;
      for (unsigned char c : p) ids.push_back(int64_t(c));
      prompt_ids_.push_back(std::move(ids));
    }
  }

  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  Result Generate(Kind kind) {
    kind_ = kind;
    Result r;
    r.tokens.assign(size_t(rows_), {});
    for (const auto& ids : prompt_ids_) r.prefill_tokens += int64_t(ids.size());
    try {
      switch (kind) {
        case Kind::kDynamic: Dynamic(r); break;
        case Kind::kStatic: Cached(r, /*sliding=*/false); break;
        case Kind::kSliding: Cached(r, /*sliding=*/true); break;
      }
    } catch (Failure& f) {
      f.message = std::string("[") + KindName(kind) + "] " + f.message;
      throw;
    }
    progress_.End();
    return r;
  }

 private:
  int64_t Len(int64_t b) const { return int64_t(prompt_ids_[size_t(b)].size()); }
  int64_t MaxLen() const {
    int64_t m = 0;
    for (int64_t b = 0; b < rows_; ++b) m = std::max(m, Len(b));
    return m;
  }
  int64_t Steps() const { return options_.tokens - 1; }  // the prefill gives the first token
  std::string Path(const char* file) const { return options_.model_dir + "/" + file; }

  // The logits of one position of a [rows, seq, vocab] logits tensor.
  const float* LogitsAt(om_tensor* logits, int64_t rows, int64_t seq, int64_t row, int64_t pos) const {
    return LogitsData(logits, rows, seq, config_.vocab, "the logits are") + (row * seq + pos) * config_.vocab;
  }

  // One batched prefill over the left-padded prompts, then decode steps that
  // feed the presents back as the next pasts.
  void Dynamic(Result& r) {
    Session session = OpenSession(Path("dynamic.onnx"), session_options_.get());
    const int64_t B = rows_, L = MaxLen(), kv = config_.kv_heads, hd = config_.head_dim;
    const size_t n_cache = names_.past.size();

    // Left padding (pad id 0, position 0, masked out); positions count from 0
    // at each row's first real token.
    std::vector<int64_t> ids(size_t(B * L), 0), positions(size_t(B * L), 0);
    std::vector<std::vector<uint8_t>> mask(size_t(B), std::vector<uint8_t>(size_t(L), 0));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t pad = L - Len(b);
      for (int64_t j = 0; j < Len(b); ++j) {
        ids[size_t(b * L + pad + j)] = prompt_ids_[size_t(b)][size_t(j)];
        positions[size_t(b * L + pad + j)] = j;
        mask[size_t(b)][size_t(pad + j)] = 1;
      }
    }
    auto mask_tensor = [&]() {
      const int64_t T = int64_t(mask[0].size());
      std::vector<uint8_t> flat;
      flat.reserve(size_t(B * T));
      for (const auto& row : mask) flat.insert(flat.end(), row.begin(), row.end());
      return BoolTensor({B, 1, 1, T}, flat);
    };

    std::vector<Tensor> pasts;  // key_0, value_0, key_1, ...
    for (size_t i = 0; i < n_cache; ++i) pasts.push_back(CreateTensor(OM_FLOAT, {B, kv, 0, hd}));

    // One run: returns the logits; the presents become the pasts.
    auto step = [&](const Tensor& input_ids, const Tensor& position_ids, const Tensor& attention_mask) {
      std::vector<Feed> feeds = {{"input_ids", input_ids.get()},
                                 {"position_ids", position_ids.get()},
                                 {"attention_mask", attention_mask.get()}};
      for (size_t i = 0; i < n_cache; ++i) feeds.push_back({names_.past[i].c_str(), pasts[i].get()});
      std::vector<Fetch> fetches = {{"logits", nullptr}};
      for (size_t i = 0; i < n_cache; ++i) fetches.push_back({names_.present[i].c_str(), nullptr});
      std::vector<Tensor> out = Run(session.get(), feeds, fetches);
      for (size_t i = 0; i < n_cache; ++i) pasts[i] = std::move(out[i + 1]);  // frees the old past
      return std::move(out[0]);
    };

    progress_.Show(KindName(kind_), "prefill", 0, 1);
    Clock::time_point start = Clock::now();
    {
      Tensor input_ids = Int64Tensor({B, L}, ids), position_ids = Int64Tensor({B, L}, positions);
      Tensor logits = step(input_ids, position_ids, mask_tensor());
      for (int64_t b = 0; b < B; ++b)
        r.tokens[size_t(b)].push_back(Argmax(LogitsAt(logits.get(), B, L, b, L - 1), config_.vocab, b, 0));
    }
    r.prefill_ms = MsSince(start);

    Tensor input_ids = CreateTensor(OM_INT64, {B, 1}), position_ids = CreateTensor(OM_INT64, {B, 1});
    std::vector<int64_t> step_ids(static_cast<size_t>(B)), step_positions(step_ids.size());
    for (int64_t s = 1; s <= Steps(); ++s) {
      progress_.Show(KindName(kind_), "step", s, Steps());
      start = Clock::now();
      for (int64_t b = 0; b < B; ++b) {
        step_ids[size_t(b)] = r.tokens[size_t(b)].back();
        step_positions[size_t(b)] = Len(b) + s - 1;
        mask[size_t(b)].push_back(1);
      }
      SetInt64(input_ids.get(), step_ids);
      SetInt64(position_ids.get(), step_positions);
      Tensor logits = step(input_ids, position_ids, mask_tensor());
      for (int64_t b = 0; b < B; ++b)
        r.tokens[size_t(b)].push_back(Argmax(LogitsAt(logits.get(), B, 1, b, 0), config_.vocab, b, s));
      r.step_ms.push_back(MsSince(start));
    }
  }

  // Static (M = --cache-len rows, linear writes) or sliding (M = window slots,
  // circular writes): caches allocated once, bound in place as both input and
  // output. Each prompt is prefilled alone through a one-row view of the
  // caches; then batched decode steps.
  void Cached(Result& r, bool sliding) {
    const int64_t B = rows_, kv = config_.kv_heads, hd = config_.head_dim;
    const int64_t M = sliding ? config_.window : options_.cache_len;
    const size_t n_cache = names_.cache.size();
    Session decode = OpenSession(Path(sliding ? "sliding_decode.onnx" : "static.onnx"), session_options_.get());
    Session prefill_long;  // sliding_prefill.onnx, for prompts longer than the window
    if (sliding && MaxLen() > M) prefill_long = OpenSession(Path("sliding_prefill.onnx"), session_options_.get());

    const size_t row_floats = size_t(kv * M * hd);
    std::vector<std::unique_ptr<CacheBuffer>> caches;  // key_0, value_0, key_1, ...
    for (size_t i = 0; i < n_cache; ++i) caches.push_back(std::make_unique<CacheBuffer>(size_t(B) * row_floats));

    // Runs `session` with the given int64 inputs and the caches bound in place;
    // returns the logits.
    auto run = [&](const om_session* session, const std::vector<Feed>& scalars, const std::vector<Tensor>& bound) {
      std::vector<Feed> feeds = scalars;
      for (size_t i = 0; i < n_cache; ++i) feeds.push_back({names_.cache[i].c_str(), bound[i].get()});
      std::vector<Fetch> fetches = {{"logits", nullptr}};
      for (size_t i = 0; i < n_cache; ++i) fetches.push_back({names_.present[i].c_str(), bound[i].get()});
      return std::move(Run(session, feeds, fetches)[0]);
    };

    Clock::time_point start = Clock::now();
    for (int64_t b = 0; b < B; ++b) {
      progress_.Show(KindName(kind_), "prefill", b + 1, B);
      const int64_t S = Len(b);
      std::vector<Tensor> views;
      for (size_t i = 0; i < n_cache; ++i)
        views.push_back(WrapFloats(caches[i]->data() + size_t(b) * row_floats, row_floats, {1, kv, M, hd}));
      std::vector<int64_t> positions(static_cast<size_t>(S));
      for (int64_t j = 0; j < S; ++j) positions[size_t(j)] = j;
      Tensor input_ids = Int64Tensor({1, S}, prompt_ids_[size_t(b)]);
      Tensor position_ids = Int64Tensor({1, S}, positions);
      Tensor logits;
      if (sliding && S > M) {
        // The whole prompt with window attention; its last M tokens go to the cache.
        Tensor write_indices = Int64Tensor({1}, {S - M});
        logits = run(prefill_long.get(),
                     {{"input_ids", input_ids.get()},
                      {"position_ids", position_ids.get()},
                      {"write_indices", write_indices.get()}},
                     views);
      } else {
        Tensor write_indices = Int64Tensor({1}, {0}), nonpad = Int64Tensor({1}, {S});
        logits = run(decode.get(),
                     {{"input_ids", input_ids.get()},
                      {"position_ids", position_ids.get()},
                      {"write_indices", write_indices.get()},
                      {"nonpad_kv_seqlen", nonpad.get()}},
                     views);
      }
      r.tokens[size_t(b)].push_back(Argmax(LogitsAt(logits.get(), 1, S, 0, S - 1), config_.vocab, b, 0));
    }
    r.prefill_ms = MsSince(start);

    std::vector<Tensor> whole;
    for (size_t i = 0; i < n_cache; ++i) whole.push_back(WrapFloats(caches[i]->data(), caches[i]->count(), {B, kv, M, hd}));
    Tensor input_ids = CreateTensor(OM_INT64, {B, 1}), position_ids = CreateTensor(OM_INT64, {B, 1});
    Tensor write_indices = CreateTensor(OM_INT64, {B}), nonpad = CreateTensor(OM_INT64, {B});
    std::vector<int64_t> step_ids(static_cast<size_t>(B)), step_positions(step_ids.size()), step_nonpad(step_ids.size());
    for (int64_t s = 1; s <= Steps(); ++s) {
      progress_.Show(KindName(kind_), "step", s, Steps());
      start = Clock::now();
      for (int64_t b = 0; b < B; ++b) {
        const int64_t position = Len(b) + s - 1;  // of the token fed; also the row's length so far
        step_ids[size_t(b)] = r.tokens[size_t(b)].back();
        step_positions[size_t(b)] = position;
        step_nonpad[size_t(b)] = sliding ? std::min(position + 1, M) : position + 1;
      }
      SetInt64(input_ids.get(), step_ids);
      SetInt64(position_ids.get(), step_positions);
      SetInt64(write_indices.get(), step_positions);  // static: the length; sliding: the position (mod M inside)
      SetInt64(nonpad.get(), step_nonpad);
      Tensor logits = run(decode.get(),
                          {{"input_ids", input_ids.get()},
                           {"position_ids", position_ids.get()},
                           {"write_indices", write_indices.get()},
                           {"nonpad_kv_seqlen", nonpad.get()}},
                          whole);
      for (int64_t b = 0; b < B; ++b)
        r.tokens[size_t(b)].push_back(Argmax(LogitsAt(logits.get(), B, 1, b, 0), config_.vocab, b, s));
      r.step_ms.push_back(MsSince(start));
    }
  }

  const Options& options_;
  const Config& config_;
  Names names_;
  int64_t rows_;
  std::vector<std::vector<int64_t>> prompt_ids_;
  SessionOptions session_options_;
  Kind kind_ = Kind::kDynamic;
  ProgressLine progress_;
};

// The first (row, token) where two results differ; false when they are equal.
bool FirstDifference(const Result& a, const Result& b, size_t* row, size_t* token) {
  for (size_t r = 0; r < a.tokens.size(); ++r)
    for (size_t t = 0; t < a.tokens[r].size(); ++t)
      if (a.tokens[r][t] != b.tokens[r][t]) {
        *row = r;
        *token = t;
        return true;
      }
  return false;
}

// With --cache all: do the kinds agree? Returns the exit code.
int Compare(const Options& options, const Config& config, const Result& dynamic, const Result& fixed,
            const Result& sliding) {
  size_t row = 0, token = 0;
  if (FirstDifference(dynamic, fixed, &row, &token)) {
    std::printf("kinds agree: NO (first difference: row %zu token %zu)\n", row, token);
    std::printf("  static differs from dynamic at row %zu token %zu: %lld vs %lld\n", row, token,
                (long long)fixed.tokens[row][token], (long long)dynamic.tokens[row][token]);
    return 1;
  }
  // Sliding equals full attention while every key attended is in the window:
  // token t of row b comes from the query at position len_b + t - 1, which
  // attends len_b + t keys. A difference is expected only past that. (After a
  // row's first difference the rest of the row follows from it.)
  bool differs = false, within_window = false;
  size_t first_row = 0, first_token = 0;
  for (size_t b = 0; b < dynamic.tokens.size(); ++b) {
    size_t t = 0;
    while (t < dynamic.tokens[b].size() && dynamic.tokens[b][t] == sliding.tokens[b][t]) ++t;
    if (t == dynamic.tokens[b].size()) continue;
    const bool within = int64_t(options.prompts[b].size() + t) <= config.window;
    if (!differs || (within && !within_window)) {
      first_row = b;
      first_token = t;
    }
    differs = true;
    within_window = within_window || within;
  }
  if (!differs) {
    std::printf("kinds agree: yes\n");
    return 0;
  }
  const long long got = (long long)sliding.tokens[first_row][first_token];
  const long long want = (long long)dynamic.tokens[first_row][first_token];
  if (!within_window) {
    std::printf("kinds agree: dynamic and static yes; sliding differs beyond the window (expected) "
                "(first difference: row %zu token %zu)\n",
                first_row, first_token);
    return 0;
  }
  std::printf("kinds agree: NO (first difference: row %zu token %zu)\n", first_row, first_token);
  std::printf("  sliding differs from dynamic within the window at row %zu token %zu: %lld vs %lld\n",
              first_row, first_token, got, want);
  return 1;
}

// ---- Arguments -----------------------------------------------------------------------

bool ParseInt(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty() || s[0] == ' ' || s[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Returns the options, or throws a Failure with exit code 2 (0 for --help,
// after printing the usage).
Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string flag = arg, value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      flag = arg.substr(0, arg.find('='));
      value = arg.substr(arg.find('=') + 1);
      has_value = true;
    }
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) Fail(flag + " needs a value", 2);
      return argv[++i];
    };
    auto no_value = [&]() {
      if (has_value) Fail(flag + " takes no value", 2);
    };
    auto number = [&](int64_t lo, int64_t hi) {
      const std::string v = take();
      int64_t n = 0;
      if (!ParseInt(v, lo, hi, &n))
        Fail(flag + " takes an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not '" + v +
                 "'",
             2);
      return n;
    };
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      throw Failure{"", 0};
    } else if (flag == "--model-dir") {
      o.model_dir = take();
      if (o.model_dir.empty()) Fail("--model-dir is empty", 2);
    } else if (flag == "--cache") {
      const std::string v = take();
      o.cache = v;
      if (v == "shared") o.kinds = {};  // genai folders only (checked in Main)
      else if (v == "dynamic") o.kinds = {Kind::kDynamic};
      else if (v == "static") o.kinds = {Kind::kStatic};
      else if (v == "sliding") o.kinds = {Kind::kSliding};
      else if (v == "all") o.kinds = {Kind::kDynamic, Kind::kStatic, Kind::kSliding};
      else Fail("--cache takes dynamic, static, sliding, all or (genai folders) shared, not '" + v + "'", 2);
    } else if (flag == "--prompt-ids") {
      o.prompt_ids = ParsePromptIds(take());
    } else if (flag == "--expect-tokens") {
      o.expect_tokens = take();
    } else if (flag == "--max-length") {
      o.max_length = number(1, 1 << 24);
    } else if (flag == "--batch-prompts") {
      const std::string v = take();
      o.prompts_given = true;
      o.prompts.clear();
      size_t begin = 0;
      while (true) {
        const size_t bar = v.find('|', begin);
        o.prompts.push_back(v.substr(begin, bar == std::string::npos ? std::string::npos : bar - begin));
        if (o.prompts.back().empty())
          Fail("--batch-prompts: prompt " + std::to_string(o.prompts.size() - 1) +
                   " is empty (prompts are separated by '|' and need at least one byte)",
               2);
        if (bar == std::string::npos) break;
        begin = bar + 1;
      }
    } else if (flag == "--tokens") {
      o.tokens = number(1, 1 << 20);
    } else if (flag == "--cache-len") {
      o.cache_len = number(1, 1 << 24);
    } else if (flag == "--threads") {
      o.threads = int(number(0, 4096));
    } else if (flag == "--quiet") {
      no_value();
      o.quiet = true;
    } else if (flag == "--step-times") {
      no_value();
      o.step_times = true;
    } else {
      Fail("unknown argument '" + arg + "'", 2);
    }
  }
  return o;
}

// Refuses (exit 2) what the caches or the positions cannot hold.
void CheckLengths(const Options& o, const Config& c) {
  for (size_t b = 0; b < o.prompts.size(); ++b) {
    const int64_t len = int64_t(o.prompts[b].size());
    // The last token fed is at position len + tokens - 2.
    if (len + o.tokens - 1 > c.max_position)
      Fail("row " + std::to_string(b) + ": " + std::to_string(len) + " prompt tokens + " + std::to_string(o.tokens) +
               " generated reach past the model's " + std::to_string(c.max_position) + " positions",
           2);
    const bool uses_static = std::find(o.kinds.begin(), o.kinds.end(), Kind::kStatic) != o.kinds.end();
    if (uses_static && len + o.tokens > o.cache_len)
      Fail("row " + std::to_string(b) + ": " + std::to_string(len) + " prompt tokens + " + std::to_string(o.tokens) +
               " to generate exceed the static cache of " + std::to_string(o.cache_len) +
               " rows; pass a larger --cache-len (or fewer --tokens)",
           2);
  }
}

int Main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  if (IsGenaiFolder(options.model_dir)) return GenaiMain(options);
  if (!options.prompt_ids.empty() || !options.expect_tokens.empty() || options.max_length > 0)
    Fail("--prompt-ids, --expect-tokens and --max-length are for onnxruntime-genai folders (genai_config.json); "
         "the bundled decoder's prompts are text (--batch-prompts)",
         2);
  if (options.cache == "shared") Fail("--cache shared is for onnxruntime-genai folders (genai_config.json)", 2);
  const Config config = ReadConfig(options.model_dir);
  CheckLengths(options, config);
  Generator generator(options, config);
  std::map<Kind, Result> results;
  for (Kind kind : options.kinds) {
    results[kind] = generator.Generate(kind);
    Report(KindName(kind), options.prompts, options.step_times, results[kind]);
  }
  if (options.kinds.size() == 3)
    return Compare(options, config, results[Kind::kDynamic], results[Kind::kStatic], results[Kind::kSliding]);
  return 0;
}

}  // namespace
}  // namespace onnx_decode

int main(int argc, char** argv) {
  onnx_mini::ReexecWithOmpWaitDefault(argv);
  try {
    return onnx_decode::Main(argc, argv);
  } catch (const onnx_decode::Failure& f) {
    if (f.exit_code == 0) return 0;
    std::fflush(stdout);
    std::fprintf(stderr, "onnx-decode: %s\n", f.message.c_str());
    if (f.exit_code == 2) std::fputs("run 'onnx-decode --help' for usage\n", stderr);
    return f.exit_code;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "onnx-decode: out of memory\n");
    return 1;
  }
}
