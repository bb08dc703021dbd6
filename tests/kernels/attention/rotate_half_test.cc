// The RotateHalf kernel (x * cos + rotate_half(x) * sin over full cos/sin
// rows, broadcast over leading dims) against its reference across dtypes and
// broadcasts; one case by hand.
#include "kernels/attention/rotate_half.h"

#include <gtest/gtest.h>

#include <random>

#include "runtime/element.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

double Tolerance(DType d) {
  switch (d) {
    case DType::kDouble: return 1e-14;
    case DType::kFloat: return 1e-6;
    case DType::kFloat16: return 2e-3;
    default: return 1.6e-2;
  }
}

// Leading dims of y (B, H, S); x, cos, sin each [B or 1, H or 1, S or 1, D].
void Check(DType dtype, const int64_t (&x_dims)[3], const int64_t (&c_dims)[3], int64_t d, uint32_t seed,
           bool interleaved = false) {
  std::mt19937 rng(seed);
  RotateHalfProblem p;
  p.dtype = dtype, p.d = d, p.interleaved = interleaved;
  const int64_t out[3] = {std::max(x_dims[0], c_dims[0]), std::max(x_dims[1], c_dims[1]),
                          std::max(x_dims[2], c_dims[2])};
  for (int k = 0; k < 3; ++k) p.dims[k] = out[k];
  auto strides = [&](const int64_t (&dims)[3], int64_t (&s)[3]) {
    s[2] = dims[2] == 1 ? 0 : d;
    s[1] = dims[1] == 1 ? 0 : d * dims[2];
    s[0] = dims[0] == 1 ? 0 : d * dims[2] * dims[1];
  };
  strides(x_dims, p.x_strides);
  strides(c_dims, p.cos_strides);
  strides(c_dims, p.sin_strides);
  const Tensor x = RandomNormalTensor(dtype, x_dims[0] * x_dims[1] * x_dims[2] * d, rng);
  const Tensor c = RandomNormalTensor(dtype, c_dims[0] * c_dims[1] * c_dims[2] * d, rng);
  const Tensor s = RandomNormalTensor(dtype, c_dims[0] * c_dims[1] * c_dims[2] * d, rng);
  const int64_t n = out[0] * out[1] * out[2] * d;
  Tensor want = Tensor::Zeros(dtype, {n}), got = Tensor::Zeros(dtype, {n});
  p.x = x.raw(), p.cos = c.raw(), p.sin = s.raw();
  p.y = want.raw();
  RotateHalfReference(p);
  p.y = got.raw();
  RotateHalf(p);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(GetDouble(got, i), GetDouble(want, i), Tolerance(dtype) * (1 + std::fabs(GetDouble(want, i))))
        << LowerName(dtype) << " at " << i;
}

TEST(RotateHalf, FastMatchesReferenceAcrossTypesAndBroadcasts) {
  uint32_t seed = 1;
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16}) {
    Check(dt, {2, 3, 5}, {2, 1, 5}, 8, seed++);   // HF: cos [B, 1, S, D]
    Check(dt, {2, 3, 5}, {1, 1, 5}, 16, seed++);  // one batch row of positions for all
    Check(dt, {1, 3, 4}, {2, 1, 4}, 6, seed++);   // cos wider than x: y takes its batch
    Check(dt, {2, 2, 1}, {2, 2, 1}, 2, seed++);
    Check(dt, {2, 3, 5}, {2, 1, 5}, 8, seed++, true);  // GPT-J's pairs
    Check(dt, {1, 2, 3}, {1, 1, 3}, 2, seed++, true);
  }
}

TEST(RotateHalf, ByHand) {
  // x = [1, 2, 3, 4]: rotate_half = [-3, -4, 1, 2]; cos all 2, sin [1, 10, 100, 1000].
  const Tensor x = Tensor::FromVector(std::vector<float>{1, 2, 3, 4}, {4});
  const Tensor c = Tensor::FromVector(std::vector<float>{2, 2, 2, 2}, {4});
  const Tensor s = Tensor::FromVector(std::vector<float>{1, 10, 100, 1000}, {4});
  Tensor y = Tensor::Zeros(DType::kFloat, {4});
  RotateHalfProblem p;
  p.d = 4, p.x = x.raw(), p.cos = c.raw(), p.sin = s.raw(), p.y = y.raw();
  RotateHalf(p);
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 4), (std::vector<float>{-1, -36, 106, 2008}));
  // Interleaved: rotate_every_two = [-2, 1, -4, 3].
  p.interleaved = true;
  RotateHalf(p);
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 4), (std::vector<float>{0, 14, -394, 3008}));
}

}  // namespace
}  // namespace onnx_mini
