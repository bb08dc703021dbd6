// ops/nn/norm.cc (and Gemm): LayerNormalization, RMSNormalization (and RotaryEmbedding in a decoder layer).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/element.h"
#include "runtime/thread_pool.h"
#include "tests/ops/op_tester.h"
#include "tests/ops/poison_util.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Decoder, GemmLayerNormRmsNormRotary) {
  auto gemm = RunNode(13, "Gemm", {F({1, 2, 3, 4}, {2, 2}), F({1, 0, 0, 1}, {2, 2}), F({10}, {1})}, 1, [](onnx::NodeProto& n) {
    SetAttr(n, "transA", int64_t(1));
    SetAttr(n, "alpha", 2.0f);
    SetAttr(n, "beta", 0.5f);
  });
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_THAT(Values((*gemm)[0]), ElementsAre(7, 11, 9, 13));  // 2 * A^T + 5
  Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  auto ln = RunNode(17, "LayerNormalization", {x, F({1, 1, 1}, {3}), F({0, 0, 1}, {3})}, 3,
                    [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(ln.ok()) << ln.status();
  const double s = std::sqrt(2.0 / 3);  // row [1, 2, 3]: variance 2/3
  EXPECT_NEAR((*ln)[0].data<float>()[0], -1 / s, 1e-5);
  EXPECT_NEAR((*ln)[0].data<float>()[5], 1 / s + 1, 1e-5);
  EXPECT_THAT(Values((*ln)[1]), ElementsAre(2, 5));  // Mean, shape (2, 1)
  EXPECT_EQ((*ln)[2].shape(), Shape({2, 1}));
  auto rms = RunNode(23, "RMSNormalization", {F({3, 4}, {1, 2}), F({1, 2}, {2})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "epsilon", 0.0f); });
  ASSERT_TRUE(rms.ok()) << rms.status();
  EXPECT_NEAR((*rms)[0].data<float>()[1], 2 * 4 / std::sqrt(12.5), 1e-5);
  // RoPE on one head of size 4 at position 1 with angle 90 degrees for both pairs.
  Tensor v = F({1, 2, 3, 4}, {1, 1, 1, 4});
  Tensor cos = F({1, 1, 0, 0}, {2, 2}), sin = F({0, 0, 1, 1}, {2, 2});
  auto rope = RunNode(23, "RotaryEmbedding", {v, cos, sin, I({1}, {1, 1})});
  ASSERT_TRUE(rope.ok()) << rope.status();
  EXPECT_THAT(Values((*rope)[0]), ElementsAre(-3, -4, 1, 2));  // halves: (x1, x2) -> (-x2, x1)
  auto inter = RunNode(23, "RotaryEmbedding", {v, cos, sin, I({1}, {1, 1})}, 1,
                       [](onnx::NodeProto& n) { SetAttr(n, "interleaved", int64_t(1)); });
  EXPECT_THAT(Values((*inter)[0]), ElementsAre(-2, 1, -4, 3));
  EXPECT_THAT(Message(RunNode(23, "RotaryEmbedding", {v, cos, sin, I({2}, {1, 1})}).status()),
              HasSubstr("outside the cache of 2 positions"));
}

TEST(Norm, AnEmptyInputWithHugeDimsBuildsNoTables) {
  // [0, 2^40] used to size per-element tables by the 2^40 normalized elements.
  const int64_t kBig = int64_t(1) << 40;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode(17, "LayerNormalization", {Tensor::Zeros(DType::kFloat, {0, kBig}), F({1}, {1})}, 1,
              [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-1)); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, kBig}));
}

// An empty normalized part still has a Mean and InvStdDev row per outer
// index: NaN (NumPy's mean of nothing), not memory left unwritten (poisoning
// on, so an unwritten entry would read 1.3e36).
TEST(Norm, EmptyNormalizedAxesGiveNaNStatistics) {
  ScopedPoison poison;
  for (int64_t stash : {1, 11}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode(17, "LayerNormalization", {Tensor::Zeros(DType::kFloat, {4, 0}), F({}, {0}), F({}, {0})}, 3,
                [stash](onnx::NodeProto& n) { SetAttr(n, "stash_type", stash); });
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), Shape({4, 0}));
    for (size_t o : {1, 2}) {
      EXPECT_EQ((*out)[o].shape(), Shape({4, 1}));
      for (double v : Values((*out)[o])) EXPECT_TRUE(std::isnan(v)) << "output " << o << " stash " << stash << ": " << v;
    }
  }
}

// Dense weights (exactly a row's values) and broadcast ones take different
// paths; both against a plain double computation, rows odd-sized and split
// over threads.
TEST(Norm, DenseAndBroadcastWeightsAgreeWithAPlainComputation) {
  const int64_t rows = 300, a = 3, b = 37, n = a * b;
  std::vector<float> x(static_cast<size_t>(rows * n)), w(static_cast<size_t>(b)), bias(static_cast<size_t>(b));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i) * 0.37) * 3 + 0.5);
  for (int64_t i = 0; i < b; ++i) w[size_t(i)] = 0.5f + 0.01f * float(i), bias[size_t(i)] = 0.1f * float(i % 5);
  std::vector<float> w_dense, bias_dense;
  for (int64_t k = 0; k < a; ++k) {
    w_dense.insert(w_dense.end(), w.begin(), w.end());
    bias_dense.insert(bias_dense.end(), bias.begin(), bias.end());
  }
  const Tensor xt = F(x, {rows / 4, 4, a, b});
  for (bool rms : {true, false}) {
    const char* op = rms ? "RMSNormalization" : "LayerNormalization";
    const int64_t opset = rms ? 23 : 17;
    auto axis = [](onnx::NodeProto& node) {
      auto* attr = node.add_attribute();
      attr->set_name("axis");
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(-2);
    };
    std::vector<Tensor> dense_in = {xt, F(w_dense, {a, b})}, broadcast_in = {xt, F(w, {1, b})};
    if (!rms) dense_in.push_back(F(bias_dense, {a, b})), broadcast_in.push_back(F(bias, {b}));
    for (int threads : {1, 2}) {
      auto dense = RunNode(opset, op, dense_in, 1, axis, {}, threads);
      auto broadcast = RunNode(opset, op, broadcast_in, 1, axis, {}, threads);
      ASSERT_TRUE(dense.ok() && broadcast.ok()) << op;
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, sq = 0;
        for (int64_t e = 0; e < n; ++e) mean += x[size_t(r * n + e)], sq += double(x[size_t(r * n + e)]) * x[size_t(r * n + e)];
        mean /= double(n);
        const double var = rms ? sq / double(n) : sq / double(n) - mean * mean;
        const double inv = 1.0 / std::sqrt(var + 1e-5);
        for (int64_t e = 0; e < n; ++e) {
          const double want = (x[size_t(r * n + e)] - (rms ? 0.0 : mean)) * inv * w[size_t(e % b)] +
                              (rms ? 0.0 : bias[size_t(e % b)]);
          ASSERT_NEAR((*dense)[0].data<float>()[r * n + e], want, 1e-5 * (1 + std::fabs(want))) << op << " " << r;
          ASSERT_EQ((*dense)[0].data<float>()[r * n + e], (*broadcast)[0].data<float>()[r * n + e]) << op;
        }
      }
    }
  }
}

// The rows split by the pool's size rule: a decode step's row (1 x 2048)
// and a wake-word head's few rows hand no loop to the pool at 2 threads, a
// prefill's 256 x 512 does, and 1 and 2 threads give the same bits.
TEST(LayerNormalization, SmallInputsStayOnTheCallerAndThreadsGiveTheSameValues) {
  struct Case { int64_t rows, n; bool splits; };
  for (const Case& c : std::vector<Case>{{1, 2048, false}, {4, 128, false}, {256, 512, true}})
    for (bool rms : {false, true}) {
      const Tensor x = Random(DType::kFloat, {c.rows, c.n}, 5), w = Random(DType::kFloat, {c.n}, 6);
      const char* op = rms ? "RMSNormalization" : "LayerNormalization";
      auto one = RunNode(rms ? 23 : 17, op, {x, w}, 1, {}, {}, 1);
      const int64_t before = ParallelCountsSoFar().pool_loops;
      auto two = RunNode(rms ? 23 : 17, op, {x, w}, 1, {}, {}, 2);
      const int64_t loops = ParallelCountsSoFar().pool_loops - before;
      ASSERT_TRUE(one.ok() && two.ok()) << op;
      EXPECT_EQ(loops, c.splits ? 1 : 0) << op << " " << c.rows << " x " << c.n;
      for (int64_t i = 0; i < x.size(); ++i)
        ASSERT_EQ((*one)[0].data<float>()[i], (*two)[0].data<float>()[i]) << op << " at " << i;
    }
}

}  // namespace
}  // namespace onnx_mini
