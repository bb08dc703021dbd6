// Uniform random floats in [-1, 1) for the kernel tests, reproducible by seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace onnx_mini {

inline std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

}  // namespace onnx_mini
