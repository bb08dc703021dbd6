// The EmbedLayerNormalization kernel against its reference: float and
// float16, with and without segments, position ids (B, S) and (1, S), the
// sum output, on 1 and 2 threads; one case by hand.
#include "kernels/norm/embed_layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/element.h"
#include "runtime/tensor.h"

namespace onnx_mini {
namespace {

Tensor Table(DType dtype, Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::Make(dtype, shape).value();
  std::normal_distribution<double> n(0, 1);
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, n(rng));
  return t;
}

void Check(DType dtype, bool segments, int pos_form, bool with_sum, int threads, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t B = 3, S = 5, H = 40, V = 9, P = 7, G = 2;
  Tensor word = Table(dtype, {V, H}, rng), position = Table(dtype, {P, H}, rng), segment = Table(dtype, {G, H}, rng);
  Tensor gamma = Table(dtype, {H}, rng), beta = Table(dtype, {H}, rng);
  std::vector<int32_t> ids(B * S), seg(B * S), pos(B * S);
  for (int64_t i = 0; i < B * S; ++i) ids[i] = int32_t(rng() % V), seg[i] = int32_t(rng() % G), pos[i] = int32_t(rng() % P);
  EmbedLayerNormProblem p;
  p.dtype = dtype, p.batch = B, p.seq = S, p.hidden = H;
  p.ids = ids.data();
  if (segments) p.segment_ids = seg.data(), p.segment = segment.raw();
  if (pos_form > 0) p.position_ids = pos.data(), p.position_ids_per_batch = pos_form == 2;
  p.word = word.raw(), p.position = position.raw(), p.gamma = gamma.raw(), p.beta = beta.raw();
  p.epsilon = 1e-5f;
  Tensor y = Tensor::Make(dtype, {B, S, H}).value(), y_ref = Tensor::Make(dtype, {B, S, H}).value();
  Tensor sum = Tensor::Make(dtype, {B, S, H}).value(), sum_ref = Tensor::Make(dtype, {B, S, H}).value();
  p.y = y_ref.raw();
  p.sum = with_sum ? sum_ref.raw() : nullptr;
  EmbedLayerNormReference(p);
  p.y = y.raw();
  p.sum = with_sum ? sum.raw() : nullptr;
  EmbedLayerNorm(p, threads);
  const double tol = dtype == DType::kFloat ? 1e-5 : 4e-3;
  for (int64_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(GetDouble(y, i), GetDouble(y_ref, i), tol * (1 + std::fabs(GetDouble(y_ref, i)))) << i;
    if (with_sum) {  // the kernel sums in float, the reference in double: one rounding apart
      ASSERT_NEAR(GetDouble(sum, i), GetDouble(sum_ref, i), tol * (1 + std::fabs(GetDouble(sum_ref, i)))) << i;
    }
  }
}

TEST(EmbedLayerNormKernel, MatchesTheReference) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kFloat16})
    for (bool segments : {false, true})
      for (int pos_form : {0, 1, 2})
        for (bool with_sum : {false, true})
          for (int threads : {1, 2}) Check(dtype, segments, pos_form, with_sum, threads, seed++);
}

TEST(EmbedLayerNormKernel, OneTokenByHand) {
  // word row (1, 3) + position row (1, -1) = (2, 2)... then (3, 1): mean 2, variance 1.
  const float word[] = {0, 0, 2, 2}, position[] = {1, -1}, gamma[] = {2, 3}, beta[] = {1, 0};
  const int32_t ids[] = {1};
  EmbedLayerNormProblem p;
  p.batch = 1, p.seq = 1, p.hidden = 2;
  p.ids = ids, p.word = word, p.position = position, p.gamma = gamma, p.beta = beta, p.epsilon = 0;
  float y[2], sum[2];
  p.y = y, p.sum = sum;
  EmbedLayerNorm(p, 1);
  EXPECT_FLOAT_EQ(sum[0], 3);
  EXPECT_FLOAT_EQ(sum[1], 1);
  EXPECT_FLOAT_EQ(y[0], 2 * 1 + 1);   // (3 - 2) / 1 * 2 + 1
  EXPECT_FLOAT_EQ(y[1], 3 * -1 + 0);  // (1 - 2) / 1 * 3
}

}  // namespace
}  // namespace onnx_mini
