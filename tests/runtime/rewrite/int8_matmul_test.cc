// runtime/rewrite/int8_matmul.cc: the q8 spelling becomes DynamicQuantizeMatMul.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/op.h"
#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

Tensor Ints(DType dt, Shape s, uint32_t seed) {
  Tensor t = Tensor::Zeros(dt, s);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.size(); ++i)
    SetDouble(t, i, dt == DType::kUInt8 ? double(rng() % 256) : double(int(rng() % 256) - 128));
  return t;
}

// DynamicQuantizeLinear(a) shared by `products` MatMulInteger + Cast + Mul(Mul(a_scale, w_scale)) chains.
ModelBuilder Q8(DType w_dtype, bool per_column, int products, bool scale_first, bool w_constant = true,
              bool bias = false) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {2, 5, 24});
  if (!w_constant) m.Input("w0", w_dtype, {24, 6});
  m.Node("DynamicQuantizeLinear", {"a"}, {"aq", "as", "az"});
  for (int j = 0; j < products; ++j) {
    const std::string s = std::to_string(j);
    const int64_t n = 6 + j;
    if (w_constant || j > 0) m.Initializer("w" + s, Ints(w_dtype, {24, n}, 10 + j));
    m.Initializer("ws" + s, per_column ? RandomUniform(DType::kFloat, {n}, 20 + j, 0.01, 0.05)
                                       : RandomUniform(DType::kFloat, {}, 20 + j, 0.01, 0.05));
    m.Initializer("wz" + s, Ints(w_dtype, per_column ? Shape{n} : Shape{}, 30 + j));
    m.Node("MatMulInteger", {"aq", "w" + s, "az", "wz" + s}, {"mi" + s});
    SetAttr(m.Node("Cast", {"mi" + s}, {"mf" + s}), "to", int64_t(DType::kFloat));
    m.Node("Mul", scale_first ? std::vector<std::string>{"ws" + s, "as"} : std::vector<std::string>{"as", "ws" + s},
           {"sc" + s});
    m.Node("Mul", scale_first ? std::vector<std::string>{"sc" + s, "mf" + s} : std::vector<std::string>{"mf" + s, "sc" + s},
           {(bias ? "p" : "y") + s});
    if (bias) {
      m.Initializer("b" + s, RandomUniform(DType::kFloat, {n}, 40 + j));
      m.Node("Add", scale_first ? std::vector<std::string>{"b" + s, "p" + s} : std::vector<std::string>{"p" + s, "b" + s},
             {"y" + s});
    }
    m.Output("y" + s, DType::kFloat, {}, false);
  }
  return m;
}

TEST(Rewrite, Q8SpellingBecomesDynamicQuantizeMatMulWithTheSameValues) {
  const Tensor a = RandomUniform(DType::kFloat, {2, 5, 24}, 5);
  for (DType w : {DType::kInt8, DType::kUInt8})
    for (bool per_column : {false, true})
      for (bool scale_first : {false, true}) {
        SCOPED_TRACE(absl::StrCat(LowerName(w), " per_column=", per_column, " scale_first=", scale_first));
        // One product: the DynamicQuantizeLinear goes with it.
        EXPECT_THAT(RunBothWays(Q8(w, per_column, 1, scale_first), {{"a", a}}, 0),
                    ::testing::ElementsAre("DynamicQuantizeMatMul"));
        // With a bias: added by the fused kernel.
        EXPECT_THAT(RunBothWays(Q8(w, per_column, 2, scale_first, true, true), {{"a", a}}, 0),
                    ::testing::ElementsAre("DynamicQuantizeMatMul", "DynamicQuantizeMatMul"));
        // Three sharing it (Q, K, V): it goes once the last is rewritten.
        EXPECT_THAT(RunBothWays(Q8(w, per_column, 3, scale_first), {{"a", a}}, 0),
                    ::testing::ElementsAre("DynamicQuantizeMatMul", "DynamicQuantizeMatMul", "DynamicQuantizeMatMul"));
      }
}

TEST(Rewrite, Q8SpellingStaysWhereItMayNotFuse) {
  const Tensor a = RandomUniform(DType::kFloat, {2, 5, 24}, 5);
  // A weight given at run time: not packed once, left as written (the other product fuses).
  ModelBuilder m = Q8(DType::kInt8, true, 2, false, false);
  EXPECT_THAT(RunBothWays(m, {{"a", a}, {"w0", Ints(DType::kInt8, {24, 6}, 3)}}, 0),
              ::testing::ElementsAre("DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul",
                                     "DynamicQuantizeMatMul"));
  // The integer product also a graph output: left as written.
  ModelBuilder o = Q8(DType::kInt8, true, 1, false);
  o.Output("mi0", DType::kInt32, {}, false);
  EXPECT_THAT(RunBothWays(o, {{"a", a}}, 0),
              ::testing::ElementsAre("DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul"));
}


// A decoder's residual stream over a q8 product with rows known only at run
// time: MatMulInteger's inferred type keeps the rank and B's columns, so the
// RMSNorm over x + product (x / Sqrt(ReduceMean(x^2) + eps) * w) fuses.
TEST(Rewrite, ANormOverAQ8ProductWithRunTimeRowsIsFused) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {1, -1, 24}).Input("a", DType::kFloat, {1, -1, 24});
  m.Output("z", DType::kFloat, {1, -1, 24});
  m.Initializer("w", Ints(DType::kInt8, {24, 24}, 1)).Initializer("wz", Ints(DType::kInt8, {}, 2));
  m.Initializer("ws", RandomUniform(DType::kFloat, {}, 3, 0.01, 0.05));
  m.Initializer("g", RandomUniform(DType::kFloat, {24}, 4, 0.5, 1.5));
  m.Initializer("two", Tensor::FromVector(std::vector<float>{2}, {}));
  m.Initializer("eps", Tensor::FromVector(std::vector<float>{1e-5f}, {}));
  m.Node("DynamicQuantizeLinear", {"a"}, {"aq", "as", "az"});
  m.Node("MatMulInteger", {"aq", "w", "az", "wz"}, {"mi"});
  SetAttr(m.Node("Cast", {"mi"}, {"mf"}), "to", int64_t(DType::kFloat));
  m.Node("Mul", {"as", "ws"}, {"sc"});
  m.Node("Mul", {"mf", "sc"}, {"p"});
  m.Node("Add", {"x", "p"}, {"r"});
  m.Node("Pow", {"r", "two"}, {"sq"});
  SetAttr(m.Node("ReduceMean", {"sq"}, {"ms"}), "axes", std::vector<int64_t>{-1});
  m.Node("Add", {"ms", "eps"}, {"mse"});
  m.Node("Sqrt", {"mse"}, {"rms"});
  m.Node("Div", {"r", "rms"}, {"normed"});
  m.Node("Mul", {"normed", "g"}, {"z"});
  EXPECT_THAT(RunBothWays(m, {{"x", RandomUniform(DType::kFloat, {1, 3, 24}, 5)},
                              {"a", RandomUniform(DType::kFloat, {1, 3, 24}, 6)}},
                          1e-5),
              ::testing::ElementsAre("DynamicQuantizeMatMul", "Add", "RMSNormalization"));
}

}  // namespace
}  // namespace onnx_mini
