// The one sigmoid, 1 / (1 + exp(-x)), in scalar form for any float or double
// accumulator (ops widen 16-bit types first): exp only of -|x|, so no
// overflow for large |x| (0 and 1 in the limits, tiny values kept rather
// than flushed to 0), NaN for NaN. VecSigmoid (vec_math.h) is its vector
// form over float arrays, within 3 ulp of it.
#pragma once

#include <cmath>

namespace onnx_mini {

template <class A>
inline A Sigmoid(A x) {
  if (x >= 0) return A(1) / (A(1) + std::exp(-x));
  const A e = std::exp(x);
  return e / (A(1) + e);
}

}  // namespace onnx_mini
