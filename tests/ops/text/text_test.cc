// ops/text/text.cc: StringConcat, StringSplit, StringNormalizer, RegexFullMatch and
// TfIdfVectorizer against hand-computed values (empty strings and tensors,
// multi-byte UTF-8, bad attributes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Strings = std::vector<std::string>;

Tensor S(Strings v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
Strings StringsOf(const Tensor& t) {
  return Strings(t.data<std::string>(), t.data<std::string>() + t.size());
}
std::vector<int64_t> IntsOf(const Tensor& t) { return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.size()); }
std::vector<float> FloatsOf(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.size()); }

void SetStrings(onnx::NodeProto& n, const std::string& name, const Strings& values) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}
void SetFloats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}

// ---- StringConcat ----

TEST(StringConcat, BroadcastsEmptyStringsAndUtf8) {
  absl::StatusOr<Tensor> z = RunOne(20, "StringConcat", {S({"a", "", "中"}, {3, 1}), S({"", "é", "xy"}, {3})});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->shape(), Shape({3, 3}));
  EXPECT_EQ(StringsOf(*z), Strings({"a", "aé", "axy", "", "é", "xy", "中", "中é", "中xy"}));
  absl::StatusOr<Tensor> scalar = RunOne(20, "StringConcat", {S({"cat"}, {}), S({"s"}, {})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->shape(), Shape({}));
  EXPECT_EQ(StringsOf(*scalar), Strings({"cats"}));
  absl::StatusOr<Tensor> empty = RunOne(20, "StringConcat", {S({}, {0, 2}), S({"a", "b"}, {2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 2}));
  absl::StatusOr<Tensor> bad = RunOne(20, "StringConcat", {S({"a", "b"}, {2}), S({"a", "b", "c"}, {3})});
  EXPECT_FALSE(bad.ok());
}

// ---- StringSplit ----

struct Split {
  Strings y;
  Shape y_shape;
  std::vector<int64_t> z;
};

Split RunSplit(const Tensor& x, const std::function<void(onnx::NodeProto&)>& attrs, bool constant = false) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(20, "StringSplit", {x}, 2, attrs, {constant});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ((*out)[1].shape(), x.shape());
  return {StringsOf((*out)[0]), (*out)[0].shape(), IntsOf((*out)[1])};
}

TEST(StringSplit, Delimiter) {
  auto dash = [](onnx::NodeProto& n) { SetAttr(n, "delimiter", std::string("--")); };
  for (bool constant : {false, true}) {  // shapes from the run's values, or at creation
    Split s = RunSplit(S({"a--b----c", "", "--", "abc"}, {2, 2}), dash, constant);
    EXPECT_EQ(s.y_shape, Shape({2, 2, 4}));
    EXPECT_EQ(s.y, Strings({"a", "b", "", "c", "", "", "", "", "", "", "", "", "abc", "", "", ""}));
    EXPECT_EQ(s.z, std::vector<int64_t>({4, 1, 2, 1}));
  }
  // A multi-byte delimiter, and maxsplit: the rest stays whole.
  Split utf8 = RunSplit(S({"xéyéz"}, {1}), [](onnx::NodeProto& n) {
    SetAttr(n, "delimiter", std::string("é"));
    SetAttr(n, "maxsplit", int64_t(1));
  });
  EXPECT_EQ(utf8.y, Strings({"x", "yéz"}));
  EXPECT_EQ(utf8.z, std::vector<int64_t>({2}));
  Split none = RunSplit(S({"a.b"}, {1}), [](onnx::NodeProto& n) {
    SetAttr(n, "delimiter", std::string("."));
    SetAttr(n, "maxsplit", int64_t(0));
  });
  EXPECT_EQ(none.y, Strings({"a.b"}));
}

TEST(StringSplit, Whitespace) {
  // Runs of whitespace (Unicode's too: U+3000, U+00A0) split; ends are dropped;
  // an empty or all-space string has no substrings.
  Split s = RunSplit(S({"  a\tb\n\n c ", "", " \u3000 ", "x\u00a0y\u3000z"}, {4}), {});
  EXPECT_EQ(s.y_shape, Shape({4, 3}));
  EXPECT_EQ(s.y, Strings({"a", "b", "c", "", "", "", "", "", "", "x", "y", "z"}));
  EXPECT_EQ(s.z, std::vector<int64_t>({3, 0, 0, 3}));
  // maxsplit keeps the rest after skipping its leading spaces, trailing ones kept.
  Split m = RunSplit(S({"  a  b  c  "}, {1}), [](onnx::NodeProto& n) { SetAttr(n, "maxsplit", int64_t(1)); });
  EXPECT_EQ(m.y, Strings({"a", "b  c  "}));
  // "" as delimiter means whitespace too.
  Split e = RunSplit(S({"p q"}, {1}), [](onnx::NodeProto& n) { SetAttr(n, "delimiter", std::string()); });
  EXPECT_EQ(e.y, Strings({"p", "q"}));
}

TEST(StringSplit, EmptyTensorsAndBadAttributes) {
  Split s = RunSplit(S({}, {2, 0}), {});
  EXPECT_EQ(s.y_shape, Shape({2, 0, 0}));
  absl::StatusOr<std::vector<Tensor>> bad =
      RunNode(20, "StringSplit", {S({"a"}, {1})}, 2, [](onnx::NodeProto& n) { SetAttr(n, "maxsplit", int64_t(-1)); });
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("maxsplit must be >= 0, got -1"));
}

// ---- StringNormalizer ----

absl::StatusOr<Tensor> Normalize(const Tensor& x, const std::string& action, const Strings& stopwords = {},
                                 int64_t case_sensitive = 0, const std::string& locale = "", bool constant = false) {
  OpTester t;
  t.op = "StringNormalizer";
  t.opset = 10;
  t.inputs = {x};
  t.constant = {constant};
  t.attrs = [&](onnx::NodeProto& n) {
    if (!action.empty()) SetAttr(n, "case_change_action", action);
    if (!stopwords.empty()) SetStrings(n, "stopwords", stopwords);
    SetAttr(n, "is_case_sensitive", case_sensitive);
    if (!locale.empty()) SetAttr(n, "locale", locale);
  };
  return t.RunOne();
}

TEST(StringNormalizer, CaseMappingBeyondAscii) {
  // Latin-1, Greek, Cyrillic and Deseret letters map; ß has no one-letter
  // upper case and stays; a byte that is not UTF-8 passes through.
  const Tensor x = S({"Hello", "Éé àÀ ÿ", "Σσ Жж", "straße", "\U00010400", "a\xff" "B", ""}, {7});
  absl::StatusOr<Tensor> up = Normalize(x, "UPPER");
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(StringsOf(*up), Strings({"HELLO", "ÉÉ ÀÀ Ÿ", "ΣΣ ЖЖ", "STRAßE", "\U00010400", "A\xff" "B", ""}));
  absl::StatusOr<Tensor> low = Normalize(x, "LOWER");
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_EQ(StringsOf(*low), Strings({"hello", "éé àà ÿ", "σσ жж", "straße", "\U00010428", "a\xff" "b", ""}));
  absl::StatusOr<Tensor> same = Normalize(x, "NONE");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(StringsOf(*same), StringsOf(x));
  // Turkish: dotted and dotless i.
  absl::StatusOr<Tensor> tr_up = Normalize(S({"istanbul"}, {1}), "UPPER", {}, 0, "tr_TR");
  EXPECT_EQ(StringsOf(*tr_up), Strings({"İSTANBUL"}));
  absl::StatusOr<Tensor> tr_low = Normalize(S({"ISPARTA"}, {1}), "LOWER", {}, 0, "tr");
  EXPECT_EQ(StringsOf(*tr_low), Strings({"ısparta"}));
  absl::StatusOr<Tensor> en_up = Normalize(S({"istanbul"}, {1}), "UPPER", {}, 0, "en_US");
  EXPECT_EQ(StringsOf(*en_up), Strings({"ISTANBUL"}));
}

TEST(StringNormalizer, Stopwords) {
  const Tensor x = S({"Monday", "monday", "MONDAY", "Dienstag", "ÉTÉ", "été", ""}, {1, 7});
  for (bool constant : {false, true}) {
    // Case-insensitive: every spelling goes, UTF-8 letters folded too.
    absl::StatusOr<Tensor> y = Normalize(x, "UPPER", {"monday", "Été"}, 0, "", constant);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), Shape({1, 2}));
    EXPECT_EQ(StringsOf(*y), Strings({"DIENSTAG", ""}));
    // Case-sensitive: only the exact spelling.
    absl::StatusOr<Tensor> exact = Normalize(x, "LOWER", {"monday", "été"}, 1, "", constant);
    ASSERT_TRUE(exact.ok()) << exact.status();
    EXPECT_EQ(StringsOf(*exact), Strings({"monday", "monday", "dienstag", "été", ""}));
    // Case-insensitive without a case change folds to lower to compare, keeps the text.
    absl::StatusOr<Tensor> keep = Normalize(x, "NONE", {"MONDAY"}, 0, "", constant);
    ASSERT_TRUE(keep.ok()) << keep.status();
    EXPECT_EQ(StringsOf(*keep), Strings({"Dienstag", "ÉTÉ", "été", ""}));
  }
  // Everything dropped: one empty string, [1] or [1, 1].
  absl::StatusOr<Tensor> gone = Normalize(S({"a", "A"}, {2}), "NONE", {"a"});
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(gone->shape(), Shape({1}));
  EXPECT_EQ(StringsOf(*gone), Strings({""}));
  absl::StatusOr<Tensor> gone2 = Normalize(S({"a"}, {1, 1}), "LOWER", {"A"});
  ASSERT_TRUE(gone2.ok()) << gone2.status();
  EXPECT_EQ(gone2->shape(), Shape({1, 1}));
  absl::StatusOr<Tensor> empty = Normalize(S({}, {0}), "LOWER");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({1}));
  EXPECT_EQ(StringsOf(*empty), Strings({""}));
}

TEST(StringNormalizer, BadInputsAndAttributes) {
  absl::StatusOr<Tensor> action = Normalize(S({"a"}, {1}), "TITLE");
  EXPECT_THAT(Message(action.status()), HasSubstr("case_change_action 'TITLE' is not NONE, LOWER or UPPER"));
  absl::StatusOr<Tensor> rows = Normalize(S({"a", "b"}, {2, 1}), "LOWER");
  EXPECT_THAT(Message(rows.status()), HasSubstr("X must be [C] or [1, C], got [2,1]"));
  absl::StatusOr<Tensor> rank3 = Normalize(S({"a"}, {1, 1, 1}), "LOWER");
  EXPECT_THAT(Message(rank3.status()), HasSubstr("X must be [C] or [1, C]"));
}

// ---- RegexFullMatch ----

absl::StatusOr<Tensor> Match(const Tensor& x, const std::string& pattern) {
  return RunOne(20, "RegexFullMatch", {x}, [&](onnx::NodeProto& n) { SetAttr(n, "pattern", pattern); });
}

TEST(RegexFullMatch, FullMatchesOnly) {
  absl::StatusOr<Tensor> y = Match(S({"abc", "abcd", "xabc", "", "ab"}, {5}), "ab.?");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kBool);
  EXPECT_THAT(Values(*y), ElementsAre(1, 0, 0, 0, 1));
  // UTF-8: one code point is one `.`; the empty string matches `a*`.
  absl::StatusOr<Tensor> utf8 = Match(S({"é", "中文", "ab", ""}, {2, 2}), "..?|a*");
  ASSERT_TRUE(utf8.ok()) << utf8.status();
  EXPECT_EQ(utf8->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*utf8), ElementsAre(1, 1, 1, 1));
  absl::StatusOr<Tensor> one = Match(S({"中文"}, {1}), ".");
  EXPECT_THAT(Values(*one), ElementsAre(0));
  absl::StatusOr<Tensor> empty = Match(S({}, {3, 0}), "a");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({3, 0}));
}

TEST(RegexFullMatch, BadPatternsFailAtCreation) {
  absl::StatusOr<Tensor> y = Match(S({"a"}, {1}), "(a");
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(Message(y.status()), HasSubstr("RegexFullMatch node"));
  EXPECT_THAT(Message(y.status()), HasSubstr("pattern '(a' is not a valid RE2 regular expression: missing )"));
  // Backreferences are not RE2 (no exponential backtracking to guard against).
  EXPECT_FALSE(Match(S({"aa"}, {1}), "(a)\\1").ok());
  absl::StatusOr<Tensor> missing = RunOne(20, "RegexFullMatch", {S({"a"}, {1})});
  EXPECT_THAT(Message(missing.status()), HasSubstr("attribute 'pattern' is required"));
  // A pattern that would need a huge automaton is refused, not built.
  EXPECT_FALSE(Match(S({"a"}, {1}), "((a{100}){100}){100}").ok());
}

// ---- TfIdfVectorizer ----

// Pool: 1-grams {1, 3}, 2-grams {(1, 2), (2, 1)}.
std::function<void(onnx::NodeProto&)> TfIdf(const std::string& mode, int64_t min_n, int64_t max_n, int64_t skip,
                                              std::vector<int64_t> indexes = {0, 1, 2, 3},
                                              std::vector<float> weights = {}, bool strings = false) {
  return [=](onnx::NodeProto& n) {
    SetAttr(n, "mode", mode);
    SetAttr(n, "min_gram_length", min_n);
    SetAttr(n, "max_gram_length", max_n);
    SetAttr(n, "max_skip_count", skip);
    SetAttr(n, "ngram_counts", std::vector<int64_t>{0, 2});
    SetAttr(n, "ngram_indexes", indexes);
    if (strings) SetStrings(n, "pool_strings", {"one", "three", "one", "two", "two", "one"});
    else SetAttr(n, "pool_int64s", std::vector<int64_t>{1, 3, 1, 2, 2, 1});
    if (!weights.empty()) SetFloats(n, "weights", weights);
  };
}

std::vector<float> RunTfIdf(const Tensor& x, const std::function<void(onnx::NodeProto&)>& attrs, Shape* shape = nullptr) {
  absl::StatusOr<Tensor> y = RunOne(9, "TfIdfVectorizer", {x}, attrs);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  if (shape) *shape = y->shape();
  return FloatsOf(*y);
}

TEST(TfIdfVectorizer, CountsUniAndBigrams) {
  // [1, 2, 1, 2, 3]: 1 twice, 3 once; consecutive pairs (1,2) twice, (2,1) once.
  const Tensor x = I({1, 2, 1, 2, 3}, {5});
  Shape shape;
  EXPECT_EQ(RunTfIdf(x, TfIdf("TF", 1, 2, 0), &shape), std::vector<float>({2, 1, 2, 1}));
  EXPECT_EQ(shape, Shape({4}));
  EXPECT_EQ(RunTfIdf(x, TfIdf("TF", 2, 2, 0)), std::vector<float>({0, 0, 2, 1}));
  EXPECT_EQ(RunTfIdf(x, TfIdf("TF", 1, 1, 0)), std::vector<float>({2, 1, 0, 0}));
  // Weights scale output columns.
  EXPECT_EQ(RunTfIdf(x, TfIdf("TFIDF", 1, 2, 0, {0, 1, 2, 3}, {0.5f, 1, 2, 3})), std::vector<float>({1, 1, 4, 3}));
  EXPECT_EQ(RunTfIdf(x, TfIdf("IDF", 1, 2, 0, {0, 1, 2, 3}, {0.5f, 1, 2, 3})), std::vector<float>({0.5f, 1, 2, 3}));
  EXPECT_EQ(RunTfIdf(x, TfIdf("IDF", 1, 2, 0)), std::vector<float>({1, 1, 1, 1}));
  // Columns shared by several n-grams add up: 1 and 3 both go to column 1.
  EXPECT_EQ(RunTfIdf(x, TfIdf("TF", 1, 2, 0, {1, 1, 0, 3})), std::vector<float>({2, 3, 0, 1}));
}

TEST(TfIdfVectorizer, SkipsBatchesTypesAndStrings) {
  // [1, 5, 2]: (1, 2) only with one item skipped; unigrams count once.
  EXPECT_EQ(RunTfIdf(I({1, 5, 2}, {3}), TfIdf("TF", 1, 2, 0)), std::vector<float>({1, 0, 0, 0}));
  EXPECT_EQ(RunTfIdf(I({1, 5, 2}, {3}), TfIdf("TF", 1, 2, 1)), std::vector<float>({1, 0, 1, 0}));
  // A hostile skip count costs nothing more than the row's length.
  EXPECT_EQ(RunTfIdf(I({1, 5, 2}, {3}), TfIdf("TF", 1, 2, int64_t(1) << 62)), std::vector<float>({1, 0, 1, 0}));
  // [2, 3] batch of int32 rows.
  Shape shape;
  EXPECT_EQ(RunTfIdf(Tensor::FromVector<int32_t>({1, 2, 3, 2, 1, 1}, {2, 3}), TfIdf("TF", 1, 2, 0), &shape),
            std::vector<float>({1, 1, 1, 0, 2, 0, 0, 1}));
  EXPECT_EQ(shape, Shape({2, 4}));
  EXPECT_EQ(RunTfIdf(S({"one", "two", "one", "three"}, {4}), TfIdf("TF", 1, 2, 0, {0, 1, 2, 3}, {}, true)),
            std::vector<float>({2, 1, 1, 1}));
  // Empty rows and an empty batch.
  EXPECT_EQ(RunTfIdf(I({}, {0}), TfIdf("TF", 1, 2, 0)), std::vector<float>({0, 0, 0, 0}));
  EXPECT_TRUE(RunTfIdf(I({}, {0, 3}), TfIdf("TF", 1, 2, 0), &shape).empty());
  EXPECT_EQ(shape, Shape({0, 4}));
}

TEST(TfIdfVectorizer, BadAttributesAndInputs) {
  auto error = [](const Tensor& x, const std::function<void(onnx::NodeProto&)>& attrs) {
    return Message(RunOne(9, "TfIdfVectorizer", {x}, attrs).status());
  };
  const Tensor x = I({1, 2}, {2});
  EXPECT_THAT(error(S({"one"}, {1}), TfIdf("TF", 1, 2, 0)), HasSubstr("X is string but the pool is pool_int64s"));
  EXPECT_THAT(error(x, TfIdf("TF", 1, 2, 0, {0, 1, 2, 3}, {}, true)), HasSubstr("X is int64 but the pool is pool_strings"));
  EXPECT_THAT(error(x, TfIdf("BM25", 1, 2, 0)), HasSubstr("mode 'BM25' is not TF, IDF or TFIDF"));
  EXPECT_THAT(error(x, TfIdf("TF", 2, 1, 0)), HasSubstr("must satisfy 1 <= min <= max"));
  EXPECT_THAT(error(x, TfIdf("TF", 1, 2, -1)), HasSubstr("max_skip_count must be >= 0"));
  EXPECT_THAT(error(x, TfIdf("TF", 1, 2, 0, {0, 1, 2})), HasSubstr("ngram_indexes has 3 entries for the pool's 4 n-grams"));
  EXPECT_THAT(error(x, TfIdf("TF", 1, 2, 0, {0, -1, 2, 3})), HasSubstr("ngram_indexes must be in [0, 2^40), got -1"));
  EXPECT_THAT(error(x, TfIdf("IDF", 1, 2, 0, {0, 1, 2, 3}, {1, 2})), HasSubstr("weights has 2 entries for 4 output columns"));
  EXPECT_THAT(error(I({1}, {1, 1, 1}), TfIdf("TF", 1, 2, 0)), HasSubstr("X must be [C] or [N, C]"));
  EXPECT_THAT(error(x, [](onnx::NodeProto& n) {
                TfIdf("TF", 1, 2, 0)(n);
                n.mutable_attribute(4)->set_ints(1, 3);  // ngram_counts {0, 3}: 3 items of 2-grams
              }),
              HasSubstr("not a whole number of 2-grams"));
  EXPECT_THAT(error(x, [](onnx::NodeProto& n) {
                TfIdf("TF", 1, 2, 0)(n);
                n.mutable_attribute(4)->set_ints(1, 9);
              }),
              HasSubstr("ngram_counts must be non-decreasing offsets into the pool of 6 items"));
  EXPECT_THAT(error(x, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("TF")); }),
              HasSubstr("attribute 'max_gram_length' is required"));
}

}  // namespace
}  // namespace onnx_mini
