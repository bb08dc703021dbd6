// runtime/symbolic_dim.h: sums of dims known by their symbols; and what
// inference carries through them (past_len + seq_len, Range over it: the
// causal mask exporters compute at run time).
#include "runtime/symbolic_dim.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

Dim S(const std::string& s) { return Dim{-1, s}; }
std::string Str(const Dim& d) { return d.known() ? std::to_string(d.value) : d.symbol.empty() ? "?" : d.symbol; }

TEST(SymbolicDim, SumsInOneForm) {
  EXPECT_EQ(Str(AddDims(S("seq"), S("past"))), "past + seq");
  EXPECT_EQ(Str(AddDims(S("past"), S("seq"))), "past + seq");
  EXPECT_EQ(Str(SubtractDims(S("past + seq"), S("past"))), "seq");
  EXPECT_EQ(Str(SubtractDims(S("seq + past"), S("seq"))), "past");  // a declared sum read as one
  EXPECT_EQ(Str(AddDims(S("n"), Dim::Known(1))), "n + 1");
  EXPECT_EQ(Str(SubtractDims(S("n + 1"), Dim::Known(1))), "n");
  EXPECT_EQ(Str(AddDims(S("n"), S("n"))), "2*n");
  EXPECT_EQ(Str(SubtractDims(S("2*n + 3"), S("n"))), "n + 3");
  EXPECT_EQ(Str(SubtractDims(S("n"), S("n"))), "0");
  EXPECT_EQ(Str(AddDims(Dim::Known(2), Dim::Known(3))), "5");
  // Possibly negative at some run, or not a dim at all: unknown.
  EXPECT_EQ(Str(SubtractDims(S("past"), S("seq"))), "?");
  EXPECT_EQ(Str(SubtractDims(S("n"), Dim::Known(1))), "?");
  EXPECT_EQ(Str(SubtractDims(Dim::Known(1), Dim::Known(2))), "?");
  EXPECT_EQ(Str(AddDims(S("n"), Dim{})), "?");
  EXPECT_EQ(Str(AddDims(Dim::Known(int64_t(1) << 62), Dim::Known(int64_t(1) << 62))), "?");
  // A symbol not of sums is one term.
  EXPECT_EQ(Str(AddDims(S("ceil(n/2)"), S("a"))), "a + ceil(n/2)");
  EXPECT_EQ(Str(SubtractDims(S("a + ceil(n/2)"), S("ceil(n/2)"))), "?");  // not read back as terms
}

void SetSymbols(ModelBuilder& m, int input, const std::vector<std::string>& names) {
  auto* shape = m.graph().mutable_input(input)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (size_t i = 0; i < names.size(); ++i)
    if (!names[i].empty()) shape->mutable_dim(int(i))->set_dim_param(names[i]);
}

// The TorchScript decoders' causal mask: Range(past_len, past_len + seq_len)
// against Range(0, past_len + seq_len), with the padding mask of
// [batch, past + seq]: the bias is [batch, 1, seq, past + seq], as the scores.
TEST(SymbolicDim, InferenceCarriesTheCausalMaskShape) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1, -1, 4}).Input("past", DType::kFloat, {-1, 2, -1, 4});
  m.Input("mask", DType::kInt64, {-1, -1});
  SetSymbols(m, 0, {"batch", "seq", ""});
  SetSymbols(m, 1, {"batch", "", "past", ""});
  SetSymbols(m, 2, {"batch", "past + seq"});
  m.Output("bias", DType::kFloat, {}, false).Output("q_pos", DType::kInt64, {}, false);
  m.Initializer("s_0", I({0}, {})).Initializer("s_1", I({1}, {})).Initializer("s_2", I({2}, {}));
  m.Initializer("c_1", I({1}, {1})).Initializer("c_12", I({1, 2}, {2}));
  m.Initializer("zero", Tensor::FromVector<float>({0}, {})).Initializer("low", Tensor::FromVector<float>({-1e9f}, {}));
  m.Node("Shape", {"x"}, {"x_shape"});
  m.Node("Gather", {"x_shape", "s_1"}, {"seq_len"});
  m.Node("Shape", {"past"}, {"past_shape"});
  m.Node("Gather", {"past_shape", "s_2"}, {"past_len"});
  m.Node("Add", {"past_len", "seq_len"}, {"total"});
  m.Node("Range", {"past_len", "total", "s_1"}, {"q_pos"});
  m.Node("Range", {"s_0", "total", "s_1"}, {"k_pos"});
  m.Node("Unsqueeze", {"q_pos", "c_1"}, {"q_col"});
  m.Node("LessOrEqual", {"k_pos", "q_col"}, {"causal"});
  m.Node("Where", {"causal", "zero", "low"}, {"causal_bias"});
  m.Node("Unsqueeze", {"mask", "c_12"}, {"mask_4d"});
  SetAttr(m.Node("Cast", {"mask_4d"}, {"keep"}), "to", int64_t(9));
  m.Node("Where", {"keep", "causal_bias", "low"}, {"bias"});
  SessionOptions off;
  off.graph_rewrites = false;
  auto s = m.Build(off);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ((*s)->outputs().size(), 2u);
  EXPECT_EQ((*s)->outputs()[0].type.ToString(), "float[batch,1,seq,past + seq]");
  EXPECT_EQ((*s)->outputs()[1].type.ToString(), "int64[seq]");
  // Past 3, seq 2, batch 2 (the second row pads position 0).
  auto y = (*s)->Run({{"x", Tensor::Zeros(DType::kFloat, {2, 2, 4})},
                      {"past", Tensor::Zeros(DType::kFloat, {2, 2, 3, 4})},
                      {"mask", I({1, 1, 1, 1, 1, 0, 1, 1, 1, 1}, {2, 5})}});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].shape(), (Shape{2, 1, 2, 5}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t q = 0; q < 2; ++q)
      for (int64_t k = 0; k < 5; ++k) {
        const bool open = k <= 3 + q && !(b == 1 && k == 0);
        EXPECT_EQ((*y)[0].data<float>()[(b * 2 + q) * 5 + k], open ? 0.0f : -1e9f) << b << q << k;
      }
  EXPECT_EQ((*y)[1].data<int64_t>()[0], 3);
  EXPECT_EQ((*y)[1].data<int64_t>()[1], 4);
}

// A KV cache grown by Concat on the sequence axis: [batch, 2, past + seq, 4].
TEST(SymbolicDim, ConcatAddsTheAxis) {
  ModelBuilder m(17);
  m.Input("past", DType::kFloat, {-1, 2, -1, 4}).Input("k", DType::kFloat, {-1, 2, -1, 4});
  SetSymbols(m, 0, {"batch", "", "past", ""});
  SetSymbols(m, 1, {"batch", "", "seq", ""});
  m.Output("present", DType::kFloat, {}, false).Output("twice", DType::kFloat, {}, false);
  SetAttr(m.Node("Concat", {"past", "k"}, {"present"}), "axis", int64_t(2));
  SetAttr(m.Node("Concat", {"k", "past", "k"}, {"twice"}), "axis", int64_t(-2));
  SessionOptions off;
  off.graph_rewrites = false;
  auto s = m.Build(off);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->outputs()[0].type.ToString(), "float[batch,2,past + seq,4]");
  EXPECT_EQ((*s)->outputs()[1].type.ToString(), "float[batch,2,past + 2*seq,4]");
  auto y = (*s)->Run({{"past", Tensor::Zeros(DType::kFloat, {1, 2, 3, 4})}, {"k", Tensor::Zeros(DType::kFloat, {1, 2, 2, 4})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 2, 5, 4}));
  EXPECT_EQ((*y)[1].shape(), (Shape{1, 2, 7, 4}));
}

// A dim_param that is digits ("2") names a dim, it is not the number: the
// run may give any size there. Read as 2, Concat(x, x) was "known" 4, and
// Mul(Swish(c), u) of two such "known" 4s became SwiGLU, which does not
// broadcast the u of one element a run gives.
TEST(SymbolicDim, ANumeralSymbolIsNotAKnownDim) {
  EXPECT_EQ(Str(AddDims(S("2"), Dim::Known(0))), "2");  // the symbol, not the value
  EXPECT_FALSE(AddDims(S("2"), Dim::Known(0)).known());
  EXPECT_FALSE(AddDims(S("2 + 3"), Dim::Known(0)).known());
  EXPECT_EQ(Str(AddDims(S("n + 2"), S("m"))), "m + n + 2");  // a constant within a sum is one
  // Numbers whose sum would overflow: not read as a sum (it wrapped to "n + 553255926290448365").
  std::string big = "n";
  for (int i = 0; i < 19; ++i) big += " + 999999999999999999";
  EXPECT_EQ(Str(AddDims(S(big), Dim::Known(0))), big);
  std::string coeffs = "999999999999999999*n";
  for (int i = 0; i < 18; ++i) coeffs += " + 999999999999999999*n";
  EXPECT_EQ(Str(AddDims(S(coeffs), Dim::Known(0))), coeffs);
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1}).Input("w", DType::kFloat, {-1});
  SetSymbols(m, 0, {"2"});
  SetSymbols(m, 1, {"4"});
  m.Output("y", DType::kFloat, {}, false);
  SetAttr(m.Node("Concat", {"x", "x"}, {"c"}), "axis", int64_t(0));
  SetAttr(m.Node("Concat", {"w"}, {"u"}), "axis", int64_t(0));
  m.Node("Sigmoid", {"c"}, {"s"});
  m.Node("Mul", {"c", "s"}, {"sw"});
  m.Node("Mul", {"sw", "u"}, {"y"});
  for (bool rewrites : {false, true}) {
    SessionOptions on;
    on.graph_rewrites = rewrites;
    auto s = m.Build(on);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_NE((*s)->outputs()[0].type.ToString(), "float[4]") << rewrites;
    auto y = (*s)->Run({{"x", Tensor::FromVector<float>({1, 2, 3}, {3})}, {"w", Tensor::FromVector<float>({2}, {1})}});
    ASSERT_TRUE(y.ok()) << rewrites << ": " << y.status();
    ASSERT_EQ((*y)[0].shape(), (Shape{6}));
    const float in[] = {1, 2, 3, 1, 2, 3};
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR((*y)[0].data<float>()[i], 2 * in[i] / (1 + std::exp(-in[i])), 1e-5) << rewrites << " " << i;
  }
}

}  // namespace
}  // namespace onnx_mini
