// The text ops: StringConcat, StringSplit, StringNormalizer, RegexFullMatch
// (RE2) and TfIdfVectorizer. Strings are UTF-8 bytes; nothing here depends on
// the process locale. Bytes that are not valid UTF-8 pass through unchanged.
#include <locale.h>
#include <wctype.h>

#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_join.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "re2/re2.h"

namespace onnx_mini {
namespace {

inline constexpr TypeSet kString = {DType::kString};

absl::Status AttrError(const Node& node, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
}

// ---- UTF-8 ----

// The code point starting at s[i] and its length in bytes; -1 (length 1) for
// a byte that does not start a valid, shortest-form sequence.
std::pair<int32_t, size_t> DecodeUtf8(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return uint8_t(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return {b0, 1};
  size_t n;
  int32_t cp, min;
  if ((b0 & 0xE0) == 0xC0) n = 2, cp = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0) n = 3, cp = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0) n = 4, cp = b0 & 0x07, min = 0x10000;
  else return {-1, 1};
  if (i + n > s.size()) return {-1, 1};
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {-1, 1};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {-1, 1};
  return {cp, n};
}

void AppendUtf8(int32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// Python's str.isspace(), which StringSplit's reference uses: the ASCII
// whitespace and separators, and Unicode's spaces and line separators.
bool IsSpace(int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// ---- Case mapping ----

// Unicode's simple (one to one) case mapping, from glibc's built-in C.UTF-8
// locale used explicitly (towupper_l), so the process locale never matters
// and no locale needs installing; without C.UTF-8, ASCII letters only.
// Turkish and Azeri (`locale` tr*/az*) map the dotted and dotless i as their
// languages do; every other locale name gets the language-neutral mapping.
class CaseMapper {
 public:
  enum class Mode { kNone, kLower, kUpper };
  CaseMapper(Mode mode, const std::string& locale) : mode_(mode) {
    const std::string lang = locale.substr(0, 2);
    turkic_ = locale.size() >= 2 && (locale.size() == 2 || locale[2] == '_' || locale[2] == '-' || locale[2] == '.') &&
              (lang == "tr" || lang == "az");
  }
  std::string Map(std::string_view s) const {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      auto [cp, n] = DecodeUtf8(s, i);
      if (cp < 0) out.append(s.substr(i, n));
      else AppendUtf8(MapCodePoint(cp), out);
      i += n;
    }
    return out;
  }

 private:
  static locale_t Utf8Locale() {
    static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(nullptr));
    return loc;
  }
  int32_t MapCodePoint(int32_t cp) const {
    if (mode_ == Mode::kNone) return cp;
    const bool upper = mode_ == Mode::kUpper;
    if (turkic_) {
      if (upper && cp == 'i') return 0x130;  // i -> İ
      if (!upper && cp == 'I') return 0x131;  // I -> ı
    }
    if (cp < 0x80) {
      if (upper && cp >= 'a' && cp <= 'z') return cp - 32;
      if (!upper && cp >= 'A' && cp <= 'Z') return cp + 32;
      return cp;
    }
    const locale_t loc = Utf8Locale();
    if (loc == locale_t(nullptr)) return cp;
    const wint_t mapped = upper ? towupper_l(wint_t(cp), loc) : towlower_l(wint_t(cp), loc);
    return mapped <= 0x10FFFF ? int32_t(mapped) : cp;
  }
  Mode mode_;
  bool turkic_ = false;
};

// ---- StringConcat ----

class StringConcatOp : public Op {
 public:
  explicit StringConcatOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = DType::kString;
    if (ctx.input(0).dims && ctx.input(1).dims) {
      ASSIGN_OR_RETURN(std::vector<Dim> dims, BroadcastDims(ctx, *ctx.input(0).dims, *ctx.input(1).dims));
      out.dims = std::move(dims);
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const std::string* x = a.data<std::string>();
    const std::string* y = b.data<std::string>();
    std::string* z = out.data<std::string>();
    ForEachBroadcast(out.shape(), BroadcastStrides(a.shape(), out.shape()), BroadcastStrides(b.shape(), out.shape()),
                     ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
                       z[o].reserve(x[i].size() + y[j].size());
                       z[o].assign(x[i]).append(y[j]);
                     });
    return absl::OkStatus();
  }
};

// ---- StringSplit ----

class StringSplitOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    int64_t maxsplit = std::numeric_limits<int64_t>::max();
    if (const Attribute* a = node.attr("maxsplit")) {
      if (a->i < 0) return AttrError(node, absl::StrCat("maxsplit must be >= 0, got ", a->i));
      maxsplit = a->i;
    }
    return std::unique_ptr<Op>(new StringSplitOp(node.attr_string("delimiter", ""), maxsplit));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType y, z;
    y.dtype = DType::kString;
    z.dtype = DType::kInt64;
    if (x.dims) {
      z.dims = *x.dims;
      y.dims = *x.dims;
      y.dims->push_back(Dim{});
      // The last dim is the most substrings of any element: the values tell.
      if (const Tensor* v = ctx.value(0)) {
        int64_t most = 0;
        std::vector<std::string_view> parts;
        for (int64_t i = 0; i < v->size(); ++i) {
          Split(v->data<std::string>()[i], parts);
          most = std::max(most, int64_t(parts.size()));
        }
        y.dims->back() = Dim::Known(most);
      }
    }
    ctx.set_output(0, y);
    ctx.set_output(1, z);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    std::string* y = ctx.output_requested(0) ? ctx.output(0).data<std::string>() : nullptr;
    const int64_t width = y ? ctx.output_shape(0).back() : 0;
    int64_t* z = ctx.output_requested(1) ? ctx.output(1).data<int64_t>() : nullptr;
    std::vector<std::string_view> parts;
    for (int64_t i = 0; i < x.size(); ++i) {
      Split(x.data<std::string>()[i], parts);
      if (z) z[i] = int64_t(parts.size());
      if (!y) continue;
      for (int64_t k = 0; k < width; ++k)  // padded with empty strings
        y[i * width + k] = size_t(k) < parts.size() ? std::string(parts[size_t(k)]) : std::string();
    }
    return absl::OkStatus();
  }

 private:
  StringSplitOp(std::string delimiter, int64_t maxsplit) : delimiter_(std::move(delimiter)), maxsplit_(maxsplit) {}

  // Python's str.split(delimiter or None, maxsplit): with a delimiter every
  // occurrence splits (an empty string is one empty substring); without,
  // runs of whitespace split and leading/trailing whitespace is dropped.
  void Split(std::string_view s, std::vector<std::string_view>& parts) const {
    parts.clear();
    int64_t splits = maxsplit_;
    if (!delimiter_.empty()) {
      size_t begin = 0;
      for (; splits > 0; --splits) {
        const size_t at = s.find(delimiter_, begin);
        if (at == std::string_view::npos) break;
        parts.push_back(s.substr(begin, at - begin));
        begin = at + delimiter_.size();
      }
      parts.push_back(s.substr(begin));
      return;
    }
    // Whitespace: the length of the space at i, or 0.
    const auto space = [&](size_t i) -> size_t {
      auto [cp, n] = DecodeUtf8(s, i);
      return cp >= 0 && IsSpace(cp) ? n : 0;
    };
    const auto skip_spaces = [&](size_t i) {
      for (size_t n; i < s.size() && (n = space(i)) > 0;) i += n;
      return i;
    };
    size_t i = 0;
    for (; splits > 0; --splits) {
      i = skip_spaces(i);
      if (i == s.size()) break;
      const size_t begin = i;
      while (i < s.size() && space(i) == 0) i += DecodeUtf8(s, i).second;
      parts.push_back(s.substr(begin, i - begin));
    }
    i = skip_spaces(i);  // maxsplit reached: the rest, without its leading spaces
    if (i < s.size()) parts.push_back(s.substr(i));
  }

  std::string delimiter_;
  int64_t maxsplit_;
};

// ---- StringNormalizer ----

class StringNormalizerOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string action = node.attr_string("case_change_action", "NONE");
    CaseMapper::Mode mode;
    if (action == "NONE") mode = CaseMapper::Mode::kNone;
    else if (action == "LOWER") mode = CaseMapper::Mode::kLower;
    else if (action == "UPPER") mode = CaseMapper::Mode::kUpper;
    else return AttrError(node, absl::StrCat("case_change_action '", action, "' is not NONE, LOWER or UPPER"));
    const std::string locale = node.attr_string("locale", "");
    auto op = std::unique_ptr<StringNormalizerOp>(new StringNormalizerOp(mode, locale));
    op->case_sensitive_ = node.attr_int("is_case_sensitive", 0) != 0;
    if (const Attribute* a = node.attr("stopwords"))
      for (const std::string& w : a->strings) op->stopwords_.insert(op->Key(w));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType y;
    y.dtype = DType::kString;
    if (x.dims) {
      const std::vector<Dim>& dims = *x.dims;
      if (dims.size() != 1 && dims.size() != 2)
        return ctx.Error(absl::StrCat("X must be [C] or [1, C], got ", DimsToString(dims)));
      if (dims.size() == 2 && dims[0].known() && dims[0].value != 1)
        return ctx.Error(absl::StrCat("X must be [C] or [1, C], got ", DimsToString(dims)));
      y.dims = dims;
      Dim& c = y.dims->back();
      if (stopwords_.empty()) {
        if (c.known() && c.value == 0) c = Dim::Known(1);  // nothing left: one empty string
      } else if (const Tensor* v = ctx.value(0)) {
        c = Dim::Known(std::max<int64_t>(1, Kept(*v)));
        if (dims.size() == 2) (*y.dims)[0] = Dim::Known(1);
      } else {
        c = Dim{};
      }
    }
    ctx.set_output(0, y);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    const std::string* in = x.data<std::string>();
    std::string* out = y.data<std::string>();
    int64_t kept = 0;
    for (int64_t i = 0; i < x.size(); ++i)
      if (!IsStopword(in[i])) out[kept++] = mapper_.Map(in[i]);
    if (kept == 0) out[0].clear();  // every element dropped: [""] or [[""]]
    return absl::OkStatus();
  }

 private:
  StringNormalizerOp(CaseMapper::Mode mode, const std::string& locale)
      : mapper_(mode, locale),
        fold_(mode == CaseMapper::Mode::kUpper ? CaseMapper::Mode::kUpper : CaseMapper::Mode::kLower, locale) {}
  // Stopwords compare as given, or (case-insensitive) both folded to the
  // output's case (lower when it is unchanged).
  std::string Key(const std::string& s) const { return case_sensitive_ ? s : fold_.Map(s); }
  bool IsStopword(const std::string& s) const { return !stopwords_.empty() && stopwords_.count(Key(s)) > 0; }
  int64_t Kept(const Tensor& x) const {
    int64_t kept = 0;
    for (int64_t i = 0; i < x.size(); ++i) kept += IsStopword(x.data<std::string>()[i]) ? 0 : 1;
    return kept;
  }

  CaseMapper mapper_, fold_;
  bool case_sensitive_ = false;
  std::unordered_set<std::string> stopwords_;
};

// ---- RegexFullMatch ----

class RegexFullMatchOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const Attribute* a = node.attr("pattern");
    if (a == nullptr) return AttrError(node, "attribute 'pattern' is required");
    RE2::Options options;
    options.set_log_errors(false);  // errors are reported here, not on stderr
    auto re = std::make_unique<RE2>(a->s, options);
    if (!re->ok())
      return AttrError(node, absl::StrCat("pattern '", a->s, "' is not a valid RE2 regular expression: ", re->error()));
    return std::unique_ptr<Op>(new RegexFullMatchOp(std::move(re)));
  }
  absl::Status Infer(InferContext& ctx) const override {
    ValueType y = ctx.input(0);
    y.dtype = DType::kBool;
    ctx.set_output(0, y);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    bool* y = ctx.output(0).data<bool>();
    const std::string* s = x.data<std::string>();
    const int64_t n = x.size();
    ParallelFor(ctx.threads(), n, WorkPerIndex{64}, [&](int64_t i_begin, int64_t i_end) {
      for (int64_t i = i_begin; i < i_end; ++i)
        y[i] = RE2::FullMatch(s[i], *re_);
    });
    return absl::OkStatus();
  }

 private:
  explicit RegexFullMatchOp(std::unique_ptr<RE2> re) : re_(std::move(re)) {}
  std::unique_ptr<RE2> re_;  // RE2 matching is thread-safe on a const object
};

// ---- TfIdfVectorizer ----

// The pool's n-grams as a trie over their items: a walk from the root along
// an n-gram's items ends at the node holding its id (its place in the pool).
template <class K>
class NgramTrie {
 public:
  NgramTrie() : nodes_(1) {}
  void Add(const std::vector<K>& pool, size_t begin, size_t n, int64_t id) {
    int32_t node = 0;
    for (size_t k = 0; k < n; ++k) {
      auto [it, added] = nodes_[size_t(node)].children.try_emplace(pool[begin + k], int32_t(nodes_.size()));
      node = it->second;
      if (added) nodes_.emplace_back();
    }
    nodes_[size_t(node)].id = id;  // a repeated n-gram: the last one counts
  }
  // The child of `node` along `key`, or -1.
  int32_t Child(int32_t node, const K& key) const {
    const auto& children = nodes_[size_t(node)].children;
    auto it = children.find(key);
    return it == children.end() ? -1 : it->second;
  }
  int64_t Id(int32_t node) const { return nodes_[size_t(node)].id; }

 private:
  struct TrieNode {
    std::unordered_map<K, int32_t> children;
    int64_t id = -1;  // -1: no n-gram ends here
  };
  std::vector<TrieNode> nodes_;
};

enum class TfIdfMode { kTF, kIDF, kTFIDF };

class TfIdfVectorizerOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::unique_ptr<TfIdfVectorizerOp>(new TfIdfVectorizerOp());
    for (const char* required : {"max_gram_length", "min_gram_length", "max_skip_count", "mode", "ngram_counts",
                                 "ngram_indexes"})
      if (node.attr(required) == nullptr) return AttrError(node, absl::StrCat("attribute '", required, "' is required"));
    const std::string mode = node.attr_string("mode", "");
    if (mode == "TF") op->mode_ = TfIdfMode::kTF;
    else if (mode == "IDF") op->mode_ = TfIdfMode::kIDF;
    else if (mode == "TFIDF") op->mode_ = TfIdfMode::kTFIDF;
    else return AttrError(node, absl::StrCat("mode '", mode, "' is not TF, IDF or TFIDF"));
    op->min_n_ = node.attr_int("min_gram_length", 0);
    op->max_n_ = node.attr_int("max_gram_length", 0);
    op->max_skip_ = node.attr_int("max_skip_count", 0);
    if (op->min_n_ < 1 || op->max_n_ < op->min_n_)
      return AttrError(node, absl::StrCat("min_gram_length ", op->min_n_, " and max_gram_length ", op->max_n_,
                                          " must satisfy 1 <= min <= max"));
    if (op->max_skip_ < 0) return AttrError(node, absl::StrCat("max_skip_count must be >= 0, got ", op->max_skip_));

    const Attribute* ints = node.attr("pool_int64s");
    const Attribute* strings = node.attr("pool_strings");
    if ((ints == nullptr) == (strings == nullptr))
      return AttrError(node, "exactly one of pool_int64s and pool_strings must be set");
    op->strings_ = strings != nullptr;
    const size_t pool_size = op->strings_ ? strings->strings.size() : ints->ints.size();

    const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
    const std::vector<int64_t> indexes = node.attr_ints("ngram_indexes");
    if (indexes.empty()) return AttrError(node, "ngram_indexes must not be empty");
    int64_t most = 0;
    for (int64_t c : indexes) {
      if (c < 0 || c >= (int64_t(1) << 40))
        return AttrError(node, absl::StrCat("ngram_indexes must be in [0, 2^40), got ", c));
      most = std::max(most, c);
    }
    op->columns_ = most + 1;
    // n-grams of size k+1 occupy pool[counts[k], counts[k+1]); their ids run
    // over the whole pool in order and index ngram_indexes.
    struct Span { size_t begin, n, count; int64_t first_id; };
    std::vector<Span> spans;
    int64_t id = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      const int64_t begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : int64_t(pool_size);
      if (begin < 0 || begin > end || end > int64_t(pool_size))
        return AttrError(node, absl::StrCat("ngram_counts must be non-decreasing offsets into the pool of ", pool_size,
                                            " items, got ", absl::StrJoin(counts, ", ")));
      const size_t n = k + 1;
      if ((end - begin) % int64_t(n) != 0)
        return AttrError(node, absl::StrCat("the ", end - begin, " pool items of ", n,
                                            "-grams are not a whole number of ", n, "-grams"));
      const size_t count = size_t(end - begin) / n;
      spans.push_back({size_t(begin), n, count, id});
      id += int64_t(count);
    }
    if (id != int64_t(indexes.size()))
      return AttrError(node, absl::StrCat("ngram_indexes has ", indexes.size(), " entries for the pool's ", id,
                                          " n-grams"));
    for (const Span& s : spans) {
      if (int64_t(s.n) < op->min_n_ || int64_t(s.n) > op->max_n_) continue;  // sizes outside the range never count
      for (size_t g = 0; g < s.count; ++g) {
        const int64_t ngram = s.first_id + int64_t(g);
        if (op->strings_) op->string_trie_.Add(strings->strings, s.begin + g * s.n, s.n, ngram);
        else op->int_trie_.Add(ints->ints, s.begin + g * s.n, s.n, ngram);
      }
    }
    // Weights scale output columns, as onnx's reference and ONNX Runtime
    // apply them (the spec's words tie them to pool n-grams; they agree when
    // ngram_indexes is 0, 1, 2, ...).
    if (const Attribute* w = node.attr("weights"); w && op->mode_ != TfIdfMode::kTF && !w->floats.empty()) {
      if (int64_t(w->floats.size()) < op->columns_)
        return AttrError(node, absl::StrCat("weights has ", w->floats.size(), " entries for ", op->columns_,
                                            " output columns"));
      op->weights_ = w->floats;
    }
    op->columns_of_ = indexes;
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    if (strings_ != (x.dtype == DType::kString))
      return ctx.Error(absl::StrCat("X is ", LowerName(x.dtype), " but the pool is ",
                                    strings_ ? "pool_strings" : "pool_int64s"));
    ValueType y;
    y.dtype = DType::kFloat;
    if (x.dims) {
      const std::vector<Dim>& dims = *x.dims;
      if (dims.size() > 2) return ctx.Error(absl::StrCat("X must be [C] or [N, C], got ", DimsToString(dims)));
      if (dims.size() == 2) y.dims = std::vector<Dim>{dims[0], Dim::Known(columns_)};
      else y.dims = std::vector<Dim>{Dim::Known(columns_)};
    }
    ctx.set_output(0, y);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    float* y = ctx.output(0).data<float>();
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
    std::vector<int64_t> counts(columns_of_.size());  // per pool n-gram
    std::vector<int64_t> row;
    std::unordered_map<int64_t, int64_t> totals;  // per output column that has counts
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(counts.begin(), counts.end(), 0);
      if (strings_) {
        Count(string_trie_, x.data<std::string>() + r * c, c, counts);
      } else {
        RETURN_IF_ERROR(Dispatch<IndexTypes>(ctx, x.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          row.assign(x.data<T>() + r * c, x.data<T>() + (r + 1) * c);
        }));
        Count(int_trie_, row.data(), c, counts);
      }
      // Columns several n-grams share add up their counts.
      totals.clear();
      for (size_t g = 0; g < counts.size(); ++g)
        if (counts[g] > 0) totals[columns_of_[g]] += counts[g];
      float* out = y + r * columns_;
      for (int64_t k = 0; k < columns_; ++k) out[k] = Weigh(k, 0);
      for (auto [k, count] : totals) out[k] = Weigh(k, count);
    }
    return absl::OkStatus();
  }

 private:
  TfIdfVectorizerOp() = default;

  float Weigh(int64_t column, int64_t count) const {
    const float w = weights_.empty() ? 1.0f : weights_[size_t(column)];
    switch (mode_) {
      case TfIdfMode::kTF: return float(count);
      case TfIdfMode::kIDF: return count > 0 ? w : 0.0f;
      case TfIdfMode::kTFIDF: return w * float(count);
    }
    return 0;
  }

  // Counts the n-grams of one row of c items: for each skip (distance
  // between items, 1 to max_skip_count + 1) and start, walk the trie along
  // the items and count every n-gram of length min..max that ends on a
  // pool entry. 1-grams count once, not once per skip.
  template <class K>
  void Count(const NgramTrie<K>& trie, const K* items, int64_t c, std::vector<int64_t>& counts) const {
    int64_t min_n = min_n_;
    // A distance of c or more fits no 2-gram: hostile skip counts cost nothing.
    const int64_t max_distance = std::min(max_skip_, std::max<int64_t>(c, 1) - 1) + 1;
    for (int64_t distance = 1; distance <= max_distance; ++distance) {
      for (int64_t start = 0; start < c; ++start) {
        if ((min_n - 1) > (c - 1 - start) / distance) break;  // no n-gram of min_n items fits
        int32_t node = 0;
        int64_t item = start;
        for (int64_t n = 1; n <= max_n_ && item < c; ++n, item += distance) {
          node = trie.Child(node, items[item]);
          if (node < 0) break;
          if (n >= min_n && trie.Id(node) >= 0) ++counts[size_t(trie.Id(node))];
        }
      }
      if (min_n == 1) {
        min_n = 2;
        if (min_n > max_n_) break;
      }
    }
  }

  TfIdfMode mode_ = TfIdfMode::kTF;
  int64_t min_n_ = 1, max_n_ = 1, max_skip_ = 0, columns_ = 0;
  bool strings_ = false;
  NgramTrie<int64_t> int_trie_;
  NgramTrie<std::string> string_trie_;
  std::vector<int64_t> columns_of_;  // ngram_indexes: the output column of each pool n-gram
  std::vector<float> weights_;  // per output column; empty: all ones
};

}  // namespace

std::vector<OpDef> TextOps() {
  const TypeConstraint t{"T", kString};
  return {
      {"", "StringConcat", 20, 0, "T T", "T", {t}, MakeOp<StringConcatOp>},
      {"", "StringSplit", 20, 0, "T1", "T2 T3", {{"T1", kString}, {"T2", kString}, {"T3", kInt64}},
       StringSplitOp::Create},
      {"", "StringNormalizer", 10, 0, "T", "T", {t}, StringNormalizerOp::Create},
      {"", "RegexFullMatch", 20, 0, "T1", "T2", {{"T1", kString}, {"T2", kBool}}, RegexFullMatchOp::Create},
      {"", "TfIdfVectorizer", 9, 0, "T", "T1",
       {{"T", kString | kIndexTypes}, {"T1", {DType::kFloat}}}, TfIdfVectorizerOp::Create},
  };
}

}  // namespace onnx_mini
