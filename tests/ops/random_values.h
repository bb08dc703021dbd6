// Random values for the kernel tests, reproducible by seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/element.h"
#include "runtime/tensor.h"

namespace onnx_mini {

inline std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// n standard-normal values of `dtype` (rounded to it), a 1-D tensor.
inline Tensor RandomNormalTensor(DType dtype, int64_t n, std::mt19937& rng) {
  Tensor t = Tensor::Zeros(dtype, {n});
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < n; ++i) SetDouble(t, i, normal(rng));
  return t;
}

}  // namespace onnx_mini
