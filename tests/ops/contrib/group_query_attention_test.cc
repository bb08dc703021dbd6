// com.microsoft GroupQueryAttention: the shared past/present buffer bound in
// place (only each row's new rows written, the same outputs as the separate
// form), bad run-time values (errors that name the rule, nothing written, the
// session usable after) and bad attributes. Its values against onnxruntime:
// testdata/oracle/gqa (tools/oracle/cases_gqa.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "runtime/element.h"
#include "runtime/op.h"
#include "tests/ops/random_values.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

constexpr int64_t B = 3, Hq = 4, Hkv = 2, D = 16, M = 24, kRotaryRows = 32;

struct Gqa {
  std::unique_ptr<Session> session;
  Tensor cos, sin;
};

// query/key/value (B, S, .) with S dynamic, past (B, Hkv, P, D) with P
// dynamic, rotary on (cos/sin as initializers), total_sequence_length a scalar.
Gqa MakeGqa(int64_t local_window = -1, int64_t rotary_rows = kRotaryRows) {
  ModelBuilder m(21);
  m.Opset(kMsDomain, 1);
  m.Input("query", DType::kFloat, {B, -1, Hq * D}).Input("key", DType::kFloat, {B, -1, Hkv * D});
  m.Input("value", DType::kFloat, {B, -1, Hkv * D});
  m.Input("past_key", DType::kFloat, {B, Hkv, -1, D}).Input("past_value", DType::kFloat, {B, Hkv, -1, D});
  m.Input("seqlens_k", DType::kInt32, {B}).Input("total_sequence_length", DType::kInt32, {});
  std::vector<float> c(size_t(rotary_rows * D / 2)), s(c.size());
  for (int64_t p = 0; p < rotary_rows; ++p)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double angle = double(p) / std::pow(10000.0, double(i) / double(D / 2));
      c[size_t(p * D / 2 + i)] = float(std::cos(angle)), s[size_t(p * D / 2 + i)] = float(std::sin(angle));
    }
  Gqa g;
  g.cos = Tensor::FromVector(c, {rotary_rows, D / 2});
  g.sin = Tensor::FromVector(s, {rotary_rows, D / 2});
  m.Initializer("cos", g.cos).Initializer("sin", g.sin);
  m.Output("output", DType::kFloat, {B, -1, Hq * D});
  m.Output("present_key", DType::kFloat, {B, Hkv, -1, D}).Output("present_value", DType::kFloat, {B, Hkv, -1, D});
  onnx::NodeProto& n = m.Node("GroupQueryAttention",
                              {"query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
                               "cos", "sin"},
                              {"output", "present_key", "present_value"}, kMsDomain);
  SetAttr(n, "num_heads", Hq);
  SetAttr(n, "kv_num_heads", Hkv);
  SetAttr(n, "do_rotary", int64_t(1));
  SetAttr(n, "local_window_size", local_window);
  absl::StatusOr<std::unique_ptr<Session>> s_or = m.Build();
  EXPECT_TRUE(s_or.ok()) << s_or.status();
  g.session = std::move(*s_or);
  return g;
}

std::vector<float> Floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.size()));
  std::memcpy(v.data(), t.raw(), t.bytes());
  return v;
}

struct Step {
  Tensor q, k, v;
  std::vector<int32_t> seqlens;
  int32_t total;
};

Step MakeStep(int64_t S, std::vector<int32_t> seqlens, int32_t total, std::mt19937& rng) {
  return {RandomNormalTensor(DType::kFloat, B * S * Hq * D, rng).Reshaped({B, S, Hq * D}),
          RandomNormalTensor(DType::kFloat, B * S * Hkv * D, rng).Reshaped({B, S, Hkv * D}),
          RandomNormalTensor(DType::kFloat, B * S * Hkv * D, rng).Reshaped({B, S, Hkv * D}), std::move(seqlens), total};
}

std::vector<NamedTensor> Feeds(const Step& s, const Tensor& past_k, const Tensor& past_v) {
  return {{"query", s.q},
          {"key", s.k},
          {"value", s.v},
          {"past_key", past_k},
          {"past_value", past_v},
          {"seqlens_k", Tensor::FromVector(s.seqlens, {B})},
          {"total_sequence_length", Tensor::FromVector<int32_t>({s.total}, {})}};
}

TEST(GroupQueryAttention, SharedBufferWritesOnlyTheNewRowsAndMatchesTheSeparateForm) {
  for (int64_t window : {int64_t(-1), int64_t(3)}) {
    SCOPED_TRACE("local_window_size " + std::to_string(window));
    Gqa g = MakeGqa(window);
    std::mt19937 rng(5);
    // The cache starts as garbage: no row of it may be read before written.
    std::vector<float> cache_k = Floats(RandomNormalTensor(DType::kFloat, B * Hkv * M * D, rng));
    std::vector<float> cache_v = Floats(RandomNormalTensor(DType::kFloat, B * Hkv * M * D, rng));
    Tensor past_k = Tensor::Borrow(DType::kFloat, {B, Hkv, M, D}, cache_k.data());
    Tensor past_v = Tensor::Borrow(DType::kFloat, {B, Hkv, M, D}, cache_v.data());
    // A right-padded prompt (rows of 5, 2 and 4 tokens), then ragged decode steps.
    std::vector<Step> steps;
    steps.push_back(MakeStep(5, {4, 1, 3}, 5, rng));
    for (int32_t t = 0; t < 4; ++t) steps.push_back(MakeStep(1, {5 + t, 2 + 3 * t, 4 + t}, 6 + 3 * t, rng));
    for (const Step& s : steps) {
      const int64_t S = s.q.shape()[1];
      const std::vector<float> before_k = cache_k, before_v = cache_v;
      // The separate form: past a copy of the buffer, present made by the session.
      Tensor sep_past_k = *past_k.Clone(), sep_past_v = *past_v.Clone();
      std::vector<Tensor> separate;
      ASSERT_TRUE(g.session->Run(Feeds(s, sep_past_k, sep_past_v), &separate).ok());
      ASSERT_EQ(separate[1].shape(), (Shape{B, Hkv, M, D}));
      // The shared form: present_key/present_value bound to the past's memory.
      std::vector<float> y(size_t(B * S * Hq * D), -99.f);
      std::vector<Tensor> shared = {Tensor::Borrow(DType::kFloat, {B, S, Hq * D}, y.data()), past_k, past_v};
      ASSERT_TRUE(g.session->Run(Feeds(s, past_k, past_v), &shared).ok());
      EXPECT_EQ(shared[1].raw(), static_cast<void*>(cache_k.data()));
      EXPECT_EQ(Floats(separate[0]), y);  // the same kernel over the same keys
      const std::vector<float> sep_k = Floats(separate[1]), sep_v = Floats(separate[2]);
      for (int64_t b = 0; b < B; ++b) {
        const bool prompt = S > 1;
        const int64_t first_new = prompt ? 0 : s.seqlens[size_t(b)] + 1 - S, end_new = first_new + S;
        for (int64_t h = 0; h < Hkv; ++h)
          for (int64_t j = 0; j < M; ++j)
            for (int64_t d = 0; d < D; ++d) {
              const size_t at = size_t(((b * Hkv + h) * M + j) * D + d);
              if (j >= first_new && j < end_new) {  // a new row: the separate present's
                ASSERT_EQ(cache_k[at], sep_k[at]) << "row " << b << " key " << j;
                ASSERT_EQ(cache_v[at], sep_v[at]) << "row " << b << " key " << j;
              } else {  // every other row untouched
                ASSERT_EQ(cache_k[at], before_k[at]) << "row " << b << " key " << j;
                ASSERT_EQ(cache_v[at], before_v[at]) << "row " << b << " key " << j;
                // The separate present: the past below the new rows, zeros above.
                ASSERT_EQ(sep_k[at], j < first_new ? before_k[at] : 0.f) << "row " << b << " key " << j;
              }
            }
      }
    }
  }
}

TEST(GroupQueryAttention, BadValuesWriteNothingAndLeaveTheSessionUsable) {
  Gqa g = MakeGqa(-1, /*rotary_rows=*/12);
  std::mt19937 rng(9);
  std::vector<float> cache_k = Floats(RandomNormalTensor(DType::kFloat, B * Hkv * M * D, rng)), cache_v = cache_k;
  const std::vector<float> before = cache_k;
  Tensor past_k = Tensor::Borrow(DType::kFloat, {B, Hkv, M, D}, cache_k.data());
  Tensor past_v = Tensor::Borrow(DType::kFloat, {B, Hkv, M, D}, cache_v.data());
  std::vector<float> y(size_t(B * Hq * D), -99.f);
  auto run = [&](const Step& s) {
    std::vector<Tensor> out = {Tensor::Borrow(DType::kFloat, {B, 1, Hq * D}, y.data()), past_k, past_v};
    return g.session->Run(Feeds(s, past_k, past_v), &out);
  };
  auto expect_error = [&](std::vector<int32_t> seqlens, int32_t total, const std::string& message) {
    const absl::Status st = run(MakeStep(1, std::move(seqlens), total, rng));
    EXPECT_THAT(std::string(st.message()), HasSubstr(message));
    EXPECT_THAT(std::string(st.message()), HasSubstr("GroupQueryAttention"));
    EXPECT_EQ(cache_k, before);  // nothing written
    EXPECT_EQ(cache_v, before);
    EXPECT_EQ(y[0], -99.f);
  };
  expect_error({3, -1, 2}, 5, "seqlens_k[1] = -1 must be >= 0");
  expect_error({3, 30, 2}, 5, "seqlens_k[1] = 30 gives 31 keys, more than total_sequence_length 5");
  // total_sequence_length and the rotary table: position 13 has no row of 12.
  expect_error({3, 13, 2}, 14, "position 13 of row 1 (seqlens_k 13) is outside the rotary table's 12 rows");
  // A past buffer too short for the rows seqlens_k says it holds (not shared).
  {
    Tensor short_k = Tensor::Zeros(DType::kFloat, {B, Hkv, 4, D}), short_v = *short_k.Clone();
    const absl::StatusOr<std::vector<Tensor>> st = g.session->Run(Feeds(MakeStep(1, {6, 1, 1}, 7, rng), short_k, short_v));
    EXPECT_THAT(std::string(st.status().message()), HasSubstr("seqlens_k[0] = 6 needs 6 past rows, more than the past buffer's 4"));
  }
  // A decode step whose seqlens_k leaves fewer keys than its new tokens.
  {
    Tensor short_k = Tensor::Zeros(DType::kFloat, {B, Hkv, 8, D}), short_v = *short_k.Clone();
    Step s = MakeStep(2, {1, 0, 1}, 3, rng);
    std::vector<Tensor> out;
    const absl::Status st = g.session->Run(Feeds(s, short_k, short_v), &out);
    EXPECT_THAT(std::string(st.message()), HasSubstr("needs batch 1"));  // a continued prompt
  }
  // A shared buffer too short for the step: total_sequence_length 30 makes present 30 rows long.
  {
    const absl::Status st = run(MakeStep(1, {3, 5, 0}, 30, rng));
    EXPECT_FALSE(st.ok());
    EXPECT_THAT(std::string(st.message()),
                HasSubstr("'present_key': the caller's buffer is float[3,2,24,16] but the result is float[3,2,30,16]"));
    EXPECT_EQ(cache_k, before);
  }
  // The same session runs a good step after.
  ASSERT_TRUE(run(MakeStep(1, {3, 5, 0}, 6, rng)).ok());
  EXPECT_NE(y[0], -99.f);
  EXPECT_NE(cache_k, before);
}

TEST(GroupQueryAttention, TotalSequenceLengthAsScalarOrOneElement) {
  // (1,) and a scalar give the same answer (the oracle cases give (1,)).
  std::mt19937 rng(3);
  Tensor q = RandomNormalTensor(DType::kFloat, 2 * 3 * 24, rng).Reshaped({2, 3, 24});
  std::vector<std::vector<float>> results;
  for (bool scalar : {true, false}) {
    ModelBuilder m(21);
    m.Opset(kMsDomain, 1);
    m.Input("qkv", DType::kFloat, {2, 3, 24}).Input("seqlens_k", DType::kInt32, {2, 1});
    m.Input("total", DType::kInt32, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{1});
    m.Output("y", DType::kFloat, {2, 3, 8});
    onnx::NodeProto& n = m.Node("GroupQueryAttention", {"qkv", "", "", "", "", "seqlens_k", "total"}, {"y"}, kMsDomain);
    SetAttr(n, "num_heads", int64_t(1));
    SetAttr(n, "kv_num_heads", int64_t(1));
    std::unique_ptr<Session> s = *m.Build();
    absl::StatusOr<std::vector<Tensor>> out =
        s->Run({{"qkv", q}, {"seqlens_k", Tensor::FromVector<int32_t>({2, 1}, {2, 1})},
                {"total", scalar ? Tensor::FromVector<int32_t>({3}, {}) : Tensor::FromVector<int32_t>({3}, {1})}});
    ASSERT_TRUE(out.ok()) << out.status();
    results.push_back(Floats((*out)[0]));
  }
  EXPECT_EQ(results[0], results[1]);
  // Query 0 of each row sees key 0 alone: its output is V's row 0.
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t d = 0; d < 8; ++d)
      EXPECT_FLOAT_EQ(results[0][size_t(b * 3 * 8 + d)], static_cast<const float*>(q.raw())[b * 3 * 24 + 16 + d]);
}

TEST(GroupQueryAttention, AnEmptyBatchWithRotaryAndPositionIdsRunsAndReadsNothing) {
  // A first prompt of batch 0 with position_ids (0, S): there is no position_ids[0, 0] to read.
  ModelBuilder m(21);
  m.Opset(kMsDomain, 1);
  m.Input("q", DType::kFloat, {-1, 2, 16}).Input("seqlens_k", DType::kInt32, {-1}).Input("total", DType::kInt32, {1});
  m.Input("cos", DType::kFloat, {8, 2}).Input("sin", DType::kFloat, {8, 2}).Input("pos", DType::kInt64, {-1, 2});
  m.Output("y", DType::kFloat, {-1, 2, 8});
  onnx::NodeProto& n = m.Node("GroupQueryAttention", {"q", "", "", "", "", "seqlens_k", "total", "cos", "sin", "pos"},
                              {"y"}, kMsDomain);
  SetAttr(n, "num_heads", int64_t(2));
  SetAttr(n, "kv_num_heads", int64_t(1));
  SetAttr(n, "do_rotary", int64_t(1));
  std::unique_ptr<Session> s = *m.Build();
  absl::StatusOr<std::vector<Tensor>> out =
      s->Run({{"q", Tensor::Zeros(DType::kFloat, {0, 2, 16})}, {"seqlens_k", Tensor::Zeros(DType::kInt32, {0})},
              {"total", Tensor::FromVector<int32_t>({2}, {1})}, {"cos", Tensor::Zeros(DType::kFloat, {8, 2})},
              {"sin", Tensor::Zeros(DType::kFloat, {8, 2})}, {"pos", Tensor::Zeros(DType::kInt64, {0, 2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, 2, 8}));
}

TEST(GroupQueryAttention, BadAttributesAreRefusedAtCreation) {
  auto build = [](int64_t heads, int64_t kv_heads, const std::function<void(onnx::NodeProto&)>& more) {
    ModelBuilder m(21);
    m.Opset(kMsDomain, 1);
    // total_sequence_length a constant: the shapes are checked at creation.
    m.Input("qkv", DType::kFloat, {1, 2, 64}).Input("seqlens_k", DType::kInt32, {1});
    m.Initializer("total", Tensor::FromVector<int32_t>({2}, {}));
    m.Output("y", DType::kFloat, {1, 2, 32});
    onnx::NodeProto& n = m.Node("GroupQueryAttention", {"qkv", "", "", "", "", "seqlens_k", "total"}, {"y"}, kMsDomain);
    SetAttr(n, "num_heads", heads);
    SetAttr(n, "kv_num_heads", kv_heads);
    m.Initializer("cos", Tensor::Zeros(DType::kFloat, {4, 9}));
    more(n);
    absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
    return s.ok() ? std::string() : std::string(s.status().message());
  };
  const auto none = [](onnx::NodeProto&) {};
  EXPECT_THAT(build(6, 4, none), HasSubstr("kv_num_heads 4 must divide num_heads 6"));
  EXPECT_THAT(build(0, 1, none), HasSubstr("num_heads 0 and kv_num_heads 1 must be > 0"));
  EXPECT_THAT(build(2, 1, [](onnx::NodeProto& n) { SetAttr(n, "local_window_size", int64_t(0)); }),
              HasSubstr("local_window_size 0 must be -1 (no window) or > 0"));
  EXPECT_THAT(build(2, 1, [](onnx::NodeProto& n) { SetAttr(n, "qk_output", int64_t(1)); }),
              HasSubstr("not implemented"));
  EXPECT_THAT(build(2, 1, [](onnx::NodeProto& n) { SetAttr(n, "do_rotary", int64_t(1)); }),
              HasSubstr("do_rotary=1 needs cos_cache and sin_cache"));
  // cos_cache's width is rotary_dim / 2: 9 > head_size 16 / 2.
  EXPECT_THAT(build(2, 1,
                    [](onnx::NodeProto& n) {
                      SetAttr(n, "do_rotary", int64_t(1));
                      n.add_input("cos");
                      n.add_input("cos");
                    }),
              HasSubstr("with 0 < rotary_dim <= head_size 16"));
  EXPECT_THAT(build(2, 1, [](onnx::NodeProto& n) { n.set_input(1, "qkv"); }), HasSubstr("key and value must both"));
  EXPECT_EQ(build(2, 1, none), "");
}

TEST(GroupQueryAttention, AnotherReaderOfTheCacheSeesItBeforeTheBoundPresentOverwritesIt) {
  // present_key is bound over past_key's buffer, and Flatten(past_key) is read too: it must see
  // the cache as it was given: the session grants only present_value's alias, and the op then runs
  // both halves in the separate form (present_key's past copied aside).
  ModelBuilder m(21);
  m.Opset(kMsDomain, 1);
  m.Input("q", DType::kFloat, {1, 1, 4}).Input("k", DType::kFloat, {1, 1, 4}).Input("v", DType::kFloat, {1, 1, 4});
  m.Input("pk", DType::kFloat, {1, 1, 3, 4}).Input("pv", DType::kFloat, {1, 1, 3, 4});
  m.Input("seqlens_k", DType::kInt32, {1}).Input("total", DType::kInt32, {1});
  m.Output("y", DType::kFloat, {1, 1, 4}).Output("present_key", DType::kFloat, {1, 1, 3, 4});
  m.Output("present_value", DType::kFloat, {1, 1, 3, 4}).Output("flat", DType::kFloat, {1, 12});
  onnx::NodeProto& n = m.Node("GroupQueryAttention", {"q", "k", "v", "pk", "pv", "seqlens_k", "total"},
                              {"y", "present_key", "present_value"}, kMsDomain);
  SetAttr(n, "num_heads", int64_t(1));
  SetAttr(n, "kv_num_heads", int64_t(1));
  m.Node("Flatten", {"pk"}, {"flat"});
  std::unique_ptr<Session> s = *m.Build();
  float pk[12] = {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}, pv[12] = {0};
  const std::vector<float> given(pk, pk + 12);
  std::vector<Tensor> outputs = {Tensor(), Tensor::Borrow(DType::kFloat, {1, 1, 3, 4}, pk),
                                 Tensor::Borrow(DType::kFloat, {1, 1, 3, 4}, pv), Tensor()};
  absl::Status st = s->Run({{"q", Tensor::FromVector<float>({1, 0, 0, 0}, {1, 1, 4})},
                            {"k", Tensor::FromVector<float>({9, 9, 9, 9}, {1, 1, 4})},
                            {"v", Tensor::FromVector<float>({1, 1, 1, 1}, {1, 1, 4})},
                            {"pk", Tensor::Borrow(DType::kFloat, {1, 1, 3, 4}, pk)},
                            {"pv", Tensor::Borrow(DType::kFloat, {1, 1, 3, 4}, pv)},
                            {"seqlens_k", Tensor::FromVector<int32_t>({2}, {1})},
                            {"total", Tensor::FromVector<int32_t>({3}, {1})}},
                           &outputs);
  ASSERT_TRUE(st.ok()) << st;
  const float* flat = outputs[3].data<float>();
  EXPECT_EQ(std::vector<float>(flat, flat + 12), given);
  EXPECT_EQ(std::vector<float>(pk, pk + 12), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9}));
}

}  // namespace
}  // namespace onnx_mini
