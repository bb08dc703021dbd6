// The skip-connection layer normalizations of onnxruntime (SkipLayerNormalization,
// SkipSimplifiedLayerNormalization): per row of n elements,
//   s = input + skip (+ bias),  y = (s - mean) * inv_std * gamma (+ beta),
// with mean 0 and no beta when simplified (RMS), inv_std = 1 / sqrt(var + epsilon).
// A plain reference for every float type, and vectorized float32 and float16
// paths (one pass adding and taking the moments, one normalizing through
// kernels/vec/).
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace onnx_mini {

struct SkipNormProblem {
  int64_t rows = 0, n = 0;  // rows of n elements
  int64_t skip_rows = 0;    // skip holds skip_rows rows: row r adds skip row r % skip_rows
  bool simplified = false;  // RMS: nothing subtracted, no beta; mean written as 0
  float epsilon = 0;
};

template <class T>
struct SkipNormArgs {
  const T* input = nullptr;
  const T* skip = nullptr;
  const T* gamma = nullptr;  // n values
  const T* beta = nullptr;   // n values or null
  const T* bias = nullptr;   // n values or null
  T* output = nullptr;
  T* sum = nullptr;          // input + skip + bias, or null
  float* mean = nullptr;     // one per row, or null
  float* inv_std = nullptr;  // one per row, or null
};

// Rows [r0, r1). s is computed in float (16-bit inputs widened), the moments
// in double, y in double and rounded once to T.
template <class T>
void SkipNormReference(const SkipNormProblem& p, const SkipNormArgs<T>& a, int64_t r0, int64_t r1);

// The same over float32, vectorized for the active CPU target: equal to the
// reference up to FMA contraction in the last bit.
void SkipNormF32(const SkipNormProblem& p, const SkipNormArgs<float>& a, int64_t r0, int64_t r1);
// float16 rows through the same float arithmetic, converted a chunk at a time
// (F16C where active): the reference's values up to the order of the double
// partial sums (one float16 ulp at most, where a result sits on a rounding edge).
void SkipNormF16(const SkipNormProblem& p, const SkipNormArgs<Float16>& a, int64_t r0, int64_t r1);

}  // namespace onnx_mini
