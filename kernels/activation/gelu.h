// onnxruntime's GELU family over float32 arrays, with an optional bias added
// first (repeating every bias_len elements, the last dim):
//   kErf   (Gelu, BiasGelu):  0.5 v (1 + erf(v / sqrt 2))
//   kTanh  (FastGelu):        0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
//   kQuick (QuickGelu):       v * sigmoid(alpha v)
// The reference computes each element with libm in float; the fast path uses
// kernels/vec/ (within a few ulp of it) on targets above the baseline, and is
// the reference on the baseline (as the ONNX Gelu op does).
#pragma once

#include <cstdint>

namespace onnx_mini {

enum class GeluKind { kErf, kTanh, kQuick };

struct GeluProblem {
  GeluKind kind = GeluKind::kErf;
  float alpha = 1.702f;  // kQuick
  int64_t bias_len = 0;  // 0: no bias
};

// y[i] = f(x[i] + bias[i % bias_len]) for i in [i0, i1); y may be x.
void GeluReference(const GeluProblem& p, const float* x, const float* bias, float* y, int64_t i0, int64_t i1);
void GeluF32(const GeluProblem& p, const float* x, const float* bias, float* y, int64_t i0, int64_t i1);

}  // namespace onnx_mini
