// onnx-decode over an onnxruntime-genai model folder (tools/onnx_decode.cc
// runs the bundled decoder; tools/onnx_decode.h holds what they share).
// A folder with genai_config.json (what onnxruntime-genai's model builder
// writes): the decoder file, its input and output names (the past and present
// names are templates with %d for the layer), the layer and head counts,
// eos/pad ids and search.past_present_share_buffer. Prompts are token ids
// (there is no tokenizer), right-padded with pad_token_id into one prefill;
// attention_mask has ones over each row's real tokens, so the model's
// seqlens_k (sum - 1) is each row's last position. A row stops at an eos id.
//   shared   each layer's past and present are one [B, kv, max_length, D]
//            buffer bound as both input and output: a step writes only its
//            new rows, at each row's own offset (onnxruntime-genai's default
//            on CPU).
//   dynamic  past in, present out (past plus the new rows).
#include "onnx_decode.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "json.h"  // same folder: onnx-decode sees only the C API's include path

namespace onnx_decode {
namespace {

struct GenaiConfig {
  std::string dir, filename;
  std::string input_ids, attention_mask, position_ids;  // position_ids empty when the model takes none
  std::string past_key, past_value, logits, present_key, present_value;  // templates with %d
  int64_t layers = 0, kv_heads = 0, head_size = 0, vocab = 0, context_length = 0, max_length = 0, pad = 0;
  std::vector<int64_t> eos;
  bool share_buffer = false;
};

std::string LayerName(const std::string& pattern, int64_t layer) {
  const size_t at = pattern.find("%d");
  return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
}

GenaiConfig ReadGenaiConfig(const std::string& dir) {
  const std::string path = dir + "/genai_config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  onnx_mini::JsonValue root;
  std::string error;
  if (!onnx_mini::ParseJson(text.str(), &root, &error)) Fail(path + ": not JSON: " + error);
  // Walks a dotted path; a missing member or another kind is an error naming it.
  auto at = [&](const std::string& where, onnx_mini::JsonValue::Kind kind, bool required = true)
      -> const onnx_mini::JsonValue* {
    const onnx_mini::JsonValue* v = &root;
    size_t begin = 0;
    while (v != nullptr && begin <= where.size()) {
      const size_t dot = where.find('.', begin);
      v = v->Find(where.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    if (v == nullptr) {
      if (required) Fail(path + ": no " + where);
      return nullptr;
    }
    if (v->kind != kind) Fail(path + ": " + where + " has the wrong type");
    return v;
  };
  auto integer = [&](const onnx_mini::JsonValue& v, const std::string& where, int64_t lo, int64_t hi) {
    if (v.kind != onnx_mini::JsonValue::kNumber || !(v.number >= double(lo) && v.number <= double(hi)) ||
        v.number != std::floor(v.number))
      Fail(path + ": " + where + " is not an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return int64_t(v.number);
  };
  auto number = [&](const std::string& where, int64_t lo, int64_t hi) {
    return integer(*at(where, onnx_mini::JsonValue::kNumber), where, lo, hi);
  };
  auto name = [&](const std::string& where, bool templated, bool required = true) -> std::string {
    const onnx_mini::JsonValue* v = at(where, onnx_mini::JsonValue::kString, required);
    if (v == nullptr) return "";
    const size_t first = v->string.find("%d");
    if (templated != (first != std::string::npos) || (templated && v->string.find("%d", first + 1) != std::string::npos) ||
        v->string.empty())
      Fail(path + ": " + where + " is '" + v->string + "'" + (templated ? ", not a name with one %d" : ""));
    return v->string;
  };
  constexpr int64_t kMax = int64_t{1} << 24;
  GenaiConfig c;
  c.dir = dir;
  c.filename = name("model.decoder.filename", false);
  if (c.filename.find('/') != std::string::npos || c.filename == "..")
    Fail(path + ": model.decoder.filename '" + c.filename + "' is not a file in the folder");
  c.input_ids = name("model.decoder.inputs.input_ids", false);
  c.attention_mask = name("model.decoder.inputs.attention_mask", false);
  c.position_ids = name("model.decoder.inputs.position_ids", false, /*required=*/false);
  c.past_key = name("model.decoder.inputs.past_key_names", true);
  c.past_value = name("model.decoder.inputs.past_value_names", true);
  c.logits = name("model.decoder.outputs.logits", false);
  c.present_key = name("model.decoder.outputs.present_key_names", true);
  c.present_value = name("model.decoder.outputs.present_value_names", true);
  c.layers = number("model.decoder.num_hidden_layers", 1, 4096);
  c.kv_heads = number("model.decoder.num_key_value_heads", 1, 4096);
  c.head_size = number("model.decoder.head_size", 1, 65536);
  c.vocab = number("model.vocab_size", 1, kMax);
  c.context_length = number("model.context_length", 1, kMax);
  c.max_length = at("search.max_length", onnx_mini::JsonValue::kNumber, false) != nullptr
                     ? number("search.max_length", 1, kMax)
                     : c.context_length;
  const onnx_mini::JsonValue* share = at("search.past_present_share_buffer", onnx_mini::JsonValue::kBool, false);
  c.share_buffer = share != nullptr && share->boolean;
  const onnx_mini::JsonValue* eos = (&root)->Find("model") ? root.Find("model")->Find("eos_token_id") : nullptr;
  if (eos == nullptr) Fail(path + ": no model.eos_token_id");
  if (eos->kind == onnx_mini::JsonValue::kArray) {
    for (const auto& e : eos->array) c.eos.push_back(integer(e, "model.eos_token_id", 0, c.vocab - 1));
  } else {
    c.eos.push_back(integer(*eos, "model.eos_token_id", 0, c.vocab - 1));
  }
  c.pad = at("model.pad_token_id", onnx_mini::JsonValue::kNumber, false) != nullptr
              ? number("model.pad_token_id", 0, c.vocab - 1)
              : (c.eos.empty() ? 0 : c.eos[0]);
  return c;
}

// The tokens onnxruntime generated for these prompts (tools/oracle/genai_greedy.js):
// "prompt-ids: ...", "tokens: N" and "row B: ids" lines; '#' starts a comment.
struct ExpectedTokens {
  std::string prompt_ids;
  int64_t tokens = 0;
  std::vector<std::vector<int64_t>> rows;
};

ExpectedTokens ReadExpectedTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail("cannot read " + path);
  ExpectedTokens e;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (line.rfind("prompt-ids: ", 0) == 0) {
      e.prompt_ids = line.substr(12);
    } else if (line.rfind("tokens: ", 0) == 0) {
      e.tokens = std::strtoll(line.c_str() + 8, nullptr, 10);
    } else if (line.rfind("row ", 0) == 0 && line.find(':') != std::string::npos) {
      if (std::strtoll(line.c_str() + 4, nullptr, 10) != int64_t(e.rows.size()))
        Fail(where + "rows out of order");
      std::istringstream ids(line.substr(line.find(':') + 1));
      std::vector<int64_t> row;
      long long id = 0;
      while (ids >> id) row.push_back(id);
      if (!ids.eof()) Fail(where + "not token ids: '" + line + "'");
      e.rows.push_back(std::move(row));
    } else {
      Fail(where + "expected 'prompt-ids:', 'tokens:' or 'row N:', got '" + line + "'");
    }
  }
  return e;
}

std::string JoinPrompts(const std::vector<std::vector<int64_t>>& prompts) {
  std::string s;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (b) s += "|";
    for (size_t j = 0; j < prompts[b].size(); ++j) s += (j ? " " : "") + std::to_string(prompts[b][j]);
  }
  return s;
}

class GenaiGenerator {
 public:
  GenaiGenerator(const Options& options, const GenaiConfig& config)
      : options_(options),
        config_(config),
        rows_(int64_t(options.prompt_ids.size())),
        session_options_(MakeSessionOptions(options.threads)),
        progress_(options.quiet) {
    session_ = OpenSession(config.dir + "/" + config.filename, session_options_.get());
    for (int64_t l = 0; l < config.layers; ++l) {
      past_.push_back(LayerName(config.past_key, l));
      past_.push_back(LayerName(config.past_value, l));
      present_.push_back(LayerName(config.present_key, l));
      present_.push_back(LayerName(config.present_value, l));
    }
    CheckCacheInputs();
  }
  GenaiGenerator(const GenaiGenerator&) = delete;
  GenaiGenerator& operator=(const GenaiGenerator&) = delete;

  Result Generate(bool shared) {
    try {
      Result r = Loop(shared);
      progress_.End();
      return r;
    } catch (Failure& f) {
      f.message = std::string("[") + (shared ? "shared" : "dynamic") + "] " + f.message;
      throw;
    }
  }

 private:
  // The pasts must be float, [batch, kv_heads, past, head_size] as the config says.
  void CheckCacheInputs() {
    size_t count = 0;
    Check(om_session_input_count(session_.get(), &count));
    size_t found = 0;
    for (size_t i = 0; i < count; ++i) {
      om_value_info info;
      Check(om_session_input_info(session_.get(), i, &info));
      if (std::find(past_.begin(), past_.end(), info.name) == past_.end()) continue;
      ++found;
      if (info.elem_type != OM_FLOAT)
        Fail(std::string("not implemented: ") + info.name + " of type " + om_elem_type_name(info.elem_type) +
             " (onnx-decode keeps float caches)");
      if (info.rank != 4 || (info.dims[1] >= 0 && info.dims[1] != config_.kv_heads) ||
          (info.dims[3] >= 0 && info.dims[3] != config_.head_size))
        Fail(std::string(info.name) + " is not [batch, " + std::to_string(config_.kv_heads) + ", past, " +
             std::to_string(config_.head_size) + "] as genai_config.json says");
    }
    if (found != past_.size())
      Fail(config_.dir + "/" + config_.filename + " lacks some of the " + std::to_string(past_.size()) +
           " past inputs genai_config.json names (" + past_[0] + ", ...)");
  }

  Result Loop(bool shared) {
    const int64_t B = rows_, kv = config_.kv_heads, D = config_.head_size, V = config_.vocab;
    std::vector<int64_t> lens;
    for (const auto& p : options_.prompt_ids) lens.push_back(int64_t(p.size()));
    const int64_t S = *std::max_element(lens.begin(), lens.end());
    const int64_t M = options_.max_length > 0 ? options_.max_length : config_.max_length;
    const size_t n_cache = past_.size();

    std::vector<std::unique_ptr<CacheBuffer>> buffers;  // shared: one per cache, bound in and out
    std::vector<Tensor> caches;                          // the pasts of the next run
    for (size_t i = 0; i < n_cache; ++i) {
      if (shared) {
        buffers.push_back(std::make_unique<CacheBuffer>(size_t(B * kv * M * D)));
        caches.push_back(WrapFloats(buffers.back()->data(), buffers.back()->count(), {B, kv, M, D}));
      } else {
        caches.push_back(CreateTensor(OM_FLOAT, {B, kv, 0, D}));
      }
    }

    Result r;
    r.tokens.assign(size_t(B), {});
    for (int64_t len : lens) r.prefill_tokens += len;
    std::vector<bool> done(size_t(B), false);
    for (int64_t t = 0; t < options_.tokens; ++t) {
      if (t > 0) progress_.Show(shared ? "shared" : "dynamic", "step", t, options_.tokens - 1);
      const Clock::time_point start = Clock::now();
      const int64_t seq = t == 0 ? S : 1, total = S + t;
      std::vector<int64_t> ids(size_t(B * seq), config_.pad), mask(size_t(B * total), 0), positions(ids.size(), 0);
      for (int64_t b = 0; b < B; ++b) {
        if (t == 0) {
          for (int64_t j = 0; j < S; ++j) {
            if (j < lens[size_t(b)]) ids[size_t(b * S + j)] = options_.prompt_ids[size_t(b)][size_t(j)];
            positions[size_t(b * S + j)] = j;
          }
        } else {
          ids[size_t(b)] = done[size_t(b)] ? config_.pad : r.tokens[size_t(b)].back();
          positions[size_t(b)] = lens[size_t(b)] + t - 1;
        }
        for (int64_t j = 0; j < lens[size_t(b)] + t; ++j) mask[size_t(b * total + j)] = 1;
      }
      Tensor input_ids = Int64Tensor({B, seq}, ids), attention_mask = Int64Tensor({B, total}, mask);
      Tensor position_ids;
      std::vector<Feed> feeds = {{config_.input_ids.c_str(), input_ids.get()},
                                 {config_.attention_mask.c_str(), attention_mask.get()}};
      if (!config_.position_ids.empty()) {
        position_ids = Int64Tensor({B, seq}, positions);
        feeds.push_back({config_.position_ids.c_str(), position_ids.get()});
      }
      std::vector<Fetch> fetches = {{config_.logits.c_str(), nullptr}};
      for (size_t i = 0; i < n_cache; ++i) {
        feeds.push_back({past_[i].c_str(), caches[i].get()});
        fetches.push_back({present_[i].c_str(), shared ? caches[i].get() : nullptr});
      }
      std::vector<Tensor> out = Run(session_.get(), feeds, fetches);
      if (!shared)
        for (size_t i = 0; i < n_cache; ++i) caches[i] = std::move(out[i + 1]);  // frees the old past

      const float* logits = LogitsData(out[0].get(), B, seq, V, config_.logits + " is");
      for (int64_t b = 0; b < B; ++b) {
        if (done[size_t(b)]) continue;
        const float* row = logits + (b * seq + (t == 0 ? lens[size_t(b)] - 1 : 0)) * V;
        const int64_t best = Argmax(row, V, b, t);
        r.tokens[size_t(b)].push_back(best);
        done[size_t(b)] = std::find(config_.eos.begin(), config_.eos.end(), best) != config_.eos.end();
      }
      if (t == 0) r.prefill_ms = MsSince(start);
      else r.step_ms.push_back(MsSince(start));
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    }
    return r;
  }

  const Options& options_;
  const GenaiConfig& config_;
  int64_t rows_;
  SessionOptions session_options_;
  Session session_;
  std::vector<std::string> past_, present_;  // key_0, value_0, key_1, ...
  ProgressLine progress_;
};

// The first (row, token) where two token lists differ (in value or length);
// false when they are equal.
bool FirstTokenDifference(const std::vector<std::vector<int64_t>>& a, const std::vector<std::vector<int64_t>>& b,
                          size_t* row, size_t* token) {
  for (size_t r = 0; r < std::max(a.size(), b.size()); ++r) {
    const size_t n = std::max(r < a.size() ? a[r].size() : 0, r < b.size() ? b[r].size() : 0);
    for (size_t t = 0; t < n; ++t)
      if (r >= a.size() || r >= b.size() || t >= a[r].size() || t >= b[r].size() || a[r][t] != b[r][t]) {
        *row = r;
        *token = t;
        return true;
      }
  }
  return false;
}

std::string TokenAt(const std::vector<std::vector<int64_t>>& rows, size_t r, size_t t) {
  if (r >= rows.size() || t >= rows[r].size()) return "(none)";
  return std::to_string(rows[r][t]);
}

}  // namespace

bool IsGenaiFolder(const std::string& dir) { return std::ifstream(dir + "/genai_config.json").good(); }

int GenaiMain(Options options) {
  const GenaiConfig config = ReadGenaiConfig(options.model_dir);
  if (options.prompts_given && options.prompt_ids.empty())
    Fail(options.model_dir + " has no tokenizer onnx-decode can use: give the prompts as --prompt-ids", 2);
  if (options.prompt_ids.empty()) options.prompt_ids = ParsePromptIds(kGenaiPrompts);
  // Modes: the config's (shared when it shares buffers) and dynamic, compared;
  // or the one --cache names.
  std::vector<bool> modes;  // true: shared
  if (options.cache == "shared") modes = {true};
  else if (options.cache == "dynamic") modes = {false};
  else if (options.cache.empty() || options.cache == "all") modes = config.share_buffer ? std::vector<bool>{true, false} : std::vector<bool>{false};
  else Fail("--cache takes shared, dynamic or all for an onnxruntime-genai folder, not '" + options.cache + "'", 2);
  const int64_t M = options.max_length > 0 ? options.max_length : config.max_length;
  size_t longest = 0;
  for (size_t b = 0; b < options.prompt_ids.size(); ++b) {
    const auto& p = options.prompt_ids[b];
    longest = std::max(longest, p.size());
    for (size_t j = 0; j < p.size(); ++j)
      if (p[j] < 0 || p[j] >= config.vocab)
        Fail("prompt " + std::to_string(b) + " token " + std::to_string(j) + " is " + std::to_string(p[j]) +
                 ", outside the vocabulary of " + std::to_string(config.vocab),
             2);
  }
  // The last run sees longest + tokens - 1 positions.
  const int64_t total = int64_t(longest) + options.tokens - 1;
  if (total > config.context_length)
    Fail(std::to_string(longest) + " prompt tokens + " + std::to_string(options.tokens) +
             " generated reach past the model's context_length of " + std::to_string(config.context_length),
         2);
  if (std::find(modes.begin(), modes.end(), true) != modes.end() && total > M)
    Fail(std::to_string(longest) + " prompt tokens + " + std::to_string(options.tokens) +
             " generated exceed the shared buffer of " + std::to_string(M) + " rows; pass a larger --max-length",
         2);

  std::vector<std::string> labels;
  for (const auto& p : options.prompt_ids) labels.push_back(JoinPrompts({p}));
  GenaiGenerator generator(options, config);
  std::vector<Result> results;
  for (bool shared : modes) {
    results.push_back(generator.Generate(shared));
    Report(shared ? "shared" : "dynamic", labels, options.step_times, results.back());
  }
  int status = 0;
  size_t row = 0, token = 0;
  if (results.size() == 2) {
    if (FirstTokenDifference(results[0].tokens, results[1].tokens, &row, &token)) {
      std::printf("modes agree: NO (row %zu token %zu: shared %s, dynamic %s)\n", row, token,
                  TokenAt(results[0].tokens, row, token).c_str(), TokenAt(results[1].tokens, row, token).c_str());
      status = 1;
    } else {
      std::printf("modes agree: yes\n");
    }
  }
  // onnxruntime's tokens: --expect-tokens FILE, or the folder's
  // expected_tokens.txt when it was made for these prompts and token count.
  std::string expect = options.expect_tokens;
  const bool forced = !expect.empty();
  if (!forced && std::ifstream(options.model_dir + "/expected_tokens.txt").good())
    expect = options.model_dir + "/expected_tokens.txt";
  if (!expect.empty()) {
    const ExpectedTokens e = ReadExpectedTokens(expect);
    const bool same_run = e.prompt_ids == JoinPrompts(options.prompt_ids) && e.tokens == options.tokens;
    if (!same_run && forced)
      Fail(expect + " holds the tokens of prompt-ids \"" + e.prompt_ids + "\" with --tokens " +
           std::to_string(e.tokens) + ", not of this run");
    if (same_run) {
      if (FirstTokenDifference(results[0].tokens, e.rows, &row, &token)) {
        std::printf("onnxruntime's tokens (%s): NO (row %zu token %zu: %s, onnxruntime %s)\n", expect.c_str(), row,
                    token, TokenAt(results[0].tokens, row, token).c_str(), TokenAt(e.rows, row, token).c_str());
        status = 1;
      } else {
        std::printf("onnxruntime's tokens (%s): the same\n", expect.c_str());
      }
    }
  }
  return status;
}

}  // namespace onnx_decode
