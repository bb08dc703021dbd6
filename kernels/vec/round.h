// One rounding to a float type's precision (the Cast points of the function
// bodies: Attention, FlexAttention, the linear attentions, QuantizeLinear's
// division). The result is the narrowing conversion's under IEEE
// round-to-nearest-even, for every input: a value that rounds past the
// type's largest finite value is +-inf, NaN stays NaN.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/dtype.h"

namespace onnx_mini {

// double -> float as the IEEE narrowing gives it. A plain float(x) is
// undefined in C++ outside float's range, and hostile inputs reach it.
inline float NarrowToFloat(double x) {
  constexpr double kMax = double(std::numeric_limits<float>::max());
  // Half a unit in the last place above the largest float: from here (the
  // tie goes to even, 2^128) the conversion gives infinity.
  constexpr double kInfinityFrom = 0x1.ffffffp127;
  const double a = std::fabs(x);
  if (a > kMax) {
    const float big = a >= kInfinityFrom ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::max();
    return x < 0 ? -big : big;
  }
  return float(x);
}

// x rounded to T's precision (Float16, BFloat16, float; double and other
// types unchanged), kept in x's type V. From a double the 16-bit encoders
// round directly (no double rounding via float).
template <class T, class V>
inline V RoundToPrecision(V x) {
  if constexpr (std::is_same_v<T, Float16>) return V(ToFloat(ToFloat16(x)));
  else if constexpr (std::is_same_v<T, BFloat16>) return V(ToFloat(ToBFloat16(x)));
  else if constexpr (std::is_same_v<T, float> && std::is_same_v<V, double>) return double(NarrowToFloat(x));
  else if constexpr (std::is_same_v<T, float>) return V(float(x));
  else return x;
}

// The same for a type known at run time: float16, bfloat16 and float round;
// double and every other type leave x as it is.
inline double RoundToPrecision(DType dtype, double x) {
  switch (dtype) {
    case DType::kFloat16: return RoundToPrecision<Float16>(x);
    case DType::kBFloat16: return RoundToPrecision<BFloat16>(x);
    case DType::kFloat: return RoundToPrecision<float>(x);
    default: return x;
  }
}

}  // namespace onnx_mini
