// runtime/rewrite/rotary.cc: HF's rotary (x * cos + rotate_half(x) * sin) as
// exporters spell it -> RotaryEmbedding-23.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

enum class Halves { kSlice, kShapeSlice, kSplit };

struct RotaryForm {
  Halves halves = Halves::kSlice;
  int64_t opset = 17;
  bool cos_first = false;  // Mul(cos, x) and Mul(sin, rot)
  bool add_swapped = false;
  // What must keep the rewrite away (or, for exchanged tables, not).
  bool halves_swapped = false;  // Concat(Neg(x1), x2)
  bool wrong_sign = false;      // Concat(x2, Neg(x1))
  bool exchanged = false;       // x * sin + rotate_half(x) * cos
  int64_t cut = 0;              // where x1 ends (0: D / 2)
  bool unequal_halves = false;  // the tables' halves differ
  bool ids_one_row = false;     // position_ids [1, S] against x of batch 2
  bool k_too = false;           // a second rotary (k) sharing cos and sin
  int64_t partial = 0;          // rotary_dim r < D: rotate x[..., :r], concat x[..., r:] back
  int64_t pass_start = 0;       // where the passed part starts (0: r)
  int old_table = 0;            // tables [1, 1, P, D] sliced to T rows and squeezed (1: axis 2, 2: the last)
};

constexpr int64_t kB = 2, kH = 3, kD = 8, kP = 40;

void Symbol(ModelBuilder& m, int input, int dim, const std::string& name) {
  m.graph().mutable_input(input)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(dim)->set_dim_param(
      name);
}

Tensor Table(DType dt, bool is_cos, bool unequal, int64_t d = kD) {
  Tensor t = Tensor::Zeros(dt, {kP, d});
  for (int64_t p = 0; p < kP; ++p)
    for (int64_t i = 0; i < d; ++i) {
      const double f = std::pow(10000.0, -double(2 * (i % (d / 2))) / d);
      double v = is_cos ? std::cos(double(p) * f) : std::sin(double(p) * f);
      if (unequal && i >= d / 2 && p % 3 == 1) v += 0.25;
      SetDouble(t, p * d + i, v);
    }
  return t;
}

// rotary of `x` into `y`, reading rope_cos / rope_sin.
void Rotary(ModelBuilder& m, const RotaryForm& f, const std::string& x, const std::string& y) {
  const std::string x1 = y + "_x1", x2 = y + "_x2";
  switch (f.halves) {
    case Halves::kSlice:
      m.Node("Slice", {x, "zero", "cut", "last"}, {x1});
      m.Node("Slice", {x, "cut", "big", "last"}, {x2});
      break;
    case Halves::kShapeSlice: {
      // x.shape[-1] // 2, as TorchScript exports it.
      m.Node("Shape", {x}, {y + "_shape"});
      SetAttr(m.Node("Gather", {y + "_shape", "three"}, {y + "_d"}), "axis", int64_t{0});
      m.Node("Div", {y + "_d", "two"}, {y + "_h"});
      if (f.opset >= 13) m.Node("Unsqueeze", {y + "_h", "zero"}, {y + "_h1"});
      else SetAttr(m.Node("Unsqueeze", {y + "_h"}, {y + "_h1"}), "axes", std::vector<int64_t>{0});
      m.Node("Slice", {x, "zero", y + "_h1", "last"}, {x1});
      m.Node("Slice", {x, y + "_h1", "big", "last"}, {x2});
      break;
    }
    case Halves::kSplit: {
      onnx::NodeProto& s = f.opset >= 18 ? m.Node("Split", {x}, {x1, x2}) : m.Node("Split", {x, "halves"}, {x1, x2});
      SetAttr(s, "axis", int64_t{-1});
      if (f.opset >= 18) SetAttr(s, "num_outputs", int64_t{2});
      break;
    }
  }
  if (f.halves_swapped) {
    m.Node("Neg", {x1}, {y + "_neg"});
    SetAttr(m.Node("Concat", {y + "_neg", x2}, {y + "_rot"}), "axis", int64_t{-1});
  } else if (f.wrong_sign) {
    m.Node("Neg", {x1}, {y + "_neg"});
    SetAttr(m.Node("Concat", {x2, y + "_neg"}, {y + "_rot"}), "axis", int64_t{-1});
  } else {
    m.Node("Neg", {x2}, {y + "_neg"});
    SetAttr(m.Node("Concat", {y + "_neg", x1}, {y + "_rot"}), "axis", int64_t{-1});
  }
  const std::string c = f.exchanged ? "rope_sin" : "rope_cos", s = f.exchanged ? "rope_cos" : "rope_sin";
  if (f.cos_first) {
    m.Node("Mul", {c, x}, {y + "_c"});
    m.Node("Mul", {s, y + "_rot"}, {y + "_s"});
  } else {
    m.Node("Mul", {x, c}, {y + "_c"});
    m.Node("Mul", {y + "_rot", s}, {y + "_s"});
  }
  if (f.add_swapped) m.Node("Add", {y + "_s", y + "_c"}, {y});
  else m.Node("Add", {y + "_c", y + "_s"}, {y});
}

ModelBuilder RotaryModel(const RotaryForm& f, DType dt) {
  ModelBuilder m(f.opset);
  m.Input("x", dt, {kB, kH, -1, kD}).Input("ids", DType::kInt64, {f.ids_one_row ? 1 : kB, -1});
  Symbol(m, 0, 2, "seq");
  Symbol(m, 1, 1, "seq");
  m.Output("y", dt, {kB, kH, -1, f.pass_start ? -1 : kD});
  if (f.k_too) {
    m.Input("k", dt, {kB, 1, -1, kD});
    Symbol(m, 2, 2, "seq");
    m.Output("yk", dt, {kB, 1, -1, kD});
  }
  const int64_t r = f.partial ? f.partial : kD;
  Tensor cos = Table(dt, true, f.unequal_halves, r), sin = Table(dt, false, false, r);
  if (f.old_table) {
    cos = cos.Reshaped({1, 1, kP, kD});
    sin = sin.Reshaped({1, 1, kP, kD});
  }
  m.Initializer("cos_cached", cos);
  m.Initializer("sin_cached", sin);
  m.Initializer("zero", I({0}, {1})).Initializer("one", I({1}, {1})).Initializer("last", I({-1}, {1}));
  m.Initializer("cut", I({f.cut ? f.cut : r / 2}, {1}));
  m.Initializer("r", I({r}, {1})).Initializer("pass_start", I({f.pass_start ? f.pass_start : r}, {1}));
  m.Initializer("big", I({std::numeric_limits<int64_t>::max()}, {1}));
  m.Initializer("three", I({3}, {})).Initializer("two", I({2}, {}));
  m.Initializer("halves", I({r / 2, r / 2}, {2}));
  if (f.old_table) {  // T = S + P rows, known at run time only
    m.Initializer("two_1d", I({2}, {1})).Initializer("p_1d", I({kP}, {1}));
    m.Initializer("slice_axis", I({f.old_table == 1 ? 2 : 3}, {1}));
    m.Node("Shape", {"x"}, {"x_shape"});
    m.Node("Gather", {"x_shape", "two_1d"}, {"x_len"});
    m.Node("Add", {"x_len", "p_1d"}, {"t_len"});
  }
  for (const char* t : {"cos", "sin"}) {
    const std::string g = std::string("rope_") + t + "_3d";
    std::string table = std::string(t) + "_cached";
    if (f.old_table) {
      m.Node("Slice", {table, "zero", "t_len", "slice_axis"}, {table + "_t"});
      if (f.opset >= 13) {
        m.Node("Squeeze", {table + "_t", "one"}, {table + "_s1"});
        m.Node("Squeeze", {table + "_s1", "zero"}, {table + "_s0"});
      } else {
        SetAttr(m.Node("Squeeze", {table + "_t"}, {table + "_s1"}), "axes", std::vector<int64_t>{1});
        SetAttr(m.Node("Squeeze", {table + "_s1"}, {table + "_s0"}), "axes", std::vector<int64_t>{0});
      }
      table += "_s0";
    }
    m.Node("Gather", {table, "ids"}, {g});
    if (f.opset >= 13) m.Node("Unsqueeze", {g, "one"}, {std::string("rope_") + t});
    else SetAttr(m.Node("Unsqueeze", {g}, {std::string("rope_") + t}), "axes", std::vector<int64_t>{1});
  }
  if (f.partial) {
    m.Node("Slice", {"x", "zero", "r", "last"}, {"x_r"});
    m.Node("Slice", {"x", "pass_start", "big", "last"}, {"x_pass"});
    Rotary(m, f, "x_r", "y_r");
    SetAttr(m.Node("Concat", {"y_r", "x_pass"}, {"y"}), "axis", int64_t{-1});
  } else {
    Rotary(m, f, "x", "y");
  }
  if (f.k_too) Rotary(m, f, "k", "yk");
  return m;
}

std::vector<NamedTensor> Inputs(DType dt, int64_t s, bool one_row, bool k_too) {
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < (one_row ? 1 : kB); ++b)
    for (int64_t i = 0; i < s; ++i) ids.push_back((7 * b + 5 * i + 3) % kP);
  std::vector<NamedTensor> in = {{"x", RandomUniform(dt, {kB, kH, s, kD}, uint32_t(s))},
                                 {"ids", I(ids, {one_row ? 1 : kB, s})}};
  if (k_too) in.push_back({"k", RandomUniform(dt, {kB, 1, s, kD}, uint32_t(s + 9))});
  return in;
}

std::vector<std::string> RunForm(const RotaryForm& f, DType dt = DType::kFloat) {
  const double tol = dt == DType::kFloat ? 1e-5 : 4e-3;
  return RunBothWaysMany(RotaryModel(f, dt),
                         {Inputs(dt, 5, f.ids_one_row, f.k_too), Inputs(dt, 1, f.ids_one_row, f.k_too)}, tol);
}

TEST(RewriteRotary, HfRotaryBecomesRotaryEmbeddingInEverySpelling) {
  for (DType dt : {DType::kFloat, DType::kFloat16})
    for (Halves h : {Halves::kSlice, Halves::kShapeSlice, Halves::kSplit})
      for (int64_t opset : {11, 13, 18})
        for (bool cos_first : {false, true})
          for (bool add_swapped : {false, true}) {
            if (h == Halves::kSplit && opset < 13) continue;  // Split-11's sizes are an attribute: not written here
            RotaryForm f;
            f.halves = h, f.opset = opset, f.cos_first = cos_first, f.add_swapped = add_swapped;
            EXPECT_THAT(RunForm(f, dt), ElementsAre("RotaryEmbedding"))
                << LowerName(dt) << " halves " << int(h) << " opset " << opset << " cos first " << cos_first
                << " add swapped " << add_swapped;
          }
}

// q and k share cos and sin: both fuse, and the Gather/Unsqueeze of the
// tables (and the Shape plumbing) go with them.
TEST(RewriteRotary, SharedTablesFuseBothAndTheirPlumbingGoes) {
  for (Halves h : {Halves::kSlice, Halves::kShapeSlice}) {
    RotaryForm f;
    f.halves = h, f.k_too = true, f.opset = 18;
    EXPECT_THAT(RunForm(f), ElementsAre("RotaryEmbedding", "RotaryEmbedding")) << int(h);
  }
}

// The one walker (Index::DropUnread) drops what the fused patterns stopped
// reading (the tables' Gather and Unsqueeze q and k shared, the Shape chain
// of the halves), and only that: a Shape and a Neg of x that the model itself
// left unread stay.
TEST(RewriteRotary, UnreadWalkerDropsOnlyWhatThePatternsLeft) {
  RotaryForm f;
  f.halves = Halves::kShapeSlice, f.k_too = true, f.opset = 18;
  ModelBuilder m = RotaryModel(f, DType::kFloat);
  m.Node("Shape", {"x"}, {"x_shape_unread"});
  m.Node("Neg", {"x"}, {"neg_unread"});
  EXPECT_THAT(RunBothWaysMany(m, {Inputs(DType::kFloat, 5, false, true)}, 1e-5),
              UnorderedElementsAre("RotaryEmbedding", "RotaryEmbedding", "Shape", "Neg"));
}

// GPT-NeoX's partial rotary: the first r of each head rotated, the rest
// concatenated back -> RotaryEmbedding with rotary_embedding_dim r.
TEST(RewriteRotary, PartialRotaryTakesTheWholeHead) {
  for (Halves h : {Halves::kSlice, Halves::kSplit}) {
    RotaryForm f;
    f.partial = 4, f.halves = h, f.opset = 18;
    EXPECT_THAT(RunForm(f), ElementsAre("RotaryEmbedding")) << int(h);
  }
  // The passed part not starting at r: the rotated part fuses alone.
  RotaryForm overlap;
  overlap.partial = 4, overlap.pass_start = 2;
  EXPECT_THAT(RunForm(overlap), ElementsAre("Slice", "Slice", "RotaryEmbedding", "Concat"));
}

// cos and sin computed at run time as Optimum exports HF's rotary:
// emb = Concat(freqs, freqs), freqs = Transpose(MatMul(inv_freq [1, D/2, 1],
// position_ids as float [B, 1, S])), cos = Unsqueeze(Cos(emb), 1) (float16
// models: Cast after Cos/Sin) -> RotateHalf over the computed cos and sin.
TEST(RewriteRotary, RunTimeCosAndSinBecomeRotateHalf) {
  for (DType dt : {DType::kFloat, DType::kFloat16}) {
    ModelBuilder m(12);  // Unsqueeze's axes an attribute
    m.Input("x", dt, {kB, kH, -1, kD}).Input("ids", DType::kInt64, {kB, -1});
    Symbol(m, 0, 2, "seq");
    Symbol(m, 1, 1, "seq");
    m.Output("y", dt, {kB, kH, -1, kD});
    std::vector<float> inv;
    for (int64_t i = 0; i < kD / 2; ++i) inv.push_back(float(std::pow(10000.0, -double(2 * i) / kD)));
    m.Initializer("inv_freq", Tensor::FromVector(inv, {1, kD / 2, 1}));
    m.Initializer("zero", I({0}, {1})).Initializer("last", I({-1}, {1})).Initializer("cut", I({kD / 2}, {1}));
    m.Initializer("big", I({std::numeric_limits<int64_t>::max()}, {1}));
    SetAttr(m.Node("Unsqueeze", {"ids"}, {"ids3"}), "axes", std::vector<int64_t>{1});
    SetAttr(m.Node("Cast", {"ids3"}, {"idsf"}), "to", int64_t(DType::kFloat));
    m.Node("MatMul", {"inv_freq", "idsf"}, {"freqs_t"});
    SetAttr(m.Node("Transpose", {"freqs_t"}, {"freqs"}), "perm", std::vector<int64_t>{0, 2, 1});
    SetAttr(m.Node("Concat", {"freqs", "freqs"}, {"emb"}), "axis", int64_t{-1});
    for (const char* t : {"Cos", "Sin"}) {
      const std::string v = t == std::string("Cos") ? "cos" : "sin";
      m.Node(t, {"emb"}, {v + "_f"});
      SetAttr(m.Node("Cast", {v + "_f"}, {v + "_3d"}), "to", int64_t(dt));
      SetAttr(m.Node("Unsqueeze", {v + "_3d"}, {"rope_" + v}), "axes", std::vector<int64_t>{1});
    }
    Rotary(m, RotaryForm{}, "x", "y");
    EXPECT_THAT(RunBothWaysMany(m, {Inputs(dt, 5, false, false), Inputs(dt, 1, false, false)},
                                dt == DType::kFloat ? 1e-5 : 4e-3),
                Contains("RotateHalf"))
        << LowerName(dt);
  }
}

// GPT-J's rotate_every_two: x[..., ::2], x[..., 1::2], stacked as
// (-x2, x1) on a new last axis and flattened back -> RotateHalf interleaved.
ModelBuilder EveryTwoModel(int shape_form, bool wrong_pairs, int64_t opset) {
  ModelBuilder m(opset);
  m.Input("x", DType::kFloat, {kB, kH, -1, kD}).Input("cos", DType::kFloat, {kB, 1, -1, kD});
  m.Input("sin", DType::kFloat, {kB, 1, -1, kD});
  m.Output("y", DType::kFloat, {kB, kH, -1, kD});
  m.Initializer("zero", I({0}, {1})).Initializer("one", I({1}, {1})).Initializer("last", I({-1}, {1}));
  m.Initializer("two", I({2}, {1})).Initializer("big", I({std::numeric_limits<int64_t>::max()}, {1}));
  m.Initializer("minus_two", I({-2}, {1}));
  m.Node("Slice", {"x", "zero", "big", "last", "two"}, {"x1"});
  m.Node("Slice", {"x", "one", "big", "last", "two"}, {"x2"});
  m.Node("Neg", {wrong_pairs ? "x1" : "x2"}, {"neg"});
  auto unsqueeze = [&](const std::string& in, const std::string& out) {
    if (opset >= 13) m.Node("Unsqueeze", {in, "last"}, {out});
    else SetAttr(m.Node("Unsqueeze", {in}, {out}), "axes", std::vector<int64_t>{-1});
  };
  unsqueeze("neg", "neg_u");
  unsqueeze(wrong_pairs ? "x2" : "x1", "x1_u");
  SetAttr(m.Node("Concat", {"neg_u", "x1_u"}, {"stacked"}), "axis", int64_t{-1});
  if (shape_form == 0) {
    m.Initializer("shape", I({0, 0, 0, -1}, {4}));
  } else if (shape_form == 1) {
    m.Initializer("shape", I({kB, kH, 0, kD}, {4}));
  } else {
    m.Initializer("minus_one", I({-1}, {1}));
    m.Node("Shape", {"stacked"}, {"st_shape"});
    m.Node("Slice", {"st_shape", "zero", "minus_two"}, {"lead"});
    SetAttr(m.Node("Concat", {"lead", "minus_one"}, {"shape"}), "axis", int64_t{0});
  }
  m.Node("Reshape", {"stacked", "shape"}, {"rot"});
  m.Node("Mul", {"x", "cos"}, {"xc"});
  m.Node("Mul", {"rot", "sin"}, {"rs"});
  m.Node("Add", {"xc", "rs"}, {"y"});
  return m;
}

TEST(RewriteRotary, GptJRotateEveryTwoBecomesInterleavedRotateHalf) {
  auto inputs = [](int64_t s) {
    return std::vector<NamedTensor>{{"x", RandomUniform(DType::kFloat, {kB, kH, s, kD}, uint32_t(s))},
                                    {"cos", RandomUniform(DType::kFloat, {kB, 1, s, kD}, uint32_t(s + 1))},
                                    {"sin", RandomUniform(DType::kFloat, {kB, 1, s, kD}, uint32_t(s + 2))}};
  };
  for (int form : {0, 1, 2})
    for (int64_t opset : {11, 13}) {
      ModelBuilder m = EveryTwoModel(form, false, opset);
      EXPECT_THAT(RunBothWaysMany(m, {inputs(3), inputs(1)}, 1e-5), ElementsAre("RotateHalf")) << form << opset;
      auto s = m.Build();
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ((*s)->graph().nodes[0].attr_int("interleaved", 0), 1);
    }
  // (-x1, x2) stacked: another rotation, kept.
  EXPECT_THAT(RunBothWaysMany(EveryTwoModel(0, true, 13), {inputs(2)}, 1e-5), Not(Contains("RotateHalf")));
}

// Older exports: cos_cached[:, :, :T] squeezed to [T, D], then gathered.
TEST(RewriteRotary, SlicedAndSqueezedTablesFuse) {
  for (int64_t opset : {11, 13}) {
    RotaryForm f;
    f.old_table = 1, f.opset = opset, f.k_too = true;
    EXPECT_THAT(RunForm(f), ElementsAre("RotaryEmbedding", "RotaryEmbedding")) << opset;
  }
  RotaryForm last;  // a table sliced along D: not the positions
  last.old_table = 2;
  EXPECT_THAT(RunForm(last), Not(Contains("RotaryEmbedding")));
}

// x * sin + rotate_half(x) * cos is the op with its tables exchanged: it
// fuses so and gives the graph's values.
TEST(RewriteRotary, ExchangedTablesFuseExchanged) {
  RotaryForm f;
  f.exchanged = true;
  EXPECT_THAT(RunForm(f), ElementsAre("RotaryEmbedding"));
}

TEST(RewriteRotary, OtherRotationsAreKept) {
  RotaryForm swapped, sign, cut, unequal, one_row;
  swapped.halves_swapped = true;
  sign.wrong_sign = true;
  cut.cut = kD / 2 - 1;
  for (const RotaryForm& f : {swapped, sign, cut})
    EXPECT_THAT(RunForm(f), AllOf(Not(Contains("RotaryEmbedding")), Not(Contains("RotateHalf"))))
        << f.halves_swapped << f.wrong_sign << f.cut;
  // Tables whose halves differ, or position_ids of one row the graph
  // broadcasts over x's batch of 2, are not RotaryEmbedding's: the pattern
  // is computed as written by RotateHalf over the gathered cos and sin.
  unequal.unequal_halves = true;
  one_row.ids_one_row = true;
  for (const RotaryForm& f : {unequal, one_row})
    EXPECT_THAT(RunForm(f), ElementsAre("Gather", "Unsqueeze", "Gather", "Unsqueeze", "RotateHalf"))
        << f.unequal_halves << f.ids_one_row;
  RotaryForm split_cut;
  split_cut.halves = Halves::kSplit;
  split_cut.opset = 13;
  ModelBuilder m = RotaryModel(split_cut, DType::kFloat);
  // Split into [5, 3]: not the halves.
  for (auto& init : *m.graph().mutable_initializer())
    if (init.name() == "halves") {
      init.clear_int64_data();
      init.clear_raw_data();
      init.add_int64_data(5);
      init.add_int64_data(3);
    }
  EXPECT_THAT(RunBothWaysMany(m, {Inputs(DType::kFloat, 4, false, false)}, 1e-5), Not(Contains("RotaryEmbedding")));
}

// A rotated value read elsewhere (the rotate_half output a graph output)
// keeps the graph as written.
TEST(RewriteRotary, AnIntermediateReadElsewhereKeepsThePattern) {
  ModelBuilder m = RotaryModel(RotaryForm{}, DType::kFloat);
  m.Output("y_rot", DType::kFloat, {kB, kH, -1, kD});
  EXPECT_THAT(RunBothWaysMany(m, {Inputs(DType::kFloat, 3, false, false)}, 1e-5), Not(Contains("RotaryEmbedding")));
}

// q as torch.onnx exports HF's Llama: the head split's shape and the
// halves' cut read from shapes at run time. form 0: TorchScript (opset 17:
// x.size(k) as Unsqueeze(Gather(Shape(h), k)), the cut Div(x.shape[-1], 2)
// after its Unsqueeze or before); 1: dynamo (opset 18: Shape(h, k, k + 1),
// constant cut). Inference proves the shape [batch, seq, H, D] (the
// Reshape's shape becomes a constant), the cut D / 2: RotaryEmbedding, the
// Shape chains gone.
ModelBuilder ExportedQModel(int form, bool div_first) {
  const bool ts = form == 0;
  ModelBuilder m(ts ? 17 : 18);
  m.Input("h", DType::kFloat, {-1, -1, kH * kD}).Input("ids", DType::kInt64, {-1, -1});
  Symbol(m, 0, 0, "batch");
  Symbol(m, 0, 1, "seq");
  Symbol(m, 1, 0, "batch");
  Symbol(m, 1, 1, "seq");
  m.Output("y", DType::kFloat, {-1, kH, -1, kD});
  m.Initializer("wq", RandomUniform(DType::kFloat, {kH * kD, kH * kD}, 7));
  m.Initializer("cos_cached", Table(DType::kFloat, true, false));
  m.Initializer("sin_cached", Table(DType::kFloat, false, false));
  m.Initializer("c_0", I({0}, {1})).Initializer("c_1", I({1}, {1})).Initializer("c_2", I({2}, {1}));
  m.Initializer("c_last", I({-1}, {1})).Initializer("c_heads", I({kH}, {1})).Initializer("c_dim", I({kD}, {1}));
  m.Initializer("c_half", I({kD / 2}, {1})).Initializer("c_max", I({std::numeric_limits<int64_t>::max()}, {1}));
  m.Initializer("s_0", I({0}, {})).Initializer("s_1", I({1}, {})).Initializer("s_2", I({2}, {}));
  m.Initializer("s_3", I({3}, {}));
  auto dim = [&](const std::string& x, int64_t axis, const std::string& y) {
    if (ts) {
      m.Node("Shape", {x}, {y + "_shape"});
      m.Node("Gather", {y + "_shape", "s_" + std::to_string(axis)}, {y + "_scalar"});
      m.Node("Unsqueeze", {y + "_scalar", "c_0"}, {y});
    } else {
      onnx::NodeProto& n = m.Node("Shape", {x}, {y});
      SetAttr(n, "start", axis);
      SetAttr(n, "end", axis + 1);
    }
  };
  dim("h", 0, "bsz");
  dim("h", 1, "q_len");
  SetAttr(m.Node("Concat", {"bsz", "q_len", "c_heads", "c_dim"}, {"q_shape"}), "axis", int64_t{0});
  m.Node("MatMul", {"h", "wq"}, {"q_proj"});
  m.Node("Reshape", {"q_proj", "q_shape"}, {"q_split"});
  SetAttr(m.Node("Transpose", {"q_split"}, {"q"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  std::string half = "c_half";
  if (ts && div_first) {  // Unsqueeze(x.shape[-1] // 2)
    m.Node("Shape", {"q"}, {"q_dims"});
    m.Node("Gather", {"q_dims", "s_3"}, {"q_d"});
    m.Node("Div", {"q_d", "s_2"}, {"q_h"});
    m.Node("Unsqueeze", {"q_h", "c_0"}, {"half"});
    half = "half";
  } else if (ts) {
    dim("q", 3, "q_d");
    m.Node("Div", {"q_d", "c_2"}, {"half"});
    half = "half";
  }
  for (const char* f : {"cos", "sin"}) {
    m.Node("Gather", {std::string(f) + "_cached", "ids"}, {std::string(f) + "_3d"});
    m.Node("Unsqueeze", {std::string(f) + "_3d", "c_1"}, {f});
  }
  m.Node("Slice", {"q", "c_0", half, "c_last"}, {"x1"});
  m.Node("Slice", {"q", half, "c_max", "c_last"}, {"x2"});
  m.Node("Neg", {"x2"}, {"neg"});
  SetAttr(m.Node("Concat", {"neg", "x1"}, {"rot"}), "axis", int64_t{-1});
  m.Node("Mul", {"q", "cos"}, {"qc"});
  m.Node("Mul", {"rot", "sin"}, {"qs"});
  m.Node("Add", {"qc", "qs"}, {"y"});
  return m;
}

TEST(RewriteRotary, TorchOnnxExportsFuseThroughShapesReadAtRunTime) {
  auto inputs = [](int64_t b, int64_t s) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < b * s; ++i) ids.push_back((5 * i + 3) % kP);
    return std::vector<NamedTensor>{{"h", RandomUniform(DType::kFloat, {b, s, kH * kD}, uint32_t(b * s))},
                                    {"ids", I(ids, {b, s})}};
  };
  for (int form : {0, 1})
    for (bool div_first : {false, true}) {
      if (form == 1 && div_first) continue;
      EXPECT_THAT(RunBothWaysMany(ExportedQModel(form, div_first), {inputs(2, 5), inputs(1, 1), inputs(3, 2)}, 1e-5),
                  ElementsAre("MatMul", "Reshape", "Transpose", "RotaryEmbedding"))
          << form << div_first;
    }
}

// The shape read at run time and the Reshape's own input disagree (h's
// batch is not q_proj's): the shape is not proved, and stays computed.
TEST(RewriteRotary, AComputedShapeNotProvedStaysComputed) {
  ModelBuilder m(18);
  m.Input("a", DType::kFloat, {-1, 6}).Input("b", DType::kFloat, {-1, 2});
  Symbol(m, 0, 0, "n");
  Symbol(m, 1, 0, "k");
  m.Output("y", DType::kFloat, {-1, -1, 3});
  m.Initializer("c_3", I({3}, {1}));
  onnx::NodeProto& s = m.Node("Shape", {"b"}, {"k_dim"});
  SetAttr(s, "start", int64_t{0});
  SetAttr(s, "end", int64_t{1});
  m.Initializer("m1", I({-1}, {1}));
  SetAttr(m.Node("Concat", {"m1", "k_dim", "c_3"}, {"shape3"}), "axis", int64_t{0});
  m.Node("Reshape", {"a", "shape3"}, {"y"});
  auto in = [](int64_t n, int64_t k) {
    return std::vector<NamedTensor>{{"a", RandomUniform(DType::kFloat, {n, 6}, 1)},
                                    {"b", RandomUniform(DType::kFloat, {k, 2}, 2)}};
  };
  EXPECT_THAT(RunBothWaysMany(m, {in(2, 2), in(4, 2), in(2, 1)}, 0), ElementsAre("Shape", "Concat", "Reshape"));
}

// What inference knows of shapes read at run time (without the rewrites):
// a Reshape to Concat(Shape(h, 0, 1), Unsqueeze(Gather(Shape(h), 1)), [0])
// is [batch, seq, h's dim 2 copied]; a Shape of known dims folds (the Div
// after it too: the Reshape reading it knows its shape), unless it is a
// graph output.
TEST(RewriteRotary, InferenceCarriesShapesReadAtRunTime) {
  ModelBuilder m(18);
  m.Input("h", DType::kFloat, {-1, -1, 8}).Input("k", DType::kFloat, {2, 6});
  Symbol(m, 0, 0, "batch");
  Symbol(m, 0, 1, "seq");
  m.Output("y", DType::kFloat, {-1, -1, -1}).Output("k_shape", DType::kInt64, {2}).Output("z", DType::kFloat, {-1, -1, -1});
  for (int o : {0, 2}) m.graph().mutable_output(o)->mutable_type()->mutable_tensor_type()->clear_shape();
  m.Initializer("c_0", I({0}, {1})).Initializer("c_4", I({4}, {1})).Initializer("s_1", I({1}, {}));
  m.Initializer("s_2", I({2}, {1}));
  onnx::NodeProto& b = m.Node("Shape", {"h"}, {"b"});
  SetAttr(b, "start", int64_t{0});
  SetAttr(b, "end", int64_t{1});
  m.Node("Shape", {"h"}, {"h_shape"});
  m.Node("Gather", {"h_shape", "s_1"}, {"s"});
  m.Node("Unsqueeze", {"s", "c_0"}, {"s_1d"});
  SetAttr(m.Node("Concat", {"b", "s_1d", "c_0"}, {"shape"}), "axis", int64_t{0});
  m.Node("Reshape", {"h", "shape"}, {"y"});
  m.Node("Shape", {"k"}, {"k_shape"});  // a graph output: computed
  m.Node("Shape", {"k"}, {"k_dims"});
  m.Node("Div", {"k_dims", "s_2"}, {"k_half"});  // [1, 3], folded
  SetAttr(m.Node("Concat", {"k_half", "c_4"}, {"k_to"}), "axis", int64_t{0});
  m.Node("Reshape", {"k", "k_to"}, {"z"});
  SessionOptions off;
  off.graph_rewrites = false;
  auto session = m.Build(off);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<ValueInfo>& outs = (*session)->outputs();
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].type.ToString(), "float[batch,seq,8]");
  EXPECT_EQ(outs[2].type.ToString(), "float[1,3,4]");
  auto y = (*session)->Run({{"h", RandomUniform(DType::kFloat, {3, 1, 8}, 1)}, {"k", RandomUniform(DType::kFloat, {2, 6}, 2)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{3, 1, 8}));
  EXPECT_EQ((*y)[1].data<int64_t>()[1], 6);
}

// Position ids outside the table: Gather and the fused op both refuse
// (the fused op names the node); the session stays usable.
TEST(RewriteRotary, PositionsOutsideTheTableAreAnError) {
  auto s = RotaryModel(RotaryForm{}, DType::kFloat).Build();
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_THAT(OpTypes(**s), ElementsAre("RotaryEmbedding"));
  std::vector<NamedTensor> bad = Inputs(DType::kFloat, 2, false, false);
  bad[1].tensor = I({0, 1, 2, kP}, {kB, 2});
  EXPECT_FALSE((*s)->Run(bad).ok());
  EXPECT_TRUE((*s)->Run(Inputs(DType::kFloat, 2, false, false)).ok());
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// position_ids declared with x's symbols ([batch, seq] beside x's [batch, H,
// seq, D]) may still be given one row for a batch of 2, or one position for
// a sequence of 5: the graph as written broadcasts the gathered tables over
// x (nothing checks that one symbol has one value at run time), so the
// rewritten graph must compute the same, not refuse the run.
TEST(RewriteRotary, SymbolicIdsThatBroadcastAtRunTimeStillRun) {
  RotaryForm f;
  ModelBuilder m = RotaryModel(f, DType::kFloat);
  auto* x = m.graph().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  auto* ids = m.graph().mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();
  x->mutable_dim(0)->clear_dim_value();
  ids->mutable_dim(0)->clear_dim_value();
  Symbol(m, 0, 0, "batch");
  Symbol(m, 1, 0, "batch");
  std::vector<NamedTensor> one_row = Inputs(DType::kFloat, 5, true, false);
  std::vector<NamedTensor> one_pos = Inputs(DType::kFloat, 5, false, false);
  one_pos[1].tensor = I({4, 9}, {kB, 1});
  EXPECT_THAT(RunBothWaysMany(m, {Inputs(DType::kFloat, 5, false, false), one_row, one_pos}, 1e-5),
              ElementsAre("RotaryEmbedding"));
}

}  // namespace
}  // namespace onnx_mini
