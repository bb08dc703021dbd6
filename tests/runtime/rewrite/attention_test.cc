// runtime/rewrite/attention.cc: scaled dot-product attention, and the
// rewrites over the fused node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/loader.h"
#include "runtime/registry.h"
#include "runtime/rewrite/rewrite.h"

#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

// Scaled dot-product attention as older exporters write it: Q [B, H, S, D],
// K and V [B, KV, T, D|Dv] repeated to H heads (Unsqueeze/Expand/Reshape),
// scores scaled and masked, Softmax, MatMul with V.
struct SdpaForm {
  int64_t kv_heads = 2;   // of 4 query heads
  bool repeat = true;     // the GQA repeat (needs kv_heads < 4 to matter)
  int scale = 1;          // 0 none, 1 Div(s, c), 2 Mul(s, c), 3 Mul(c, s), 4 Div(s, input c)
  int mask = 1;           // 0 none, 1 Where(bool, s, value), 2 Add(s, float), 3 Add(float, s)
  int64_t softmax_axis = -1;
  int64_t opset = 17;
  double mask_value = -3.4028234663852886e38;  // float's lowest, as exporters write it
  bool q_heads_known = true;
  bool kv_heads_known = true;
  bool tiled = false;      // the repeat as a tile (h mod KV): Unsqueeze at 1, Expand [1, G, 1, 1, 1]
  bool scores_output = false;  // the unscaled scores also a graph output
};
constexpr int64_t kSdpaB = 2, kSdpaH = 4, kSdpaD = 8, kSdpaDv = 6;

ModelBuilder SdpaModel(const SdpaForm& f, DType dt) {
  ModelBuilder m(f.opset);
  const int64_t kv = f.kv_heads, g = kSdpaH / kv;
  m.Input("q", dt, {kSdpaB, f.q_heads_known ? kSdpaH : -1, -1, kSdpaD});
  m.Input("k", dt, {kSdpaB, f.kv_heads_known ? kv : -1, -1, kSdpaD});
  m.Input("v", dt, {kSdpaB, f.kv_heads_known ? kv : -1, -1, kSdpaDv});
  if (f.mask == 1) m.Input("mask", DType::kBool, {1, 1, -1, -1});
  if (f.mask >= 2) m.Input("mask", dt, {kSdpaB, 1, -1, -1});
  if (f.scale == 4) m.Input("c", dt, {});
  m.Output("y", dt, {kSdpaB, kSdpaH, -1, kSdpaDv});
  if (f.scores_output) m.Output("scores", dt, {kSdpaB, kSdpaH, -1, -1});
  const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  std::string k = "k", v = "v";
  if (f.repeat) {
    m.Initializer("axis", i64({f.tiled ? 1 : 2}));
    m.Initializer("expand", f.tiled ? i64({1, g, 1, 1, 1}) : i64({1, 1, g, 1, 1}));
    for (const auto& [in, d] : {std::pair{std::string("k"), kSdpaD}, {std::string("v"), kSdpaDv}}) {
      m.Initializer(in + "_shape", i64({0, kSdpaH, -1, d}));
      if (f.opset >= 13) m.Node("Unsqueeze", {in, "axis"}, {in + "5"});
      else SetAttr(m.Node("Unsqueeze", {in}, {in + "5"}), "axes", std::vector<int64_t>{f.tiled ? 1 : 2});
      m.Node("Expand", {in + "5", "expand"}, {in + "x"});
      m.Node("Reshape", {in + "x", in + "_shape"}, {in + "r"});
    }
    k = "kr";
    v = "vr";
  }
  SetAttr(m.Node("Transpose", {k}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {"q", "kt"}, {"scores"});
  std::string s = "scores";
  if (f.scale != 0) {
    Tensor c = Tensor::Zeros(dt, {});
    SetDouble(c, 0, f.scale == 1 ? std::sqrt(double(kSdpaD)) : 1 / std::sqrt(double(kSdpaD)));
    m.Initializer("c_const", c);
    const std::string cn = f.scale == 4 ? "c" : "c_const";
    if (f.scale == 1 || f.scale == 4) m.Node("Div", {s, cn}, {"scaled"});
    else if (f.scale == 2) m.Node("Mul", {s, cn}, {"scaled"});
    else m.Node("Mul", {cn, s}, {"scaled"});
    s = "scaled";
  }
  if (f.mask == 1) {
    Tensor value = Tensor::Zeros(dt, {});
    SetDouble(value, 0, f.mask_value);
    m.Initializer("mask_value", value);
    m.Node("Where", {"mask", s, "mask_value"}, {"masked"});
    s = "masked";
  } else if (f.mask >= 2) {
    m.Node("Add", f.mask == 2 ? std::vector<std::string>{s, "mask"} : std::vector<std::string>{"mask", s},
           {"masked"});
    s = "masked";
  }
  SetAttr(m.Node("Softmax", {s}, {"probs"}), "axis", f.softmax_axis);
  m.Node("MatMul", {"probs", v}, {"y"});
  return m;
}

// Inputs of S queries over T keys, the last S of them the queries' own (a
// bottom-right causal mask with holes: key 0 always visible, so no row is
// fully masked).
std::vector<NamedTensor> SdpaInputs(const SdpaForm& f, DType dt, int64_t s, int64_t t, uint32_t seed) {
  std::vector<NamedTensor> in = {{"q", RandomUniform(dt, {kSdpaB, kSdpaH, s, kSdpaD}, seed)},
                                 {"k", RandomUniform(dt, {kSdpaB, f.kv_heads, t, kSdpaD}, seed + 1)},
                                 {"v", RandomUniform(dt, {kSdpaB, f.kv_heads, t, kSdpaDv}, seed + 2)}};
  const auto visible = [&](int64_t b, int64_t i, int64_t j) {
    return j == 0 || (j <= i + t - s && (b + i * 3 + j * 5) % 4 != 0);
  };
  if (f.mask == 1) {
    std::vector<bool> mask;
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < t; ++j) mask.push_back(visible(0, i, j));
    in.push_back({"mask", Tensor::FromVector(mask, {1, 1, s, t})});
  } else if (f.mask >= 2) {
    // -inf where hidden, small negative biases elsewhere.
    Tensor mask = RandomUniform(dt, {kSdpaB, 1, s, t}, seed + 3, -2, 0);
    for (int64_t b = 0; b < kSdpaB; ++b)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < t; ++j)
          if (!visible(b, i, j)) SetDouble(mask, (b * s + i) * t + j, -INFINITY);
    in.push_back({"mask", mask});
  }
  if (f.scale == 4) {
    Tensor c = Tensor::Zeros(dt, {});
    SetDouble(c, 0, std::sqrt(double(kSdpaD)));
    in.push_back({"c", c});
  }
  return in;
}

TEST(Rewrite, DecomposedAttentionBecomesAttention) {
  for (DType dt : {DType::kFloat, DType::kFloat16})
    for (int64_t kv : {4, 2, 1})
      for (int scale : {0, 1, 2, 3})
        for (int mask : {0, 1, 2, 3}) {
          // Before opset 13: Unsqueeze's axes an attribute, Softmax's axis 3
          // over the last axis alone.
          for (int64_t opset : {11, 17}) {
            if ((scale + mask + opset) % 2 == 0) continue;
            SdpaForm f;
            f.kv_heads = kv;
            f.repeat = kv != 4;
            f.scale = scale;
            f.mask = mask;
            f.opset = opset;
            f.softmax_axis = opset == 11 ? 3 : -1;
            // float16 has no -1e30: its Where masks with -inf.
            if (dt == DType::kFloat16) f.mask_value = -INFINITY;
            for (auto [s, t] : {std::pair<int64_t, int64_t>{1, 1}, {1, 9}, {5, 5}, {3, 70}}) {
              const std::string what = absl::StrCat(LowerName(dt), " kv ", kv, " scale ", scale, " mask ", mask,
                                                    " opset ", opset, " S ", s, " T ", t);
              const std::vector<std::string> ops =
                  RunBothWays(SdpaModel(f, dt), SdpaInputs(f, dt, s, t, uint32_t(s * 100 + t)),
                              dt == DType::kFloat ? 1e-5 : 4e-3);
              EXPECT_THAT(ops, ::testing::ElementsAre("Attention")) << what;
            }
          }
        }
}

// Where the repeat is not the GQA repeat, or Q's heads are not known to be
// the repeated count with one KV head, Attention takes the repeated K and V.
TEST(Rewrite, AttentionTakesTheRepeatedKAndVWhenTheRepeatIsNotGqa) {
  const std::vector<std::string> kept = {"Unsqueeze", "Expand", "Reshape", "Unsqueeze",
                                         "Expand",    "Reshape", "Attention"};
  SdpaForm tiled;
  tiled.tiled = true;
  EXPECT_THAT(RunBothWays(SdpaModel(tiled, DType::kFloat), SdpaInputs(tiled, DType::kFloat, 3, 7, 1), 1e-5),
              ::testing::ElementsAreArray(kept));
  // One KV head and Q's heads unknown: a Q of one head at run time
  // broadcasts in the fused op as in the pattern.
  SdpaForm mqa;
  mqa.kv_heads = 1;
  mqa.q_heads_known = false;
  EXPECT_THAT(RunBothWays(SdpaModel(mqa, DType::kFloat), SdpaInputs(mqa, DType::kFloat, 3, 7, 2), 1e-5),
              ::testing::ElementsAre("Attention"));
  // K's head count not known: nothing says the Reshape to 4 heads is the
  // repeat of 2.
  SdpaForm unknown_kv;
  unknown_kv.kv_heads_known = false;
  EXPECT_THAT(RunBothWays(SdpaModel(unknown_kv, DType::kFloat), SdpaInputs(unknown_kv, DType::kFloat, 2, 6, 5),
                          1e-5),
              ::testing::ElementsAreArray(kept));
  SdpaForm gqa;
  gqa.q_heads_known = false;
  EXPECT_THAT(RunBothWays(SdpaModel(gqa, DType::kFloat), SdpaInputs(gqa, DType::kFloat, 3, 7, 3), 1e-5),
              ::testing::ElementsAre("Attention"));
}

// As a decoder writes it: Q and K split into heads by Reshape and Transpose,
// K and V after the cache by Concat, the mask built from positions. Q's head
// count and K's are read through those ops.
TEST(Rewrite, DecoderAttentionReadsHeadsThroughReshapeTransposeAndConcat) {
  constexpr int64_t kHeads = 4, kKv = 2, kDim = 8;
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {1, -1, 16});
  m.Input("positions", DType::kInt64, {1, -1});
  m.Input("past_k", DType::kFloat, {1, kKv, -1, kDim}).Input("past_v", DType::kFloat, {1, kKv, -1, kDim});
  m.Output("y", DType::kFloat, {1, -1, kHeads * kDim});
  m.Output("present_k", DType::kFloat, {1, kKv, -1, kDim}).Output("present_v", DType::kFloat, {1, kKv, -1, kDim});
  const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  m.Initializer("wq", RandomUniform(DType::kFloat, {16, kHeads * kDim}, 1, -0.5, 0.5));
  m.Initializer("wk", RandomUniform(DType::kFloat, {16, kKv * kDim}, 2, -0.5, 0.5));
  m.Initializer("wv", RandomUniform(DType::kFloat, {16, kKv * kDim}, 3));
  m.Initializer("q_split", i64({0, 0, kHeads, kDim})).Initializer("kv_split", i64({0, 0, kKv, kDim}));
  m.Initializer("merge", i64({0, 0, kHeads * kDim})).Initializer("rep_shape", i64({0, kHeads, -1, kDim}));
  m.Initializer("expand", i64({1, 1, kHeads / kKv, 1, 1})).Initializer("axis2", i64({2}));
  m.Initializer("axes13", i64({1, 3})).Initializer("c", Tensor::FromVector(std::vector<float>{0.25f}, {}));
  m.Initializer("lowest", Tensor::FromVector(std::vector<float>{-3.4028235e38f}, {}));
  m.Initializer("zero", Tensor::FromVector(std::vector<int64_t>{0}, {}));
  m.Initializer("one", Tensor::FromVector(std::vector<int64_t>{1}, {}));
  const std::vector<int64_t> to_heads = {0, 2, 1, 3};
  for (const auto& [w, shape, out] :
       {std::tuple{"wq", "q_split", "q"}, {"wk", "kv_split", "k"}, {"wv", "kv_split", "v"}}) {
    m.Node("MatMul", {"x", w}, {std::string(out) + "_p"});
    m.Node("Reshape", {std::string(out) + "_p", shape}, {std::string(out) + "_s"});
    SetAttr(m.Node("Transpose", {std::string(out) + "_s"}, {out}), "perm", to_heads);
  }
  SetAttr(m.Node("Concat", {"past_k", "k"}, {"present_k"}), "axis", int64_t{2});
  SetAttr(m.Node("Concat", {"past_v", "v"}, {"present_v"}), "axis", int64_t{2});
  for (const char* t : {"k", "v"}) {
    const std::string in = std::string("present_") + t, out = std::string(t) + "_rep";
    m.Node("Unsqueeze", {in, "axis2"}, {out + "5"});
    m.Node("Expand", {out + "5", "expand"}, {out + "x"});
    m.Node("Reshape", {out + "x", "rep_shape"}, {out});
  }
  // Key j is visible to the query at position p when j <= p.
  m.Node("Shape", {"present_k"}, {"kshape"});
  m.Node("Gather", {"kshape", "axis2"}, {"total1"});
  m.Node("Squeeze", {"total1", "zero_axis"}, {"total"});
  m.Initializer("zero_axis", i64({0}));
  m.Node("Range", {"zero", "total", "one"}, {"keys"});
  m.Node("Unsqueeze", {"positions", "axes13"}, {"queries"});
  m.Node("LessOrEqual", {"keys", "queries"}, {"mask"});
  SetAttr(m.Node("Transpose", {"k_rep"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {"q", "kt"}, {"scores"});
  m.Node("Mul", {"scores", "c"}, {"scaled"});
  m.Node("Where", {"mask", "scaled", "lowest"}, {"masked"});
  SetAttr(m.Node("Softmax", {"masked"}, {"probs"}), "axis", int64_t{-1});
  m.Node("MatMul", {"probs", "v_rep"}, {"attn"});
  SetAttr(m.Node("Transpose", {"attn"}, {"attn_t"}), "perm", to_heads);
  m.Node("Reshape", {"attn_t", "merge"}, {"y"});
  for (auto [s, past] : {std::pair<int64_t, int64_t>{5, 0}, {1, 6}, {3, 4}}) {
    std::vector<int64_t> positions;
    for (int64_t i = 0; i < s; ++i) positions.push_back(past + i);
    const std::vector<NamedTensor> in = {
        {"x", RandomUniform(DType::kFloat, {1, s, 16}, uint32_t(s))},
        {"positions", Tensor::FromVector(positions, {1, s})},
        {"past_k", RandomUniform(DType::kFloat, {1, kKv, past, kDim}, 7)},
        {"past_v", RandomUniform(DType::kFloat, {1, kKv, past, kDim}, 8)}};
    const std::vector<std::string> ops = RunBothWays(m, in, 1e-5);
    EXPECT_THAT(ops, ::testing::Contains("Attention")) << s << " after " << past;
    EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Expand"))) << s << " after " << past;
    EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Softmax"))) << s << " after " << past;
  }
}

TEST(Rewrite, AttentionNearMissesAreKept) {
  const auto as_written = [](const SdpaForm& f, const char* what) {
    const ModelBuilder m = SdpaModel(f, DType::kFloat);
    const std::vector<std::string> ops = RunBothWays(m, SdpaInputs(f, DType::kFloat, 3, 7, 4), 1e-6);
    EXPECT_EQ(ops.size(), size_t(m.graph().node_size())) << what;
    EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Attention"))) << what;
  };
  SdpaForm f;
  f.softmax_axis = 2;
  as_written(f, "softmax over the queries");
  f = SdpaForm();
  f.softmax_axis = 1;
  f.opset = 11;  // axis 1 before opset 13: over heads, queries and keys at once
  as_written(f, "softmax over axes 1..3");
  f = SdpaForm();
  f.scale = 4;
  as_written(f, "scale an input");
  f = SdpaForm();
  f.scores_output = true;
  as_written(f, "scores read elsewhere");
  f = SdpaForm();
  f.mask_value = -1e4;
  as_written(f, "masked scores of -1e4 keep some weight");
}

// Rows whose mask hides every key: the rewrite gives the graph's answer, NaN
// for a mask of -inf (Softmax of a row of -inf), the mean of V's rows for a
// finite Where fill (Softmax of a constant row), never Attention's 0.
TEST(Rewrite, AttentionFullyMaskedRowsAreThoseOfTheGraph) {
  for (int mask : {1, 2, 3})
    for (double fill : {-double(INFINITY), -3.4028234663852886e38, -1e30}) {
      if (mask != 1 && fill != -INFINITY) continue;
      for (int64_t kv : {4, 2}) {
        SdpaForm f;
        f.mask = mask;
        f.mask_value = fill;
        f.kv_heads = kv;
        f.repeat = kv != 4;
        const ModelBuilder m = SdpaModel(f, DType::kFloat);
        std::vector<NamedTensor> in = SdpaInputs(f, DType::kFloat, 2, 3, 5);
        // Row 1 hides every key (of batch 0 only, for the additive masks).
        if (mask == 1) {
          in[3].tensor = Tensor::FromVector(std::vector<bool>{true, false, true, false, false, false}, {1, 1, 2, 3});
        } else {
          for (int64_t j = 0; j < 3; ++j) SetDouble(in[3].tensor, 3 + j, -INFINITY);
        }
        const std::string what = absl::StrCat("mask ", mask, " fill ", fill, " kv ", kv);
        EXPECT_THAT(RunBothWays(m, in, 1e-5), ::testing::ElementsAre("Attention")) << what;
        auto s = m.Build(SessionOptions());
        ASSERT_TRUE(s.ok()) << s.status();
        auto y = (*s)->Run(in);
        ASSERT_TRUE(y.ok()) << y.status();
        const Tensor& v = in[2].tensor;
        for (int64_t b = 0; b < (mask == 1 ? kSdpaB : 1); ++b)
          for (int64_t h = 0; h < kSdpaH; ++h)
            for (int64_t d = 0; d < kSdpaDv; ++d) {
              const double got = GetDouble((*y)[0], ((b * kSdpaH + h) * 2 + 1) * kSdpaDv + d);
              if (std::isinf(fill)) {
                EXPECT_TRUE(std::isnan(got)) << what << ": " << got;
                continue;
              }
              double mean = 0;
              const int64_t g = h / (kSdpaH / kv);
              for (int64_t j = 0; j < 3; ++j) mean += GetDouble(v, ((b * kv + g) * 3 + j) * kSdpaDv + d) / 3;
              EXPECT_NEAR(got, mean, 1e-6) << what;
            }
      }
    }
}

// Q, K, V and the mask with every dim known only at run time: the shapes of
// one session change from run to run, with batches, heads and lengths of 1
// that MatMul, Where and Add broadcast against more. The fused op broadcasts
// them as the pattern does.
ModelBuilder DynamicSdpaModel(int mask, bool repeat, const std::string& name = "") {
  ModelBuilder m(17);
  m.Input("q", DType::kFloat, {-1, -1, -1, kSdpaD});
  m.Input("k", DType::kFloat, {-1, 2, -1, kSdpaD});
  m.Input("v", DType::kFloat, {-1, 2, -1, kSdpaDv});
  if (mask == 1) m.Input("mask", DType::kBool, {-1, -1, -1, -1});
  if (mask == 2) m.Input("mask", DType::kFloat, {-1, -1, -1, -1});
  m.Output("y", DType::kFloat, {-1, -1, -1, kSdpaDv});
  const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  std::string k = "k", v = "v";
  if (repeat) {
    m.Initializer("axis", i64({2})).Initializer("expand", i64({1, 1, 2, 1, 1}));
    for (const auto& [in, d] : {std::pair{std::string("k"), kSdpaD}, {std::string("v"), kSdpaDv}}) {
      m.Initializer(in + "_shape", i64({0, 4, -1, d}));
      m.Node("Unsqueeze", {in, "axis"}, {in + "5"});
      m.Node("Expand", {in + "5", "expand"}, {in + "x"});
      m.Node("Reshape", {in + "x", in + "_shape"}, {in + "r"});
    }
    k = "kr";
    v = "vr";
  }
  SetAttr(m.Node("Transpose", {k}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {"q", "kt"}, {"scores"});
  m.Initializer("c", Tensor::FromVector(std::vector<float>{std::sqrt(float(kSdpaD))}, {}));
  m.Node("Div", {"scores", "c"}, {"scaled"});
  std::string z = "scaled";
  if (mask == 1) {
    m.Initializer("lowest", Tensor::FromVector(std::vector<float>{-3.4028235e38f}, {}));
    m.Node("Where", {"mask", "scaled", "lowest"}, {"masked"});
    z = "masked";
  } else if (mask == 2) {
    m.Node("Add", {"scaled", "mask"}, {"masked"});
    z = "masked";
  }
  SetAttr(m.Node("Softmax", {z}, {"probs"}), "axis", int64_t{-1});
  onnx::NodeProto& out = m.Node("MatMul", {"probs", v}, {"y"});
  if (!name.empty()) out.set_name(name);
  return m;
}

// q [qb, qh, s, D], k and v [kb, 2, t, .] (4 heads after the repeat, or 2),
// a mask of `mask_shape` with some keys hidden (never a whole row).
std::vector<NamedTensor> DynamicSdpaInputs(int mask, Shape q, int64_t kb, int64_t t, Shape mask_shape,
                                           uint32_t seed) {
  std::vector<NamedTensor> in = {{"q", RandomUniform(DType::kFloat, q, seed)},
                                 {"k", RandomUniform(DType::kFloat, {kb, 2, t, kSdpaD}, seed + 1)},
                                 {"v", RandomUniform(DType::kFloat, {kb, 2, t, kSdpaDv}, seed + 2)}};
  if (mask == 0) return in;
  int64_t n = 1;
  for (int64_t d : mask_shape) n *= d;
  const int64_t last = mask_shape.back();
  if (mask == 1) {
    std::vector<bool> bits;
    for (int64_t i = 0; i < n; ++i) bits.push_back(i % last == 0 || (i * 7 + seed) % 3 != 0);
    in.push_back({"mask", Tensor::FromVector(bits, mask_shape)});
  } else {
    Tensor bias = RandomUniform(DType::kFloat, mask_shape, seed + 3, -2, 0);
    for (int64_t i = 0; i < n; ++i)
      if (i % last != 0 && (i * 7 + seed) % 3 == 0) SetDouble(bias, i, -INFINITY);
    in.push_back({"mask", bias});
  }
  return in;
}

TEST(Rewrite, AttentionBroadcastsAsThePatternDoesWithShapesThatChangePerRun) {
  for (int mask : {0, 1, 2})
    for (bool repeat : {true, false}) {
      const int64_t h = repeat ? 4 : 2;
      // (Q shape, K/V batch, T, mask shape): one session runs them all.
      const std::vector<std::tuple<Shape, int64_t, int64_t, Shape>> cases = {
          {{2, h, 3, kSdpaD}, 2, 5, {2, 1, 3, 5}},  // as exported
          {{1, h, 3, kSdpaD}, 2, 5, {1, 1, 3, 5}},  // a Q batch of 1 against K/V of 2
          {{2, h, 3, kSdpaD}, 1, 5, {2, h, 3, 5}},  // K/V batch 1 against Q of 2
          {{1, h, 3, kSdpaD}, 1, 4, {2, 1, 3, 4}},  // the mask wider than the scores
          {{2, 1, 3, kSdpaD}, 2, 6, {1, 1, 3, 6}},  // one Q head against K's heads
          {{1, 1, 1, kSdpaD}, 1, 5, {1, h, 4, 5}},  // one query row against the mask's four
          {{2, h, 1, kSdpaD}, 2, 1, {1, 1, 1, 7}},  // one key against the mask's seven (V below)
          {{2, h, 3, kSdpaD}, 2, 5, {1, 1, 1, 5}},  // one mask row for all
      };
      std::vector<std::vector<NamedTensor>> runs;
      uint32_t seed = 1;
      for (const auto& [q, kb, t, ms] : cases) {
        if (mask == 0 && (ms[0] > std::max(q[0], kb) || ms[2] > q[2] || ms[3] > t)) continue;
        runs.push_back(DynamicSdpaInputs(mask, q, kb, t, ms, seed += 10));
        if (t == 1 && ms.back() > 1) {  // V of the mask's length: K broadcasts along the keys
          runs.back()[2].tensor = RandomUniform(DType::kFloat, {kb, 2, ms.back(), kSdpaDv}, seed);
        }
      }
      const std::vector<std::string> ops = RunBothWaysMany(DynamicSdpaModel(mask, repeat), runs, 1e-5);
      EXPECT_THAT(ops, ::testing::ElementsAre("Attention")) << "mask " << mask << " repeat " << repeat;
    }
}

// Shapes the pattern refuses: the fused node refuses them too, naming the
// user's node (the pattern's last MatMul), not a made-up one.
TEST(Rewrite, AttentionErrorsNameTheUsersNode) {
  const ModelBuilder m = DynamicSdpaModel(1, true, "attn_out");
  auto s = m.Build(SessionOptions());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(OpTypes(**s), ::testing::ElementsAre("Attention"));
  EXPECT_EQ((*s)->graph().nodes[0].name, "attn_out");
  auto y = (*s)->Run(DynamicSdpaInputs(1, {2, 4, 3, kSdpaD}, 3, 5, {1, 1, 3, 5}, 1));  // batch 2 against 3
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(std::string(y.status().message()), ::testing::HasSubstr("'attn_out'"));
  EXPECT_THAT(std::string(y.status().message()), ::testing::Not(::testing::HasSubstr("/attention")));
  // Unnamed: the node is described by its output, the pattern's.
  ModelBuilder unnamed = DynamicSdpaModel(1, true);
  unnamed.graph().mutable_node(unnamed.graph().node_size() - 1)->clear_name();
  auto u = unnamed.Build(SessionOptions());
  ASSERT_TRUE(u.ok()) << u.status();
  y = (*u)->Run(DynamicSdpaInputs(1, {2, 4, 3, kSdpaD}, 3, 5, {1, 1, 3, 5}, 1));
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(std::string(y.status().message()), ::testing::HasSubstr("producing 'y'"));
  // The session stays usable.
  EXPECT_TRUE((*u)->Run(DynamicSdpaInputs(1, {2, 4, 3, kSdpaD}, 2, 5, {1, 1, 3, 5}, 1)).ok());
}

// A V' of rank 3 ([T, Dv] broadcast by MatMul) or K' and V' whose head
// counts are not known equal: the fused op could not take them as the
// pattern does, so the pattern is kept.
TEST(Rewrite, AttentionIsKeptWhereTheFusedOpWouldDiffer) {
  ModelBuilder m(17);
  m.Input("q", DType::kFloat, {2, 2, -1, kSdpaD}).Input("k", DType::kFloat, {2, 2, -1, kSdpaD});
  m.Input("v", DType::kFloat, {-1, kSdpaDv}).Output("y", DType::kFloat, {2, 2, -1, kSdpaDv});
  SetAttr(m.Node("Transpose", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {"q", "kt"}, {"scores"});
  SetAttr(m.Node("Softmax", {"scores"}, {"probs"}), "axis", int64_t{-1});
  m.Node("MatMul", {"probs", "v"}, {"y"});
  EXPECT_THAT(RunBothWays(m,
                          {{"q", RandomUniform(DType::kFloat, {2, 2, 3, kSdpaD}, 1)},
                           {"k", RandomUniform(DType::kFloat, {2, 2, 5, kSdpaD}, 2)},
                           {"v", RandomUniform(DType::kFloat, {5, kSdpaDv}, 3)}},
                          1e-6),
              ::testing::Not(::testing::Contains("Attention")));
  ModelBuilder h(17);
  h.Input("q", DType::kFloat, {2, 2, -1, kSdpaD}).Input("k", DType::kFloat, {2, -1, -1, kSdpaD});
  h.Input("v", DType::kFloat, {2, -1, -1, kSdpaDv}).Output("y", DType::kFloat, {2, 2, -1, kSdpaDv});
  SetAttr(h.Node("Transpose", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  h.Node("MatMul", {"q", "kt"}, {"scores"});
  SetAttr(h.Node("Softmax", {"scores"}, {"probs"}), "axis", int64_t{-1});
  h.Node("MatMul", {"probs", "v"}, {"y"});
  // K of one head, V of two: each query head h reads K's head 0 and V's head h.
  EXPECT_THAT(RunBothWays(h,
                          {{"q", RandomUniform(DType::kFloat, {2, 2, 3, kSdpaD}, 1)},
                           {"k", RandomUniform(DType::kFloat, {2, 1, 5, kSdpaD}, 2)},
                           {"v", RandomUniform(DType::kFloat, {2, 2, 5, kSdpaDv}, 3)}},
                          1e-6),
              ::testing::Not(::testing::Contains("Attention")));
}

// Q, K and V from one packed projection, as GPT-2 style exports write it:
// MatMul by [16, 3 * H * D], Reshape to [B, S, 3, H, D], Split in three on
// axis 2, Squeeze of that axis, Transpose to heads. The rules read shapes
// from the session's own inference of every op (the pass's list of ops
// before had neither Split nor Squeeze: the attention was kept). The fused
// node's output type is the pattern's.
TEST(Rewrite, AttentionHeadsReadThroughSplitAndSqueeze) {
  constexpr int64_t kHeads = 4, kDim = 8, kLen = 5;
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, kLen, 16});
  m.Output("y", DType::kFloat, {-1, -1, -1, -1});
  const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  m.Initializer("wqkv", RandomUniform(DType::kFloat, {16, 3 * kHeads * kDim}, 1, -0.5, 0.5));
  m.Initializer("packed", i64({0, 0, 3, kHeads, kDim})).Initializer("axis2", i64({2}));
  m.Initializer("c", Tensor::FromVector(std::vector<float>{std::sqrt(float(kDim))}, {}));
  m.Node("MatMul", {"x", "wqkv"}, {"qkv_p"});
  m.Node("Reshape", {"qkv_p", "packed"}, {"qkv"});
  SetAttr(m.Node("Split", {"qkv"}, {"q3", "k3", "v3"}), "axis", int64_t{2});
  for (const char* t : {"q", "k", "v"}) {
    m.Node("Squeeze", {std::string(t) + "3", "axis2"}, {std::string(t) + "_s"});
    SetAttr(m.Node("Transpose", {std::string(t) + "_s"}, {t}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  }
  SetAttr(m.Node("Transpose", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {"q", "kt"}, {"scores"});
  m.Node("Div", {"scores", "c"}, {"scaled"});
  SetAttr(m.Node("Softmax", {"scaled"}, {"probs"}), "axis", int64_t{-1});
  m.Node("MatMul", {"probs", "v"}, {"y"});
  const std::vector<std::string> ops = RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {2, kLen, 16}, 9)}}, 1e-5);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Attention"), 1);
  EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Softmax")));
  SessionOptions off;
  off.graph_rewrites = false;
  auto fused = m.Build(SessionOptions()), as_written = m.Build(off);
  ASSERT_TRUE(fused.ok()) << fused.status();
  ASSERT_TRUE(as_written.ok()) << as_written.status();
  EXPECT_EQ((*fused)->outputs()[0].type.ToString(), "float[2,4,5,8]");
  EXPECT_EQ((*fused)->outputs()[0].type.ToString(), (*as_written)->outputs()[0].type.ToString());
}

// A norm over the output of a fused attention: the rewrite pass knows the
// fused node's shape (its last dim is V's), so the norm is fused too.
TEST(Rewrite, ANormOverAFusedAttentionIsFused) {
  ModelBuilder m = DynamicSdpaModel(0, false);
  m.graph().mutable_output(0)->set_name("z");
  m.Initializer("w", RandomUniform(DType::kFloat, {kSdpaDv}, 5, 0.5, 1.5));
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {}));
  m.Initializer("eps", Tensor::FromVector(std::vector<float>{1e-5f}, {}));
  m.Node("Pow", {"y", "two"}, {"sq"});
  SetAttr(m.Node("ReduceMean", {"sq"}, {"mean"}), "axes", std::vector<int64_t>{-1});
  m.Node("Add", {"mean", "eps"}, {"var"});
  m.Node("Sqrt", {"var"}, {"std"});
  m.Node("Div", {"y", "std"}, {"normed"});
  m.Node("Mul", {"normed", "w"}, {"z"});
  const std::vector<std::string> ops = RunBothWays(m, DynamicSdpaInputs(0, {2, 2, 3, kSdpaD}, 2, 5, {}, 3), 1e-5);
  EXPECT_THAT(ops, ::testing::ElementsAre("Attention", "RMSNormalization"));
}

// ---- The KV cache's Concat taken into the fused attention ----

// A decoder's attention over its cache, as optimum's exports write it:
// present = Concat(past, new, axis 2) (graph outputs), then the repeat and
// the scores over present. Q [B, 4, S, D], new K/V [B, KV, S, D|Dv], past
// [B, KV, P, D|Dv], an additive mask [B, 1, S, P + S] (or Where with a
// finite fill).
struct CacheForm {
  int64_t kv_heads = 2;
  bool repeat = true;
  int64_t axis = 2;
  bool three = false;           // Concat(past, new, new)
  bool outputs = true;          // present_k / present_v graph outputs
  int reader = 0;               // 1: ReduceSum(present_k) an output too; 2: Q + ReduceMean(present_k)
  bool cast = false;            // the cache in float16, Cast to float after the Concat
  bool where = false;           // Where(mask, s, lowest) with a bool mask
  DType dtype = DType::kFloat;
};

ModelBuilder CacheModel(const CacheForm& f) {
  ModelBuilder m(17);
  const DType dt = f.dtype, ct = f.cast ? DType::kFloat16 : dt;
  const int64_t kv = f.kv_heads, g = kSdpaH / kv;
  m.Input("q", dt, {-1, kSdpaH, -1, kSdpaD});
  m.Input("k", ct, {-1, kv, -1, kSdpaD}).Input("v", ct, {-1, kv, -1, kSdpaDv});
  m.Input("past_k", ct, {-1, kv, -1, kSdpaD}).Input("past_v", ct, {-1, kv, -1, kSdpaDv});
  m.Input("mask", f.where ? DType::kBool : dt, {-1, 1, -1, -1});
  m.Output("y", dt, {-1, kSdpaH, -1, kSdpaDv});
  if (f.outputs) m.Output("present_k", ct, {-1, kv, -1, kSdpaD}).Output("present_v", ct, {-1, kv, -1, kSdpaDv});
  const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  for (const char* t : {"k", "v"}) {
    const std::string past = std::string("past_") + t, present = std::string("present_") + t;
    std::vector<std::string> parts = {past, t};
    if (f.three) parts.push_back(t);
    SetAttr(m.Node("Concat", parts, {present}), "axis", f.axis);
    if (f.cast) SetAttr(m.Node("Cast", {present}, {present + "_f"}), "to", int64_t(dt));
  }
  std::string k = f.cast ? "present_k_f" : "present_k", v = f.cast ? "present_v_f" : "present_v";
  if (f.repeat) {
    m.Initializer("axis2", i64({2})).Initializer("expand", i64({1, 1, g, 1, 1}));
    for (auto [in, d] : {std::pair{&k, kSdpaD}, {&v, kSdpaDv}}) {
      const std::string out = *in + "_rep";
      m.Initializer(out + "_shape", i64({0, kSdpaH, -1, d}));
      m.Node("Unsqueeze", {*in, "axis2"}, {out + "5"});
      m.Node("Expand", {out + "5", "expand"}, {out + "x"});
      m.Node("Reshape", {out + "x", out + "_shape"}, {out});
      *in = out;
    }
  }
  std::string mask = "mask", q = "q";
  if (f.reader == 1) {
    m.Output("sum_k", ct, {-1, kv, 1, kSdpaD});
    m.Node("ReduceSum", {"present_k", "axes_t"}, {"sum_k"});
    m.Initializer("axes_t", i64({2}));
  } else if (f.reader == 2) {
    // Q shifted by present's mean: present is read upstream of the
    // attention's own inputs.
    SetAttr(m.Node("ReduceMean", {"present_k"}, {"kmean"}), "axes", std::vector<int64_t>{1, 2, 3});
    m.Node("Add", {"q", "kmean"}, {"q2"});
    q = "q2";
  }
  SetAttr(m.Node("Transpose", {k}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {q, "kt"}, {"scores"});
  Tensor c = Tensor::Zeros(dt, {});
  SetDouble(c, 0, std::sqrt(double(kSdpaD)));
  m.Initializer("c", c);
  m.Node("Div", {"scores", "c"}, {"scaled"});
  if (f.where) {
    Tensor lowest = Tensor::Zeros(dt, {});
    SetDouble(lowest, 0, dt == DType::kFloat16 ? -INFINITY : -3.4028234663852886e38);
    m.Initializer("lowest", lowest);
    m.Node("Where", {mask, "scaled", "lowest"}, {"masked"});
  } else {
    m.Node("Add", {"scaled", mask}, {"masked"});
  }
  SetAttr(m.Node("Softmax", {"masked"}, {"probs"}), "axis", int64_t{-1});
  m.Node("MatMul", {"probs", v}, {"y"});
  return m;
}

// Batch B (Q's; K/V's `kb`), S new keys after P cached ones (`pv` the past
// values' length when it differs: the Concat of V then has its own
// split), the mask hiding key j > P + i of row i and, with `hide_row`,
// every key of query row 0.
std::vector<NamedTensor> CacheInputs(const CacheForm& f, int64_t b, int64_t kb, int64_t s, int64_t p, uint32_t seed,
                                     int64_t pv = -1, bool hide_row = false) {
  const DType ct = f.cast ? DType::kFloat16 : f.dtype;
  if (pv < 0) pv = p;
  const int64_t mult = f.three ? 2 : 1, t = p + s * mult;
  std::vector<NamedTensor> in = {{"q", RandomUniform(f.dtype, {b, kSdpaH, s, kSdpaD}, seed)},
                                 {"k", RandomUniform(ct, {kb, f.kv_heads, s, kSdpaD}, seed + 1)},
                                 {"v", RandomUniform(ct, {kb, f.kv_heads, p + s - pv, kSdpaDv}, seed + 2)},
                                 {"past_k", RandomUniform(ct, {kb, f.kv_heads, p, kSdpaD}, seed + 3)},
                                 {"past_v", RandomUniform(ct, {kb, f.kv_heads, pv, kSdpaDv}, seed + 4)}};
  if (f.three) in[2].tensor = RandomUniform(ct, {kb, f.kv_heads, s, kSdpaDv}, seed + 2);
  Tensor mask = f.where ? Tensor::Zeros(DType::kBool, {b, 1, s, t}) : RandomUniform(f.dtype, {b, 1, s, t}, seed + 5, -1, 0);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < t; ++j) {
        const bool visible = j <= p + i && !(hide_row && i == 0);
        if (f.where) mask.data<bool>()[(r * s + i) * t + j] = visible;
        else if (!visible) SetDouble(mask, (r * s + i) * t + j, -INFINITY);
      }
  in.push_back({"mask", mask});
  return in;
}

// Runs `m` with rewrites on and off over each input set: y within `tol`,
// every other output (the cache's) exactly equal; the rewritten session's
// nodes.
std::vector<Node> RunCacheBothWays(const ModelBuilder& m, const std::vector<std::vector<NamedTensor>>& runs,
                                          double tol, std::unique_ptr<Session>* keep = nullptr) {
  SessionOptions on, off;
  off.graph_rewrites = false;
  auto a = m.Build(on);
  auto b = m.Build(off);
  EXPECT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  if (!a.ok() || !b.ok()) return {};
  for (size_t run = 0; run < runs.size(); ++run) {
    auto ya = (*a)->Run(runs[run]);
    auto yb = (*b)->Run(runs[run]);
    EXPECT_TRUE(ya.ok() && yb.ok()) << "run " << run << ": " << ya.status() << " / " << yb.status();
    if (!ya.ok() || !yb.ok()) return {};
    for (size_t k = 0; k < ya->size(); ++k) {
      const Tensor &x = (*ya)[k], &y = (*yb)[k];
      if (x.shape() != y.shape() || x.dtype() != y.dtype()) {
        ADD_FAILURE() << "run " << run << " output " << k << ": " << ShapeToString(x.shape()) << " rewritten, "
                      << ShapeToString(y.shape()) << " as written";
        return {};
      }
      if (k > 0) {
        EXPECT_EQ(0, std::memcmp(x.raw(), y.raw(), x.bytes())) << "run " << run << " output " << k;
        continue;
      }
      int64_t bad = 0;
      for (int64_t i = 0; i < x.size() && bad < 5; ++i)
        if (!Agree(GetDouble(x, i), GetDouble(y, i), tol)) {
          ++bad;
          ADD_FAILURE() << "run " << run << " y[" << i << "]: " << GetDouble(x, i) << " rewritten, "
                        << GetDouble(y, i) << " as written";
        }
    }
  }
  std::vector<Node> nodes;
  for (const Node& n : (*a)->graph().nodes) nodes.push_back(n);
  if (keep) *keep = std::move(*a);
  return nodes;
}

TEST(Rewrite, AttentionTakesTheCacheConcatIn) {
  for (DType dt : {DType::kFloat, DType::kFloat16})
    for (int64_t kv : {4, 2, 1})
      for (bool where : {false, true})
        for (bool outputs : {true, false}) {
          CacheForm f;
          f.dtype = dt;
          f.kv_heads = kv;
          f.repeat = kv != 4;
          f.where = where;
          f.outputs = outputs;
          f.axis = kv == 2 ? -2 : 2;
          const std::string what = absl::StrCat(LowerName(dt), " kv ", kv, " where ", where, " outputs ", outputs);
          // One session: a prefill (no past), decode steps, batch 2, odd
          // lengths, no new key (Y empty, present = past); then shapes the kernel cannot read in place (K/V of
          // batch 1 against Q's 2, past K and V of different lengths): K'
          // and V' made first.
          std::vector<std::vector<NamedTensor>> runs = {
              CacheInputs(f, 1, 1, 5, 0, 1), CacheInputs(f, 1, 1, 1, 37, 2), CacheInputs(f, 2, 2, 3, 70, 3),
              CacheInputs(f, 2, 2, 1, 1, 4), CacheInputs(f, 2, 2, 0, 6, 9), CacheInputs(f, 2, 1, 2, 9, 5)};
          if (!where) runs.push_back(CacheInputs(f, 1, 1, 2, 6, 6, 5));
          std::unique_ptr<Session> s;
          const std::vector<Node> nodes =
              RunCacheBothWays(CacheModel(f), runs, dt == DType::kFloat ? 1e-5 : 4e-3, &s);
          ASSERT_EQ(nodes.size(), 1u) << what;
          EXPECT_EQ(nodes[0].op_type, "Attention") << what;
          EXPECT_EQ(nodes[0].inputs, (std::vector<std::string>{"q", "k", "v", "mask", "past_k", "past_v"})) << what;
          // A present nothing else reads is not written.
          const std::vector<std::string> written =
              outputs ? std::vector<std::string>{"y", "present_k", "present_v"} : std::vector<std::string>{"y"};
          EXPECT_EQ(nodes[0].outputs, written) << what;
        }
}

// Rows whose mask hides every key read V's mean (a finite Where fill) or
// are NaN (-inf), past rows included.
TEST(Rewrite, AttentionOverTheCacheGivesFullyMaskedRowsTheGraphsAnswer) {
  for (bool where : {false, true}) {
    CacheForm f;
    f.where = where;
    const std::vector<Node> nodes = RunCacheBothWays(
        CacheModel(f), {CacheInputs(f, 2, 2, 3, 11, 7, -1, true), CacheInputs(f, 1, 1, 1, 20, 8, -1, true)}, 1e-5);
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0].inputs.size(), 6u);
  }
}

// Where the rule keeps the Concat: another axis, three inputs, the cache
// cast after it (past of another type than Q), present read upstream of the
// attention's inputs (here Q: a cycle once the op would write present). A
// present also read by an unrelated node is the fused op's output, which
// that node then reads.
TEST(Rewrite, AttentionCacheConcatNearMisses) {
  const auto kept = [](const CacheForm& f, const std::vector<NamedTensor>& in, const char* what) {
    const std::vector<Node> nodes = RunCacheBothWays(CacheModel(f), {in}, 1e-5);
    int concats = 0, attention = 0;
    for (const Node& n : nodes) {
      concats += n.op_type == "Concat" && n.outputs[0].rfind("present_", 0) == 0;
      attention += n.op_type == "Attention";
      if (n.op_type == "Attention") {
        EXPECT_EQ(n.inputs.size(), 4u) << what;
      }
    }
    EXPECT_EQ(concats, 2) << what;
    EXPECT_EQ(attention, 1) << what;
  };
  CacheForm f;
  f.three = true;
  kept(f, CacheInputs(f, 2, 2, 2, 5, 1), "three inputs");
  f = CacheForm();
  f.cast = true;
  kept(f, CacheInputs(f, 2, 2, 2, 5, 2), "a float16 cache cast to float");
  f = CacheForm();
  f.reader = 2;
  kept(f, CacheInputs(f, 2, 2, 2, 5, 3), "present read into Q");
  // Concat on axis 1 (heads: past's 2 and the new 2 make K's 4): not the
  // cache; the attention fuses over the Concat's output.
  f = CacheForm();
  f.axis = 1;
  f.repeat = false;
  f.outputs = false;
  {
    const auto r = [](Shape shape, uint32_t seed) { return RandomUniform(DType::kFloat, shape, seed); };
    const std::vector<NamedTensor> in = {
        {"q", r({1, kSdpaH, 3, kSdpaD}, 1)},      {"k", r({1, 2, 3, kSdpaD}, 2)},
        {"v", r({1, 2, 3, kSdpaDv}, 3)},          {"past_k", r({1, 2, 3, kSdpaD}, 4)},
        {"past_v", r({1, 2, 3, kSdpaDv}, 5)},     {"mask", RandomUniform(DType::kFloat, {1, 1, 3, 3}, 6, -1, 0)}};
    const std::vector<Node> nodes = RunCacheBothWays(CacheModel(f), {in}, 1e-5);
    int attention = 0;
    for (const Node& n : nodes)
      if (n.op_type == "Attention") {
        ++attention;
        EXPECT_EQ(n.inputs.size(), 4u) << "axis 1";
      }
    EXPECT_EQ(attention, 1);
  }
  f = CacheForm();
  f.reader = 1;
  const std::vector<Node> nodes = RunCacheBothWays(CacheModel(f), {CacheInputs(f, 2, 2, 2, 5, 5)}, 1e-5);
  ASSERT_EQ(nodes.size(), 2u);
  const size_t at = nodes[0].op_type == "Attention" ? 0 : 1;
  EXPECT_EQ(nodes[at].op_type, "Attention");
  EXPECT_EQ(nodes[at].outputs, (std::vector<std::string>{"y", "present_k", "present_v"}));
  EXPECT_EQ(nodes[1 - at].op_type, "ReduceSum");
}

// Present bound by the caller over past's memory (a shared buffer: same
// start, longer): the fused op never writes present while past is read; the
// results are those of the graph as written.
TEST(Rewrite, AttentionOverTheCacheWithPresentBoundOverPast) {
  CacheForm f;
  std::unique_ptr<Session> s;
  const std::vector<NamedTensor> in = CacheInputs(f, 1, 1, 1, 9, 11);
  RunCacheBothWays(CacheModel(f), {in}, 1e-5, &s);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->graph().nodes.size(), 1u);
  auto expected = s->Run(in);
  ASSERT_TRUE(expected.ok()) << expected.status();
  // Buffers of past + 1 rows that hold past in their first rows.
  std::vector<float> kbuf(size_t(2 * 10 * kSdpaD)), vbuf(size_t(2 * 10 * kSdpaDv));
  std::memcpy(kbuf.data(), in[3].tensor.raw(), in[3].tensor.bytes());
  std::memcpy(vbuf.data(), in[4].tensor.raw(), in[4].tensor.bytes());
  std::vector<NamedTensor> bound_in = in;
  bound_in[3].tensor = Tensor::Borrow(DType::kFloat, {1, 2, 9, kSdpaD}, kbuf.data());
  bound_in[4].tensor = Tensor::Borrow(DType::kFloat, {1, 2, 9, kSdpaDv}, vbuf.data());
  std::vector<Tensor> outputs = {Tensor(), Tensor::Borrow(DType::kFloat, {1, 2, 10, kSdpaD}, kbuf.data()),
                                 Tensor::Borrow(DType::kFloat, {1, 2, 10, kSdpaDv}, vbuf.data())};
  ASSERT_TRUE(s->Run(bound_in, &outputs).ok());
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(outputs[k].bytes(), (*expected)[k].bytes());
    EXPECT_EQ(0, std::memcmp(outputs[k].raw(), (*expected)[k].raw(), outputs[k].bytes())) << "output " << k;
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Attention as the SDPA and TorchScript exports spell it: the scale split
// over Q and Kᵀ, a boolean mask made additive by Where(mask, 0, -inf), the
// guard Where(IsNaN(P), 0, P) after the Softmax, and the GQA repeat with its
// Expand and Reshape shapes computed from K's own Shape at run time, or a Tile.
struct ExportForm {
  int64_t kv_heads = 2;  // of 4 query heads
  int split = 1;         // 0 none, 1 Mul(q, c) and Mul(Transpose(k), c), 2 Mul(k, c) before the Transpose
  double c_q = 0.5946035575013605, c_k = 0.5946035575013605;  // 8^-1/4 each
  bool vector_c = false; // c_k one per head [H, 1, 1] (not one scale: not Attention's)
  int guard = 1;         // 0 none, 1 Where(IsNaN(p), 0, p), 2 IsInf instead of IsNaN, 3 a fill of 1
  int mask = 1;          // 0 none, 1 bool via Where(m, 0, -inf) + Add, 2 float added
  int repeat = 1;        // 0 none, 1 run-time Expand/Reshape shapes, 2 Tile(k, [1, G, 1, 1]),
                         // 3 the Expand's G read from Q's Shape (not known before running),
                         // 4 as 1 in torch's expand spelling: Where(Equal(s, -1), 1, Reshape(s, [-1]))
  int cast = 0;          // around the Softmax: 0 none, 1 Cast to its own type before, 2 Cast to float before
                         // and back after (softmax(dtype=float32).to(T)), 3 to double and back
  DType dtype = DType::kFloat;
  // The float mask sliced to K's length read from the repeated K (HF's
  // attention_mask[:, :, :, :key_states.shape[-2]]): the axis Gathered.
  std::optional<int64_t> slice_axis;
  int64_t where_len = 5;  // repeat 4: the length of its -1s and 1s (5: the shape's; 1 broadcasts)
};
constexpr int64_t kExH = 4, kExD = 8;

ModelBuilder ExportModel(const ExportForm& f) {
  ModelBuilder m(18);
  const int64_t kv = f.kv_heads, g = kExH / kv;
  const DType dt = f.dtype;
  m.Input("q", dt, {-1, kExH, -1, kExD});
  m.Input("k", dt, {-1, kv, -1, kExD});
  m.Input("v", dt, {-1, kv, -1, kExD});
  if (f.mask == 1) m.Input("mask", DType::kBool, {-1, 1, -1, -1});
  if (f.mask == 2) m.Input("mask", dt, {-1, 1, -1, -1});
  m.Output("y", dt, {-1, kExH, -1, kExD});
  const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  const auto f32 = [&](double v) {
    Tensor t = Tensor::Zeros(dt, {});
    SetDouble(t, 0, v);
    return t;
  };
  m.Initializer("i0", Tensor::FromVector(std::vector<int64_t>{0}, {}));
  m.Initializer("i2", Tensor::FromVector(std::vector<int64_t>{2}, {}));
  m.Initializer("ax0", i64({0})).Initializer("ax2", i64({2}));
  m.Initializer("kv", i64({kv})).Initializer("g", i64({g})).Initializer("h", i64({kExH})).Initializer("d", i64({kExD}));
  m.Initializer("tile", i64({1, g, 1, 1}));
  std::string k = "k", v = "v";
  if (f.repeat == 2) {
    m.Node("Tile", {"k", "tile"}, {"kr"});
    m.Node("Tile", {"v", "tile"}, {"vr"});
    k = "kr", v = "vr";
  } else if (f.repeat != 0) {
    for (const std::string x : {"k", "v"}) {
      // batch, kv, slen, head_dim = x.shape; x[:, :, None].expand(batch, kv, g, slen, d).reshape(batch, h, slen, d)
      m.Node("Shape", {x}, {x + "_shape"});
      m.Node("Gather", {x + "_shape", "i0"}, {x + "_b"});
      m.Node("Gather", {x + "_shape", "i2"}, {x + "_t"});
      m.Node("Unsqueeze", {x + "_b", "ax0"}, {x + "_b1"});
      m.Node("Unsqueeze", {x + "_t", "ax0"}, {x + "_t1"});
      std::string groups = "g";
      if (f.repeat == 3) {
        m.Node("Shape", {"q"}, {x + "_qshape"});
        m.Node("Gather", {x + "_qshape", "i2"}, {x + "_qs"});
        m.Node("Unsqueeze", {x + "_qs", "ax0"}, {x + "_qs1"});
        groups = x + "_qs1";
      }
      if (f.repeat == 4) {
        m.Initializer("minus1", i64({-1})).Initializer("neg5", i64(std::vector<int64_t>(size_t(f.where_len), -1)));
        m.Initializer("ones5", i64(std::vector<int64_t>(size_t(f.where_len), 1)));
        SetAttr(m.Node("Concat", {x + "_b1", "kv", groups, x + "_t1", "d"}, {x + "_stack"}), "axis", int64_t{0});
        m.Node("Reshape", {x + "_stack", "minus1"}, {x + "_view"});
        m.Node("Equal", {x + "_view", "neg5"}, {x + "_is_neg"});
        m.Node("Where", {x + "_is_neg", "ones5", x + "_view"}, {x + "_eshape"});
      } else {
        SetAttr(m.Node("Concat", {x + "_b1", "kv", groups, x + "_t1", "d"}, {x + "_eshape"}), "axis", int64_t{0});
      }
      SetAttr(m.Node("Concat", {x + "_b1", "h", x + "_t1", "d"}, {x + "_rshape"}), "axis", int64_t{0});
      m.Node("Unsqueeze", {x, "ax2"}, {x + "5"});
      m.Node("Expand", {x + "5", x + "_eshape"}, {x + "x"});
      m.Node("Reshape", {x + "x", x + "_rshape"}, {x + "r"});
    }
    k = "kr", v = "vr";
  }
  const std::string k_rep = k;  // the repeated K
  std::string q = "q";
  m.Initializer("c_q", f32(f.c_q));
  if (f.vector_c)
    m.Initializer("c_k", Tensor::FromVector(std::vector<float>{0.5f, 0.6f, 0.7f, 0.8f}, {kExH, 1, 1}));  // (float only)
  else m.Initializer("c_k", f32(f.c_k));
  if (f.split != 0) {
    m.Node("Mul", {"q", "c_q"}, {"qs"});
    q = "qs";
  }
  if (f.split == 2) {
    m.Node("Mul", {k, "c_k"}, {"ks"});
    k = "ks";
  }
  SetAttr(m.Node("Transpose", {k}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  std::string kt = "kt";
  if (f.split == 1) {
    m.Node("Mul", {"c_k", "kt"}, {"kts"});
    kt = "kts";
  }
  m.Node("MatMul", {q, kt}, {"scores"});
  std::string s = "scores";
  if (f.mask == 1) {
    m.Initializer("zero", f32(0)).Initializer("ninf", f32(-INFINITY));
    m.Node("Where", {"mask", "zero", "ninf"}, {"bias"});
    m.Node("Add", {s, "bias"}, {"masked"});
    s = "masked";
  } else if (f.mask == 2) {
    std::string mask = "mask";
    if (f.slice_axis) {
      m.Initializer("slice_axis", Tensor::FromVector(std::vector<int64_t>{*f.slice_axis}, {}));
      m.Initializer("axis3", i64({3})).Initializer("i0_1d", i64({0}));
      m.Node("Shape", {k_rep}, {"krep_shape"});
      m.Node("Gather", {"krep_shape", "slice_axis"}, {"k_len"});
      m.Node("Unsqueeze", {"k_len", "ax0"}, {"k_len1"});
      m.Node("Slice", {"mask", "i0_1d", "k_len1", "axis3"}, {"mask_sliced"});
      mask = "mask_sliced";
    }
    m.Node("Add", {s, mask}, {"masked"});
    s = "masked";
  }
  if (f.cast != 0) {
    const DType to = f.cast == 1 ? dt : f.cast == 2 ? DType::kFloat : DType::kDouble;
    SetAttr(m.Node("Cast", {s}, {"masked_cast"}), "to", int64_t(to));
    s = "masked_cast";
  }
  SetAttr(m.Node("Softmax", {s}, {f.cast >= 2 ? "probs_wide" : "probs"}), "axis", int64_t{-1});
  if (f.cast >= 2) SetAttr(m.Node("Cast", {"probs_wide"}, {"probs"}), "to", int64_t(dt));
  std::string p = "probs";
  if (f.guard != 0) {
    m.Initializer("fill", f32(f.guard == 3 ? 1 : 0));
    m.Node(f.guard == 2 ? "IsInf" : "IsNaN", {"probs"}, {"bad"});
    m.Node("Where", {"bad", "fill", "probs"}, {"guarded"});
    p = "guarded";
  }
  m.Node("MatMul", {p, v}, {"y"});
  return m;
}

// B queries' batches over T keys; with `hide_row`, query row 1 of batch 0 sees no key.
// `fill`: the float mask's value at hidden keys (HF's masks: float's lowest).
std::vector<NamedTensor> ExportInputs(const ExportForm& f, int64_t b, int64_t s, int64_t t, uint32_t seed,
                                      bool hide_row = false, double fill = -INFINITY) {
  std::vector<NamedTensor> in = {{"q", RandomUniform(f.dtype, {b, kExH, s, kExD}, seed)},
                                 {"k", RandomUniform(f.dtype, {b, f.kv_heads, t, kExD}, seed + 1)},
                                 {"v", RandomUniform(f.dtype, {b, f.kv_heads, t, kExD}, seed + 2)}};
  const auto visible = [&](int64_t bb, int64_t i, int64_t j) {
    if (hide_row && bb == 0 && i == 1) return false;
    return j == 0 || (j <= i + t - s && (bb + i * 3 + j * 5) % 4 != 0);
  };
  if (f.mask == 1) {
    std::vector<bool> mask;
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < t; ++j) mask.push_back(visible(bb, i, j));
    in.push_back({"mask", Tensor::FromVector(mask, {b, 1, s, t})});
  } else if (f.mask == 2) {
    Tensor mask = RandomUniform(f.dtype, {b, 1, s, t}, seed + 3, -2, 0);
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < t; ++j)
          if (!visible(bb, i, j)) SetDouble(mask, (bb * s + i) * t + j, fill);
    in.push_back({"mask", mask});
  }
  return in;
}

const Node* FindOp(const Session& s, const std::string& op) {
  for (const Node& n : s.graph().nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

TEST(Rewrite, ExportSpellingsOfAttentionBecomeAttention) {
  for (int split : {0, 1, 2})
    for (int guard : {0, 1})
      for (int mask : {0, 1, 2})
        for (int repeat : {0, 1, 2, 4}) {
          ExportForm f;
          f.split = split;
          f.guard = guard;
          f.mask = mask;
          f.repeat = repeat;
          f.kv_heads = repeat == 0 ? 4 : repeat == 2 ? 1 : 2;
          if (split == 0) f.c_q = 1;  // no scale at all
          const std::string what =
              absl::StrCat("split ", split, " guard ", guard, " mask ", mask, " repeat ", repeat);
          const ModelBuilder m = ExportModel(f);
          std::vector<std::vector<NamedTensor>> runs;
          for (auto [b, s, t] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 9}, {2, 5, 5}, {3, 3, 70}})
            runs.push_back(ExportInputs(f, b, s, t, uint32_t(b * 1000 + s * 100 + t)));
          const std::vector<std::string> ops = RunBothWaysMany(m, runs, 1e-5);
          EXPECT_THAT(ops, ::testing::Contains("Attention")) << what;
          // (the repeat's run-time shapes go with it: nothing else reads them)
          for (const char* gone : {"Softmax", "Expand", "Tile", "IsNaN", "Mul", "MatMul", "Shape", "Gather", "Concat"})
            EXPECT_THAT(ops, ::testing::Not(::testing::Contains(gone))) << what;
          auto session = m.Build(SessionOptions());
          ASSERT_TRUE(session.ok()) << session.status();
          const Node* a = FindOp(**session, "Attention");
          ASSERT_NE(a, nullptr) << what;
          EXPECT_EQ(a->attr_int("kv_repeat", 0), repeat == 0 ? 1 : kExH / f.kv_heads) << what;
          EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Equal"))) << what;
          EXPECT_EQ(std::count(ops.begin(), ops.end(), "Where"), mask == 1 ? 1 : 0) << what;  // the mask's own
          EXPECT_NEAR(a->attr_float("scale", 0), split == 0 ? 1 : split == 1 ? 1 / std::sqrt(8.0) : 1 / std::sqrt(8.0),
                      1e-6)
              << what;
        }
}

// torch's expand spelling Where(Equal(s, -1s), 1s, s) is s only when its
// constants have one element or s's five: three make the graph as written
// an error (Equal of [5] and [3]), which the rewrite must not hide by
// reading the shape as s and dropping the chain.
TEST(Rewrite, ExportAttentionExpandWhereOfAnotherLengthIsNotTheRepeat) {
  ExportForm f;
  f.repeat = 4;
  f.where_len = 1;
  EXPECT_THAT(RunBothWaysMany(ExportModel(f), {ExportInputs(f, 2, 3, 6, 4)}, 1e-5), ::testing::Contains("Attention"));
  f.where_len = 3;
  SessionOptions plain;
  plain.graph_rewrites = false;
  auto as_written = ExportModel(f).Build(plain);
  ASSERT_FALSE(as_written.ok());
  auto rewritten = ExportModel(f).Build(SessionOptions());
  ASSERT_FALSE(rewritten.ok()) << "the rewrite hid: " << as_written.status();
  EXPECT_EQ(rewritten.status(), as_written.status());
}

// The same with a valid graph: V's Reshape shape starts with Where(Equal(b,
// -1s), 1s, b) of its one-element batch b; two -1s and two 1s widen it to
// [b, b], so V' is 5-D [1, 1, H, T, D] at a batch of 1 (which MatMul
// broadcasts), not the repeat. The rewrite must not read it as [b]. (Through
// a session the fused op's 4-D output would contradict the 5-D type and
// plan the graph as written: the rewrite itself is checked.)
TEST(Rewrite, ExpandWhereWiderThanItsShapeIsNotTheRepeat) {
  for (int64_t len : {1, 2}) {
    ModelBuilder m(18);
    m.Input("q", DType::kFloat, {-1, 4, 3, 8}).Input("k", DType::kFloat, {1, 2, 5, 8});
    m.Input("v", DType::kFloat, {-1, 2, 5, 8}).Output("y", DType::kFloat, {}, false);
    const auto i64 = [](std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
    m.Initializer("ax0", i64({0})).Initializer("ax2", i64({2})).Initializer("i0", Tensor::FromVector<int64_t>({0}, {}));
    m.Initializer("eshape", i64({1, 2, 2, 5, 8})).Initializer("kshape", i64({1, 4, 5, 8})).Initializer("tail", i64({4, 5, 8}));
    m.Initializer("negs", i64(std::vector<int64_t>(size_t(len), -1))).Initializer("ones", i64(std::vector<int64_t>(size_t(len), 1)));
    for (const std::string x : {"k", "v"}) {
      m.Node("Unsqueeze", {x, "ax2"}, {x + "5"});
      m.Node("Expand", {x + "5", "eshape"}, {x + "x"});
    }
    m.Node("Reshape", {"kx", "kshape"}, {"kr"});
    m.Node("Shape", {"v"}, {"vs"});
    m.Node("Gather", {"vs", "i0"}, {"vb"});
    m.Node("Unsqueeze", {"vb", "ax0"}, {"vb1"});
    m.Node("Equal", {"vb1", "negs"}, {"is_neg"});
    m.Node("Where", {"is_neg", "ones", "vb1"}, {"w"});
    SetAttr(m.Node("Concat", {"w", "tail"}, {"vshape"}), "axis", int64_t{0});
    m.Node("Reshape", {"vx", "vshape"}, {"vr"});
    SetAttr(m.Node("Transpose", {"kr"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
    m.Node("MatMul", {"q", "kt"}, {"scores"});
    SetAttr(m.Node("Softmax", {"scores"}, {"probs"}), "axis", int64_t{-1});
    m.Node("MatMul", {"probs", "vr"}, {"y"});
    absl::StatusOr<Graph> g = LoadModelFromBytes(m.Serialize(), "");
    ASSERT_TRUE(g.ok()) << g.status();
    RewriteGraph(*g, BuiltinOps());
    const bool fused = std::any_of(g->nodes.begin(), g->nodes.end(), [](const Node& n) { return n.op_type == "Attention"; });
    EXPECT_EQ(fused, len == 1) << len;
    const std::vector<NamedTensor> in = {{"q", RandomUniform(DType::kFloat, {1, 4, 3, 8}, 1, -1, 1)},
                                         {"k", RandomUniform(DType::kFloat, {1, 2, 5, 8}, 2, -1, 1)},
                                         {"v", RandomUniform(DType::kFloat, {1, 2, 5, 8}, 3, -1, 1)}};
    RunBothWays(m, in, 1e-5);  // the values the graph as written gives, whichever graph plans
  }
}

// An additive mask of float's lowest (HF's) or -1e30 hides keys as -inf
// does (the kernel skips them); a row with nothing above -1e30 gives the
// pattern's mean of V at the row's largest mask values.
TEST(Rewrite, ExportAttentionFiniteMaskFloor) {
  for (double fill : {-3.4028234663852886e38, -1e30, -1e29})
    for (bool hide_row : {false, true})
      for (int guard : {0, 1}) {
        ExportForm f;
        f.mask = 2;
        f.guard = guard;
        const std::string what = absl::StrCat("fill ", fill, " hide ", hide_row, " guard ", guard);
        std::vector<std::vector<NamedTensor>> runs = {ExportInputs(f, 2, 3, 6, 4, hide_row, fill),
                                                      ExportInputs(f, 1, 5, 70, 8, hide_row, fill)};
        // A hidden row whose keys hold two fills: the larger one's keys share the weight.
        Tensor& m = runs[0][3].tensor;
        if (hide_row) SetDouble(m, 1 * 6 + 2, fill / 2);
        EXPECT_THAT(RunBothWaysMany(ExportModel(f), runs, 1e-5), ::testing::Contains("Attention")) << what;
      }
}

// HF's mask sliced to key_states.shape[-2] of the repeated K: that Shape
// reads K's own (the same length), the repeat is the attention's and so is
// the slice (a wider mask's first T keys); a Shape whose heads are read
// keeps the repeat.
TEST(Rewrite, ExportAttentionMaskSlicedToTheRepeatedLength) {
  // (The Tile of one KV head has its heads known: the attention waits a
  // pass for the Shape to be taken off rather than read the tiled K.)
  for (int repeat : {1, 2, 4})
    for (int64_t axis : {-2, 2, 1}) {
      ExportForm f;
      f.kv_heads = repeat == 2 ? 1 : 2;
      f.mask = 2;
      f.split = 0;
      f.c_q = 1;
      f.repeat = repeat;
      f.slice_axis = axis;
      const std::string what = absl::StrCat("repeat ", repeat, " axis ", axis);
      // Axis 1 slices the mask to 4 (heads) keys: runs of 4 keys.
      const int64_t t1 = axis == 1 ? 4 : 6, t2 = axis == 1 ? 4 : 9;
      std::vector<std::vector<NamedTensor>> runs = {ExportInputs(f, 2, 3, t1, 4), ExportInputs(f, 1, 1, t2, 8)};
      // The second run's mask 3 keys wider than K (a static cache's): the slice drops them.
      if (axis != 1) {
        const Tensor& narrow = runs[1][3].tensor;
        const int64_t rows = narrow.size() / t2;
        Tensor wide = Tensor::Zeros(DType::kFloat, {1, 1, 1, t2 + 3});
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < t2 + 3; ++j) SetDouble(wide, r * (t2 + 3) + j, j < t2 ? GetDouble(narrow, r * t2 + j) : 5.0);
        runs[1][3].tensor = wide;
      }
      const std::vector<std::string> ops = RunBothWaysMany(ExportModel(f), runs, 1e-5);
      const char* repeat_op = repeat == 2 ? "Tile" : "Expand";
      if (axis == 1) {
        EXPECT_THAT(ops, ::testing::Contains(repeat_op)) << what;
      } else {
        EXPECT_THAT(ops, ::testing::Contains("Attention")) << what;
        EXPECT_THAT(ops, ::testing::Not(::testing::Contains(repeat_op))) << what;
        // The slice is the op's (mask_sliced), and K's shape chain goes with it.
        EXPECT_THAT(ops, ::testing::ElementsAre("Attention")) << what;
      }
    }
}

// softmax(x, dtype=float32).to(T): a Cast of float scores to float, or of
// float16 ones to float and back after the Softmax.
TEST(Rewrite, ExportAttentionSoftmaxInFloat) {
  for (DType dt : {DType::kFloat, DType::kFloat16}) {
    ExportForm f;
    f.dtype = dt;
    f.cast = dt == DType::kFloat ? 1 : 2;
    std::vector<std::vector<NamedTensor>> runs = {ExportInputs(f, 2, 3, 6, 4), ExportInputs(f, 1, 1, 5, 8)};
    const std::vector<std::string> ops = RunBothWaysMany(ExportModel(f), runs, dt == DType::kFloat ? 1e-5 : 4e-3);
    EXPECT_THAT(ops, ::testing::Contains("Attention")) << LowerName(dt);
    EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Cast"))) << LowerName(dt);
    EXPECT_THAT(ops, ::testing::Not(::testing::Contains("Softmax"))) << LowerName(dt);
  }
}

// Rows the mask hides whole: NaN from the Softmax, zeros after the guard;
// the fused op gives the guard's zeros.
TEST(Rewrite, ExportAttentionGuardGivesZerosForFullyMaskedRows) {
  for (int mask : {1, 2}) {
    ExportForm f;
    f.mask = mask;
    const ModelBuilder m = ExportModel(f);
    const std::vector<NamedTensor> in = ExportInputs(f, 2, 3, 6, 9, /*hide_row=*/true);
    EXPECT_THAT(RunBothWays(m, in, 1e-5), ::testing::Contains("Attention")) << mask;
    auto s = m.Build(SessionOptions());
    ASSERT_TRUE(s.ok()) << s.status();
    auto y = (*s)->Run(in);
    ASSERT_TRUE(y.ok()) << y.status();
    for (int64_t h = 0; h < kExH; ++h)
      for (int64_t d = 0; d < kExD; ++d) {
        EXPECT_EQ(GetDouble((*y)[0], ((0 * kExH + h) * 3 + 1) * kExD + d), 0.0) << mask;  // hidden row
        EXPECT_NE(GetDouble((*y)[0], ((1 * kExH + h) * 3 + 1) * kExD + d), 0.0) << mask;  // batch 1's row seen
      }
  }
}

TEST(Rewrite, ExportAttentionNearMissesAreKept) {
  const auto ops_of = [](const ExportForm& f) {
    // (Q's length 2 where the Expand reads G from it, which the Reshape to 4 heads needs.)
    const int64_t s = f.repeat == 3 ? 2 : 3;
    std::vector<std::vector<NamedTensor>> runs = {ExportInputs(f, 2, s, 6, 4), ExportInputs(f, 1, 2, 5, 8)};
    return RunBothWaysMany(ExportModel(f), runs, 1e-5);
  };
  // A per-head scale, or two constants whose product is negative: the scores are not Q Kᵀ times one positive scale.
  ExportForm vector_c;
  vector_c.vector_c = true;
  EXPECT_THAT(ops_of(vector_c), ::testing::AllOf(::testing::Contains("Softmax"), ::testing::Not(::testing::Contains("Attention"))));
  ExportForm negative;
  negative.c_k = -negative.c_k;
  EXPECT_THAT(ops_of(negative), ::testing::AllOf(::testing::Contains("Softmax"), ::testing::Not(::testing::Contains("Attention"))));
  // Guards that are not Where(IsNaN(p), 0, p).
  for (int guard : {2, 3}) {
    ExportForm f;
    f.guard = guard;
    EXPECT_THAT(ops_of(f), ::testing::AllOf(::testing::Contains("Softmax"), ::testing::Not(::testing::Contains("Attention"))))
        << guard;
  }
  // Tile of two KV heads orders heads h mod KV: K and V stay tiled, the op repeats nothing.
  ExportForm tile;
  tile.repeat = 2;
  const std::vector<std::string> tiled = ops_of(tile);
  EXPECT_THAT(tiled, ::testing::Contains("Attention"));
  EXPECT_EQ(std::count(tiled.begin(), tiled.end(), "Tile"), 2);
  // A Softmax in double (float scores cast to double and back): not the op's float arithmetic.
  ExportForm in_double;
  in_double.cast = 3;
  EXPECT_THAT(ops_of(in_double), ::testing::Contains("Softmax"));
  // An Expand whose G is read from Q's shape at run time: not known to be a repeat.
  ExportForm g_from_q;
  g_from_q.repeat = 3;
  EXPECT_THAT(ops_of(g_from_q), ::testing::Contains("Expand"));
}

}  // namespace
}  // namespace onnx_mini
