#include "kernels/activation/gelu.h"

#include <algorithm>
#include <cmath>

#include "kernels/vec/sigmoid.h"
#include "kernels/vec/vec_math.h"

namespace onnx_mini {

void GeluReference(const GeluProblem& p, const float* x, const float* bias, float* y, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    float v = x[i];
    if (p.bias_len) v += bias[i % p.bias_len];
    switch (p.kind) {
      case GeluKind::kErf: y[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); break;
      case GeluKind::kTanh:
        y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        break;
      case GeluKind::kQuick: y[i] = v * Sigmoid(p.alpha * v); break;
    }
  }
}

void GeluF32(const GeluProblem& p, const float* x, const float* bias, float* y, int64_t i0, int64_t i1) {
  if (!VecMathVectorized()) return GeluReference(p, x, bias, y, i0, i1);
  // Chunks of a stack buffer: the biased input (and QuickGelu's sigmoid
  // argument) stay in L1 between the passes.
  constexpr int64_t kChunk = 512;
  float v[kChunk], t[kChunk];
  for (int64_t c = i0; c < i1; c += kChunk) {
    const int64_t len = std::min(kChunk, i1 - c);
    const float* in = x + c;
    if (p.bias_len) {
      for (int64_t j = 0, b = c % p.bias_len; j < len; ++j) {
        v[j] = x[c + j] + bias[b];
        if (++b == p.bias_len) b = 0;
      }
      in = v;
    }
    switch (p.kind) {
      case GeluKind::kErf: VecGeluErf(in, y + c, len); break;
      case GeluKind::kTanh: VecGeluTanh(in, y + c, len); break;
      case GeluKind::kQuick:
        for (int64_t j = 0; j < len; ++j) t[j] = p.alpha * in[j];
        VecSigmoid(t, t, len);
        for (int64_t j = 0; j < len; ++j) y[c + j] = in[j] * t[j];
        break;
    }
  }
}

}  // namespace onnx_mini
